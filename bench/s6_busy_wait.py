"""How much Contiki's busy-wait after each transmit strobe could delay S6's nodes.

Contiki's cc2520 driver busy-waits from the transmit strobe until the frame
has left, and NullRDC then until the ACK has come or its window has passed
(`core/net/mac/nullrdc.c`): 3.5 to 3.8 ms in MSPSim (docs/studies/s6.md,
"Time on the nodes"). The simulated MAC spends that time too (the frame's
airtime and the ACK wait), so an exchange is not lengthened by it; what
the model leaves out is only that the MSP430 does nothing else meanwhile.
This measures how much other work there is to delay, on the model's own
runs, to first order (no knock-on effects):

- a CPU job (forwarding a frame, a CoAP message at a member) that starts
  while its node's MAC is sending would wait for the send's end;
- a MAC attempt that comes while its node's CPU is at work would wait for
  the job's end (Contiki's processes do not preempt each other).

Each send window runs from the MAC's attempt to its result, and is
stretched to at least `--busy-wait-ms` after the attempt when a frame went
out (the MSPSim measurement's upper end; a channel found busy ends at
once). The MAC and CPU are compiled in a normal install, so the runs use a
pure-Python copy of the package, made in a temporary folder, whose classes
the probe can wrap; the copy gives the same results (the compiled modules
are the same source).

    python bench/s6_busy_wait.py                       # s6-delay-sweep, 5 and 40 members
    python bench/s6_busy_wait.py --point group_size=10,delay_ms=100
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
DEFAULT_POINTS = [f"group_size={g},delay_ms={d}" for g in (5, 40) for d in (0, 25, 50, 100)]


def pure_copy(into: Path) -> Path:
    """The package's sources without their compiled extensions."""
    root = into / "src"
    shutil.copytree(SRC, root, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    return root


def probe(argv: list[str], busy_wait_s: float) -> None:
    """Run `iotbench ARGV` in this process with the MAC and CPU wrapped; print the
    first-order delays as one JSON line on stderr."""
    from iotbench.net import node as node_module
    from iotbench.net.mac import contiki_csma
    from iotbench.sim import cpu as cpu_module

    jobs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    windows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    attempts: dict[str, list[float]] = defaultdict(list)
    opened: dict[int, float] = {}

    use_cpu = node_module.Node.use_cpu

    owners: dict[str, int] = {}

    def owned_use_cpu(self, cpu, profile):
        # A node's MAC and CPU are told apart from other nodes' by the node's name.
        if owners.setdefault(self.name, id(cpu)) != id(cpu):
            sys.exit(f"two nodes are named {self.name}: this probe tells nodes by name")
        cpu.owner = self.name
        use_cpu(self, cpu, profile)

    run = cpu_module.Cpu.run

    def recorded_run(self, cost_s, work):
        now = self.sim.now
        start = max(self.busy_until, now)
        if hasattr(self, "owner"):
            jobs[self.owner].append((start, start + cost_s))
        run(self, cost_s, work)

    cca_start = contiki_csma.ContikiCsmaMac._cca_start

    def recorded_cca_start(self):
        # The strobe: where the CPU would wait for a job, and a send window opens.
        attempts[self.name].append(self.sim.now)
        opened[id(self)] = self.sim.now
        cca_start(self)

    done = contiki_csma.ContikiCsmaMac._done

    def recorded_done(self, status):
        start = opened.pop(id(self))
        end = self.sim.now
        if status != contiki_csma.COLLISION:
            end = max(end, start + busy_wait_s)
        windows[self.name].append((start, end))
        done(self, status)

    node_module.Node.use_cpu = owned_use_cpu
    cpu_module.Cpu.run = recorded_run
    contiki_csma.ContikiCsmaMac._cca_start = recorded_cca_start
    contiki_csma.ContikiCsmaMac._done = recorded_done

    from iotbench.cli import main

    code = main(argv)
    job_delay, jobs_hit = _overlaps({n: [s for s, _ in js] for n, js in jobs.items()}, windows)
    attempt_delay, attempts_hit = _overlaps(attempts, jobs)
    sends = [w for ws in windows.values() for w in ws]
    print(
        "PROBE "
        + json.dumps(
            {
                # The hosts' jobs (the EM's) have no radio to wait for.
                "cpu_jobs": sum(len(js) for n, js in jobs.items() if n in windows),
                "jobs_in_a_send": jobs_hit,
                "job_delay_s": job_delay,
                "mac_attempts": sum(len(a) for a in attempts.values()),
                "attempts_in_a_job": attempts_hit,
                "attempt_delay_s": attempt_delay,
                "send_windows": len(sends),
                "mean_send_window_ms": 1e3 * sum(e - s for s, e in sends) / max(1, len(sends)),
            }
        ),
        file=sys.stderr,
    )
    sys.exit(code)


def _overlaps(
    instants: dict[str, list[float]], spans: dict[str, list[tuple[float, float]]]
) -> tuple[float, int]:
    """The summed wait of every instant that falls inside a span of the same node
    (until the span's end), and how many did."""
    delay, hit = 0.0, 0
    for name, times in instants.items():
        node_spans = sorted(spans.get(name, []))
        starts = [s for s, _ in node_spans]
        for t in times:
            i = bisect.bisect_right(starts, t) - 1
            if i >= 0 and node_spans[i][0] < t < node_spans[i][1]:
                delay += node_spans[i][1] - t
                hit += 1
    return delay, hit


def measure(root: Path, scenario: str, point: str, busy_wait_s: float, out: Path) -> dict:
    filters = [arg for kv in point.split(",") for arg in ("--filter", kv)]
    cmd = [
        sys.executable,
        __file__,
        "--probe",
        str(busy_wait_s),
        "run",
        scenario,
        *filters,
        "--rep",
        "0",
        "--jobs",
        "1",
        "--json",
        "--out",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    lines = [line for line in done.stderr.splitlines() if line.startswith("PROBE ")]
    if done.returncode != 0 or not lines:
        sys.exit(f"{scenario} {point}: the run failed\n{done.stderr[-2000:]}")
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if len(runs) != 1:
        sys.exit(f"{scenario} {point}: {len(runs)} runs; a point names one value of every axis")
    (run,) = runs
    result = json.loads(lines[-1].removeprefix("PROBE "))
    result["queries"] = run["metrics"]["queries"]
    result["response_time_mean_s"] = run["metrics"]["response_time_mean_s"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="s6-delay-sweep")
    parser.add_argument(
        "--point",
        action="append",
        help="axis values, e.g. group_size=5,delay_ms=100 (repeatable; default: "
        "5 and 40 members at 0, 25, 50 and 100 ms)",
    )
    parser.add_argument(
        "--busy-wait-ms",
        type=float,
        default=3.8,
        help="the least time a send holds the CPU (MSPSim: 3.5 to 3.8 ms)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per point")
    if sys.argv[1:2] == ["--probe"]:  # one run, in the pure copy (measure)
        probe(sys.argv[3:], float(sys.argv[2]))
        return
    args = parser.parse_args()
    busy_wait_s = args.busy_wait_ms / 1e3
    with tempfile.TemporaryDirectory() as tmp:
        root = pure_copy(Path(tmp))
        if not args.json:
            print(
                f"{'point':<28} {'queries':>7} {'response s':>10} {'window ms':>9} "
                f"{'jobs held':>9} {'attempts held':>13} {'ms per query':>12}"
            )
        for i, point in enumerate(args.point or DEFAULT_POINTS):
            r = measure(root, args.scenario, point, busy_wait_s, Path(tmp) / f"out{i}")
            per_query_ms = 1e3 * (r["job_delay_s"] + r["attempt_delay_s"]) / r["queries"]
            if args.json:
                print(
                    json.dumps(
                        {
                            "scenario": args.scenario,
                            "point": point,
                            **r,
                            "delay_per_query_ms": per_query_ms,
                        }
                    )
                )
            else:
                print(
                    f"{point:<28} {r['queries']:>7} {r['response_time_mean_s']:>10.3f} "
                    f"{r['mean_send_window_ms']:>9.2f} {r['jobs_in_a_send']:>9} "
                    f"{r['attempts_in_a_job']:>13} {per_query_ms:>12.2f}"
                )


if __name__ == "__main__":
    main()
