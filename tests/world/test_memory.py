"""A run's memory does not grow with its length: S3 at 2,000 and 40,000 items.

Each run goes in a fresh process, which reports its peak resident memory; the
two may differ by at most 25 MB. The test holds them to 10 MB: 38,000 more
items leave 8 bytes each (their latency), a few hundred kB; the packet list
the simulator used to keep cost 25 MB here. bench/memory.py measures every S3
variant.
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import json, resource, sys
from iotbench.scenarios import expand, load_scenario
from iotbench.world import run_one
variant, condition, items = sys.argv[1], sys.argv[2], int(sys.argv[3])
(run,) = expand(load_scenario("s3-robustness"),
                {"variant": [variant], "condition": [condition]}, {"workload.items": items})
m = run_one(run.config, run.seed).metrics
print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "delivered": m["items_delivered"], "items": m["items"]}))
"""


def peak(variant: str, condition: str, items: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, variant, condition, str(items)],
        capture_output=True,
        text=True,
        check=True,
        timeout=240,
    )
    return json.loads(out.stdout)


def test_memory_does_not_grow_with_the_number_of_items():
    short, long = peak("coap-con", "loss-10", 2_000), peak("coap-con", "loss-10", 40_000)
    assert (short["items"], long["items"]) == (2_000, 40_000)
    assert long["delivered"] > 39_000  # the long run did its work
    assert long["rss_mb"] - short["rss_mb"] <= 10.0, (short, long)
