"""iotbench versus ns-3 on the same UDP echo workload, measured in the same run.

Workload (identical on both sides; the ns-3 side is bench/peers/ns3_udp_echo.py,
the project's reference peer workload, run unchanged): two nodes, one
point-to-point link of 250 kbit/s with 5 ms one-way delay, 5 % packet loss on
packets arriving at the server, the client sends N UDP datagrams of 32 bytes
every 10 ms starting at t = 1 s, and the server echoes each one.

Each side runs in its own process, `--repeat` times, alternating, so that both
meet the same machine conditions. Only the simulation run itself is timed
(ns-3: Simulator.Run(); iotbench: Simulator.run()); process start, imports and
set-up are printed separately as start-up. The ratio compares the best run of
each side (the least disturbed one); the median ratio is printed too.
`--check` also counts what ns-3 did (packets per direction, losses, first send
time; see bench/peers/ns3_counts.py) next to the same counts from iotbench.
ns-3 comes from the `ns3` Python package: pip install '.[bench]'.

    python bench/vs_ns3.py [N] [--repeat R] [--check]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

from host_time import HostTime  # bench/, beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
NS3_SCRIPT = os.path.join(HERE, "peers", "ns3_udp_echo.py")
NS3_COUNTS = os.path.join(HERE, "peers", "ns3_counts.py")


def run_iotbench(n: int) -> dict:
    """One iotbench run in this process; the caller's imports are not counted."""
    from iotbench.apps.echo import UdpEchoClient, UdpEchoServer
    from iotbench.metrics.observers import Observers
    from iotbench.metrics.traffic import TrafficMeter
    from iotbench.net.impairments import BernoulliLoss, Impairment
    from iotbench.net.link import PointToPointLink
    from iotbench.net.node import Node
    from iotbench.sim import Simulator

    t0 = time.perf_counter()
    sim = Simulator(seed=1)
    # The meter every simulation run has; what the comparison prints per
    # direction comes from its per-node counts.
    traffic = TrafficMeter(sim)
    client = Node(sim, "client")
    server = Node(sim, "server")
    cif = client.add_interface("10.1.1.1", 1500)
    sif = server.add_interface("10.1.1.2", 1500)
    PointToPointLink(
        sim,
        cif,
        sif,
        rate_bps=250_000,
        delay_s=0.005,
        queue_packets=100,
        # Loss on the client -> server direction: packets arriving at the server,
        # like the ns-3 side's receive error model on the server's device.
        impair_a_to_b=Impairment(loss=BernoulliLoss(sim.rng("server-rx-loss"), 0.05)),
        observers=Observers(traffic),
    )
    echo_server = UdpEchoServer(server, 9)
    echo = UdpEchoClient(sim, client, sif.address, count=n, size=32, interval_s=0.01)
    echo.start(1.0)
    setup = time.perf_counter() - t0
    t1 = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - t1
    to_server, to_client = traffic.nodes["client"], traffic.nodes["server"]
    return {
        "wall_s": wall,
        "setup_s": setup,
        "sim_s": sim.now,
        "events": sim.events_processed,
        "first_send_s": echo.first_sent_s,
        "client_sent": echo.sent,
        "server_received": echo_server.echoed,
        "lost_to_server": to_server.lost,
        "server_sent": to_client.sent,
        "client_received": echo.received,
        "lost_to_client": to_client.lost,
        "bytes_per_packet": traffic.wire.total / max(traffic.wire.packets, 1),
        "packets_logged": traffic.wire.packets,
    }


def _child(n: int) -> None:
    """`--side iotbench`: one run, printed as JSON for the parent."""
    print(json.dumps(run_iotbench(n)))


def _run(cmd: list[str]) -> tuple[str, float]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    total = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return done.stdout, total


def measure_iotbench(n: int) -> dict:
    out, total = _run([sys.executable, os.path.abspath(__file__), "--side", "iotbench", str(n)])
    result = json.loads(out.strip().splitlines()[-1])
    result["startup_s"] = total - result["wall_s"]
    return result


