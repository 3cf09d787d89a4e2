"""Trickle (RFC 6206), the objective functions, and RPL nodes in a small fake network."""

from __future__ import annotations

import heapq
import random

import pytest

from iotbench.net.rpl.codec import (
    DAO,
    DIO,
    DIS,
    INFINITE_RANK,
    Dao,
    Dio,
    Target,
    Transit,
    decode,
    encode,
)
from iotbench.net.rpl.node import (
    ALL_RPL_NODES,
    JoinedDodag,
    ParentChanged,
    RouteAdded,
    RouteRemoved,
    RplNode,
    RplParams,
)
from iotbench.net.rpl.objective import Mrhof, Of0
from iotbench.net.rpl.trickle import Trickle

# ---------------------------------------------------------------- Trickle


def test_trickle_doubles_up_to_imax_and_transmits_in_the_second_half():
    t = Trickle(random.Random(1), imin_s=1.0, doublings=3, k=2)
    t.start(0.0)
    starts, sends = [], []
    now = 0.0
    while now < 60.0:
        now = t.next_timer()
        if t.handle_timer(now):
            sends.append(now)
        starts.append(t.interval_s)
    assert max(starts) == 8.0  # Imax = Imin * 2^3
    # The intervals: [0,1) [1,3) [3,7) [7,15) [15,23) ...; t in [I/2, I) of each.
    bounds = [(0, 1), (1, 3), (3, 7), (7, 15), (15, 23)]
    for (a, b), sent in zip(bounds, sends, strict=False):
        assert a + (b - a) / 2 <= sent < b


def test_trickle_suppresses_after_k_consistent_messages_and_resets_on_inconsistency():
    t = Trickle(random.Random(2), imin_s=1.0, doublings=4, k=1)
    t.start(0.0)
    t.consistent()
    assert t.handle_timer(t.next_timer()) is False  # suppressed: c >= k
    while t.interval_s < 8.0:
        t.handle_timer(t.next_timer())
    t.inconsistent(100.0)
    assert t.interval_s == 1.0 and 100.5 <= t.next_timer() < 101.0
    never = Trickle(random.Random(3), 1.0, 2, k=0)  # k = 0: never suppress
    never.start(0.0)
    never.consistent()
    assert never.handle_timer(never.next_timer()) is True


# ---------------------------------------------------------------- objective functions


def test_mrhof_ranks_by_etx_with_hysteresis():
    of = Mrhof()
    assert of.min_hop_rank_increase == 128
    assert of.rank_via(128, 1.0) == 256  # the root's child over a perfect link
    assert of.rank_via(256, 2.5) == 256 + 320
    assert of.acceptable(256, 4.0) and not of.acceptable(256, 4.1)  # MAX_LINK_METRIC 512
    assert not of.acceptable(32700, 1.0)  # MAX_PATH_COST 32768
    assert of.switch(400, 600) and not of.switch(500, 600)  # PARENT_SWITCH_THRESHOLD 192


def test_of0_steps_of_rank():
    of = Of0()
    assert of.min_hop_rank_increase == 256
    assert [of.step_of_rank(e) for e in (1.0, 2.0, 3.0, 3.67)] == [1, 4, 7, 9]
    assert of.rank_via(256, 1.0) == 512 and of.rank_via(256, 2.0) == 256 + 4 * 256
    assert of.acceptable(256, 3.6) and not of.acceptable(256, 4.0)
    assert of.switch(512, 768) and not of.switch(600, 768)


# ---------------------------------------------------------------- nodes in a fake network


def ll(i: int) -> bytes:
    return bytes.fromhex("fe80" + "00" * 13) + bytes((i + 1,))


def gl(i: int) -> bytes:
    return bytes.fromhex("fd00" + "00" * 13) + bytes((i + 1,))


