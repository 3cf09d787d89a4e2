"""The real-time driver, in a fake time: events fire when the wall clock reaches
them, readers inject at the current instant, lateness is measured."""

from __future__ import annotations

import random

import pytest

from iotbench.emulate.realtime import LagHistogram, RealTimeDriver
from iotbench.sim import Simulator


class FakeTime:
    """A wall clock that moves only when the driver waits (or an event works)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start
        self.ready: list[tuple[float, int]] = []  # (when, fd) a reader becomes readable
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.t

    def wait(self, rlist, _w, _x, timeout: float):
        self.waits.append(timeout)
        due = [(when, fd) for when, fd in self.ready if fd in rlist and when <= self.t + timeout]
        if due:
            when, fd = min(due)
            self.ready.remove((when, fd))
            self.t = max(self.t, when)
            return [fd], [], []
        self.t += timeout
        return [], [], []


def driver_for(sim: Simulator, fake: FakeTime) -> RealTimeDriver:
    return RealTimeDriver(sim, clock=fake.clock, wait=fake.wait)


def test_events_fire_at_their_wall_time():
    sim, fake = Simulator(1), FakeTime()
    fired: list[tuple[float, float]] = []
    for t in (0.25, 1.0, 2.5):
        sim.at(t, lambda: fired.append((sim.now, fake.t)))
    sim.at(100.0, lambda: None)  # a network always has a timer pending
    driver_for(sim, fake).run(3.0)
    assert [v for v, _ in fired] == [0.25, 1.0, 2.5]
    assert [w - 1000.0 for _, w in fired] == pytest.approx([0.25, 1.0, 2.5])
    assert sim.now == pytest.approx(3.0)  # the clock ends at the duration, as a run's does


def test_virtual_time_goes_on_from_a_warm_up():
    sim, fake = Simulator(1), FakeTime()
    seen: list[float] = []
    sim.at(40.5, lambda: seen.append(fake.t - 1000.0))
    sim.at(100.0, lambda: None)
    sim.run(until=40.0)  # a warm-up in virtual time
    driver_for(sim, fake).run(1.0)
    assert seen == pytest.approx([0.5])
    assert sim.now == pytest.approx(41.0)


def test_a_reader_injects_at_the_current_instant():
    sim, fake = Simulator(1), FakeTime()
    driver = driver_for(sim, fake)
    got: list[tuple[float, bytes]] = []
    fake.ready.append((1000.0 + 0.7, 5))

    def readable() -> None:
        driver.inject(lambda data: got.append((sim.now, data)), b"packet")

    driver.add_reader(5, readable)
    sim.at(2.0, lambda: None)
    driver.run(2.0)
    assert got == [(pytest.approx(0.7), b"packet")]


def test_lateness_of_a_slow_event_is_measured():
    sim, fake = Simulator(1), FakeTime()

    def slow() -> None:
        fake.t += 0.005  # this event takes 5 ms of real time

    sim.at(0.100, slow)
    sim.at(0.101, lambda: None)  # due 1 ms later: reached 4 ms late
    driver = driver_for(sim, fake)
    driver.run(0.2)
    lag = driver.lag.summary()
    assert lag.samples == 2
    assert lag.max_s == pytest.approx(0.004)
    assert driver.lag.percentile(50) <= 1e-6  # the first bucket: on time


def test_stop_from_an_event_ends_the_run():
    sim, fake = Simulator(1), FakeTime()
    driver = driver_for(sim, fake)
    sim.at(0.5, driver.stop)
    sim.at(5.0, lambda: None)
    driver.run(None)
    assert sim.now == pytest.approx(0.5)


def test_progress_ticks_while_idle():
    sim, fake = Simulator(1), FakeTime()
    ticks: list[float] = []
    driver = driver_for(sim, fake)
    driver.run(3.5, on_tick=lambda: ticks.append(driver.now()), tick_s=1.0)
    assert ticks == pytest.approx([1.0, 2.0, 3.0])


def test_waits_are_never_negative_and_end_on_time():
    sim, fake = Simulator(1), FakeTime()
    rng = random.Random(3)
    for _ in range(200):
        sim.at(rng.uniform(0, 2), lambda: None)
    driver_for(sim, fake).run(2.0)
    assert min(fake.waits) >= 0.0
    assert sim.events_processed == 200


@pytest.mark.parametrize("p", [50, 90, 99])
def test_histogram_percentiles_within_a_bucket_of_the_exact_ones(p):
    rng = random.Random(7)
    samples = [rng.lognormvariate(-9, 1.5) for _ in range(5000)]
    hist = LagHistogram()
    for s in samples:
        hist.add(s)
    exact = sorted(samples)[-(-len(samples) * p // 100) - 1]
    assert exact <= hist.percentile(p) <= exact * 10 ** (1 / 20) * 1.0001
    assert hist.max_s == max(samples)


def test_an_empty_histogram_says_zero():
    assert LagHistogram().summary().p99_s == 0.0


def test_the_timer_slack_is_tight_while_running_and_restored_after():
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("timer slack is a Linux setting")
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    before = prctl(30, 0, 0, 0, 0)
    sim, fake = Simulator(1), FakeTime()
    seen: list[int] = []
    sim.at(0.5, lambda: seen.append(prctl(30, 0, 0, 0, 0)))
    driver_for(sim, fake).run(1.0)
    assert seen == [1]
    assert prctl(30, 0, 0, 0, 0) == before
