"""`workload.kind = "poisson"`: requests as a Poisson process (the example workload
of docs/contributing.md, added by following it)."""

from __future__ import annotations

import math
import statistics

from iotbench.apps.requesters import PoissonRequester
from iotbench.metrics.items import Item, ItemLog
from iotbench.scenarios import expand, load_scenario
from iotbench.sim import Simulator
from iotbench.world import run_one


class SilentClient:
    """Never answers: an open-loop requester must start items anyway."""

    hands_over = False

    def __init__(self) -> None:
        self.starts: list[float] = []

    def start(self, item: Item, done: object, handed_over: object) -> None:
        self.starts.append(item.t_start)


def arrivals(count: int, interval_s: float, seed: int) -> list[float]:
    sim = Simulator(seed)
    client = SilentClient()
    requester = PoissonRequester(
        sim, client, ItemLog(), count, interval_s, sim.rng("workload/arrivals")
    )
    requester.start(10.0)
    sim.run()
    return client.starts


def test_gaps_are_exponential_with_the_mean_interval():
    starts = arrivals(4000, 0.5, seed=3)
    assert len(starts) == 4000 and starts[0] > 10.0
    gaps = [b - a for a, b in zip([10.0, *starts], starts, strict=False)]
    mean = statistics.fmean(gaps)
    # The mean of 4,000 exponential gaps is within 5 % of 0.5 s (about 3 standard
    # errors); their coefficient of variation is 1 (a periodic requester's is 0).
    assert abs(mean - 0.5) < 0.025
    assert abs(statistics.pstdev(gaps) / mean - 1.0) < 0.06
    # Memoryless: the share of gaps over the mean is e^-1.
    assert abs(sum(g > 0.5 for g in gaps) / len(gaps) - math.exp(-1)) < 0.03


def test_arrivals_are_deterministic_per_seed():
    assert arrivals(50, 1.0, seed=7) == arrivals(50, 1.0, seed=7)
    assert arrivals(50, 1.0, seed=7) != arrivals(50, 1.0, seed=8)


def test_a_poisson_run_over_coap():
    overrides = {"workload.kind": "poisson", "workload.items": 300, "workload.interval_s": 0.05}
    (run,) = expand(
        load_scenario("s2-coap-vs-http"),
        {"variant": ["coap-con"], "loss": ["0%"], "latency": ["0ms"]},
        overrides,
    )
    result = run_one(run.config, run.seed)
    m = result.metrics
    assert m["items"] == 300 and m["items_delivered"] == 300
    assert not result.failures.hit_time_limit
    # 300 requests about 50 ms apart: about 15 s (a 10 % band is 3.5 standard errors).
    assert 13.5 < m["task_completion_time_s"] < 16.5
    assert run_one(run.config, run.seed).metrics == m
