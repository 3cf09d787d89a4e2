"""Contiki's CSMA over NullRDC (S6's nodes): per-neighbour queues, a backoff of 125 ms
and more after a busy channel or a missing ACK, a busy channel never giving up, the
next frame to a neighbour 125 ms after the previous one."""

from __future__ import annotations

import random

import pytest
from radio_harness import RadioNet

from iotbench.net.mac.contiki_csma import ContikiCsmaMac
from iotbench.net.mac.csma import NO_ACK, SENT, MacParams
from iotbench.net.radio import phy
from iotbench.net.radio.interferer import WifiInterferer
from iotbench.net.radio.wifi import OFDM, STATION, WifiTraffic

TICK = 1 / 128


def contiki(positions, **kw) -> RadioNet:
    return RadioNet(positions, mac_class=ContikiCsmaMac, params=MacParams(queue_frames=8), **kw)


def test_a_clear_channel_sends_at_once_and_the_next_frame_125_ms_later():
    net = contiki([(0, 0, 0), (10, 0, 0)])
    for _ in range(3):
        net.send_at(1.0, 0, 1)
    net.sim.run(until=3.0)
    assert [status for *_, status, _ in net.sent] == [SENT] * 3
    starts = [p.t_sent for p in net.frames(0) if p.kind == "data"]
    # CCA (128 us) and the turnaround (192 us), then the frame; the next 125 ms after
    # the previous one was acknowledged.
    assert starts[0] == pytest.approx(1.0 + phy.CCA_S + phy.TURNAROUND_S)
    done = [t for t, *_ in net.sent]
    assert starts[1] - done[0] == pytest.approx(0.125 + phy.CCA_S + phy.TURNAROUND_S)
    assert starts[2] - done[1] == pytest.approx(0.125 + phy.CCA_S + phy.TURNAROUND_S)


def test_a_missing_ack_backs_off_125_ms_and_more_and_gives_up_after_five():
    net = contiki([(0, 0, 0), (10, 0, 0)])
    nobody = bytes(8)
    net.sim.at(1.0, net.macs[0].send, nobody, b"x" * 50)
    net.sim.run(until=10.0)
    ((t_end, _, dst, status, tries),) = net.sent
    assert (dst, status, tries) == (nobody, NO_ACK, 5)
    starts = [p.t_sent for p in net.frames(0)]
    assert len(starts) == 5
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    # After the k-th transmission: T + [0, 2^min(k,3) T) in ticks of 1/128 s, plus the
    # frame, the ACK wait, CCA and turnaround.
    for k, gap in enumerate(gaps, start=1):
        frame = phy.frame_airtime_s(len(net.frames(0)[0].data))
        wait = gap - frame - MacParams().ack_wait_s - phy.CCA_S - phy.TURNAROUND_S
        assert 0.125 - 1e-9 <= wait < 0.125 * (1 + (1 << min(k, 3))) + 1e-9
        assert (wait / TICK) == pytest.approx(round(wait / TICK), abs=1e-6)
    c = net.macs[0].counters
    assert (c.frames, c.retries, c.no_ack) == (1, 4, 1)


def test_a_busy_channel_is_retried_without_end_and_never_costs_a_transmission():
    net = contiki([(0, 0, 0), (10, 0, 0)])
    jam = WifiTraffic(rate_bps=54e6, pattern="poisson", frame_bytes=10**8)
    targets = {(STATION, OFDM): [(r, phy.dbm_to_mw(-50.0)) for r in net.radios]}
    WifiInterferer("wifi", jam, targets, random.Random(1)).start()
    net.send_at(0.5, 0, 1)
    net.sim.run(until=30.0)
    c = net.macs[0].counters
    assert net.sent == [] and c.frames == 0 and c.channel_access_failures == 0
    # One attempt every 125 to 250 ms: about 30 s / 0.19 s.
    assert 120 < c.cca_busy < 240
    assert net.macs[0].queued == 1


def test_frames_for_a_third_neighbour_are_dropped_while_two_have_queues():
    net = contiki([(0, 0, 0), (10, 0, 0), (0, 10, 0), (10, 10, 0)])
    for dst in (1, 2, 3):
        net.send_at(1.0, 0, dst)
    net.sim.run(until=3.0)
    assert net.macs[0].counters.queue_drops == 1
    first_two = [net.address(1), net.address(2)]
    assert sorted(dst for _, _, dst, status, _ in net.sent if status == SENT) == first_two


def test_eight_frames_in_all():
    net = contiki([(0, 0, 0), (10, 0, 0)])
    for _ in range(10):
        net.send_at(1.0, 0, 1)
    net.sim.run(until=5.0)
    assert net.macs[0].counters.queue_drops == 2
    assert len(net.sent) == 8
