"""The Ray executor on a local Ray instance of two CPUs: same results as the local
pool, failures recorded, resume after the driver is killed, clear set-up errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import ray
import ray.cloudpickle

from iotbench.runner import ResultStore, run_campaign
from iotbench.runner.ray_pool import RayPool
from iotbench.scenarios import UserError, expand, load_scenario

EXAMPLE = Path(__file__).parents[1] / "scenarios" / "example.toml"

# Ray workers do not import the tests: ship this module's functions by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def stored_metrics(out: Path) -> dict[str, tuple]:
    with ResultStore(out, read_only=True) as store:
        return {r.key: (r.seed, json.dumps(r.metrics, sort_keys=True)) for r in store.runs()}


def test_ray_and_the_local_pool_give_identical_results(tmp_path: Path) -> None:
    scenario = load_scenario(EXAMPLE)
    runs = expand(scenario, reps=1)
    kwargs = {"jobs": 2, "pcap": True, "progress": False}
    local = run_campaign(scenario, runs, tmp_path / "local", **kwargs)
    on_ray = run_campaign(scenario, runs, tmp_path / "ray", executor="ray", **kwargs)
    assert local.executed == on_ray.executed == len(runs) == 6
    assert stored_metrics(tmp_path / "local") == stored_metrics(tmp_path / "ray")
    # The workers wrote the pcaps into the output folder, byte for byte the same.
    names = sorted(p.name for p in (tmp_path / "local" / "pcap").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "ray" / "pcap").iterdir())
    for name in names:
        a = (tmp_path / "local" / "pcap" / name).read_bytes()
        assert a == (tmp_path / "ray" / "pcap" / name).read_bytes()


def fails_for_size_100(config: dict, seed: int, pcap_path: str | None = None) -> dict:
    if config["workload"]["object_size_bytes"] == 100:
        raise ValueError("boom at 100")
    return {"bytes": config["workload"]["object_size_bytes"], "seed_mod": seed % 7}


def test_a_failed_run_is_recorded_and_the_rest_go_on(tmp_path: Path) -> None:
    scenario = load_scenario(EXAMPLE)
    runs = expand(scenario, reps=1)
    result = run_campaign(
        scenario,
        runs,
        tmp_path,
        run_fn=fails_for_size_100,
        executor="ray",
        jobs=2,
        progress=False,
    )
    assert len(result.failures) == 2 and result.executed == 4
    assert all("ValueError: boom at 100" in f.error for f in result.failures)
    assert "boom at 100" in (tmp_path / "errors.log").read_text()
    assert len(stored_metrics(tmp_path)) == 4


def test_killing_the_driver_loses_no_finished_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "iotbench", "run", str(EXAMPLE), "--out", str(out)]
    argv += ["--executor", "ray", "--jobs", "1", "--json"]
    # Its own session, so that the kill takes the driver and the Ray instance it started.
    driver = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True
    )
    try:
        first = json.loads(driver.stdout.readline())  # stored before it was printed
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    again = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    lines = [json.loads(line) for line in again.stdout.splitlines()]
    assert len(lines) == 12 and first in lines
    skipped = int(again.stderr.split(" already stored")[0].rsplit(" ", 1)[-1])
    assert 1 <= skipped < 12
    # And the same results as a campaign that was never interrupted.
    whole = tmp_path / "whole"
    assert (
        subprocess.run([*argv[:6], str(whole), "--jobs", "2"], capture_output=True).returncode == 0
    )
    assert stored_metrics(out) == stored_metrics(whole)


def test_an_output_folder_a_node_cannot_write_is_a_clear_error(tmp_path: Path) -> None:
    # A folder missing on the node stands for storage the workers do not share.
    missing = tmp_path / "not-on-the-workers"
    with pytest.raises(UserError, match="cannot write the output folder") as info:
        RayPool(lambda c, s, pcap_path=None: {}, jobs=1, writable=[missing])
    assert "storage every node shares" in str(info.value)
    assert not ray.is_initialized()


def test_without_ray_installed_the_message_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(UserError, match=r"pip install 'iotbench\[cluster\]'"):
        RayPool(lambda c, s, pcap_path=None: {})
