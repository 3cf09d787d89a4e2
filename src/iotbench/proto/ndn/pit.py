"""Pending Interest Table.

An entry is found by exact match on (Interest name, CanBePrefix,
MustBeFresh): Interests that agree on all three are aggregated into one
entry, others get their own. Each entry records

- in-records, one per downstream face: the nonce it used, when its Interest
  expires there, and how many Interests it sent for this entry (more than
  one means the downstream retransmitted);
- out-records, one per upstream face the Interest went to: the nonce, when
  it was sent, and the Nack reason if the upstream rejected it.

A Data satisfies every entry whose name equals the Data name or the Data's
full name (name plus implicit digest), and every CanBePrefix entry whose name
is a proper prefix of it; lookups walk the Data name's prefixes, one dict
probe each.

Size limit: with `max_entries` reached, a new Interest is either dropped
("drop-new") or evicts the oldest entry ("replace-oldest", oldest by
creation), the two policies of the S4 study.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, Literal

from iotbench.proto.retransmit import Retransmission

from .data import Data
from .interest import Interest
from .name import Name, ends_with_digest

__all__ = ["PIT_OVERFLOW_POLICIES", "InRecord", "OutRecord", "Pit", "PitEntry"]

PIT_OVERFLOW_POLICIES: Final = ("drop-new", "replace-oldest")
PitOverflow = Literal["drop-new", "replace-oldest"]


class InRecord:
    __slots__ = ("arrivals", "expiry_s", "face_id", "interest", "last_renewed_s", "nonce")

    def __init__(self, face_id: int, interest: Interest, nonce: int, now: float) -> None:
        self.face_id = face_id
        self.arrivals = 0
        self.update(interest, nonce, now)

    def update(self, interest: Interest, nonce: int, now: float) -> None:
        self.interest = interest
        self.nonce = nonce
        self.last_renewed_s = now
        self.expiry_s = now + interest.lifetime_ms / 1000.0
        self.arrivals += 1


class OutRecord:
    __slots__ = ("expiry_s", "face_id", "last_sent_s", "nack", "nonce")

    def __init__(self, face_id: int, nonce: int, now: float, lifetime_s: float) -> None:
        self.face_id = face_id
        self.nonce = nonce
        self.last_sent_s = now
        self.expiry_s = now + lifetime_s
        self.nack: int | None = None


class PitEntry:
    """One pending Interest (and everything aggregated with it)."""

    __slots__ = (
        "can_be_prefix",
        "created_s",
        "expiry_s",
        "expiry_timer",
        "heap_bytes",
        "in_records",
        "interest",
        "key",
        "must_be_fresh",
        "name",
        "out_records",
        "retx",
        "retx_timer",
        "satisfied",
    )

    def __init__(self, interest: Interest, now: float) -> None:
        self.interest = interest
        self.name: Name = interest.name
        self.can_be_prefix = interest.can_be_prefix
        self.must_be_fresh = interest.must_be_fresh
        self.key = (self.name.value, self.can_be_prefix, self.must_be_fresh)
        self.created_s = now
        self.expiry_s = now
        self.in_records: dict[int, InRecord] = {}
        self.out_records: dict[int, OutRecord] = {}
        self.satisfied = False
        # Owned by the forwarder: its timer handles and retransmission state.
        self.expiry_timer: list | None = None
        self.retx: Retransmission | None = None
        self.retx_timer: list | None = None
        self.heap_bytes = 0  # what it took of the forwarder's heap (proto/ndn/heap.py)

    def __repr__(self) -> str:
        return (
            f"PitEntry({self.name}, in={sorted(self.in_records)}, out={sorted(self.out_records)})"
        )

    def has_pending_out_records(self, now: float) -> bool:
        """True while some upstream may still answer (not expired, not Nacked)."""
        return any(o.nack is None and o.expiry_s > now for o in self.out_records.values())

    def all_out_records_nacked(self) -> bool:
        return bool(self.out_records) and all(o.nack is not None for o in self.out_records.values())

    def nonce_seen(self, nonce: int, face_id: int, any_face: bool = False) -> bool:
        """Loop test: the nonce came from another downstream, or went out upstream.

        The same nonce again from the same face is that downstream's
        retransmission (NFD's rule for point-to-point faces), not a loop, even
        though it also sits in the out-records: it was forwarded from there.
        With `any_face` (CCN-lite's duplicate check) it is one all the same.
        """
        own = self.in_records.get(face_id)
        if own is not None and own.nonce == nonce:
            return any_face
        for rec in self.in_records.values():
            if rec.nonce == nonce and rec.face_id != face_id:
                return True
        return any(o.nonce == nonce for o in self.out_records.values())


class Pit:
    def __init__(self, max_entries: int | None = None, overflow: PitOverflow = "drop-new") -> None:
        if max_entries is not None and max_entries < 1:
            raise ValueError(f"max_entries must be >= 1 or None, got {max_entries}")
        if overflow not in PIT_OVERFLOW_POLICIES:
            raise ValueError(f"overflow must be one of {PIT_OVERFLOW_POLICIES}, got {overflow!r}")
        self.max_entries = max_entries
        self.overflow = overflow
        # Insertion order is creation order: the first entry is the oldest.
        self._entries: dict[tuple[bytes, bool, bool], PitEntry] = {}
        self._by_name: dict[bytes, list[PitEntry]] = {}
        # Entries whose name ends in an implicit digest: only then is a Data's digest needed.
        self._digest_named = 0
        self.peak = 0  # the most entries it ever held
        self.recent_peak = 0  # the most since take_recent_peak() (a time series' bin)

    def take_recent_peak(self) -> int:
        """The most entries held since the last call (or ever); starts the next span."""
        value, self.recent_peak = self.recent_peak, len(self._entries)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[PitEntry]:
        return iter(list(self._entries.values()))

    def find(self, interest: Interest) -> PitEntry | None:
        name = interest.name
        return self._entries.get((name.value, interest.can_be_prefix, interest.must_be_fresh))

    def oldest(self) -> PitEntry | None:
        return next(iter(self._entries.values()), None)

    def insert(
        self, interest: Interest, now: float
    ) -> tuple[PitEntry | None, bool, PitEntry | None]:
        """Find or create the entry for `interest`.

        Returns (entry, created, evicted): entry is None when the table is
        full under "drop-new"; evicted is the entry "replace-oldest" removed
        (the caller cancels its timers).
        """
        name = interest.name
        key = (name.value, interest.can_be_prefix, interest.must_be_fresh)
        entry = self._entries.get(key)
        if entry is not None:
            return entry, False, None
        evicted = None
        if self.max_entries is not None and len(self._entries) >= self.max_entries:
            if self.overflow == "drop-new":
                return None, False, None
            evicted = self.oldest()
            assert evicted is not None
            self.erase(evicted)
        entry = PitEntry(interest, now)
        self._entries[key] = entry
        held = len(self._entries)
        if held > self.recent_peak:  # S4's PIT occupancy (peak >= recent_peak)
            self.recent_peak = held
            if held > self.peak:
                self.peak = held
        self._by_name.setdefault(key[0], []).append(entry)
        if ends_with_digest(name):
            self._digest_named += 1
        return entry, True, evicted

    def erase(self, entry: PitEntry) -> None:
        if self._entries.get(entry.key) is not entry:
            return
        del self._entries[entry.key]
        same = self._by_name[entry.key[0]]
        same.remove(entry)
        if not same:
            del self._by_name[entry.key[0]]
        name = entry.name
        if ends_with_digest(name):
            self._digest_named -= 1

    def find_all_matches(self, data: Data) -> list[PitEntry]:
        """Every entry `data` satisfies (see the module docstring)."""
        by_name = self._by_name
        matches: list[PitEntry] = []
        name = data.name
        # name.prefix_values(), longest first, written out: compiled, the
        # generator's steps went through Python's iterator protocol.
        exact = name.value
        same = by_name.get(exact)
        if same:
            matches.extend(same)
        for end in reversed(name.offsets):
            same = by_name.get(exact[:end])
            if same:
                matches.extend(e for e in same if e.can_be_prefix)
        if self._digest_named:
            same = by_name.get(data.full_name.value)
            if same:
                matches.extend(same)
        return matches
