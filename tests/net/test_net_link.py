"""Channels and links: exact timings, drop-tail queue, impairments, outages, the log."""

from __future__ import annotations

import itertools
import random
import statistics

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotbench.metrics.observers import Observers, PacketRecorder
from iotbench.net.impairments import (
    BernoulliLoss,
    ConstantDelay,
    GilbertElliottLoss,
    Impairment,
    NoDelay,
    NoLoss,
    NormalDelay,
    Outages,
    Redraw,
    UniformDelay,
    random_outages,
)
from iotbench.net.link import Channel, PointToPointLink
from iotbench.net.node import Node
from iotbench.net.packet import DELIVERED, IN_FLIGHT, LOST, OUTAGE, QUEUE_FULL, TRANSMITTED, Packet
from iotbench.sim import Simulator

FINAL_FATES = {DELIVERED, LOST, OUTAGE, QUEUE_FULL}


class Harness:
    """One channel whose deliveries are recorded as (arrival time, packet)."""

    def __init__(self, *, rate_bps=0.0, delay_s=0.0, queue_packets=100, impairment=None, seed=0):
        self.sim = Simulator(seed)
        self.log: list[Packet] = []
        self.arrivals: list[tuple[float, Packet]] = []
        self.channel = Channel(
            self.sim,
            "a",
            "b",
            lambda p: self.arrivals.append((self.sim.now, p)),
            rate_bps=rate_bps,
            delay_s=delay_s,
            queue_packets=queue_packets,
            impairment=impairment or Impairment(),
            observers=Observers(PacketRecorder(self.log)),
        )

    def send_at(self, t: float, size: int) -> Packet:
        pkt = Packet(bytes(size), 20, 8, 0)
        self.sim.at(t, self.channel.send, pkt)
        return pkt

    def run(self):
        self.sim.run()
        return self


# ----------------------------------------------------------------- timing


def test_serialisation_plus_propagation_delay():
    h = Harness(rate_bps=8000, delay_s=0.25)  # 1000 bytes -> 1 s on the wire
    pkt = h.send_at(0.5, 1000)
    h.run()
    assert h.arrivals == [(1.75, pkt)]
    assert (pkt.t_sent, pkt.t_done, pkt.fate) == (0.5, 1.75, DELIVERED)
    assert pkt.medium is h.channel


def test_serialisation_time_is_size_times_8_over_rate():
    h = Harness(rate_bps=250_000, delay_s=0.0)
    pkts = [h.send_at(10.0 * i, size) for i, size in enumerate((1, 127, 1280))]
    h.run()
    assert [t for t, _ in h.arrivals] == [
        pytest.approx(10.0 * i + size * 8 / 250_000, abs=1e-12)
        for i, size in enumerate((1, 127, 1280))
    ]
    assert [p.fate for p in pkts] == [DELIVERED] * 3


def test_back_to_back_packets_queue_and_departures_accumulate():
    h = Harness(rate_bps=8000, delay_s=0.5)
    pkts = [h.send_at(0.0, 1000) for _ in range(3)] + [h.send_at(1.5, 500)]
    h.run()
    # Departures (t_sent = start of transmission): 0, 1, 2, then 3 (the link is busy
    # until 3 when the fourth packet is offered at 1.5).
    assert [p.t_sent for p in pkts] == [0.0, 1.0, 2.0, 3.0]
    assert [t for t, _ in h.arrivals] == [1.5, 2.5, 3.5, 4.0]
    assert [p for _, p in h.arrivals] == pkts


def test_idle_link_starts_transmitting_at_once():
    h = Harness(rate_bps=8000, delay_s=0.0)
    first = h.send_at(0.0, 1000)
    later = h.send_at(5.0, 1000)
    h.run()
    assert (first.t_sent, later.t_sent) == (0.0, 5.0)
    assert [t for t, _ in h.arrivals] == [1.0, 6.0]


