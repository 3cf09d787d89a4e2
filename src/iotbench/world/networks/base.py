"""What a run's network is, however it was built: hosts, roles, interfaces, media.

A `Network` is a value: its hosts by id, the roles they play, the interface
each one uses, and the media between them. Protocol set-ups (world/protocols/)
and workloads (world/workloads/) ask it for the node of a role and its
address; they never see how the network was made. A `PairNetwork` (two
hosts and the link between them, world/networks/pair.py) and a
`RadioNetwork` (802.15.4 nodes on a medium, world/networks/radio.py) add
what the metrics, the pcap, the report and the workloads that need more
than roles and addresses use of them, as named attributes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from iotbench.net.impairments import Redraw
from iotbench.net.l2 import L2Interface, L2Node
from iotbench.net.link import PointToPointLink
from iotbench.net.lowpan.interface import LowpanInterface
from iotbench.net.node import Interface, Node

if TYPE_CHECKING:
    from iotbench.net.mac.contiki_csma import ContikiCsmaMac
    from iotbench.net.mac.csma import CsmaMac
    from iotbench.net.radio.interferer import WifiInterferer
    from iotbench.net.radio.medium import Radio, RadioMedium
    from iotbench.net.routing.tree import Tree
    from iotbench.net.rpl.node import RplNode
    from iotbench.world.networks.topology import Topology

# name -> that component's random stream
Streams = Callable[[str], random.Random]
#: The interface a host uses towards the others: a link end, a radio node's 6LoWPAN
#: interface, or an 802.15.4 interface of its own (NDN).
HostInterface = Interface | LowpanInterface | L2Interface


def ip_hosts(hosts: list[Node | L2Node]) -> list[Node]:
    """`hosts`, every one an IP host (every protocol's but NDN's), else TypeError."""
    for host in hosts:
        if not isinstance(host, Node):
            raise TypeError(f"{host.name!r} is not an IP host")
    return [host for host in hosts if isinstance(host, Node)]


class ItemFollower(Protocol):
    """A part of the network that acts when the workload's items start: an outage
    that begins with a chosen item, a parameter redrawn every n items
    (network.impair). The network is built before the workload and knows nothing
    of it; `Network.follow_items` connects the two."""

    def plan(self, total_items: int) -> None:
        """The run will start `total_items` items (indices 0 .. total_items - 1)."""

    def item_started(self, index: int) -> None:
        """Item `index` starts now."""


class ItemStarts(Protocol):
    """What follow_items needs of an item log (metrics/items.ItemLog, or the shim's
    datagrams): the callbacks it makes when an item starts, the network's first."""

    network_on_start: list[Callable[[int], None]]


@dataclass
class Network:
    hosts: dict[str, Node | L2Node]
    roles: dict[str, tuple[str, ...]]
    # The interface each host uses towards the others (its radio, or its link end).
    interfaces: dict[str, HostInterface]
    redraws: list[Redraw] = field(default_factory=list)
    item_followers: list[ItemFollower] = field(default_factory=list)

    def follow_items(self, items: ItemStarts, total_items: int) -> None:
        """Let what follows items (item_followers) see `items` start, once the
        workload knows it will start `total_items` of them."""
        for follower in self.item_followers:
            follower.plan(total_items)
            items.network_on_start.append(follower.item_started)

    def ids(self, role: str) -> tuple[str, ...]:
        return self.roles.get(role, ())

    def node(self, role: str) -> Node | L2Node:
        """The one node that plays `role`."""
        ids = self.ids(role)
        if len(ids) != 1:
            raise ValueError(f"the network has {len(ids)} nodes with role {role!r}, not one")
        return self.hosts[ids[0]]

    def nodes(self, role: str) -> list[Node | L2Node]:
        return [self.hosts[i] for i in self.ids(role)]

    def ip_node(self, role: str) -> Node:
        """The one node that plays `role`, an IP host (every protocol's but NDN's)."""
        host = self.node(role)
        if not isinstance(host, Node):
            raise TypeError(f"the {role} node {host.name!r} is not an IP host")
        return host

    def ip_nodes(self, role: str) -> list[Node]:
        """The nodes that play `role`, IP hosts."""
        return ip_hosts(self.nodes(role))

    def interface(self, host: Node | L2Node) -> HostInterface:
        return self.interfaces[host.name]

    def l2_interface(self, host: Node | L2Node) -> L2Interface:
        """The 802.15.4 interface of `host`, a node that puts its protocol straight
        into frames (NDN's)."""
        iface = self.interfaces[host.name]
        if not isinstance(iface, L2Interface):
            raise TypeError(f"{host.name!r} has no 802.15.4 interface of its own")
        return iface

    def address(self, host: Node | L2Node) -> bytes:
        """The address others reach `host` at (its global IP address, or its MAC address)."""
        return self.interfaces[host.name].address


@dataclass(kw_only=True)
class PairNetwork(Network):
    """Two hosts, `client` and `server`, and the link between them."""

    link: PointToPointLink


@dataclass(kw_only=True)
class RadioNetwork(Network):
    """802.15.4 nodes on one medium, with `network.second`'s network and the
    gateway's uplink when the scenario has them.

    `radios`, `macs` and `rpl` are this network's own; `all_radios()` and the
    like add the second network's (its metrics count with the first's)."""

    topology: Topology
    medium: RadioMedium
    radios: dict[str, Radio]
    macs: dict[str, CsmaMac | ContikiCsmaMac]
    tree: Tree  # the routing tree of least ETX, by topology index
    interferers: list[WifiInterferer]
    streams: Streams  # the network's own random streams (network.seed)
    rpl: list[RplNode]  # empty under static routing and for NDN
    prr_frame_bytes: int  # the frame size link qualities are computed for
    min_link_prr: float  # the weakest link routing may use
    uplink: PointToPointLink | None = None  # the gateway (or its host) to the uplink host
    second: RadioNetwork | None = None
    gateways_link: PointToPointLink | None = None  # the first network's end to the second's

    def tree_path(self, a: str, b: str) -> list[str]:
        """The node ids on the routing tree's path from node `a` to node `b`."""
        ids = [n.id for n in self.topology.nodes]
        return [ids[i] for i in self.tree.path_between(ids.index(a), ids.index(b))]

    def fewest_hops(self) -> list[int]:
        """Each node's fewest hops to the gateway over usable links, computed when
        asked (S4's link stress needs it; building it is not free)."""
        from iotbench.net.routing.tree import fewest_hops

        return fewest_hops(
            list(self.radios.values()),
            self.tree.root,
            self.prr_frame_bytes,
            self.min_link_prr,
            self.medium.variation.spread(),
        )

    def networks(self) -> list[RadioNetwork]:
        """This network and the second one, if there is one."""
        return [self] if self.second is None else [self, self.second]

    def all_radios(self) -> list[Radio]:
        return [r for net in self.networks() for r in net.radios.values()]

    def all_macs(self) -> list[CsmaMac | ContikiCsmaMac]:
        return [m for net in self.networks() for m in net.macs.values()]

    def all_rpl(self) -> list[RplNode]:
        return [r for net in self.networks() for r in net.rpl]

    def all_interferers(self) -> list[WifiInterferer]:
        return [i for net in self.networks() for i in net.interferers]
