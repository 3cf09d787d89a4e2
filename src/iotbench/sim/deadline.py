"""One re-armable timer, as every sans-I/O driver in the simulator needs.

A stack reports its next deadline after every call (`next_timer()`); the
driver moves its single kernel timer there, leaving it alone when the
deadline did not change (the common case, and the cheap one).
"""

from __future__ import annotations

from collections.abc import Callable

from iotbench.sim.kernel import Simulator, Timer


class DeadlineTimer:
    __slots__ = ("_callback", "_fire_cb", "_sim", "_timer")

    def __init__(self, sim: Simulator, callback: Callable[[], None]) -> None:
        self._sim = sim
        self._callback = callback
        self._timer: Timer | None = None
        self._fire_cb: Callable[[], None] = self._fire  # bound once (net/mac/csma.py says why)

    def set(self, deadline: float | None) -> None:
        """Fire the callback at absolute time `deadline` (now, if it has passed); None: never."""
        timer = self._timer
        if timer is not None:
            if deadline is not None and timer.time == deadline and timer.active:
                return
            timer.cancel()
            self._timer = None
        if deadline is not None:
            sim = self._sim
            self._timer = sim.at(deadline if deadline > sim.now else sim.now, self._fire_cb)

    def cancel(self) -> None:
        self.set(None)

    def _fire(self) -> None:
        self._timer = None
        self._callback()