class Net:
    """RPL nodes joined by given links; messages take `delay` seconds; a unicast to a
    neighbour is acknowledged (link_result) when the link exists."""

    def __init__(self, n: int, links: set[tuple[int, int]], params=None, seed: int = 1):
        self.params = params or RplParams(dis_start_delay_s=1.0, dao_delay_s=0.5)
        self.nodes = [
            RplNode(
                random.Random(seed * 100 + i),
                self.params,
                ll(i),
                gl(i),
                root=i == 0,
                dodag_id=gl(0),
            )
            for i in range(n)
        ]
        self.links = {frozenset(pair) for pair in links}
        self.now = 0.0
        self.queue: list = []
        self.seq = 0
        self.sent: list[tuple[float, int, int]] = []  # (time, sender, code)
        self.messages: list[tuple[int, object]] = []  # (sender, decoded message)
        self.events: list[tuple[int, object]] = []
        for node in self.nodes:
            node.start(0.0)

    def linked(self, a: int, b: int) -> bool:
        return frozenset((a, b)) in self.links

    def _flush(self, i: int) -> None:
        node = self.nodes[i]
        for dst, code, body in node.messages_to_send():
            self.sent.append((self.now, i, code))
            self.messages.append((i, decode(code, body)))
            if dst == ALL_RPL_NODES:
                targets = [j for j in range(len(self.nodes)) if j != i and self.linked(i, j)]
            else:
                j = int(dst[-1]) - 1
                ok = self.linked(i, j)
                node.link_result(self.now, dst, ok, 1 if ok else 4)
                targets = [j] if ok else []
            for j in targets:
                self.seq += 1
                heapq.heappush(self.queue, (self.now + 0.01, self.seq, j, ll(i), dst, code, body))
        self.events += [(i, e) for e in node.events()]

    def run(self, until: float) -> None:
        while True:
            for i in range(len(self.nodes)):
                self._flush(i)
            timers = [(t, i) for i, n in enumerate(self.nodes) if (t := n.next_timer())]
            nxt = min([t for t, _ in timers] + ([self.queue[0][0]] if self.queue else []))
            if nxt > until:
                self.now = until
                return
            self.now = nxt
            if self.queue and self.queue[0][0] <= self.now:
                _, _, j, src, dst, code, body = heapq.heappop(self.queue)
                self.nodes[j].receive(self.now, src, dst, code, body)
                continue
            for t, i in timers:
                if t <= self.now:
                    self.nodes[i].handle_timer(self.now)


LINE = {(0, 1), (1, 2), (2, 3), (3, 4)}


def test_a_line_converges_with_ranks_growing_away_from_the_root():
    net = Net(5, LINE)
    net.run(120.0)
    assert all(node.joined for node in net.nodes)
    ranks = [node.rank for node in net.nodes]
    assert ranks == sorted(ranks) and len(set(ranks)) == 5
    assert [node.preferred_parent for node in net.nodes[1:]] == [ll(0), ll(1), ll(2), ll(3)]
    # Storing mode: the root routes to every node through n1; n2 to n3 and n4 via n3.
    root = net.nodes[0]
    assert {gl(i): ll(1) for i in range(1, 5)}.items() <= root.routes.items()
    assert net.nodes[2].routes == {gl(3): ll(3), gl(4): ll(3)}
    assert any(isinstance(e, JoinedDodag) for _, e in net.events)


def test_dio_counts_fall_as_trickle_doubles():
    net = Net(3, {(0, 1), (1, 2)})
    net.run(600.0)
    dios = [t for t, _, code in net.sent if code == DIO]
    early = sum(1 for t in dios if t < 60.0)
    late = sum(1 for t in dios if 540.0 <= t < 600.0)
    assert early > 3 * max(1, late)


def test_a_node_that_loses_its_parent_finds_another_and_stale_routes_go():
    """The No-Path DAO to the old parent cannot cross the broken link: the old
    parent's route stays until its lifetime runs out, while the root already
    routes through the new branch (its DAO overrides the old next hop)."""
    # A diamond: n3 hangs off n1 (and could use n2); then the link n1-n3 breaks.
    net = Net(4, {(0, 1), (0, 2), (1, 3), (2, 3)})
    net.run(120.0)
    n3 = net.nodes[3]
    first = n3.preferred_parent
    assert first in (ll(1), ll(2))
    via = 1 if first == ll(1) else 2
    other = 3 - via
    net.links.discard(frozenset((via, 3)))
    # Unacknowledged unicasts drive the ETX up until the parent is dropped.
    for _ in range(20):
        n3.link_result(net.now, first, False, 4)
    net.run(net.now + 600.0)
    assert n3.preferred_parent == ll(other)
    assert net.nodes[other].routes.get(gl(3)) == ll(3)
    assert net.nodes[0].routes.get(gl(3)) == ll(other)
    assert any(isinstance(e, ParentChanged) for i, e in net.events if i == 3)
    lifetime = 30 * 60.0  # default lifetime x lifetime unit
    net.run(net.now + lifetime + 60.0)
    assert gl(3) not in net.nodes[via].routes
    assert any(isinstance(e, RouteRemoved) for i, e in net.events if i == via)


