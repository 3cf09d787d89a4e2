"""A run's memory does not grow with its length: S3 at 2,000 and 40,000 items, and
a 100-node radio network at 10 and 40 minutes.

Each S3 run goes in a fresh process, which reports its peak resident memory; the
two may differ by at most 25 MB. The test holds them to 10 MB: 38,000 more
items leave 8 bytes each (their latency), a few hundred kB; the packet list
the simulator used to keep cost 25 MB here. bench/memory.py measures every S3
variant.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys

from scale_grid import scale_grid

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


def test_a_radio_networks_memory_does_not_grow_with_its_length():
    """Python's allocated blocks after 10, 20 and 40 simulated minutes of a 100-node
    network, every node publishing once a minute. Each datagram driver used to keep
    its last 64 payloads for its dissector (apps/driver.py), so every node's share
    grew for an hour: 12,000 blocks more at 40 minutes than at 10 here (16 MB in a
    1,000-node network); now under 200."""
    grid = scale_grid(100, 40, seed=1)
    sim, items = grid.sim, grid.items
    blocks = []
    for minute in (10, 20, 40):
        sim.run(until=minute * 60.0)
        gc.collect()
        blocks.append(sys.getallocatedblocks())
    assert items.stats.delivered > 3_500  # the run did its work
    assert blocks[2] - blocks[0] < 2_000, blocks
