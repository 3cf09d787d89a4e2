"""A node's single processor in virtual time: work waits for it, in order.

A node whose device profile prices an operation (proto/ndn/profiles.py)
spends that much CPU time on it; operations queue behind each other, so a
busy node delays what it forwards and what it answers.
"""

from __future__ import annotations

from collections.abc import Callable

from iotbench.sim.kernel import Simulator


class Cpu:
    """A node's single processor: work runs one piece after the other."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.busy_until = 0.0
        self.busy_s = 0.0  # total CPU time spent

    def run(self, cost_s: float, work: Callable[[], None]) -> None:
        """Do `work` once the CPU has spent `cost_s` on it, after what is queued."""
        sim = self.sim
        start = self.busy_until if self.busy_until > sim.now else sim.now
        self.busy_until = start + cost_s
        self.busy_s += cost_s
        if self.busy_until == sim.now:
            work()  # free work on an idle CPU: no event needed
        else:
            sim.post(self.busy_until, work)