def test_a_stale_route_announced_again_does_not_take_the_target_back():
    """n3 moves from n1 to n2; its No-Path cannot reach n1, which keeps the old
    route. When n1 then announces everything below it again (as after a parent
    change), its copy carries n3's old Path Sequence: the root keeps the new path."""
    net = Net(4, {(0, 1), (0, 2), (1, 3), (2, 3)})
    net.run(120.0)
    n3 = net.nodes[3]
    via = 1 if n3.preferred_parent == ll(1) else 2
    other = 3 - via
    net.links.discard(frozenset((via, 3)))
    for _ in range(20):
        n3.link_result(net.now, ll(via), False, 4)
    net.run(net.now + 60.0)
    assert net.nodes[0].routes[gl(3)] == ll(other)
    assert net.nodes[via].routes.get(gl(3)) == ll(3)  # stale, until its lifetime ends
    net.nodes[via]._schedule_dao(net.now)  # re-announce every route below
    net.run(net.now + 10.0)
    assert net.nodes[0].routes[gl(3)] == ll(other)
    assert net.nodes[0].counters.get("stale_daos", 0) >= 1


def test_a_targets_own_dao_coming_back_round_does_not_move_its_route():
    """n1 told the root its Path Sequence directly. The same DAO relayed back by
    another child (it went up while parents changed, and came round) is not news:
    the route keeps leading to n1, not into a loop."""
    net = Net(3, {(0, 1), (0, 2), (1, 2)})
    net.run(120.0)
    root, n1 = net.nodes[0], net.nodes[1]
    assert n1.preferred_parent == ll(0) and root.routes[gl(1)] == ll(1)
    sequence = n1.targets[gl(1)]
    looped = Dao(root.instance_id, 7, ((Target(gl(1)), Transit(30, sequence)),))
    root.receive(net.now, ll(2), ll(0), *encode(looped))
    assert root.routes[gl(1)] == ll(1)
    assert root.counters.get("stale_daos", 0) == 1
    # A newer Path Sequence from elsewhere is news: n1 moved below n2.
    moved = Dao(root.instance_id, 8, ((Target(gl(1)), Transit(30, sequence + 1)),))
    root.receive(net.now, ll(2), ll(0), *encode(moved))
    assert root.routes[gl(1)] == ll(2)


def dios_from(net: Net, i: int, since: float) -> list[float]:
    return [t for t, j, code in net.sent if j == i and code == DIO and t >= since]


def test_a_loop_that_forwarding_reports_resets_trickle():
    """Forwarding saw a packet come back from the parent it was going up to: the
    node's DIOs go out again at Imin, so the loop's Ranks count up at once."""
    net = Net(3, {(0, 1), (1, 2)})
    net.run(600.0)
    n1 = net.nodes[1]
    assert not dios_from(net, 1, 500.0)  # Trickle has grown past 100 s
    n1.loop_detected(net.now)
    start = net.now
    net.run(start + 10.0)
    assert dios_from(net, 1, start)
    assert n1.counters["loops_detected"] == 1


def test_a_rank_that_grew_a_lot_is_advertised_at_once():
    """n2's parent n1 now advertises a Rank 600 higher: n2's own grows by more than
    four MinHopRankIncrease, and n2 tells its neighbours now (Contiki-NG's
    significant change), not when Trickle's interval ends; a small change waits."""
    net = Net(4, {(0, 1), (1, 2), (2, 3)})
    net.run(600.0)
    n2 = net.nodes[2]
    assert n2.preferred_parent == ll(1) and not dios_from(net, 2, 500.0)
    n1 = net.nodes[1]

    def parent_advertises(rank: int) -> float:
        _, body = encode(Dio(n1.instance_id, n1.version, rank, gl(0)))
        n2.receive(net.now, ll(1), ALL_RPL_NODES, DIO, body)
        start = net.now
        net.run(start + 10.0)
        return start

    before = n2.rank
    assert not dios_from(net, 2, parent_advertises(n1.rank + 100))  # small: waits
    start = parent_advertises(n1.rank + 600)
    assert n2.rank > before + 4 * 128 and n2.joined
    assert dios_from(net, 2, start) and n2.advertised_rank == n2.rank


