"""Speed of S4's multi-hop runs: one simulated hour per variant, against the goal.

The goal (the performance issue's; S4's own was 60 s) is a 1-hour
`s4-multi-hop` run (51 nodes, readings every 5 s) in at most 30 s of wall time. This runs the selected variants of that scenario
(default: every variant at 5 s on the first network seed) through the
project's own run function, `iotbench.world.run_one`, exactly as a campaign
would (without storing results), one at a time, and prints per run: wall
seconds, the goal's ratio (wall / 30 s), simulated seconds per wall second,
kernel events per wall second, frames on the air per wall second, and the
share of the machine's CPU time the host took meanwhile (bench/host_time.py).

    python bench/s4_hour.py [--minutes M] [--filter AXIS=VALUE[,VALUE...]] ... [--repeat R] [--json]

`--minutes` shortens the simulated publishing period (default 60) and scales
the goal with it (the minute before publishing, in which RPL builds its
routes, is in every run's time). `--filter` works as in `iotbench run` (e.g.
`--filter variant=coap-put-con,hopp --filter interval=15s`). `--repeat R`
keeps the fastest of R runs (a shared machine's wall times vary by tens of
percent). `--json` prints one JSON object per run instead of the table:
`variant`, `interval`, `network_seed`, `wall_s`, `sim_s`, `events`, `frames`,
`steal_pct`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from host_time import HostTime  # bench/, beside this file
from rich.console import Console
from rich.table import Table

from iotbench import compiled
from iotbench.scenarios import ScenarioError, expand, load_scenario, parse_filter
from iotbench.world import run_one

SCENARIO = "s4-multi-hop"
GOAL_S_PER_HOUR = 30.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="publishing period")
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="AXIS=VALUES",
        help="keep only these axis values (repeatable); default: interval=5s, the first "
        "network seed",
    )
    parser.add_argument("--repeat", type=int, default=1, help="keep the fastest of R runs")
    parser.add_argument("--json", action="store_true", help="one JSON object per run")
    args = parser.parse_args()
    scenario = load_scenario(SCENARIO)
    try:
        filters = dict(parse_filter(text) for text in args.filter)
        filters.setdefault("interval", ["5s"])
        seeds = next(a.values for a in scenario.axes if a.name == "network_seed")
        filters.setdefault("network_seed", [seeds[0]])
        runs = expand(scenario, filters, {"workload.duration_s": args.minutes * 60.0})
    except ScenarioError as exc:
        sys.exit(f"bench/s4_hour.py: {exc}")
    goal = GOAL_S_PER_HOUR * args.minutes / 60.0
    table = Table(title=f"{SCENARIO}: {args.minutes:g} simulated minutes per run")
    columns = ("run", "wall s", "wall / goal", "sim s / wall s", "events / s", "frames / s")
    for column in (*columns, "host took"):
        table.add_column(column, justify="left" if column == "run" else "right")
    total = 0.0
    for run in runs:
        best, metrics = float("inf"), {}
        with HostTime() as host:
            for _ in range(args.repeat):
                start = time.perf_counter()
                metrics = run_one(run.config, run.seed).metrics
                best = min(best, time.perf_counter() - start)
        total += best
        if args.json:
            row = {str(k): str(v) for k, v in run.params.items()}
            row |= {"wall_s": round(best, 3), "sim_s": metrics["sim_time_s"]}
            row |= {"events": metrics["sim_events"], "frames": metrics["mac_frames"]}
            row |= {"steal_pct": host.steal_pct}
            print(json.dumps(row), flush=True)
            continue
        table.add_row(
            " ".join(str(v) for v in run.params.values()),
            f"{best:.1f}",
            f"{best / goal:.2f}",
            f"{metrics['sim_time_s'] / best:.0f}",
            f"{metrics['sim_events'] / best:,.0f}",
            f"{metrics['mac_frames'] / best:,.0f}",
            "?" if host.steal_pct is None else f"{host.steal_pct:.1f} %",
        )
    if args.json:
        return
    Console().print(table)
    print(f"{len(runs)} runs in {total:.1f} s; the goal is {goal:g} s a run")
    print(f"per-frame modules: {compiled.describe()}")


if __name__ == "__main__":
    main()
