"""Interferers: the bursts radios ask about, drawn as they ask (a Wi-Fi station and
its access point) or recorded as they start (an 802.15.4 radio on another channel)."""

from __future__ import annotations

import math
import random

import pytest

from iotbench.net.radio.interferer import HISTORY_S, LeakingTransmitter, WifiInterferer
from iotbench.net.radio.wifi import (
    ACCESS_POINT,
    DIFS_S,
    DSSS,
    OFDM,
    SLOT_S,
    STATION,
    WifiTraffic,
)

DATA = (STATION, OFDM)


class _Radio:
    def __init__(self) -> None:
        self.interferers: list = []


def wifi(rate_bps: float, seed: int = 1, start_s: float = 0.0, **traffic):
    """The station's bursts of a bare-burst interferer (pattern poisson by default)."""
    traffic.setdefault("pattern", "poisson")
    itf = WifiInterferer(
        "wifi",
        WifiTraffic(rate_bps, start_s=start_s, **traffic),
        {DATA: [(_Radio(), 1.0)]},
        random.Random(seed),
    )
    return itf.bursts[DATA]


def test_the_bursts_are_the_same_whoever_asks_and_when():
    """Asking in small steps or in one go draws the same bursts from the same stream."""
    a, b = wifi(10e6), wifi(10e6)
    step: list[tuple[float, float]] = []
    for t in range(1, 1001):
        for start, end in a.overlaps((t - 1) * 1e-3, t * 1e-3):
            if step and step[-1][1] == start:  # one burst cut by the step's edge
                start = step.pop()[0]
            step.append((start, end))
    whole = b.overlaps(0.0, HISTORY_S / 2)  # within what b remembers
    assert step[: len(whole)] == whole
    assert a.stats(1.0) == pytest.approx(b.stats(1.0))


def test_the_offered_load_sets_the_airtime():
    for rate in (5e6, 20e6):
        itf = wifi(rate, seed=3)
        bursts, busy = itf.stats(20.0)
        airtime = WifiTraffic(rate, pattern="poisson").data_s
        assert bursts == pytest.approx(20.0 * rate / (8 * 1500), rel=0.03)
        assert busy == pytest.approx(bursts * airtime, rel=0.01)
    # Beyond what the air carries: back to back, DIFS and 0..15 slots apart.
    _, busy = wifi(54e6).stats(10.0)
    burst = WifiTraffic(54e6, pattern="poisson").data_s
    assert busy / 10.0 == pytest.approx(burst / (burst + DIFS_S + 7.5 * SLOT_S), rel=0.01)


def test_overlaps_clip_to_the_interval_and_never_overlap_each_other():
    itf = wifi(20e6, seed=5, start_s=1.0)
    assert itf.overlaps(0.0, 0.999) == []
    pieces = itf.overlaps(1.0, 1.01)
    assert pieces and all(1.0 <= a < b <= 1.01 for a, b in pieces)
    assert all(b1 + DIFS_S <= a2 + 1e-12 for (_, b1), (a2, _) in zip(pieces, pieces[1:]))


def test_memory_stays_flat_however_long_the_run():
    itf = wifi(54e6)
    for t in range(1, 20001):  # 20 s at a burst every ~0.3 ms: ~70,000 bursts
        itf.overlaps(t * 1e-3 - 1e-4, t * 1e-3)
    assert len(itf.starts) < 4096 + HISTORY_S / 1e-4
    bursts, _ = itf.stats(20.0)
    assert bursts > 50_000