def test_a_node_alone_keeps_soliciting_and_never_joins():
    net = Net(2, set())
    net.run(200.0)
    assert not net.nodes[1].joined
    assert sum(1 for _, i, code in net.sent if i == 1 and code == DIS) >= 5


def test_poisoning_detaches_the_sub_dodag():
    net = Net(3, {(0, 1), (1, 2)})
    net.run(120.0)
    net.links.discard(frozenset((0, 1)))
    for _ in range(20):  # n1's parent, the root, stops acknowledging
        net.nodes[1].link_result(net.now, ll(0), False, 4)
    net.run(net.now + 5.0)
    assert not net.nodes[1].joined
    assert not net.nodes[2].joined  # it heard its parent's infinite Rank and left too


def test_multicast_targets_travel_up_as_routes():
    net = Net(3, {(0, 1), (1, 2)})
    net.run(60.0)
    group = bytes.fromhex("ff1e0000000000000000000000890001")
    net.nodes[2].add_target(net.now, group)
    net.run(net.now + 30.0)
    assert net.nodes[1].next_hop(group) == ll(2) and net.nodes[0].next_hop(group) == ll(1)
    assert any(isinstance(e, RouteAdded) and e.target == group for _, e in net.events)
    net.nodes[2].remove_target(net.now, group)
    net.run(net.now + 30.0)
    assert net.nodes[0].next_hop(group) is None


GROUP = bytes.fromhex("ff1e0000000000000000000000890001")
#: n0 - n1, with n2 and n3 both children of n1, and n4 below n2.
TREE = {(0, 1), (1, 2), (1, 3), (2, 4)}


def test_a_member_with_members_below_keeps_forwarding_for_the_group():
    """n2 is a member and so is n4 below it: n2 stores n4's announcement (SMRF
    must forward to n4) but does not pass it on, its own DAO carries the group."""
    net = Net(5, TREE)
    net.run(60.0)
    net.nodes[2].add_target(net.now, GROUP)
    net.run(net.now + 10.0)
    before = len(net.messages)
    net.nodes[4].add_target(net.now, GROUP)
    net.run(net.now + 10.0)
    assert net.nodes[2].next_hop(GROUP) == ll(4)
    assert net.nodes[1].next_hop(GROUP) == ll(2)
    # n2 passes on n4's own address (refreshed with the join), never the group.
    passed = [m for i, m in net.messages[before:] if i == 2 and isinstance(m, Dao)]
    assert passed and all(t.prefix != GROUP for m in passed for t, _ in m.targets)
    net.nodes[2].remove_target(net.now, GROUP)  # n2 leaves; n4 is still below it
    net.run(net.now + 10.0)
    assert net.nodes[1].next_hop(GROUP) == ll(2) and net.nodes[2].next_hop(GROUP) == ll(4)


def test_one_childs_no_path_leaves_the_group_to_the_other_children():
    net = Net(5, TREE)
    net.run(60.0)
    net.nodes[3].add_target(net.now, GROUP)
    net.nodes[4].add_target(net.now, GROUP)
    net.run(net.now + 10.0)
    net.nodes[4].remove_target(net.now, GROUP)
    net.run(net.now + 10.0)
    assert net.nodes[2].next_hop(GROUP) is None  # n4 was n2's only member
    assert net.nodes[1].next_hop(GROUP) is not None  # n3 is still a member
    assert net.nodes[0].next_hop(GROUP) == ll(1)
    net.nodes[3].remove_target(net.now, GROUP)
    net.run(net.now + 10.0)
    assert all(node.next_hop(GROUP) is None for node in net.nodes)


