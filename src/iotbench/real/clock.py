"""The simulator's clock and event calls on an asyncio loop, in real time.

The network model (nodes, IP, fragmentation, links, impairments) asks its
`sim` for the time (`now`), schedules callbacks (`post`, `at`, `schedule`)
and draws from named random streams (`rng`). `RealTimeClock` answers the same
calls from an asyncio loop, so the impairment shim runs the very objects a
simulation runs, with real packets passing through them. Time is seconds
since the clock was made, as a run's virtual time starts at 0.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from iotbench.sim.rng import RngStreams


class RealTimeClock:
    def __init__(self, loop: asyncio.AbstractEventLoop, seed: int | None) -> None:
        self.loop = loop
        self.t0 = loop.time()
        self._rngs = RngStreams(seed)

    @property
    def now(self) -> float:
        return self.loop.time() - self.t0

    def rng(self, name: str) -> random.Random:
        return self._rngs.stream(name)

    def at(self, time: float, fn: Callable[..., Any], *args: Any) -> asyncio.TimerHandle:
        """Call fn(*args) at `time` (a time already past runs as soon as it can)."""
        return self.loop.call_at(self.t0 + time, fn, *args)

    post = at  # nobody cancels a packet's arrival; the handle is simply not kept

    def schedule(self, delay: float, fn: Callable[..., Any], *args: Any) -> asyncio.TimerHandle:
        return self.loop.call_later(delay, fn, *args)
