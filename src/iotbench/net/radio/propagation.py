"""Radio propagation: mean path loss, shadowing, and how links vary in time.

Mean path loss is log-distance (Rappaport, Wireless Communications, 4.9):

    PL(d) = PL(d0) + 10 n log10(d / d0) + L_floors(k) + m L_facade

with PL(d0) the free-space loss at the reference distance d0 and the
channel's centre frequency, exponent n, and, in a building, a penetration
loss for the k floors between the two ends. The defaults follow the site-
general indoor model of ITU-R P.1238 for offices at 2.4 GHz: n = 3.0 (its
distance power loss coefficient N = 30) and floors costing 15 + 4 (k - 1) dB
(its office floor penetration factor; P.1238 gives that multi-floor form for
the nearest band, 1.8-2 GHz). Between two buildings the path leaves one
through its outer wall and enters the other through its own: m = 2 facades
(`between`), each costing 3GPP TR 38.901's low-loss outer-wall penetration
at the channel's frequency (`o2i_low_loss_db`), and no floors.

Shadowing is log-normal: a zero-mean normal variable in dB with deviation
sigma, drawn once per pair of nodes per run (the same in both directions: the
walls between them are the same) and fixed for the run.

Temporal variation on top of that, per link, for every frame:
- "none": links keep their mean;
- "rayleigh": Rayleigh (block) fading, an exponentially distributed power
  gain of mean 1 drawn for every frame at every receiver;
- "gilbert-elliott": each pair of nodes flips between a good and a bad state
  with exponentially distributed sojourn times (means `good_s`, `bad_s`); in
  the bad state its signal is `bad_loss_db` weaker. States are followed
  lazily, only for links that carry frames.
- "gauss-markov": each pair of nodes' power varies about its mean as a
  stationary Gaussian process in dB (log-normal in power) with deviation
  `sigma_db` and an exponential autocorrelation of time constant `tau_s`, the
  form measured link traces of static indoor links take (docs/radio.md gives
  the measurements its parameters come from); sampled exactly at each frame,
  lazily, like the states above.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

from librt.vecs import vec
from mypy_extensions import i64

from iotbench.sim.twister import twister_of

SPEED_OF_LIGHT: Final = 299_792_458.0

# How far above its mean a link's power may rise through temporal variation,
# for deciding which receivers a transmission can reach at all: Rayleigh fading
# exceeds 8 dB with probability e^-6.3 = 0.2 %; a Gaussian 4 deviations with
# probability 3e-5.
RAYLEIGH_MARGIN_DB: Final = 8.0
GAUSS_MARGIN_SIGMAS: Final = 4.0
# Equally likely values of a link's gain that average its reception over its
# variation (`spread`): a reception ratio that drops from 1 to 0 at one power
# (the sensitivity) is averaged within 1 / (2 x 100).
SPREAD_POINTS: Final = 100
_DB_TO_LN: Final = math.log(10.0) / 10.0  # 10^(x/10) = e^(x * _DB_TO_LN)
_TWO_PI: Final = 2.0 * math.pi  # (random.py's TWOPI)
# Outer walls between two nodes in two buildings: out of one, into the other.
FACADES_BETWEEN_BUILDINGS: Final = 2


def box_muller(first: float, second: float) -> tuple[float, float]:
    """Two standard normal deviates from two uniform numbers drawn in this
    order, as random.Random.gauss makes them: (the one it returns, the one it
    keeps for its next call). Written out so that compiled callers draw without
    gauss's Python-level call; each caller keeps the second value itself."""
    angle = first * _TWO_PI
    radius = math.sqrt(-2.0 * math.log(1.0 - second))
    return math.cos(angle) * radius, math.sin(angle) * radius


def o2i_low_loss_db(frequency_mhz: float) -> float:
    """3GPP TR 38.901 (7.4.3.1, Tables 7.4.3-1 and 7.4.3-2): the penetration
    loss of a low-loss building's outer wall, 30 % standard glass (2 + 0.2 f
    dB) and 70 % concrete (5 + 4 f dB), f in GHz: 12.1 dB at 2.4 GHz, 10.5 dB
    at 868 MHz. (The model's other term, 0.5 dB a metre indoors, is left out:
    the indoor path is the exponent's.)"""
    f_ghz = frequency_mhz / 1000.0
    glass_db, concrete_db = 2.0 + 0.2 * f_ghz, 5.0 + 4.0 * f_ghz
    return 5.0 - 10.0 * math.log10(
        0.3 * 10.0 ** (-glass_db / 10.0) + 0.7 * 10.0 ** (-concrete_db / 10.0)
    )


