"""Regression baseline of the built-in scenarios: their metrics and pcap digests.

A change to the simulator must not change what an existing scenario produces
unless a fix demands it (and then the study page says why). This module runs
the built-in scenarios, at reduced size for the test suite (`CASES`) or at
full size (`--full`), and compares every metric and every pcap digest with
the stored baseline in `baseline/`.

    python tests/world/regression.py --check          # reduced: what the test runs
    python tests/world/regression.py --full --check   # every run at full size (minutes)
    python tests/world/regression.py --full --write   # record a new baseline (after a
                                                      # change the study pages explain)
    python tests/world/regression.py --full --write --only s4-multi-hop
                                                      # a new scenario's runs, added to
                                                      # the baseline; the others kept

An intended change is recorded with --write in the same commit as the change,
and the study page of the scenario says what changed and why.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).parent / "baseline"

# (scenario, overrides, filters) at reduced size: every variant and condition, fewer
# items; S6's radio sweeps at some of their points (each runs a 60-node network), S4's
# building one of its three networks.
CASES: list[tuple[str, dict, dict]] = [
    ("s1-object-download", {}, {}),
    ("s2-coap-vs-http", {"workload.items": 1000}, {}),
    ("s3-robustness", {"workload.items": 150}, {}),
    ("s5-ndn-rtt", {"workload.items": 30}, {}),
    ("s6-delay-sweep", {"workload.queries": 5}, {"delay_ms": [0, 100]}),
    ("s6-interference", {"workload.queries": 5}, {"wifi_mbps": ["0", "10"]}),
    ("s6-ack-timeout", {"workload.queries": 3}, {"wifi_mbps": ["0", "10"]}),
    ("s6-office", {"workload.queries": 5}, {}),
    ("s6-nested", {"workload.queries": 5}, {"wifi_mbps": ["0", "10"]}),
    ("s6-wifi-place", {"workload.queries": 3}, {"wifi_place": ["centre", "gateway"]}),
    ("s4-single-hop-scheduled", {"workload.items": 100}, {}),
    ("s4-single-hop-unscheduled", {"workload.items": 100}, {}),
    ("s4-security", {"workload.items": 50}, {}),
    ("s4-gateway-speed", {"workload.items": 100, "repetitions": 1}, {"a8_slowdown": [1.0, 2.0]}),
    ("s4-multi-hop", {"workload.duration_s": 300.0}, {"interval": ["30s"], "network_seed": [8]}),
    (
        "s4-wifi",
        {"workload.duration_s": 300.0},
        {"variant": ["coap-put-con", "coap-get-non", "ndn"], "wifi": ["office"]},
    ),
]
FULL_CASES: list[tuple[str, dict, dict]] = [(name, {}, {}) for name, _, _ in CASES]

# QUIC's TLS draws randomness aioquic does not let us seed (docs/quic.md):
# its metrics are deterministic, its pcap bytes are not.
NO_PCAP_DIGEST = ("variant=quic",)


def _run(args: tuple[str, dict, str, dict, int]) -> tuple[str, dict]:
    from iotbench.world import run_one

    label, _params, _scenario, config, seed = args
    with tempfile.TemporaryDirectory() as tmp:
        pcap = Path(tmp) / "run.pcap"
        metrics = run_one(config, seed, pcap_path=str(pcap)).metrics
        digest = hashlib.sha256(pcap.read_bytes()).hexdigest()
    out = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}
    if not any(part in label for part in NO_PCAP_DIGEST):
        out["pcap_sha256"] = digest
    return label, out


def collect(cases: list[tuple[str, dict, dict]], jobs: int = 1) -> dict[str, dict]:
    """{"scenario | run label": {metric: value, ..., "pcap_sha256": ...}} for every run."""
    from iotbench.scenarios import expand, load_scenario

    tasks = []
    for name, overrides, filters in cases:
        for run in expand(load_scenario(name), filters, overrides):
            tasks.append((f"{name} | {run.label()}", run.params, name, run.config, run.seed))
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_run, tasks, chunksize=1))
    else:
        results = [_run(task) for task in tasks]
    return dict(sorted(results))


def baseline_path(full: bool) -> Path:
    return HERE / ("full.json" if full else "reduced.json")


def load_baseline(full: bool) -> dict[str, dict]:
    return json.loads(baseline_path(full).read_text())


def differences(expected: dict[str, dict], got: dict[str, dict]) -> list[str]:
    """Every run, metric or digest that differs; metrics new in `got` are allowed."""
    out = []
    for label in sorted(set(expected) | set(got)):
        if label not in got:
            out.append(f"{label}: missing now")
            continue
        if label not in expected:
            out.append(f"{label}: not in the baseline")
            continue
        for metric, value in expected[label].items():
            now = got[label].get(metric, "<absent>")
            if now != value:
                out.append(f"{label}: {metric} was {value!r}, now {now!r}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="every run at full size")
    parser.add_argument("--jobs", type=int, default=2)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--check", action="store_true", help="compare with the baseline")
    what.add_argument("--write", action="store_true", help="record a new baseline")
    parser.add_argument(
        "--only", nargs="+", metavar="SCENARIO", help="these scenarios' runs, the rest kept"
    )
    args = parser.parse_args()
    cases = FULL_CASES if args.full else CASES
    if args.only:
        unknown = set(args.only) - {name for name, _, _ in cases}
        if unknown:
            parser.error(f"not in the cases: {', '.join(sorted(unknown))}")
        cases = [case for case in cases if case[0] in args.only]
    got = collect(cases, args.jobs)
    if args.only and args.write:
        # The other scenarios' runs as recorded, these scenarios' as they are now.
        kept = {
            label: runs
            for label, runs in load_baseline(args.full).items()
            if label.split(" | ")[0] not in args.only
        }
        got = dict(sorted({**kept, **got}.items()))
    if args.write:
        HERE.mkdir(exist_ok=True)
        text = json.dumps(got, indent=1, sort_keys=True) + "\n"
        baseline_path(args.full).write_text(text)
        print(f"wrote {len(got)} runs to {baseline_path(args.full)}")
        return 0
    expected = load_baseline(args.full)
    if args.only:
        expected = {k: v for k, v in expected.items() if k.split(" | ")[0] in args.only}
    diffs = differences(expected, got)
    for line in diffs:
        print(line)
    print(f"{len(got)} runs, {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
