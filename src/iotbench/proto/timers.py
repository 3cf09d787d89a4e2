"""One timer queue for the sans-I/O stacks: deadlines in order of time, then of arming.

Every stack is driven the same way (h11's and aioquic's pattern): the driver
asks `next_timer()` for the earliest deadline and calls `handle_timer(now)`
when it comes. Behind those two calls each stack keeps its deadlines here:

    timers = TimerQueue()
    entry = timers.arm(now + 2.0, RETRANSMIT, exchange)   # what, for whom
    cancel(entry)                                         # no longer wanted
    timers.next_deadline()                                # the earliest one armed
    while (entry := timers.pop_due(now)) is not None:     # in handle_timer
        kind, obj = entry[KIND], entry[OBJ]

An entry is a list [deadline, seq, kind, obj]: `kind` is the stack's own int
tag (what to do), `obj` what to do it to. Entries due at the same time come
out in the order they were armed (`seq`), which is what keeps a simulation
deterministic. A heap cannot take an entry out of its middle cheaply, so
cancel() marks it (kind = CANCELLED) and the queue drops it when it reaches
the top. A stack whose entries go stale by its own rule (a connection closed,
a later deadline set for the same client) uses peek() and pop() and applies
its rule itself.

Compiled with mypyc (compiled.py): the NDN forwarder arms and pops a timer
per Interest. The heap is heapq's own algorithm written out here: heapq
compares its entries as lists through Python's generic comparison (an
entry's deadline for equality, then for order), about 200 instructions each,
eight or so per pop of a queue of a few hundred; here a comparison is of two
unboxed floats. With the same algorithm and unique keys (deadline, seq), the
heap holds its entries in the same places as heapq's would.
"""

from __future__ import annotations

from typing import Final

from mypy_extensions import i64

CANCELLED: Final = -1
# What an entry holds, by index.
DEADLINE: Final = 0
KIND: Final = 2
OBJ: Final = 3


def _before(a: list, b: list) -> bool:
    """Whether entry `a` is due before entry `b`: by deadline, then by arming."""
    ta: float = a[0]
    tb: float = b[0]
    if ta != tb:
        return ta < tb
    sa: int = a[1]
    sb: int = b[1]
    return sa < sb


def _heappush(heap: list[list], entry: list) -> None:
    """heapq.heappush: add `entry` at the end and let it climb into place."""
    heap.append(entry)
    _climb(heap, entry, len(heap) - 1)


def _heappop(heap: list[list]) -> list:
    """heapq.heappop: remove and return the earliest entry of a non-empty heap.
    As heapq does, the hole at the root sinks to a leaf along the earlier child
    (one comparison a level), and the last entry climbs from there into place."""
    last = heap.pop()
    n: i64 = len(heap)  # (positions in machine integers, compiled)
    if not n:
        return last
    first = heap[0]
    pos: i64 = 0
    child_pos: i64 = 1
    while child_pos < n:
        right_pos = child_pos + 1
        if right_pos < n and not _before(heap[child_pos], heap[right_pos]):
            child_pos = right_pos
        heap[pos] = heap[child_pos]
        pos = child_pos
        child_pos = 2 * pos + 1
    _climb(heap, last, pos)
    return first


def _climb(heap: list[list], entry: list, pos: i64) -> None:
    """Put `entry` at `pos` or above it, moving the later parents down (heapq's
    _siftdown, shared by push and pop as there)."""
    while pos > 0:
        parent_pos = (pos - 1) >> 1
        parent = heap[parent_pos]
        if not _before(entry, parent):
            break
        heap[pos] = parent
        pos = parent_pos
    heap[pos] = entry


def earliest(deadlines: list[float]) -> float | None:
    """The earliest of `deadlines`; None if there are none. What every stack's
    next_timer() ends with: compiled, a loop over unboxed floats, where the
    builtin `min` is a generic call comparing objects."""
    if not deadlines:
        return None
    first = deadlines[0]
    for t in deadlines:
        if t < first:
            first = t
    return first


def cancel(entry: list | None) -> None:
    """The entry will not come out of its queue (None: nothing to cancel)."""
    if entry is not None:
        entry[2] = CANCELLED


def armed(entry: list | None) -> bool:
    """Whether `entry` is still to come (not cancelled, not None)."""
    if entry is None:
        return False
    kind: int = entry[2]
    return kind != CANCELLED


class TimerQueue:
    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[list] = []
        self._seq = 0

    def __len__(self) -> int:
        """Entries held, cancelled ones not yet dropped included."""
        return len(self._heap)

    def arm(self, deadline: float, kind: int, obj: object) -> list:
        """A timer for `obj` at `deadline`; the entry is what cancel() takes."""
        self._seq += 1
        entry = [deadline, self._seq, kind, obj]
        _heappush(self._heap, entry)
        return entry

    def next_deadline(self) -> float | None:
        """The earliest deadline not cancelled, or None."""
        # The entries' fields read into typed locals: compiled, an int or a float
        # compared as an object is a call to Python's rich comparison.
        heap = self._heap
        while heap:
            head = heap[0]
            kind: int = head[2]
            if kind != CANCELLED:
                deadline: float = head[0]
                return deadline
            _heappop(heap)
        return None

    def pop_due(self, now: float) -> list | None:
        """The earliest entry due at or before `now` that is not cancelled (taken out
        of the queue), or None."""
        heap = self._heap
        while heap:
            deadline: float = heap[0][0]
            if not deadline <= now:
                return None
            entry = _heappop(heap)
            kind: int = entry[2]
            if kind != CANCELLED:
                return entry
        return None

    def peek(self) -> list | None:
        """The earliest entry, cancelled or not, left in the queue; or None."""
        return self._heap[0] if self._heap else None

    def pop(self) -> list:
        """Take out the earliest entry, cancelled or not."""
        return _heappop(self._heap)
