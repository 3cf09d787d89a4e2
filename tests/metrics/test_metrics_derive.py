"""Metrics from the streaming meters and the item log, against hand-computed values."""

from __future__ import annotations

import math

import pytest

from iotbench.metrics.derive import item_metrics, percentile
from iotbench.metrics.items import DELIVERED, GIVEN_UP, ItemLog
from iotbench.metrics.observers import Observers
from iotbench.metrics.traffic import TrafficMeter
from iotbench.net import packet as pk
from iotbench.net.link import PointToPointLink
from iotbench.net.node import Node
from iotbench.net.packet import Packet
from iotbench.sim import Simulator


def pkt(size, layers, t_sent, fate, src, dst):
    p = Packet(bytes(size), *layers)
    p.t_sent, p.fate, p.src, p.dst = t_sent, fate, src, dst
    return p


# (packet, its hooks as a medium would call them)
LOG = [
    pkt(100, (20, 8, 10), 0.0, pk.DELIVERED, "a", "b"),  # payload 62
    pkt(60, (40, 8, 4), 1.0, pk.LOST, "b", "a"),  # payload 8
    pkt(500, (20, 8, 0), 2.0, pk.QUEUE_FULL, "a", "b"),  # never on the wire
    pkt(128, (48, 0, 0), 3.0, pk.OUTAGE, "a", "b"),  # payload 80
    pkt(70, (20, 8, 2), 4.0, pk.IN_FLIGHT, "b", "a"),  # payload 40, still travelling
]


def feed(meter: TrafficMeter, packets, close_at: float | None = None) -> TrafficMeter:
    """Call the hooks in the order a medium would, at each packet's t_sent."""
    for p in packets:
        meter.sim.now = p.t_sent
        if close_at is not None and p.t_sent >= close_at and meter.t1 == math.inf:
            meter.close_window(close_at)
        if p.fate == pk.QUEUE_FULL:
            meter.finished(p)
            continue
        meter.transmitted(p)
        if p.fate == pk.DELIVERED:
            meter.received(p, p.dst)
        if p.fate != pk.IN_FLIGHT:
            meter.finished(p)
    return meter


def wire(packets, **window) -> dict:
    meter = TrafficMeter(Simulator(0), windowed=bool(window))
    if window:
        meter.arm_window(window["opener"])
    return feed(meter, packets, window.get("close_at")).wire_metrics()


# ----------------------------------------------------------------- wire metrics


def test_wire_metrics_whole_run():
    assert wire(LOG) == {
        "packets": 4,
        "bytes_total": 358,
        "bytes_link_header": 0,
        "bytes_ip_header": 128,
        "bytes_transport_header": 24,
        "bytes_app_header": 16,
        "bytes_payload": 190,
        "packets_lost": 2,  # lost + outage; neither queue-full nor in-flight
        "packets_queue_dropped": 1,
    }


def test_wire_metrics_window_opens_with_the_armed_node_and_is_half_open():
    # b's first packet (t = 1) opens the window; it closes at t = 3.
    assert wire(LOG, opener="b", close_at=3.0) == {
        "packets": 1,
        "bytes_total": 60,
        "bytes_link_header": 0,
        "bytes_ip_header": 40,
        "bytes_transport_header": 8,
        "bytes_app_header": 4,
        "bytes_payload": 8,
        "packets_lost": 1,
        "packets_queue_dropped": 1,  # queue drops are counted for the whole run
    }
    assert wire(LOG, opener="b", close_at=3.0 + 1e-9)["packets"] == 2
    assert wire(LOG, opener="a", close_at=0.0)["packets"] == 0
    assert wire(LOG, opener="a", close_at=0.5)["bytes_total"] == 100
    assert wire(LOG, opener="c")["packets"] == 0  # never opened


def test_a_packet_queued_when_the_window_closes_is_taken_back_out():
    sim = Simulator(0)
    meter = TrafficMeter(sim, windowed=True)
    meter.arm_window("a")
    first = pkt(100, (20, 8, 0), 0.0, pk.IN_FLIGHT, "a", "b")
    queued = pkt(50, (20, 8, 0), 2.0, pk.IN_FLIGHT, "a", "b")  # accepted at 0, leaves at 2
    meter.transmitted(first)
    meter.transmitted(queued)
    sim.now = 1.0
    meter.close_window(1.0)
    assert meter.window_start == 0.0
    assert meter.wire_metrics()["packets"] == 1
    assert meter.wire_metrics()["bytes_total"] == 100


