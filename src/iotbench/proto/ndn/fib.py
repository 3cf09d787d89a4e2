"""Forwarding Information Base: name prefix -> next-hop faces, longest-prefix match.

Entries are keyed by the prefix's Name TLV-VALUE, so a lookup walks the
prefixes of the Interest name from longest to shortest with one dict probe
each. Next hops carry a cost (NFD's routing cost); S5's unranked face lists
are the special case where every cost is 0, and ties keep insertion order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .name import Name

__all__ = ["Fib", "FibEntry", "NextHop"]


@dataclass(slots=True)
class NextHop:
    face_id: int
    cost: int = 0


@dataclass(slots=True)
class FibEntry:
    prefix: Name
    next_hops: list[NextHop] = field(default_factory=list)

    def sorted_next_hops(self) -> list[NextHop]:
        """Lowest cost first; equal costs in the order they were added."""
        return sorted(self.next_hops, key=lambda nh: nh.cost)


class Fib:
    """The FIB of one forwarder; `max_entries` bounds the number of prefixes (None: no bound)."""

    def __init__(self, max_entries: int | None = None) -> None:
        if max_entries is not None and max_entries < 1:
            raise ValueError(f"max_entries must be >= 1 or None, got {max_entries}")
        self.max_entries = max_entries
        self._entries: dict[bytes, FibEntry] = {}
        # Lengths (in bytes of TLV-VALUE) of the prefixes present: lookups skip the others.
        self._sizes: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[FibEntry]:
        return iter(list(self._entries.values()))

    def add_next_hop(self, prefix: Name, face_id: int, cost: int = 0) -> bool:
        """Add (or re-cost) a next hop; False when a new prefix would exceed max_entries."""
        key = prefix.value
        entry = self._entries.get(key)
        if entry is None:
            if self.max_entries is not None and len(self._entries) >= self.max_entries:
                return False
            entry = self._entries[key] = FibEntry(prefix)
            self._sizes[len(key)] = self._sizes.get(len(key), 0) + 1
        for nh in entry.next_hops:
            if nh.face_id == face_id:
                nh.cost = cost
                return True
        entry.next_hops.append(NextHop(face_id, cost))
        return True

    def remove_next_hop(self, prefix: Name, face_id: int) -> bool:
        """Remove one next hop; the entry goes when its last next hop does."""
        entry = self._entries.get(prefix.value)
        if entry is None:
            return False
        before = len(entry.next_hops)
        entry.next_hops = [nh for nh in entry.next_hops if nh.face_id != face_id]
        if not entry.next_hops:
            self._erase(prefix.value)
        return len(entry.next_hops) != before

    def remove_face(self, face_id: int) -> None:
        for key, entry in list(self._entries.items()):
            entry.next_hops = [nh for nh in entry.next_hops if nh.face_id != face_id]
            if not entry.next_hops:
                self._erase(key)

    def _erase(self, key: bytes) -> None:
        del self._entries[key]
        n = self._sizes[len(key)] - 1
        if n:
            self._sizes[len(key)] = n
        else:
            del self._sizes[len(key)]

    def find_exact(self, prefix: Name) -> FibEntry | None:
        return self._entries.get(prefix.value)

    def lookup(self, name: Name) -> FibEntry | None:
        """Longest-prefix match (None when not even the empty prefix "/" is present)."""
        entries = self._entries
        sizes = self._sizes
        # name.prefix_values(), longest first, written out: a prefix's TLV-VALUE is
        # cut only where some entry has its length (compiled, the generator and a
        # slice for every prefix were most of a lookup).
        value = name.value
        if len(value) in sizes:
            entry = entries.get(value)
            if entry is not None:
                return entry
        for end in reversed(name.offsets):
            if end in sizes:
                entry = entries.get(value[:end])
                if entry is not None:
                    return entry
        return None
