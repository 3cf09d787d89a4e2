"""RPL: one node's RPL instance (net/rpl/node.py, storing mode) fed DIOs, DIS, DAOs
and DAO-ACKs from its neighbours, valid for its DODAG or not, mutated ICMPv6 RPL
bodies and random ones, with link results and its own groups coming and going
(`rpl-node`)."""

from __future__ import annotations

import math
import random

from fuzz_targets.common import StackCase, mutate, randbytes
from iotbench.net.rpl import codec as rpl
from iotbench.net.rpl.codec import (
    INFINITE_RANK,
    Dao,
    DaoAck,
    Dio,
    Dis,
    DodagConfiguration,
    Target,
    Transit,
)
from iotbench.net.rpl.node import ALL_RPL_NODES, RplNode, RplParams

ROOT_ID = bytes.fromhex("fd000000000000000000000000000001")


def link_local(n: int) -> bytes:
    return bytes.fromhex("fe80000000000000") + n.to_bytes(8, "big")


def global_address(n: int) -> bytes:
    return bytes.fromhex("fd00000000000000") + n.to_bytes(8, "big")


NEIGHBOURS = [link_local(n) for n in range(2, 9)]  # more than max_neighbours
SELF = 1
GROUPS = [bytes.fromhex("ff1e00000000000000000000000089") + bytes((n,)) for n in (1, 2, 3)]


def _config(rng: random.Random) -> DodagConfiguration:
    if rng.random() < 0.6:
        return DodagConfiguration(dio_interval_min=rng.choice((3, 8, 12)))
    return DodagConfiguration(
        rng.random() < 0.5,
        rng.randrange(8),
        rng.choice((0, 1, 8, 20, rng.randrange(256))),
        rng.choice((0, 3, 8, 12, 20, rng.randrange(256))),
        rng.choice((0, 1, 10, 255)),
        rng.choice((0, 256, 7 * 256, 0xFFFF)),
        rng.choice((1, 128, 256, 0xFFFF)),
        rng.choice((0, 1, 2, rng.randrange(0x10000))),
        rng.choice((0, 1, 30, 255)),
        rng.choice((0, 1, 60, 0xFFFF)),
    )


def _dio(rng: random.Random, node: RplNode) -> Dio:
    version = node.version
    r = rng.random()
    if r < 0.2:
        version = (version + rng.choice((1, 2, -1, 127, 128))) % 256
    elif r < 0.25:
        version = rng.randrange(256)
    step = node.of.min_hop_rank_increase
    rank = rng.choice(
        (
            step,
            2 * step,
            3 * step,
            node.rank - step if node.rank < INFINITE_RANK else 4 * step,
            node.rank + step if node.rank < INFINITE_RANK - step else 5 * step,
            INFINITE_RANK,
            rng.randrange(0x10000),
        )
    )
    return Dio(
        rng.choice((0, 0, 0, 0, 1)),
        version,
        max(0, min(rank, INFINITE_RANK)),
        ROOT_ID if rng.random() < 0.9 else randbytes(rng, 16),
        dtsn=rng.choice((0, node.dtsn, rng.randrange(256))),
        grounded=rng.random() < 0.9,
        mop=rng.choice((3, 3, 2, rng.randrange(8))),
        preference=rng.randrange(8),
        configuration=_config(rng) if rng.random() < 0.7 else None,
    )


