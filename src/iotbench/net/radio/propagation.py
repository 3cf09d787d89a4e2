"""Radio propagation: mean path loss, shadowing, and how links vary in time.

Mean path loss is log-distance (Rappaport, Wireless Communications, 4.9):

    PL(d) = PL(d0) + 10 n log10(d / d0) + L_floors(k)

with PL(d0) the free-space loss at the reference distance d0 and the
channel's centre frequency, exponent n, and, in a building, a penetration
loss for the k floors between the two ends. The defaults follow the site-
general indoor model of ITU-R P.1238 for offices at 2.4 GHz: n = 3.0 (its
distance power loss coefficient N = 30) and floors costing 15 + 4 (k - 1) dB
(its office floor penetration factor; P.1238 gives that multi-floor form for
the nearest band, 1.8-2 GHz).

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
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

SPEED_OF_LIGHT = 299_792_458.0

# How far above its mean a link's power may rise through temporal variation,
# for deciding which receivers a transmission can reach at all: Rayleigh fading
# exceeds 8 dB with probability e^-6.3 = 0.2 %.
RAYLEIGH_MARGIN_DB = 8.0


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

    def reference_db(self, frequency_mhz: float) -> float:
        if self.reference_loss_db is not None:
            return self.reference_loss_db
        return free_space_loss_db(self.reference_distance_m, frequency_mhz)

    def floors_db(self, floors: int) -> float:
        if floors <= 0:
            return 0.0
        return self.floor_loss_db + self.floor_loss_extra_db * (floors - 1)

    def mean_loss_db(self, distance_m: float, frequency_mhz: float, floors: int = 0) -> float:
        # Closer than the reference distance: the reference loss (no gain from nearness).
        d = max(distance_m, self.reference_distance_m)
        return (
            self.reference_db(frequency_mhz)
            + 10.0 * self.exponent * math.log10(d / self.reference_distance_m)
            + self.floors_db(floors)
        )

    def max_distance_m(self, budget_db: float, frequency_mhz: float) -> float:
        """The distance beyond which the mean loss on one floor exceeds `budget_db`."""
        excess = budget_db - self.reference_db(frequency_mhz)
        return self.reference_distance_m * 10.0 ** (excess / (10.0 * self.exponent))


class NoVariation:
    """Links keep their mean power.

    Every model has `powers(neighbours, now)`: the power (mW) of a frame sent
    now at each receiver of a neighbour list (neighbours.py), in the list's
    order, drawing what it draws in that order.
    """

    margin_db = 0.0

    def powers(self, neighbours: list[tuple[Any, float, int]], now: float) -> list[float]:
        return [mean_mw for _rcv, mean_mw, _pair in neighbours]


class RayleighFading:
    """An exponentially distributed power gain per frame and receiver."""

    margin_db = RAYLEIGH_MARGIN_DB

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def powers(self, neighbours: list[tuple[Any, float, int]], now: float) -> list[float]:
        random = self.rng.random
        # -ln(U), U in (0, 1]: exponential with mean 1.
        return [mean_mw * -math.log(1.0 - random()) for _rcv, mean_mw, _pair in neighbours]


class GilbertElliottLinks:
    """Good and bad states per pair of nodes, in continuous time, followed lazily.

    The state is a two-state Markov chain in continuous time (rates 1/good_s
    out of good, 1/bad_s out of bad). Only the state at the last frame is
    kept; at the next frame the state is drawn from the chain's transition
    probability over the time in between,

        P(bad at t | bad at s)  = pi_bad + pi_good e^-(r (t - s))
        P(bad at t | good at s) = pi_bad - pi_bad  e^-(r (t - s)),  r = 1/good_s + 1/bad_s

    which is exact and costs one random number, however long the link was
    idle. Memory: about 40 bytes per pair of nodes.
    """

    margin_db = 0.0

    def __init__(
        self, rng: random.Random, pairs: int, good_s: float, bad_s: float, bad_loss_db: float
    ) -> None:
        self.rng = rng
        self.p_bad = bad_s / (good_s + bad_s)  # the stationary probability of bad
        self.rate = 1.0 / good_s + 1.0 / bad_s
        self.bad_gain = 10.0 ** (-bad_loss_db / 10.0)
        # Lists, which compiled code indexes without a conversion per element.
        self._since: list[float] = [-1.0] * pairs  # time of the last frame; -1: none yet
        self._bad: list[bool] = [False] * pairs

    def powers(self, neighbours: list[tuple[Any, float, int]], now: float) -> list[float]:
        # Runs for every receiver within reach of every frame: written out with
        # locals. The chain's law above puts P(bad) at or below p_bad after a
        # good state and at or above it after a bad one (in floating point too:
        # p_bad plus a term of one sign), so a draw on the far side of p_bad
        # decides the state without the decay term; the draws are the same.
        since_of, bad_of = self._since, self._bad
        random = self.rng.random
        p_bad = self.p_bad
        p_good, neg_p_bad = 1.0 - p_bad, -p_bad
        bad_gain, neg_rate = self.bad_gain, -self.rate
        out: list[float] = []
        for _rcv, mean_mw, pair in neighbours:
            u: float = random()
            if bad_of[pair]:
                bad = u < p_bad or u < p_bad + p_good * math.exp(neg_rate * (now - since_of[pair]))
            elif u < p_bad:
                since = since_of[pair]  # -1 before the link's first frame: the stationary law
                bad = since < 0.0 or u < p_bad + neg_p_bad * math.exp(neg_rate * (now - since))
            else:
                bad = False
            bad_of[pair] = bad
            since_of[pair] = now
            out.append(mean_mw * bad_gain if bad else mean_mw)  # (native in compiled code)
        return out
