"""bench/s6_busy_wait.py wraps the real MAC and CPU of a pure-Python copy: it sees
every send and job of a run, and counts a job held by a send (no timings asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "bench" / "s6_busy_wait.py"


def measure(point: str, busy_wait_ms: float) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--json",
            "--point",
            point,
            "--busy-wait-ms",
            str(busy_wait_ms),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    (line,) = done.stdout.splitlines()
    return json.loads(line)


def test_the_probe_sees_the_runs_sends_and_jobs_and_counts_what_a_send_holds():
    # Five members, every request at once: the gateway forwards while it sends.
    held = measure("group_size=5,delay_ms=0", 3.8)
    assert held["queries"] == 50
    assert held["response_time_mean_s"] > 0
    # Every query's ten messages are jobs of the gateway's and the members' CPUs.
    assert held["cpu_jobs"] >= 20 * held["queries"]
    assert held["send_windows"] >= held["mac_attempts"] > 0
    assert held["jobs_in_a_send"] > 0 and held["job_delay_s"] > 0
    # Held for no longer than its own send, the same run's jobs wait less.
    own = measure("group_size=5,delay_ms=0", 0.0)
    assert own["response_time_mean_s"] == held["response_time_mean_s"]
    assert own["mean_send_window_ms"] < held["mean_send_window_ms"]
    assert own["job_delay_s"] < held["job_delay_s"]
