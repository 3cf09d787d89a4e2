"""Impairment models for one direction of a link: loss, extra delay, outages.

Each model draws from its own random stream. The same objects drive the
simulator's channels and the real-mode impairment shim. Parameters that a
`Redraw` schedule changes are plain attributes, so a model reads them at no
extra cost on the per-packet path.
"""

from __future__ import annotations

import bisect
import random
from typing import Protocol

# --------------------------------------------------------------------------- loss


class NoLoss:
    def lost(self) -> bool:
        return False


class BernoulliLoss:
    """Each packet is lost independently with probability `p`."""

    def __init__(self, rng: random.Random, p: float) -> None:
        self.rng = rng
        self.p = p

    def lost(self) -> bool:
        # Always draw, even at p = 0, so a redraw of p never shifts later draws.
        return self.rng.random() < self.p


class GilbertElliottLoss:
    """Two-state Markov loss: a good and a bad state with their own loss rates.

    The state changes (with p_good_to_bad / p_bad_to_good) once per packet,
    before the packet's fate is drawn in the new state.
    """

    def __init__(
        self,
        rng: random.Random,
        p_good_to_bad: float,
        p_bad_to_good: float,
        loss_good: float = 0.0,
        loss_bad: float = 1.0,
    ) -> None:
        self.rng = rng
        self.p_good_to_bad = p_good_to_bad
        self.p_bad_to_good = p_bad_to_good
        self.loss_good = loss_good
        self.loss_bad = loss_bad
        self.bad = False

    def lost(self) -> bool:
        r = self.rng.random()
        if self.bad:
            if r < self.p_bad_to_good:
                self.bad = False
        elif r < self.p_good_to_bad:
            self.bad = True
        return self.rng.random() < (self.loss_bad if self.bad else self.loss_good)


# --------------------------------------------------------------------------- delay


class NoDelay:
    def extra(self) -> float:
        return 0.0


class ConstantDelay:
    def __init__(self, s: float) -> None:
        self.s = s

    def extra(self) -> float:
        return self.s


class UniformDelay:
    def __init__(self, rng: random.Random, low_s: float, high_s: float) -> None:
        self.rng = rng
        self.low_s = low_s
        self.high_s = high_s

    def extra(self) -> float:
        return self.rng.uniform(self.low_s, self.high_s)


class NormalDelay:
    """Normally distributed jitter, clipped at zero (a packet cannot arrive early)."""

    def __init__(self, rng: random.Random, mean_s: float, stddev_s: float) -> None:
        self.rng = rng
        self.mean_s = mean_s
        self.stddev_s = stddev_s

    def extra(self) -> float:
        return max(0.0, self.rng.gauss(self.mean_s, self.stddev_s))


# --------------------------------------------------------------------------- outages


class Outages:
    """Intervals [start, end) during which the link drops everything.

    Intervals may be known in advance (scheduled, random in a window) or added
    while the run goes (`start_now`, used for outages tied to workload items).
    """

    def __init__(self) -> None:
        self._starts: list[float] = []
        self._ends: list[float] = []

    def add(self, start: float, duration: float) -> None:
        i = bisect.bisect(self._starts, start)
        self._starts.insert(i, start)
        self._ends.insert(i, start + duration)

    @property
    def intervals(self) -> list[tuple[float, float]]:
        return list(zip(self._starts, self._ends))

    def down_during(self, t0: float, t1: float) -> bool:
        """True if the link is down at any instant of [t0, t1]."""
        # Outages are few (S3 has five), so a scan of those starting by t1 is cheapest.
        starts, ends = self._starts, self._ends
        if not starts:  # the common case, checked on every packet's arrival
            return False
        for j in range(bisect.bisect_right(starts, t1)):
            # An empty interval (duration 0) is never down.
            if ends[j] > t0 and ends[j] > starts[j]:
                return True
        return False


def random_outages(
    rng: random.Random, count: int, duration_s: float, window: tuple[float, float]
) -> Outages:
    """`count` outages with start times uniform in `window` (they may overlap)."""
    outages = Outages()
    for _ in range(count):
        outages.add(rng.uniform(*window), duration_s)
    return outages


# --------------------------------------------------------------------------- redraw


class Redraw:
    """Redraws one numeric attribute of some models uniformly from [low, high].

    Used for time-varying conditions such as S3's "loss rate redrawn from
    [0, 5 %] every 100 items". All targets get the same value (e.g. both
    directions of a link). The caller decides when (`fire`): every N items (the
    world connects it to the item log) or every T seconds (a timer).
    """

    def __init__(
        self, rng: random.Random, targets: list, attr: str, low: float, high: float
    ) -> None:
        self.rng = rng
        self.targets = targets
        self.attr = attr
        self.low = low
        self.high = high
        self.history: list[float] = []

    def fire(self) -> None:
        value = self.rng.uniform(self.low, self.high)
        for target in self.targets:
            setattr(target, self.attr, value)
        self.history.append(value)


class LossModel(Protocol):
    def lost(self) -> bool:
        """Whether the next packet is lost."""
        ...


class DelayModel(Protocol):
    def extra(self) -> float:
        """The next packet's delay beyond the link's own, in seconds."""
        ...


class Impairment:
    """All impairments of one link direction."""

    def __init__(
        self,
        loss: LossModel | None = None,
        delay: DelayModel | None = None,
        outages: Outages | None = None,
    ) -> None:
        self.loss = loss or NoLoss()
        self.delay = delay or NoDelay()
        self.outages = outages or Outages()
