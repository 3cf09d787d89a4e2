"""bench/host_time.py: the share of the machine's CPU time the host took while a
benchmark ran, from /proc/stat's steal field (no timings asserted)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))

import host_time  # noqa: E402


def _stat(tmp_path: Path, *fields: int) -> Path:
    path = tmp_path / "stat"
    path.write_text("cpu  " + " ".join(map(str, fields)) + "\ncpu0 1 2 3\n")
    return path


def test_the_share_is_the_steal_of_all_the_cpu_time_that_passed(tmp_path, monkeypatch):
    # user nice system idle iowait irq softirq steal (guest fields after)
    monkeypatch.setattr(host_time, "STAT", _stat(tmp_path, 100, 0, 10, 500, 0, 0, 0, 10, 0, 0))
    with host_time.HostTime() as host:
        monkeypatch.setattr(host_time, "STAT", _stat(tmp_path, 160, 0, 20, 600, 0, 0, 0, 40, 0, 0))
    # 60 + 10 + 100 + 30 = 200 jiffies passed, 30 of them stolen.
    assert host.steal_pct == 15.0


def test_no_steal_field_or_no_proc_stat_gives_none(tmp_path, monkeypatch):
    monkeypatch.setattr(host_time, "STAT", tmp_path / "missing")
    with host_time.HostTime() as host:
        pass
    assert host.steal_pct is None
    monkeypatch.setattr(host_time, "STAT", _stat(tmp_path, 1, 2, 3, 4))  # an old kernel's line
    with host_time.HostTime() as host:
        pass
    assert host.steal_pct is None


def test_this_machines_share_is_a_percentage():
    with host_time.HostTime() as host:
        sum(range(100_000))
    if Path("/proc/stat").exists():
        assert host.steal_pct is not None and 0.0 <= host.steal_pct <= 100.0
