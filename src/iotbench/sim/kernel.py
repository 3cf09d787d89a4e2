"""The event kernel: a clock in virtual seconds and a queue of pending callbacks.

Events are ordered by (time, sequence number). The sequence number is the order
in which events were scheduled, so two events at the same instant always run in
the same order: ties are broken deterministically, never by object identity.

The queue is a heap of `Timer` objects, written out here rather than taken
from `heapq`: heapq compares its entries through Python's generic comparison,
which for a (time, sequence) key cost more than the rest of an event's
scheduling; compiled (src/iotbench/compiled.py), the comparisons below are
two machine comparisons. Each entry has four children, not two: half as many
levels for an entry to climb or sink through, each a list store with its
reference counting, for the same number of comparisons (S4's runs keep 500
to 600 entries queued; 0.9 to 1.3 % fewer instructions per run than the
binary heap, docs/performance.md). Keys are unique, so any correct heap pops
the events in the same order.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from iotbench.sim.rng import RngStreams


class Timer:
    """A scheduled callback that can be cancelled before it fires; also the queue's entry.

    Cancelling only marks the entry; the kernel drops it when it reaches the head
    of the queue. That keeps cancel O(1), which matters because protocol timers
    (retransmissions, timeouts) are cancelled far more often than they fire.
    """

    __slots__ = ("args", "fn", "seq", "time")

    def __init__(
        self, time: float, seq: int, fn: Callable[..., Any] | None, args: tuple[Any, ...]
    ) -> None:
        self.time = time
        self.seq = seq
        self.fn = fn
        self.args = args

    def cancel(self) -> None:
        self.fn = None

    @property
    def active(self) -> bool:
        return self.fn is not None


def _push(heap: list[Timer], timer: Timer) -> None:
    """Add `timer` to the heap (sift it up from the end)."""
    time, seq = timer.time, timer.seq
    pos = len(heap)
    heap.append(timer)
    while pos > 0:
        parent_pos = (pos - 1) >> 2
        parent = heap[parent_pos]
        if time < parent.time or (time == parent.time and seq < parent.seq):
            heap[pos] = parent
            pos = parent_pos
        else:
            break
    heap[pos] = timer


def _pop(heap: list[Timer]) -> Timer:
    """Remove and return the earliest timer of a non-empty heap."""
    last = heap.pop()
    n = len(heap)
    if not n:
        return last
    first = heap[0]
    # Sift `last` down from the root: move the earliest of the (up to four)
    # children up while it is earlier than `last`.
    time, seq = last.time, last.seq
    pos = 0
    child_pos = 1
    while child_pos < n:
        child = heap[child_pos]
        end = min(child_pos + 4, n)
        other_pos = child_pos + 1
        while other_pos < end:
            other = heap[other_pos]
            if other.time < child.time or (other.time == child.time and other.seq < child.seq):
                child, child_pos = other, other_pos
            other_pos += 1
        if child.time < time or (child.time == time and child.seq < seq):
            heap[pos] = child
            pos = child_pos
            child_pos = 4 * pos + 1
        else:
            break
    heap[pos] = last
    return first


class Simulator:
    """A discrete-event simulator in virtual time (seconds).

    `seed` feeds independent random streams per component (see `rng`); nothing
    here reads the wall clock or the global random module.
    """

    def __init__(self, seed: int = 0) -> None:
        self.now: float = 0.0
        self._queue: list[Timer] = []
        self._seq = 0
        self._stopped = False
        self.events_processed = 0
        self._rngs = RngStreams(seed)

    def rng(self, name: str) -> random.Random:
        """The random stream of component `name` (same seed + name, same stream)."""
        return self._rngs.stream(name)

    def schedule(self, delay: float, fn: Callable[..., Any], *args: Any) -> Timer:
        """Call fn(*args) `delay` seconds from now."""
        if delay < 0:
            raise ValueError(f"cannot schedule into the past (delay {delay})")
        self._seq += 1
        timer = Timer(self.now + delay, self._seq, fn, args)
        _push(self._queue, timer)
        return timer

    def at(self, time: float, fn: Callable[..., Any], *args: Any) -> Timer:
        """Call fn(*args) at absolute virtual time `time`."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time} before now {self.now}")
        self._seq += 1
        timer = Timer(time, self._seq, fn, args)
        _push(self._queue, timer)
        return timer

    def post(self, time: float, fn: Callable[..., Any], *args: Any) -> None:
        """`at` for events nobody cancels (a packet's arrival): nothing returned."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time} before now {self.now}")
        self._seq += 1
        _push(self._queue, Timer(time, self._seq, fn, args))

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call fn(*args) at the current instant, after the events already due now."""
        self._seq += 1
        _push(self._queue, Timer(self.now, self._seq, fn, args))

    def stop(self) -> None:
        """End `run` after the event that is executing now."""
        self._stopped = True

    def run(self, until: float | None = None) -> None:
        """Process events in order until the queue is empty, `stop()`, or `until`.

        With `until`, the clock ends exactly at `until` if events remain beyond it.
        """
        queue = self._queue
        self._stopped = False
        processed = 0
        limit = float("inf") if until is None else until
        while queue and not self._stopped:
            timer = _pop(queue)
            if timer.time > limit:
                # Not due: put it back (the same object, so cancelling it still works).
                # This happens at most once per run, which is why the loop pops
                # first instead of peeking at the head for every event.
                _push(queue, timer)
                self.now = limit
                break
            fn = timer.fn
            if fn is None:  # cancelled
                continue
            self.now = timer.time
            processed += 1
            fn(*timer.args)
        self.events_processed += processed

    @property
    def next_time(self) -> float | None:
        """When the earliest queued entry is due (None: nothing queued). A cancelled
        entry counts until `run` pops it, so this may be early, never late: what a
        driver that waits for the next event (emulate/realtime.py) needs."""
        queue = self._queue
        return queue[0].time if queue else None

    @property
    def pending(self) -> int:
        """Number of queued entries (cancelled ones included until they are popped)."""
        return len(self._queue)
