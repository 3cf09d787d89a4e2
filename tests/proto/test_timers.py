"""The timer queue every sans-I/O stack keeps its deadlines in (proto/timers.py)."""

from __future__ import annotations

import heapq
import random

from hypothesis import given
from hypothesis import strategies as st

from iotbench.proto.timers import DEADLINE, KIND, OBJ, TimerQueue, armed, cancel, earliest


def test_entries_come_out_by_deadline_then_by_arming():
    q = TimerQueue()
    q.arm(2.0, 1, "b")
    q.arm(1.0, 1, "a")
    q.arm(2.0, 2, "c")  # the same deadline as "b", armed later
    assert q.next_deadline() == 1.0
    out = []
    while (entry := q.pop_due(5.0)) is not None:
        out.append((entry[DEADLINE], entry[KIND], entry[OBJ]))
    assert out == [(1.0, 1, "a"), (2.0, 1, "b"), (2.0, 2, "c")]
    assert q.next_deadline() is None and len(q) == 0


def test_only_what_is_due_comes_out():
    q = TimerQueue()
    q.arm(1.0, 0, "a")
    q.arm(3.0, 0, "b")
    assert q.pop_due(0.5) is None
    assert q.pop_due(1.0)[OBJ] == "a"
    assert q.pop_due(2.9) is None
    assert q.next_deadline() == 3.0


def test_a_cancelled_entry_never_comes_out_and_hides_no_other():
    q = TimerQueue()
    first = q.arm(1.0, 0, "a")
    q.arm(2.0, 0, "b")
    assert armed(first)
    cancel(first)
    cancel(None)  # nothing to cancel
    assert not armed(first) and not armed(None)
    assert q.next_deadline() == 2.0  # the cancelled head is dropped
    assert q.pop_due(10.0)[OBJ] == "b"
    assert q.pop_due(10.0) is None


def test_an_entry_armed_while_handling_at_now_is_handled_in_the_same_pass():
    q = TimerQueue()
    q.arm(1.0, 0, "first")
    seen = []
    while (entry := q.pop_due(1.0)) is not None:
        seen.append(entry[OBJ])
        if entry[OBJ] == "first":
            q.arm(1.0, 0, "then")
    assert seen == ["first", "then"]


def test_peek_and_pop_let_a_stack_apply_its_own_staleness_rule():
    q = TimerQueue()
    live = {"b"}
    q.arm(1.0, 0, "a")
    q.arm(2.0, 0, "b")
    while (entry := q.peek()) is not None and entry[OBJ] not in live:
        q.pop()
    assert entry is not None and entry[OBJ] == "b"
    assert q.pop()[OBJ] == "b" and q.peek() is None


@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.booleans()),  # (deadline, cancel it later)
        max_size=60,
    ),
    st.integers(0, 20),
)
def test_the_queue_is_the_heap_of_deadline_and_arming_order_it_replaces(plan, now):
    """The same entries, in the same order, as the stacks' own heaps of
    [deadline, seq, kind, obj] with cancelled kinds skipped gave."""
    q = TimerQueue()
    reference: list[list] = []
    entries = []
    for seq, (deadline, _) in enumerate(plan, start=1):
        entries.append(q.arm(float(deadline), 0, seq))
        heapq.heappush(reference, [float(deadline), seq, 0, seq])
    for entry, (_, drop) in zip(entries, plan, strict=True):
        if drop:
            cancel(entry)
            for r in reference:
                if r[OBJ] == entry[OBJ]:
                    r[KIND] = -1
    got = []
    while (entry := q.pop_due(float(now))) is not None:
        got.append(entry[OBJ])
    expected = []
    while reference and reference[0][0] <= now:
        r = heapq.heappop(reference)
        if r[KIND] != -1:
            expected.append(r[OBJ])
    assert got == expected
    while reference and reference[0][KIND] == -1:
        heapq.heappop(reference)
    assert q.next_deadline() == (reference[0][0] if reference else None)


def test_many_random_entries_stay_in_order():
    rng = random.Random(3)
    q = TimerQueue()
    for i in range(1000):
        q.arm(rng.choice([0.5, 1.0, 1.5]), 0, i)
    out = []
    while (entry := q.pop_due(2.0)) is not None:
        out.append((entry[DEADLINE], entry[OBJ]))
    assert out == sorted(out)


def test_earliest_is_none_for_no_deadlines():
    assert earliest([]) is None


@given(st.lists(st.floats(allow_nan=False, allow_infinity=True, width=64), min_size=1))
def test_earliest_is_the_builtin_min(deadlines):
    # What the stacks' next_timer() used before: the same value for every list.
    assert earliest(deadlines) == min(deadlines)


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 50)), max_size=200))
def test_the_heap_is_heapqs_entry_for_entry(steps):
    # The same algorithm as heapq: after every push and pop, the same list.
    q = TimerQueue()
    model: list[list] = []
    for pop, deadline in steps:
        if pop and model:
            assert q.pop() is heapq.heappop(model)
        else:
            heapq.heappush(model, q.arm(float(deadline), 1, None))
        assert q._heap == model
