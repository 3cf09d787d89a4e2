import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iotbench.sim import Simulator, derive_seed
from iotbench.sim.kernel import EventHandler


def test_events_run_in_time_order_and_ties_in_scheduling_order():
    sim = Simulator()
    seen = []
    sim.schedule(2.0, seen.append, "c")
    sim.schedule(1.0, seen.append, "a")
    sim.schedule(1.0, seen.append, "b")
    sim.at(0.5, seen.append, "first")
    sim.run()
    assert seen == ["first", "a", "b", "c"]
    assert sim.now == 2.0


def test_cancelled_timer_never_fires():
    sim = Simulator()
    seen = []
    t = sim.schedule(1.0, seen.append, "x")
    sim.schedule(2.0, seen.append, "y")
    assert t.active
    t.cancel()
    assert not t.active
    sim.run()
    assert seen == ["y"]


def test_run_until_stops_the_clock_at_the_bound():
    sim = Simulator()
    seen = []
    sim.schedule(1.0, seen.append, 1)
    sim.schedule(5.0, seen.append, 5)
    sim.run(until=3.0)
    assert seen == [1] and sim.now == 3.0
    sim.run()
    assert seen == [1, 5] and sim.now == 5.0


def test_stop_ends_run_after_current_event():
    sim = Simulator()
    seen = []

    def stopper():
        seen.append("stop")
        sim.stop()

    sim.schedule(1.0, stopper)
    sim.schedule(2.0, seen.append, "later")
    sim.run()
    assert seen == ["stop"]


def test_scheduling_into_the_past_is_an_error():
    sim = Simulator()
    with pytest.raises(ValueError):
        sim.schedule(-1, print)
    sim.schedule(1.0, lambda: None)
    sim.run()
    with pytest.raises(ValueError):
        sim.at(0.5, print)


def test_call_soon_runs_after_events_due_now():
    sim = Simulator()
    seen = []

    def first():
        sim.call_soon(seen.append, "soon")
        seen.append("first")

    sim.schedule(1.0, first)
    sim.schedule(1.0, seen.append, "same-time")
    sim.run()
    assert seen == ["first", "same-time", "soon"]


def test_rng_streams_are_independent_and_reproducible():
    a = Simulator(seed=7)
    b = Simulator(seed=7)
    # Drawing from another stream must not shift this one.
    b.rng("other").random()
    assert [a.rng("loss").random() for _ in range(5)] == [b.rng("loss").random() for _ in range(5)]
    assert Simulator(seed=8).rng("loss").random() != Simulator(seed=7).rng("loss").random()
    assert a.rng("x") is a.rng("x")


def test_derive_seed_is_stable():
    # A fixed value: seeds must not change between Python processes or versions.
    assert derive_seed(1, "a") == derive_seed(1, "a")
    assert derive_seed(1, "a") != derive_seed(1, "b")
    assert 0 <= derive_seed("x") < 2**63


def test_post_runs_like_at_but_returns_no_timer():
    sim = Simulator()
    seen = []
    sim.at(2.0, seen.append, "at")
    assert sim.post(1.0, seen.append, "post") is None
    sim.post(2.0, seen.append, "post-tie")  # same instant: after the earlier-scheduled one
    sim.run()
    assert seen == ["post", "at", "post-tie"]
    with pytest.raises(ValueError):
        sim.post(1.0, print)


def test_posted_entries_are_reused_and_keep_nothing_alive_after_firing():
    """A fired `post` entry is kept for the next `post`, without the callback and
    arguments it held; the timers `at` and `schedule` hand out are never reused,
    so cancelling one that has fired touches no other event."""
    import gc
    import weakref

    class Payload:
        pass

    sim = Simulator()
    seen = []
    payload = Payload()
    alive = weakref.ref(payload)
    sim.post(1.0, seen.append, payload)
    held = sim.at(2.0, seen.append, "at")
    del payload
    sim.run()
    seen.clear()
    gc.collect()
    assert alive() is None  # the spare entry dropped its arguments
    for k in range(5):  # reuses the spare entry; every event still runs once, in order
        sim.post(3.0 + k % 2, seen.append, k)
    held.cancel()
    sim.call_soon(seen.append, "soon")
    sim.run()
    assert seen == ["soon", 0, 2, 4, 1, 3] and sim.events_processed == 8


def test_an_event_handler_takes_its_own_events_in_the_queues_order():
    """`post_event` is `post` for an object's own events: the kernel calls its
    `on_event(kind, args)`, in the same (time, scheduling) order as every other
    event, and a spare entry that carried one keeps neither it nor its
    arguments, nor calls it again for a plain callback."""
    import gc
    import weakref

    class Recorder(EventHandler):
        def __init__(self, seen: list) -> None:
            self.seen = seen

        def on_event(self, kind, args) -> None:
            self.seen.append((kind, *args))

    sim = Simulator()
    seen: list = []
    handler = Recorder(seen)
    sim.post(2.0, seen.append, "post")
    sim.post_event(1.0, handler, 3, "a", 4)
    sim.post_event(2.0, handler, 0)  # same instant: after the earlier-scheduled one
    sim.at(2.0, seen.append, "at")
    sim.run()
    assert seen == [(3, "a", 4), "post", (0,), "at"] and sim.events_processed == 4
    alive = weakref.ref(handler)
    del handler
    gc.collect()
    assert alive() is None  # the spare entries dropped it
    sim.post(3.0, seen.append, "plain")  # a spare entry, now a plain callback again
    sim.run()
    assert seen[-1] == "plain"
    with pytest.raises(ValueError):
        sim.post_event(1.0, Recorder(seen), 0)


