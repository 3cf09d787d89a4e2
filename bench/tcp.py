"""Speed of the simulated TCP: a bulk transfer and S3's MQTT runs.

Prints, for each workload, simulated seconds and TCP segments per wall
second. Only the simulation is timed (building the topology is excluded for
the bulk transfer; for S3 the whole `run_one` call is timed, as a campaign
runs it).

    python bench/tcp.py [--bytes N] [--items N] [--repeat R]

Bulk transfer: two nodes, one 10 Mbit/s link with 10 ms one-way delay and
1 % loss in each direction, N bytes (default 10 MB) from client to server
over one connection with Linux-like defaults, then close. S3: every MQTT
variant of `s3-robustness` in every condition with --items data items each
(default 200).
"""

from __future__ import annotations

import argparse
import copy
import time

from iotbench.metrics.observers import Observers, PacketRecorder
from iotbench.net.impairments import BernoulliLoss, Impairment
from iotbench.net.link import PointToPointLink
from iotbench.net.node import Node
from iotbench.net.tcp import DataReceived, TcpStack
from iotbench.scenarios import expand, load_scenario
from iotbench.sim import Simulator
from iotbench.world import run_one


def bulk(size: int) -> tuple[float, float, int, bool]:
    """(wall seconds of the run, simulated seconds to the last byte, segments, complete).

    The clock stops at the last byte's arrival: the run goes on through the
    FIN exchange and TIME_WAIT (60 s), which cost no work worth timing.
    """
    sim = Simulator(seed=1)
    log: list = []
    a, b = Node(sim, "client"), Node(sim, "server")
    ia, ib = a.add_interface("10.0.0.1", 1500), b.add_interface("10.0.0.2", 1500)
    PointToPointLink(
        sim,
        ia,
        ib,
        rate_bps=10_000_000,
        delay_s=0.01,
        queue_packets=1000,
        observers=Observers(PacketRecorder(log)),
        impair_a_to_b=Impairment(loss=BernoulliLoss(sim.rng("ab"), 0.01)),
        impair_b_to_a=Impairment(loss=BernoulliLoss(sim.rng("ba"), 0.01)),
    )
    client, server = TcpStack(sim, a), TcpStack(sim, b)
    received = [0, 0.0]  # bytes, time of the last one

    def on_accept(sock):
        def on_event(event):
            if isinstance(event, DataReceived):
                received[0] += len(event.data)
                received[1] = sim.now

        sock.on_event = on_event

    server.listen(80, on_accept)
    data = bytes(size)
    sock = client.connect(ib.address, 80, lambda event: None, data=data)
    sock.close()
    t0 = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - t0
    return wall, received[1], len(log), received[0] == size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=10_000_000, help="bulk transfer size")
    parser.add_argument("--items", type=int, default=200, help="items per S3 MQTT run")
    parser.add_argument("--repeat", type=int, default=1, help="keep the fastest of R runs")
    args = parser.parse_args()
    repeat = max(args.repeat, 1)

    results = [bulk(args.bytes) for _ in range(repeat)]
    wall, sim_s, segments, complete = min(results)
    print(
        f"bulk transfer: {args.bytes} bytes complete={complete} sim_s={sim_s:.2f} "
        f"segments={segments} wall_s={wall:.3f} sim_s_per_wall_s={sim_s / wall:.1f} "
        f"segments_per_wall_s={segments / wall:,.0f}"
    )

    runs = expand(
        load_scenario("s3-robustness"),
        filters={"variant": ["mqtt-qos0", "mqtt-qos1"]},
        overrides={"workload.items": args.items},
    )
    header = f"{'variant':<10} {'condition':<11} {'sim_s':>9} {'packets':>8} {'wall_s':>7} {'sim_s/wall_s':>12} {'segments/wall_s':>15}"
    print(f"\ns3-robustness MQTT runs, {args.items} items each")
    print(header)
    print("-" * len(header))
    total_sim = total_packets = total_wall = 0.0
    for run in runs:
        wall = float("inf")
        for _ in range(repeat):
            config = copy.deepcopy(run.config)
            t0 = time.perf_counter()
            metrics = run_one(config, run.seed).metrics
            wall = min(wall, time.perf_counter() - t0)
        sim_s, packets = metrics["sim_time_s"], metrics["packets"]
        total_sim, total_packets, total_wall = (
            total_sim + sim_s,
            total_packets + packets,
            total_wall + wall,
        )
        print(
            f"{run.params['variant']:<10} {run.params['condition']:<11} {sim_s:>9.1f} "
            f"{packets:>8} {wall:>7.3f} {sim_s / wall:>12,.0f} {packets / wall:>15,.0f}",
            flush=True,
        )
    print("-" * len(header))
    print(
        f"{'total':<10} {'':<11} {total_sim:>9.1f} {total_packets:>8.0f} {total_wall:>7.3f} "
        f"{total_sim / total_wall:>12,.0f} {total_packets / total_wall:>15,.0f}"
    )


if __name__ == "__main__":
    main()
