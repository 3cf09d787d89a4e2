"""A pair network's per-item impairments wait in its item_followers until
Network.follow_items connects them to a run's items: the network is built without
knowing the workload, and what it does per item is the same as when it was."""

from __future__ import annotations

import random

from iotbench.metrics.items import ItemLog
from iotbench.metrics.observers import Observers
from iotbench.scenarios.fields import validate
from iotbench.scenarios.schema import NETWORK
from iotbench.scenarios.settings import network_settings
from iotbench.sim import RngStreams, Simulator
from iotbench.world.networks import build_network

OUTAGES = {"model": "random-items", "count": 3, "duration_s": 2.0}
REDRAWN_LOSS = {"model": "bernoulli", "p": {"uniform": [0.0, 0.5], "every_items": 4}}


def pair(impair: dict, seed: int = 7):
    sim = Simulator(1)
    raw = validate(NETWORK, {"seed": seed, "impair": {"both": impair}}, ("network",))
    return sim, build_network(sim, network_settings(raw), Observers())


def start_items(sim: Simulator, items: ItemLog, n: int) -> list[float]:
    """Start n items one second apart; their start times."""
    times = []
    for _ in range(n):
        times.append(sim.now)
        items.start(sim.now)
        sim.run(until=sim.now + 1.0)
    return times


def test_random_items_outages_begin_with_the_items_drawn_from_the_networks_stream():
    sim, net = pair({"outages": OUTAGES})
    items = ItemLog()
    net.follow_items(items, 10)
    starts = start_items(sim, items, 10)
    # The draw the network makes: its own stream, among the 10 items the run plans.
    chosen = sorted(RngStreams(7).stream("link/both/outages").sample(range(10), 3))
    outages = net.link.a_to_b.impairment.outages
    assert outages.intervals == [(starts[i], starts[i] + 2.0) for i in chosen]
    assert net.link.b_to_a.impairment.outages is outages  # `both`: one outage for the link


def test_without_follow_items_the_items_change_nothing():
    sim, net = pair({"outages": OUTAGES})
    items = ItemLog()
    start_items(sim, items, 10)
    assert net.link.a_to_b.impairment.outages.intervals == []


def test_a_parameter_redrawn_every_n_items_is_redrawn_as_they_start():
    sim, net = pair({"loss": REDRAWN_LOSS})
    items = ItemLog()
    net.follow_items(items, 12)
    loss = net.link.a_to_b.impairment.loss
    seen = []
    for _ in range(12):
        items.start(sim.now)
        seen.append(loss.p)
    draws = random.Random()
    draws.setstate(RngStreams(7).stream("link/both/loss/p/redraw").getstate())
    expected = [draws.uniform(0.0, 0.5) for _ in range(3)]
    assert seen == [expected[i // 4] for i in range(12)]


def test_the_network_acts_on_an_items_start_before_the_workload_does():
    sim, net = pair({"loss": REDRAWN_LOSS})
    items = ItemLog()
    loss = net.link.a_to_b.impairment.loss
    seen_by_workload = []
    items.on_start.append(lambda index: seen_by_workload.append(loss.p))
    net.follow_items(items, 4)  # connected after the workload's listener
    items.start(sim.now)
    assert seen_by_workload == [loss.p] and loss.p != 0.0
