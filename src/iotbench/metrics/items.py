"""Application data items: when each started and how it ended.

An item is one unit of application work (a request and its response, a
published reading, an object download). Applications record items here as it
happens; item metrics are derived from these records only.

The log keeps only the items still open. A finished item leaves behind what
the item metrics need (`ItemStats`): counts, sums, the latest end, and its
latency in a compact array (8 bytes per delivered item, which percentiles
need exactly), so a run's memory does not grow with its length beyond that.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Final

DELIVERED: Final = "delivered"
GIVEN_UP: Final = "given-up"


class Item:
    __slots__ = (
        "attempts",
        "index",
        "payload_bytes",
        "status",
        "t_end",
        "t_handed_over",
        "t_start",
    )

    def __init__(self, index: int, t_start: float) -> None:
        self.index = index
        self.t_start = t_start
        self.t_end: float | None = None
        self.status: str | None = None
        self.payload_bytes = 0
        self.attempts = 1
        # Publish-subscribe: when the publisher was done with it (see requesters.py).
        self.t_handed_over: float | None = None

    @property
    def latency_s(self) -> float | None:
        return None if self.t_end is None else self.t_end - self.t_start


class ItemStats:
    """What finished items leave behind for the item metrics."""

    __slots__ = (
        "delivered",
        "first_start",
        "given_up",
        "last_delivered_end",
        "last_end",
        "latencies",
        "payload_bytes",
        "started",
    )

    def __init__(self) -> None:
        self.started = 0
        self.first_start: float | None = None
        self.delivered = 0
        self.given_up = 0
        self.payload_bytes = 0  # of delivered items
        self.last_end: float | None = None  # of any finished item
        self.last_delivered_end: float | None = None
        self.latencies = array("d")  # of delivered items, in order of completion


class ItemLog:
    def __init__(self) -> None:
        self.open: dict[int, Item] = {}
        self.stats = ItemStats()
        # Called first with the index of every item that starts: what the network
        # does then (Network.follow_items: an outage, a redraw), before the item's
        # first packet and before anything of the workload's.
        self.network_on_start: list[Callable[[int], None]] = []
        # Called next with the index of every item that starts.
        self.on_start: list[Callable[[int], None]] = []
        # Called with every item when it finishes (delivered or given up).
        self.on_end: list[Callable[[Item], None]] = []

    @property
    def started(self) -> int:
        return self.stats.started

    def start(self, now: float) -> Item:
        stats = self.stats
        item = Item(stats.started, now)
        if stats.first_start is None:
            stats.first_start = now
        stats.started += 1
        self.open[item.index] = item
        for listener in self.network_on_start:
            listener(item.index)
        for listener in self.on_start:
            listener(item.index)
        return item

    def finish(self, item: Item, now: float, status: str, payload_bytes: int = 0) -> None:
        if item.status is not None:
            return  # first outcome wins (a late response to a given-up item is not a delivery)
        item.t_end = now
        item.status = status
        item.payload_bytes = payload_bytes
        self.open.pop(item.index, None)
        stats = self.stats
        if stats.last_end is None or now > stats.last_end:
            stats.last_end = now
        if status == DELIVERED:
            stats.delivered += 1
            stats.payload_bytes += payload_bytes
            stats.latencies.append(now - item.t_start)
            if stats.last_delivered_end is None or now > stats.last_delivered_end:
                stats.last_delivered_end = now
        else:
            stats.given_up += 1
        for listener in self.on_end:
            listener(item)

    def close_undelivered(self) -> None:
        """At the end of a run: an item handed over but never delivered was lost
        after it left the publisher (its end is the hand-over)."""
        for item in sorted(self.open.values(), key=lambda it: it.index):
            if item.status is None and item.t_handed_over is not None:
                self.finish(item, item.t_handed_over, GIVEN_UP)
