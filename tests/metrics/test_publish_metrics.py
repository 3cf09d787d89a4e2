"""S4's publish metrics: link stress per reading, and the names every publish run has."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from iotbench.metrics.publish import (
    LinkStress,
    PublishSeries,
    distribution_rows,
    publish_metrics,
)
from iotbench.metrics.timeseries import RunMetrics, SeriesTable
from iotbench.net.packet import BROADCAST, CORRUPTED, DELIVERED, MISSED, Packet
from iotbench.sim import Simulator
from iotbench.world import run_one
from iotbench.world.readings import find_reading_id, reading, reading_id

sys.path.insert(0, str(Path(__file__).parents[1] / "world"))
from test_publish_ndn import S4_NDN  # noqa: E402
from test_radio_network import publish_config  # noqa: E402

S4_NAMES = (
    "delivery_ratio",
    "items_lost",
    "tta_mean_s",
    "tta_p50_s",
    "tta_p99_s",
    "requests_per_item",
    "app_retransmissions_per_item",
    "mac_retransmissions_per_item",
    "control_bytes",
    "data_bytes",
    "link_stress_mean",
    "energy_root_j",
    "energy_leaf_median_j",
    "energy_total_j",
    "pit_occupancy_max",
    "cs_bytes_max",
)


def frame(payload: bytes, fate: str) -> Packet:
    pkt = Packet(b"\x41\x88" + bytes(20) + payload + b"\x00\x00", 0, 0, 0, 24)
    pkt.fate = fate
    return pkt


def test_link_stress_counts_frames_that_carried_a_reading_across_a_link():
    stress = LinkStress({0: 2, 1: 1}, 10.0, find_reading_id)
    a, b = reading_id(0, 5), reading_id(1, 0)
    stress.started(a)
    stress.started(b)
    for fate in (DELIVERED, DELIVERED, DELIVERED, CORRUPTED, MISSED):
        stress.finished(frame(b"\x01" + reading(0, 5, 42), fate))
    stress.finished(frame(reading(1, 0, 7), BROADCAST))
    stress.finished(frame(b"no reading here", DELIVERED))
    stress.finished(frame(b'{"id":"0xzz', DELIVERED))  # not an id: ignored
    stress.delivered(a, 0, now=1.0)
    stress.delivered(b, 1, now=2.0)
    assert not stress.histogram  # not settled yet: duplicates may still come
    stress.finished(frame(reading(1, 0, 7), DELIVERED))  # a late duplicate
    stress.settle(12.0)
    # Three deliveries over a 2-hop shortest path; two over a 1-hop one.
    assert stress.histogram == {(3, 2): 1, (2, 1): 1}
    assert stress.mean() == pytest.approx((1.5 + 2.0) / 2)
    assert not stress._counts  # settled readings leave only the histogram


def test_a_reading_that_never_arrived_leaves_nothing():
    stress = LinkStress({0: 3}, 0.0, find_reading_id)
    stress.started(reading_id(0, 1))
    stress.finished(frame(reading(0, 1, 1), DELIVERED))
    stress.forget(reading_id(0, 1))
    # A frame of a reading no longer (or never) followed leaves nothing behind.
    stress.finished(frame(reading(0, 1, 1), DELIVERED))
    stress.finished(frame(reading(0, 2, 1), DELIVERED))
    stress.settle(math.inf)
    assert not stress.histogram and not stress._counts
    assert math.isnan(stress.mean())


def test_per_item_metrics_divide_by_every_reading_taken():
    base = {
        "items_delivered": 8,
        "latency_mean_s": 0.5,
        "latency_p50_s": 0.4,
        "latency_p99_s": 2.0,
        "mac_retries": 4,
        "bytes_control": 100,
        "bytes_data": 900,
        "energy_j_total": 3.0,
    }
    out = publish_metrics(
        base, 10, None, 5, LinkStress({}, 0, find_reading_id), 1.0, [0.5, 0.7, 0.9], 3.0, None
    )
    assert out["delivery_ratio"] == 0.8 and out["items_lost"] == 2
    assert out["tta_p99_s"] == 2.0
    assert math.isnan(out["requests_per_item"])
    assert out["app_retransmissions_per_item"] == 0.5
    assert out["mac_retransmissions_per_item"] == 0.4
    assert (out["control_bytes"], out["data_bytes"]) == (100, 900)
    assert out["energy_leaf_median_j"] == 0.7 and out["energy_total_j"] == 3.0
    assert math.isnan(out["pit_occupancy_max"]) and math.isnan(out["cs_bytes_max"])
    with_requests = publish_metrics(
        base, 10, 15, 0, LinkStress({}, 0, find_reading_id), 1.0, [], 2.0, (4, 300)
    )
    assert with_requests["requests_per_item"] == 1.5
    assert (with_requests["pit_occupancy_max"], with_requests["cs_bytes_max"]) == (4, 300)


VARIANTS = {
    "coap-put-con": ("coap", {"protocol.coap.type": "con"}),
    "coap-get-non": ("coap", {"protocol.coap.type": "non", "workload.coap_exchange": "get"}),
    "coap-obs": ("coap", {"workload.coap_exchange": "observe"}),
    "mqttsn-qos1": ("mqttsn", {"protocol.mqttsn.qos": 1}),
    "ndn": ("ndn", {"workload.ndn_exchange": "pull", **S4_NDN}),
    "ndn-inot": ("ndn", {"workload.ndn_exchange": "inot", **S4_NDN}),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_publish_run_has_s4s_metrics(variant):
    protocol, sets = VARIANTS[variant]
    cfg, seed = publish_config(protocol, **sets)
    m = run_one(cfg, seed)
    assert set(S4_NAMES) <= m.keys()
    assert m["delivery_ratio"] == m["items_delivered"] / 40
    assert m["items_lost"] == 40 - m["items_delivered"]
    assert m["mac_retransmissions_per_item"] == m["mac_retries"] / 40
    # Every delivered reading crossed at least its shortest path.
    assert m["link_stress_mean"] >= 1.0
    assert m["energy_total_j"] > m["energy_root_j"] > 0
    pulls = variant in ("coap-get-non", "ndn")
    assert math.isnan(m["requests_per_item"]) != pulls
    if pulls:
        assert m["requests_per_item"] >= 1.0  # at least one request per reading
    is_ndn = protocol == "ndn"
    assert math.isnan(m["pit_occupancy_max"]) != is_ndn
    if is_ndn:
        assert 1 <= m["pit_occupancy_max"] <= 10
        assert m["cs_bytes_max"] <= 10_240
        assert (m["cs_bytes_max"] == 0) == (variant == "ndn-inot")


def test_retransmissions_show_as_link_stress():
    """Long lossy hops and no MAC retries: CoAP retransmits readings end to end, and a
    retransmission that crosses links again counts, as does a duplicate whose
    acknowledgment was lost."""
    lossy = {"network.nodes.spacing_m": 85.0, "network.mac.max_frame_retries": 0}
    clean = run_one(*publish_config("coap", **{"protocol.coap.type": "con"}))
    cfg, seed = publish_config("coap", **{"protocol.coap.type": "con", **lossy})
    m = run_one(cfg, seed)
    assert clean["link_stress_mean"] == 1.0 and clean["app_retransmissions_per_item"] == 0
    assert m["app_retransmissions_per_item"] > 0
    assert m["link_stress_mean"] > 1.0


def test_energy_is_compared_over_the_publishing_period():
    """A run whose last readings come late goes on after them; S4's
    energies stop at the end of the publishing period (8 readings 5 s apart: 40 s),
    the same in every variant, while energy_j_total counts to the run's end."""
    cfg, seed = publish_config(
        "coap", **{"workload.coap_exchange": "get", "workload.poll_interval_s": 10.0}
    )
    m = run_one(cfg, seed)
    assert m["items_given_up"] > 0 and m["sim_time_s"] > 45
    listening_w = 6 * 0.0123 * 3.0  # six always-on radios, mostly listening
    assert m["energy_total_j"] / listening_w == pytest.approx(40.0, rel=0.02)
    assert m["energy_j_total"] / listening_w == pytest.approx(m["sim_time_s"], rel=0.02)


