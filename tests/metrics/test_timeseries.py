"""A run's series rows: kept column by column, carried beside its metrics."""

from __future__ import annotations

import pickle

from iotbench.metrics.timeseries import NETWORK, RunMetrics, SeriesTable, series_of
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


def test_run_metrics_are_a_dict_that_carries_its_series_through_pickle():
    m = RunMetrics({"a": 1.5}, table())
    assert m == {"a": 1.5}
    again = pickle.loads(pickle.dumps(m))
    assert again == m and again.series == table()
    assert series_of(again) == table()
    assert series_of({"a": 1}) is None


def test_a_run_function_with_series_of_the_wrong_type_fails_its_run():
    bad = RunMetrics({"a": 1}, table())
    bad.series = [("energy_j", 0, 0.0, 0.0, 1)]  # type: ignore[assignment]

    def run_fn(config, seed, pcap_path=None):
        return bad

    outcome = execute(run_fn, Task("k", {}, 1, None))
    assert outcome.metrics is None and "not a SeriesTable" in (outcome.error or "")
    good = execute(
        lambda c, s, pcap_path=None: RunMetrics({"a": 1}, table()), Task("k", {}, 1, None)
    )
    assert good.metrics == {"a": 1} and good.series == table()
