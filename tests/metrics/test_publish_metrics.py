"""S4's publish metrics: link stress per reading, and the names every publish run has."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from iotbench.metrics.publish import LinkStress, publish_metrics
from iotbench.net.packet import BROADCAST, CORRUPTED, DELIVERED, MISSED, Packet
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
