"""iotbench versus ns-3 on the same UDP echo workload, measured in the same run.

Workload (identical on both sides; the ns-3 side is bench/peers/ns3_udp_echo.py,
the project's reference peer workload, run unchanged): two nodes, one
point-to-point link of 250 kbit/s with 5 ms one-way delay, 5 % packet loss on
packets arriving at the server, the client sends N UDP datagrams of 32 bytes
every 10 ms starting at t = 1 s, and the server echoes each one.

Only the simulation run itself is timed on each side (ns-3: Simulator.Run();
iotbench: Simulator.run()); start-up is printed separately. ns-3 comes from the
`ns3` Python package: pip install '.[bench]'.

    python bench/vs_ns3.py [N]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from iotbench.apps.echo import UdpEchoClient, UdpEchoServer
from iotbench.net.impairments import BernoulliLoss, Impairment
from iotbench.net.link import PointToPointLink
from iotbench.net.node import Node
from iotbench.sim import Simulator

HERE = os.path.dirname(os.path.abspath(__file__))


def run_iotbench(n: int) -> dict:
    t0 = time.perf_counter()
    sim = Simulator(seed=1)
    log: list = []
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
        impair_a_to_b=Impairment(loss=BernoulliLoss(sim.rng("server-rx-loss"), 0.05)),
        log=log,
    )
    UdpEchoServer(server, 9)
    echo = UdpEchoClient(sim, client, sif.address, count=n, size=32, interval_s=0.01)
    echo.start(1.0)
    setup = time.perf_counter() - t0
    t1 = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - t1
    return {
        "wall_s": wall,
        "setup_s": setup,
        "sim_s": sim.now,
        "events": sim.events_processed,
        "echoed": echo.received,
        "packets": len(log),
    }


def run_ns3(n: int) -> dict | None:
    script = os.path.join(HERE, "peers", "ns3_udp_echo.py")
    t0 = time.perf_counter()
    try:
        out = subprocess.run(
            [sys.executable, script, str(n)], capture_output=True, text=True, check=True
        ).stdout
    except subprocess.CalledProcessError as exc:
        print(f"ns-3 side failed (is the `ns3` package installed? pip install '.[bench]'):\n"
              f"{exc.stderr[-2000:]}", file=sys.stderr)
        return None
    total = time.perf_counter() - t0
    m = re.search(r"wall_s=([\d.]+) sim_s=([\d.]+)", out)
    if not m:
        print(f"could not read the ns-3 output:\n{out}", file=sys.stderr)
        return None
    wall, sim_s = float(m.group(1)), float(m.group(2))
    return {"wall_s": wall, "sim_s": sim_s, "startup_s": total - wall, "raw": out.strip()}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    ours = run_iotbench(n)
    print(
        f"iotbench requests={n} wall_s={ours['wall_s']:.3f} setup_s={ours['setup_s']:.3f} "
        f"sim_s={ours['sim_s']:.1f} events={ours['events']} echoed={ours['echoed']} "
        f"requests_per_wall_s={n / ours['wall_s']:.0f} "
        f"sim_s_per_wall_s={ours['sim_s'] / ours['wall_s']:.0f} "
        f"events_per_wall_s={ours['events'] / ours['wall_s']:.0f}"
    )
    peer = run_ns3(n)
    if peer is None:
        sys.exit(1)
    print(peer["raw"])
    print(f"ns3 startup_s={peer['startup_s']:.2f} (process start and setup, not timed below)")
    print(
        f"ratio: iotbench is {peer['wall_s'] / ours['wall_s']:.2f}x as fast as ns-3 "
        f"(simulation wall time {ours['wall_s']:.3f} s vs {peer['wall_s']:.3f} s for {n} requests)"
    )


if __name__ == "__main__":
    main()
