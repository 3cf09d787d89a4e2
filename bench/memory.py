"""Peak memory of S3 runs at two lengths: a run's memory must not grow with its length.

    python bench/memory.py                      # every S3 variant, loss-10, 2,000 vs 40,000 items
    python bench/memory.py --items 2000 20000 --variant coap-con mqtt-qos1

Each run goes in a fresh process and reports its peak resident memory
(ru_maxrss). Printed per variant: the two peaks and their difference, in MB,
and the wall time of the longer run. The limit is 25 MB of difference.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CHILD = """
import json, resource, sys
from iotbench.scenarios import expand, load_scenario
from iotbench.world import run_one
variant, condition, items = sys.argv[1], sys.argv[2], int(sys.argv[3])
(run,) = expand(load_scenario("s3-robustness"),
                {"variant": [variant], "condition": [condition]}, {"workload.items": items})
run_one(run.config, run.seed)
print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
"""
VARIANTS = [
    "coap-con", "coap-non", "coap-non-adaptive", "mqtt-qos0", "mqtt-qos1",
    "mqttsn-qos0", "mqttsn-qos1", "quic",
]  # fmt: skip


def peak_mb(variant: str, condition: str, items: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, variant, condition, str(items)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout), time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs=2, default=[2_000, 40_000])
    parser.add_argument("--variant", nargs="+", default=VARIANTS)
    parser.add_argument("--condition", default="loss-10")
    args = parser.parse_args()
    short, long = args.items
    for variant in args.variant:
        a, _ = peak_mb(variant, args.condition, short)
        b, wall = peak_mb(variant, args.condition, long)
        line = {"variant": variant, f"rss_mb_{short}": round(a, 1), f"rss_mb_{long}": round(b, 1)}
        line.update({"difference_mb": round(b - a, 1), "wall_s_long": round(wall, 1)})
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
