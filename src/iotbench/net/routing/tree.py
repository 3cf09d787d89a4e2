"""A routing tree computed once from the link model (routing.protocol = static).

Each link's expected transmission count (ETX, De Couto et al.) follows from
its power: a data frame of `frame_bytes` gets through with probability p_f
(the Annex E model at the link's SNR, no interference), its 5-byte
acknowledgment back with p_r, and ETX = 1 / (p_f p_r). When the links vary
in time (network.radio.variation) each ratio is its expectation over the
variation's law (`spread`, propagation.py), not its value at the mean
power: a link just above the receiver's sensitivity at its mean spends half
its time below it, and its expected transmissions count that. Links whose
p_f or p_r falls below `min_prr` are not used. The tree is the one of least
total ETX from every node to the root (Dijkstra; ties go to fewer hops, then
to the lower node index), so it depends on the positions and the shadowing
alone: the same tree for every protocol run over the same network, as S4
requires. It does not change during a run. The links' frequency moves every
mean power by the same few tenths of a dB, which flips near ties between
parents; `gain_db` computes the tree as another channel's powers would give
it (S4's variants on channels 11 and 26 share channel 26's tree).
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from iotbench.net import ieee802154 as mac
from iotbench.net.radio import phy
from iotbench.net.radio.medium import Radio


@dataclass(frozen=True)
class Tree:
    root: int
    parent: tuple[int | None, ...]  # parent[i]; None for the root and unreached nodes
    etx: tuple[float, ...]  # path ETX to the root (inf when unreached)
    hops: tuple[int, ...]  # -1 when unreached

    def reached(self, i: int) -> bool:
        return i == self.root or self.parent[i] is not None

    def unreached(self) -> list[int]:
        return [i for i in range(len(self.parent)) if not self.reached(i)]

    def children(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.parent]
        for i, p in enumerate(self.parent):
            if p is not None:
                out[p].append(i)
        return out

    def path_to_root(self, i: int) -> list[int]:
        path = [i]
        parent = self.parent[i]
        while parent is not None:
            path.append(parent)
            parent = self.parent[parent]
        return path

    def path_between(self, a: int, b: int) -> list[int]:
        """The tree path from a to b (up to their common ancestor, then down)."""
        up_a, up_b = self.path_to_root(a), self.path_to_root(b)
        common = next(x for x in up_a if x in set(up_b))
        down = up_b[: up_b.index(common)]
        return up_a[: up_a.index(common) + 1] + list(reversed(down))

    def depth(self) -> int:
        return max(self.hops)


#: A link's power about its mean: (weight, factor) pairs (propagation.py `spread`).
STEADY = ((1.0, 1.0),)


def reception_ratio(
    sender: Radio,
    receiver: Radio,
    mw: float,
    frame_bytes: int,
    spread: Sequence[tuple[float, float]] = STEADY,
) -> float:
    """Expected reception ratio of a frame over a link of mean power `mw` alone on the
    air, over the link's variation (`spread`)."""
    return _Spread(spread).ratio(receiver, mw, frame_bytes)


class _Spread:
    """A link variation's law (`spread`), with what spares most links the sum over
    its points: a link whose weakest point is received whole, or whose strongest is
    below the sensitivity, has the ratio every point gives (the same number the sum
    gives, since the weights are added in the same order)."""

    def __init__(self, spread: Sequence[tuple[float, float]]) -> None:
        self.points = spread
        self.low = min(factor for _, factor in spread)
        self.high = max(factor for _, factor in spread)
        whole = 0.0
        for weight, _factor in spread:
            whole += weight * 1.0
        self.whole = whole

    def ratio(self, receiver: Radio, mw: float, frame_bytes: int) -> float:
        sensitivity, noise, bits = receiver.sensitivity_mw, receiver.noise_mw, 8 * frame_bytes
        if mw * self.high < sensitivity:
            return 0.0
        weakest = mw * self.low
        if weakest >= sensitivity and phy.packet_success(weakest / noise, bits) == 1.0:
            return self.whole  # (packet_success only grows with the SNR)
        total = 0.0
        for weight, factor in self.points:
            power = mw * factor
            if power >= sensitivity:
                total += weight * phy.packet_success(power / noise, bits)
        return total


