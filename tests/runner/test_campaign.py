"""The runner: storing, resuming, failures, interruption, process pool, pcap files."""

from __future__ import annotations

import math
import shlex
from pathlib import Path

import pytest

from iotbench.metrics.result import RunCounters, RunFailures, RunResult
from iotbench.metrics.timeseries import NETWORK, SeriesTable
from iotbench.runner import ResultStore, StoreError, run_campaign
from iotbench.runner.campaign import rerun_command
from iotbench.scenarios import expand, load_scenario

EXAMPLE = Path(__file__).parents[1] / "scenarios" / "example.toml"


def fake_run(config: dict, seed: int, pcap_path: str | None = None) -> dict[str, float | int]:
    """Deterministic metrics from config and seed; stands in for the simulator."""
    size = config["workload"]["object_size_bytes"]
    con = config["protocol"]["coap"]["type"] == "con"
    if pcap_path:
        Path(pcap_path).write_bytes(b"pcap" + seed.to_bytes(8, "big"))
    return {
        "time_s": size / 1000 + (seed % 1000) / 1e6 + (0.5 if con else 0.0),
        "bytes": size + (80 if con else 40),
        "packets": 2 if con else 1,
        "unmeasured": math.nan,
    }


def failing_for_size_100(config: dict, seed: int, pcap_path: str | None = None) -> dict:
    if config["workload"]["object_size_bytes"] == 100:
        raise ValueError("boom at 100")
    return fake_run(config, seed, pcap_path)


class StopAfter:
    """Finishes `n` runs, then raises `exc` (an interruption or a crash)."""

    def __init__(self, n: int, exc: BaseException) -> None:
        self.n = n
        self.exc = exc
        self.calls = 0

    def __call__(self, config: dict, seed: int, pcap_path: str | None = None) -> dict:
        self.calls += 1
        if self.calls > self.n:
            raise self.exc
        return fake_run(config, seed, pcap_path)


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, config: dict, seed: int, pcap_path: str | None = None) -> dict:
        self.calls += 1
        return fake_run(config, seed, pcap_path)


@pytest.fixture
def scenario():
    return load_scenario(EXAMPLE)


def stored(out: Path) -> list[tuple]:
    with ResultStore(out, read_only=True) as store:
        return sorted(
            (r.key, r.scenario, str(r.params), r.repetition, r.seed, r.config_hash, str(r.metrics))
            for r in store.runs()
        )


def test_runs_are_stored_and_resumed(scenario, tmp_path: Path) -> None:
    runs = expand(scenario)
    first = Counting()
    result = run_campaign(scenario, runs, tmp_path, run_fn=first, jobs=1, progress=False)
    assert (result.executed, result.skipped, result.failures) == (12, 0, [])
    assert first.calls == 12
    assert [r.run.key for r in result.results] == [r.key for r in runs]  # run order
    assert len(stored(tmp_path)) == 12

    second = Counting()
    again = run_campaign(scenario, runs, tmp_path, run_fn=second, jobs=1, progress=False)
    assert second.calls == 0
    assert (again.executed, again.skipped) == (0, 12)
    assert [r.metrics["bytes"] for r in again.results] == [
        r.metrics["bytes"] for r in result.results
    ]


def test_stored_row_contents(scenario, tmp_path: Path) -> None:
    runs = expand(scenario, filters={"variant": ["con"], "size": ["10"]}, reps=1)
    run_campaign(scenario, runs, tmp_path, run_fn=fake_run, jobs=1, progress=False)
    with ResultStore(tmp_path, read_only=True) as store:
        row = store.con.execute(
            "SELECT scenario, params, repetition, seed, config_hash, config->>'$.workload.kind', "
            "metrics->>'$.bytes', metrics->'$.unmeasured', iotbench_version FROM runs"
        ).fetchone()
        assert row[:5] == (
            "example",
            '{"variant":"con","size":10}',
            0,
            runs[0].seed,
            runs[0].config_hash,
        )
        assert row[5:8] == ("object-download", "90", "null")
        long = dict(store.con.execute("SELECT metric, value FROM metrics").fetchall())
        assert long["bytes"] == 90.0 and math.isnan(long["unmeasured"])
        [saved] = store.scenarios()
        assert saved.name == "example"
        assert saved.toml == EXAMPLE.read_text()
        assert saved.axes[1] == {
            "name": "size",
            "key": "workload.object_size_bytes",
            "values": [10, 100, 1000],
        }
        assert saved.report["plots"][0]["y"] == "time_s"
        [got] = store.runs()
        assert got.metrics["bytes"] == 90 and math.isnan(got.metrics["unmeasured"])


