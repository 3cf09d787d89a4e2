"""Application data items: when each started and how it ended.

An item is one unit of application work (a request and its response, a
published reading, an object download). Applications record items here as it
happens; item metrics are derived from these records only.
"""

from __future__ import annotations

from collections.abc import Callable

DELIVERED = "delivered"
GIVEN_UP = "given-up"


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


class ItemLog:
    def __init__(self) -> None:
        self.items: list[Item] = []
        # Called with the index of every item that starts (e.g. redraw schedules).
        self.on_start: list[Callable[[int], None]] = []

    def start(self, now: float) -> Item:
        item = Item(len(self.items), now)
        self.items.append(item)
        for listener in self.on_start:
            listener(item.index)
        return item

    def close_undelivered(self) -> None:
        """At the end of a run: an item handed over but never delivered was lost
        after it left the publisher (its end is the hand-over)."""
        for item in self.items:
            if item.status is None and item.t_handed_over is not None:
                self.finish(item, item.t_handed_over, GIVEN_UP)

    @staticmethod
    def finish(item: Item, now: float, status: str, payload_bytes: int = 0) -> None:
        if item.status is not None:
            return  # first outcome wins (a late response to a given-up item is not a delivery)
        item.t_end = now
        item.status = status
        item.payload_bytes = payload_bytes
