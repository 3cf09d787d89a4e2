"""What the MAC tells RPL about a unicast: ETX takes acknowledged and unacknowledged
transmissions, never a frame the MAC could not send for a busy channel (Contiki's
rpl_link_neighbor_callback ignores MAC_TX_COLLISION)."""

from __future__ import annotations

from iotbench.metrics.observers import Observers
from iotbench.net.mac.csma import CHANNEL_ACCESS_FAILURE, NO_ACK, SENT
from iotbench.scenarios import expand, parse_scenario
from iotbench.scenarios.settings import run_settings
from iotbench.sim import Simulator
from iotbench.world.networks import build_network

TWO_NODES = """
name = "two"
description = "two nodes in reach of each other, RPL"
[network]
topology = "line"
[network.nodes]
count = 2
spacing_m = 20.0
[network.radio.path_loss]
shadowing_db = 0.0
[network.routing]
protocol = "rpl"
[workload]
kind = "sequential"
items = 1
[protocol]
name = "coap"
"""


def test_channel_access_failures_do_not_reach_etx():
    (run,) = expand(parse_scenario(TWO_NODES), {}, {})
    settings = run_settings(run.config)
    sim = Simulator(1)
    net = build_network(sim, settings.network, Observers(), settings.protocol)
    sim.run(until=30.0)  # n1 has heard the root's DIOs
    root, node = net.interfaces["n0"], net.interfaces["n1"]
    rpl = net.rpl[1]
    alpha = rpl.params.etx_alpha
    etx = rpl.link_etx(root.link_local)
    assert etx is not None
    node.mac.on_sent(root.mac.address, SENT, 2)
    etx = alpha * etx + (1 - alpha) * 2
    assert rpl.link_etx(root.link_local) == etx
    node.mac.on_sent(root.mac.address, NO_ACK, 4)
    etx = alpha * etx + (1 - alpha) * rpl.params.etx_noack_penalty
    assert rpl.link_etx(root.link_local) == etx
    node.mac.on_sent(root.mac.address, CHANNEL_ACCESS_FAILURE, 1)
    assert rpl.link_etx(root.link_local) == etx
