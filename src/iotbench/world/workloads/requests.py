"""Request loops: a client asks the server for items, one after another or on a
period, over the scenario's protocol (world/protocols/). The object download
(S1) is one item whose time, from its first packet to the object's arrival, is
the run's headline."""

from __future__ import annotations

import math

from iotbench.apps.requesters import (
    ItemClient,
    PeriodicRequester,
    PoissonRequester,
    SequentialRequester,
)
from iotbench.metrics.items import DELIVERED, Item, ItemLog
from iotbench.metrics.observers import Observers
from iotbench.metrics.result import RunMeasures
from iotbench.metrics.traffic import TrafficMeter
from iotbench.scenarios.settings import required
from iotbench.scenarios.settings_types import RunSettings, WorkloadSettings
from iotbench.sim import Simulator
from iotbench.world.networks import Network
from iotbench.world.protocols import build_client
from iotbench.world.workloads.base import Workload


class SequentialRequests(Workload):
    """`workload.kind = "sequential"`: the next request when the last one has ended."""

    def __init__(
        self,
        sim: Simulator,
        net: Network,
        config: RunSettings,
        items: ItemLog,
        observers: Observers,
        traffic: TrafficMeter,
    ) -> None:
        workload = config.workload
        self.start_s = workload.start_s
        self.planned_items = self._item_count(workload)
        self.client = build_client(sim, net, config)
        self.requester = self._requester(sim, self.client, items, self.planned_items, workload)

    @staticmethod
    def _item_count(workload: WorkloadSettings) -> int:
        return workload.items

    def _requester(
        self,
        sim: Simulator,
        client: ItemClient,
        items: ItemLog,
        count: int,
        workload: WorkloadSettings,
    ) -> SequentialRequester | PeriodicRequester | PoissonRequester:
        return SequentialRequester(sim, client, items, count)

    def start(self) -> None:
        self.requester.start(self.start_s)

    def metrics(self, measures: RunMeasures) -> dict[str, float | int]:
        # A client with metrics of its own (a CoAP client behind DTLS: its handshakes).
        client_metrics = getattr(self.client, "metrics", None)
        return client_metrics() if client_metrics is not None else {}


class PeriodicRequests(SequentialRequests):
    """`workload.kind = "periodic"`: a request every `interval_s`, whatever came back."""

    def _requester(
        self,
        sim: Simulator,
        client: ItemClient,
        items: ItemLog,
        count: int,
        workload: WorkloadSettings,
    ) -> SequentialRequester | PeriodicRequester | PoissonRequester:
        interval_s = required(workload.interval_s, "workload.interval_s")
        return PeriodicRequester(sim, client, items, count, interval_s)


class PoissonRequests(SequentialRequests):
    """`workload.kind = "poisson"`: requests as a Poisson process, `interval_s` apart
    on average (exponential gaps from the run's `workload/arrivals` stream), whatever
    came back: the open-loop arrivals of many independent clients."""

    def _requester(
        self,
        sim: Simulator,
        client: ItemClient,
        items: ItemLog,
        count: int,
        workload: WorkloadSettings,
    ) -> SequentialRequester | PeriodicRequester | PoissonRequester:
        interval_s = required(workload.interval_s, "workload.interval_s")
        return PoissonRequester(sim, client, items, count, interval_s, sim.rng("workload/arrivals"))


class ObjectDownload(SequentialRequests):
    """`workload.kind = "object-download"`: one object; the traffic counts from the
    first packet the client sends for it (a connection that only primes a Fast Open
    cookie before is not part of it) to the object's arrival."""

    windowed_traffic = True

    @staticmethod
    def _item_count(workload: WorkloadSettings) -> int:
        return 1

    def __init__(
        self,
        sim: Simulator,
        net: Network,
        config: RunSettings,
        items: ItemLog,
        observers: Observers,
        traffic: TrafficMeter,
    ) -> None:
        self.items = items
        self.traffic = traffic
        self._item: list[Item] = []
        client_id = net.ids("client")[0]
        items.on_start.append(lambda index: traffic.arm_window(client_id))
        items.on_end.append(self._item.append)
        items.on_end.append(
            lambda item: traffic.close_window(sim.now) if item.status == DELIVERED else None
        )
        super().__init__(sim, net, config, items, observers, traffic)

    def leading_metrics(self) -> dict[str, float | int]:
        item = self._item[0] if self._item else self.items.open.get(0)
        t_first = self.traffic.window_start
        if item is None or item.status != DELIVERED or item.t_end is None or t_first is None:
            return {"object_download_time_s": math.nan}
        return {"object_download_time_s": item.t_end - t_first}
