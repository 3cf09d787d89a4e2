"""Radio network metrics: what the MACs and radios counted, and the energy they spent.

The MAC of each node keeps its counters as frames pass (net/mac/csma.py:
`MacCounters`, and `LinkCounters` per neighbour), each radio its receiver's
(net/radio/medium.py: `RadioCounters`) and the time in each state
(net/radio/energy.py). This module sums them over the network when the run
ends; docs/metrics.md defines every name.
"""

from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from iotbench.net.mac.csma import CsmaMac
    from iotbench.net.radio.medium import Radio
    from iotbench.net.routing.tree import Tree
    from iotbench.net.rpl.node import RplNode


def radio_metrics(
    macs: Sequence[CsmaMac],
    radios: Sequence[Radio],
    tree: Tree | None,
    rpl: Sequence[RplNode],
    now: float,
) -> dict[str, float | int]:
    """At `now`: the MACs' and radios' counters summed, their energy, the routing
    `tree`'s shape and what the `rpl` nodes sent."""
    out: dict[str, float | int] = {}
    for name in (
        "frames",
        "retries",
        "broadcasts",
        "acks_sent",
        "acks_received",
        "cca_busy",
        "channel_access_failures",
        "no_ack",
        "queue_drops",
        "duplicates",
    ):
        out[f"mac_{name}"] = sum(getattr(m.counters, name) for m in macs)
    if any(m.extended for m in macs):  # the AT86RF231's one frame buffer (mac kind at86rf2xx)
        out["mac_overwritten"] = sum(m.counters.overwritten for m in macs)
    for name in ("received", "corrupted", "collisions", "aborted", "missed_busy"):
        out[f"phy_{name}"] = sum(getattr(r.counters, name) for r in radios)
    energies = [r.power.joules(now) for r in radios]
    out["energy_j_total"] = sum(energies)
    out["energy_j_node_mean"] = sum(energies) / len(energies) if energies else math.nan
    out["energy_j_node_max"] = max(energies, default=math.nan)
    tx_s = [r.power.times_s(now)[4] for r in radios]
    out["radio_tx_s_node_max"] = max(tx_s, default=math.nan)
    pktbufs = [m.pktbuf for m in macs if m.pktbuf is not None]
    if pktbufs:  # network.device gives nodes packet memory (net/pktbuf.py)
        out["pktbuf_peak_bytes"] = max(b.peak for b in pktbufs)
        out["pktbuf_drops"] = sum(b.refused for b in pktbufs)
    if tree is not None:
        hops = [h for h in tree.hops if h >= 0]
        out["tree_depth"] = max(hops, default=0)
        others = [h for i, h in enumerate(tree.hops) if i != tree.root and h >= 0]
        out["tree_hops_mean"] = sum(others) / len(others) if others else math.nan
        out["tree_hops_median"] = statistics.median(others) if others else math.nan
    if rpl:
        for name in ("dio", "dis", "dao", "dao_ack"):
            out[f"rpl_{name}_sent"] = sum(node.counters.get(f"{name}_sent", 0) for node in rpl)
    return out
