"""When things happen in a publish run: jittered intervals, per source or in turn.

S4's code draws every wait uniformly from [m - m/2, m + m/2] around the
median interval m (`I3_MIN_WAIT`/`I3_MAX_WAIT` in its Makefiles, or
`DELAY_REQUEST` +- `DELAY_JITTER` in its NDN apps), and sleeps one such wait
before its first event too. `jitter` is that half-width as a share of m (S4:
0.5). Without jitter every wait is m, and a source's first event comes at a
random phase in [0, m) instead, so that sources are not synchronised.

Two shapes, as S4's code has them:

- `PerSource`: every source on its own timer (a producer's publishing loop;
  gcoap's GET client, an evtimer per server);
- `RoundRobin`: one timer that visits the sources in turn, each step one
  wait divided by the number of sources (the NDN consumer's loop over its FIB
  entries), so each source is visited once per wait on average.

Each fires `fire(source, k)` for the k-th event of a source, k = 0, 1, ...,
until `count` events per source have fired or the time passes `until`, and
then calls `on_done()`.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from iotbench.sim import Simulator
from iotbench.sim.twister import twister_of

Fire = Callable[[int, int], None]


class Waits:
    """Draws the waits: uniform in [m (1 - jitter), m (1 + jitter)]."""

    def __init__(self, rng: random.Random, median_s: float, jitter: float) -> None:
        if not 0.0 <= jitter < 1.0:
            raise ValueError(f"jitter must be in [0, 1), got {jitter!r}")
        self.rng = rng
        # rng.uniform's numbers, compiled (random.Random.uniform is Python code):
        # every draw from `rng` goes through it (sim/twister.py).
        self._draws = twister_of(rng)
        self.median_s = median_s
        self.jitter = jitter

    def next(self) -> float:
        if not self.jitter:
            return self.median_s
        spread = self.median_s * self.jitter
        return self._uniform(self.median_s - spread, self.median_s + spread)

    def first(self) -> float:
        """Before a source's first event: one wait, or a random phase without jitter."""
        if not self.jitter:
            return self._uniform(0.0, self.median_s)
        return self.next()

    def _uniform(self, a: float, b: float) -> float:
        """random.Random.uniform(a, b), by its own formula."""
        return a + (b - a) * self._draws.random()


class Schedule:
    """What both shapes hold: the sources, their waits, the limits, what to call."""

    def __init__(
        self,
        sim: Simulator,
        waits: Waits,
        sources: int,
        count: int,
        until: float,
        fire: Fire,
        on_done: Callable[[], None] | None = None,
    ) -> None:
        self.sim = sim
        self.waits = waits
        self.sources = sources
        self.count = count
        self.until = until
        self.fire = fire
        self.on_done = on_done
        self.running = 0  # PerSource: sources with events still to come; RoundRobin: 1 or 0

    def start(self, at: float) -> None:
        """Schedule the first events, from `at`."""
        raise NotImplementedError


class PerSource(Schedule):
    """Each source on its own timer."""

    def start(self, at: float) -> None:
        self.running = self.sources
        for source in range(self.sources):
            self.sim.at(at + self.waits.first(), self._event, source, 0)

    def _event(self, source: int, k: int) -> None:
        if self.sim.now > self.until:
            self._stopped()
            return
        self.fire(source, k)
        if k + 1 < self.count:
            self.sim.schedule(self.waits.next(), self._event, source, k + 1)
        else:
            self._stopped()

    def _stopped(self) -> None:
        self.running -= 1
        if not self.running and self.on_done is not None:
            self.on_done()


class RoundRobin(Schedule):
    """One timer visiting the sources in turn, a wait / sources apart."""

    def start(self, at: float) -> None:
        if not self.sources:
            return
        self.running = 1
        self.sim.at(at + self._step(), self._event, 0, 0)

    def _step(self) -> float:
        return self.waits.next() / self.sources

    def _event(self, source: int, k: int) -> None:
        if self.sim.now > self.until:
            self._stopped()
            return
        self.fire(source, k)
        source += 1
        if source == self.sources:
            source, k = 0, k + 1
        if k < self.count:
            self.sim.schedule(self._step(), self._event, source, k)
        else:
            self._stopped()

    def _stopped(self) -> None:
        self.running = 0
        if self.on_done is not None:
            self.on_done()


SCHEDULES = {"per-source": PerSource, "round-robin": RoundRobin}
