"""The networks a run can have: a pair of nodes on one point-to-point link
(pair.py), or a radio network of 802.15.4 nodes built from a topology
(radio.py, topology.py), with its devices, uplinks and a second network.
`build_network` picks one from the scenario's `network` section."""

from __future__ import annotations

from iotbench.metrics.observers import Observers
from iotbench.scenarios.radio_schema import is_radio_topology
from iotbench.scenarios.settings_types import NetworkSettings, ProtocolSettings
from iotbench.sim import Simulator
from iotbench.world.networks.base import Network, PairNetwork, RadioNetwork, Streams
from iotbench.world.networks.pair import build_two_node_network
from iotbench.world.networks.radio import build_radio_network

__all__ = [
    "Network",
    "PairNetwork",
    "RadioNetwork",
    "Streams",
    "build_network",
    "build_two_node_network",
    "is_radio_network",
]


def is_radio_network(network: NetworkSettings) -> bool:
    """A radio network (any topology but pair, which is also what an absent one means)."""
    return is_radio_topology(network.topology)


def build_network(
    sim: Simulator,
    network: NetworkSettings,
    observers: Observers,
    protocol: ProtocolSettings | None = None,
) -> Network:
    """The network of a run: a pair, or a radio network (for the protocol's kind of
    node). It needs nothing of the workload; what it does per item waits in its
    item_followers for Network.follow_items."""
    if is_radio_network(network):
        name = protocol.name if protocol else ""
        ndn = protocol.ndn if protocol else None
        l2_mtu = ndn.mtu_bytes if ndn is not None else None
        return build_radio_network(sim, network, name, observers, l2_mtu)
    return build_two_node_network(sim, network, observers)
