"""An NDN forwarder over abstract faces, as a sans-I/O state machine (NFD's pipelines, simplified).

Driving it (a simulator or a socket loop does exactly this):

    fw = Forwarder(random.Random(seed), ForwarderConfig(...))
    face = fw.add_face(lambda wire: link.transmit(wire))     # one per link or app
    fw.add_route(Name("/p"), face.face_id)
    fw.receive(now, face.face_id, wire)      # every frame that arrives on a face
    fw.handle_timer(now)                     # when now >= fw.next_timer()

A face is an id plus a `send(wire)` callback; `local=True` marks an
application face (HopLimit is not decremented on it, unsolicited Data from it
may be cached), and `mtu` turns on the 3-byte-header fragmentation of S5 for
frames bigger than the MTU (arriving fragments are reassembled on every face
but those added with `s5_fragments=False`: links to peers that do not speak
S5's scheme, such as NFD-style UDP and TCP faces, where a frame whose first
bit is 1 is simply malformed).
`receive` and `handle_timer` never raise for a peer's bytes: malformed input
is counted in `counters.decode_errors`. An exception of the forwarder's own
(or of an application or hook it calls) is counted in
`counters.internal_errors` and, with `strict` (the default, and every
simulation), raised again: a bug fails the run. A forwarder on real sockets
is built with `strict=False` and logs it instead (proto/errors.py).

Packets handed to face callbacks while the forwarder works may make an
application call back into it (`receive`); such calls are queued and run
once the current packet is done, so the tables never change under a running
pipeline.

Incoming Interest:
 1. HopLimit: from a non-local face, 0 drops it and anything else is
    decremented; a missing Nonce is added (from the rng).
 2. Loop: the (name, nonce) in the Dead Nonce List, or the nonce already seen
    in the matching PIT entry from another face or sent upstream, is a loop:
    dropped, and answered with Nack(Duplicate) when Nacks are on.
 3. Content Store (when no downstream is already waiting): a hit answers the
    Interest at once.
 4. PIT insert (subject to the size limit and its overflow policy), in-record,
    expiry timer at the latest in-record expiry; then the strategy chosen for
    the name (longest prefix) decides where it goes.

Incoming Data: every matching PIT entry is satisfied (strategy hook first),
the Data goes once to each downstream face other than the one it came from,
and it is cached. Data that matches nothing is "unsolicited": cached or
dropped by `unsolicited_data` (NFD's policy names; default admit-local, so an
application can put Data into its forwarder's cache ahead of any Interest).

Incoming Nack (NDNLPv2): matched to the PIT entry and the out-record with the
same nonce; the strategy may try another upstream or pass the Nack down.

A heap (S4's CCN-lite, proto/ndn/heap.py): with `heap_bytes`, faces, FIB
entries, PIT entries and Content Store entries take the bytes CCN-lite
allocates for them from one pool of that size. An Interest whose new PIT
entry (or new downstream face) does not fit is dropped (`pit_full_drops`,
as for a PIT at its `pit_max_entries`); a Data that cannot be held is
dropped before it satisfies anything (`heap_data_drops`).

Hop-by-hop retransmission (S4): with `retx_max > 0`, a forwarded Interest
that gets no Data within `retx_interval_s` is sent again to the same
upstreams, at most `retx_max` times while its PIT entry lives, on the shared
schedule of proto/retransmit.py (fixed interval: backoff factor 1).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Final, Literal

from iotbench.proto.errors import own_error
from iotbench.proto.octets import as_bytes
from iotbench.proto.retransmit import BackoffSchedule, Retransmission
from iotbench.proto.timers import CANCELLED, DEADLINE, KIND, OBJ, TimerQueue
from iotbench.proto.timers import cancel as cancel_timer

from .cs import CS_POLICIES, DEFAULT_CS_BYTES, ContentStore
from .data import Data, received_data
from .dead_nonce import DeadNonceList
from .fib import Fib, NextHop
from .fragmentation import FragmentError, Reassembler, fragment
from .heap import (
    Heap,
    content_bytes,
    face_bytes,
    fib_entry_bytes,
    pending_face_bytes,
    pit_entry_bytes,
)
from .interest import Interest, received_interest
from .lp import LpPacket
from .name import Name, NameLike
from .pit import PIT_OVERFLOW_POLICIES, InRecord, OutRecord, Pit, PitEntry
from .strategy import STRATEGIES, Strategy, make_strategy
from .tlv import NdnDecodeError
from .types import TT, LpType, NackReason

# Plain ints, which compiled code reads without an enum attribute lookup.
_TT_INTEREST: Final = int(TT.INTEREST)
_TT_DATA: Final = int(TT.DATA)
_LP_PACKET: Final = int(LpType.LP_PACKET)

__all__ = [
    "UNSOLICITED_DATA_POLICIES",
    "Face",
    "Forwarder",
    "ForwarderConfig",
    "ForwarderCounters",
    "Timer",
]

UNSOLICITED_DATA_POLICIES: Final = ("drop-all", "admit-local", "admit-network", "admit-all")

_T_EXPIRE: Final = 0
_T_RETX: Final = 1
_T_CALL: Final = 2


def _check(ok: bool, name: str, value: object, what: str) -> None:
    if not ok:
        raise ValueError(f"ForwarderConfig.{name} must be {what}, got {value!r}")


def _positive_int_or_none(value: object) -> bool:
    return value is None or (isinstance(value, int) and value >= 1)


def _fib_bytes(prefix: Name) -> int:
    """A FIB next hop's heap bytes (CCN-lite keeps a copy of the prefix with each)."""
    return fib_entry_bytes(len(prefix), sum(len(component.value) for component in prefix))


