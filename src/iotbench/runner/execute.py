"""Executing runs: in this process, or in a pool of worker processes.

Workers only compute: they call the run function and hand back an `Outcome`
(metrics or the error). Everything durable (DuckDB, final pcap names)
happens in the parent, so a worker that dies loses nothing stored.
"""

from __future__ import annotations

import copy
import multiprocessing
import signal
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Self

from iotbench.metrics.result import RunResult
from iotbench.metrics.timeseries import SeriesTable

#: A run function: `iotbench.world.run_one`, or one of a test's or a user's own,
#: which may return a plain mapping of metric names to numbers.
RunFn = Callable[..., RunResult | Mapping[str, float | int]]


@dataclass(frozen=True)
class Task:
    key: str
    config: dict[str, Any]
    seed: int
    pcap_path: str | None
    series_path: str | None = None


@dataclass(frozen=True)
class Outcome:
    key: str
    metrics: dict[str, float | int] | None  # None when the run failed
    error: str | None = None  # one line: "ValueError: ..."
    traceback: str | None = None
    wall_time_s: float = 0.0
    series: SeriesTable | None = None  # the run's time series (metrics/timeseries.py)


def load_default_run_fn() -> RunFn:
    """The simulator's `run_one`, imported only when a campaign needs it."""
    from iotbench.world import run_one

    return run_one


def execute(run_fn: RunFn, task: Task) -> Outcome:
    """Run one task; any exception becomes a failed `Outcome` (Ctrl-C still propagates)."""
    start = time.perf_counter()
    try:
        # A copy, so a run function that mutates its config cannot change what is stored.
        # Only runs that write a time series get the keyword: a run function
        # without one (a test's, say) keeps working.
        extra = {"series_path": task.series_path} if task.series_path else {}
        result = run_fn(copy.deepcopy(task.config), task.seed, pcap_path=task.pcap_path, **extra)
        metrics, series = check_result(result)
    except Exception as exc:  # noqa: BLE001 - any failure of a run is reported, not fatal
        return Outcome(
            task.key,
            None,
            f"{type(exc).__name__}: {exc}",
            traceback.format_exc(),
            time.perf_counter() - start,
        )
    return Outcome(task.key, metrics, wall_time_s=time.perf_counter() - start, series=series)


def check_result(result: object) -> tuple[dict[str, float | int], SeriesTable | None]:
    """A run function's metrics and time series, checked: what the store keeps."""
    if isinstance(result, RunResult):
        if result.series is not None and not isinstance(result.series, SeriesTable):
            kind = type(result.series).__name__
            raise TypeError(f"RunResult.series is a {kind}, not a SeriesTable")
        return check_metrics(result.metrics), result.series
    return check_metrics(result), None


def check_metrics(result: object) -> dict[str, float | int]:
    if not isinstance(result, Mapping):
        kind = type(result).__name__
        raise TypeError(f"the run function returned {kind}, not a RunResult or a dict of metrics")
    metrics: dict[str, float | int] = {}
    for name, value in result.items():
        if not isinstance(name, str) or not isinstance(value, (int, float)):
            raise TypeError(f"metric {name!r} = {value!r}: metrics must map names to numbers")
        metrics[name] = int(value) if isinstance(value, bool) else value
    return metrics


def run_serial(run_fn: RunFn, tasks: Iterable[Task]) -> Iterator[Outcome]:
    for task in tasks:
        yield execute(run_fn, task)


def _ignore_sigint() -> None:
    # Ctrl-C goes to the whole process group; the parent alone handles it (and
    # then terminates the workers), so workers print no tracebacks of their own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Pool:
    """A process pool that yields outcomes as runs finish and, when left by an
    exception (Ctrl-C), terminates its workers instead of waiting for them."""

    def __init__(self, run_fn: RunFn, jobs: int) -> None:
        self.run_fn = run_fn
        # spawn: workers start clean, without the parent's threads (progress
        # display) or open DuckDB handle.
        self.executor = ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_ignore_sigint,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.executor.shutdown(wait=True)
            return
        self.executor.shutdown(wait=False, cancel_futures=True)
        _terminate_workers(self.executor)

    def run(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        futures: dict[Future[Outcome], Task] = {
            self.executor.submit(execute, self.run_fn, task): task for task in tasks
        }
        for future in as_completed(futures):
            task = futures[future]
            try:
                yield future.result()
            except BrokenProcessPool:
                yield Outcome(task.key, None, "a worker process died (killed, or out of memory?)")
            except Exception as exc:  # noqa: BLE001 - e.g. a config or result that cannot be pickled
                yield Outcome(
                    task.key, None, f"{type(exc).__name__}: {exc}", traceback.format_exc()
                )


def _terminate_workers(executor: ProcessPoolExecutor) -> None:
    terminate = getattr(executor, "terminate_workers", None)  # Python 3.14+
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        process.terminate()