def test_a_node_keeps_routes_for_at_most_max_group_routes_groups():
    """Contiki keeps 6 multicast routes (S6): a seventh group is refused where the
    table is full, and the unicast routes are not affected."""
    params = RplParams(dis_start_delay_s=1.0, dao_delay_s=0.5, max_group_routes=2)
    net = Net(3, {(0, 1), (1, 2)}, params)
    net.run(60.0)
    groups = [bytes.fromhex(f"ff1e00000000000000000000008900{k:02x}") for k in (1, 2, 3)]
    for group in groups:
        net.nodes[2].add_target(net.now, group)
    net.run(net.now + 30.0)
    assert [net.nodes[1].next_hop(g) for g in groups] == [ll(2), ll(2), None]
    assert net.nodes[1].counters["group_routes_refused"] >= 1
    assert net.nodes[1].next_hop(gl(2)) == ll(2)


def test_joining_a_group_announces_the_group_not_the_whole_sub_dodag():
    """A new target is announced on its own: resending every route below on each
    join made DAOs multiply up the tree (a storm when 30 members join at once)."""
    net = Net(5, TREE)
    net.run(60.0)
    before = len(net.sent)
    net.nodes[1].add_target(net.now, GROUP)
    net.run(net.now + 10.0)
    daos = [(i, m) for i, m in net.messages[before:] if isinstance(m, Dao)]
    assert [i for i, _ in daos] == [1]  # one DAO, from n1, with n1's own targets only
    assert {t.prefix for t, _ in daos[0][1].targets} == {gl(1), GROUP}


def test_children_news_is_gathered_into_few_daos_on_the_way_up():
    """n2 and n3 join groups at the same moment: n1 passes both on in one DAO."""
    net = Net(5, TREE)
    net.run(60.0)
    before = len(net.messages)
    other = bytes.fromhex("ff1e0000000000000000000000890002")
    net.nodes[2].add_target(net.now, GROUP)
    net.nodes[3].add_target(net.now, other)
    net.run(net.now + 10.0)
    up = [m for i, m in net.messages[before:] if i == 1 and isinstance(m, Dao)]
    assert len(up) == 1
    assert {GROUP, other} <= {t.prefix for t, _ in up[0].targets}
    assert net.nodes[0].next_hop(GROUP) == net.nodes[0].next_hop(other) == ll(1)


def test_a_dao_awaiting_its_ack_never_repeats_news_that_newer_news_replaced():
    """A No-Path whose DAO-ACK was lost must not be sent again once a DAO for the
    same target went to the same parent: arriving after it, the No-Path would take
    the new route away."""
    net = Net(2, {(0, 1)})
    net.run(30.0)
    node = net.nodes[1]
    node.add_target(net.now, GROUP)
    net.run(net.now + 5.0)
    net.links.clear()  # nothing reaches the root any more: no DAO-ACKs
    node.remove_target(net.now, GROUP)  # a No-Path for the group...
    node.add_target(net.now, GROUP)  # ...then, soon after, a DAO for it again
    before = len(net.messages)
    net.run(net.now + 30.0)  # the DAO goes, then retries of what awaits an ACK
    sent = [m for i, m in net.messages[before:] if i == 1 and isinstance(m, Dao)]
    about_group = [tr.path_lifetime for m in sent for t, tr in m.targets if t.prefix == GROUP]
    assert about_group[0] == 0  # the No-Path itself, once
    assert len(about_group) > 2 and 0 not in about_group[1:]  # the DAO, and its retries


GNRC = RplParams(dis_start_delay_s=1.0, dao_ack_timeout_s=3.0, dao_style="gnrc")


def daos_from(net: Net, i: int, since: int = 0) -> list[Dao]:
    return [m for j, m in net.messages[since:] if j == i and isinstance(m, Dao)]


def test_gnrc_sends_every_route_in_one_dao_a_minute():
    """RIOT's gnrc_rpl: n1's DAO names itself and everything below it, in one DAO,
    and a DAO-ACK sends the next one 60 to 61 s later (gnrc_rpl_long_delay_dao)."""
    net = Net(5, TREE, GNRC)
    net.run(60.0)
    assert {gl(i): ll(1) for i in range(1, 5)}.items() <= net.nodes[0].routes.items()
    before = len(net.messages)
    net.run(600.0)
    own = [m for m in daos_from(net, 4, before)]  # a leaf: nothing below to trigger it
    assert 8 <= len(own) <= 9  # 540 s at one DAO every 60 to 61 s (and its ACK's 10 ms)
    assert all([t.prefix for t, _ in m.targets] == [gl(4)] for m in own)
    n1 = daos_from(net, 1, before)
    assert all({t.prefix for t, _ in m.targets} == {gl(1), gl(2), gl(3), gl(4)} for m in n1)
    # n1 answers each DAO of its children (n2's, itself triggered by n4's, and n3's)
    # with its own 1 to 2 s later: at least one a minute for each of its two children.
    assert len(n1) >= 2 * 8