def measure_ns3(n: int) -> dict:
    out, total = _run([sys.executable, NS3_SCRIPT, str(n)])
    m = re.search(r"wall_s=([\d.]+) sim_s=([\d.]+)", out)
    if not m:
        raise RuntimeError(f"could not read the ns-3 output:\n{out}")
    wall, sim_s = float(m.group(1)), float(m.group(2))
    return {"wall_s": wall, "sim_s": sim_s, "startup_s": total - wall, "raw": out.strip()}


def _interleave(n: int, repeat: int, ours: list[dict], theirs: list[dict]) -> None:
    """Each side `repeat` times, one after the other."""
    for i in range(1, repeat + 1):
        r = measure_iotbench(n)
        ours.append(r)
        print(
            f"run {i} iotbench wall_s={r['wall_s']:.3f} startup_s={r['startup_s']:.2f} "
            f"sim_s={r['sim_s']:.1f} events={r['events']:.0f}",
            flush=True,
        )
        p = measure_ns3(n)
        theirs.append(p)
        print(
            f"run {i} ns-3     wall_s={p['wall_s']:.3f} startup_s={p['startup_s']:.2f} "
            f"sim_s={p['sim_s']:.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=100_000, help="requests (default 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side (default 3)")
    parser.add_argument("--check", action="store_true", help="also count what ns-3 did")
    parser.add_argument("--side", choices=["iotbench"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        _child(args.n)
        return
    n = args.n
    ours: list[dict] = []
    theirs: list[dict] = []
    host = HostTime()
    try:
        with host:
            _interleave(n, args.repeat, ours, theirs)
    except RuntimeError as exc:
        print(f"{exc}\n(is the `ns3` package installed? pip install '.[bench]')", file=sys.stderr)
        sys.exit(1)

    last = ours[-1]
    print(
        f"iotbench counts: first_send_s={last['first_send_s']:g} "
        f"client_sent={last['client_sent']:.0f} server_received={last['server_received']:.0f} "
        f"lost_to_server={last['lost_to_server']:.0f} server_sent={last['server_sent']:.0f} "
        f"client_received={last['client_received']:.0f} lost_to_client={last['lost_to_client']:.0f} "
        f"bytes_per_packet={last['bytes_per_packet']:g} packets_logged={last['packets_logged']:.0f}"
    )
    if args.check:
        out, _ = _run([sys.executable, NS3_COUNTS, str(n)])
        print(out.strip().splitlines()[-1])

    best_ours = min(r["wall_s"] for r in ours)
    best_theirs = min(p["wall_s"] for p in theirs)
    med_ours = statistics.median(r["wall_s"] for r in ours)
    med_theirs = statistics.median(p["wall_s"] for p in theirs)
    print(
        f"iotbench requests={n} best_wall_s={best_ours:.3f} median_wall_s={med_ours:.3f} "
        f"requests_per_wall_s={n / best_ours:.0f} events_per_wall_s={last['events'] / best_ours:.0f} "
        f"sim_s_per_wall_s={last['sim_s'] / best_ours:.0f} "
        f"startup_s={statistics.median(r['startup_s'] for r in ours):.2f}"
    )
    print(
        f"ns-3     requests={n} best_wall_s={best_theirs:.3f} median_wall_s={med_theirs:.3f} "
        f"requests_per_wall_s={n / best_theirs:.0f} "
        f"sim_s_per_wall_s={theirs[-1]['sim_s'] / best_theirs:.0f} "
        f"startup_s={statistics.median(p['startup_s'] for p in theirs):.2f}"
    )
    print(
        f"ratio: iotbench is {best_theirs / best_ours:.2f}x as fast as ns-3 "
        f"(best simulation wall time of {args.repeat}: {best_ours:.3f} s vs {best_theirs:.3f} s "
        f"for {n} requests; median ratio {med_theirs / med_ours:.2f}x)"
    )
    if host.steal_pct is not None:
        print(f"host: took {host.steal_pct:.1f} % of this machine's CPU time meanwhile (steal)")


if __name__ == "__main__":
    main()
