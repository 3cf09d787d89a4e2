"""The grid bench/scale.py measures, built for a test: every node publishes a
reading to the gateway once a minute (CoAP NON over 6LoWPAN, the static tree)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from iotbench.metrics.items import ItemLog
from iotbench.metrics.observers import Observers
from iotbench.metrics.traffic import TrafficMeter
from iotbench.scenarios import expand, parse_scenario
from iotbench.scenarios.settings import run_settings
from iotbench.scenarios.settings_types import NetworkSettings
from iotbench.sim import Simulator
from iotbench.world.networks import RadioNetwork, build_network
from iotbench.world.workloads.publish import PublishWorkload


def scale_scenario(nodes: int, minutes: float) -> str:
    """bench/scale.py's scenario text for a grid of `nodes` publishing for `minutes`."""
    path = Path(__file__).parents[2] / "bench" / "scale.py"
    spec = importlib.util.spec_from_file_location("bench_scale", path)
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    return scale.scenario_text(nodes, minutes, "grid", spacing=60.0)


@dataclass
class Grid:
    network: NetworkSettings
    sim: Simulator
    net: RadioNetwork
    items: ItemLog
    end_s: float  # the run's max_sim_time_s: the readings' minutes and one more


def scale_grid(nodes: int, minutes: float, seed: int | None = None) -> Grid:
    """The grid built with its workload started, not yet run; `seed`: the
    kernel's (None: the run's own)."""
    (run,) = expand(parse_scenario(scale_scenario(nodes, minutes), label="bench/scale.py"))
    settings = run_settings(run.config)
    sim, items = Simulator(run.seed if seed is None else seed), ItemLog()
    net = build_network(sim, settings.network, Observers(TrafficMeter(sim)), settings.protocol)
    assert isinstance(net, RadioNetwork)
    PublishWorkload(sim, net, settings, items).start()
    return Grid(settings.network, sim, net, items, run.config["max_sim_time_s"])
