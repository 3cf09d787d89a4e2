"""A routing tree computed once from the link model (routing.protocol = static).

Each link's expected transmission count (ETX, De Couto et al.) follows from
its mean power: a data frame of `frame_bytes` gets through with probability
p_f (the Annex E model at the link's mean SNR, no interference), its
5-byte acknowledgment back with p_r, and ETX = 1 / (p_f p_r). Links whose
p_f or p_r falls below `min_prr` are not used. The tree is the one of least
total ETX from every node to the root (Dijkstra; ties go to fewer hops, then
to the lower node index), so it depends on the positions and the shadowing
alone: the same tree for every protocol run over the same network, as S4
requires. It does not change during a run.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
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
        while self.parent[path[-1]] is not None:
            path.append(self.parent[path[-1]])
        return path

    def depth(self) -> int:
        return max(self.hops)


def reception_ratio(sender: Radio, receiver: Radio, mw: float, frame_bytes: int) -> float:
    """Expected reception ratio of a frame at the link's mean power, alone on the air."""
    if mw < receiver.sensitivity_mw:
        return 0.0
    return phy.packet_success(mw / receiver.noise_mw, 8 * frame_bytes)


def link_etx(radios: Sequence[Radio], frame_bytes: int, min_prr: float) -> list[dict[int, float]]:
    """For each radio, the ETX of its usable links to each neighbour index."""
    power = [{rcv.index: mw for rcv, mw, _ in r.neighbours} for r in radios]
    out: list[dict[int, float]] = [{} for _ in radios]
    for a, radio in enumerate(radios):
        for b, mw in power[a].items():
            forward = reception_ratio(radio, radios[b], mw, frame_bytes)
            back_mw = power[b].get(a)
            if back_mw is None:
                continue
            back = reception_ratio(radios[b], radio, back_mw, mac.ACK_FRAME_BYTES)
            if forward >= min_prr and back >= min_prr:
                out[a][b] = 1.0 / (forward * back)
    return out


def fewest_hops(
    radios: Sequence[Radio], root: int, frame_bytes: int = 50, min_prr: float = 0.5
) -> list[int]:
    """Each node's shortest path to `root` in hops over the links least_etx_tree may
    use (breadth first; -1 when there is none): the yardstick of S4's link stress."""
    etx_links = link_etx(radios, frame_bytes, min_prr)
    hops = [-1] * len(radios)
    hops[root] = 0
    frontier = [root]
    incoming: list[list[int]] = [[] for _ in radios]
    for child, links in enumerate(etx_links):
        for node in links:
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
    radios: Sequence[Radio], root: int, frame_bytes: int = 50, min_prr: float = 0.5
) -> Tree:
    """The tree of least ETX to `root` (Dijkstra over links towards the root)."""
    etx_links = link_etx(radios, frame_bytes, min_prr)
    n = len(radios)
    # Who can send to each node: the links that carry data upwards.
    incoming: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for child, links in enumerate(etx_links):
        for node, etx in links.items():
            incoming[node].append((child, etx))
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
        for child, etx in incoming[node]:
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
