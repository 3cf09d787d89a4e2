"""What every workload is to the run: built on a network, started, then measured.

`run_one` (world/run.py) knows workloads only through this interface. A
workload is built after the network, with the run's item log (where its items
start and end), its observers (which see every packet) and its traffic meter;
`start` schedules its first events; after the simulation, `leading_metrics`
and `metrics` give what it measured, around the metrics every run has.
"""

from __future__ import annotations

from typing import ClassVar

from mypy_extensions import mypyc_attr

from iotbench.metrics.items import ItemLog
from iotbench.metrics.observers import Observers
from iotbench.metrics.result import RunMeasures
from iotbench.metrics.timeseries import SeriesTable
from iotbench.metrics.traffic import TrafficMeter
from iotbench.scenarios.settings_types import RunSettings
from iotbench.sim import Simulator
from iotbench.world.networks import Network


# Compiled for the publish workload (src/iotbench/compiled.py); the others subclass
# it in Python.
@mypyc_attr(allow_interpreted_subclasses=True)
class Workload:
    """The defaults of the interface; a workload overrides what it measures."""

    #: The traffic meter counts a window from the first item's start to the last
    #: one's end (an object download), not the whole run.
    windowed_traffic: ClassVar[bool] = False

    #: The items the run will start, which the network's per-item impairments
    #: are planned for (Network.follow_items); __init__ sets it.
    planned_items: int

    def __init__(
        self,
        sim: Simulator,
        net: Network,
        config: RunSettings,
        items: ItemLog,
        observers: Observers,
        traffic: TrafficMeter,
    ) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Schedule the workload's first events."""
        raise NotImplementedError

    def leading_metrics(self) -> dict[str, float | int]:
        """Metrics that open the run's row, before the network's (S1's download time)."""
        return {}

    def metrics(self, measures: RunMeasures) -> dict[str, float | int]:
        """The workload's own metrics, given what every run measures."""
        return {}

    def series_table(self) -> SeriesTable | None:
        """The run's time series for the results store, if the workload keeps one."""
        return None

    def unfinished(self) -> bool:
        """Whether work it had planned was left undone when the run ended (beyond
        the items left open, which the item log counts): the run hit its time limit."""
        return False

    def sampling_events(self) -> int:
        """Kernel events that only sampled a time series (not counted as the run's)."""
        return 0