def between(building_a: int, floor_a: int, building_b: int, floor_b: int) -> tuple[int, int]:
    """(floors, facades) the path between two nodes crosses: within a building
    the floors between theirs, none of its outer walls; between two buildings
    the two outer walls and no floor (the path leaves through the facade; the
    buildings it may pass on its way are not counted: two buildings apart,
    nodes are beyond each other's reach at the defaults)."""
    if building_a != building_b:
        return 0, FACADES_BETWEEN_BUILDINGS
    return abs(floor_a - floor_b), 0


def free_space_loss_db(distance_m: float, frequency_mhz: float) -> float:
    """Friis: 20 log10(4 pi d f / c)."""
    return 20.0 * math.log10(4.0 * math.pi * distance_m * frequency_mhz * 1e6 / SPEED_OF_LIGHT)


@dataclass(frozen=True)
class PathLoss:
    exponent: float = 3.0
    reference_distance_m: float = 1.0
    # None: free space at the reference distance and the channel's frequency.
    reference_loss_db: float | None = None
    shadowing_db: float = 6.0
    floor_loss_db: float = 15.0  # the first floor between the ends
    floor_loss_extra_db: float = 4.0  # every further floor
    # None: 3GPP TR 38.901's low-loss outer wall at the channel's frequency.
    facade_loss_db: float | None = None

    def reference_db(self, frequency_mhz: float) -> float:
        if self.reference_loss_db is not None:
            return self.reference_loss_db
        return free_space_loss_db(self.reference_distance_m, frequency_mhz)

    def floors_db(self, floors: int) -> float:
        if floors <= 0:
            return 0.0
        return self.floor_loss_db + self.floor_loss_extra_db * (floors - 1)

    def facade_db(self, frequency_mhz: float) -> float:
        if self.facade_loss_db is not None:
            return self.facade_loss_db
        return o2i_low_loss_db(frequency_mhz)

    def mean_loss_db(
        self, distance_m: float, frequency_mhz: float, floors: int = 0, facades: int = 0
    ) -> float:
        # Closer than the reference distance: the reference loss (no gain from nearness).
        d = max(distance_m, self.reference_distance_m)
        loss = (
            self.reference_db(frequency_mhz)
            + 10.0 * self.exponent * math.log10(d / self.reference_distance_m)
            + self.floors_db(floors)
        )
        if facades:
            loss += facades * self.facade_db(frequency_mhz)
        return loss

    def max_distance_m(self, budget_db: float, frequency_mhz: float) -> float:
        """The distance beyond which the mean loss on one floor exceeds `budget_db`."""
        excess = budget_db - self.reference_db(frequency_mhz)
        return self.reference_distance_m * 10.0 ** (excess / (10.0 * self.exponent))


_MASK64: Final = (1 << 64) - 1


