"""The DuckDB results store: one transaction per run, locking, versioning."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from iotbench.metrics.timeseries import SeriesTable
from iotbench.runner import ResultStore, StoreError
from iotbench.scenarios import expand, load_scenario

EXAMPLE = Path(__file__).parents[1] / "scenarios" / "example.toml"


@pytest.fixture
def runs():
    return expand(load_scenario(EXAMPLE))


def count(store: ResultStore, table: str) -> int:
    return store.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_a_failing_write_leaves_nothing(tmp_path: Path, runs) -> None:
    with ResultStore(tmp_path) as store:
        store.add_run(runs[0], {"a": 1})
        good = ("INSERT INTO metrics VALUES ('k', 's', 'm', 1.0)", [])
        with pytest.raises(duckdb.Error):
            store._transaction([good, ("INSERT INTO no_such_table VALUES (1)", [])])
        assert count(store, "metrics") == 1  # only the first run's metric
        assert count(store, "runs") == 1


def test_adding_a_run_again_replaces_it(tmp_path: Path, runs) -> None:
    with ResultStore(tmp_path) as store:
        store.add_run(runs[0], {"a": 1, "b": 2})
        store.add_run(runs[0], {"a": 3})
        assert count(store, "runs") == 1
        assert count(store, "metrics") == 1
        assert store.runs()[0].metrics == {"a": 3}


def test_series_are_replaced_with_their_run(tmp_path: Path, runs) -> None:
    first, second = SeriesTable(), SeriesTable()
    first.add("energy_j", 0, 1.0, 2.0)
    first.add("energy_j", 0, 2.0, 4.0)
    second.add("goodput_per_s", -1, 1.0, 9.0)
    with ResultStore(tmp_path) as store:
        store.add_run(runs[0], {"a": 1}, series=first)
        store.add_run(runs[1], {"a": 1})  # a run without series
        assert count(store, "series") == 2
        store.add_run(runs[0], {"a": 1}, series=second)
        assert store.series(runs[0].scenario) == {
            runs[0].key: [("goodput_per_s", None, 1.0, 9.0, 1)]
        }


def test_a_file_from_before_the_series_table_reads_as_without_series(tmp_path: Path, runs) -> None:
    with ResultStore(tmp_path) as store:
        store.add_run(runs[0], {"a": 1})
        store.con.execute("DROP TABLE series")
    with ResultStore(tmp_path, read_only=True) as store:
        assert store.series(runs[0].scenario) == {}
        assert store.runs()[0].metrics == {"a": 1}
    with ResultStore(tmp_path) as store:  # opening it for writing adds the table
        assert count(store, "series") == 0


def test_stored_pcaps_and_reading_by_key(tmp_path: Path, runs) -> None:
    with ResultStore(tmp_path) as store:
        store.add_run(runs[0], {"a": 1}, pcap="pcap/x.pcap")
        store.add_run(runs[1], {"a": 2})
        assert store.stored_pcaps([r.key for r in runs]) == {
            runs[0].key: "pcap/x.pcap",
            runs[1].key: None,
        }
        assert [r.key for r in store.runs(keys=[runs[1].key])] == [runs[1].key]
        assert store.runs(scenario="other") == []


def test_results_survive_closing(tmp_path: Path, runs) -> None:
    with ResultStore(tmp_path) as store:
        store.add_run(runs[0], {"a": 1})
    with ResultStore(tmp_path, read_only=True) as store:
        assert len(store.runs()) == 1


def test_read_only_on_missing_results(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results here"):
        ResultStore(tmp_path, read_only=True)


def test_store_in_use_by_another_process(tmp_path: Path) -> None:
    ResultStore(tmp_path).close()
    # Another process holding the file open for writing, as a second `iotbench run` would.
    holder_code = (
        "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('ok', flush=True); "
        "sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", holder_code, str(tmp_path / "results.duckdb")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ok"
        with pytest.raises(StoreError, match="in use by another iotbench process"):
            ResultStore(tmp_path)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_other_schema_version_is_refused(tmp_path: Path) -> None:
    with ResultStore(tmp_path) as store:
        store.con.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="results schema version 0"):
        ResultStore(tmp_path)
