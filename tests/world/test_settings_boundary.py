"""run_one parses a run's config once: what it hands on is typed settings."""

from __future__ import annotations

import iotbench.world.run as world_run
from iotbench.scenarios import expand, load_scenario
from iotbench.scenarios.fields import Settings
from iotbench.world.workloads import WORKLOADS


def test_the_network_and_the_workload_get_settings(monkeypatch):
    seen = []
    build_network = world_run.build_network

    def spy_network(sim, network, observers, protocol):
        seen.append(("network", network, protocol))
        return build_network(sim, network, observers, protocol)

    workload_class = WORKLOADS["sequential"]

    class Spy(workload_class):
        def __init__(self, sim, net, config, *rest):
            seen.append(("workload", config))
            super().__init__(sim, net, config, *rest)

    monkeypatch.setattr(world_run, "build_network", spy_network)
    monkeypatch.setitem(WORKLOADS, "sequential", Spy)
    (run,) = expand(
        load_scenario("s3-robustness"),
        {"variant": ["coap-con"], "condition": ["base"]},
        {"workload.items": 3},
        reps=1,
    )
    assert isinstance(run.config, dict)  # what the runner and the store keep
    metrics = world_run.run_one(run.config, run.seed).metrics
    assert metrics["items_delivered"] == 3
    (_, network, protocol), (_, config) = seen
    assert all(isinstance(v, Settings) for v in (network, protocol, config))
    assert config.network is network
