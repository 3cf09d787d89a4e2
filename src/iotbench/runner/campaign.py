"""A campaign: the runs of one scenario executed into one output directory.

Runs already in OUT/results.duckdb are skipped, so re-running the same command
after Ctrl-C or a crash executes only what is missing. A run that raises (a
stack's own error fails its run: proto/errors.py) is not stored with the
results: the store records the failure, its traceback and the command that
runs it alone again (`rerun_command`), and the other runs still run.
"""

from __future__ import annotations

import json
import os
import shlex
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from iotbench import terminal
from iotbench.metrics.series import COMPANIONS, companion_path
from iotbench.runner import execute
from iotbench.runner.execute import Outcome, Pool, RunFn, Task, run_serial
from iotbench.runner.store import ResultStore, StoreError
from iotbench.scenarios import Run, Scenario
from iotbench.scenarios.radio_schema import is_radio

EXECUTORS = ("local", "ray")
PCAP_DIR = "pcap"
SERIES_DIR = "series"
ERRORS_LOG = "errors.log"


@dataclass(frozen=True)
class RunResult:
    run: Run
    metrics: dict[str, float | int]
    executed: bool  # False: it was already stored by an earlier invocation
    pcap: str | None = None  # relative to the output directory
    wall_time_s: float | None = None


@dataclass(frozen=True)
class RunFailure:
    run: Run
    error: str
    traceback: str | None = None
    command: str = ""  # runs it alone again (rerun_command)


@dataclass
class CampaignResult:
    out_dir: Path
    results: list[RunResult] = field(default_factory=list)  # finished runs, in run order
    failures: list[RunFailure] = field(default_factory=list)

    @property
    def executed(self) -> int:
        return sum(1 for r in self.results if r.executed)

    @property
    def skipped(self) -> int:
        return sum(1 for r in self.results if not r.executed)


def default_jobs() -> int:
    return os.cpu_count() or 1


