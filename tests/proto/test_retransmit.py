"""Retransmission schedule and RTO estimators, against hand-computed numbers."""

import random

import pytest

from iotbench.proto.retransmit import (
    BackoffSchedule,
    CocoaEstimator,
    Retransmission,
    RtoEstimator,
    cocoa_backoff_factor,
)

# ---- BackoffSchedule ----------------------------------------------------------------


def test_rfc7252_schedule_span_and_wait():
    s = BackoffSchedule(2.0, 4, random_factor=1.5)
    # RFC 7252 4.8.2: MAX_TRANSMIT_SPAN = 2 * 15 * 1.5, MAX_TRANSMIT_WAIT = 2 * 31 * 1.5
    assert s.max_span_s == pytest.approx(45.0)
    assert s.max_wait_s == pytest.approx(93.0)
    assert s.span_s(1.0) == pytest.approx(30.0)
    assert s.wait_s(1.0) == pytest.approx(62.0)
    assert [s.timeout_s(n) for n in range(5)] == [2.0, 4.0, 8.0, 16.0, 32.0]


def test_dither_stays_in_range_and_uses_the_rng():
    s = BackoffSchedule(2.0, 4, random_factor=1.5)
    draws = [s.draw_dither(random.Random(seed)) for seed in range(300)]
    assert all(1.0 <= d <= 1.5 for d in draws)
    assert min(draws) < 1.05 and max(draws) > 1.45
    assert s.draw_dither(random.Random(7)) == s.draw_dither(random.Random(7))
    assert BackoffSchedule(2.0, 4).draw_dither(random.Random(1)) == 1.0


def test_truncation_and_factor():
    s = BackoffSchedule(1.0, 6, backoff_factor=3.0, max_backoff_s=32.0)
    assert [s.timeout_s(n) for n in range(6)] == [1.0, 3.0, 9.0, 27.0, 32.0, 32.0]
    # a base above the cap is not shortened
    assert BackoffSchedule(40.0, 2, max_backoff_s=32.0).timeout_s(1) == 40.0


def test_gives_up_after_max_retransmissions():
    s = BackoffSchedule(2.0, 4)
    assert [s.gives_up(n) for n in range(6)] == [False, False, False, False, True, True]


def test_schedule_validation():
    with pytest.raises(ValueError, match="random_factor"):
        BackoffSchedule(2.0, 4, random_factor=0.5)
    with pytest.raises(ValueError, match="base_timeout_s"):
        BackoffSchedule(0.0, 4)
    with pytest.raises(ValueError, match="max_retransmissions"):
        BackoffSchedule(1.0, -1)


def test_retransmission_state_walks_the_schedule():
    r = Retransmission(BackoffSchedule(2.0, 2), random.Random(0))
    assert r.start(10.0) == 12.0
    assert r.on_timeout(12.0) and r.deadline_s == 16.0 and r.transmissions == 2
    assert r.on_timeout(16.0) and r.deadline_s == 24.0 and r.transmissions == 3
    assert not r.on_timeout(24.0)
    assert r.retransmissions == 2


# ---- RFC 6298 ---------------------------------------------------------------------------


def test_rto_estimator_rfc6298_numbers():
    e = RtoEstimator(initial_rto_s=1.0, min_rto_s=1.0, max_rto_s=60.0)
    assert e.rto_s == 1.0
    # 2.2: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR
    assert e.update(1.0) == pytest.approx(3.0)
    assert (e.srtt_s, e.rttvar_s) == (1.0, 0.5)
    # 2.3: RTTVAR = 3/4 * 0.5 + 1/4 * |1 - 2| = 0.625 ; SRTT = 7/8 + 2/8 = 1.125
    assert e.update(2.0) == pytest.approx(1.125 + 4 * 0.625)
    assert e.rttvar_s == pytest.approx(0.625)
    assert e.srtt_s == pytest.approx(1.125)


def test_rto_estimator_bounds_and_backoff():
    e = RtoEstimator(min_rto_s=1.0, max_rto_s=60.0)
    assert e.update(0.01) == 1.0  # 2.4: lower bound
    e2 = RtoEstimator(min_rto_s=1.0, max_rto_s=60.0)
    assert e2.update(50.0) == 60.0  # 2.5: upper bound
    assert e.backoff() == 2.0 and e.backoff() == 4.0
    for _ in range(10):
        e.backoff()
    assert e.rto_s == 60.0


def test_rto_estimator_granularity():
    e = RtoEstimator(min_rto_s=0.0, granularity_s=0.5)
    e.update(0.1)  # 4 * 0.05 = 0.2 < G
    assert e.rto_s == pytest.approx(0.6)


# ---- CoCoA -----------------------------------------------------------------------------


