"""One node's RPL instance in storing mode (RFC 6550), as a sans-I/O state machine.

Inputs: `start(now)`, `receive(now, src, dst, code, body)` for every ICMPv6
RPL message (src is the sender's link-local address), `link_result(now,
neighbour, acked, transmissions)` after every unicast the MAC sent,
`add_target`/`remove_target` for the node's own addresses and multicast
groups, and `handle_timer(now)`. Outputs: `messages_to_send()` (destination,
ICMPv6 code, body), `next_timer()`, `events()` (ParentChanged, JoinedDodag,
RouteAdded, RouteRemoved), and the state the IP layer reads: `rank`,
`joined`, `preferred_parent`, `routes`, `next_hop(dst)`, `children`.

What it does:
- the root announces the DODAG; every node sends DIOs on a Trickle timer
  (RFC 6206) with the DODAG Configuration option the root chose, resets it
  on an inconsistency (a multicast DIS, a new DODAG version, a new parent);
- a node not in a DODAG multicasts DIS, first `dis_start_delay_s` after it
  starts, then every `dis_interval_s`;
- parents are chosen by the objective function (objective.py) among
  neighbours of the same DODAG version with a lower Rank, with its
  hysteresis; a node never advertises a Rank above the lowest it had in
  this version plus MaxRankIncrease (8.2.2.4); it detaches and poisons its
  sub-DODAG (a DIO with infinite Rank) when no parent is left;
- storing mode (MOP 3, with multicast): each node sends its own targets and
  its routes in DAOs to its parent `dao_delay_s` after joining and after a
  parent change, its own targets every half path lifetime and a new one
  (a group joined) `dao_delay_s` after it was added, and passes on the
  targets its children send (gathered for `dao_forward_delay_s`, so that
  many children's news go up in few DAOs); a DAO with lifetime 0 (No-Path)
  removes routes;
  a parent change sends the old parent a No-Path DAO for everything below;
  DAOs are acknowledged hop by hop (K flag) and resent up to `dao_retries`
  times;
- or, with `dao_style = "gnrc"`, DAOs as RIOT's gnrc_rpl sends them (at
  the S4 study's commit, sys/net/gnrc/routing/rpl/gnrc_rpl.c and
  gnrc_rpl_control_messages.c): one DAO carries this node's address and
  every route it holds (gnrc_rpl_send_DAO walks the forwarding table), and
  is sent 1 to 2 s after joining and after every DAO a child sends
  (gnrc_rpl_delay_dao, which restarts the wait), up to `dao_retries` times
  `dao_ack_timeout_s` apart until its ACK comes, and again 60 to 61 s after
  the ACK or the last try (gnrc_rpl_long_delay_dao): a DAO a minute from
  every node, and one up each path whenever a node below sends one;
- a group's route remembers every child below which a member announced it
  (with each one's lifetime), so one child's No-Path or expiry leaves the
  group to the others; a node that is itself a member keeps its children's
  announcements of the group but does not pass them on (its own DAOs already
  carry the group);
- link ETX from the MAC's results: an exponentially weighted moving average
  of the transmissions each frame took, a frame never acknowledged counting
  `etx_noack_penalty`;
- everything is bounded: neighbours, routes, multicast groups' routes (a
  table of their own, as Contiki's of 6), DAOs awaiting an ACK.

Choices RFC 6550 leaves open are documented in docs/sixlowpan-rpl.md.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from typing import Final

from iotbench.net.rpl import codec
from iotbench.net.rpl.codec import (
    INFINITE_RANK,
    MESSAGE_NAMES,
    MOP_STORING_MULTICAST,
    Dao,
    DaoAck,
    Dio,
    Dis,
    DodagConfiguration,
    RplDecodeError,
    Target,
    Transit,
)
from iotbench.net.rpl.objective import BY_OCP, OBJECTIVES
from iotbench.net.rpl.sequence import SEQUENCE_INIT, sequence_compare, sequence_increment
from iotbench.net.rpl.trickle import Trickle

ALL_RPL_NODES: Final = bytes.fromhex("ff02000000000000000000000000001a")
#: Bytes a DAO takes besides its targets (RPLInstanceID, flags, reserved,
#: sequence), and per target: a Target option for a /128 (20) and its Transit
#: Information option (6).
DAO_BASE_BYTES = 4
DAO_TARGET_BYTES = 26


#: A Rank that moved by more than this many MinHopRankIncrease since the last DIO
#: resets Trickle (Contiki-NG's RPL_SIGNIFICANT_CHANGE_THRESHOLD, 4).
SIGNIFICANT_RANK_CHANGE: Final = 4


@dataclass(frozen=True)
class RplParams:
    objective: str = "mrhof"
    dio_interval_min: int = 12  # Imin = 2^12 ms, as Contiki-NG and RIOT set it
    dio_interval_doublings: int = 8
    dio_redundancy: int = 10
    default_lifetime: int = 30  # in lifetime units
    lifetime_unit: int = 60  # seconds
    dao_ack: bool = True
    dao_delay_s: float = 1.0
    #: How long the targets children send are gathered before they go up in as few
    #: DAOs as they fit (RFC 6550 9.5 lets a node delay DAOs to aggregate them).
    dao_forward_delay_s: float = 0.5
    dao_ack_timeout_s: float = 5.0
    dao_retries: int = 4
    dis_start_delay_s: float = 5.0
    dis_interval_s: float = 30.0
    etx_initial: float = 2.0
    etx_alpha: float = 0.9  # weight of the old estimate
    etx_noack_penalty: float = 8.0
    max_neighbours: int = 32
    max_routes: int = 1024
    max_group_routes: float = math.inf  # multicast groups' routes, beside max_routes
    #: Targets per DAO; the driver sets as many as fit one link frame (a fragmented
    #: DAO is lost whenever one of its fragments is).
    targets_per_dao: int = 4
    #: The only neighbour this node takes as its parent (its link-local address), as
    #: when a routing tree is shared by every variant of a campaign (S4); None: the
    #: objective function chooses among all.
    fixed_parent: bytes | None = None
    #: Rank grows by one MinHopRankIncrease per hop whatever the link (RIOT's OF0,
    #: gnrc_rpl's of0.c); False: as the objective function computes it from ETX.
    hop_rank: bool = False
    #: "refresh": own targets every half lifetime, children's news passed on (above);
    #: "gnrc": RIOT's schedule, every route in one DAO a minute (the module's doc).
    dao_style: str = "refresh"


# RIOT's gnrc_rpl (sys/include/net/gnrc/rpl.h at the S4 study's commit): the wait
# before a DAO after joining or a child's DAO (GNRC_RPL_DAO_DELAY_DEFAULT plus up
# to GNRC_RPL_DAO_DELAY_JITTER), and before the next once one is acknowledged or
# given up (GNRC_RPL_DAO_DELAY_LONG plus the same jitter).
GNRC_DAO_DELAY_S: Final = (1.0, 2.0)
GNRC_DAO_DELAY_LONG_S: Final = (60.0, 61.0)


@dataclass(frozen=True)
class ParentChanged:
    parent: bytes | None


@dataclass(frozen=True)
class JoinedDodag:
    dodag_id: bytes
    version: int


@dataclass(frozen=True)
class RouteAdded:
    target: bytes
    next_hop: bytes


@dataclass(frozen=True)
class RouteRemoved:
    target: bytes


class _Neighbour:
    __slots__ = ("dodag_id", "dtsn", "etx", "heard", "rank", "version")

    def __init__(self, etx: float) -> None:
        self.rank = INFINITE_RANK
        self.version = 0
        self.dodag_id = b""
        self.dtsn = 0
        self.etx = etx
        self.heard = 0.0


class _Route:
    __slots__ = ("children", "expires", "next_hop", "sequence")

    def __init__(self, next_hop: bytes, expires: float, sequence: int) -> None:
        self.next_hop = next_hop
        self.expires = expires
        self.sequence = sequence
        #: A group's route: each child that announced it -> when that expires.
        self.children: dict[bytes, float] | None = None


def _is_group(address: bytes) -> bool:
    return address[0] == 0xFF


class RplNode:
    def __init__(
        self,
        rng: random.Random,
        params: RplParams,
        link_local: bytes,
        global_address: bytes,
        *,
        root: bool = False,
        instance_id: int = 0,
        dodag_id: bytes | None = None,
    ) -> None:
        self.rng = rng
        self.params = params
        self.link_local = link_local
        self.global_address = global_address
        self.root = root
        self.instance_id = instance_id
        self.of = OBJECTIVES[params.objective]()
        self.config = DodagConfiguration(
            dio_interval_doublings=params.dio_interval_doublings,
            dio_interval_min=params.dio_interval_min,
            dio_redundancy=params.dio_redundancy,
            max_rank_increase=7 * self.of.min_hop_rank_increase,
            min_hop_rank_increase=self.of.min_hop_rank_increase,
            objective_code_point=self.of.ocp,
            default_lifetime=params.default_lifetime,
            lifetime_unit=params.lifetime_unit,
        )
        self.dodag_id = dodag_id or global_address
        self.version = SEQUENCE_INIT
        self.dtsn = SEQUENCE_INIT
        self.rank = INFINITE_RANK
        self.lowest_rank = INFINITE_RANK
        #: The Rank our last DIO carried (children compute theirs from it).
        self.advertised_rank = INFINITE_RANK
        self.joined = False
        self.preferred_parent: bytes | None = None
        self.targets: dict[bytes, int] = {global_address: SEQUENCE_INIT}  # own -> path seq
        self.counters: dict[str, int] = {}
        self._neighbours: dict[bytes, _Neighbour] = {}
        self._routes: dict[bytes, _Route] = {}
        # The earliest of the routes' expiries, kept for next_timer (asked after every
        # frame a node sends; a root's table holds a route per node below it).
        # None: not known since the table last changed (_routes_changed).
        self._earliest_expiry: float | None = None
        self._out: list[tuple[bytes, int, bytes]] = []
        self._events: list[object] = []
        self._trickle = self._new_trickle()
        self._dao_seq = SEQUENCE_INIT
        self._awaiting_ack: dict[int, list] = {}  # seq -> [deadline, dst, message, tries]
        self._dao_at: float | None = None
        #: Whether the scheduled DAO carries the routes below too (after a join or a
        #: parent change, or when the parent asks) or only this node's own targets.
        self._dao_all = False
        # Children's targets waiting to go up (the latest news of each), and when.
        self._forward: dict[bytes, tuple[Target, Transit]] = {}
        self._forward_at: float | None = None
        self._dis_at: float | None = None
        self._refresh_at: float | None = None
        self._gnrc = params.dao_style == "gnrc"
        self._dao_tries = 0  # gnrc: DAOs sent since the last ACK or long wait
        self._now = 0.0

    # ------------------------------------------------------------------ state read

    @property
    def routes(self) -> dict[bytes, bytes]:
        return {target: r.next_hop for target, r in self._routes.items()}

    @property
    def children(self) -> set[bytes]:
        return {r.next_hop for r in self._routes.values()}

    def next_hop(self, dst: bytes) -> bytes | None:
        route = self._routes.get(dst)
        return route.next_hop if route is not None else None

    def events(self) -> list[object]:
        events, self._events = self._events, []
        return events

    def messages_to_send(self) -> list[tuple[bytes, int, bytes]]:
        out, self._out = self._out, []
        return out

    # ------------------------------------------------------------------ inputs

    def start(self, now: float) -> None:
        self._now = now
        if self.root:
            self.joined = True
            self.rank = self.lowest_rank = self.of.min_hop_rank_increase  # ROOT_RANK
            self._events.append(JoinedDodag(self.dodag_id, self.version))
            self._trickle.start(now)
        else:
            delay = self.params.dis_start_delay_s
            self._dis_at = now + delay * (0.5 + 0.5 * self.rng.random())

    def add_target(self, now: float, target: bytes) -> None:
        """An address or group of this node, to announce in DAOs."""
        if target not in self.targets:
            self.targets[target] = SEQUENCE_INIT
            self._schedule_dao(now, everything=False)

    def remove_target(self, now: float, target: bytes) -> None:
        if self.targets.pop(target, None) is None or not self.joined or self.root:
            return
        if target in self._routes:  # a group with members below: it must stay announced
            self._send_dao(self.preferred_parent, [target], self.config.default_lifetime)
        else:
            self._send_dao(self.preferred_parent, [target], lifetime=0)

    def receive(self, now: float, src: bytes, dst: bytes, code: int, body: bytes) -> None:
        self._now = now
        try:
            message = codec.decode(code, body)
        except RplDecodeError:
            self._count("decode_errors")
            return
        self._count(f"{MESSAGE_NAMES[code]}_received")
        if isinstance(message, Dio):
            self._on_dio(now, src, message)
        elif isinstance(message, Dis):
            self._on_dis(now, src, dst)
        elif isinstance(message, Dao):
            self._on_dao(now, src, message)
        elif isinstance(message, DaoAck):
            if self._gnrc:
                # gnrc_rpl_recv_DAO_ACK: an accepted ACK ends the tries, whatever
                # DAO it answers; the next DAO comes a minute on.
                if message.status == 0 or message.sequence == self._dao_seq:
                    self._long_wait(now)
            else:
                self._awaiting_ack.pop(message.sequence, None)

    def link_result(self, now: float, neighbour: bytes, acked: bool, transmissions: int) -> bool:
        """A unicast to `neighbour` ended. False: nothing here can have changed but the
        link's ETX (a given parent, a Rank by hops), so the driver need not look."""
        fixed = self.params.fixed_parent is not None and self.params.hop_rank
        n = self._neighbours.get(neighbour)
        if n is None:
            return not fixed
        sample = transmissions if acked else max(self.params.etx_noack_penalty, transmissions)
        alpha = self.params.etx_alpha
        n.etx = alpha * n.etx + (1.0 - alpha) * sample
        if neighbour == self.preferred_parent and not fixed:
            self._select_parent(now)
        return not fixed

    def link_etx(self, neighbour: bytes) -> float | None:
        """The link ETX to `neighbour` (None: not a neighbour)."""
        n = self._neighbours.get(neighbour)
        return None if n is None else n.etx

    # ------------------------------------------------------------------ timers

    def loop_detected(self, now: float) -> None:
        """Our forwarding saw a packet come back from the parent it was going up to
        (RFC 6550 11.2.2.2, a Rank error without the RPL option): a loop. Reset
        Trickle, so the DIOs that make the loop count its Ranks up (until a node
        leaves it or detaches) go out now, not at Imax."""
        self._count("loops_detected")
        if self.joined:
            self._trickle.inconsistent(now)

    def next_timer(self) -> float | None:
        times = [self._trickle.next_timer(), self._dao_at, self._dis_at, self._refresh_at]
        times.append(self._forward_at)
        times += [entry[0] for entry in self._awaiting_ack.values()]
        if self._routes:
            if self._earliest_expiry is None:
                self._earliest_expiry = min(r.expires for r in self._routes.values())
            times.append(self._earliest_expiry)
        due = [t for t in times if t is not None]
        return min(due) if due else None

    def handle_timer(self, now: float) -> None:
        self._now = now
        if self._trickle.handle_timer(now):
            self._send_dio(ALL_RPL_NODES)
        if self._dis_at is not None and now >= self._dis_at:
            self._dis_at = None
            if not self.joined:
                self._send(ALL_RPL_NODES, Dis())
                self._dis_at = now + self.params.dis_interval_s
        if self._dao_at is not None and now >= self._dao_at:
            self._dao_at = None
            if self._gnrc:
                self._gnrc_dao(now)
            elif self._dao_all:
                self._advertise_all(now)
            else:
                self._advertise_own(now)
        if self._forward_at is not None and now >= self._forward_at:
            self._forward_at = None
            pairs, self._forward = list(self._forward.values()), {}
            if self.joined and not self.root:
                self._send_pairs(self.preferred_parent, pairs)
        if self._refresh_at is not None and now >= self._refresh_at:
            self._refresh_at = None
            self._advertise_own(now)
        for seq, entry in list(self._awaiting_ack.items()):
            if now >= entry[0]:
                self._retry_dao(now, seq, entry)
        self._expire_routes(now)

    # ------------------------------------------------------------------ DIO / DIS

    def _new_trickle(self) -> Trickle:
        c = self.config
        imin = (2**c.dio_interval_min) / 1000.0
        return Trickle(self.rng, imin, c.dio_interval_doublings, c.dio_redundancy)

    def _send_dio(self, dst: bytes) -> None:
        dio = Dio(
            self.instance_id,
            self.version,
            self.rank if self.joined else INFINITE_RANK,
            self.dodag_id,
            dtsn=self.dtsn,
            mop=MOP_STORING_MULTICAST,
            configuration=self.config,
        )
        self.advertised_rank = dio.rank
        self._send(dst, dio)

    def _on_dis(self, now: float, src: bytes, dst: bytes) -> None:
        if not self.joined:
            return
        if dst == ALL_RPL_NODES:
            self._trickle.inconsistent(now)  # 8.3: a multicast DIS resets Trickle
        else:
            self._send_dio(src)  # a unicast DIS gets a unicast DIO

    def _on_dio(self, now: float, src: bytes, dio: Dio) -> None:
        if dio.instance_id != self.instance_id:
            return
        if self.root:
            if dio.dodag_id == self.dodag_id and dio.version == self.version:
                self._trickle.consistent()
            elif sequence_compare(dio.version, self.version) == -1:
                self._trickle.inconsistent(now)  # a node behind: tell it sooner
            return
        n = self._neighbour(src, now)
        if n is None:
            return
        n.rank, n.version, n.dodag_id, n.heard = dio.rank, dio.version, dio.dodag_id, now
        if not self.joined:
            if dio.rank == INFINITE_RANK:
                return
            self._adopt(dio)
            self._select_parent(now)
            return
        if dio.dodag_id != self.dodag_id:
            return
        order = sequence_compare(dio.version, self.version)
        if order == 1:  # global repair: a new DODAG version
            self.version = dio.version
            self.lowest_rank = INFINITE_RANK
            self._trickle.inconsistent(now)
            self._select_parent(now, new_version=True)
            return
        if order == -1:
            self._trickle.inconsistent(now)
            return
        if src == self.preferred_parent and dio.dtsn != n.dtsn:
            n.dtsn = dio.dtsn
            self._schedule_dao(now)  # 9.6: the parent asks for fresh DAOs
        if dio.rank != INFINITE_RANK:
            self._trickle.consistent()
        self._select_parent(now)

    def _rank_through(self, n: _Neighbour) -> int:
        """This node's Rank with `n` as its parent (INFINITE_RANK or more: none)."""
        if self.params.hop_rank:
            return n.rank + self.of.min_hop_rank_increase
        return self.of.rank_via(n.rank, n.etx)

    def _adopt(self, dio: Dio) -> None:
        self.dodag_id, self.version = dio.dodag_id, dio.version
        if dio.configuration is not None:
            self.config = dio.configuration
            objective = BY_OCP.get(dio.configuration.objective_code_point)
            if objective is not None:
                self.of = objective(dio.configuration.min_hop_rank_increase)
            self._trickle = self._new_trickle()

    def _neighbour(self, address: bytes, now: float) -> _Neighbour | None:
        n = self._neighbours.get(address)
        if n is None:
            if len(self._neighbours) >= self.params.max_neighbours:
                # Full: make room by forgetting the neighbour heard longest ago,
                # never the parent.
                old = min(
                    (a for a in self._neighbours if a != self.preferred_parent),
                    key=lambda a: self._neighbours[a].heard,
                    default=None,
                )
                if old is None:
                    return None
                del self._neighbours[old]
            n = self._neighbours[address] = _Neighbour(self.params.etx_initial)
        return n

    # ------------------------------------------------------------------ parents

    def _select_parent(self, now: float, new_version: bool = False) -> None:
        of = self.of
        best, best_cost = None, math.inf
        current = self.preferred_parent
        current_cost = math.inf
        fixed = self.params.fixed_parent
        for address, n in self._neighbours.items():
            if n.dodag_id != self.dodag_id or n.version != self.version:
                continue
            if fixed is not None:
                # A shared tree: the one parent it names, whatever its link's ETX.
                if address != fixed or n.rank == INFINITE_RANK:
                    continue
            elif n.rank == INFINITE_RANK or not of.acceptable(n.rank, n.etx):
                continue
            if self._rank_through(n) >= INFINITE_RANK:
                continue  # no Rank to be had through it: INFINITE_RANK is no route (3.5.1)
            # Loop avoidance: a parent ranks below us (in DAGRank), unless it is
            # the one we have and we are about to recompute our Rank from it.
            if (
                self.joined
                and not new_version
                and address != current
                and self._dag_rank(n.rank) >= self._dag_rank(self.rank)
            ):
                continue
            cost = of.path_cost(n.rank, n.etx)
            if address == current:
                current_cost = cost
            if cost < best_cost or (cost == best_cost and best is not None and address < best):
                best, best_cost = address, cost
        if best is not None and current is not None and current_cost < math.inf:
            if best != current and not of.switch(best_cost, current_cost):
                best, best_cost = current, current_cost  # hysteresis: keep the parent
        if best is None:
            self._detach(now)
            return
        rank = self._rank_through(self._neighbours[best])
        limit = self.lowest_rank + self.config.max_rank_increase
        if self.lowest_rank != INFINITE_RANK and rank > limit:
            self._detach(now)  # 8.2.2.4: the Rank may not grow past L + MaxRankIncrease
            return
        was_joined = self.joined
        self.rank = rank
        self.lowest_rank = min(self.lowest_rank, rank)
        if (
            self.advertised_rank != INFINITE_RANK
            and abs(rank - self.advertised_rank)
            > SIGNIFICANT_RANK_CHANGE * self.config.min_hop_rank_increase
        ):
            # Children compute their Ranks from the one we last advertised; one that
            # grew a lot makes us look nearer the root than we are, and a child of
            # ours could look like a fine parent to us: tell them now, not at Imax.
            self.advertised_rank = rank
            self._trickle.inconsistent(now)
        if not was_joined:
            self.joined = True
            self._dis_at = None
            self._events.append(JoinedDodag(self.dodag_id, self.version))
            self._trickle.start(now)
        if best != current:
            self._change_parent(now, current, best)

    def _dag_rank(self, rank: int) -> int:
        return rank // self.config.min_hop_rank_increase

    def _change_parent(self, now: float, old: bytes | None, new: bytes) -> None:
        self.preferred_parent = new
        self._count("parent_changes")
        self._events.append(ParentChanged(new))
        self._trickle.inconsistent(now)
        if old is not None and old in self._neighbours:
            # The old parent must forget the routes through us.
            everything = list(dict.fromkeys([*self.targets, *self._routes]))
            self._send_dao(old, everything, lifetime=0)
        self._schedule_dao(now)

    def _detach(self, now: float) -> None:
        """No parent left: poison the sub-DODAG and look for a DODAG again."""
        if not self.joined:
            return
        self.joined = False
        self.rank = INFINITE_RANK
        self.lowest_rank = INFINITE_RANK
        if self.preferred_parent is not None:
            self.preferred_parent = None
            self._events.append(ParentChanged(None))
        self._send_dio(ALL_RPL_NODES)  # infinite Rank: children must leave us
        self._trickle.stop()
        self._dis_at = now + self.params.dis_start_delay_s * self.rng.random()
        self._count("detached")

    # ------------------------------------------------------------------ DAO

    def _schedule_dao(self, now: float, everything: bool = True) -> None:
        if self.root or not self.joined:
            return
        if self._gnrc:  # gnrc_rpl_delay_dao: 1 to 2 s from now, tries afresh
            self._dao_at = now + self.rng.uniform(*GNRC_DAO_DELAY_S)
            self._dao_tries = 0
            return
        self._dao_all = self._dao_all or everything
        delay = self.params.dao_delay_s * (0.5 + 0.5 * self.rng.random())
        if self._dao_at is None or now + delay < self._dao_at:
            self._dao_at = now + delay

    def _gnrc_dao(self, now: float) -> None:
        """gnrc_rpl's _dao_handle_send: the next try, or after the last the long wait."""
        if self.root or not self.joined or self.preferred_parent is None:
            return
        if self._dao_tries >= self.params.dao_retries:
            self._count("dao_ack_timeouts")
            self._long_wait(now)
            return
        self._dao_tries += 1
        for target in self.targets:
            self.targets[target] = sequence_increment(self.targets[target])
        everything = list(self.targets) + [t for t in self._routes if t not in self.targets]
        pairs = [
            (_target(t), Transit(self.config.default_lifetime, self._path_sequence(t)))
            for t in everything
        ]
        self._dao_seq = sequence_increment(self._dao_seq)
        self._send(self.preferred_parent, Dao(self.instance_id, self._dao_seq, tuple(pairs), True))
        self._dao_at = now + self.params.dao_ack_timeout_s

    def _long_wait(self, now: float) -> None:
        """gnrc_rpl_long_delay_dao: the next DAO a minute on, tries afresh."""
        if self.root or not self.joined:
            return
        self._dao_at = now + self.rng.uniform(*GNRC_DAO_DELAY_LONG_S)
        self._dao_tries = 0

    def _lifetime_s(self, lifetime: int) -> float:
        return lifetime * self.config.lifetime_unit

    def _advertise_own(self, now: float) -> None:
        if self.joined and not self.root:
            for target in self.targets:
                self.targets[target] = sequence_increment(self.targets[target])
            self._send_dao(self.preferred_parent, list(self.targets), self.config.default_lifetime)
        lifetime = self._lifetime_s(self.config.default_lifetime)
        # (a DODAG configured with lifetimes of 0 s has nothing to refresh: its
        # routes end at once, and a refresh due now would come round forever)
        self._refresh_at = now + lifetime / 2 if lifetime > 0 else None

    def _advertise_all(self, now: float) -> None:
        """Own targets, and everything below (after joining or a parent change)."""
        self._dao_all = False
        self._advertise_own(now)
        below = [t for t in self._routes if t not in self.targets]
        if self.joined and below:
            lifetime = self.config.default_lifetime
            self._send_dao(self.preferred_parent, below, lifetime)

    def _send_dao(self, dst: bytes | None, targets: list[bytes], lifetime: int) -> None:
        pairs = [(_target(t), Transit(lifetime, self._path_sequence(t))) for t in targets]
        self._send_pairs(dst, pairs)

    def _send_pairs(self, dst: bytes | None, pairs: list[tuple[Target, Transit]]) -> None:
        """DAOs to `dst` with these targets, `targets_per_dao` in each, acknowledged."""
        if dst is None:
            return
        self._supersede(dst, {target.prefix for target, _ in pairs})
        per = self.params.targets_per_dao
        for i in range(0, len(pairs), per):
            chunk = tuple(pairs[i : i + per])
            self._dao_seq = sequence_increment(self._dao_seq)
            dao = Dao(self.instance_id, self._dao_seq, chunk, ack_request=self.params.dao_ack)
            self._send(dst, dao)
            if self.params.dao_ack:
                deadline = self._now + self.params.dao_ack_timeout_s
                self._awaiting_ack[self._dao_seq] = [deadline, dst, dao, 0]

    def _supersede(self, dst: bytes, news: set[bytes]) -> None:
        """Newer news of these targets goes to `dst`: DAOs to it still awaiting an ACK
        must not repeat the old (a retried No-Path arriving after the DAO that
        followed it would remove a good route), so they keep only the other targets."""
        for seq, entry in list(self._awaiting_ack.items()):
            if entry[1] != dst:
                continue
            dao: Dao = entry[2]
            rest = tuple((t, tr) for t, tr in dao.targets if t.prefix not in news)
            if not rest:
                del self._awaiting_ack[seq]
            elif len(rest) < len(dao.targets):
                entry[2] = replace(dao, targets=rest)

    def _path_sequence(self, target: bytes) -> int:
        if target in self.targets:
            return self.targets[target]
        route = self._routes.get(target)
        return route.sequence if route is not None else 0

    def _retry_dao(self, now: float, seq: int, entry: list) -> None:
        deadline, dst, dao, tries = entry
        if tries >= self.params.dao_retries or dst != self.preferred_parent:
            del self._awaiting_ack[seq]
            self._count("dao_ack_timeouts")
            return
        entry[0] = now + self.params.dao_ack_timeout_s
        entry[3] = tries + 1
        self._send(dst, dao)

    def _on_dao(self, now: float, src: bytes, dao: Dao) -> None:
        if dao.instance_id != self.instance_id or not self.joined:
            return
        if dao.ack_request:
            self._send(src, DaoAck(self.instance_id, dao.sequence))
        if src == self.preferred_parent:
            return  # storing mode: DAOs go up, never from a parent
        passing: list[tuple[Target, Transit]] = []
        for target, transit in dao.targets:
            address = target.prefix
            if _is_group(address):
                if self._on_group_target(now, src, address, transit):
                    passing.append((target, transit))
                continue
            if address in self.targets:
                continue  # our own address
            route = self._routes.get(address)
            if route is not None and self._stale(route, transit, address, src):
                continue
            if transit.path_lifetime == 0:  # No-Path
                if route is not None and route.next_hop == src:
                    del self._routes[address]
                    self._routes_changed()
                    self._events.append(RouteRemoved(address))
                    passing.append((target, transit))
                continue
            route = self._store_route(now, address, src, transit)
            if route is not None:
                passing.append((target, transit))
        if self._gnrc:  # gnrc_rpl_recv_DAO: every route goes up in our next DAO
            self._schedule_dao(now)
            return
        if passing and not self.root:
            for target, transit in passing:
                self._forward[target.prefix] = (target, transit)
            if self._forward_at is None:
                self._forward_at = now + self.params.dao_forward_delay_s

    def _stale(self, route: _Route, transit: Transit, address: bytes, src: bytes) -> bool:
        """A DAO that must neither move nor remove the route to `address`:

        - an older Path Sequence than the route's: news of a path the target has
          since left (RFC 6550 7.2, 9.2.2), such as the copy of a route an old
          ancestor still held and re-announced after a parent change;
        - the route's own Path Sequence from another neighbour while the route
          leads to the target itself: the target told us that sequence directly,
          so the same from elsewhere is a relay of that DAO that came back round
          (parents changed while it went up: this node, then its parent, then a
          node that has since chosen this one as parent). Taking it would point
          the route into a loop until the target's next refresh. (A target that
          moves increments its Path Sequence, so its news is never equal.)
        """
        order = sequence_compare(transit.path_sequence, route.sequence)
        looped = order == 0 and src != route.next_hop and route.next_hop[8:] == address[8:]
        if order != -1 and not looped:
            return False
        self._count("stale_daos")
        return True

    def _store_route(
        self, now: float, address: bytes, src: bytes, transit: Transit
    ) -> _Route | None:
        """Add or refresh the route to `address` through `src`; None when the table is full."""
        expires = now + self._lifetime_s(transit.path_lifetime)
        route = self._routes.get(address)
        self._routes_changed()
        if route is None:
            # Groups have a table of their own (max_group_routes), as in Contiki.
            if not _is_group(address) and self._unicast_routes() >= self.params.max_routes:
                self._count("routes_refused")
                return None
            route = self._routes[address] = _Route(src, expires, transit.path_sequence)
            self._events.append(RouteAdded(address, src))
            return route
        if route.next_hop != src:
            route.next_hop = src
            self._events.append(RouteAdded(address, src))
        route.expires, route.sequence = expires, transit.path_sequence
        return route

    def _on_group_target(self, now: float, src: bytes, group: bytes, transit: Transit) -> bool:
        """A child announced (or, with a No-Path, withdrew) members of `group` below it.
        True when the DAO must go on up: not when this node is a member itself (its
        own DAOs carry the group), nor for a No-Path while other children remain."""
        route = self._routes.get(group)
        if transit.path_lifetime == 0:
            if route is None or route.children is None or src not in route.children:
                return False
            self._routes_changed()
            del route.children[src]
            if route.children:
                route.expires = max(route.children.values())
                return False
            del self._routes[group]
            self._events.append(RouteRemoved(group))
            return group not in self.targets
        if route is None and self._group_routes() >= self.params.max_group_routes:
            self._count("group_routes_refused")
            return False
        route = self._store_route(now, group, src, transit)
        if route is None:
            return False
        if route.children is None:
            route.children = {}
        route.children[src] = route.expires
        route.expires = max(route.children.values())
        self._routes_changed()
        return group not in self.targets

    def _group_routes(self) -> int:
        return sum(1 for address in self._routes if _is_group(address))

    def _unicast_routes(self) -> int:
        return len(self._routes) - self._group_routes()

    def _routes_changed(self) -> None:
        """A route was added, removed or given a new expiry."""
        self._earliest_expiry = None

    def _expire_routes(self, now: float) -> None:
        if self._earliest_expiry is not None and self._earliest_expiry > now:
            return  # none is due
        for address, route in list(self._routes.items()):
            if route.expires > now:
                continue
            self._routes_changed()
            if route.children:  # a group: some children's announcements may live on
                for child, expires in list(route.children.items()):
                    if expires <= now:
                        del route.children[child]
                if route.children:
                    route.expires = max(route.children.values())
                    continue
            del self._routes[address]
            self._events.append(RouteRemoved(address))

    # ------------------------------------------------------------------ helpers

    def _send(self, dst: bytes, message: codec.Message) -> None:
        code, body = codec.encode(message)
        self._out.append((dst, code, body))
        self._count(f"{MESSAGE_NAMES[code]}_sent")

    def _count(self, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1


def _target(address: bytes) -> Target:
    return Target(address, 128)
