"""Determinism across processes: every variant of every built-in scenario, run in two
fresh interpreters with different hash seeds, gives the same metrics and the same
pcap bytes (all but QUIC, whose TLS randomness aioquic draws itself: docs/quic.md).

Within one process, iteration over a set of objects follows memory addresses, and
over a set of strings the per-process hash seed; either can change the order of
events between processes while every test inside one process passes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iotbench.scenarios import expand, list_builtin, load_scenario

#: The other axes' values that exercise the most: loss, fragments, long Data.
OTHER_AXES = {
    "s1-object-download": {"object_size_bytes": [1000]},
    "s2-coap-vs-http": {"loss": ["2%"], "latency": ["10ms"]},
    "s3-robustness": {"condition": ["loss-10"]},
    "s5-ndn-rtt": {"data_bytes": [196]},
}

CHILD = """
import hashlib, json, sys
from iotbench.scenarios import expand, load_scenario
from iotbench.world import run_one
name, filters, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
scenario = load_scenario(name)
for run in expand(scenario, filters, scenario.quick["set"], reps=1):
    pcap = f"{out}/{run.key}.pcap"
    metrics = run_one(run.config, run.seed, pcap_path=pcap).metrics
    with open(pcap, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    quic = run.config["protocol"]["name"] == "quic"
    print(json.dumps({"key": run.key, "metrics": metrics, "pcap": None if quic else digest}))
"""


def selection(name: str) -> dict[str, list]:
    """Every value of the first axis (the variants), one value of each other axis."""
    axes = load_scenario(name).axes
    chosen = OTHER_AXES.get(name, {})
    return {a.name: list(chosen.get(a.name, [a.values[-1]])) for a in axes[1:]}


def run_in_fresh_process(name: str, hash_seed: str, out: Path) -> list[dict]:
    out.mkdir()
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, name, json.dumps(selection(name)), str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


# A hang guard, not a timing: two fresh processes of a scenario's quick set, each
# with its own 600 s bound (s6-nested's took over 150 s each on a slow day,
# its code before and after that day's changes alike, past the suite's 300 s).
@pytest.mark.timeout(1300)
@pytest.mark.parametrize("name", list_builtin())
def test_two_processes_give_the_same_results(name: str, tmp_path: Path) -> None:
    first = run_in_fresh_process(name, "1", tmp_path / "a")
    second = run_in_fresh_process(name, "2", tmp_path / "b")
    variants = load_scenario(name).axes[0].values
    assert len(first) == len(variants) == len(expand(load_scenario(name), selection(name), reps=1))
    assert first == second
    # The comparison means something: every run wrote packets, and they differ by variant.
    digests = [r["pcap"] for r in first if r["pcap"] is not None]
    assert len(set(digests)) == len(digests)
    assert hashlib.sha256(b"").hexdigest() not in digests
