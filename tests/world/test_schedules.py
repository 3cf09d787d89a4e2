"""When a publish run's events happen (world/workloads/publish/schedules.py): S4's jittered waits."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotbench.sim import Simulator
from iotbench.world.workloads.publish.schedules import PerSource, RoundRobin, Waits


def fired(schedule_cls, waits, sources=3, count=4, until=float("inf")):
    sim = Simulator(1)
    events: list[tuple[float, int, int]] = []
    done: list[float] = []
    schedule = schedule_cls(
        sim,
        waits,
        sources,
        count,
        until,
        lambda s, k: events.append((sim.now, s, k)),
        on_done=lambda: done.append(sim.now),
    )
    schedule.start(10.0)
    sim.run()
    return events, done


def test_waits_are_uniform_around_the_median():
    waits = Waits(random.Random(1), 5.0, 0.5)
    drawn = [waits.next() for _ in range(2000)]
    assert 2.5 <= min(drawn) < 2.6 and 7.4 < max(drawn) <= 7.5
    assert sum(drawn) / len(drawn) == pytest.approx(5.0, rel=0.03)
    fixed = Waits(random.Random(1), 5.0, 0.0)
    assert {fixed.next() for _ in range(10)} == {5.0}
    assert all(0.0 <= fixed.first() < 5.0 for _ in range(100))
    with pytest.raises(ValueError, match="jitter"):
        Waits(random.Random(1), 5.0, 1.0)


def test_per_source_timers_are_independent_and_end_after_count():
    events, done = fired(PerSource, Waits(random.Random(2), 1.0, 0.5))
    for source in range(3):
        times = [t for t, s, _ in events if s == source]
        assert len(times) == 4 and 10.5 <= times[0] <= 11.5
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        assert all(0.5 <= g <= 1.5 for g in gaps)
    assert [k for _, s, k in events if s == 0] == [0, 1, 2, 3]
    assert done == [max(t for t, _, _ in events)]


def test_round_robin_visits_the_sources_in_turn_a_wait_over_their_number_apart():
    events, done = fired(RoundRobin, Waits(random.Random(3), 3.0, 0.5))
    assert [(s, k) for _, s, k in events] == [(s, k) for k in range(4) for s in range(3)]
    gaps = [b[0] - a[0] for a, b in zip(events, events[1:], strict=False)]
    assert all(0.5 - 1e-9 <= g <= 1.5 + 1e-9 for g in gaps)  # [1.5, 4.5] / 3
    assert len(done) == 1


def test_a_schedule_stops_at_its_end_time():
    events, done = fired(PerSource, Waits(random.Random(4), 1.0, 0.0), count=100, until=15.0)
    assert events and max(t for t, _, _ in events) <= 15.0
    assert len(done) == 1


@given(
    seed=st.integers(0, 2**32),
    median=st.floats(0.01, 100.0),
    jitter=st.floats(0.0, 0.99),
)
def test_waits_are_random_uniforms_number_for_number(seed, median, jitter):
    """The waits come from the stream's twister as random.Random.uniform would
    draw them (the same numbers from the same stream)."""
    waits, reference = Waits(random.Random(seed), median, jitter), random.Random(seed)
    spread = median * jitter
    expected = [
        median if not jitter else reference.uniform(median - spread, median + spread)
        for _ in range(20)
    ]
    first = reference.uniform(0.0, median) if not jitter else None
    if jitter:
        assert [waits.first()] + [waits.next() for _ in range(19)] == expected
    else:
        assert [waits.next() for _ in range(20)] == expected
        assert waits.first() == first
