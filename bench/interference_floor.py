"""What the interference floor leaves out of a scenario's radio runs.

    python bench/interference_floor.py s4-multi-hop --filter variant=hopp
    python bench/interference_floor.py my-network.toml

A receiver's neighbour lists leave out every signal weaker than
`network.radio.interference_floor_db` (10 dB) under its noise, so the medium
never adds those to the receiver's noise (docs/radio.md, "Who hears whom").
For every run of the scenario (with `--filter`, those kept), this runs the
simulation, then examines the network's pairs again, as its build did, and
prints per receiver the noise rise those signals would have caused on
average: each weighted by its sender's share of the run on the air
(`left_out_db`: the median, 99th percentile and largest over the
receivers, in dB). The runs themselves are as `iotbench run` makes them.
The test that checks this measure against the sum over every pair is
tests/world/test_interference_floor.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from rich.console import Console
from rich.progress import Progress
from rich.table import Table


def left_out_figures(network, net, now: float) -> dict:
    """What the interference floor left out of a run, per receiver (see the module doc)."""
    from iotbench.world.networks.pairs import left_out_rise_db

    t0 = time.perf_counter()
    rise = left_out_rise_db(network, net, now)
    return {
        "left_out_db": {key: round(value, 4) for key, value in rise.items()},
        "left_out_s": round(time.perf_counter() - t0, 3),
    }


class _Watch:
    """Takes the figures when a run's simulation has ended (world/run.py's RunWatch)."""

    def __init__(self) -> None:
        self.figures: dict | None = None

    def built(self, world) -> None:
        pass

    def ended(self, world) -> None:
        from iotbench.world.networks import RadioNetwork

        if isinstance(world.net, RadioNetwork):
            self.figures = left_out_figures(world.settings.network, world.net, world.sim.now)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", help="a built-in scenario's name or a scenario file")
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="AXIS=VALUES",
        help="keep only these axis values (repeatable), as `iotbench run --filter`",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per run")
    args = parser.parse_args()

    from iotbench.scenarios import ScenarioError, expand, load_scenario, parse_filter
    from iotbench.world import run_one

    try:
        scenario = load_scenario(args.scenario)
        filters = dict(parse_filter(text) for text in args.filter)
        runs = expand(scenario, filters)
    except ScenarioError as exc:
        sys.exit(f"error: {exc}")
    table = Table("run", "median dB", "p99 dB", "max dB")
    # Progress on stderr; stdout carries the figures, a run's JSON line as it ends.
    with Progress(console=Console(stderr=True), redirect_stdout=False) as progress:
        task = progress.add_task(scenario.name, total=len(runs))
        for run in runs:
            watch = _Watch()
            run_one(run.config, run.seed, watch=watch)
            progress.advance(task)
            f = watch.figures
            if f is None:
                progress.console.print(f"{run.label()}: not a radio network")
            elif args.json:
                print(json.dumps({"run": run.label(), **f}), flush=True)
            else:
                db = f["left_out_db"]
                table.add_row(run.label(), *(f"{db[k]:.4f}" for k in ("median", "p99", "max")))
    if not args.json:
        Console().print(table)


if __name__ == "__main__":
    main()
