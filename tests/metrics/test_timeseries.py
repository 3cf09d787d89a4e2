"""A run's series rows: kept column by column, carried in its result beside its metrics."""

from __future__ import annotations

import pickle

import pytest

from iotbench.metrics.result import RunCounters, RunFailures, RunResult
from iotbench.metrics.timeseries import NETWORK, SeriesTable
from iotbench.runner.execute import Task, execute


def table() -> SeriesTable:
    t = SeriesTable()
    t.add("energy_j", 2, 10.0, 0.25)
    t.add("link_stress", NETWORK, 3, 4, n=12)
    return t


def test_rows_come_back_in_the_order_they_were_added():
    t = table()
    assert len(t) == 2
    assert list(t) == [("energy_j", 2, 10.0, 0.25, 1), ("link_stress", -1, 3.0, 4.0, 12)]
    assert t == table() and t != SeriesTable()


def result(series: object) -> RunResult:
    return RunResult({"a": 1}, RunCounters(1.0, 10), RunFailures(0), series)  # type: ignore[arg-type]


def test_a_run_result_carries_its_series_through_pickle():
    r = result(table())
    again = pickle.loads(pickle.dumps(r))
    assert again == r and again.series == table() and again.metrics == {"a": 1}


def test_a_run_function_with_series_of_the_wrong_type_fails_its_run():
    bad = result([("energy_j", 0, 0.0, 0.0, 1)])

    def run_fn(config, seed, pcap_path=None):
        return bad

    outcome = execute(run_fn, Task("k", {}, 1, None))
    assert outcome.metrics is None and "not a SeriesTable" in (outcome.error or "")
    good = execute(lambda c, s, pcap_path=None: result(table()), Task("k", {}, 1, None))
    assert good.metrics == {"a": 1} and good.series == table()
    plain = execute(lambda c, s, pcap_path=None: {"a": 2}, Task("k", {}, 1, None))
    assert plain.metrics == {"a": 2} and plain.series is None


def test_rows_added_at_once_are_the_rows_added_one_by_one():
    names, nodes, ys = ["pit_entries", "cs_bytes", "pit_entries"], [3, 3, 7], [2, 40, 0.5]
    at_once, one_by_one = SeriesTable(), SeriesTable()
    at_once.add_rows(names, nodes, 12.5, ys)
    for name, node, y in zip(names, nodes, ys, strict=True):
        one_by_one.add(name, node, 12.5, y)
    assert at_once == one_by_one
    assert list(at_once) == [
        ("pit_entries", 3, 12.5, 2.0, 1),
        ("cs_bytes", 3, 12.5, 40.0, 1),
        ("pit_entries", 7, 12.5, 0.5, 1),
    ]
    with pytest.raises(ValueError, match="2 names, 1 nodes and 2 values"):
        at_once.add_rows(["a", "b"], [1], 0.0, [1.0, 2.0])
    assert len(at_once) == 3  # nothing added from rows that do not match
