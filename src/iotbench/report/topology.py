"""A picture of a radio network: where its nodes are, who hears whom, its routing tree.

`iotbench topology NAME` builds a scenario's network as a run would (the same
seed, the same shadowing), without simulating it, and draws it seen from
above: every node at its position (the gateway a star, producers filled,
other nodes hollow), a thin line for every link a frame of the reference
size crosses with a reception ratio of at least 50 % (darker for better), and
the routing tree in thick arrows towards the gateway: with RPL the tree RPL
has built after `rpl_s` simulated seconds (the network runs that long, with
no workload), otherwise the static tree of least ETX. A building's floors are
drawn one above the other, each as its own plan.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from iotbench.net.routing.tree import Tree, reception_ratio
from iotbench.world.networks.base import RadioNetwork
from iotbench.world.networks.topology import Topology

FLOOR_GAP_M = 10.0


def network_summary(topology: Topology, tree: Tree) -> dict:
    hops = [h for i, h in enumerate(tree.hops) if i != tree.root and h >= 0]
    return {
        "nodes": len(topology.nodes),
        "gateway": topology.ids("gateway")[0],
        "producers": len(topology.ids("producer")),
        "tree_depth": max(hops, default=0),
        "hops_mean": sum(hops) / len(hops) if hops else 0.0,
        "unreached": [topology.nodes[i].id for i in tree.unreached()],
    }


def draw(topology: Topology, radios, tree: Tree, path: Path, title: str, frame_bytes: int) -> None:
    floors = sorted({n.floor for n in topology.nodes})
    depth = max((n.position[1] for n in topology.nodes), default=0.0)
    # Floors one above the other, so a building's floors do not hide one another.
    offset = {f: i * (depth + FLOOR_GAP_M) for i, f in enumerate(floors)}
    xy = [(n.position[0], n.position[1] + offset[n.floor]) for n in topology.nodes]
    span_x = max(x for x, _ in xy) - min(x for x, _ in xy) or 1.0
    span_y = max(y for _, y in xy) - min(y for _, y in xy) or 1.0
    aspect = min(4.0, max(0.25, span_y / span_x))
    fig = Figure(figsize=(10.0, max(3.0, 10.0 * aspect)), layout="constrained")
    ax = fig.subplots()
    for radio in radios:
        for rcv, mw, _ in radio.neighbours:
            if rcv.index < radio.index:
                continue
            prr = reception_ratio(radio, rcv, mw, frame_bytes)
            if prr >= 0.5:
                (x0, y0), (x1, y1) = xy[radio.index], xy[rcv.index]
                ax.plot([x0, x1], [y0, y1], color="0.6", alpha=0.15 + 0.35 * prr, lw=0.6)
    for i, parent in enumerate(tree.parent):
        if parent is not None:
            (x0, y0), (x1, y1) = xy[i], xy[parent]
            ax.annotate(
                "",
                xy=(x1, y1),
                xytext=(x0, y0),
                arrowprops={"arrowstyle": "->", "color": "tab:blue", "lw": 1.4},
            )
    gateway = set(topology.ids("gateway"))
    producers = set(topology.ids("producer"))
    for node, (x, y) in zip(topology.nodes, xy, strict=True):
        if node.id in gateway:
            ax.scatter([x], [y], marker="*", s=260, color="tab:red", zorder=3)
        elif node.id in producers:
            ax.scatter([x], [y], s=36, color="tab:green", zorder=3)
        else:
            ax.scatter([x], [y], s=36, facecolors="white", edgecolors="0.3", zorder=3)
        if len(topology.nodes) <= 60:
            ax.annotate(node.id, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    if len(floors) > 1:
        left = min(x for x, _ in xy)
        for f in floors:
            ax.text(left, offset[f] + depth + 1.5, f"floor {f}", fontsize=9, color="0.3")
    summary = network_summary(topology, tree)
    ax.set_title(
        f"{title}: {summary['nodes']} nodes, gateway {summary['gateway']} (star), "
        f"tree depth {summary['tree_depth']}, mean {summary['hops_mean']:.1f} hops",
        fontsize=10,
    )
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)" + (", floors one above the other" if len(floors) > 1 else ""))
    ax.set_aspect("equal", adjustable="datalim")
    fig.savefig(path, dpi=110)


def draw_network(config: dict, path: Path, title: str, rpl_s: float = 120.0) -> dict:
    """Build the network of a run config and draw it into `path`; its summary, with
    `routing`: which tree was drawn."""
    from iotbench.metrics.observers import Observers
    from iotbench.scenarios.settings import required, run_settings
    from iotbench.sim import Simulator
    from iotbench.world.networks import build_network

    settings = run_settings(config)
    cfg = settings.network
    sim = Simulator(0)
    net = build_network(sim, cfg, Observers(), settings.protocol)
    if not isinstance(net, RadioNetwork):
        raise TypeError(f"{title}: not a radio network (network.topology is pair)")
    topology, radios, tree = net.topology, list(net.radios.values()), net.tree
    routing = "static tree of least ETX"
    if net.rpl:
        sim.run(until=rpl_s)
        tree = rpl_tree(net, tree)
        routing = f"RPL after {rpl_s:g} s"
        if required(cfg.routing, "network.routing").parents == "tree":
            routing += ", on the parents of the tree of least ETX"
    frame_bytes = required(cfg.radio, "network.radio").prr_frame_bytes
    draw(topology, radios, tree, path, f"{title} ({routing})", frame_bytes)
    return {**network_summary(topology, tree), "routing": routing}


def rpl_tree(net: RadioNetwork, static: Tree) -> Tree:
    """The tree of RPL's preferred parents (nodes not joined have none)."""
    nodes = net.rpl
    index = {r.link_local: i for i, r in enumerate(nodes)}
    parent = tuple(
        index.get(r.preferred_parent) if r.preferred_parent is not None else None for r in nodes
    )
    hops = []
    for i in range(len(nodes)):
        h, j = 0, i
        while (up := parent[j]) is not None and h <= len(nodes):
            h, j = h + 1, up
        hops.append(h if j == static.root else -1)
    return Tree(static.root, parent, tuple(float(h) for h in hops), tuple(hops))