def test_an_event_handlers_error_stops_the_run():
    """A handler's own exception is not swallowed: the run fails loudly."""

    class Broken(EventHandler):
        def on_event(self, kind, args) -> None:
            raise RuntimeError(f"kind {kind}")

    sim = Simulator()
    sim.post_event(1.0, Broken(), 5)
    with pytest.raises(RuntimeError, match="kind 5"):
        sim.run()


def test_event_beyond_until_stays_queued_and_cancellable():
    sim = Simulator()
    seen = []
    t = sim.schedule(5.0, seen.append, "late")
    sim.schedule(6.0, seen.append, "later")
    sim.run(until=3.0)
    assert sim.now == 3.0 and sim.pending == 2
    assert t.active and t.time == 5.0
    t.cancel()  # the entry put back after `until` must still be the timer's
    sim.run()
    assert seen == ["later"] and sim.events_processed == 1


def test_the_queue_gives_every_timer_in_time_then_scheduling_order():
    # Many timers, ties among them, some cancelled, more scheduled while running:
    # the heap must hand them out exactly in (time, sequence) order.
    import random

    rng = random.Random(7)
    sim = Simulator()
    fired: list[tuple[float, int]] = []
    expected: list[tuple[float, int]] = []
    order = 0

    def add(delay: float, cancel: bool) -> None:
        nonlocal order
        order += 1
        key = (sim.now + delay, order)
        timer = sim.schedule(delay, fired.append, key)
        if cancel:
            timer.cancel()
        else:
            expected.append(key)

    def more() -> None:
        for _ in range(50):
            add(rng.choice([0.0, 0.5, 1.0, rng.random() * 3]), rng.random() < 0.2)

    for _ in range(2000):
        add(rng.choice([1.0, 2.0, rng.random() * 5]), rng.random() < 0.2)
    for t in (0.5, 1.5, 2.5):
        sim.at(t, more)
    sim.run()
    assert fired == sorted(expected)
    assert sum(1 for _, k in fired if k > 2000) > 100  # some scheduled while running


# Delays on every scale the two heaps meet: ties, events inside the near window,
# at its edge, far beyond it, and never (infinity).
_DELAYS = st.sampled_from([0.0, 1e-6, 0.003, 0.0999, 0.1, 0.1001, 0.5, 1.0, 7.0, 3600.0, math.inf])


@settings(max_examples=200, deadline=None)
@given(
    plan=st.lists(st.tuples(_DELAYS, st.booleans(), st.integers(0, 3)), min_size=1, max_size=60),
    pauses=st.lists(st.sampled_from([0.05, 0.1, 0.2, 1.0, 5000.0]), max_size=4),
)
def test_near_and_far_heaps_give_events_in_exact_order(plan, pauses):
    # Each planned event schedules `children` more with the next delays of the
    # plan (cancelling some), so timers join while running, at every distance
    # from the horizon; runs with `until` stop and resume in between. The order
    # must be exactly (time, scheduling order), as a sort of the keys gives it.
    sim = Simulator()
    fired: list[tuple[float, int]] = []
    expected: list[tuple[float, int]] = []
    cursor = iter(plan * 3)
    order = 0

    def add() -> None:
        nonlocal order
        step = next(cursor, None)
        if step is None:
            return
        delay, cancel, children = step
        order += 1
        key = (sim.now + delay, order)
        timer = sim.schedule(delay, fire, key, children)
        if cancel:
            timer.cancel()
        else:
            expected.append(key)

    def fire(key: tuple[float, int], children: int) -> None:
        fired.append(key)
        for _ in range(children):
            add()

    for _ in range(len(plan)):
        add()
    for pause in pauses:
        sim.run(until=sim.now + pause)
        assert all(t <= sim.now for t, _ in fired)
    sim.run()  # to the end, timers at infinity included
    assert fired == sorted(expected)


def test_the_near_window_widens_for_long_delays_and_narrows_again():
    # Only the cost depends on the window (the test above checks the order); this
    # checks that it follows the run: every event a second ahead (a slow link)
    # widens it, then events a millisecond apart bring it back to its start.
    sim = Simulator()
    start = sim._window

    def chain(delay: float, left: int) -> None:
        if left:
            sim.schedule(delay, chain, delay, left - 1)

    for i in range(100):
        sim.schedule(i / 100, chain, 1.0, 200)
    sim.run()
    widened = sim._window
    assert widened > 1.0
    for i in range(10):
        sim.schedule(i / 1000, chain, 0.001, 20_000)
    sim.run()
    assert widened > sim._window == start
