"""S4's publish metrics: link stress per reading, and the names every publish run has."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from iotbench.apps.readings import find_reading_id, reading, reading_id
from iotbench.metrics.derive import ItemSummary
from iotbench.metrics.publish import (
    LinkStress,
    NdnTables,
    PublishSeries,
    distribution_rows,
    publish_metrics,
)
from iotbench.metrics.result import RunMeasures
from iotbench.metrics.timeseries import SeriesTable
from iotbench.net.packet import BROADCAST, CORRUPTED, DELIVERED, MISSED, Packet
from iotbench.net.routing.tree import Tree
from iotbench.sim import Simulator
from iotbench.world import run_one
from same_metrics import same_metrics

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
    "energy_listening_root_j",
    "energy_listening_leaf_median_j",
    "energy_listening_total_j",
    "readings_skipped",
    "pit_occupancy_max",
    "cs_entries_max",
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
        stress.finished(frame(b"\x01" + reading(0, 5, 4200), fate))
    stress.finished(frame(reading(1, 0, 7000), BROADCAST))
    stress.finished(frame(b"no reading here", DELIVERED))
    stress.finished(frame(b'{"id":"0xzz', DELIVERED))  # not an id: ignored
    stress.ended(a, 1.0, lost=False)
    stress.ended(b, 2.0, lost=False)
    assert not stress.histogram  # not settled yet: duplicates may still come
    stress.finished(frame(reading(1, 0, 7000), DELIVERED))  # a late duplicate
    stress.settle(12.0)
    # Three deliveries over a 2-hop shortest path; two over a 1-hop one.
    assert stress.histogram == {(3, 2): 1, (2, 1): 1}
    assert stress.mean() == pytest.approx((1.5 + 2.0) / 2)
    assert not stress._counts  # settled readings leave only the histogram


def test_a_lost_item_counts_its_traversals_short_of_the_path():
    """S4's scatter draws lost items too, left of the diagonal."""
    stress = LinkStress({0: 3}, 0.0, find_reading_id)
    stress.started(reading_id(0, 1))
    stress.finished(frame(reading(0, 1, 1000), DELIVERED))
    stress.ended(reading_id(0, 1), 1.0, lost=True)
    # A frame of an item no longer (or never) followed leaves nothing behind.
    stress.finished(frame(reading(0, 1, 1000), DELIVERED))
    stress.finished(frame(reading(0, 2, 1000), DELIVERED))
    stress.settle(math.inf)
    assert not stress.histogram and not stress._counts
    assert stress.lost_histogram == {(1, 3): 1}
    assert math.isnan(stress.mean())  # over the items that arrived


def test_link_stress_counts_only_the_radio_media_it_is_given():
    radio, line = object(), object()
    stress = LinkStress({0: 1}, 0.0, find_reading_id, media=(radio,))
    stress.started(reading_id(0, 0))
    for medium in (radio, line):
        pkt = frame(reading(0, 0, 1000), DELIVERED)
        pkt.medium = medium
        stress.finished(pkt)
    stress.ended(reading_id(0, 0), 0.0, lost=False)
    stress.settle(math.inf)
    assert stress.histogram == {(1, 1): 1}


