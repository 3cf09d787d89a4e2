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
