"""How large a radio network iotbench simulates, how fast, in how much memory.

    python bench/scale.py --nodes 10000 --minutes 10 --json
    python bench/scale.py --nodes 1000 --minutes 5 --layout building
    python bench/scale.py --nodes 100000 --minutes 2 --layout building --interference-floor-db 0

A multi-hop 802.15.4 network of N nodes (a grid, or generated office
buildings side by side: as many of the default plan, 5 floors and 360
candidate positions each, as the nodes need, in a square block with a 20 m
street between neighbours, docs/radio.md) with the gateway in the middle
and the static routing tree of least ETX; every other node publishes a
32-byte JSON reading to the gateway every 60 s (CoAP NON PUT over UDP, IPv6
and 6LoWPAN, from a random phase), for M simulated minutes and one more for
the last readings to arrive (a reading still on its way 60 s after it was
sent counts as lost). The radio is the default one (an
AT86RF231 at +3 dBm, log-distance path loss with exponent 3 and 6 dB
shadowing); the grid spacing keeps each node's direct neighbours a few
links away, as a deployment would. `--variation gauss-markov` adds the
built-in radio scenarios' links in time (0.4 dB, 1 h; docs/radio.md), whose
cost per frame and receiver this then shows.

Printed (one JSON object with --json): nodes, sim_s (simulated seconds),
wall_s (the simulation run alone), build_s (building the network and its
neighbour lists), events (kernel events), peak_rss_mb (the process's peak
resident memory, build included), and, to show the run did real work, the
readings taken and delivered and the frames sent, the routing tree's depth,
the interference floor and the neighbours a node has within it (the
receivers every frame of that node touches), and steal_pct, the share of
the machine's CPU time the host took during the run (bench/host_time.py).
The ratio sim_s / wall_s above 1 means faster than real time.

`--interference-floor-db F` leaves out the signals F dB under a receiver's
noise instead of the default 10 dB: the opt-in approximation for large
dense networks (docs/performance.md, "Blocks of buildings"). It is set
after the scenario is expanded, so the network (its seed, positions and
shadowing draws) is the one the default floor builds; the JSON reports the
floor, and `--left-out` what it left out.

With `--left-out`, also what the interference floor left out of the run
(docs/radio.md, "Who hears whom"): each receiver's noise rise, in dB, from
the signals under its floor, each weighted by its sender's share of the run
on the air (`left_out_db`: the median, 99th percentile and largest over the
receivers), and the time examining the pairs again took (`left_out_s`).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

SCENARIO = """
name = "scale"
description = "every node publishes to the gateway every 60 s"
max_sim_time_s = {sim_s}
[network]
topology = "{layout}"
[network.nodes]
count = {nodes}
spacing_m = {spacing}
{building}
[network.roles]
gateway = "{gateway}"
{variation}
[network.routing]
protocol = "static"
[workload]
kind = "publish"
items = {items}
interval_s = 60.0
drain_s = 60.0
resource = "json"
path = "/r"
[protocol]
name = "coap"
[protocol.coap]
type = "non"
"""


VARIATIONS = {
    "none": "",
    "gauss-markov": '[network.radio.variation]\nmodel = "gauss-markov"\nsigma_db = 0.4\ntau_s = 3600.0',
}


def scenario_text(
    nodes: int, minutes: float, layout: str, spacing: float, variation: str = "none"
) -> str:
    items = max(1, int(minutes))
    if layout == "grid":
        columns = int(nodes**0.5 + 0.999)
        centre = (columns // 2) * columns + columns // 2
        gateway, building = f"n{min(centre, nodes - 1)}", f"columns = {columns}"
    else:
        # Enough buildings of the default plan (360 positions each) to hold the nodes.
        buildings = -(-nodes // 360)
        gateway, building = "centre", f"[network.nodes.building]\nbuildings = {buildings}"
    return SCENARIO.format(
        sim_s=minutes * 60.0 + 60.0,
        layout=layout,
        nodes=nodes,
        spacing=spacing,
        building=building,
        gateway=gateway,
        items=items,
        variation=VARIATIONS[variation],
    )


def run(
    nodes: int,
    minutes: float,
    layout: str,
    spacing: float,
    seed: int,
    variation: str = "none",
    left_out: bool = False,
    interference_floor_db: float | None = None,
) -> dict:
    # bench/, beside this file; imported here, as a test loads this file for
    # scenario_text alone.
    from host_time import HostTime

    from iotbench.metrics.items import ItemLog
    from iotbench.metrics.observers import Observers
    from iotbench.metrics.traffic import TrafficMeter
    from iotbench.scenarios import expand, parse_scenario
    from iotbench.scenarios.settings import run_settings
    from iotbench.sim import Simulator
    from iotbench.sim.garbage import no_collections, paced_collections
    from iotbench.world.networks import build_network
    from iotbench.world.workloads.publish import PublishWorkload

    text = scenario_text(nodes, minutes, layout, spacing, variation)
    (the_run,) = expand(parse_scenario(text, label="bench/scale.py"))
    config = the_run.config
    if interference_floor_db is not None:
        # Set after the expansion, which drew the network's seed from the
        # network section: the same network as at the default floor.
        config["network"]["radio"]["interference_floor_db"] = interference_floor_db
    t0 = time.perf_counter()
    sim = Simulator(seed)
    items = ItemLog()
    traffic = TrafficMeter(sim)
    settings = run_settings(config)
    with no_collections():  # as every run builds its network and workload (world/run.py)
        net = build_network(sim, settings.network, Observers(traffic), settings.protocol)
        workload = PublishWorkload(sim, net, settings, items)
        workload.start()
    t1 = time.perf_counter()
    with paced_collections(), HostTime() as host:  # paced as every run is (world/run.py)
        sim.run(until=config["max_sim_time_s"])
    t2 = time.perf_counter()
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {
        "nodes": nodes,
        "sim_s": round(sim.now, 3),
        "wall_s": round(t2 - t1, 3),
        "build_s": round(t1 - t0, 3),
        "events": sim.events_processed,
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "readings": items.stats.started,
        "delivered": items.stats.delivered,
        "frames": traffic.wire.packets,
        "tree_depth": net.tree.depth(),
        "interference_floor_db": settings.network.radio.interference_floor_db,
        "neighbours_per_node": round(
            sum(len(r.receivers) for r in net.radios.values()) / len(net.radios), 1
        ),
        "steal_pct": host.steal_pct,
    }
    if left_out:
        from interference_floor import left_out_figures  # bench/, beside this file

        result.update(left_out_figures(settings.network, net, sim.now))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--layout", choices=("grid", "building"), default="grid")
    parser.add_argument("--spacing", type=float, default=60.0, help="grid spacing, metres")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--variation", choices=tuple(VARIATIONS), default="none", help="links in time"
    )
    parser.add_argument(
        "--left-out",
        action="store_true",
        help="also what the interference floor left out (examines the pairs again)",
    )
    parser.add_argument(
        "--interference-floor-db",
        type=float,
        default=None,
        help="signals this far under a receiver's noise are left out (default: the "
        "scenario default, 10); a lower floor is the opt-in approximation for large "
        "networks, --left-out measures what it leaves out",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args()
    from iotbench.scenarios import ScenarioError

    try:
        result = run(
            args.nodes,
            args.minutes,
            args.layout,
            args.spacing,
            args.seed,
            args.variation,
            args.left_out,
            args.interference_floor_db,
        )
    except ScenarioError as exc:  # e.g. --nodes 1: the scenario's own message
        sys.exit(str(exc))
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>12} {value}")
    print(f"{'speed':>12} {result['sim_s'] / result['wall_s']:.2f} x real time", file=sys.stdout)


if __name__ == "__main__":
    main()