def run_campaign(
    scenario: Scenario,
    runs: Sequence[Run],
    out_dir: str | Path,
    *,
    run_fn: RunFn | None = None,
    jobs: int | None = None,
    pcap: bool = False,
    series: bool = False,
    progress: bool = True,
    on_result: Callable[[RunResult], None] | None = None,
    console: Console | None = None,
    executor: str = "local",
    address: str | None = None,
    overrides: Mapping[str, object] | None = None,
    rerun_flags: Sequence[str] = (),
) -> CampaignResult:
    """Execute `runs` (from `expand(scenario, ...)`) and store them in `out_dir`.

    `run_fn(config, seed, pcap_path=None) -> metrics` defaults to
    `iotbench.world.run_one`; it must be importable by name when jobs > 1.
    With `series`, each run of a radio network also writes
    OUT/series/<run>.csv (per-node energy and MAC counters over time) and
    <run>.links.csv and <run>.frames.csv (metrics/series.py), named by
    `Run.file_stem` as the pcaps are.
    `on_result` sees every finished run, already stored ones first.
    `executor`: "local" (this process, or a pool of `jobs` processes) or
    "ray" (Ray tasks on the cluster at `address`, or on a Ray instance of
    this machine; runner/ray_pool.py). `overrides`: the `--set`s `runs` were
    expanded with, and `rerun_flags` further options of the command (such as
    `--check-books`), for the command a failed run is recorded with.
    """
    if executor not in EXECUTORS:
        raise StoreError(f"executor {executor!r} is not one of {', '.join(EXECUTORS)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    console = console or terminal.console(stderr=True)
    result = CampaignResult(out)
    with ResultStore(out) as store:
        _refuse_conflicts(store, runs)
        store.save_scenario(scenario)
        pending = _report_stored(store, runs, out, pcap, series, result, on_result)
        if pcap:
            _remove_stale_temp_files(out / PCAP_DIR)
        if series:
            _remove_stale_temp_files(out / SERIES_DIR)
        by_key = {run.key: run for run in pending}
        # Absolute paths: a worker elsewhere (Ray) has its own working directory.
        tasks = [_task(run, out.resolve(), pcap, series) for run in pending]
        # The folders the runs write into (made by _task), which every worker must reach.
        outputs = sorted({Path(p).parent for t in tasks for p in (t.pcap_path, t.series_path) if p})
        with _progress(
            console, progress, scenario.name, len(runs), len(runs) - len(pending)
        ) as bar:
            outcomes = _outcomes(run_fn, jobs, tasks, executor, address, outputs)
            for outcome in outcomes:
                run = by_key[outcome.key]
                command = rerun_command(scenario, run, out, overrides or {}, rerun_flags)
                finished = _finish(store, run, outcome, out, result, command)
                if finished is not None and on_result is not None:
                    on_result(finished)
                if finished is None and progress:
                    bar.console.print(
                        f"[red]run failed[/red] {run.label()}: {outcome.error}",
                        highlight=False,
                        soft_wrap=True,
                    )
                bar.advance(bar.task_ids[0])
    order = {run.key: i for i, run in enumerate(runs)}
    result.results.sort(key=lambda r: order[r.run.key])
    result.failures.sort(key=lambda f: order[f.run.key])
    write_errors_log(out, result.failures)
    return result


def _refuse_conflicts(store: ResultStore, runs: Sequence[Run]) -> None:
    conflicts = store.conflicts(runs)
    if conflicts:
        run, _ = conflicts[0]
        raise StoreError(
            f"{store.path} already holds {len(conflicts)} of these runs made with a different "
            f"configuration (e.g. {run.label()}); write to another --out directory, "
            "or delete that one to start over"
        )


def _report_stored(
    store: ResultStore,
    runs: Sequence[Run],
    out: Path,
    pcap: bool,
    series: bool,
    result: CampaignResult,
    on_result: Callable[[RunResult], None] | None,
) -> list[Run]:
    """Record runs already stored as finished; return the runs still to execute.

    With --pcap (--series), a stored run whose pcap (series) file is missing
    runs again (it is deterministic, so only the file is new).
    """
    pcaps = store.stored_pcaps(run.key for run in runs)
    done = {key for key, path in pcaps.items() if not pcap or (path and (out / path).is_file())}
    if series:
        missing = {
            run.key
            for run in runs
            if is_radio(run.config["network"]) and not _series_path(out, run).is_file()
        }
        done -= missing
    stored = {s.key: s for s in store.runs(keys=done)} if done else {}
    pending = []
    for run in runs:
        if run.key in stored:
            finished = RunResult(run, stored[run.key].metrics, False, stored[run.key].pcap)
            result.results.append(finished)
            if on_result is not None:
                on_result(finished)
        else:
            pending.append(run)
    return pending


def _series_path(out: Path, run: Run) -> Path:
    return out / SERIES_DIR / f"{run.file_stem()}.csv"


def _task(run: Run, out: Path, pcap: bool, series: bool) -> Task:
    # The run writes a temporary name; the parent renames it once the run succeeded.
    temp = str(out / PCAP_DIR / f".{run.key}.pcap.tmp") if pcap else None
    if temp:
        (out / PCAP_DIR).mkdir(exist_ok=True)
    series_temp = None
    if series and is_radio(run.config["network"]):
        (out / SERIES_DIR).mkdir(exist_ok=True)
        series_temp = str(out / SERIES_DIR / f".{run.key}.csv.tmp")
    return Task(run.key, run.config, run.seed, temp, series_temp)


def _outcomes(
    run_fn: RunFn | None,
    jobs: int | None,
    tasks: list[Task],
    executor: str = "local",
    address: str | None = None,
    outputs: Sequence[Path] = (),
) -> Iterator[Outcome]:
    if not tasks:
        return
    # Looked up at call time so tests can replace the default in one place.
    run_fn = run_fn or execute.load_default_run_fn()
    if executor == "ray":
        from iotbench.runner.ray_pool import RayPool

        with RayPool(run_fn, address=address, jobs=jobs, writable=outputs) as pool:
            yield from pool.run(tasks)
        return
    workers = min(jobs or default_jobs(), len(tasks))
    if workers <= 1:
        yield from run_serial(run_fn, tasks)
        return
    with Pool(run_fn, workers) as pool:
        yield from pool.run(tasks)


def _finish(
    store: ResultStore,
    run: Run,
    outcome: Outcome,
    out: Path,
    result: CampaignResult,
    command: str,
) -> RunResult | None:
    temp = out / PCAP_DIR / f".{run.key}.pcap.tmp"
    series_temp = out / SERIES_DIR / f".{run.key}.csv.tmp"
    if outcome.metrics is None:
        temp.unlink(missing_ok=True)
        series_temp.unlink(missing_ok=True)
        for part in COMPANIONS:
            Path(companion_path(str(series_temp), part)).unlink(missing_ok=True)
        failure = RunFailure(run, outcome.error or "failed", outcome.traceback, command)
        store.add_failure(run, failure.error, failure.traceback, command)
        result.failures.append(failure)
        return None
    pcap = None
    if temp.is_file():
        # Rename before the commit: a crash in between leaves a pcap of an
        # unstored run, which the re-run simply overwrites.
        pcap = f"{PCAP_DIR}/{run.file_stem()}.pcap"
        os.replace(temp, out / pcap)
    if series_temp.is_file():
        final = _series_path(out, run)
        for part in COMPANIONS:
            companion = companion_path(str(series_temp), part)
            if os.path.exists(companion):
                os.replace(companion, companion_path(str(final), part))
        os.replace(series_temp, final)
    store.add_run(run, outcome.metrics, pcap, outcome.wall_time_s, outcome.series)
    finished = RunResult(run, outcome.metrics, True, pcap, outcome.wall_time_s)
    result.results.append(finished)
    return finished


def _remove_stale_temp_files(folder: Path) -> None:
    # Safe: we hold the store's write lock, so no other campaign writes here.
    if folder.is_dir():
        for stale in folder.glob(".*.tmp"):
            stale.unlink(missing_ok=True)


def _progress(console: Console, enabled: bool, name: str, total: int, done: int) -> Progress:
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not enabled,
        # Leave stdout alone: with --json it carries the results, even when
        # stderr is a terminal and stdout a pipe.
        redirect_stdout=False,
    )
    bar.add_task(name, total=total, completed=done)
    return bar