def test_gnrc_tries_four_times_then_waits_a_minute():
    net = Net(2, {(0, 1)}, GNRC)
    net.run(30.0)
    assert gl(1) in net.nodes[0].routes
    net.links.clear()  # no DAO-ACK comes back any more
    before = len(net.messages)
    net.run(net.now + 140.0)
    times = [t for t, i, code in net.sent[before:] if i == 1 and code == DAO]
    # The minute's DAO, then three more 3 s apart (GNRC_RPL_DAO_SEND_RETRIES = 4),
    # then a minute's wait (GNRC_RPL_DAO_DELAY_LONG) before the next.
    gaps = [round(b - a, 3) for a, b in zip(times, times[1:], strict=False)]
    assert gaps[:3] == [3.0, 3.0, 3.0]
    assert 63.0 <= gaps[3] <= 64.0
    assert net.nodes[1].counters["dao_ack_timeouts"] >= 1


def test_gnrc_postpones_a_parents_dao_while_its_children_keep_sending():
    """gnrc_rpl_delay_dao restarts the 1 to 2 s wait: while a child's DAOs keep
    coming less than a second apart, the parent sends none; 1 to 2 s after the
    last, it sends one."""
    net = Net(3, {(0, 1), (1, 2)}, GNRC)
    net.run(30.0)
    last = max(t for t, i, code in net.sent if i == 1 and code == DAO)
    net.run(last + 5.0)  # acknowledged: the parent's next DAO is a minute on
    parent = net.nodes[1]
    before = len(net.messages)
    for k in range(12):
        net.run(net.now + 0.9)
        code, body = encode(Dao(0, k, ((Target(gl(2), 128), Transit(30, 9 + k)),), True))
        parent.receive(net.now, ll(2), ll(1), code, body)
    barrage_end = net.now
    net.run(barrage_end + 0.99)
    assert daos_from(net, 1, before) == []
    net.run(barrage_end + 2.0)
    assert len(daos_from(net, 1, before)) == 1


def test_bad_messages_are_counted_never_raised():
    node = RplNode(random.Random(1), RplParams(), ll(1), gl(1))
    node.start(0.0)
    node.receive(1.0, ll(2), ALL_RPL_NODES, DIO, b"\x00\x01")
    node.receive(1.0, ll(2), ALL_RPL_NODES, 0x99, b"")
    assert node.counters["decode_errors"] == 2 and not node.joined


def test_neighbour_table_is_bounded():
    params = RplParams(max_neighbours=4)
    node = RplNode(random.Random(1), params, ll(50), gl(50))
    node.start(0.0)
    for i in range(20):
        code, body = encode(Dio(0, 240, 256 + i, gl(0)))
        node.receive(float(i), ll(i), ALL_RPL_NODES, code, body)
    assert len(node._neighbours) <= 4 and node.joined


@pytest.mark.parametrize("objective", ["mrhof", "of0"])
def test_both_objectives_build_the_line(objective):
    net = Net(4, {(0, 1), (1, 2), (2, 3)}, RplParams(objective=objective, dao_delay_s=0.5))
    net.run(120.0)
    assert [node.preferred_parent for node in net.nodes[1:]] == [ll(0), ll(1), ll(2)]
    dio = decode(DIO, encode(Dio(0, 240, INFINITE_RANK, gl(0)))[1])
    assert dio.rank == INFINITE_RANK


