"""One re-armable deadline on an asyncio event loop: a stack's next_timer().

Every real-mode driver keeps exactly one loop timer per stack, armed at the
deadline the stack reported last, and calls the stack's handle_timer(now)
when it fires.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class LoopTimer:
    """Calls `callback()` at the absolute loop time given to the last arm()."""

    __slots__ = ("_callback", "_deadline", "_handle", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        self._loop = loop
        self._callback = callback
        self._handle: asyncio.TimerHandle | None = None
        self._deadline: float | None = None

    def arm(self, deadline: float | None) -> None:
        """Fire at `deadline` (loop.time() scale) instead of any earlier setting; None: never."""
        if deadline == self._deadline:
            return
        self.cancel()
        self._deadline = deadline
        if deadline is not None:
            self._handle = self._loop.call_at(deadline, self._fire)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._deadline = None

    def _fire(self) -> None:
        self._handle = None
        self._deadline = None
        self._callback()