def test_drop_tail_queue_limit():
    h = Harness(rate_bps=8000, delay_s=0.0, queue_packets=2)
    # 1 on the wire + 2 waiting are accepted; the 4th and 5th are dropped.
    pkts = [h.send_at(0.0, 1000) for _ in range(5)]
    h.sim.run(until=0.0)
    assert h.channel.queued == 2
    h.run()
    assert [p.fate for p in pkts] == [DELIVERED] * 3 + [QUEUE_FULL] * 2
    assert [(p.t_sent, p.t_done) for p in pkts[3:]] == [(0.0, 0.0)] * 2
    assert [t for t, _ in h.arrivals] == [1.0, 2.0, 3.0]


def test_queue_space_frees_as_packets_finish():
    h = Harness(rate_bps=8000, delay_s=0.0, queue_packets=1)
    a, b, c = (h.send_at(0.0, 1000) for _ in range(3))  # c dropped
    d = h.send_at(0.999, 1000)  # a still on the wire, b waiting: dropped
    e = h.send_at(1.0, 1000)  # a finished at 1.0: b on the wire, e waits
    h.run()
    assert [p.fate for p in (a, b, c, d, e)] == [
        DELIVERED,
        DELIVERED,
        QUEUE_FULL,
        QUEUE_FULL,
        DELIVERED,
    ]
    assert e.t_sent == 2.0 and e.t_done == 3.0


def test_zero_queue_allows_only_the_packet_on_the_wire():
    h = Harness(rate_bps=8000, queue_packets=0)
    pkts = [h.send_at(0.0, 100) for _ in range(2)]
    h.run()
    assert [p.fate for p in pkts] == [DELIVERED, QUEUE_FULL]


def test_negative_queue_limit_is_an_error():
    with pytest.raises(ValueError):
        Harness(rate_bps=8000, queue_packets=-1)


@settings(max_examples=200, deadline=None)
@given(
    sends=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 300)), min_size=1, max_size=30),
    queue=st.integers(0, 4),
)
def test_drop_tail_matches_a_plain_model(sends, queue):
    """Fates and start times equal those of a direct model of one transmitter + queue."""
    rate = 8000.0
    sends = sorted(sends)
    h = Harness(rate_bps=rate, queue_packets=queue)
    pkts = [h.send_at(t / 8, size) for t, size in sends]
    h.run()
    finishes: list[float] = []  # finish times of accepted packets, in order
    expected = []
    for t, size in sends:
        now = t / 8
        in_system = [f for f in finishes if f > now]  # on the wire or waiting
        if len(in_system) > queue:
            expected.append((QUEUE_FULL, now))
            continue
        start = max([now] + finishes[-1:])
        finishes.append(start + size * 8 / rate)
        expected.append((DELIVERED, start))
    assert [(p.fate, p.t_sent) for p in pkts] == expected


def test_rate_zero_means_no_serialisation_delay_and_no_queue():
    h = Harness(rate_bps=0, delay_s=0.125, queue_packets=0)
    pkts = [h.send_at(1.0, 60000) for _ in range(50)]
    h.run()
    assert all(p.fate == DELIVERED and p.t_sent == 1.0 for p in pkts)
    assert [t for t, _ in h.arrivals] == [1.125] * 50
    assert [p for _, p in h.arrivals] == pkts  # same-instant arrivals keep their order


# ----------------------------------------------------------------- loss models


def test_lost_packets_still_use_the_transmitter():
    lossy = Impairment(loss=BernoulliLoss(random.Random(1), 1.0))
    h = Harness(rate_bps=8000, delay_s=0.5, impairment=lossy)
    pkts = [h.send_at(0.0, 1000) for _ in range(2)]
    h.run()
    assert h.arrivals == []
    assert [(p.fate, p.t_sent, p.t_done) for p in pkts] == [(LOST, 0.0, 1.0), (LOST, 1.0, 2.0)]


def test_bernoulli_loss_rate():
    n, p = 20_000, 0.1
    h = Harness(impairment=Impairment(loss=BernoulliLoss(random.Random(42), p)))
    for i in range(n):
        h.send_at(i * 0.001, 50)
    h.run()
    rate = sum(1 for x in h.log if x.fate == LOST) / n
    # Binomial sd = sqrt(p(1-p)/n) = 0.0021; allow ~5 sd.
    assert abs(rate - p) < 0.011
    assert len(h.arrivals) == n - sum(1 for x in h.log if x.fate == LOST)


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_bernoulli_extremes(p):
    model = BernoulliLoss(random.Random(3), p)
    assert {model.lost() for _ in range(1000)} == {bool(p)}


