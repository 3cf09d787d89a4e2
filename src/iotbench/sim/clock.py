"""What the network model asks of its clock: the simulator's, or real mode's.

Nodes and point-to-point links ask their `sim` for the time (`now`), schedule
callbacks (`post` for a packet's arrival, `at` and `schedule` for timers)
and draw from named random streams. In a simulation that is the
event kernel's `Simulator`; the impairment shim (real/shim.py) gives them a
`RealTimeClock` (real/clock.py) instead. Code that both run is typed with
this protocol, so that compiled modules (src/iotbench/compiled.py) accept
either.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol


class Clock(Protocol):
    @property
    def now(self) -> float: ...

    def rng(self, name: str) -> random.Random: ...

    def post(self, time: float, fn: Callable[..., Any], *args: Any) -> object: ...

    def at(self, time: float, fn: Callable[..., Any], *args: Any) -> object: ...

    def schedule(self, delay: float, fn: Callable[..., Any], *args: Any) -> object: ...