# ---- time series and distributions (the store's series table) ------------------------


class _Power:
    def __init__(self, watts: float) -> None:
        self.watts = watts

    def joules(self, now: float) -> float:
        return self.watts * now


class _Radio:
    def __init__(self, watts: float) -> None:
        self.power = _Power(watts)


class _Table:
    def __init__(self, peaks: list[int]) -> None:
        self.peaks = peaks

    def take_recent_peak(self) -> int:
        return self.peaks.pop(0)


class _Forwarder:
    def __init__(self, pit: list[int], cs: list[int]) -> None:
        self.pit, self.cs = _Table(pit), _Table(cs)


def _rows(table, name):
    return [(node, x, y, n) for series, node, x, y, n in table if series == name]


def test_publish_series_bins_goodput_against_the_readings_taken():
    sim = Simulator(1)
    series = PublishSeries(
        sim, 10.0, 5.0, [_Radio(1.0), _Radio(2.0)], [(1, _Forwarder([3, 0, 1], [80, 0, 0]))]
    )

    def at(t, taken=0, delivered=0):
        def bump():
            series.taken += taken
            series.delivered += delivered

        sim.at(t, bump)

    at(11.0, taken=2)
    at(12.0, delivered=1)
    at(16.0, taken=1, delivered=2)
    sim.run(until=17.5)
    series.close_bin(sim.now)  # the run ends inside the third bin
    table = series.table
    # Rates per bin_s, stamped with the bin's end, the last bin's too.
    assert _rows(table, "goodput_per_s") == [(-1, 15.0, 0.2, 1), (-1, 20.0, 0.4, 1)]
    assert _rows(table, "offered_per_s") == [(-1, 15.0, 0.4, 1), (-1, 20.0, 0.2, 1)]
    energy = _rows(table, "energy_j")
    assert energy == [
        (0, 10.0, 10.0, 1),
        (1, 10.0, 20.0, 1),
        (0, 15.0, 15.0, 1),
        (1, 15.0, 30.0, 1),
        (0, 17.5, 17.5, 1),
        (1, 17.5, 35.0, 1),
    ]
    assert _rows(table, "pit_entries") == [(1, 15.0, 3, 1), (1, 17.5, 0, 1)]
    assert _rows(table, "cs_bytes") == [(1, 15.0, 80, 1), (1, 17.5, 0, 1)]
    assert series.events == 2  # its own sampling events, which the run leaves out
    series.close_bin(sim.now)  # nothing new: no second last bin
    assert len(_rows(table, "goodput_per_s")) == 2