@dataclass(frozen=True)
class ForwarderConfig:
    """Tables, policies and timers of one forwarder.

    - pit_max_entries / pit_overflow: PIT size limit (None: unbounded) and what
      a full PIT does with a new Interest: "drop-new" or "replace-oldest".
    - fib_max_entries: FIB prefix limit (None: unbounded).
    - cs_max_bytes / cs_policy: Content Store capacity in Data wire bytes
      (0 disables caching) and eviction, "fifo" or "lru"; cs_max_entries: a
      bound on the number of Data too (None: none; CCN-lite's CCNL_CACHE_SIZE).
    - nonce_check: "nfd", a nonce the PIT entry saw from another face (or
      sent upstream) is a loop, the same nonce again from the same face is
      that downstream's retransmission; "ccn-lite", any nonce the entry has
      seen is a duplicate and dropped (CCN-lite's USE_DUP_CHECK), so a
      hop-by-hop retransmission reaches a next hop only if it lost the
      Interest (or its entry expired).
    - strategy: the default strategy, "best-route" or "multicast".
    - retx_interval_s / retx_max: hop-by-hop Interest retransmission; 0 (the
      default) leaves retransmission to the consumer, as NFD does. S4: 2 s, 4.
    - retx_suppression_s: without hop-by-hop retransmission, a downstream's
      retransmitted Interest is forwarded again only this long after the last
      transmission upstream (NFD's initial suppression interval, 10 ms).
    - dead_nonce_lifetime_s / dead_nonce_max_entries: the Dead Nonce List.
    - send_nacks: answer no-route, loops and all-upstreams-Nacked with an
      NDNLPv2 Nack (NFD does); False silently drops instead, as the
      constrained stacks of S4/S5 did.
    - unsolicited_data: "drop-all", "admit-local" (cache Data an application
      puts without a matching Interest), "admit-network" or "admit-all".
    - reassembly_*: per-face S5 fragment reassembly limits.
    - heap_bytes: the pool CCN-lite allocates its tables from (see the module
      doc and proto/ndn/heap.py; S4: the apps' TLSF_BUFFER); None: no heap.
    """

    pit_max_entries: int | None = 65536
    pit_overflow: Literal["drop-new", "replace-oldest"] = "drop-new"
    fib_max_entries: int | None = None
    cs_max_bytes: int = DEFAULT_CS_BYTES
    cs_policy: Literal["fifo", "lru"] = "fifo"
    cs_max_entries: int | None = None
    nonce_check: Literal["nfd", "ccn-lite"] = "nfd"
    strategy: str = "best-route"
    retx_interval_s: float = 2.0
    retx_max: int = 0
    retx_suppression_s: float = 0.01
    dead_nonce_lifetime_s: float = 6.0
    dead_nonce_max_entries: int = 65536
    send_nacks: bool = True
    unsolicited_data: Literal["drop-all", "admit-local", "admit-network", "admit-all"] = (
        "admit-local"
    )
    reassembly_timeout_s: float = 3.0
    reassembly_max_packets: int = 8
    reassembly_max_bytes: int = 4096
    heap_bytes: int | None = None

    def __post_init__(self) -> None:
        def finite(v: object, low: float, open_: bool) -> bool:
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                return False
            return v > low if open_ else v >= low

        _check(
            _positive_int_or_none(self.pit_max_entries),
            "pit_max_entries",
            self.pit_max_entries,
            "an integer >= 1 or None",
        )
        _check(
            self.pit_overflow in PIT_OVERFLOW_POLICIES,
            "pit_overflow",
            self.pit_overflow,
            f"one of {PIT_OVERFLOW_POLICIES}",
        )
        _check(
            _positive_int_or_none(self.fib_max_entries),
            "fib_max_entries",
            self.fib_max_entries,
            "an integer >= 1 or None",
        )
        _check(
            isinstance(self.cs_max_bytes, int) and self.cs_max_bytes >= 0,
            "cs_max_bytes",
            self.cs_max_bytes,
            "an integer >= 0",
        )
        _check(self.cs_policy in CS_POLICIES, "cs_policy", self.cs_policy, f"one of {CS_POLICIES}")
        _check(
            self.cs_max_entries is None
            or (isinstance(self.cs_max_entries, int) and self.cs_max_entries >= 0),
            "cs_max_entries",
            self.cs_max_entries,
            "an integer >= 0 or None",
        )
        _check(
            self.nonce_check in ("nfd", "ccn-lite"),
            "nonce_check",
            self.nonce_check,
            "nfd or ccn-lite",
        )
        _check(
            self.strategy in STRATEGIES, "strategy", self.strategy, f"one of {sorted(STRATEGIES)}"
        )
        _check(
            finite(self.retx_interval_s, 0, True), "retx_interval_s", self.retx_interval_s, "> 0"
        )
        _check(
            isinstance(self.retx_max, int) and 0 <= self.retx_max <= 100,
            "retx_max",
            self.retx_max,
            "an integer in 0..100",
        )
        _check(
            finite(self.retx_suppression_s, 0, False),
            "retx_suppression_s",
            self.retx_suppression_s,
            ">= 0",
        )
        _check(
            finite(self.dead_nonce_lifetime_s, 0, True),
            "dead_nonce_lifetime_s",
            self.dead_nonce_lifetime_s,
            "> 0",
        )
        _check(
            isinstance(self.dead_nonce_max_entries, int) and self.dead_nonce_max_entries >= 1,
            "dead_nonce_max_entries",
            self.dead_nonce_max_entries,
            "an integer >= 1",
        )
        _check(
            self.unsolicited_data in UNSOLICITED_DATA_POLICIES,
            "unsolicited_data",
            self.unsolicited_data,
            f"one of {UNSOLICITED_DATA_POLICIES}",
        )
        _check(
            finite(self.reassembly_timeout_s, 0, True),
            "reassembly_timeout_s",
            self.reassembly_timeout_s,
            "> 0",
        )
        for name in ("reassembly_max_packets", "reassembly_max_bytes"):
            value = getattr(self, name)
            _check(isinstance(value, int) and value >= 1, name, value, "an integer >= 1")
        _check(
            self.heap_bytes is None
            or (isinstance(self.heap_bytes, int) and self.heap_bytes >= 4096),
            "heap_bytes",
            self.heap_bytes,
            "an integer >= 4096 or None",
        )