def test_bernoulli_draws_at_p_zero_so_a_redraw_does_not_shift_the_stream():
    a = BernoulliLoss(random.Random(9), 0.0)
    b = BernoulliLoss(random.Random(9), 0.3)
    for _ in range(10):
        a.lost()
        b.lost()
    a.p = b.p = 0.5
    assert [a.lost() for _ in range(200)] == [b.lost() for _ in range(200)]


def test_gilbert_elliott_stationary_loss():
    p_gb, p_bg = 0.05, 0.2
    model = GilbertElliottLoss(random.Random(7), p_gb, p_bg, loss_good=0.0, loss_bad=1.0)
    n = 100_000
    losses = [model.lost() for _ in range(n)]
    expected = p_gb / (p_gb + p_bg) * 1.0  # 0.2
    assert abs(sum(losses) / n - expected) < 0.015
    # Losses come in bursts: mean burst length is 1 / p_bg = 5.
    bursts, run = [], 0
    for lost in losses:
        if lost:
            run += 1
        elif run:
            bursts.append(run)
            run = 0
    assert statistics.mean(bursts) == pytest.approx(1 / p_bg, rel=0.1)


def test_gilbert_elliott_partial_loss_in_bad_state():
    p_gb, p_bg, loss_bad = 0.1, 0.3, 0.5
    model = GilbertElliottLoss(random.Random(11), p_gb, p_bg, loss_good=0.0, loss_bad=loss_bad)
    n = 100_000
    rate = sum(model.lost() for _ in range(n)) / n
    assert abs(rate - p_gb / (p_gb + p_bg) * loss_bad) < 0.01  # 0.125


def test_gilbert_elliott_starts_good_and_never_loses_without_transitions():
    model = GilbertElliottLoss(random.Random(5), 0.0, 1.0)
    assert not any(model.lost() for _ in range(1000))
    assert model.bad is False


def test_no_loss_and_no_delay():
    assert NoLoss().lost() is False
    assert NoDelay().extra() == 0.0


# ----------------------------------------------------------------- delay models


def test_constant_extra_delay():
    h = Harness(rate_bps=8000, delay_s=0.25, impairment=Impairment(delay=ConstantDelay(0.5)))
    pkt = h.send_at(0.0, 1000)
    h.run()
    assert pkt.t_done == 1.75


def test_uniform_delay_bounds():
    model = UniformDelay(random.Random(2), 0.1, 0.3)
    values = [model.extra() for _ in range(5000)]
    assert all(0.1 <= v <= 0.3 for v in values)
    assert min(values) < 0.102 and max(values) > 0.298
    assert statistics.mean(values) == pytest.approx(0.2, abs=0.005)


def test_uniform_delay_on_a_channel_and_reordering():
    h = Harness(delay_s=1.0, impairment=Impairment(delay=UniformDelay(random.Random(4), 0.0, 0.5)))
    pkts = [h.send_at(0.01 * i, 100) for i in range(200)]
    h.run()
    for p in pkts:
        assert 1.0 + p.t_sent <= p.t_done <= 1.5 + p.t_sent
    # Jitter larger than the spacing reorders packets (no FIFO is imposed on delay).
    assert [p for _, p in h.arrivals] != pkts
    assert [t for t, _ in h.arrivals] == sorted(t for t, _ in h.arrivals)


def test_normal_delay_is_clipped_at_zero():
    model = NormalDelay(random.Random(6), 0.0, 1.0)
    values = [model.extra() for _ in range(10_000)]
    assert min(values) == 0.0
    assert all(v >= 0.0 for v in values)
    assert sum(1 for v in values if v == 0.0) / len(values) == pytest.approx(0.5, abs=0.03)
    wide = NormalDelay(random.Random(6), 2.0, 0.1)
    values = [wide.extra() for _ in range(10_000)]
    assert statistics.mean(values) == pytest.approx(2.0, abs=0.01)
    assert statistics.stdev(values) == pytest.approx(0.1, rel=0.05)


