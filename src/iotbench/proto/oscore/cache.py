"""A bounded, insertion-ordered table whose entries may expire.

The OSCORE layer keeps several tables keyed by what peers send (bindings of
tokens to requests, the bytes it sent and received for CoAP's
deduplication); each is bounded in entries, and in bytes where values are
datagrams, so that a flood of messages can only push old entries out, never
grow memory. Entries are kept in insertion order, which with a clock that
never goes back is also expiry order: expiring is popping from the front.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class BoundedCache(Generic[V]):
    """At most `max_entries` entries (and `max_bytes` of declared sizes), each kept
    `lifetime_s` after it was put (None: until pushed out)."""

    def __init__(
        self, max_entries: int, lifetime_s: float | None = None, max_bytes: int | None = None
    ) -> None:
        if max_entries < 1:
            raise ValueError("a cache holds at least one entry")
        self.max_entries = max_entries
        self.lifetime_s = lifetime_s
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[float, int, V]] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(self, key: Hashable) -> V | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[2]

    def put(self, key: Hashable, value: V, now: float = 0.0, size: int = 0) -> None:
        self.pop(key)
        expiry = float("inf") if self.lifetime_s is None else now + self.lifetime_s
        self._entries[key] = (expiry, size, value)
        self._bytes += size
        while len(self._entries) > self.max_entries or (
            self.max_bytes is not None and self._bytes > self.max_bytes and len(self._entries) > 1
        ):
            self._drop_oldest()

    def pop(self, key: Hashable) -> V | None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self._bytes -= entry[1]
        return entry[2]

    def expire(self, now: float) -> None:
        """Forget every entry whose lifetime is over."""
        entries = self._entries
        while entries:
            first = next(iter(entries.values()))
            if first[0] > now:
                return
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        _, (_, size, _) = self._entries.popitem(last=False)
        self._bytes -= size
