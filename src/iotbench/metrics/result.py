"""What one run returns: its metrics, time series, counters and failures, typed.

`run_one` (world/run.py) builds a `RunResult` from typed parts: what the kernel
counted (`RunCounters`), the work the run left undone (`RunFailures`), its time
series (metrics/timeseries.py) and its metrics, the row the results store
keeps. Code that needs a count reads the typed field (`result.failures.
hit_time_limit`, `result.counters.sim_events`); the row is for storing,
comparing and printing, and carries the same numbers under the names
docs/metrics.md defines.

A workload's own metrics are computed from `RunMeasures`, what every run
measured (items, bytes by kind, MAC retries), as typed values: no metric is
read back out of another one's dict.

The runner accepts a `RunResult` or, from a run function of its own (a test's,
a user's `--run-fn`), a plain mapping of metric names to numbers
(runner/execute.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from iotbench.metrics.derive import ItemSummary
from iotbench.metrics.timeseries import SeriesTable

Row = dict[str, float | int]


@dataclass(frozen=True)
class RunCounters:
    """What the event kernel counted."""

    sim_time_s: float  # virtual time at the end of the run
    #: Events the run processed, a time series' sampling events left out, so that
    #: the same run with or without a series counts the same.
    sim_events: int


@dataclass(frozen=True)
class RunFailures:
    """Work the run left undone when it ended (its time limit came first)."""

    items_unfinished: int  # items neither delivered nor given up
    #: Work the workload had planned and never began (S6's queries, a sweep's steps).
    workload_unfinished: bool = False

    @property
    def hit_time_limit(self) -> bool:
        return self.items_unfinished > 0 or self.workload_unfinished


@dataclass(frozen=True)
class RunMeasures:
    """What every run measured, for a workload's own metrics (Workload.metrics)."""

    items: ItemSummary
    #: Bytes on the wire sorted by kind (net/packet.py): routing and management
    #: (control) and the rest after acknowledgments (data). Only radio networks
    #: sort their traffic; elsewhere control is 0 and data is every byte.
    bytes_control: int
    bytes_data: int
    mac_retries: int  # every MAC's retransmissions; 0 without a radio network


@dataclass(frozen=True)
class RunResult:
    """One run's outcome (see the module doc)."""

    metrics: Row
    counters: RunCounters
    failures: RunFailures
    series: SeriesTable | None = None

    @classmethod
    def assemble(
        cls,
        sections: list[Row],
        counters: RunCounters,
        failures: RunFailures,
        series: SeriesTable | None = None,
    ) -> RunResult:
        """The row from its sections in their order, then the counters and the
        time limit (the store's last columns). A later section may give a name
        an earlier one had (S4's `delivery_ratio` over every item begun): the
        name keeps its first place, the later value wins."""
        row: Row = {}
        for section in sections:
            row.update(section)
        row["sim_time_s"] = counters.sim_time_s
        row["sim_events"] = counters.sim_events
        row["hit_time_limit"] = int(failures.hit_time_limit)
        return cls(row, counters, failures, series)
