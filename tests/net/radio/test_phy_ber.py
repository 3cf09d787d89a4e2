"""The O-QPSK bit error rate of IEEE 802.15.4 Annex E (E.4.1.7), as phy.ber computes it."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotbench.net.radio import phy


def _annex_e(sinr: float) -> float:
    """BER = 8/15 x 1/16 x sum over k = 2..16 of (-1)^k C(16, k) e^(20 SINR (1/k - 1)),
    the binomials exact, in the order phy.ber adds the terms."""
    total = 0.0
    for k in range(2, 17):
        term = math.comb(16, k) * math.exp(20.0 * sinr * (1.0 / k - 1.0))
        total += term if k % 2 == 0 else -term
    return min(0.5, max(0.0, 8.0 / 15.0 / 16.0 * total))


@given(st.floats(min_value=1e-6, max_value=8.0))
def test_ber_is_annex_e_sum(sinr):
    # The running binomial stays exact (each step an integer below 2**53), so the
    # terms are the formula's to the last bit; only exp's own rounding is shared.
    assert phy.ber(sinr) == _annex_e(sinr)


def test_ber_at_its_ends():
    assert phy.ber(0.0) == 0.5
    assert phy.ber(-1.0) == 0.5
    assert phy.ber(100.0) == 0.0
    # At 0 dB (SINR 1) about 1.6e-4: the alternating sum, evaluated exactly in
    # fractions of the same exponentials, agrees with the float one to 1e-12.
    exact = Fraction(8, 15 * 16) * sum(
        (-1) ** k * math.comb(16, k) * Fraction(math.exp(20.0 * (1.0 / k - 1.0)))
        for k in range(2, 17)
    )
    assert phy.ber(1.0) == pytest.approx(1.6153e-4, rel=1e-4)
    assert abs(phy.ber(1.0) - float(exact)) < 1e-12
    # A higher SINR never raises the error rate.
    rates = [phy.ber(s / 10.0) for s in range(1, 60)]
    assert rates == sorted(rates, reverse=True)