# ----------------------------------------------------------------- outages


def test_outage_interval_predicate():
    o = Outages()
    o.add(1.0, 1.0)  # down during [1, 2)
    assert not o.down_during(0.0, 0.999)
    assert o.down_during(0.0, 1.0)  # touches the start
    assert o.down_during(1.5, 1.6)  # inside
    assert o.down_during(0.5, 3.0)  # spans it
    assert o.down_during(1.999, 5.0)
    assert not o.down_during(2.0, 3.0)  # end is exclusive
    assert o.intervals == [(1.0, 2.0)]


def test_outage_intervals_are_kept_sorted_and_may_overlap():
    o = Outages()
    o.add(5.0, 1.0)
    o.add(1.0, 10.0)
    o.add(3.0, 0.5)
    assert o.intervals == [(1.0, 11.0), (3.0, 3.5), (5.0, 6.0)]
    assert o.down_during(10.5, 10.6)  # only inside the long one
    assert not o.down_during(11.0, 12.0)


def test_zero_length_outage_never_drops():
    o = Outages()
    o.add(1.0, 0.0)  # [1, 1) is empty
    assert not o.down_during(0.5, 1.5)
    assert not o.down_during(1.0, 1.0)
    h = Harness(delay_s=1.0, impairment=Impairment(outages=o))
    pkt = h.send_at(0.5, 10)
    h.run()
    assert pkt.fate == DELIVERED


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 20), st.integers(0, 5)), max_size=5),
    st.integers(0, 25),
    st.integers(0, 10),
)
def test_down_during_matches_the_definition(intervals, t0, length):
    # Integer times: the link is down at instant t iff start <= t < end for some outage;
    # over [t0, t1] that is decided by the integer and half-integer points in between.
    o = Outages()
    for start, duration in intervals:
        o.add(float(start), float(duration))
    t1 = t0 + length
    points = [t0 + k / 2 for k in range(2 * length + 1)]
    expected = any(s <= t < s + d for s, d in intervals for t in points)
    assert o.down_during(float(t0), float(t1)) == expected


@pytest.mark.parametrize(
    "t,fate",
    [
        (0.0, DELIVERED),  # [0, 0.5] entirely before
        (0.499, DELIVERED),
        (0.5, OUTAGE),  # arrives at 1.0, the instant the outage begins
        (0.9, OUTAGE),  # in flight when it begins
        (1.5, OUTAGE),  # sent during
        (1.9, OUTAGE),  # sent during, arrives after
        (2.0, DELIVERED),  # sent at the instant it ends
        (3.0, DELIVERED),
    ],
)
def test_packets_in_flight_during_an_outage_are_dropped(t, fate):
    outages = Outages()
    outages.add(1.0, 1.0)
    h = Harness(delay_s=0.5, impairment=Impairment(outages=outages))
    pkt = h.send_at(t, 100)
    h.run()
    assert pkt.fate == fate
    assert pkt.t_done == t + 0.5
    assert len(h.arrivals) == (fate == DELIVERED)


def test_outage_covers_serialisation_time_too():
    outages = Outages()
    outages.add(0.5, 0.1)
    h = Harness(rate_bps=8000, delay_s=0.0, impairment=Impairment(outages=outages))
    pkt = h.send_at(0.0, 1000)  # on the wire [0, 1]
    h.run()
    assert pkt.fate == OUTAGE


def test_random_outages_in_window():
    o = random_outages(random.Random(8), 5, 2.0, (10.0, 20.0))
    assert len(o.intervals) == 5
    for start, end in o.intervals:
        assert 10.0 <= start <= 20.0 and end == start + 2.0


# ----------------------------------------------------------------- redraw


def test_redraw_sets_every_target_within_bounds_and_records_history():
    a = BernoulliLoss(random.Random(1), 0.0)
    b = BernoulliLoss(random.Random(2), 0.0)
    redraw = Redraw(random.Random(3), [a, b], "p", 0.0, 0.05)
    for _ in range(20):
        redraw.fire()
        assert a.p == b.p == redraw.history[-1]
    assert len(redraw.history) == 20
    assert all(0.0 <= v <= 0.05 for v in redraw.history)
    assert len(set(redraw.history)) == 20
    # Same seed, same sequence.
    again = Redraw(random.Random(3), [], "p", 0.0, 0.05)
    for _ in range(20):
        again.fire()
    assert again.history == redraw.history