def test_a_fixed_parent_is_the_only_parent_and_rank_counts_hops():
    """routing.parents = tree (S4's shared tree): a node takes only the parent it is
    given, even where a better one is in reach, and with hop ranks (RIOT's OF0) its
    Rank is its parent's plus MinHopRankIncrease, whatever the link's ETX."""
    full = {(0, 1), (1, 2), (0, 2), (2, 3)}  # node 2 hears the root directly
    nodes = []
    for i in range(4):
        fixed = {1: ll(0), 2: ll(1), 3: ll(2)}.get(i)
        params = RplParams(
            dis_start_delay_s=1.0,
            dao_delay_s=0.5,
            fixed_parent=fixed,
            hop_rank=True,
            objective="of0",
        )
        nodes.append(params)
    net = Net(4, full)
    for i, params in enumerate(nodes):
        net.nodes[i] = RplNode(random.Random(i), params, ll(i), gl(i), root=i == 0, dodag_id=gl(0))
        net.nodes[i].start(0.0)
    net.run(60.0)
    root, *others = net.nodes
    assert [n.preferred_parent for n in others] == [ll(0), ll(1), ll(2)]
    step = root.config.min_hop_rank_increase
    assert [n.rank for n in net.nodes] == [step * (k + 1) for k in range(4)]
    # Lost frames to the parent change its ETX but neither the parent nor the Rank.
    for _ in range(10):
        assert not others[1].link_result(60.0, ll(1), False, 4)
    assert others[1].preferred_parent == ll(1) and others[1].rank == 3 * step
    assert set(root.routes) == {gl(1), gl(2), gl(3)}


@pytest.mark.parametrize("hop_rank", [False, True])
def test_no_node_joins_at_infinite_rank(hop_rank):
    """A parent so deep that a Rank through it would be INFINITE_RANK (0xFFFF)
    offers no route (RFC 6550 3.5.1): the node does not join through it, and
    joins through a parent one Rank shallower."""
    params = RplParams(objective="of0", hop_rank=hop_rank)
    node = RplNode(random.Random(1), params, ll(50), gl(50))
    node.start(0.0)
    # What a Rank grows by through a new neighbour: a hop, or OF0's steps for its ETX.
    step = Of0().min_hop_rank_increase if hop_rank else Of0().rank_via(0, params.etx_initial)
    deep = INFINITE_RANK - step  # through it: exactly 0xFFFF
    code, body = encode(Dio(0, 240, deep, gl(0)))
    node.receive(1.0, ll(1), ALL_RPL_NODES, code, body)
    assert not node.joined and node.rank == INFINITE_RANK
    code, body = encode(Dio(0, 240, deep - 1, gl(0)))  # through it: 0xFFFE
    node.receive(2.0, ll(2), ALL_RPL_NODES, code, body)
    assert node.joined and node.preferred_parent == ll(2) and node.rank < INFINITE_RANK


def _next_timer_from_scratch(node: RplNode) -> float | None:
    """What next_timer must say, from the node's state alone (it keeps the routes'
    earliest expiry between changes of its table)."""
    times = [node._trickle.next_timer(), node._dao_at, node._dis_at, node._refresh_at]
    times += [node._forward_at, *(entry[0] for entry in node._awaiting_ack.values())]
    times += [route.expires for route in node._routes.values()]
    due = [t for t in times if t is not None]
    return min(due) if due else None


def test_next_timer_follows_every_change_of_the_route_table():
    """Routes added, refreshed, moved (a parent change), withdrawn (No-Path), groups
    joined and left, and routes expired: next_timer is the earliest of them at every
    step, as a walk over the whole table gives."""
    params = RplParams(dis_start_delay_s=1.0, dao_delay_s=0.5, default_lifetime=2)
    net = Net(5, TREE | {(3, 4)}, params)
    script = {
        30.0: lambda: net.nodes[4].add_target(net.now, GROUP),
        60.0: lambda: net.nodes[3].add_target(net.now, GROUP),
        90.0: lambda: net.links.discard(frozenset((2, 4))),  # n4 must move below n3
        200.0: lambda: net.nodes[4].remove_target(net.now, GROUP),
        260.0: lambda: net.links.discard(frozenset((1, 3))),  # n3 and n4 cut off
    }
    expired = 0
    while net.now < 600.0:
        net.run(net.now + 0.5)
        if net.now in script:
            script.pop(net.now)()
        for node in net.nodes:
            assert node.next_timer() == _next_timer_from_scratch(node)
        expired += sum(isinstance(e, RouteRemoved) for _, e in net.events)
        net.events.clear()
    assert not script and expired >= 3  # the scenario did reach the removals
