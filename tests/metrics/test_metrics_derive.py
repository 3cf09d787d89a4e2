"""Metrics derived from the packet log and the item log, against hand-computed values."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from iotbench.metrics.derive import item_metrics, node_packet_metrics, percentile, wire_metrics
from iotbench.metrics.items import DELIVERED, GIVEN_UP, Item, ItemLog
from iotbench.net import packet as pk
from iotbench.net.link import PointToPointLink
from iotbench.net.node import Node
from iotbench.net.packet import Packet
from iotbench.sim import Simulator

A_TO_B = SimpleNamespace(name="a->b", src="a", dst="b")
B_TO_A = SimpleNamespace(name="b->a", src="b", dst="a")


def pkt(size, layers, t_sent, fate, channel):
    p = Packet(bytes(size), *layers)
    p.t_sent, p.fate, p.channel = t_sent, fate, channel
    return p


LOG = [
    pkt(100, (20, 8, 10), 0.0, pk.DELIVERED, A_TO_B),  # payload 62
    pkt(60, (40, 8, 4), 1.0, pk.LOST, B_TO_A),  # payload 8
    pkt(500, (20, 8, 0), 2.0, pk.QUEUE_FULL, A_TO_B),  # never on the wire
    pkt(128, (48, 0, 0), 3.0, pk.OUTAGE, A_TO_B),  # payload 80
    pkt(70, (20, 8, 2), 4.0, pk.IN_FLIGHT, B_TO_A),  # payload 40, still travelling
]


# ----------------------------------------------------------------- wire metrics


def test_wire_metrics_whole_run():
    assert wire_metrics(LOG) == {
        "packets": 4,
        "bytes_total": 358,
        "bytes_ip_header": 128,
        "bytes_transport_header": 24,
        "bytes_app_header": 16,
        "bytes_payload": 190,
        "packets_lost": 2,  # lost + outage; neither queue-full nor in-flight
    }


def test_wire_metrics_window_is_half_open_on_t_sent():
    assert wire_metrics(LOG, 1.0, 3.0) == {
        "packets": 1,
        "bytes_total": 60,
        "bytes_ip_header": 40,
        "bytes_transport_header": 8,
        "bytes_app_header": 4,
        "bytes_payload": 8,
        "packets_lost": 1,
    }
    assert wire_metrics(LOG, 1.0, 3.0 + 1e-9)["packets"] == 2
    assert wire_metrics(LOG, 3.0, 3.0)["packets"] == 0
    assert wire_metrics(LOG, 4.0)["packets"] == 1
    assert wire_metrics(LOG, t1=0.0)["bytes_total"] == 0
    assert wire_metrics(LOG, t1=0.5)["bytes_total"] == 100
    assert wire_metrics(LOG, 0.5, 0.9) == {
        "packets": 0,
        "bytes_total": 0,
        "bytes_ip_header": 0,
        "bytes_transport_header": 0,
        "bytes_app_header": 0,
        "bytes_payload": 0,
        "packets_lost": 0,
    }


def test_in_flight_packets_are_not_counted_as_lost():
    in_flight = [pkt(50, (20, 8, 0), 0.0, pk.IN_FLIGHT, A_TO_B)]
    assert wire_metrics(in_flight)["packets"] == 1
    assert wire_metrics(in_flight)["packets_lost"] == 0


def test_wire_metrics_layers_sum_over_a_real_run():
    sim = Simulator(0)
    a, b = Node(sim, "a"), Node(sim, "b")
    ia, ib = a.add_interface("10.0.0.1", 128), b.add_interface("10.0.0.2", 128)
    log: list[Packet] = []
    PointToPointLink(sim, ia, ib, rate_bps=0, delay_s=0.01, log=log)
    b.udp_bind(9, lambda *args: None)
    a.udp_send(1, b.address, 9, bytes(1000), app_header_len=12)  # 10 fragments
    a.udp_send(1, b.address, 9, bytes(30), app_header_len=4)  # one packet
    sim.run()
    m = wire_metrics(log)
    assert m["packets"] == 11
    assert m["bytes_total"] == 10 * 20 + 1008 + 20 + 38
    assert m["bytes_ip_header"] == 11 * 20
    assert m["bytes_transport_header"] == 16
    assert m["bytes_app_header"] == 16
    assert m["bytes_payload"] == 988 + 26
    assert m["packets_lost"] == 0


# ----------------------------------------------------------------- node packets


def test_node_packet_metrics_counting_rule():
    # b transmitted the lost and the in-flight packet; one packet was delivered to b.
    assert node_packet_metrics(LOG, "b") == {
        "packets_total": 3,
        "packets_sent": 2,
        "packets_received": 1,
    }
    # a transmitted two (its queue-full packet never left); nothing was delivered to a.
    assert node_packet_metrics(LOG, "a") == {
        "packets_total": 2,
        "packets_sent": 2,
        "packets_received": 0,
    }
    assert node_packet_metrics(LOG, "c") == {
        "packets_total": 0,
        "packets_sent": 0,
        "packets_received": 0,
    }


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


def item(index, t_start, t_end=None, status=None, payload=0):
    it = Item(index, t_start)
    if status is not None:
        ItemLog.finish(it, t_end, status, payload)
    return it


ITEMS = [
    item(0, 0.0, 1.0, DELIVERED, 100),  # latency 1
    item(1, 1.0, 3.0, DELIVERED, 100),  # 2
    item(2, 2.0, 5.0, DELIVERED, 50),  # 3
    item(3, 3.0, 7.0, GIVEN_UP),  # 4, not a delivery
    item(4, 4.0, 8.0, DELIVERED, 50),  # 4
    item(5, 5.0),  # unfinished
]


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
    items = [item(0, 1.0, 2.0, DELIVERED, 10), item(1, 2.0, 4.5, GIVEN_UP)]
    m = item_metrics(items, t_first_packet=0.25)
    assert m["task_completion_time_s"] == 4.25  # given-up items end the task too
    # Throughput: over the time in which deliveries happened (to the last one at 2.0).
    assert m["throughput_items_per_s"] == 1 / 1.75
    assert m["throughput_payload_bps"] == 80 / 1.75
    assert item_metrics(items, t_first_packet=None)["task_completion_time_s"] == 3.5


def test_nothing_delivered_gives_nan_latencies():
    m = item_metrics([item(0, 0.0, 2.0, GIVEN_UP)], t_first_packet=0.0)
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
    m = item_metrics([], t_first_packet=None)
    assert (m["items"], m["items_delivered"], m["task_completion_time_s"]) == (0, 0, 0.0)
    assert math.isnan(m["delivery_ratio"])
    assert math.isnan(m["throughput_items_per_s"])


def test_item_log_first_outcome_wins_and_notifies_listeners():
    log = ItemLog()
    started = []
    log.on_start.append(started.append)
    first = log.start(1.0)
    second = log.start(2.0)
    assert started == [0, 1]
    assert (first.index, second.index, first.t_start) == (0, 1, 1.0)
    ItemLog.finish(first, 3.0, GIVEN_UP)
    ItemLog.finish(first, 4.0, DELIVERED, 99)  # a late response does not turn it into a delivery
    assert (first.status, first.t_end, first.payload_bytes, first.latency_s) == (
        GIVEN_UP,
        3.0,
        0,
        2.0,
    )
    assert second.latency_s is None
