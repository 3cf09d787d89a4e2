"""Workload generators for request-response protocols.

A requester decides *when* items start; a protocol client (anything with
`start(item, done)`) decides how an item is carried out and calls
`done(item, delivered, payload_bytes)` once when it completes or gives up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from iotbench.metrics.items import DELIVERED, GIVEN_UP, Item, ItemLog
from iotbench.sim import Simulator

Done = Callable[[Item, bool, int], None]


class ItemClient(Protocol):
    def start(self, item: Item, done: Done) -> None: ...


class _Requester:
    def __init__(self, sim: Simulator, client: ItemClient, items: ItemLog, count: int) -> None:
        self.sim = sim
        self.client = client
        self.items = items
        self.count = count
        self.finished = 0
        self.on_all_done: Callable[[], None] = sim.stop

    def _launch(self) -> None:
        item = self.items.start(self.sim.now)
        self.client.start(item, self._done)

    def _done(self, item: Item, delivered: bool, payload_bytes: int) -> None:
        if item.status is not None:
            return
        self.items.finish(item, self.sim.now, DELIVERED if delivered else GIVEN_UP, payload_bytes)
        self.finished += 1
        self._after_done()
        if self.finished == self.count:
            self.on_all_done()

    def _after_done(self) -> None:
        pass


class SequentialRequester(_Requester):
    """Starts the next item as soon as the previous one completed or was given up."""

    def start(self, at: float = 0.0) -> None:
        self.sim.at(at, self._launch)

    def _after_done(self) -> None:
        if len(self.items.items) < self.count:
            # At the same instant, but after the completing event has finished,
            # so a protocol never sees a new request inside its own callback.
            self.sim.call_soon(self._launch)


class PeriodicRequester(_Requester):
    """Starts an item every `interval_s`, whether or not earlier ones completed."""

    def __init__(
        self, sim: Simulator, client: ItemClient, items: ItemLog, count: int, interval_s: float
    ) -> None:
        super().__init__(sim, client, items, count)
        self.interval_s = interval_s

    def start(self, at: float = 0.0) -> None:
        for i in range(self.count):
            self.sim.at(at + i * self.interval_s, self._launch)