def usable_links(
    radios: Sequence[Radio],
    frame_bytes: int,
    min_prr: float,
    gain_db: float = 0.0,
    spread: Sequence[tuple[float, float]] = STEADY,
) -> Iterator[tuple[int, int, float]]:
    """(a, b, ETX) of every link whose reception ratio is at least `min_prr` both
    ways (data from a to b, its ACK back), a then b in index order."""
    gain = 10.0 ** (gain_db / 10.0)
    law = _Spread(spread)
    # The way back of a -> b is a's entry in b's list. Every list is in receiver
    # order and the a are taken in order, so each list is walked once, by a
    # cursor, instead of a dict per radio of every neighbour (in a dense
    # network hundreds a node, most of them there as interference alone).
    cursor = [0] * len(radios)
    for a, radio in enumerate(radios):
        for rcv, mw in zip(radio.receivers, radio.mean_mws, strict=True):
            b = rcv.index
            back_at = cursor[b]
            others = rcv.receivers
            while back_at < len(others) and others[back_at].index < a:
                back_at += 1
            cursor[b] = back_at
            if back_at == len(others) or others[back_at] is not radio:
                continue  # b's list does not have a: no way back
            forward = law.ratio(rcv, mw * gain, frame_bytes)
            if forward < min_prr:
                continue
            back = law.ratio(radio, rcv.mean_mws[back_at] * gain, mac.ACK_FRAME_BYTES)
            if back >= min_prr:
                yield a, b, 1.0 / (forward * back)


def fewest_hops(
    radios: Sequence[Radio],
    root: int,
    frame_bytes: int = 50,
    min_prr: float = 0.5,
    spread: Sequence[tuple[float, float]] = STEADY,
) -> list[int]:
    """Each node's shortest path to `root` in hops over the links least_etx_tree may
    use (breadth first; -1 when there is none): the yardstick of S4's link stress."""
    hops = [-1] * len(radios)
    hops[root] = 0
    frontier = [root]
    incoming: list[list[int]] = [[] for _ in radios]
    for child, node, _etx in usable_links(radios, frame_bytes, min_prr, spread=spread):
        incoming[node].append(child)
    while frontier:
        following = []
        for node in frontier:
            for child in incoming[node]:
                if hops[child] < 0:
                    hops[child] = hops[node] + 1
                    following.append(child)
        frontier = following
    return hops


def least_etx_tree(
    radios: Sequence[Radio],
    root: int,
    frame_bytes: int = 50,
    min_prr: float = 0.5,
    gain_db: float = 0.0,
    spread: Sequence[tuple[float, float]] = STEADY,
) -> Tree:
    """The tree of least ETX to `root` (Dijkstra over links towards the root), every
    link `gain_db` stronger than its mean, over the links' variation (`spread`)."""
    n = len(radios)
    # Who can send to each node (the links that carry data upwards) and at what
    # ETX, in arrays: a dense network has hundreds of usable links a node.
    children = [array("i") for _ in range(n)]
    etxs = [array("d") for _ in range(n)]
    for child, node, etx in usable_links(radios, frame_bytes, min_prr, gain_db, spread):
        children[node].append(child)
        etxs[node].append(etx)
    inf = float("inf")
    best: list[tuple[float, int, int]] = [(inf, n, n)] * n  # (cost, hops, parent)
    best[root] = (0.0, 0, -1)
    queue = [(0.0, 0, root)]
    done = [False] * n
    while queue:
        c, h, node = heapq.heappop(queue)
        if done[node]:
            continue
        done[node] = True
        for child, etx in zip(children[node], etxs[node], strict=True):
            if done[child]:
                continue
            candidate = (c + etx, h + 1, node)
            if candidate < best[child]:
                best[child] = candidate
                heapq.heappush(queue, (candidate[0], candidate[1], child))
    parent = tuple(None if b[2] in (-1, n) else b[2] for b in best)
    return Tree(
        root,
        parent,
        tuple(b[0] for b in best),
        tuple(b[1] if b[0] < inf else -1 for b in best),
    )
