"""Workload generators: when items start.

A requester decides *when* items start; a protocol client (anything with
`start(item, done, handed_over)`) decides how an item is carried out and
calls `done(item, delivered, payload_bytes)` once when it completes or gives
up. A publish-subscribe client also calls `handed_over(item)` when its part
is over (the message left the publisher) while delivery is still to be
seen at the subscriber: a sequential workload moves on at that moment, as
S3 defines it.
"""

from __future__ import annotations

from collections.abc import Callable
from random import Random
from typing import Protocol

from iotbench.metrics.items import DELIVERED, GIVEN_UP, Item, ItemLog
from iotbench.sim import Simulator

Done = Callable[[Item, bool, int], None]
HandedOver = Callable[[Item], None]


class ItemClient(Protocol):
    # A publish-subscribe client also has `hands_over = True`: the workload moves on
    # when an item is handed over, not when it is delivered (which it learns from
    # elsewhere). Other clients need not have it (read with getattr, False).

    def start(self, item: Item, done: Done, handed_over: HandedOver) -> None: ...


class _Requester:
    def __init__(self, sim: Simulator, client: ItemClient, items: ItemLog, count: int) -> None:
        self.sim = sim
        self.client = client
        self.items = items
        self.count = count
        self.finished = 0
        self.handed = 0
        self.hands_over = getattr(client, "hands_over", False)
        self.on_all_done: Callable[[], None] = sim.stop

    def _launch(self) -> None:
        item = self.items.start(self.sim.now)
        self.client.start(item, self._done, self._handed_over)

    def _done(self, item: Item, delivered: bool, payload_bytes: int) -> None:
        if item.status is not None:
            return
        self.items.finish(item, self.sim.now, DELIVERED if delivered else GIVEN_UP, payload_bytes)
        self.finished += 1
        if not self.hands_over:
            self._next_after(item)
        self._check_all_done()

    def _handed_over(self, item: Item) -> None:
        if item.t_handed_over is not None:
            return
        item.t_handed_over = self.sim.now
        self.handed += 1
        self._next_after(item)
        self._check_all_done()

    def _check_all_done(self) -> None:
        # A publisher's part of the last item may end after its delivery.
        if self.finished == self.count and (not self.hands_over or self.handed == self.count):
            self.on_all_done()

    def _next_after(self, item: Item) -> None:
        pass


class SequentialRequester(_Requester):
    """Starts the next item as soon as the previous one completed, was given up
    or was handed over."""

    _next_scheduled = False

    def _launch(self) -> None:
        self._next_scheduled = False
        super()._launch()

    def start(self, at: float = 0.0) -> None:
        self.sim.at(at, self._launch)

    def _next_after(self, item: Item) -> None:
        # Only once per item (done and handed_over may both come), and only
        # for the newest item.
        started = self.items.started
        if item.index == started - 1 and started < self.count:
            # At the same instant, but after the completing event has finished,
            # so a protocol never sees a new request inside its own callback.
            if not self._next_scheduled:
                self._next_scheduled = True
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


class PoissonRequester(_Requester):
    """Starts items as a Poisson process: the gaps between starts, the first one's
    after `at` too, are exponential with mean `interval_s`, drawn from `rng`;
    open loop, as PeriodicRequester (a start never waits for an answer)."""

    def __init__(
        self,
        sim: Simulator,
        client: ItemClient,
        items: ItemLog,
        count: int,
        interval_s: float,
        rng: Random,
    ) -> None:
        super().__init__(sim, client, items, count)
        self.rate_per_s = 1.0 / interval_s
        self.rng = rng

    def start(self, at: float = 0.0) -> None:
        if self.count:
            self.sim.at(at + self.rng.expovariate(self.rate_per_s), self._arrive)

    def _arrive(self) -> None:
        self._launch()
        if self.items.started < self.count:
            self.sim.schedule(self.rng.expovariate(self.rate_per_s), self._arrive)