def test_start_makes_the_targets_hear_each_emitter_with_its_own_power():
    near, far = _Radio(), _Radio()
    targets = {
        (STATION, OFDM): [(near, 2.0), (far, 0.5)],
        (ACCESS_POINT, OFDM): [(near, 1.0)],
        (ACCESS_POINT, DSSS): [(near, 0.1)],
    }
    itf = WifiInterferer("wifi", WifiTraffic(5e6), targets, random.Random(1))
    itf.start()
    assert [(b.name, mw) for b, mw in near.interferers] == [
        ("wifi station ofdm", 2.0),
        ("wifi ap ofdm", 1.0),
        ("wifi ap dsss", 0.1),
    ]
    assert [(b.name, mw) for b, mw in far.interferers] == [("wifi station ofdm", 0.5)]
    # The access point's ACKs follow the station's data frames, SIFS after.
    data = itf.bursts[STATION, OFDM].overlaps(0.0, 0.01)
    acks = itf.bursts[ACCESS_POINT, OFDM].overlaps(0.0, 0.01)
    assert len(acks) in (len(data), len(data) - 1)
    assert all(a[0] == pytest.approx(d[1] + 16e-6) for d, a in zip(data, acks))
    counts = itf.stats(1.0)
    assert counts[STATION, OFDM][0] == pytest.approx(1.0 / 2.352e-3, abs=2)
    assert counts[ACCESS_POINT, DSSS][0] in (9, 10)


def test_an_interferer_nobody_hears_draws_nothing():
    itf = WifiInterferer("wifi", WifiTraffic(28.5e6), {}, random.Random(1))
    assert itf.stats(10.0)[DATA] == (0, 0.0)


def test_a_leaking_transmitter_serves_what_it_recorded():
    leak = LeakingTransmitter("n3 on channel 25")
    leak.record(1.0, 1.004)
    leak.record(1.010, 1.012)
    assert leak.overlaps(0.9, 1.002) == [(1.0, 1.002)]
    assert leak.overlaps(1.003, 1.011) == [(1.003, 1.004), (1.010, 1.011)]
    assert leak.on_air(1.011) and not leak.on_air(1.005)
    assert leak.stats(2.0) == (2, pytest.approx(0.006))


def test_trains_carry_the_same_load_in_bursts_of_back_to_back_frames():
    trains = wifi(3e6, seed=7, pattern="trains", train_frames=20)
    bursts, busy = trains.stats(60.0)
    assert bursts == pytest.approx(60.0 * 3e6 / (8 * 1500), rel=0.08)
    assert busy == pytest.approx(bursts * WifiTraffic(3e6, pattern="trains").data_s, rel=1e-6)
    pieces = trains.overlaps(60.0 - HISTORY_S, 60.0) + trains.overlaps(60.0, 80.0)
    gaps = [b - a for (_, a), (b, _) in zip(pieces, pieces[1:])]
    back_to_back = [g for g in gaps if g <= DIFS_S + 15 * SLOT_S + 1e-12]
    # One gap in 20 ends a train; the others are DIFS plus a backoff.
    assert len(back_to_back) / len(gaps) == pytest.approx(19 / 20, abs=0.02)


def test_at_one_load_trains_leave_an_802154_frame_more_clear_gaps():
    """The chance that a 2.2 ms frame meets no burst at 3 Mbit/s: exp(-rate x (T +
    burst)) = 0.54 for a steady stream; for trains of 20 frames (6.9 ms, one every
    80 ms), the share of start times that miss a train and the 2.2 ms before it, 0.89."""
    frame_s, rate = 2.2e-3, 3e6

    def clear(pattern: str) -> float:
        itf = wifi(rate, seed=11, pattern=pattern)
        starts = [k * 0.01 for k in range(1, 20001)]
        return sum(not itf.overlaps(t, t + frame_s) for t in starts) / len(starts)

    lam = rate / (8 * 1500)
    steady = math.exp(-lam * (frame_s + WifiTraffic(rate, pattern="poisson").data_s))
    assert clear("poisson") == pytest.approx(steady, abs=0.02)
    assert clear("trains") == pytest.approx(0.89, abs=0.02)


def _iperf(rate_bps: float, **traffic) -> WifiInterferer:
    everyone = [(_Radio(), 1.0)]
    t = WifiTraffic(rate_bps, **traffic)
    return WifiInterferer("wifi", t, dict.fromkeys(t.emitters, everyone), random.Random(7))