def test_failed_runs_are_reported_not_stored(scenario, tmp_path: Path) -> None:
    runs = expand(scenario)
    result = run_campaign(
        scenario, runs, tmp_path, run_fn=failing_for_size_100, jobs=1, progress=False
    )
    assert result.executed == 8
    assert len(result.failures) == 4
    failure = result.failures[0]
    assert failure.run.params == {"variant": "con", "size": 100}
    assert failure.error == "ValueError: boom at 100"
    assert "Traceback" in failure.traceback
    assert len(stored(tmp_path)) == 8
    assert "boom at 100" in (tmp_path / "errors.log").read_text()
    # The store records each failure: the error, its traceback and the command that
    # runs it alone again.
    with ResultStore(tmp_path, read_only=True) as store:
        recorded = store.failures()
    assert [f.key for f in recorded] == [f.run.key for f in result.failures]
    first = recorded[0]
    assert (first.params, first.repetition, first.seed) == (
        failure.run.params,
        failure.run.repetition,
        failure.run.seed,
    )
    assert first.error == "ValueError: boom at 100" and "Traceback" in first.traceback
    assert (
        first.command
        == failure.command
        == (
            f"iotbench run {scenario.source} --filter variant=con --filter size=100 "
            f"--rep 0 --jobs 1 --out {tmp_path}"
        )
    )
    assert f"run it again: {first.command}" in (tmp_path / "errors.log").read_text()

    # The re-run executes only the failed ones, and a clean run removes the log and
    # the records.
    counting = Counting()
    again = run_campaign(scenario, runs, tmp_path, run_fn=counting, jobs=1, progress=False)
    assert counting.calls == 4 and again.failures == []
    assert not (tmp_path / "errors.log").exists()
    with ResultStore(tmp_path, read_only=True) as store:
        assert store.failures() == []


def test_a_failed_runs_command_names_its_sets_point_and_repetition(scenario, tmp_path) -> None:
    (run,) = [r for r in expand(scenario, {"size": [10]}, reps=3) if r.repetition == 2][:1]
    command = rerun_command(
        scenario, run, tmp_path, {"workload.items": 5, "protocol.coap.type": "non"}
    )
    assert shlex.split(command) == [
        "iotbench", "run", scenario.source,
        "--set", "workload.items=5", "--set", "protocol.coap.type=non",
        "--filter", f"variant={run.params['variant']}", "--filter", "size=10",
        "--rep", "2", "--jobs", "1", "--out", str(tmp_path),
    ]  # fmt: skip


def test_crash_after_n_runs_keeps_finished_ones(scenario, tmp_path: Path) -> None:
    runs = expand(scenario)
    crashing = StopAfter(5, RuntimeError("simulator crashed"))
    result = run_campaign(scenario, runs, tmp_path, run_fn=crashing, jobs=1, progress=False)
    assert result.executed == 5 and len(result.failures) == 7
    counting = Counting()
    run_campaign(scenario, runs, tmp_path, run_fn=counting, jobs=1, progress=False)
    assert counting.calls == 7
    assert len(stored(tmp_path)) == 12


def test_ctrl_c_loses_no_finished_run(scenario, tmp_path: Path) -> None:
    runs = expand(scenario)
    with pytest.raises(KeyboardInterrupt):
        run_campaign(
            scenario,
            runs,
            tmp_path,
            run_fn=StopAfter(3, KeyboardInterrupt()),
            jobs=1,
            progress=False,
        )
    assert len(stored(tmp_path)) == 3
    counting = Counting()
    result = run_campaign(scenario, runs, tmp_path, run_fn=counting, jobs=1, progress=False)
    assert counting.calls == 9 and result.skipped == 3
    assert len(stored(tmp_path)) == 12


def test_jobs_2_stores_the_same_results_as_jobs_1(scenario, tmp_path: Path) -> None:
    runs = expand(scenario)
    run_campaign(scenario, runs, tmp_path / "serial", run_fn=fake_run, jobs=1, progress=False)
    pooled = run_campaign(
        scenario, runs, tmp_path / "pool", run_fn=fake_run, jobs=2, progress=False
    )
    assert pooled.executed == 12
    assert [r.run.key for r in pooled.results] == [r.key for r in runs]
    assert stored(tmp_path / "serial") == stored(tmp_path / "pool")


def test_failures_in_worker_processes(scenario, tmp_path: Path) -> None:
    runs = expand(scenario)
    result = run_campaign(
        scenario, runs, tmp_path, run_fn=failing_for_size_100, jobs=2, progress=False
    )
    assert result.executed == 8 and len(result.failures) == 4
    assert {f.error for f in result.failures} == {"ValueError: boom at 100"}


def test_non_numeric_metrics_fail_the_run(scenario, tmp_path: Path) -> None:
    runs = expand(scenario, reps=1, filters={"variant": ["con"], "size": ["10"]})
    result = run_campaign(
        scenario,
        runs,
        tmp_path,
        run_fn=lambda c, s, pcap_path=None: {"x": "a"},
        jobs=1,
        progress=False,
    )
    assert "metrics must map names to numbers" in result.failures[0].error