def test_per_item_metrics_divide_by_every_item_begun():
    items = ItemSummary(
        started=10,
        delivered=8,
        given_up=2,
        task_completion_time_s=60.0,
        items_per_s=0.1,
        payload_bps=1.0,
        latency_mean_s=0.5,
        latency_min_s=0.1,
        latency_max_s=2.5,
        latency_percentiles_s=(0.4, 1.0, 1.5, 2.0),  # PERCENTILES: 50, 90, 95, 99
    )
    base = RunMeasures(items, bytes_control=100, bytes_data=900, mac_retries=4)
    # A root (0) with two leaves (1, 2) and a node between (3 -> 4).
    tree = Tree(0, (None, 0, 0, 0, 3), (0.0,) * 5, (0, 1, 1, 1, 2))
    air = [1.0, 0.5, 0.7, 0.6, 0.9]
    listening = [4.0, 3.9, 3.9, 3.9, 3.9]
    out = publish_metrics(
        base, 10, None, 5, LinkStress({}, 0, find_reading_id), (air, listening), tree, None, 3
    )
    assert out["delivery_ratio"] == 0.8 and out["items_lost"] == 2
    assert out["readings_skipped"] == 3
    assert out["tta_p99_s"] == 2.0
    assert math.isnan(out["requests_per_item"])
    assert out["app_retransmissions_per_item"] == 0.5
    assert out["mac_retransmissions_per_item"] == 0.4
    assert (out["control_bytes"], out["data_bytes"]) == (100, 900)
    assert out["energy_root_j"] == 1.0 and out["energy_total_j"] == pytest.approx(3.7)
    assert out["energy_leaf_median_j"] == 0.7  # leaves 1, 2 and 4: 0.5, 0.7, 0.9
    assert out["energy_listening_root_j"] == 4.0
    assert out["energy_listening_total_j"] == pytest.approx(19.6)
    assert math.isnan(out["pit_occupancy_max"]) and math.isnan(out["cs_bytes_max"])
    assert math.isnan(out["pit_full_drops"])
    with_requests = publish_metrics(
        base, 10, 15, 0, LinkStress({}, 0, find_reading_id), None, None, NdnTables(4, 3, 300, 7)
    )
    assert with_requests["requests_per_item"] == 1.5
    assert math.isnan(with_requests["energy_root_j"])
    assert (with_requests["pit_occupancy_max"], with_requests["cs_entries_max"]) == (4, 3)
    assert with_requests["cs_bytes_max"] == 300 and with_requests["pit_full_drops"] == 7


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
    m = run_one(cfg, seed).metrics
    assert set(S4_NAMES) <= m.keys()
    begun = m["items"]
    skipped = m["readings_skipped"]
    # 5 producers, 8 readings or requests each: a producer whose sender is not ready
    # (not observed yet, its MQTT-SN topic not registered) takes none.
    assert begun + skipped == 40
    assert m["delivery_ratio"] == m["items_delivered"] / begun
    assert m["items_lost"] == begun - m["items_delivered"]
    assert m["mac_retransmissions_per_item"] == m["mac_retries"] / begun
    # Every delivered reading crossed at least its shortest path.
    assert m["link_stress_mean"] >= 1.0
    assert m["energy_total_j"] > m["energy_root_j"] > 0
    assert m["energy_listening_total_j"] > m["energy_total_j"]
    pulls = variant in ("coap-get-non", "ndn")
    assert math.isnan(m["requests_per_item"]) != pulls
    if pulls:
        assert m["requests_per_item"] == 1.0  # a request per item, the item itself
    is_ndn = protocol == "ndn"
    assert math.isnan(m["pit_occupancy_max"]) != is_ndn
    if is_ndn:
        assert 1 <= m["pit_occupancy_max"] <= 10
        assert m["cs_bytes_max"] <= 10_240


def test_retransmissions_show_as_link_stress():
    """Long lossy hops and no MAC retries: CoAP retransmits readings end to end, and a
    retransmission that crosses links again counts, as does a duplicate whose
    acknowledgment was lost."""
    lossy = {"network.nodes.spacing_m": 85.0, "network.mac.max_frame_retries": 0}
    clean = run_one(*publish_config("coap", **{"protocol.coap.type": "con"})).metrics
    cfg, seed = publish_config("coap", **{"protocol.coap.type": "con", **lossy})
    m = run_one(cfg, seed).metrics
    assert clean["link_stress_mean"] == 1.0 and clean["app_retransmissions_per_item"] == 0
    assert m["app_retransmissions_per_item"] > 0
    assert m["link_stress_mean"] > 1.0


def test_energy_is_compared_over_the_publishing_period():
    """S4's energies run from the start of publishing to its end (8 readings 5 s
    apart: 40 s), the same in every variant, while energy_j_total counts from t = 0
    to the run's end; listening all the time, a radio spends its RX current."""
    cfg, seed = publish_config("coap", **{"workload.start_s": 20.0})
    m = run_one(cfg, seed).metrics
    listening_w = 6 * 0.0123 * 3.0  # six always-on radios, mostly listening
    assert m["energy_listening_total_j"] / listening_w == pytest.approx(40.0, rel=0.02)
    assert m["energy_j_total"] / listening_w == pytest.approx(m["sim_time_s"], rel=0.02)
    # S4's accounting: idle at TRX_OFF's 0.4 mA, so a little over the idle energy.
    idle_w = 6 * 0.0004 * 3.0
    assert 1.0 < m["energy_total_j"] / (idle_w * 40.0) < 1.5