def _frames(itf: WifiInterferer, key, a: float, b: float) -> list[tuple[float, float]]:
    return list(itf.bursts[key].overlaps(a, b))


@pytest.mark.parametrize("pattern", ["iperf", "poisson", "trains"])
def test_a_new_rate_changes_only_what_comes_after_it(pattern):
    """A stepped sweep's next step (S6): every frame that began before the change is
    the constant rate's; from then on the new rate's load, whatever was drawn ahead."""
    steady, stepped = _iperf(5e6, pattern=pattern), _iperf(5e6, pattern=pattern)
    for t in range(1, 2001):  # both asked alike, every ms, for 2 s
        steady.bursts[DATA].overlaps(t * 1e-3 - 1e-4, t * 1e-3)
        stepped.bursts[DATA].overlaps(t * 1e-3 - 1e-4, t * 1e-3)
    before = _frames(stepped, DATA, 2.0 - 0.04, 2.0)
    stepped.set_rate(2.0, 25e6)
    assert before == _frames(steady, DATA, 2.0 - 0.04, 2.0)
    assert _frames(stepped, DATA, 2.0 - 0.04, 2.0) == before
    for t in range(1, 10001):  # 10 s more, at the new rate
        stepped.bursts[DATA].overlaps(2.0 + t * 1e-3 - 1e-4, 2.0 + t * 1e-3)
    count_after = stepped.stats(12.0)[DATA][0] - steady.stats(2.0)[DATA][0]
    payload_bits = 8 * (stepped.traffic.payload_bytes if pattern == "iperf" else 1500)
    assert count_after == pytest.approx(10.0 * 25e6 / payload_bits, rel=0.05)
    starts = [a for a, _ in _frames(stepped, DATA, 11.96, 12.0)]
    assert all(b - a > 0 for a, b in zip(starts, starts[1:]))


def test_iperf_started_from_nothing_and_stopped():
    """0 Mbit/s is beacons alone; a new iperf sends its first datagram at once; a
    rate of 0 leaves the beacons, and the ACK of a frame on the air at the change."""
    itf = _iperf(0.0)
    assert itf.stats(1.0)[DATA][0] == 0 and itf.stats(1.0)[ACCESS_POINT, DSSS][0] >= 9
    itf.set_rate(1.0, 10e6)
    first = _frames(itf, DATA, 1.0, 1.01)[0][0]
    # At once on a medium idle for DIFS and the backoff (or after a beacon on the air).
    assert 1.0 <= first <= 1.0 + DIFS_S + 15 * SLOT_S + 0.002
    sent = itf.stats(2.0)[DATA][0]
    assert sent == pytest.approx(10e6 / (8 * 1470), rel=0.02)
    itf.set_rate(2.0, 0.0)
    assert itf.stats(3.0)[DATA][0] <= sent + 1
    acks = itf.stats(3.0)[ACCESS_POINT, OFDM][0]
    assert acks == itf.stats(3.0)[DATA][0]  # every data frame has its ACK
    assert itf.stats(3.0)[ACCESS_POINT, DSSS][0] >= 28


def test_a_stepped_interferer_is_the_same_whoever_asks_and_when():
    a, b = _iperf(5e6), _iperf(5e6)
    for t in range(1, 1001):
        a.bursts[DATA].overlaps(t * 1e-3 - 1e-4, t * 1e-3)
    a.set_rate(1.0, 20e6)
    b.set_rate(1.0, 20e6)  # b asked nothing before: it draws up to the change then
    for itf in (a, b):
        for t in range(1, 1001):
            itf.bursts[DATA].overlaps(1.0 + t * 1e-3 - 1e-4, 1.0 + t * 1e-3)
    assert a.stats(2.0) == b.stats(2.0)
    assert _frames(a, DATA, 1.96, 2.0) == _frames(b, DATA, 1.96, 2.0)
