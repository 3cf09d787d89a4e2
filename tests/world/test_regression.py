"""The built-in scenarios give exactly the stored results (see regression.py)."""

from __future__ import annotations

from regression import CASES, collect, differences, load_baseline


def test_builtin_scenarios_keep_their_metrics_and_pcap_bytes() -> None:
    diffs = differences(load_baseline(full=False), collect(CASES, jobs=2))
    assert not diffs, "\n".join(diffs[:40])