def test_distribution_rows_are_a_cdf_a_scatter_and_the_tree():
    table = SeriesTable()
    stress = LinkStress({}, 0.0, find_reading_id)
    stress.histogram.update({(3, 2): 5, (2, 2): 40, (1, 1): 9})
    distribution_rows(table, [0.4, 0.1, 0.3, 0.2, 0.5], stress.histogram, [0, 1, 2, -1])
    cdf = _rows(table, "tta_cdf")
    assert len(cdf) == 101
    assert cdf[0] == (-1, 0.1, 0.0, 1) and cdf[-1] == (-1, 0.5, 1.0, 1)
    assert cdf[50][1] == pytest.approx(0.3) and cdf[50][2] == 0.5
    assert [x for _, x, _, _ in cdf] == sorted(x for _, x, _, _ in cdf)
    # x: the shortest path, y: the traversals, n: how many readings.
    assert _rows(table, "link_stress") == [(-1, 1, 1, 9), (-1, 2, 2, 40), (-1, 2, 3, 5)]
    assert _rows(table, "tree_hops") == [
        (0, 0.0, 0, 1),
        (1, 0.0, 1, 1),
        (2, 0.0, 2, 1),
        (3, 0.0, -1, 1),
    ]
    empty = SeriesTable()
    distribution_rows(empty, [], {}, [])
    assert len(empty) == 0  # nothing delivered: no CDF


@pytest.mark.parametrize("variant", ["coap-put-con", "ndn"])
def test_a_publish_run_returns_its_series(variant):
    protocol, sets = VARIANTS[variant]
    cfg, seed = publish_config(protocol, **{**sets, "workload.series_points": 4})
    m = run_one(cfg, seed)
    assert isinstance(m, RunMetrics)
    table = m.series
    # 8 readings 5 s apart per producer: a 40 s publishing period in 4 bins of 10 s.
    goodput = _rows(table, "goodput_per_s")
    assert [x for _, x, _, _ in goodput][:4] == [10.0, 20.0, 30.0, 40.0]
    assert sum(y for _, _, y, _ in goodput) * 10.0 == pytest.approx(m["items_delivered"])
    offered = _rows(table, "offered_per_s")
    assert sum(y for _, _, y, _ in offered) * 10.0 == pytest.approx(40)
    nodes = len(_rows(table, "tree_hops"))
    energy = _rows(table, "energy_j")
    assert len(energy) == nodes * (1 + len(goodput))
    assert sum(y for node, x, y, _ in energy if x == energy[-1][1]) == pytest.approx(
        m["energy_j_total"]
    )
    assert len(_rows(table, "tta_cdf")) == 101
    assert sum(n for *_, n in _rows(table, "link_stress")) == m["items_delivered"]
    pit = _rows(table, "pit_entries")
    assert bool(pit) == (protocol == "ndn")
    if pit:
        assert max(y for _, _, y, _ in pit) == m["pit_occupancy_max"]
        assert max(y for _, _, y, _ in _rows(table, "cs_bytes")) == m["cs_bytes_max"]
    # The series only read the run: without them, the same metrics and events.
    assert dict(m) == run_one(*publish_config(protocol, **sets))
