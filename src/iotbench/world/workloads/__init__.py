"""The workloads a scenario can run, by `workload.kind`.

Each is one class with the interface of base.py: request loops and the object
download (requests.py), the publish workload of S4 (publish/), the group
queries of S6 (group_query.py).
"""

from __future__ import annotations

from iotbench.world.workloads.base import Workload
from iotbench.world.workloads.group_query import GroupQueryWorkload
from iotbench.world.workloads.publish import PublishWorkload
from iotbench.world.workloads.requests import (
    ObjectDownload,
    PeriodicRequests,
    PoissonRequests,
    SequentialRequests,
)

WORKLOADS: dict[str, type[Workload]] = {
    "object-download": ObjectDownload,
    "sequential": SequentialRequests,
    "periodic": PeriodicRequests,
    "poisson": PoissonRequests,
    "publish": PublishWorkload,
    "group-query": GroupQueryWorkload,
}

__all__ = ["WORKLOADS", "Workload"]