@dataclass(slots=True)
class ForwarderCounters:
    """Everything the forwarder did, for diagnosis (metrics come from packet records)."""

    packets_in: int = 0
    packets_out: int = 0
    unknown_face: int = 0
    decode_errors: int = 0
    internal_errors: int = 0
    interests_in: int = 0
    interests_out: int = 0
    data_in: int = 0
    data_out: int = 0
    nacks_in: int = 0
    nacks_out: int = 0
    nacks_unmatched: int = 0
    loops: int = 0
    hop_limit_drops: int = 0
    aggregated: int = 0
    pit_full_drops: int = 0
    heap_data_drops: int = 0
    pit_replaced: int = 0
    pit_expired: int = 0
    satisfied: int = 0
    rejected: int = 0
    cs_hits: int = 0
    cs_misses: int = 0
    cs_inserts: int = 0
    unsolicited_data: int = 0
    retransmissions: int = 0
    fragments_in: int = 0
    fragments_out: int = 0
    reassembled: int = 0
    fragment_errors: int = 0
    oversize_drops: int = 0
    lp_idle: int = 0
    lp_unsupported: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class Face:
    """A forwarder's view of one link or application."""

    __slots__ = ("face_id", "local", "mtu", "s5_fragments", "send")

    def __init__(
        self,
        face_id: int,
        send: Callable[[bytes], None],
        local: bool = False,
        mtu: int | None = None,
        s5_fragments: bool = True,
    ) -> None:
        if mtu is not None and mtu < 4:
            raise ValueError(f"a face MTU must leave room for a fragment header, got {mtu}")
        if mtu is not None and not s5_fragments:
            raise ValueError("a face without S5 fragmentation cannot have an MTU")
        self.face_id = face_id
        self.send = send
        self.local = local
        self.mtu = mtu
        self.s5_fragments = s5_fragments

    def __repr__(self) -> str:
        return f"Face({self.face_id}, local={self.local}, mtu={self.mtu})"