# ---- time series and distributions (the store's series table) ------------------------


class _Power:
    def __init__(self, watts: float) -> None:
        self.watts = watts

    def air_joules(self, now: float) -> float:
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
    energy = _rows(table, "energy_j")  # since publishing began (t = 10 s)
    assert energy == [
        (0, 10.0, 0.0, 1),
        (1, 10.0, 0.0, 1),
        (0, 15.0, 5.0, 1),
        (1, 15.0, 10.0, 1),
        (0, 17.5, 7.5, 1),
        (1, 17.5, 15.0, 1),
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
    stress.lost_histogram.update({(1, 2): 2})
    distribution_rows(
        table, [0.4, 0.1, 0.3, 0.2, 0.5], stress.histogram, stress.lost_histogram, [0, 1, 2, -1]
    )
    cdf = _rows(table, "tta_cdf")
    assert len(cdf) == 101
    assert cdf[0] == (-1, 0.1, 0.0, 1) and cdf[-1] == (-1, 0.5, 1.0, 1)
    assert cdf[50][1] == pytest.approx(0.3) and cdf[50][2] == 0.5
    assert [x for _, x, _, _ in cdf] == sorted(x for _, x, _, _ in cdf)
    # x: the shortest path, y: the traversals, n: how many readings.
    assert _rows(table, "link_stress") == [(-1, 1, 1, 9), (-1, 2, 2, 40), (-1, 2, 3, 5)]
    assert _rows(table, "link_stress_lost") == [(-1, 2, 1, 2)]
    assert _rows(table, "tree_hops") == [
        (0, 0.0, 0, 1),
        (1, 0.0, 1, 1),
        (2, 0.0, 2, 1),
        (3, 0.0, -1, 1),
    ]
    empty = SeriesTable()
    distribution_rows(empty, [], {}, {}, [])
    assert len(empty) == 0  # nothing delivered: no CDF


@pytest.mark.parametrize("variant", ["coap-put-con", "ndn"])
def test_a_publish_run_returns_its_series(variant):
    protocol, sets = VARIANTS[variant]
    cfg, seed = publish_config(protocol, **{**sets, "workload.series_points": 4})
    result = run_one(cfg, seed)
    m, table = result.metrics, result.series
    assert isinstance(table, SeriesTable)
    # 8 readings 5 s apart per producer: a 40 s publishing period in 4 bins of 10 s.
    goodput = _rows(table, "goodput_per_s")
    assert [x for _, x, _, _ in goodput][:4] == [10.0, 20.0, 30.0, 40.0]
    assert sum(y for _, _, y, _ in goodput) * 10.0 == pytest.approx(m["items_delivered"])
    offered = _rows(table, "offered_per_s")
    assert sum(y for _, _, y, _ in offered) * 10.0 == pytest.approx(m["items"])
    nodes = len(_rows(table, "tree_hops"))
    energy = _rows(table, "energy_j")
    assert len(energy) == nodes * (1 + len(goodput))
    last = max(x for _, x, _, _ in energy)
    assert sum(y for node, x, y, _ in energy if x == last) >= m["energy_total_j"]
    assert len(_rows(table, "tta_cdf")) == 101
    arrived = sum(n for *_, n in _rows(table, "link_stress"))
    lost = sum(n for *_, n in _rows(table, "link_stress_lost"))
    assert arrived == m["items_delivered"] and arrived + lost == m["items"]
    pit = _rows(table, "pit_entries")
    assert bool(pit) == (protocol == "ndn")
    if pit:
        assert max(y for _, _, y, _ in pit) == m["pit_occupancy_max"]
        assert max(y for _, _, y, _ in _rows(table, "cs_bytes")) == m["cs_bytes_max"]
    # The series only read the run: without them, the same metrics and events.
    assert same_metrics(dict(m), run_one(*publish_config(protocol, **sets)).metrics)
