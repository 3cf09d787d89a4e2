"""The Trickle algorithm (RFC 6206), as a small sans-I/O timer.

Intervals I run from Imin to Imax = Imin * 2^doublings. At the start of each
interval the counter c is reset and a time t is drawn uniformly from
[I/2, I); at t the node transmits if c < k (the redundancy constant; k = 0
means it never suppresses, RFC 6550's DIORedundancyConstant of 0); at the end
of the interval I doubles, up to Imax. A consistent transmission heard
increments c; an inconsistency brings I back to Imin (unless it is there
already) and starts a new interval (4.2, rule 6).
"""

from __future__ import annotations

import random


class Trickle:
    def __init__(self, rng: random.Random, imin_s: float, doublings: int, k: int) -> None:
        self.rng = rng
        self.imin_s = imin_s
        self.imax_s = imin_s * (2**doublings)
        self.k = k
        self.interval_s = imin_s
        self.counter = 0
        self._start = 0.0
        self._t: float | None = None  # time to transmit in this interval; None once past
        self._end: float | None = None  # None: not running

    @property
    def running(self) -> bool:
        return self._end is not None

    def start(self, now: float) -> None:
        """Rule 1: start with I in [Imin, Imax]; Imin here, as RFC 6550 does."""
        self.interval_s = self.imin_s
        self._begin(now)

    def stop(self) -> None:
        self._t = self._end = None

    def _begin(self, now: float) -> None:
        """Rule 2: a new interval."""
        self.counter = 0
        self._start = now
        half = self.interval_s / 2
        self._t = now + half + self.rng.random() * half
        self._end = now + self.interval_s

    def consistent(self) -> None:
        """Rule 3: a consistent transmission was heard."""
        self.counter += 1

    def inconsistent(self, now: float) -> None:
        """Rule 6: back to Imin, unless already there."""
        if self._end is None:
            return
        if self.interval_s != self.imin_s:
            self.interval_s = self.imin_s
            self._begin(now)

    def next_timer(self) -> float | None:
        if self._end is None:
            return None
        return self._t if self._t is not None else self._end

    def handle_timer(self, now: float) -> bool:
        """Advance to `now`; True when it is time to transmit (rule 4)."""
        if self._end is None:
            return False
        transmit = False
        if self._t is not None and now >= self._t:
            self._t = None
            transmit = self.k == 0 or self.counter < self.k
        if now >= self._end:
            # Rule 5: the interval is over; double it.
            self.interval_s = min(self.interval_s * 2, self.imax_s)
            self._begin(self._end)
            if self._t is not None and now >= self._t:  # a very late call: keep this turn
                return transmit or self.handle_timer(now)
        return transmit
