"""bench/interference_floor.py and `scale.py --left-out` report what the radio's
interference floor left out of a run, per receiver (no timings asserted; the
measure itself is checked against the exact sum in
tests/world/test_interference_floor.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench"


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH / script), *args], capture_output=True, text=True
    )


def test_a_scenarios_runs_get_their_receivers_left_out_noise():
    done = run(
        "interference_floor.py",
        "s6-delay-sweep",
        "--filter",
        "group_size=5",
        "--filter",
        "delay_ms=0",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    figures = json.loads(line)
    assert figures["run"].startswith("group_size=5 delay_ms=0")
    db = figures["left_out_db"]
    assert 0.0 <= db["median"] <= db["p99"] <= db["max"] < 0.41
    assert db["max"] > 0.0


def test_a_network_without_radios_is_said_so():
    done = run("interference_floor.py", "s1-object-download", "--filter", "variant=coap")
    assert done.returncode == 0, done.stderr
    assert "not a radio network" in done.stderr


def test_an_unknown_scenario_or_filter_is_a_clear_error_not_a_traceback():
    done = run("interference_floor.py", "no-such-scenario")
    assert done.returncode != 0
    assert "error:" in done.stderr and "Traceback" not in done.stderr
    done = run("interference_floor.py", "s6-office", "--filter", "mode")
    assert done.returncode != 0
    assert "--filter" in done.stderr and "Traceback" not in done.stderr


def test_scale_reports_what_its_grid_left_out():
    done = run("scale.py", "--nodes", "100", "--minutes", "1", "--left-out", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    db = result["left_out_db"]
    assert 0.0 < db["median"] <= db["p99"] <= db["max"]


def test_scale_builds_a_block_of_buildings_and_takes_a_coarser_floor_on_request():
    args = ("scale.py", "--nodes", "800", "--minutes", "1", "--layout", "building", "--json")
    default = json.loads(run(*args, "--left-out").stdout)
    coarse = json.loads(run(*args, "--left-out", "--interference-floor-db", "0").stdout)
    # 800 nodes: three buildings of the default plan, the gateway in their middle.
    assert default["nodes"] == coarse["nodes"] == 800
    assert default["readings"] == coarse["readings"] > 0 and coarse["delivered"] > 0
    assert default["tree_depth"] == coarse["tree_depth"]  # (the same usable links)
    assert (default["interference_floor_db"], coarse["interference_floor_db"]) == (10.0, 0.0)
    # The same network (seed, positions, shadowing), fewer receivers a frame, and
    # more left out: each signal left out is now up to the noise itself.
    assert coarse["neighbours_per_node"] < 0.7 * default["neighbours_per_node"]
    assert coarse["left_out_db"]["max"] > default["left_out_db"]["max"]
    # At the default floor the typical receiver misses less than one signal at
    # the floor itself would add (0.41 dB).
    assert default["left_out_db"]["median"] < 0.41


def test_scale_input_errors_are_the_scenarios_message():
    done = run("scale.py", "--nodes", "1", "--minutes", "1")
    assert done.returncode != 0
    assert "network.nodes.count" in done.stderr and "Traceback" not in done.stderr
