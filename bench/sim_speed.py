"""Simulation speed of the S3 robustness scenario's runs.

Runs each selected run of `s3-robustness` (variants x conditions) through
the project's own run function, `iotbench.world.run_one`, exactly as a campaign
would (without storing results), and prints per run: simulated seconds, kernel
events, wall seconds of the `run_one` call (building the world, the simulation,
deriving the metrics), simulated seconds per wall second and events per wall
second; then the totals over all runs.

    python bench/sim_speed.py [ITEMS] [--filter AXIS=VALUE[,VALUE...]] ... [--repeat R]
                              [--campaign-jobs J]

ITEMS overrides `workload.items` (default: the scenario's, 1000). `--filter`
works as in `iotbench run` and may be repeated, e.g. `--filter condition=base,loss-5`
or `--filter variant=coap-con,mqtt-qos1`; without one, every variant runs. `--repeat R` runs each run R times and keeps the fastest
(wall times on a shared machine vary by tens of percent from one second to the next).

Then it times the same runs as a user's campaign: `iotbench run s3-robustness
--jobs J` (default J = 2; 0 skips it) in a fresh process, into a temporary
output folder, so the figure includes start-up, the worker processes, the
progress bar and storing every run in DuckDB.
"""

from __future__ import annotations

import argparse
import copy
import subprocess
import sys
import tempfile
import time

from iotbench.scenarios import ScenarioError, expand, load_scenario, parse_filter
from iotbench.world import run_one

SCENARIO = "s3-robustness"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("items", nargs="?", type=int, help="data items per run (default: 1000)")
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="AXIS=VALUES",
        help="keep only these axis values, e.g. condition=base,loss-5 (repeatable)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="keep the fastest of R runs")
    parser.add_argument(
        "--campaign-jobs",
        type=int,
        default=2,
        metavar="J",
        help="then time `iotbench run s3-robustness --jobs J` on the same runs (0: skip)",
    )
    args = parser.parse_args()

    try:
        filters = dict(parse_filter(text) for text in args.filter)
        overrides = {} if args.items is None else {"workload.items": args.items}
        runs = expand(load_scenario(SCENARIO), filters=filters, overrides=overrides)
    except ScenarioError as exc:
        sys.exit(f"sim_speed: {exc}")

    header = (
        f"{'variant':<18} {'condition':<11} {'items':>5} {'sim_s':>10} {'events':>8} "
        f"{'wall_s':>7} {'sim_s/wall_s':>12} {'events/wall_s':>13}"
    )
    print(f"{SCENARIO}: {len(runs)} run(s)")
    print(header)
    print("-" * len(header))
    total_sim = total_events = total_wall = 0.0
    for run in runs:
        wall = float("inf")
        for _ in range(max(args.repeat, 1)):
            config = copy.deepcopy(run.config)  # each call gets a fresh config, as in a campaign
            t0 = time.perf_counter()
            metrics = run_one(config, run.seed).metrics
            wall = min(wall, time.perf_counter() - t0)
        sim_s, events = metrics["sim_time_s"], metrics["sim_events"]
        total_sim += sim_s
        total_events += events
        total_wall += wall
        print(
            f"{run.params.get('variant', '-'):<18} {run.params.get('condition', '-'):<11} "
            f"{metrics['items']:>5} {sim_s:>10.1f} {events:>8} {wall:>7.3f} "
            f"{sim_s / wall:>12,.0f} {events / wall:>13,.0f}",
            flush=True,
        )
    print("-" * len(header))
    if total_wall:
        print(
            f"{'total':<18} {'':<11} {'':>5} {total_sim:>10.1f} {total_events:>8.0f} "
            f"{total_wall:>7.3f} {total_sim / total_wall:>12,.0f} "
            f"{total_events / total_wall:>13,.0f}"
        )
    if args.campaign_jobs > 0:
        time_campaign(args, len(runs))


def time_campaign(args: argparse.Namespace, n_runs: int) -> None:
    """Wall time of `iotbench run` on the selected runs, as a user runs it."""
    command = [sys.executable, "-m", "iotbench", "run", SCENARIO, "--jobs", str(args.campaign_jobs)]
    for text in args.filter:
        command += ["--filter", text]
    if args.items is not None:
        command += ["--set", f"workload.items={args.items}"]
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        done = subprocess.run([*command, "--out", out], capture_output=True, text=True)
        wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"sim_speed: the campaign failed:\n{done.stderr}")
    print(f"\ncampaign `iotbench {' '.join(command[3:])}`: {n_runs} runs in {wall:.1f} s wall")


if __name__ == "__main__":
    main()
