"""What a run's network is, however it was built: hosts, roles, interfaces, media.

A `Network` is a value: its hosts by id, the roles they play, the interface
each one uses, and the media between them. Protocol set-ups (world/protocols/)
and workloads (world/workloads/) ask it for the node of a role and its
address; they never see how the network was made.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from iotbench.net.impairments import Redraw
from iotbench.net.l2 import L2Interface, L2Node
from iotbench.net.link import PointToPointLink
from iotbench.net.node import Interface, Node

# name -> that component's random stream
Streams = Callable[[str], random.Random]


@dataclass
class Network:
    hosts: dict[str, Node | L2Node]
    roles: dict[str, tuple[str, ...]]
    # The interface each host uses towards the others (its radio, or its link end).
    interfaces: dict[str, Interface | L2Interface]
    redraws: list[Redraw] = field(default_factory=list)
    link: PointToPointLink | None = None  # pair networks
    parts: dict[str, object] = field(default_factory=dict)  # radio networks: see there

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

    def interface(self, host: Node | L2Node) -> Interface | L2Interface:
        return self.interfaces[host.name]

    def address(self, host: Node | L2Node) -> bytes:
        """The address others reach `host` at (its global IP address, or its MAC address)."""
        return self.interfaces[host.name].address
