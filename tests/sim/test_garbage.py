"""The collector's pace during a run (sim/garbage.py): spaced out while its passes find
no garbage, the usual pace once one finds some, the process's own after the run."""

from __future__ import annotations

import gc

import pytest

import iotbench.world.run as world_run
from iotbench.sim.garbage import MAX_YOUNG_THRESHOLD, no_collections, paced_collections

DEFAULT = (700, 10, 10)


@pytest.fixture
def default_pace():
    before = gc.get_threshold()
    gc.set_threshold(*DEFAULT)
    gc.collect()
    yield
    gc.set_threshold(*before)


class Cycle:
    def __init__(self) -> None:
        self.me = self  # garbage in a cycle once dropped: only the collector frees it


def allocate_live(n: int) -> list:
    return [[i] for i in range(n)]  # n containers that stay alive: passes find nothing


def test_passes_that_find_nothing_space_the_next_ones_out_up_to_the_maximum(default_pace):
    callbacks = list(gc.callbacks)
    with paced_collections():
        assert gc.get_threshold() == DEFAULT  # the first pass comes at the usual pace
        kept = allocate_live(1_000)
        assert gc.get_threshold() == (1_400, 10, 10)
        kept += allocate_live(4 * MAX_YOUNG_THRESHOLD)
        assert gc.get_threshold() == (MAX_YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == DEFAULT
    assert gc.callbacks == callbacks
    assert len(kept) > 4 * MAX_YOUNG_THRESHOLD


def test_a_pass_that_finds_garbage_brings_the_usual_pace_back_for_good(default_pace):
    with paced_collections():
        kept = allocate_live(4 * MAX_YOUNG_THRESHOLD)
        assert gc.get_threshold()[0] == MAX_YOUNG_THRESHOLD
        for _ in range(MAX_YOUNG_THRESHOLD):
            Cycle()
        assert gc.get_threshold() == DEFAULT
        kept += allocate_live(10_000)  # passes that find nothing again
        assert gc.get_threshold() == DEFAULT
    assert gc.get_threshold() == DEFAULT
    assert len(kept) > 4 * MAX_YOUNG_THRESHOLD


def test_garbage_of_one_percent_of_a_pass_or_less_keeps_the_pace(default_pace):
    with paced_collections():
        kept = allocate_live(1_000)
        assert gc.get_threshold()[0] == 1_400
        for _ in range(5):  # (an object may count twice: its dict)
            Cycle()
        kept += allocate_live(1_400)
        assert gc.get_threshold()[0] == 2_800
    assert len(kept) == 2_400


def test_an_exception_still_restores_the_process_pace(default_pace):
    with pytest.raises(KeyError), paced_collections():
        allocate_live(1_000)
        raise KeyError("x")
    assert gc.get_threshold() == DEFAULT


def test_a_run_is_paced_and_leaves_the_process_as_it_was(default_pace, monkeypatch):
    seen = []

    def spy(*args):
        allocate_live(1_000)
        seen.append(gc.get_threshold())
        raise RuntimeError("stop here")

    monkeypatch.setattr(world_run, "_run", spy)
    with pytest.raises(RuntimeError):
        world_run.run_one({}, 1)
    assert seen == [(1_400, 10, 10)]
    assert gc.get_threshold() == DEFAULT


def test_no_pass_runs_while_a_network_is_built_and_its_garbage_is_freed_after():
    passes = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            passes.append(info["collected"])

    gc.callbacks.append(count)
    try:
        with no_collections():
            kept = allocate_live(50_000)
            for _ in range(1_000):
                Cycle()
            assert passes == []
        assert gc.isenabled()
        gc.collect()
        assert sum(passes) >= 1_000  # the cycles made inside were freed after it
    finally:
        gc.callbacks.remove(count)
    assert len(kept) == 50_000


def test_no_collections_keeps_a_disabled_collector_disabled():
    gc.disable()
    try:
        with no_collections():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_every_run_builds_its_network_without_collector_passes(monkeypatch):
    seen = []
    real = world_run.build_network

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(world_run, "build_network", spy)
    from iotbench.scenarios import expand, load_scenario

    run = expand(load_scenario("s1-object-download"))[0]
    world_run.run_one(run.config, run.seed)
    assert seen == [False]
    assert gc.isenabled()
