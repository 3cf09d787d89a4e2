"""The event kernel: a clock in virtual seconds and a queue of pending callbacks.

Events are ordered by (time, sequence number). The sequence number is the order
in which events were scheduled, so two events at the same instant always run in
the same order: ties are broken deterministically, never by object identity.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

from iotbench.sim.rng import RngStreams


class Timer:
    """A scheduled callback that can be cancelled before it fires.

    Cancelling only marks the entry; the kernel drops it when it reaches the head
    of the queue. That keeps cancel O(1), which matters because protocol timers
    (retransmissions, timeouts) are cancelled far more often than they fire.
    """

    __slots__ = ("time", "_entry")

    def __init__(self, time: float, entry: list) -> None:
        self.time = time
        self._entry = entry

    def cancel(self) -> None:
        self._entry[2] = None

    @property
    def active(self) -> bool:
        return self._entry[2] is not None


class Simulator:
    """A discrete-event simulator in virtual time (seconds).

    `seed` feeds independent random streams per component (see `rng`); nothing
    here reads the wall clock or the global random module.
    """

    def __init__(self, seed: int = 0) -> None:
        self.now: float = 0.0
        self._queue: list[list] = []
        self._seq = 0
        self._stopped = False
        self.events_processed = 0
        self._rngs = RngStreams(seed)

    def rng(self, name: str):
        """The random stream of component `name` (same seed + name, same stream)."""
        return self._rngs.stream(name)

    def schedule(self, delay: float, fn: Callable[..., Any], *args: Any) -> Timer:
        """Call fn(*args) `delay` seconds from now."""
        if delay < 0:
            raise ValueError(f"cannot schedule into the past (delay {delay})")
        # The body of `at`, repeated: this is on every packet's and timer's path,
        # and a second call would cost as much as the rest of it.
        time = self.now + delay
        self._seq += 1
        entry = [time, self._seq, fn, args]
        heappush(self._queue, entry)
        return Timer(time, entry)

    def at(self, time: float, fn: Callable[..., Any], *args: Any) -> Timer:
        """Call fn(*args) at absolute virtual time `time`."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time} before now {self.now}")
        self._seq += 1
        entry = [time, self._seq, fn, args]
        heappush(self._queue, entry)
        return Timer(time, entry)

    def post(self, time: float, fn: Callable[..., Any], *args: Any) -> None:
        """`at` without a Timer, for events nobody cancels (a packet's arrival).

        Saves one object per event on the per-packet path.
        """
        if time < self.now:
            raise ValueError(f"cannot schedule at {time} before now {self.now}")
        self._seq += 1
        heappush(self._queue, [time, self._seq, fn, args])

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call fn(*args) at the current instant, after the events already due now."""
        self._seq += 1
        heappush(self._queue, [self.now, self._seq, fn, args])

    def stop(self) -> None:
        """End `run` after the event that is executing now."""
        self._stopped = True

    def run(self, until: float | None = None) -> None:
        """Process events in order until the queue is empty, `stop()`, or `until`.

        With `until`, the clock ends exactly at `until` if events remain beyond it.
        """
        queue = self._queue
        pop = heappop
        self._stopped = False
        processed = 0
        limit = float("inf") if until is None else until
        while queue and not self._stopped:
            entry = pop(queue)
            time, _seq, fn, args = entry
            if time > limit:
                # Not due: put it back (the same list, so its Timer still works).
                # This happens at most once per run, which is why the loop pops
                # first instead of peeking at the head for every event.
                heappush(queue, entry)
                self.now = limit
                break
            if fn is None:  # cancelled
                continue
            self.now = time
            processed += 1
            fn(*args)
        self.events_processed += processed

    @property
    def pending(self) -> int:
        """Number of queued entries (cancelled ones included until they are popped)."""
        return len(self._queue)