def test_in_flight_packets_are_not_counted_as_lost():
    in_flight = [pkt(50, (20, 8, 0), 0.0, pk.IN_FLIGHT, "a", "b")]
    assert wire(in_flight)["packets"] == 1
    assert wire(in_flight)["packets_lost"] == 0


def test_wire_metrics_layers_sum_over_a_real_run():
    sim = Simulator(0)
    a, b = Node(sim, "a"), Node(sim, "b")
    ia, ib = a.add_interface("10.0.0.1", 128), b.add_interface("10.0.0.2", 128)
    meter = TrafficMeter(sim)
    PointToPointLink(sim, ia, ib, rate_bps=0, delay_s=0.01, observers=Observers(meter))
    b.udp_bind(9, lambda *args: None)
    a.udp_send(1, b.address, 9, bytes(1000), app_header_len=12)  # 10 fragments
    a.udp_send(1, b.address, 9, bytes(30), app_header_len=4)  # one packet
    sim.run()
    m = meter.wire_metrics()
    assert m["packets"] == 11
    assert m["bytes_total"] == 10 * 20 + 1008 + 20 + 38
    assert m["bytes_ip_header"] == 11 * 20
    assert m["bytes_transport_header"] == 16
    assert m["bytes_app_header"] == 16
    assert m["bytes_payload"] == 988 + 26
    assert m["packets_lost"] == 0
    assert meter.node_metrics("b") == {
        "packets_total": 11,
        "packets_sent": 0,
        "packets_received": 11,
    }


# ----------------------------------------------------------------- node packets


def test_node_packet_metrics_counting_rule():
    meter = feed(TrafficMeter(Simulator(0)), LOG)
    # b transmitted the lost and the in-flight packet; one packet was delivered to b.
    assert meter.node_metrics("b") == {
        "packets_total": 3,
        "packets_sent": 2,
        "packets_received": 1,
    }
    # a transmitted two (its queue-full packet never left); nothing was delivered to a.
    assert meter.node_metrics("a") == {
        "packets_total": 2,
        "packets_sent": 2,
        "packets_received": 0,
    }
    assert meter.node_metrics("c") == {
        "packets_total": 0,
        "packets_sent": 0,
        "packets_received": 0,
    }
    assert meter.nodes["a"].queue_drops == 1


# ----------------------------------------------------------------- percentiles


def test_percentile_interpolates_between_closest_ranks():
    values = [1.0, 2.0, 3.0, 4.0]
    # position = (n - 1) * q / 100
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 2.5  # pos 1.5
    assert percentile(values, 90) == pytest.approx(3.7, abs=1e-12)  # pos 2.7
    assert percentile(values, 95) == pytest.approx(3.85, abs=1e-12)  # pos 2.85
    assert percentile(values, 99) == pytest.approx(3.97, abs=1e-12)  # pos 2.97
    assert percentile(values, 100) == 4.0
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))
    # Eleven values 0, 10, ..., 100: the q-th percentile is q exactly at integral ranks.
    tens = [10.0 * i for i in range(11)]
    assert percentile(tens, 50) == 50.0
    assert percentile(tens, 90) == pytest.approx(90.0)
    assert percentile(tens, 95) == pytest.approx(95.0)  # pos 9.5, halfway 90..100
    assert percentile([0.0, 1.0, 100.0], 75) == pytest.approx(50.5)  # pos 1.5


# ----------------------------------------------------------------- items


def stats(*specs):
    """The stats an ItemLog keeps for items (t_start, t_end, status, payload), in order."""
    log = ItemLog()
    for t_start, *outcome in specs:
        it = log.start(t_start)
        if outcome:
            t_end, status, *payload = outcome
            log.finish(it, t_end, status, *payload)
    return log.stats