def _target(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.5:
        return global_address(rng.randrange(2, 20))
    if r < 0.7:
        return rng.choice(GROUPS)
    if r < 0.8:
        return global_address(SELF)  # the node's own address
    return randbytes(rng, 16)


def _dao(rng: random.Random, node: RplNode) -> Dao:
    targets = []
    for _ in range(rng.choice((0, 1, 1, 2, 4, 6))):
        lifetime = rng.choice((0, 0, 1, 30, 255))
        sequence = rng.choice((0, 240, 241, 255, rng.randrange(256)))
        targets.append((Target(_target(rng)), Transit(lifetime, sequence)))
    return Dao(
        rng.choice((0, 0, 0, 1)),
        rng.randrange(256),
        tuple(targets),
        ack_request=rng.random() < 0.7,
        dodag_id=ROOT_ID if rng.random() < 0.2 else None,
    )


def _message(rng: random.Random, node: RplNode, sent: list[Dao]) -> tuple[int, bytes, bytes]:
    """(ICMPv6 code, body, destination) of an RPL message to the node."""
    r = rng.random()
    dst = ALL_RPL_NODES if rng.random() < 0.6 else link_local(SELF)
    if r < 0.45:
        message = _dio(rng, node)
    elif r < 0.55:
        message = Dis()
    elif r < 0.8:
        message = _dao(rng, node)
        dst = link_local(SELF)
    elif r < 0.9:
        sequence = rng.choice(sent).sequence if sent else rng.randrange(256)
        message = DaoAck(rng.choice((0, 0, 1)), sequence, rng.choice((0, 0, 128, 255)))
        dst = link_local(SELF)
    else:
        return rng.randrange(256), randbytes(rng, rng.randrange(40)), dst
    code, body = rpl.encode(message)
    if rng.random() < 0.25:
        body = mutate(body, rng)
        if rng.random() < 0.1:
            code = rng.choice((0, 1, 2, 3, 0x80, rng.randrange(256)))
    return code, body, dst


def _check(node: RplNode, params: RplParams, sent: list[Dao]) -> None:
    for dst, code, body in node.messages_to_send():
        assert dst == ALL_RPL_NODES or dst in NEIGHBOURS, f"a message to {dst.hex()}"
        message = rpl.decode(code, body)
        assert rpl.encode(message) == (code, body), "the node sent non-canonical bytes"
        if isinstance(message, Dao):
            sent.append(message)
            del sent[:-6]
    node.events()
    assert len(node._neighbours) <= params.max_neighbours, "neighbours grow"
    groups = sum(1 for t in node._routes if t[0] == 0xFF)
    assert len(node._routes) - groups <= params.max_routes, "routes grow"
    assert groups <= params.max_group_routes, "group routes grow"
    assert len(node._forward) <= len(node._routes) + len(node.targets) + 32
    seen: set[tuple[bytes, bytes]] = set()
    for _, dst, dao, _ in node._awaiting_ack.values():  # _supersede's promise
        for target, _ in dao.targets:
            assert (dst, target.prefix) not in seen, "a DAO awaiting an ACK repeats a target"
            seen.add((dst, target.prefix))
    assert 0 <= node.rank <= INFINITE_RANK
    if node.joined and not node.root:
        assert node.preferred_parent in node._neighbours, "a parent it does not know"
    t = node.next_timer()
    assert t is None or math.isfinite(t)


def run_rpl_node_case(case: StackCase, count: int, stats: dict) -> None:
    """One node (a root in a fifth of the cases) and its neighbours' messages; timers
    fire at their times, as the simulator fires them (at most 64 per input)."""
    rng = case.rng
    params = RplParams(
        objective=rng.choice(("mrhof", "of0")),
        max_neighbours=4,
        max_routes=rng.choice((2, 8)),
        max_group_routes=rng.choice((1, math.inf)),
        targets_per_dao=rng.choice((1, 4)),
        dao_ack=rng.random() < 0.8,
        fixed_parent=rng.choice(NEIGHBOURS[:2]) if rng.random() < 0.2 else None,
        hop_rank=rng.random() < 0.2,
        dis_start_delay_s=rng.choice((0.1, 5.0)),
    )
    root = rng.random() < 0.2
    node = RplNode(
        random.Random(rng.randrange(1 << 30)),
        params,
        link_local(SELF),
        ROOT_ID if root else global_address(SELF),
        root=root,
        dodag_id=ROOT_ID if root else None,
    )
    sent: list[Dao] = []
    now = 0.0
    node.start(now)
    _check(node, params, sent)
    for _ in range(count):
        r = rng.random()
        if r < 0.08:
            neighbour = rng.choice(NEIGHBOURS)
            node.link_result(now, neighbour, rng.random() < 0.7, rng.randint(1, 8))
        elif r < 0.12:
            group = rng.choice(GROUPS)
            if rng.random() < 0.5:
                node.add_target(now, group)
            else:
                node.remove_target(now, group)
        elif r < 0.13:
            node.loop_detected(now)
        _check(node, params, sent)
        src = rng.choice(NEIGHBOURS)
        code, body, dst = _message(rng, node, sent)
        case.note(f"{src.hex()}>{dst.hex()}/{code}", body)
        node.receive(now, src, dst, code, body)
        _check(node, params, sent)
        end = now + rng.choice((0.0, 0.01, 0.5, 3.0, 20.0, 400.0))
        for _ in range(64):
            t = node.next_timer()
            if t is None or t > end:
                now = end
                break
            now = max(now, t)
            node.handle_timer(now)
            _check(node, params, sent)
            later = node.next_timer()
            assert later is None or later > now, f"a timer at {later} stays due at {now}"
        stats["inputs"] += 1


STACKS = {"rpl-node": run_rpl_node_case}
