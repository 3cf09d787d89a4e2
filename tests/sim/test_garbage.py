"""The collector's pace during a run (sim/garbage.py): raised inside, restored after."""

from __future__ import annotations

import gc

import pytest

import iotbench.world.run as world_run
from iotbench.sim.garbage import YOUNG_THRESHOLD, fewer_collections


@pytest.fixture
def default_pace():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_the_block_runs_at_the_raised_threshold_and_restores_the_old_one(default_pace):
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_an_exception_still_restores_it(default_pace):
    with pytest.raises(KeyError), fewer_collections():
        raise KeyError("x")
    assert gc.get_threshold() == (700, 10, 10)


def test_a_run_goes_at_the_raised_pace_and_leaves_the_process_as_it_was(default_pace, monkeypatch):
    seen = []

    def spy(*args):
        seen.append(gc.get_threshold())
        raise RuntimeError("stop here")

    monkeypatch.setattr(world_run, "_run", spy)
    with pytest.raises(RuntimeError):
        world_run.run_one({}, 1)
    assert seen == [(YOUNG_THRESHOLD, 10, 10)]
    assert gc.get_threshold() == (700, 10, 10)
