"""Event-kernel throughput: events per wall second.

Two workloads: (1) many independent timer chains (heap of ~1,000 entries, each
event reschedules itself); (2) the same with half of the timers cancelled and
re-armed before they fire, the pattern of protocol retransmission timers.

    python bench/kernel.py [EVENTS]
"""

from __future__ import annotations

import sys
import time

from iotbench.sim import Simulator


def chains(n_events: int, n_chains: int = 1000, cancel: bool = False) -> tuple[float, int]:
    sim = Simulator(seed=1)
    rng = sim.rng("bench")
    budget = [n_events]
    timers = {}

    def fire(i: int) -> None:
        budget[0] -= 1
        if budget[0] <= 0:
            sim.stop()
            return
        if cancel and i in timers:
            # A retransmission timer that an ACK cancels, then a new one is armed.
            timers[i].cancel()
        timers[i] = sim.schedule(1.0 + rng.random(), fire, i)
        if cancel:
            timers[i].cancel()
            timers[i] = sim.schedule(0.5 + rng.random(), fire, i)

    for i in range(n_chains):
        sim.schedule(rng.random(), fire, i)
    t0 = time.perf_counter()
    sim.run()
    wall = time.perf_counter() - t0
    return wall, sim.events_processed


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    for label, cancel in (("timer chains", False), ("with cancel/re-arm", True)):
        wall, events = chains(n, cancel=cancel)
        print(
            f"{label:20s} events={events} wall_s={wall:.3f} events_per_wall_s={events / wall:,.0f}"
        )


if __name__ == "__main__":
    main()
