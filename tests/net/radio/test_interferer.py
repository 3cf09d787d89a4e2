"""The Wi-Fi interferer: its spectrum in an 802.15.4 channel, and its bursts, drawn
as radios ask about them."""

from __future__ import annotations

import math
import random

import pytest

from iotbench.net.radio.interferer import (
    DIFS_S,
    HISTORY_S,
    SLOT_S,
    WifiInterferer,
    WifiTraffic,
    in_band_fraction,
)


class _Radio:
    def __init__(self) -> None:
        self.interferers: list = []


def wifi(rate_bps: float, seed: int = 1, start_s: float = 0.0, **traffic) -> WifiInterferer:
    return WifiInterferer(
        "wifi",
        WifiTraffic(rate_bps, start_s=start_s, **traffic),
        [(_Radio(), 1.0)],
        random.Random(seed),
    )


def test_in_band_fraction_follows_the_ofdm_mask():
    inside = in_band_fraction(6, 17)  # 2435 MHz, 2 MHz from Wi-Fi channel 6's centre
    beside = in_band_fraction(1, 26)  # 2480 MHz, 68 MHz away: the -40 dBr floor
    assert inside == pytest.approx(10 ** (-9.8 / 10), rel=0.05)
    assert beside < inside / 1000


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
        airtime = WifiTraffic(rate).burst_s
        assert bursts == pytest.approx(20.0 * rate / (8 * 1500), rel=0.03)
        assert busy == pytest.approx(bursts * airtime, rel=0.01)
    # Beyond what the air carries: back to back, DIFS and 0..15 slots apart.
    _, busy = wifi(54e6).stats(10.0)
    burst = WifiTraffic(54e6).burst_s
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
    assert len(itf._starts) < 4096 + HISTORY_S / 1e-4
    bursts, _ = itf.stats(20.0)
    assert bursts > 50_000


def test_start_makes_the_targets_hear_it():
    radio = _Radio()
    itf = WifiInterferer("wifi", WifiTraffic(1e6), [(radio, 2.0)], random.Random(1))
    itf.start()
    assert radio.interferers == [(itf, 2.0)]


def test_trains_carry_the_same_load_in_bursts_of_back_to_back_frames():
    trains = wifi(3e6, seed=7, pattern="trains", train_frames=20)
    bursts, busy = trains.stats(60.0)
    assert bursts == pytest.approx(60.0 * 3e6 / (8 * 1500), rel=0.08)
    assert busy == pytest.approx(bursts * WifiTraffic(3e6).burst_s, rel=1e-6)
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
    steady = math.exp(-lam * (frame_s + WifiTraffic(rate).burst_s))
    assert clear("poisson") == pytest.approx(steady, abs=0.02)
    assert clear("trains") == pytest.approx(0.89, abs=0.02)


def test_traffic_rejects_an_unknown_pattern():
    with pytest.raises(ValueError, match="pattern 'bursty' is not one of"):
        WifiTraffic(1e6, pattern="bursty")
    with pytest.raises(ValueError, match="train_frames"):
        WifiTraffic(1e6, pattern="trains", train_frames=0.5)
