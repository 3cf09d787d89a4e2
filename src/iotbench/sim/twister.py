"""Draws from a `random.Random`'s own Mersenne Twister, made by compiled code.

The radio's link models (net/radio/propagation.py) draw a uniform number for
about every receiver of every frame, and the medium one for every frame a
receiver decides (net/radio/medium.py). `random.Random.random` is C, but
compiled code reaches it through Python's call protocol and gets a float
object back: about 220 instructions a draw, where the generator's own work
is a fifth of that. Those calls were 6 to 7 % of an S4 hour's instructions
(docs/performance.md, "A slower machine, and S4's hours against the slow
night's own").

`Twister` runs the same generator, MT19937 as CPython's `_random` module
implements it, on a copy of a `random.Random`'s state, and makes
`random()`'s doubles the same way from two 32-bit words, `getrandbits(k)`'s
numbers from its words as `_random` does, and `randrange(n)`'s as
`random.Random._randbelow_with_getrandbits` does (the publish workload's
sensor values). So it gives the same numbers the `random.Random` would have
given, in the same order (tests/sim/test_twister.py compares them across
many twists).

Every model that draws from one `random.Random` must share its `Twister`
(`twister_of`), and nothing may draw from that `random.Random` directly
once its `Twister` has begun: the state is copied at the first draw, not
kept in step. The first draw comes when a run starts, after every model
has taken what it needs from the `random.Random` while the network was
built (a key for the pairs' initial values).

Run as Python (no compiler at install), the loop below would cost far more
than the call it replaces, so the sources draw from the `random.Random`
itself: the same numbers either way.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Final

from librt.vecs import append, vec
from mypy_extensions import i64

_N: Final = 624
_M: Final = 397
_MATRIX_A: Final = 0x9908B0DF
_UPPER_MASK: Final = 0x80000000
_LOWER_MASK: Final = 0x7FFFFFFF
_WORD_MASK: Final = 0xFFFFFFFF
_TWO_POW_26: Final = 67108864.0
_TWO_POW_MINUS_53: Final = 1.0 / 9007199254740992.0


class Twister:
    """`rng.random()`'s numbers, drawn from a copy of `rng`'s state."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._state: vec[i64] = vec[i64]()  # the generator's 624 words, untempered
        self._index: i64 = -1  # the next word; -1: the state is not copied yet
        self._native = _COMPILED

    def random(self) -> float:
        """The next number in [0, 1), as `self.rng.random()` would give it."""
        if not self._native:
            return self.rng.random()
        i = self._index
        if i < 0 or i + 2 > _N:  # not copied yet, or fewer than two words left
            a = self._next_word()
            b = self._next_word()
        else:
            state = self._state
            self._index = i + 2
            a = _tempered(state[i])
            b = _tempered(state[i + 1])
        # random_random's double from the two words' top 27 and 26 bits (exact:
        # each product and sum stays below 2**53).
        return (float(a >> 5) * _TWO_POW_26 + float(b >> 6)) * _TWO_POW_MINUS_53

    def getrandbits(self, k: int) -> int:
        """A number of `k` random bits, as `self.rng.getrandbits(k)` would give it:
        CPython's _random_Random_getrandbits_impl, which takes one word for up to 32
        bits (its top k bits) and otherwise fills 32-bit words from the least
        significant up, the last one's top bits."""
        if not self._native:
            return self.rng.getrandbits(k)
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        if k <= 32:
            return 0 if k == 0 else self._next_word() >> (32 - k)
        value = 0
        shift = 0
        while k > 0:
            word: int = self._next_word()  # (an int: shifted, it outgrows 64 bits)
            if k < 32:
                word >>= 32 - k
            value |= word << shift
            shift += 32
            k -= 32
        return value

    def randbelow(self, n: int) -> int:
        """A number in [0, n) for n >= 1, as `self.rng.randrange(n)` would give it:
        Random._randbelow_with_getrandbits, which draws k = n.bit_length() bits until
        they are below n."""
        if n <= 0:
            raise ValueError(f"empty range for randbelow({n})")
        if not self._native or n > _WORD_MASK:
            return randbelow(self.getrandbits, n)
        # Below 2**32 (a sensor value's): k bits are the top k of one word, and
        # the arithmetic stays in machine integers.
        bound: i64 = n
        shift: i64 = 32 - bit_length(n)
        word = self._next_word() >> shift
        while word >= bound:
            word = self._next_word() >> shift
        return word

    def _next_word(self) -> i64:
        if self._index < 0:
            self._copy_state()
        if self._index >= _N:
            self._regenerate()
        word = _tempered(self._state[self._index])
        self._index += 1
        return word

    def _copy_state(self) -> None:
        words: tuple[int, ...] = self.rng.getstate()[1]
        state = vec[i64](capacity=_N)
        for k in range(_N):
            state = append(state, words[k])
        self._state = state
        self._index = words[_N]

    def _regenerate(self) -> None:
        """The next 624 words in place, as genrand_uint32 of CPython's
        Modules/_randommodule.c makes them when its index reaches the end: each
        word from itself, the next (the first, for the last word) and the one
        397 on (counted round), those before it already new. In its three
        parts, as there: no index needs wrapping within a part."""
        mt = self._state
        k: i64  # (a tagged int's index would be converted at every access)
        for k in range(_N - _M):
            y = (mt[k] & _UPPER_MASK) | (mt[k + 1] & _LOWER_MASK)
            mt[k] = mt[k + _M] ^ (y >> 1) ^ (_MATRIX_A if y & 1 else 0)
        for k in range(_N - _M, _N - 1):
            y = (mt[k] & _UPPER_MASK) | (mt[k + 1] & _LOWER_MASK)
            mt[k] = mt[k + _M - _N] ^ (y >> 1) ^ (_MATRIX_A if y & 1 else 0)
        y = (mt[_N - 1] & _UPPER_MASK) | (mt[0] & _LOWER_MASK)
        mt[_N - 1] = mt[_M - 1] ^ (y >> 1) ^ (_MATRIX_A if y & 1 else 0)
        self._index = 0


def randbelow(getrandbits: Callable[[int], int], n: int) -> int:
    """`rng.randrange(n)` for n >= 1 from `rng.getrandbits` (bound, or a twister's),
    with the same draws: CPython's Random._randbelow_with_getrandbits (the
    library's is Python code). The CSMA MACs' back-offs draw with it."""
    if n <= 0:
        raise ValueError(f"empty range for randbelow({n})")
    k = bit_length(n)
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return r


def bit_length(n: int) -> int:
    """n.bit_length() (compiled, int's method is a call through Python): in
    machine integers from 0 to below 2**62."""
    if not 0 <= n < 1 << 62:
        return n.bit_length()
    m: i64 = n
    bits: i64 = 0
    while m:
        m >>= 1
        bits += 1
    return bits


def _tempered(y: i64) -> i64:
    """A state word as the generator outputs it."""
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    return y ^ (y >> 18)


# Where a `random.Random` keeps its `Twister`: on itself, so that the two live
# and go together (a registry would keep every run's streams alive).
_ATTRIBUTE: Final = "_iotbench_twister"


def twister_of(rng: random.Random) -> Twister:
    """The one `Twister` of `rng`, shared by everything that draws from it."""
    twister = getattr(rng, _ATTRIBUTE, None)
    if not isinstance(twister, Twister):
        twister = Twister(rng)
        setattr(rng, _ATTRIBUTE, twister)
    return twister


# Compiled, a function is a builtin without Python bytecode.
_COMPILED: Final = not hasattr(twister_of, "__code__")
