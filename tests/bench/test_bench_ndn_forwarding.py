"""bench/ndn_forwarding.py does the work it reports (no timings asserted)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from iotbench.proto.ndn import ForwarderConfig

SCRIPT = Path(__file__).parents[2] / "bench" / "ndn_forwarding.py"


def load():
    spec = importlib.util.spec_from_file_location("ndn_forwarding", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_hits_misses_and_mix_through_the_chain():
    bench = load()
    names, (hits, misses, mix) = bench.workloads(300, 0.5)
    config = ForwarderConfig()
    for load_, expected_hits in ((hits, 300), (misses, 0)):
        _, cs_hits, frames = bench.run(load_, names, 5, config)  # raises if any Data is missing
        assert cs_hits == expected_hits
    assert frames == 300 * 2 * 5  # every miss: the Interest and its Data through 5 forwarders
    _, cs_hits, _ = bench.run(mix, names, 5, config)
    assert 0.3 * 300 < cs_hits < 0.7 * 300