def test_cocoa_backoff_factor_thresholds():
    assert cocoa_backoff_factor(0.99) == 3.0
    assert cocoa_backoff_factor(1.0) == 2.0
    assert cocoa_backoff_factor(3.0) == 2.0
    assert cocoa_backoff_factor(3.01) == 1.5


def test_cocoa_blind_estimate_scales_with_parallel_exchanges():
    e = CocoaEstimator()
    assert e.rto(0.0) == 2.0
    assert e.rto(0.0, parallel=1) == 4.0
    assert e.rto(0.0, parallel=2) == 6.0  # draft 4.1: "two running -> 6 seconds"


def test_cocoa_strong_then_weak_hand_computed():
    e = CocoaEstimator()
    # strong R = 0.5: SRTT 0.5, RTTVAR 0.25, E_strong = 0.5 + 4*0.25 = 1.5
    assert e.on_exchange(0.0, 0.5, retransmissions=0)
    assert e.strong.rto_s == pytest.approx(1.5)
    assert e.rto_s == pytest.approx(0.5 * 1.5 + 0.5 * 2.0)  # 1.75
    # weak R = 3.0 (K = 1): SRTT 3, RTTVAR 1.5, E_weak = 4.5
    assert e.on_exchange(1.0, 3.0, retransmissions=2)
    assert e.weak.rto_s == pytest.approx(4.5)
    assert e.rto_s == pytest.approx(0.25 * 4.5 + 0.75 * 1.75)  # 2.4375
    # strong R = 0.3: RTTVAR = .75*.25 + .25*|.5-.3| = 0.2375 ; SRTT = .875*.5 + .125*.3 = 0.475
    e.on_exchange(2.0, 0.3, retransmissions=0)
    e_strong = 0.475 + 4 * 0.2375
    assert e.strong.rto_s == pytest.approx(e_strong)
    assert e.rto_s == pytest.approx(0.5 * e_strong + 0.5 * 2.4375)
    assert e.rto(2.0) == pytest.approx(e.rto_s)


def test_cocoa_ignores_exchanges_with_three_retransmissions():
    e = CocoaEstimator()
    assert not e.on_exchange(0.0, 9.0, retransmissions=3)
    assert e.rto_s == 2.0 and not e.measured
    assert e.rto(0.0, parallel=1) == 4.0  # still blind


def test_cocoa_aging_small_rto_doubles_after_16_rto():
    e = CocoaEstimator()
    for i in range(40):
        e.on_exchange(float(i) * 0.01, 0.05, 0)
    rto = e.rto_s
    assert rto < 0.5
    t0 = e.last_update_s
    assert e.rto(t0 + 16 * rto - 1e-9) == pytest.approx(rto)
    assert e.rto(t0 + 16 * rto) == pytest.approx(2 * rto)


def test_cocoa_aging_large_rto_decays_towards_one_to_three_seconds():
    e = CocoaEstimator()
    e.on_exchange(0.0, 10.0, 0)  # E_strong = 10 + 4*5 = 30 ; RTO = 0.5*30 + 0.5*2 = 16
    assert e.rto_s == pytest.approx(16.0)
    assert e.rto(63.9) == pytest.approx(16.0)
    assert e.rto(64.0) == pytest.approx(9.0)  # 1 + 16/2 after 4 * 16 s
    # next step needs another 4 * 9 = 36 s idle: 1 + 4.5 = 5.5
    assert e.rto(64.0 + 36.0) == pytest.approx(5.5)
    # cumulative: 4*5.5 = 22 s later 3.75, 4*3.75 = 15 s later 2.875, then stable in [1, 3]
    assert e.rto(100.0 + 22.0 + 15.0 + 1000.0) == pytest.approx(2.875)


def test_cocoa_schedule_uses_variable_backoff_and_cap():
    e = CocoaEstimator()
    s = e.schedule(0.0, max_retransmissions=4, random_factor=1.5)
    assert (s.base_timeout_s, s.backoff_factor, s.max_backoff_s) == (2.0, 2.0, 32.0)
    assert s.max_wait_s == pytest.approx(93.0)  # blind CoCoA waits like RFC 7252
    e.on_exchange(0.0, 0.05, 0)  # E_strong 0.15 ; RTO = 0.075 + 1 = 1.075
    e.on_exchange(0.0, 0.05, 0)  # RTTVAR .75*.025 ; E_strong = .05 + .075 = .125; RTO = .6
    s = e.schedule(0.0, 4, 1.5)
    assert s.base_timeout_s == pytest.approx(0.6)
    assert s.backoff_factor == 3.0
    # 0.6 * 81 = 48.6 is truncated to 32 s
    assert s.max_wait_s == pytest.approx(1.5 * (0.6 * (1 + 3 + 9 + 27) + 32.0))