def write_errors_log(out: Path, failures: list[RunFailure]) -> None:
    """OUT/errors.log: the tracebacks of these failures; none: no file."""
    path = out / ERRORS_LOG
    if not failures:
        path.unlink(missing_ok=True)
        return
    parts = [
        f"== {f.run.label()} (seed {f.run.seed})\nrun it again: {f.command}\n"
        f"{f.traceback or f.error}\n"
        for f in failures
    ]
    path.write_text("\n".join(parts), encoding="utf-8")


def rerun_command(
    scenario: Scenario,
    run: Run,
    out: Path,
    overrides: Mapping[str, object] | None = None,
    flags: Sequence[str] = (),
) -> str:
    """The command that runs `run` alone again into the same results: the scenario,
    the `--set`s, its point (a `--filter` per axis, as `--filter` matches values),
    its repetition and the command's other `flags`."""
    words = ["iotbench", "run", scenario.source.removeprefix("builtin:")]
    for key, value in (overrides or {}).items():
        words += ["--set", f"{key}={toml_value(value)}"]
    for axis, value in run.params.items():
        shown = ("true" if value else "false") if isinstance(value, bool) else str(value)
        words += ["--filter", f"{axis}={shown}"]
    words += ["--rep", str(run.repetition), *flags, "--jobs", "1", "--out", str(out)]
    return shlex.join(words)


def toml_value(value: object) -> str:
    """`value` as `--set` reads it back: TOML, where a word that is no TOML value is a
    string (so `type=non` stays as short as a user writes it)."""
    if isinstance(value, str):
        try:
            tomllib.loads(f"v = {value}")
        except tomllib.TOMLDecodeError:
            if value and all(c.isalnum() or c in "-_./:" for c in value):
                return value  # a bare word
    return _toml(value)


def _toml(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {value!r}")