def test_on_result_sees_stored_and_new_runs(scenario, tmp_path: Path) -> None:
    runs = expand(scenario)
    run_campaign(scenario, runs[:5], tmp_path, run_fn=fake_run, jobs=1, progress=False)
    seen = []
    run_campaign(
        scenario, runs, tmp_path, run_fn=fake_run, jobs=1, progress=False, on_result=seen.append
    )
    assert [r.executed for r in seen] == [False] * 5 + [True] * 7
    assert sorted(r.run.key for r in seen) == sorted(r.key for r in runs)


def test_different_config_in_same_out_is_refused(scenario, tmp_path: Path) -> None:
    run_campaign(scenario, expand(scenario), tmp_path, run_fn=fake_run, jobs=1, progress=False)
    changed = expand(scenario, overrides={"workload.items": 3})
    with pytest.raises(
        StoreError, match="already holds 12 of these runs made with a different configuration"
    ):
        run_campaign(scenario, changed, tmp_path, run_fn=fake_run, jobs=1, progress=False)
    # More repetitions of the same config are fine: only the new ones run.
    counting = Counting()
    run_campaign(
        scenario, expand(scenario, reps=3), tmp_path, run_fn=counting, jobs=1, progress=False
    )
    assert counting.calls == 6


def test_pcap_files(scenario, tmp_path: Path) -> None:
    runs = expand(scenario, reps=1)
    result = run_campaign(
        scenario, runs, tmp_path, run_fn=fake_run, jobs=2, pcap=True, progress=False
    )
    pcap_dir = tmp_path / "pcap"
    names = sorted(f"{r.file_stem()}.pcap" for r in runs)
    assert sorted(p.name for p in pcap_dir.iterdir()) == names
    first = runs[0]
    # Named so that a person finds a run: scenario, axis values, repetition, key.
    assert first.file_stem() == f"example_variant=con_size=10_rep0_{first.key}"
    path = pcap_dir / f"{first.file_stem()}.pcap"
    assert path.read_bytes() == b"pcap" + first.seed.to_bytes(8, "big")
    assert result.results[0].pcap == f"pcap/{first.file_stem()}.pcap"

    # Stored runs whose pcap is missing run again when --pcap asks for it.
    path.unlink()
    counting = Counting()
    again = run_campaign(
        scenario, runs, tmp_path, run_fn=counting, jobs=1, pcap=True, progress=False
    )
    assert counting.calls == 1 and again.skipped == 5
    assert path.is_file()
    assert len(stored(tmp_path)) == 6  # replaced, not duplicated


def test_failed_run_leaves_no_pcap(scenario, tmp_path: Path) -> None:
    runs = expand(scenario, reps=1)
    run_campaign(
        scenario, runs, tmp_path, run_fn=failing_for_size_100, jobs=1, pcap=True, progress=False
    )
    assert len(list((tmp_path / "pcap").iterdir())) == 4


def run_with_series(config: dict, seed: int, pcap_path: str | None = None) -> RunResult:
    """fake_run's metrics with a few series points, as a publish run returns them."""
    table = SeriesTable()
    size = config["workload"]["object_size_bytes"]
    for t in (1.0, 2.0):
        table.add("goodput_per_s", NETWORK, t, size / t)
        table.add("energy_j", 3, t, 0.5 * t)
    table.add("link_stress", NETWORK, 2, 3, 7)
    table.add("tta_cdf", NETWORK, math.nan, 0.5)
    metrics = dict(fake_run(config, seed, pcap_path))
    return RunResult(metrics, RunCounters(2.0, 100), RunFailures(0), table)


def test_series_are_stored_with_their_run_from_workers_too(scenario, tmp_path: Path) -> None:
    runs = expand(scenario, reps=1, filters={"variant": ["con"]})
    for jobs, out in ((1, tmp_path / "serial"), (2, tmp_path / "pool")):
        run_campaign(scenario, runs, out, run_fn=run_with_series, jobs=jobs, progress=False)
        with ResultStore(out, read_only=True) as store:
            points = store.series(scenario.name)
            assert sorted(points) == sorted(r.key for r in runs)
            size = runs[0].config["workload"]["object_size_bytes"]
            assert points[runs[0].key] == [
                ("goodput_per_s", None, 1.0, size / 1.0, 1),
                ("energy_j", 3, 1.0, 0.5, 1),
                ("goodput_per_s", None, 2.0, size / 2.0, 1),
                ("energy_j", 3, 2.0, 1.0, 1),
                ("link_stress", None, 2.0, 3.0, 7),
                ("tta_cdf", None, None, 0.5, 1),  # NaN is stored as NULL
            ]
            just = store.series(scenario.name, ["energy_j"])
            assert {p[0] for pts in just.values() for p in pts} == {"energy_j"}
            # The run's metrics are stored as any run's.
            assert store.runs(keys=[runs[0].key])[0].metrics["packets"] == 2