def test_redraw_changes_the_channel_behaviour():
    loss = BernoulliLoss(random.Random(1), 0.0)
    h = Harness(impairment=Impairment(loss=loss))
    redraw = Redraw(random.Random(3), [loss], "p", 1.0, 1.0)
    first = h.send_at(0.0, 10)
    h.sim.at(1.0, redraw.fire)
    second = h.send_at(2.0, 10)
    h.run()
    assert (first.fate, second.fate) == (DELIVERED, LOST)
    assert redraw.history == [1.0]


# ----------------------------------------------------------------- links


def _link(**kw):
    sim = Simulator(0)
    a, b = Node(sim, "a"), Node(sim, "b")
    ia, ib = a.add_interface("10.0.0.1", 1500), b.add_interface("10.0.0.2", 1500)
    log: list[Packet] = []
    link = PointToPointLink(sim, ia, ib, observers=Observers(PacketRecorder(log)), **kw)
    return sim, a, b, link, log


def test_link_wires_two_channels_to_the_right_receivers():
    sim, a, b, link, log = _link(rate_bps=8000, delay_s=0.5)
    assert (link.a_to_b.name, link.b_to_a.name) == ("a->b", "b->a")
    assert link.a_to_b.src == "a" and link.a_to_b.dst == "b"
    assert a.interfaces[0].channel is link.a_to_b
    assert b.interfaces[0].channel is link.b_to_a
    got = []
    b.udp_bind(7, lambda payload, src, sport, dport, dst: got.append(("b", sim.now, payload)))
    a.udp_bind(7, lambda payload, src, sport, dport, dst: got.append(("a", sim.now, payload)))
    a.udp_send(7, b.address, 7, bytes(72))  # 100 bytes on the wire: 0.1 s
    b.udp_send(7, a.address, 7, bytes(172))  # 200 bytes: 0.2 s, its own transmitter
    sim.run()
    assert got == [("b", pytest.approx(0.6), bytes(72)), ("a", pytest.approx(0.7), bytes(172))]
    assert [p.medium.name for p in log] == ["a->b", "b->a"]


def test_per_direction_impairments_apply_only_to_their_direction():
    lossy = Impairment(loss=BernoulliLoss(random.Random(1), 1.0), delay=ConstantDelay(5.0))
    sim, a, b, link, log = _link(delay_s=0.0, impair_a_to_b=lossy)
    for _ in range(10):
        a.udp_send(1, b.address, 9, b"x")
        b.udp_send(1, a.address, 9, b"y")
    sim.run()
    fates = {name: {p.fate for p in log if p.medium.name == name} for name in ("a->b", "b->a")}
    assert fates == {"a->b": {LOST}, "b->a": {DELIVERED}}
    assert all(p.t_done == 0.0 for p in log if p.medium.name == "b->a")  # no extra delay
    assert link.b_to_a.impairment is not lossy


# ----------------------------------------------------------------- the packet log