def pair_uniform(key: int, pair: int) -> float:
    """A uniform number in (0, 1) that depends on `key` and `pair` alone (splitmix64):
    a link's state at time 0, the same whatever frames come first, so that every
    protocol variant run over a network starts from the same links."""
    z = (key + (pair + 1) * 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    z ^= z >> 31
    return ((z >> 11) + 0.5) / 9007199254740992.0  # / 2^53


class LinkVariation:
    """What every model of a link's variation in time has (the classes below).

    `powers(means, pairs, now)`: the power (mW) of a frame sent now at each
    receiver of a radio's neighbour list (neighbours.py), given each link's
    mean power (mW) and pair id in the list's order, drawing what it draws in
    that order (the returned powers are the medium's to read, never to change:
    a model may return `means` itself); `spread()`: the law of a link's power about
    its mean over time, as (weight, factor) pairs whose weighted average of a
    function of the power is its expectation (a quadrature), from which a
    link's expected reception ratio follows (net/routing/tree.py: the tree of
    least expected transmissions); `margin_db`: how far above its mean a
    link's power may rise.

    A class, not a protocol, so that the compiled medium calls `powers` through
    the class's table, with the time unboxed, and knows it returns floats: with
    the model's type unknown, every receiver's power went through Python's
    generic float arithmetic (docs/performance.md). The powers are a `vec[float]`
    (librt's vector, which compiled code reads and writes as plain doubles), not
    a list: a list holds a float object for every receiver of every frame, made,
    read twice and freed.
    """

    margin_db: float = 0.0

    def powers(self, means: vec[float], pairs: vec[i64], now: float) -> vec[float]:
        raise NotImplementedError

    def spread(self) -> list[tuple[float, float]]:
        raise NotImplementedError


class NoVariation(LinkVariation):
    """Links keep their mean power."""

    def powers(self, means: vec[float], pairs: vec[i64], now: float) -> vec[float]:
        return means

    def spread(self) -> list[tuple[float, float]]:
        return [(1.0, 1.0)]


class RayleighFading(LinkVariation):
    """An exponentially distributed power gain per frame and receiver."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.margin_db = RAYLEIGH_MARGIN_DB
        self._draws = twister_of(rng)  # rng.random()'s numbers, drawn by compiled code

    def powers(self, means: vec[float], pairs: vec[i64], now: float) -> vec[float]:
        draws = self._draws
        # -ln(U), U in (0, 1]: exponential with mean 1.
        out = means[:]  # (overwritten in place: see GaussMarkovLinks.powers)
        for k in range(len(means)):
            out[k] = means[k] * -math.log(1.0 - draws.random())
        return out

    def spread(self) -> list[tuple[float, float]]:
        # The exponential gain's quantiles at the middles of equally likely bins.
        n = SPREAD_POINTS
        return [(1.0 / n, -math.log(1.0 - (i + 0.5) / n)) for i in range(n)]


class GilbertElliottLinks(LinkVariation):
    """Good and bad states per pair of nodes, in continuous time, followed lazily.

    The state is a two-state Markov chain in continuous time (rates 1/good_s
    out of good, 1/bad_s out of bad). Only the state at the last frame is
    kept; at the next frame the state is drawn from the chain's transition
    probability over the time in between,

        P(bad at t | bad at s)  = pi_bad + pi_good e^-(r (t - s))
        P(bad at t | good at s) = pi_bad - pi_bad  e^-(r (t - s)),  r = 1/good_s + 1/bad_s

    which is exact and costs one random number, however long the link was
    idle. A pair's state at time 0 is drawn from the stationary law by
    `pair_uniform`, from the pair and the network's stream's key alone, so
    every variant of a campaign starts from the same states. Memory: about 40
    bytes per pair of nodes.
    """

    def __init__(
        self, rng: random.Random, pairs: int, good_s: float, bad_s: float, bad_loss_db: float
    ) -> None:
        self.rng = rng
        self.p_bad = bad_s / (good_s + bad_s)  # the stationary probability of bad
        self.rate = 1.0 / good_s + 1.0 / bad_s
        self.bad_gain = 10.0 ** (-bad_loss_db / 10.0)
        self._key = rng.getrandbits(64)  # the pairs' states at time 0 (pair_uniform)
        # (A list of floats boxes each time written; GaussMarkovLinks, the built-in
        # scenarios' model, keeps an object per pair instead.)
        self._since: list[float] = [-1.0] * pairs  # time of the last frame; -1: none yet
        self._bad: list[bool] = [False] * pairs
        self._draws = twister_of(rng)  # rng.random()'s numbers, drawn by compiled code

    def powers(self, means: vec[float], pairs: vec[i64], now: float) -> vec[float]:
        # Runs for every receiver within reach of every frame: written out with
        # locals. The chain's law above puts P(bad) at or below p_bad after a
        # good state and at or above it after a bad one (in floating point too:
        # p_bad plus a term of one sign), so a draw on the far side of p_bad
        # decides the state without the decay term; the draws are the same.
        since_of, bad_of = self._since, self._bad
        draws = self._draws
        p_bad = self.p_bad
        p_good, neg_p_bad = 1.0 - p_bad, -p_bad
        bad_gain, neg_rate = self.bad_gain, -self.rate
        out = means[:]  # (overwritten in place: see GaussMarkovLinks.powers)
        for k in range(len(pairs)):
            mean_mw, pair = means[k], pairs[k]
            since = since_of[pair]
            if since < 0.0:  # the link's first frame: its state at time 0 first
                bad_of[pair] = pair_uniform(self._key, pair) < p_bad
                since = 0.0
            u = draws.random()
            if bad_of[pair]:
                bad = u < p_bad or u < p_bad + p_good * math.exp(neg_rate * (now - since))
            elif u < p_bad:
                bad = u < p_bad + neg_p_bad * math.exp(neg_rate * (now - since))
            else:
                bad = False
            bad_of[pair] = bad
            since_of[pair] = now
            if bad:
                out[k] = mean_mw * bad_gain
        return out

    def spread(self) -> list[tuple[float, float]]:
        return [(1.0 - self.p_bad, 1.0), (self.p_bad, self.bad_gain)]


class _GaussMarkovPair:
    """A pair's value (dB about its mean) at its last frame, and that frame's time."""

    __slots__ = ("since", "x")

    def __init__(self, since: float, x: float) -> None:
        self.since = since
        self.x = x


class GaussMarkovLinks(LinkVariation):
    """Each pair's power varies about its mean as a stationary Gaussian process in dB:
    deviation `sigma_db`, autocorrelation e^-(lag / tau_s) (a first-order Gauss-Markov,
    or Ornstein-Uhlenbeck, process), the same in both directions of a pair.

    Followed lazily and exactly: only the value at a pair's last frame is kept, and
    at its next frame, dt later,

        x(t) = a x(s) + sigma sqrt(1 - a^2) z,   a = e^-(dt / tau),  z ~ N(0, 1)

    which is the process's own law over dt however long the pair was idle. A pair's
    value at time 0 comes from the stationary law N(0, sigma^2) by `pair_uniform`,
    from the pair and the network's stream's key alone, so every protocol variant
    run over a network starts from the same links (how they move from there
    draws from the stream as frames come). One normal draw and one exponential
    per receiver and frame; 8 bytes per pair of nodes, and about 40 more for a
    pair that has carried a frame.
    """

    def __init__(self, rng: random.Random, pairs: int, sigma_db: float, tau_s: float) -> None:
        self.rng = rng
        self.sigma_db = sigma_db
        self.tau_s = tau_s
        self.margin_db = GAUSS_MARGIN_SIGMAS * sigma_db
        self._key = rng.getrandbits(64)  # the pairs' values at time 0 (pair_uniform)
        self._unit = NormalDist()
        # Each pair's state, made at its first frame (None until then): compiled,
        # an object's float fields are read and written in place, where a list
        # of floats took a new float object for every receiver of every frame.
        self._pairs: list[_GaussMarkovPair | None] = [None] * pairs
        # The second normal of the last Box-Muller pair (`powers`); NaN: none.
        self._spare = math.nan
        self._draws = twister_of(rng)  # rng.random()'s numbers, drawn by compiled code

    def powers(self, means: vec[float], pairs: vec[i64], now: float) -> vec[float]:
        # Runs for every receiver within reach of every frame: written out with locals.
        # The normal draws are random.Random.gauss's (box_muller), compiled
        # (CPython's gauss is Python code, and was most of the model's cost): the
        # second value kept for the next draw; so the same numbers from the same
        # stream (tests/net/radio/test_link_variation.py compares them).
        states = self._pairs
        draws = self._draws
        spare = self._spare
        sigma, neg_rate = self.sigma_db, -1.0 / self.tau_s
        # A copy of the means, overwritten in place: an item's store is compiled
        # inline, where `append` is a call into librt's vecs each (about 21
        # instructions a receiver).
        out = means[:]
        for k in range(len(pairs)):
            mean_mw, pair = means[k], pairs[k]
            state = states[pair]
            if state is None:  # the link's first frame: its value at time 0 first
                x0 = sigma * self._unit.inv_cdf(pair_uniform(self._key, pair))
                state = states[pair] = _GaussMarkovPair(0.0, x0)
            if spare == spare:  # (not NaN)
                z = spare
                spare = math.nan
            else:
                z, spare = box_muller(draws.random(), draws.random())
            a = math.exp(neg_rate * (now - state.since))
            x = a * state.x + sigma * math.sqrt(1.0 - a * a) * z
            state.x = x
            state.since = now
            out[k] = mean_mw * math.exp(x * _DB_TO_LN)
        self._spare = spare
        return out

    def spread(self) -> list[tuple[float, float]]:
        # N(0, sigma^2) dB's quantiles at the middles of equally likely bins.
        n, normal = SPREAD_POINTS, NormalDist(0.0, self.sigma_db)
        return [(1.0 / n, math.exp(normal.inv_cdf((i + 0.5) / n) * _DB_TO_LN)) for i in range(n)]
