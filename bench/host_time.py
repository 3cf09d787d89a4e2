"""How much of the machine a benchmark had: the CPU time the host took from it.

On a virtual machine the hypervisor may run other guests on the physical
cores this one's virtual CPUs use. The guest's kernel counts that time as
`steal` (the eighth field of /proc/stat's `cpu` line). A benchmark that
prints its wall time prints, with `HostTime`, the share of all virtual CPUs'
time stolen while it ran, so that a slow measurement shows whether the host
took the time:

    with HostTime() as host:
        ...measure...
    host.steal_pct   # None where /proc/stat has no steal field (not Linux)

Measured 2026-11-30 (docs/performance.md, "What slows a slow day"): a
neighbour inside this machine that thrashed the shared cache or the memory
bandwidth slowed S4's slowest hours by 8 to 18 % and the UDP echo not at
all, far from the 3.4 to 6 times of the slow days, which this figure is
there to explain when they come again.
"""

from __future__ import annotations

from pathlib import Path

STAT = Path("/proc/stat")


def _cpu_times() -> list[int] | None:
    """The `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal ..."""
    try:
        first = STAT.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if first[0] != "cpu" or len(first) < 9:
        return None
    return [int(v) for v in first[1:9]]


class HostTime:
    """The share of CPU time (all virtual CPUs) the host took during the block."""

    def __init__(self) -> None:
        self.steal_pct: float | None = None
        self._start: list[int] | None = None

    def __enter__(self) -> HostTime:
        self._start = _cpu_times()
        return self

    def __exit__(self, *exc: object) -> None:
        end = _cpu_times()
        if self._start is None or end is None:
            return
        spent = [b - a for a, b in zip(self._start, end, strict=True)]
        total = sum(spent)
        self.steal_pct = round(100.0 * spent[7] / total, 2) if total > 0 else 0.0