def test_every_offered_packet_is_logged_once_with_a_final_fate():
    outages = Outages()
    outages.add(2.0, 1.0)
    imp = Impairment(
        loss=BernoulliLoss(random.Random(5), 0.2),
        delay=UniformDelay(random.Random(6), 0.0, 0.3),
        outages=outages,
    )
    h = Harness(rate_bps=80_000, delay_s=0.1, queue_packets=3, impairment=imp)
    offered = [h.send_at(0.05 * (i // 6), 100 + i) for i in range(300)]  # bursts of 6
    h.run()
    assert len(h.log) == len(offered)
    assert {id(p) for p in h.log} == {id(p) for p in offered}
    assert all(p.fate in FINAL_FATES for p in h.log)
    fates = {f: sum(1 for p in h.log if p.fate == f) for f in FINAL_FATES}
    assert all(count > 0 for count in fates.values()), fates
    delivered = [p for p in h.log if p.fate == DELIVERED]
    assert sorted(id(p) for _, p in h.arrivals) == sorted(id(p) for p in delivered)
    assert all(t == p.t_done for t, p in h.arrivals)


def test_undelivered_packets_are_in_flight_until_they_arrive():
    h = Harness(delay_s=1.0)
    pkt = h.send_at(0.0, 10)
    h.sim.run(until=0.5)
    assert pkt.fate == IN_FLIGHT and pkt.fate in TRANSMITTED
    h.run()
    assert pkt.fate == DELIVERED


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sends=st.lists(st.tuples(st.floats(0, 5), st.integers(1, 1500)), min_size=1, max_size=40),
    rate=st.sampled_from([0.0, 9600.0, 250_000.0, 1e6]),
    delay=st.floats(0, 0.5),
    queue=st.integers(0, 5),
    loss_p=st.floats(0, 1),
    outage=st.tuples(st.floats(0, 5), st.floats(0, 2)),
    seed=st.integers(0, 2**32),
)
def test_channel_invariants(sends, rate, delay, queue, loss_p, outage, seed):
    outages = Outages()
    outages.add(*outage)
    imp = Impairment(loss=BernoulliLoss(random.Random(seed), loss_p), outages=outages)
    h = Harness(rate_bps=rate, delay_s=delay, queue_packets=queue, impairment=imp)
    pkts = [h.send_at(t, size) for t, size in sends]
    h.run()
    assert len(h.log) == len(pkts)
    assert all(p.fate in FINAL_FATES for p in pkts)
    assert len(h.arrivals) == sum(1 for p in pkts if p.fate == DELIVERED)
    wire = sorted((p for p in pkts if p.fate != QUEUE_FULL), key=lambda p: p.t_sent)
    for p in wire:
        tx = len(p.data) * 8 / rate if rate else 0.0
        if p.fate == LOST:
            assert p.t_done == pytest.approx(p.t_sent + tx)
        else:
            assert p.t_done == pytest.approx(p.t_sent + tx + delay)
        assert (p.fate == OUTAGE) == (p.fate != LOST and outages.down_during(p.t_sent, p.t_done))
    if not rate:
        assert not any(p.fate == QUEUE_FULL for p in pkts)
        return
    # One transmitter: transmissions never overlap.
    for x, y in itertools.pairwise(wire):
        assert y.t_sent >= x.t_sent + len(x.data) * 8 / rate - 1e-9
    # Drop-tail oracle: replay the offers in kernel order (time, then scheduling order).
    # A packet is dropped exactly when 1 + queue accepted packets are not finished yet.
    unfinished: list[float] = []
    for i in sorted(range(len(sends)), key=lambda i: (sends[i][0], i)):
        t, pkt = sends[i][0], pkts[i]
        unfinished = [f for f in unfinished if f > t]
        if pkt.fate == QUEUE_FULL:
            assert len(unfinished) == queue + 1
            assert pkt.t_sent == pkt.t_done == t
        else:
            assert len(unfinished) <= queue
            unfinished.append(pkt.t_sent + len(pkt.data) * 8 / rate)


def test_a_serial_line_costs_a_packets_framed_bytes_at_the_uart_rate():
    """net/serial.py: 8N1 carries a byte in 10 bit times; SLIP escapes END and ESC
    and ends with END; ethos adds an Ethernet header and two delimiters and escapes
    its delimiter and escape character."""
    from iotbench.net import serial

    packet = bytes([0x60, 0xC0, 0xDB, 0x7E, 0x7D]) + bytes(95)
    assert serial.slip_line_bytes(packet) == 100 + 2 + 1
    assert serial.ethos_line_bytes(packet) == 14 + 100 + 2 + 2
    assert serial.line_rate_bps(115_200) == 92_160.0
    h = Harness(rate_bps=serial.line_rate_bps(500_000))
    h.channel.framed_bytes = serial.ethos_line_bytes
    pkt = Packet(packet, 40, 8, 0)
    h.sim.at(0.0, h.channel.send, pkt)
    h.run()
    ((arrival, _),) = h.arrivals
    assert arrival == pytest.approx(118 * 10 / 500_000)
    with pytest.raises(ValueError, match="unknown serial framing"):
        serial.line_bytes("ppp", packet)
