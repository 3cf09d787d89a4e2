"""The link models' uniform draws (sim/twister.py) are random.Random's, number for number."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotbench.sim.twister import Twister, bit_length, twister_of


@given(
    seed=st.integers(0, 2**64),
    before=st.integers(0, 700),
    odd=st.booleans(),
    draws=st.integers(1, 1500),
)
def test_a_twister_draws_what_its_random_would_have(seed, before, odd, draws):
    """Across the state's regeneration (every 624 words, 312 draws), from any point
    in it: after an odd number of words too, when a draw takes the last word of
    one state and the first of the next."""
    rng, reference = random.Random(seed), random.Random(seed)
    for _ in range(before):
        rng.random()
        reference.random()
    if odd:
        assert rng.getrandbits(32) == reference.getrandbits(32)  # one word
    twister = Twister(rng)
    assert [twister.random() for _ in range(draws)] == [reference.random() for _ in range(draws)]


def test_the_models_of_one_stream_share_its_twister_and_its_order():
    rng, reference = random.Random(11), random.Random(11)
    first, second = twister_of(rng), twister_of(rng)
    assert first is second and twister_of(random.Random(11)) is not first
    taken = [first.random(), second.random(), first.random()]
    assert taken == [reference.random() for _ in range(3)]


def test_a_twister_goes_with_its_stream():
    """Nothing else keeps a stream and its twister alive (a run's network is freed
    whole when the run ends)."""
    import gc
    import weakref

    rng = random.Random(3)
    twister_of(rng).random()
    gone = weakref.ref(rng)
    del rng
    gc.collect()
    assert gone() is None


def test_the_state_is_copied_at_the_first_draw_not_before():
    """What a model takes from the stream while the network is built (a key)
    comes before the twister's first number, as it did from the stream itself."""
    rng, reference = random.Random(5), random.Random(5)
    twister = twister_of(rng)
    assert rng.getrandbits(64) == reference.getrandbits(64)
    assert twister.random() == reference.random()


@given(
    seed=st.integers(0, 2**64),
    before=st.integers(0, 700),
    widths=st.lists(st.integers(0, 100), min_size=1, max_size=40),
)
def test_a_twister_draws_bits_as_its_random_would(seed, before, widths):
    """getrandbits(k) for k of no word, part of one, one and several, across the
    state's regeneration, mixed with random()."""
    rng, reference = random.Random(seed), random.Random(seed)
    for _ in range(before):
        rng.random()
        reference.random()
    twister = Twister(rng)
    for k in widths:
        assert twister.getrandbits(k) == reference.getrandbits(k)
        assert twister.random() == reference.random()


@given(
    seed=st.integers(0, 2**64),
    bounds=st.lists(st.integers(1, 2**70), min_size=1, max_size=40),
)
def test_a_twister_draws_below_a_bound_as_randrange_would(seed, bounds):
    """randbelow(n) is randrange(n): the same numbers and the same draws taken
    (powers of two, whose draws are refused half the time, too)."""
    rng, reference = random.Random(seed), random.Random(seed)
    twister = Twister(rng)
    for n in bounds + [1 << (n % 40) for n in bounds]:
        assert twister.randbelow(n) == reference.randrange(n)
    assert twister.random() == reference.random()


def test_no_bits_no_draw_and_bounds_below_one_are_refused():
    rng, reference = random.Random(1), random.Random(1)
    twister = Twister(rng)
    assert twister.getrandbits(0) == 0
    assert twister.random() == reference.random()
    with pytest.raises(ValueError):
        twister.getrandbits(-1)
    for n in (0, -3):
        with pytest.raises(ValueError):
            twister.randbelow(n)


@given(st.integers(-(2**80), 2**80))
def test_bit_length_is_ints(n):
    assert bit_length(n) == n.bit_length()