class Timer:
    """A callback scheduled with `Forwarder.call_at`; `cancel()` stops it."""

    __slots__ = ("_entry",)

    def __init__(self, entry: list) -> None:
        self._entry = entry

    @property
    def deadline(self) -> float:
        return self._entry[0]

    @property
    def active(self) -> bool:
        return self._entry[KIND] != CANCELLED

    def cancel(self) -> None:
        self._entry[KIND] = CANCELLED


class Forwarder:
    def __init__(
        self,
        rng: random.Random,
        config: ForwarderConfig = ForwarderConfig(),  # frozen, safe to share
        strict: bool = True,
    ) -> None:
        self.rng = rng
        self.config = config
        self.strict = strict
        self.counters = ForwarderCounters()
        self.pit = Pit(config.pit_max_entries, config.pit_overflow)
        self.fib = Fib(config.fib_max_entries)
        self.heap = None if config.heap_bytes is None else Heap(config.heap_bytes)
        self.cs = ContentStore(
            config.cs_max_bytes, config.cs_policy, config.cs_max_entries, self.heap
        )
        self._any_face = config.nonce_check == "ccn-lite"
        self.dead_nonces = DeadNonceList(
            config.dead_nonce_lifetime_s, config.dead_nonce_max_entries
        )
        self._strategies: dict[bytes, Strategy] = {b"": make_strategy(config.strategy)}
        self._retx_schedule = BackoffSchedule(
            base_timeout_s=config.retx_interval_s,
            max_retransmissions=config.retx_max,
            random_factor=1.0,
            backoff_factor=1.0,
        )
        self._faces: dict[int, Face] = {}
        self._next_face_id = 1
        self._reassemblers: dict[int, Reassembler] = {}
        self._ident = rng.randrange(0x10000)
        self._timers = TimerQueue()
        self._inbox: deque[tuple[float, int, bytes, int]] = deque()
        self._busy = False
        #: Time of the event being processed (the last `now` passed in).
        self.now = 0.0
        #: The last exception of its own a lenient forwarder counted, for diagnosis.
        self.last_internal_error: Exception | None = None
        #: Hooks for a protocol running beside the forwarder, as CCN-lite has them
        #: (ccnl_callback_set_data_received and _data_send, which HoPP sets):
        #: `data_received(face_id, data)` for every Data that arrives on a network
        #: face, before it is matched or cached; `cache_answered(face_id, interest)`
        #: when the Content Store answers an Interest from a network face. Data an
        #: application's own Interest finds in the Content Store calls neither (it
        #: goes to the application, as CCN-lite's loopback face does).
        self.data_received: Callable[[int, Data], None] | None = None
        self.cache_answered: Callable[[int, Interest], None] | None = None

    # =====================================================================
    # faces, routes, strategies
    # =====================================================================

    def add_face(
        self,
        send: Callable[[bytes], None],
        *,
        local: bool = False,
        mtu: int | None = None,
        face_id: int | None = None,
        s5_fragments: bool = True,
    ) -> Face:
        if face_id is None:
            while self._next_face_id in self._faces:
                self._next_face_id += 1
            face_id = self._next_face_id
            self._next_face_id += 1
        elif face_id in self._faces:
            raise ValueError(f"face {face_id} already exists")
        heap = self.heap
        # CCN-lite's applications share one loopback face: only the first local face
        # takes heap.
        if heap is not None and not (local and any(f.local for f in self._faces.values())):
            if not heap.take(face_bytes()):
                raise ValueError(f"the {heap.size}-byte heap has no room for another face")
        face = Face(face_id, send, local, mtu, s5_fragments)
        self._faces[face_id] = face
        return face

    def face(self, face_id: int) -> Face | None:
        return self._faces.get(face_id)

    @property
    def faces(self) -> list[Face]:
        return list(self._faces.values())

    def remove_face(self, face_id: int) -> None:
        """Forget a face: its routes, its PIT records, its partial reassemblies."""
        if self._faces.pop(face_id, None) is None:
            return
        heap = self.heap
        if heap is not None:
            for fib_entry in self.fib:
                if any(nh.face_id == face_id for nh in fib_entry.next_hops):
                    heap.give(_fib_bytes(fib_entry.prefix))
        self.fib.remove_face(face_id)
        self._reassemblers.pop(face_id, None)
        for entry in self.pit:
            if entry.in_records.pop(face_id, None) is not None and entry.in_records:
                self._give(entry, pending_face_bytes())
            entry.out_records.pop(face_id, None)
            if not entry.in_records:
                self._forget(entry)

    def add_route(self, prefix: NameLike, face_id: int, cost: int = 0) -> bool:
        """Add a FIB next hop; False when the FIB (or the heap) is full."""
        prefix = prefix if isinstance(prefix, Name) else Name(prefix)
        heap = self.heap
        if heap is None or self._has_next_hop(prefix, face_id):
            return self.fib.add_next_hop(prefix, face_id, cost)
        size = _fib_bytes(prefix)
        if not heap.take(size):
            return False
        if not self.fib.add_next_hop(prefix, face_id, cost):
            heap.give(size)
            return False
        return True

    def remove_route(self, prefix: NameLike, face_id: int) -> bool:
        prefix = prefix if isinstance(prefix, Name) else Name(prefix)
        removed = self.fib.remove_next_hop(prefix, face_id)
        if removed and self.heap is not None:
            self.heap.give(_fib_bytes(prefix))
        return removed

    def _has_next_hop(self, prefix: Name, face_id: int) -> bool:
        entry = self.fib.find_exact(prefix)
        return entry is not None and any(nh.face_id == face_id for nh in entry.next_hops)

    def set_strategy(self, prefix: NameLike, strategy: Strategy | str) -> None:
        """Use `strategy` for names under `prefix` (longest prefix wins; "/" is the default)."""
        prefix = prefix if isinstance(prefix, Name) else Name(prefix)
        self._strategies[prefix.value] = (
            make_strategy(strategy) if isinstance(strategy, str) else strategy
        )

    def strategy_for(self, name: Name) -> Strategy:
        strategies = self._strategies
        if len(strategies) == 1:
            return strategies[b""]
        for key in name.prefix_values():
            s = strategies.get(key)
            if s is not None:
                return s
        return strategies[b""]

    # =====================================================================
    # sans-I/O inputs and outputs
    # =====================================================================

    def receive(self, now: float, face_id: int, wire: bytes, upstream: int = -1) -> None:
        """Process one frame that arrived on `face_id`. Never raises.

        `upstream`: an application's Interest for one next hop, the FIB and the
        strategy bypassed (CCN-lite's `pkt->to`, which HoPP's pulls use); a new
        PIT entry's Interest goes there, an aggregated one nowhere."""
        self._inbox.append((now, face_id, wire, upstream))
        if not self._busy:
            self._run()

    def handle_timer(self, now: float) -> None:
        """Run everything due at or before `now`. Never raises."""
        was_busy = self._busy
        self._busy = True
        try:
            self.now = now
            timers = self._timers
            while (due := timers.pop_due(now)) is not None:
                kind, obj = due[KIND], due[OBJ]
                try:
                    if kind == _T_EXPIRE:
                        self._on_expire(now, obj)
                    elif kind == _T_RETX:
                        self._on_retransmit(now, obj)
                    else:
                        obj()
                except Exception as exc:  # noqa: BLE001 - a timer must never crash a node
                    self._internal_error(exc)
            for reassembler in self._reassemblers.values():
                reassembler.expire(now)
        finally:
            self._busy = was_busy
        if not was_busy:
            self._run()

    def next_timer(self) -> float | None:
        """Absolute time of the earliest pending deadline, or None."""
        t = self._timers.next_deadline()
        for reassembler in self._reassemblers.values():
            r = reassembler.next_timer()
            if r is not None and (t is None or r < t):
                t = r
        return t

    def call_at(self, deadline: float, callback: Callable[[], None]) -> Timer:
        """Run `callback()` from handle_timer at `deadline` (applications' timers)."""
        return Timer(self._timers.arm(deadline, _T_CALL, callback))

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> Timer:
        return self.call_at(self.now + delay_s, callback)

    # ---- occupancy, for sampling --------------------------------------------------------

    @property
    def pit_size(self) -> int:
        return len(self.pit)

    @property
    def cs_bytes(self) -> int:
        return self.cs.bytes_used

    # =====================================================================
    # the strategy's API
    # =====================================================================

    def next_hops(self, interest: Interest) -> list[NextHop]:
        """FIB next hops for `interest`, best first.

        Longest-prefix match on the name; with no route and a ForwardingHint,
        on the hint's names in order (the forwarder counts as outside the
        producer region).
        """
        entry = self.fib.lookup(interest.name)
        if entry is None and interest.has_forwarding_hint:
            for hint in interest.forwarding_hint:
                entry = self.fib.lookup(hint)
                if entry is not None:
                    break
        if entry is None:
            return []
        return [nh for nh in entry.sorted_next_hops() if nh.face_id in self._faces]

    def send_interest(
        self, now: float, entry: PitEntry, face_id: int, interest: Interest | None = None
    ) -> bool:
        """Forward the entry's Interest to one upstream face and record it."""
        face = self._faces.get(face_id)
        if face is None:
            return False
        interest = interest or entry.interest
        if not face.local and interest.hop_limit == 0:
            self.counters.hop_limit_drops += 1
            return False
        nonce = interest.nonce
        assert nonce is not None  # the incoming pipeline always sets one
        lifetime_s = interest.lifetime_ms / 1000.0
        out = entry.out_records.get(face_id)
        if out is None:
            entry.out_records[face_id] = OutRecord(face_id, nonce, now, lifetime_s)
        else:
            out.nonce = nonce
            out.last_sent_s = now
            out.expiry_s = now + lifetime_s
            out.nack = None
        self.counters.interests_out += 1
        self._send(face, interest.wire)
        if self.config.retx_max > 0 and entry.retx is None:
            entry.retx = Retransmission(self._retx_schedule, self.rng)
            entry.retx_timer = self._timers.arm(entry.retx.start(now), _T_RETX, entry)
        return True

    def reject_pending_interest(self, now: float, entry: PitEntry, reason: int) -> None:
        """Give up on `entry`: Nack its downstreams (when Nacks are on) and remove it."""
        if self.pit.find(entry.interest) is not entry:
            return
        if self.config.send_nacks:
            for rec in list(entry.in_records.values()):
                if rec.expiry_s > now:
                    self._send_nack(rec.face_id, rec.interest, reason)
        self.counters.rejected += 1
        self._insert_dead_nonces(entry, None, now)
        self._forget(entry)

    # =====================================================================
    # pipelines
    # =====================================================================

    def _run(self) -> None:
        self._busy = True
        try:
            inbox = self._inbox
            while inbox:
                now, face_id, wire, upstream = inbox.popleft()
                self.now = now
                self._process(now, face_id, wire, upstream)
        finally:
            self._busy = False

    def _internal_error(self, exc: Exception) -> None:
        self.counters.internal_errors += 1
        self.last_internal_error = exc
        own_error(self.strict, exc, "NDN forwarder")

    def _process(self, now: float, face_id: int, wire: bytes, upstream: int) -> None:
        c = self.counters
        c.packets_in += 1
        face = self._faces.get(face_id)
        if face is None:
            c.unknown_face += 1
            return
        try:
            wire = as_bytes(wire)
            if wire and wire[0] & 0x80 and face.s5_fragments:
                c.fragments_in += 1
                packet = self._reassembler(face_id).feed(now, face_id, wire)
                if packet is None:
                    return
                c.reassembled += 1
                wire = packet
            self._dispatch(now, face, wire, False, upstream)
        except NdnDecodeError as bad:
            c.decode_errors += 1
            if isinstance(bad, FragmentError):
                c.fragment_errors += 1
        # (Its own name: compiled code types an `except ... as` name by its first use.)
        except Exception as exc:  # noqa: BLE001 - proto/errors.py: raised, or logged
            self._internal_error(exc)

    def _reassembler(self, face_id: int) -> Reassembler:
        r = self._reassemblers.get(face_id)
        if r is None:
            cfg = self.config
            r = self._reassemblers[face_id] = Reassembler(
                cfg.reassembly_timeout_s, cfg.reassembly_max_packets, cfg.reassembly_max_bytes
            )
        return r

    def _dispatch(self, now: float, face: Face, wire: bytes, lp: bool, upstream: int) -> None:
        first = wire[0] if wire else -1
        if first == _TT_INTEREST:
            self._on_interest(now, face, received_interest(wire), upstream)
        elif first == _TT_DATA:
            self._on_data(now, face, received_data(wire))
        elif first == _LP_PACKET and not lp:
            packet = LpPacket.decode(wire)
            if packet.fragment is None:
                self.counters.lp_idle += 1
            elif (packet.frag_count or 1) > 1 or (packet.frag_index or 0) > 0:
                # NDNLPv2's own fragmentation is not used by this stack (S5 fragments below it).
                self.counters.lp_unsupported += 1
            elif packet.nack is not None:
                self._on_nack(now, face, received_interest(packet.fragment), packet.nack)
            else:
                self._dispatch(now, face, packet.fragment, True, -1)
        else:
            raise NdnDecodeError(f"not an Interest, Data or LpPacket (first byte {first})")

    def _on_interest(self, now: float, face: Face, interest: Interest, upstream: int) -> None:
        c = self.counters
        c.interests_in += 1
        name = interest.name
        nonce = interest.nonce
        hop_limit = interest.hop_limit
        _ = interest.lifetime_ms  # validate before anything is recorded
        if not face.local and hop_limit is not None:
            if hop_limit == 0:
                c.hop_limit_drops += 1
                return
            interest = interest.with_hop_limit(hop_limit - 1)
        if nonce is None:
            nonce = self.rng.getrandbits(32)
            interest = interest.with_nonce(nonce)
        if self.dead_nonces.has(name.value, nonce, now):
            self._on_loop(face, interest)
            return
        entry = self.pit.find(interest)
        if entry is not None and entry.nonce_seen(nonce, face.face_id, self._any_face):
            self._on_loop(face, interest)
            return
        if entry is None or not entry.in_records:
            data = self.cs.lookup(interest, now)
            if data is not None:
                c.cs_hits += 1
                c.data_out += 1
                hook = self.cache_answered
                if hook is not None and not face.local:
                    hook(face.face_id, interest)
                self._send(face, data.wire)
                return
            c.cs_misses += 1
        heap = self.heap
        heap_bytes = 0
        if heap is not None and entry is None:  # a new entry: CCN-lite's calloc
            heap_bytes = pit_entry_bytes(len(interest.wire))
            if not heap.take(heap_bytes):
                c.pit_full_drops += 1
                return
        entry, created, evicted = self.pit.insert(interest, now)
        if evicted is not None:
            c.pit_replaced += 1
            self._forget(evicted)
        if entry is None:
            c.pit_full_drops += 1
            if heap is not None:
                heap.give(heap_bytes)
            return
        entry.heap_bytes += heap_bytes
        if not created and entry.has_pending_out_records(now):
            c.aggregated += 1
        rec = entry.in_records.get(face.face_id)
        if rec is None:
            if heap is not None and not created:  # another downstream face
                if not heap.take(pending_face_bytes()):
                    c.pit_full_drops += 1
                    return
                entry.heap_bytes += pending_face_bytes()
            entry.in_records[face.face_id] = InRecord(face.face_id, interest, nonce, now)
        else:
            rec.update(interest, nonce, now)
        entry.interest = interest
        self._arm_expiry(entry)
        if upstream >= 0:
            if created:
                self.send_interest(now, entry, upstream)
            return
        self.strategy_for(name).after_receive_interest(self, now, entry, face.face_id, interest)

    def _on_loop(self, face: Face, interest: Interest) -> None:
        self.counters.loops += 1
        if self.config.send_nacks:
            self._send_nack(face.face_id, interest, NackReason.DUPLICATE)

    def _on_data(self, now: float, face: Face, data: Data) -> None:
        c = self.counters
        c.data_in += 1
        # Validate what the Data carries for its consumers, as NFD's Data::wireDecode
        # does at the face: the name, and the SignatureInfo (a Data whose SignatureInfo
        # does not decode is dropped as malformed, never forwarded or cached).
        _ = data.name, data.signature_info
        heap = self.heap
        if heap is not None and heap.free < content_bytes(len(data.wire)):
            heap.failures += 1  # CCN-lite cannot hold the Data: it goes no further
            c.heap_data_drops += 1
            return
        hook = self.data_received
        if hook is not None and not face.local:
            hook(face.face_id, data)
        matches = self.pit.find_all_matches(data)
        if not matches:
            c.unsolicited_data += 1
            policy = self.config.unsolicited_data
            if (
                policy == "admit-all"
                or (policy == "admit-local" and face.local)
                or (policy == "admit-network" and not face.local)
            ):
                self._cache(data, now)
            return
        self._cache(data, now)
        downstream: dict[int, None] = {}
        for entry in matches:
            self.strategy_for(entry.name).before_satisfy_interest(
                self, now, entry, face.face_id, data
            )
            for face_id, rec in entry.in_records.items():
                if face_id != face.face_id and rec.expiry_s > now:
                    downstream[face_id] = None
            entry.satisfied = True
            c.satisfied += 1
            self._insert_dead_nonces(entry, data, now)
            self._forget(entry)
        for face_id in downstream:
            out = self._faces.get(face_id)
            if out is not None:
                c.data_out += 1
                self._send(out, data.wire)

    def _on_nack(self, now: float, face: Face, interest: Interest, reason: int) -> None:
        c = self.counters
        c.nacks_in += 1
        _ = interest.name
        entry = self.pit.find(interest)
        out = None if entry is None else entry.out_records.get(face.face_id)
        if entry is None or out is None or out.nonce != interest.nonce:
            c.nacks_unmatched += 1
            return
        out.nack = reason
        self.strategy_for(entry.name).after_receive_nack(self, now, entry, face.face_id, reason)

    # =====================================================================
    # timers
    # =====================================================================

    def _arm(self, deadline: float, kind: int, obj: object) -> list:
        return self._timers.arm(deadline, kind, obj)

    def _arm_expiry(self, entry: PitEntry) -> None:
        expiry = max(rec.expiry_s for rec in entry.in_records.values())
        timer = entry.expiry_timer
        if timer is not None and timer[DEADLINE] == expiry and timer[KIND] != CANCELLED:
            return
        cancel_timer(timer)
        entry.expiry_s = expiry
        entry.expiry_timer = self._timers.arm(expiry, _T_EXPIRE, entry)

    def _on_expire(self, now: float, entry: PitEntry) -> None:
        entry.expiry_timer = None
        if self.pit.find(entry.interest) is not entry:
            return
        self.strategy_for(entry.name).before_expire_pending_interest(self, now, entry)
        self.counters.pit_expired += 1
        self._insert_dead_nonces(entry, None, now)
        self._forget(entry)

    def _on_retransmit(self, now: float, entry: PitEntry) -> None:
        entry.retx_timer = None
        retx = entry.retx
        if retx is None or self.pit.find(entry.interest) is not entry:
            return
        if not retx.on_timeout(now):
            return  # gave up; the entry waits for Data until it expires
        interest = entry.interest
        lifetime_s = interest.lifetime_ms / 1000.0
        for out in list(entry.out_records.values()):
            face = self._faces.get(out.face_id)
            if out.nack is not None or face is None:
                continue
            if not face.local and interest.hop_limit == 0:
                continue
            out.nonce = interest.nonce or out.nonce
            out.last_sent_s = now
            out.expiry_s = now + lifetime_s
            self.counters.retransmissions += 1
            self.counters.interests_out += 1
            self._send(face, interest.wire)
        entry.retx_timer = self._timers.arm(retx.deadline_s, _T_RETX, entry)

    # =====================================================================
    # helpers
    # =====================================================================

    def _forget(self, entry: PitEntry) -> None:
        """Remove a PIT entry and stop its timers."""
        self.pit.erase(entry)
        self._give(entry, entry.heap_bytes)
        cancel_timer(entry.expiry_timer)
        cancel_timer(entry.retx_timer)
        entry.expiry_timer = None
        entry.retx_timer = None

    def _give(self, entry: PitEntry, size: int) -> None:
        """Return `size` of the entry's heap bytes to the heap."""
        if self.heap is not None:
            self.heap.give(size)
            entry.heap_bytes -= size

    def _insert_dead_nonces(self, entry: PitEntry, data: Data | None, now: float) -> None:
        """NFD's rule: remember outgoing nonces unless the CS will stop a looping Interest.

        A satisfied entry needs it only when its Interest was MustBeFresh and
        the Data goes stale before the Dead Nonce List forgets the nonce.
        """
        if data is not None:
            if not entry.must_be_fresh:
                return
            if data.freshness_period_ms / 1000.0 >= self.dead_nonces.lifetime_s:
                return
        for out in entry.out_records.values():
            self.dead_nonces.add(entry.name.value, out.nonce, now)

    def _cache(self, data: Data, now: float) -> None:
        if self.cs.insert(data, now):
            self.counters.cs_inserts += 1

    def _send_nack(self, face_id: int, interest: Interest, reason: int) -> None:
        face = self._faces.get(face_id)
        if face is None:
            return
        self.counters.nacks_out += 1
        self._send(face, LpPacket.make_nack(interest.wire, reason).encode())

    def _send(self, face: Face, wire: bytes) -> None:
        c = self.counters
        mtu = face.mtu
        if mtu is None or len(wire) <= mtu:
            c.packets_out += 1
            face.send(wire)
            return
        self._ident = (self._ident + 1) & 0xFFFF
        try:
            frames = fragment(wire, mtu, self._ident)
        except ValueError:
            c.oversize_drops += 1
            return
        c.packets_out += 1
        c.fragments_out += len(frames)
        for frame in frames:
            face.send(frame)
