"""bench/link_variation.py recovers the statistics of links it is given, and
bench/em_costs.py counts the EM's messages right (no timings asserted)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import random
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[2] / "bench"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def synthetic_k7(path: Path, sigma_db: float, tau_h: float, rounds: int, links: int) -> None:
    """A Mercator-like file: rounds 2 h apart, each link's burst mean a Gauss-Markov
    process about its own level, plus a link too weak to keep."""
    rng = random.Random(4)
    start = datetime(2018, 1, 1)
    rows = []
    state = {k: rng.gauss(0, sigma_db) for k in range(links)}
    level = {k: rng.uniform(-75, -60) for k in range(links)}
    a = math.exp(-2.0 / tau_h)
    for r in range(rounds):
        when = (start + timedelta(hours=2 * r)).isoformat(sep=" ")
        for k in range(links):
            state[k] = a * state[k] + sigma_db * math.sqrt(1 - a * a) * rng.gauss(0, 1)
            rows.append(f"{when},{k},{k + 1},26,{level[k] + state[k]:.2f},1.0,100.0")
        rows.append(f"{when},90,91,26,-89.5,0.3,100.0")  # too weak: left out
    header = {"location": "test", "channels": [26], "node_count": links + 1}
    with gzip.open(path, "wt") as out:
        out.write(json.dumps(header) + "\n" + "datetime,src,dst,channel,mean_rssi,pdr,tx_count\n")
        out.write("\n".join(rows) + "\n")


def test_link_variation_recovers_the_deviation_it_was_given(tmp_path, capsys):
    synthetic_k7(tmp_path / "test_1.k7.gz", sigma_db=0.5, tau_h=2.0, rounds=120, links=60)
    load("link_variation").analyse([tmp_path / "test_1.k7.gz"])
    out = capsys.readouterr().out
    assert "61 link-channels, 120 rounds, 60 kept" in out
    median = float(re.search(r"median ([0-9.]+) dB \(IQR", out).group(1))
    assert median == pytest.approx(0.5, rel=0.15)
    # Rounds 2 h apart, tau 2 h: deviations 2 to 4 h apart correlate about e^-1.
    lag = float(re.search(r"2 to\s+4 h:\s+([-0-9.]+)", out).group(1))
    assert 0.2 < lag < 0.5


def test_em_costs_counts_every_message_of_a_query():
    em_costs = load("em_costs")
    spent, handled = em_costs.measure(members=3, queries=4, seed=1)
    # Per query: the query, its empty ACK, 3 requests, 3 replies, the answer, its ACK.
    assert handled == 4 * (2 * 3 + 4)
    assert spent >= 0.0


# ---- bench/wifi_site.py -------------------------------------------------------------


def mercator_k7(path: Path, pdr: dict[tuple[int, int, int], list[float]], nodes: int) -> None:
    """A Mercator-like file with the given bursts' delivery per (src, dst, channel),
    rounds an hour apart; a burst given as None leaves no row."""
    start = datetime(2018, 1, 8)
    rows = []
    for (src, dst, channel), bursts in pdr.items():
        for r, value in enumerate(bursts):
            if value is not None:
                when = (start + timedelta(hours=r)).isoformat(sep=" ")
                rows.append(f"{when},{src},{dst},{channel},-70.0,{value},100.0")
    header = {"location": "grenoble", "channels": list(range(11, 27)), "node_count": nodes}
    with gzip.open(path, "wt") as out:
        out.write(json.dumps(header) + "\n" + "datetime,src,dst,channel,mean_rssi,pdr,tx_count\n")
        out.write("\n".join(rows) + "\n")


def test_wifi_site_measures_the_links_perfect_where_no_wifi_reaches(tmp_path):
    load("link_variation")
    wifi_site = load("wifi_site")
    pdr = {}
    for c in range(11, 27):
        pdr[(1, 2, c)] = [0.9, 0.8] if c == 12 else [1.0, 1.0]
        pdr[(2, 1, c)] = [1.0, None] if c == 12 else [1.0, 1.0]  # a burst lost whole: 0
        pdr[(3, 4, c)] = [0.5, 0.5] if c in (12, 17) else [1.0, 1.0]  # loses on 17: left out
    mercator_k7(tmp_path / "grenoble_2.k7.gz", pdr, nodes=50)
    mercator_k7(tmp_path / "grenoble_1.k7.gz", pdr, nodes=3)  # too few nodes: left out
    got = wifi_site.measured([tmp_path / "grenoble_1.k7.gz", tmp_path / "grenoble_2.k7.gz"])
    assert got[12] == pytest.approx((0.85 + 0.5) / 2)
    assert got[26] == pytest.approx(1.0)


def test_wifi_site_probe_sees_wifi_channel_1_only_where_its_spectrum_lies():
    """The model's Mercator probe: no load, no loss; a heavy load on Wi-Fi channel 1
    costs frames on 802.15.4 channel 12 (under its flat top), almost none on 20 or 26."""
    load("link_variation")
    wifi_site = load("wifi_site")
    assert wifi_site.probed(12, 0.0) == 1.0
    loaded = {channel: wifi_site.probed(channel, 4e6) for channel in (12, 20, 26)}
    assert loaded[12] < 0.8
    # 38 and 68 MHz from Wi-Fi channel 1's centre only the mask's floor (-40 dBr)
    # reaches: a frame is lost only beside an access point.
    assert loaded[20] > 0.98 and loaded[26] > 0.98