ITEMS = stats(
    (0.0, 1.0, DELIVERED, 100),  # latency 1
    (1.0, 3.0, DELIVERED, 100),  # 2
    (2.0, 5.0, DELIVERED, 50),  # 3
    (3.0, 7.0, GIVEN_UP),  # 4, not a delivery
    (4.0, 8.0, DELIVERED, 50),  # 4
    (5.0,),  # unfinished
)


def test_item_metrics_hand_computed():
    m = item_metrics(ITEMS, t_first_packet=0.5)
    # Completion: from min(first start 0.0, first packet 0.5) to the last end 8.0.
    expected = {
        "items": 6,
        "items_delivered": 4,
        "items_given_up": 1,
        "items_unfinished": 1,
        "delivery_ratio": 4 / 6,
        "task_completion_time_s": 8.0,
        "throughput_items_per_s": 0.5,
        "throughput_payload_bps": 8 * 300 / 8.0,
        "latency_mean_s": 2.5,
        "latency_min_s": 1.0,
        "latency_max_s": 4.0,
        "latency_p50_s": 2.5,
        "latency_p90_s": 3.7,
        "latency_p95_s": 3.85,
        "latency_p99_s": 3.97,
    }
    assert m.keys() == expected.keys()
    for key, value in expected.items():
        assert m[key] == pytest.approx(value, abs=1e-12), key


def test_completion_time_starts_at_the_first_packet_when_it_is_earlier():
    items = stats((1.0, 2.0, DELIVERED, 10), (2.0, 4.5, GIVEN_UP))
    m = item_metrics(items, t_first_packet=0.25)
    assert m["task_completion_time_s"] == 4.25  # given-up items end the task too
    # Throughput: over the time in which deliveries happened (to the last one at 2.0).
    assert m["throughput_items_per_s"] == 1 / 1.75
    assert m["throughput_payload_bps"] == 80 / 1.75
    assert item_metrics(items, t_first_packet=None)["task_completion_time_s"] == 3.5


def test_nothing_delivered_gives_nan_latencies():
    m = item_metrics(stats((0.0, 2.0, GIVEN_UP)), t_first_packet=0.0)
    assert (m["items_delivered"], m["items_given_up"], m["delivery_ratio"]) == (0, 1, 0.0)
    assert m["task_completion_time_s"] == 2.0
    assert m["throughput_items_per_s"] == 0.0
    for key in (
        "latency_mean_s",
        "latency_min_s",
        "latency_max_s",
        "latency_p50_s",
        "latency_p99_s",
    ):
        assert math.isnan(m[key]), key


def test_no_items():
    m = item_metrics(stats(), t_first_packet=None)
    assert (m["items"], m["items_delivered"], m["task_completion_time_s"]) == (0, 0, 0.0)
    assert math.isnan(m["delivery_ratio"])
    assert math.isnan(m["throughput_items_per_s"])


def test_item_log_first_outcome_wins_and_notifies_listeners():
    log = ItemLog()
    started, ended = [], []
    log.on_start.append(started.append)
    log.on_end.append(ended.append)
    first = log.start(1.0)
    second = log.start(2.0)
    assert started == [0, 1]
    assert (first.index, second.index, first.t_start) == (0, 1, 1.0)
    log.finish(first, 3.0, GIVEN_UP)
    log.finish(first, 4.0, DELIVERED, 99)  # a late response does not turn it into a delivery
    assert ended == [first]
    assert (first.status, first.t_end, first.payload_bytes, first.latency_s) == (
        GIVEN_UP,
        3.0,
        0,
        2.0,
    )
    assert second.latency_s is None


def test_item_log_keeps_only_open_items():
    log = ItemLog()
    items = [log.start(float(i)) for i in range(1000)]
    for it in items[:-1]:
        log.finish(it, it.t_start + 0.5, DELIVERED, 1)
    assert list(log.open) == [999]  # finished items leave only their numbers behind
    assert (log.stats.delivered, log.stats.payload_bytes, len(log.stats.latencies)) == (
        999,
        999,
        999,
    )


def test_close_undelivered_gives_up_handed_over_items_at_their_hand_over():
    log = ItemLog()
    handed, kept = log.start(0.0), log.start(1.0)
    handed.t_handed_over = 0.5
    log.close_undelivered()
    assert (handed.status, handed.t_end) == (GIVEN_UP, 0.5)
    assert kept.status is None and list(log.open) == [1]
