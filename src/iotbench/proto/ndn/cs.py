"""Content Store: a byte-bounded cache of Data packets.

- Capacity is counted in wire bytes of the cached Data (S5's default is
  24 KB = 24,576 bytes), and optionally in entries too (`max_entries`:
  CCN-lite, S4's stack, counts entries, CCNL_CACHE_SIZE). A Data larger than
  the whole store is not cached.
- Eviction: "fifo" drops the entry inserted longest ago; "lru" the one used
  (inserted or returned by a lookup) longest ago.
- One entry per Data name: a newer Data with the same name replaces the old.
- With a `heap` (CCN-lite's, proto/ndn/heap.py), each entry also takes the
  bytes CCN-lite allocates for it, before an old one is evicted (as
  `ccnl_content_new` precedes `ccnl_content_add2cache`); a Data the heap
  cannot hold is not cached.
- Freshness: a Data is fresh until its arrival time plus FreshnessPeriod
  (0 when absent, so never fresh); an Interest with MustBeFresh only gets a
  fresh one. Time is passed in.
- Matching follows the PIT's rules: an Interest without CanBePrefix needs the
  exact name (or the full name, when its last component is an implicit
  digest); with CanBePrefix, any cached name under it, the first in
  canonical order. Names are also kept sorted by their TLV-VALUE bytes, in
  which all names under one prefix are contiguous, so a prefix lookup is a
  binary search.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import OrderedDict
from typing import Final, Literal

from .data import Data
from .heap import Heap, content_bytes
from .interest import Interest
from .name import ends_with_digest

__all__ = ["CS_POLICIES", "DEFAULT_CS_BYTES", "ContentStore"]

CS_POLICIES: Final = ("fifo", "lru")
DEFAULT_CS_BYTES: Final = 24 * 1024
CsPolicy = Literal["fifo", "lru"]


class _Entry:
    __slots__ = ("data", "fresh_until_s", "heap_bytes", "size")

    def __init__(self, data: Data, now: float, heap_bytes: int) -> None:
        self.data = data
        self.size = len(data.wire)
        self.fresh_until_s = now + data.freshness_period_ms / 1000.0
        self.heap_bytes = heap_bytes


class ContentStore:
    def __init__(
        self,
        max_bytes: int = DEFAULT_CS_BYTES,
        policy: CsPolicy = "fifo",
        max_entries: int | None = None,
        heap: Heap | None = None,
    ) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        if max_entries is not None and max_entries < 0:
            raise ValueError(f"max_entries must be >= 0 or None, got {max_entries}")
        if policy not in CS_POLICIES:
            raise ValueError(f"policy must be one of {CS_POLICIES}, got {policy!r}")
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.policy = policy
        self.heap = heap
        self.bytes_used = 0
        self.peak_bytes = 0  # the most bytes it ever held
        self.peak_entries = 0  # the most Data it ever held
        self.recent_peak = 0  # the most bytes since take_recent_peak() (a time series' bin)
        self.evictions = 0
        # Eviction order: first = next victim.
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._sorted: list[bytes] = []

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name_value: bytes) -> bool:
        return name_value in self._entries

    def insert(self, data: Data, now: float) -> bool:
        """Cache `data`; False when it cannot fit at all (or the store is disabled)."""
        size = len(data.wire)
        if size > self.max_bytes or self.max_entries == 0:
            return False
        key = data.name.value
        if key in self._entries:
            self._erase(key)
        heap = self.heap
        heap_bytes = 0
        if heap is not None:
            heap_bytes = content_bytes(size)
            if not heap.take(heap_bytes):
                return False
        limit = self.max_entries
        while self.bytes_used + size > self.max_bytes or (
            limit is not None and len(self._entries) >= limit
        ):
            self._erase(next(iter(self._entries)))
            self.evictions += 1
        self._entries[key] = _Entry(data, now, heap_bytes)
        if len(self._entries) > self.peak_entries:
            self.peak_entries = len(self._entries)
        insort(self._sorted, key)
        self.bytes_used += size
        if self.bytes_used > self.recent_peak:  # S4's CS occupancy (peak >= recent_peak)
            self.recent_peak = self.bytes_used
            if self.bytes_used > self.peak_bytes:
                self.peak_bytes = self.bytes_used
        return True

    def take_recent_peak(self) -> int:
        """The most bytes held since the last call (or ever); starts the next span."""
        value, self.recent_peak = self.recent_peak, self.bytes_used
        return value

    def _erase(self, key: bytes) -> None:
        entry = self._entries.pop(key)
        self.bytes_used -= entry.size
        if self.heap is not None:
            self.heap.give(entry.heap_bytes)
        i = bisect_left(self._sorted, key)
        del self._sorted[i]

    def erase(self, name_value: bytes) -> bool:
        if name_value not in self._entries:
            return False
        self._erase(name_value)
        return True

    def lookup(self, interest: Interest, now: float) -> Data | None:
        """The cached Data that satisfies `interest`, or None."""
        if not self._entries:
            return None
        name = interest.name
        fresh = interest.must_be_fresh
        key = name.value
        found: bytes | None = None
        if interest.can_be_prefix:
            keys = self._sorted
            i = bisect_left(keys, key)
            while i < len(keys) and keys[i].startswith(key):
                if not fresh or self._entries[keys[i]].fresh_until_s > now:
                    found = keys[i]
                    break
                i += 1
        else:
            entry = self._entries.get(key)
            if entry is not None:
                found = key
            elif ends_with_digest(name):
                base = name[:-1].value
                entry = self._entries.get(base)
                if entry is not None and entry.data.full_name == name:
                    found = base
            if found is not None and fresh and self._entries[found].fresh_until_s <= now:
                found = None
        if found is None:
            return None
        if self.policy == "lru":
            self._entries.move_to_end(found)
        return self._entries[found].data
