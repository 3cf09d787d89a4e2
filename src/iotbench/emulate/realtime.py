"""The event kernel in real time: virtual time follows the wall clock.

The simulator never reads the wall clock (sim/ promises that, for
determinism). Emulation needs it, so this driver reads it from outside the
kernel: it sleeps until the next event is due, runs every event due by now,
and in between lets file descriptors (an attached host's TUN, the ZEP socket)
inject work at the current instant. Virtual time t is wall time since
`start` plus the virtual time the network had then, so a network can first
run a warm-up in virtual time (routing converges in milliseconds) and then go
on in real time.

Lateness ("lag") is how late the earliest due event is when the driver gets
to it: select()'s wake-up jitter, a batch of events that took longer than the
gap to the next one, or a reader's work. It is the figure that says whether
the emulation kept up; `LagHistogram` keeps it in bounded memory.
"""

from __future__ import annotations

import bisect
import ctypes
import math
import select
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

# Log-spaced lag buckets, 20 per decade from 1 us to 100 s: percentiles within
# 12 % of the true value, in a fixed 160 counters however long the run.
_BOUNDS = [10 ** (-6 + i / 20) for i in range(161)]
_SLACK_S = 1e-9


class Kernel(Protocol):
    """What the driver needs of sim.kernel.Simulator."""

    now: float

    @property
    def next_time(self) -> float | None: ...

    def run(self, until: float | None = None) -> None: ...

    def at(self, time: float, fn: Callable[..., Any], *args: Any) -> object: ...


class LagHistogram:
    """Lateness samples (seconds): count, exact maximum, percentiles from buckets."""

    def __init__(self) -> None:
        self.counts = [0] * (len(_BOUNDS) + 1)
        self.samples = 0
        self.max_s = 0.0
        self.total_s = 0.0

    def add(self, lag_s: float) -> None:
        self.counts[bisect.bisect_left(_BOUNDS, lag_s)] += 1
        self.samples += 1
        self.total_s += lag_s
        if lag_s > self.max_s:
            self.max_s = lag_s

    def percentile(self, p: float) -> float:
        """The upper bound of the bucket holding the p-th percentile (0 < p <= 100),
        capped at the exact maximum; 0 with no samples."""
        if not self.samples:
            return 0.0
        rank = math.ceil(self.samples * p / 100)
        seen = 0
        for index, count in enumerate(self.counts):
            seen += count
            if seen >= rank:
                bound = _BOUNDS[index] if index < len(_BOUNDS) else math.inf
                return min(bound, self.max_s)
        return self.max_s

    def summary(self) -> LagSummary:
        return LagSummary(self.samples, self.percentile(50), self.percentile(99), self.max_s)


@dataclass(frozen=True)
class LagSummary:
    samples: int
    p50_s: float
    p99_s: float
    max_s: float

    def text(self) -> str:
        return (
            f"lag p50 {self.p50_s * 1e3:.3f} ms, p99 {self.p99_s * 1e3:.3f} ms, "
            f"max {self.max_s * 1e3:.3f} ms ({self.samples:,} wake-ups)"
        )


class RealTimeDriver:
    """Runs `sim` against the wall clock; readers on file descriptors feed it.

    `clock` (seconds, monotonic) and `wait` (select.select's signature) are
    parameters so that tests can drive the loop in a fake time.
    """

    def __init__(
        self,
        sim: Kernel,
        *,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[..., Any] = select.select,
    ) -> None:
        self.sim = sim
        self.clock = clock
        self.wait = wait
        self.lag = LagHistogram()  # the whole run
        self.recent = LagHistogram()  # since the caller last replaced it (a progress line's)
        self._readers: dict[int, Callable[[], object]] = {}
        self._origin = 0.0  # the wall time at which virtual time would be 0
        self._started = False
        self._stopped = False

    def add_reader(self, fd: int, callback: Callable[[], object]) -> None:
        """Call `callback` whenever `fd` is readable (it reads what is there)."""
        self._readers[fd] = callback

    def remove_reader(self, fd: int) -> None:
        self._readers.pop(fd, None)

    def now(self) -> float:
        """The virtual time that corresponds to the wall clock now."""
        return self.clock() - self._origin

    def inject(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run fn(*args) inside the simulation at the current instant (a packet an
        attached program sent, a frame RIOT transmitted)."""
        self.sim.at(max(self.sim.now, self.now()), fn, *args)

    def stop(self) -> None:
        """End `run` at its next turn (from a reader, an event or a signal handler)."""
        self._stopped = True

    def run(
        self,
        duration_s: float | None = None,
        *,
        on_tick: Callable[[], None] | None = None,
        tick_s: float = 1.0,
    ) -> None:
        """Run in real time for `duration_s` seconds (None: until `stop` or an
        exception such as KeyboardInterrupt), calling `on_tick` every `tick_s`."""
        if not self._started:
            self._origin = self.clock() - self.sim.now
            self._started = True
        self._stopped = False
        with _timer_slack_ns(1):
            self._loop(duration_s, on_tick, tick_s)

    def _loop(
        self, duration_s: float | None, on_tick: Callable[[], None] | None, tick_s: float
    ) -> None:
        end = math.inf if duration_s is None else self.now() + duration_s
        next_tick = self.now() + tick_s
        sim = self.sim
        while not self._stopped:
            # A nanosecond's slack: wall time minus an origin is not exact, and a
            # wait of less than the clock's resolution would never end.
            now = self.now() + _SLACK_S
            limit = min(now, end)
            due = sim.next_time
            if due is not None and due <= limit:
                late = max(0.0, now - _SLACK_S - due)
                self.lag.add(late)
                self.recent.add(late)
                sim.run(until=max(due, limit - _SLACK_S))
                continue
            if now >= end:
                sim.run(until=end)  # the clock ends at `end`, as a simulation's does
                break
            if on_tick is not None and now >= next_tick:
                on_tick()
                next_tick = now + tick_s
            horizon = min(end, next_tick if on_tick is not None else math.inf)
            if due is not None:
                horizon = min(horizon, due)
            self._poll(max(horizon - now, _SLACK_S))

    def _poll(self, timeout_s: float) -> None:
        fds = list(self._readers)
        # select() takes microseconds (epoll and poll round to milliseconds, which
        # would be a millisecond of lag on every wake-up).
        ready, _, _ = self.wait(fds, [], [], min(timeout_s, 3600.0))
        for fd in ready:
            callback = self._readers.get(fd)
            if callback is not None:
                callback()


_PR_SET_TIMERSLACK, _PR_GET_TIMERSLACK = 29, 30


@contextmanager
def _timer_slack_ns(slack_ns: int) -> Iterator[None]:
    """Linux lets a thread's timed waits end up to its timer slack late (50 us by
    default, so that the kernel can batch wake-ups); an emulation wants its
    wake-ups on time, which halves the median lag here. Elsewhere, or if the
    call fails, nothing changes."""
    if not sys.platform.startswith("linux"):
        yield
        return
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        previous = prctl(_PR_GET_TIMERSLACK, 0, 0, 0, 0)
    except (OSError, AttributeError):
        yield
        return
    if previous < 0 or prctl(_PR_SET_TIMERSLACK, slack_ns, 0, 0, 0) != 0:
        yield
        return
    try:
        yield
    finally:
        prctl(_PR_SET_TIMERSLACK, previous, 0, 0, 0)
