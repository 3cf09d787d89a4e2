"""The event kernel: a clock in virtual seconds and a queue of pending callbacks.

Events are ordered by (time, sequence number). The sequence number is the order
in which events were scheduled, so two events at the same instant always run in
the same order: ties are broken deterministically, never by object identity.

The queue is two heaps of `Timer` objects split at a moving horizon: a near heap
of the entries due before it, which the loop pops, and a far heap of the rest.
When the near heap runs empty, the far heap's entries of the next window (from
its earliest live entry on) move over, in order, and the horizon moves to the
window's end. Most events of a protocol run are due within milliseconds (a
frame's end, a back-off, a link's delay), while most queued entries wait seconds
to minutes (keep-alives, route and parent timeouts, cancelled timers not yet
due): S4's runs keep 150 to 600 entries queued but a near heap of about five, so
each event climbs and sinks through one or two levels instead of four (6 to 8 %
fewer instructions per run, docs/performance.md). Cancelled entries still in
the far heap are dropped when their window comes, without reaching the near one.

The heaps are written out here rather than taken from `heapq`: heapq compares
its entries through Python's generic comparison, which for a (time, sequence)
key cost more than the rest of an event's scheduling; compiled
(src/iotbench/compiled.py), the comparisons below are two machine comparisons.
Each entry has four children, not two: half as many levels for an entry to
climb or sink through, each a list store with its reference counting, for the
same number of comparisons. Keys are unique and every near entry precedes
every far one, so the events come out in the same order as from any one heap.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Final, cast

from mypy_extensions import i64, mypyc_attr

from iotbench.sim.rng import RngStreams


# Subclassed by the radio medium and the simulated MACs (net/radio/medium.py,
# net/mac/), whose own events are nearly all of a radio network's.
@mypyc_attr(allow_interpreted_subclasses=True)
class EventHandler:
    """An object the kernel calls for events of its own kinds: `on_event(kind,
    args)`. A class, not a callback: compiled, the kernel's call is one through
    the class's table, where a bound method is called through Python's call
    protocol, its arguments parsed again from a tuple (about 200 instructions
    an event; the medium's and the MACs' are nearly all of a radio network's)."""

    def on_event(self, kind: i64, args: tuple[Any, ...]) -> None:
        raise NotImplementedError


class Timer:
    """A scheduled callback that can be cancelled before it fires; also the queue's entry.

    Cancelling only marks the entry; the kernel drops it when it reaches the head
    of the queue. That keeps cancel O(1), which matters because protocol timers
    (retransmissions, timeouts) are cancelled far more often than they fire.
    """

    __slots__ = ("args", "fn", "handler", "kind", "recycle", "seq", "time")

    def __init__(
        self, time: float, seq: i64, fn: Callable[..., Any] | None, args: tuple[Any, ...]
    ) -> None:
        self.time = time
        self.seq = seq
        self.fn = fn
        self.args = args
        # An event of `handler`'s own (`Simulator.post_event`): it is called, with
        # `kind`, and `fn` is the handler too (None still means cancelled).
        self.handler: EventHandler | None = None
        self.kind: i64 = 0
        # Made by `post` or `call_soon`, which hand it to nobody: once it has
        # fired, the kernel keeps it for the next such event (Simulator._spare).
        self.recycle = False

    def cancel(self) -> None:
        self.fn = None

    @property
    def active(self) -> bool:
        return self.fn is not None


def _push(heap: list[Timer], timer: Timer) -> None:
    """Add `timer` to the heap (sift it up from the end)."""
    time, seq = timer.time, timer.seq
    pos: i64 = len(heap)
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
    n: i64 = len(heap)
    if not n:
        return last
    first = heap[0]
    # Sift `last` down from the root: move the earliest of the (up to four)
    # children up while it is earlier than `last`. (Positions and sequence
    # numbers are machine integers, compiled: no tagged arithmetic.)
    time, seq = last.time, last.seq
    pos: i64 = 0
    child_pos: i64 = 1
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


# The near heap's window: how far past the earliest far entry a refill reaches.
# Any positive window gives the same order of events; it only sets the cost.
# It starts at NEAR_WINDOW_S, where a protocol's short timers (MAC back-offs,
# frames on the air, link delays: microseconds to tens of milliseconds) go
# straight into a near heap of a few entries while its long ones (keep-alives,
# route and parent timeouts: seconds to minutes) wait in the far heap. A run
# whose events are mostly scheduled further ahead than the window (a link with
# a second's delay) pays two heaps per event; there the window doubles, up to
# NEAR_WINDOW_MAX_S, and it halves again, down to NEAR_WINDOW_S, once almost
# every event goes straight into the near heap.
NEAR_WINDOW_S: Final = 0.1
NEAR_WINDOW_MAX_S: Final = 1e6


class Simulator:
    """A discrete-event simulator in virtual time (seconds).

    `seed` feeds independent random streams per component (see `rng`); nothing
    here reads the wall clock or the global random module.
    """

    def __init__(self, seed: int = 0) -> None:
        self.now: float = 0.0
        # Two heaps split at `_horizon`: every entry in `_near` is due before it,
        # every entry in `_far` at or after it (module docstring).
        self._near: list[Timer] = []
        self._far: list[Timer] = []
        self._horizon = 0.0
        self._window = NEAR_WINDOW_S
        self._far_pushes: i64 = 0  # since the window was last judged
        self._seq_at_judging: i64 = 0
        self._seq: i64 = 0
        self._stopped = False
        self.events_processed = 0
        # Entries of fired events that nobody else holds (`post`, `call_soon`),
        # made ready for the next: most of a run's events are posted (a frame's
        # end, a back-off, a packet's arrival), and an entry taken from here
        # costs about a third of one made and freed (docs/performance.md).
        self._spare: list[Timer] = []
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
        self._enqueue(timer)
        return timer

    def at(self, time: float, fn: Callable[..., Any], *args: Any) -> Timer:
        """Call fn(*args) at absolute virtual time `time`."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time} before now {self.now}")
        self._seq += 1
        timer = Timer(time, self._seq, fn, args)
        self._enqueue(timer)
        return timer

    def post(self, time: float, fn: Callable[..., Any], *args: Any) -> None:
        """`at` for events nobody cancels (a packet's arrival): nothing returned."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time} before now {self.now}")
        self._enqueue(self._entry(time, fn, args, None, 0))

    def post_event(self, time: float, handler: EventHandler, kind: i64, *args: Any) -> None:
        """`post` for an event `handler` takes itself: `handler.on_event(kind, args)`
        at `time`, ordered as any other event posted now."""
        if time < self.now:
            raise ValueError(f"cannot schedule at {time} before now {self.now}")
        # (The handler stands in `fn`: a Timer's fn of None means cancelled.)
        self._enqueue(self._entry(time, cast(Callable[..., Any], handler), args, handler, kind))

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call fn(*args) at the current instant, after the events already due now."""
        self._enqueue(self._entry(self.now, fn, args, None, 0))

    def _entry(
        self,
        time: float,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        handler: EventHandler | None,
        kind: i64,
    ) -> Timer:
        """A queue entry that nobody outside the kernel will hold: a spare one if
        there is one. Its sequence number is the next, as for every entry."""
        self._seq += 1
        spare = self._spare
        if spare:
            timer = spare.pop()
            timer.time = time
            timer.seq = self._seq
            timer.fn = fn
            timer.args = args
            timer.handler = handler
            timer.kind = kind
            return timer
        timer = Timer(time, self._seq, fn, args)
        timer.handler = handler
        timer.kind = kind
        timer.recycle = True
        return timer

    def stop(self) -> None:
        """End `run` after the event that is executing now."""
        self._stopped = True

    def _enqueue(self, timer: Timer) -> None:
        if timer.time < self._horizon:
            _push(self._near, timer)
        else:
            self._far_pushes += 1
            _push(self._far, timer)

    def _adapt_window(self) -> None:
        """Widen the window when over an eighth of the last (at least) 4,096
        events scheduled went to the far heap; narrow it when under a 32nd did.
        Fewer events would judge by a burst (a parent's beacon re-arming its
        children's timeouts at once)."""
        scheduled = self._seq - self._seq_at_judging
        if scheduled < 4096:
            return
        far_pushes = self._far_pushes
        if 8 * far_pushes > scheduled:
            self._window = min(2 * self._window, NEAR_WINDOW_MAX_S)
        elif 32 * far_pushes < scheduled:
            self._window = max(0.5 * self._window, NEAR_WINDOW_S)
        self._far_pushes = 0
        self._seq_at_judging = self._seq

    def _refill(self) -> None:
        """Move the next window of the far heap into the (empty) near heap.

        The window starts at the earliest live far entry. What moves is a prefix
        of the far heap's (time, sequence) order, so every near entry still
        precedes every far one. Cancelled far entries are dropped here, never
        reaching the near heap.
        """
        self._adapt_window()
        far = self._far
        near = self._near
        while far:
            head = _pop(far)
            if head.fn is None:
                continue
            horizon = head.time + self._window
            self._horizon = horizon
            # The far heap gives its entries in order and the near heap was empty:
            # appended in that order, they form a sorted list, which is a heap.
            near.append(head)
            while far and far[0].time < horizon:
                timer = _pop(far)
                if timer.fn is not None:
                    near.append(timer)
            return

    def run(self, until: float | None = None) -> None:
        """Process events in order until the queue is empty, `stop()`, or `until`.

        With `until`, the clock ends exactly at `until` if events remain beyond it.
        """
        near = self._near
        spare = self._spare
        self._stopped = False
        processed: i64 = 0
        limit = float("inf") if until is None else until
        while not self._stopped:
            if not near:
                if not self._far:
                    break
                self._refill()
                continue
            timer = _pop(near)
            if timer.time > limit:
                # Not due: put it back (the same object, so cancelling it still works).
                # This happens at most once per run, which is why the loop pops
                # first instead of peeking at the head for every event.
                _push(near, timer)
                self.now = limit
                break
            fn = timer.fn
            if fn is None:  # cancelled
                continue
            self.now = timer.time
            processed += 1
            args = timer.args
            handler = timer.handler
            if timer.recycle:
                # Nobody else holds it: spare it, without the references it held.
                timer.fn = None
                timer.handler = None
                timer.args = ()
                spare.append(timer)
            if handler is not None:
                handler.on_event(timer.kind, args)
            else:
                fn(*args)
        self.events_processed += processed

    @property
    def next_time(self) -> float | None:
        """When the earliest queued entry is due (None: nothing queued). A cancelled
        entry counts until `run` drops it, so this may be early, never late: what a
        driver that waits for the next event (emulate/realtime.py) needs."""
        if self._near:
            return self._near[0].time
        return self._far[0].time if self._far else None

    @property
    def pending(self) -> int:
        """Number of queued entries (cancelled ones included until they are dropped)."""
        return len(self._near) + len(self._far)
