"""One campaign on the local process pool and on a two-worker Ray cluster.

    python bench/cluster.py                          # s3-robustness, 2 workers
    python bench/cluster.py --scenario s2-coap-vs-http --workers 2 --json

Both sides run the same runs into fresh folders: the local pool with
`--jobs N`, and Ray on a cluster of N worker nodes of one CPU each, started
on this machine (ray.cluster_utils.Cluster: a head node without CPUs and N
worker nodes, each its own raylet, as separate machines would be). Printed:
the wall time of each side, their ratio (> 1: Ray is slower), and whether the
stored metrics are identical. Needs `pip install 'iotbench[cluster]'`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from iotbench.runner import ResultStore, run_campaign
from iotbench.scenarios import expand, load_scenario


def metrics_of(out: Path) -> dict:
    with ResultStore(out, read_only=True) as store:
        return {r.key: r.metrics for r in store.runs()}


def timed(**kwargs) -> float:
    start = time.perf_counter()
    result = run_campaign(progress=False, **kwargs)
    if result.failures:
        sys.exit(f"{len(result.failures)} runs failed: {result.failures[0].error}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="s3-robustness")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="one JSON line")
    args = parser.parse_args()

    from ray.cluster_utils import Cluster

    scenario = load_scenario(args.scenario)
    runs = expand(scenario)
    with tempfile.TemporaryDirectory() as tmp:
        local_s = timed(scenario=scenario, runs=runs, out_dir=Path(tmp, "local"), jobs=args.workers)
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
        for _ in range(args.workers):
            cluster.add_node(num_cpus=1)
        try:
            ray_s = timed(
                scenario=scenario,
                runs=runs,
                out_dir=Path(tmp, "ray"),
                executor="ray",
                address=cluster.address,
            )
        finally:
            cluster.shutdown()
        same = metrics_of(Path(tmp, "local")) == metrics_of(Path(tmp, "ray"))
    figures = {
        "scenario": args.scenario,
        "runs": len(runs),
        "workers": args.workers,
        "local_pool_wall_s": round(local_s, 2),
        "ray_wall_s": round(ray_s, 2),
        "ray_over_local": round(ray_s / local_s, 2),
        "identical_metrics": same,
    }
    if args.json:
        print(json.dumps(figures))
        return
    for name, value in figures.items():
        print(f"{name:>18}: {value}")


if __name__ == "__main__":
    main()
