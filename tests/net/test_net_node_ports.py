"""UDP port bookkeeping of a node: ephemeral ports wrap within 49152-65535 and
an unbound port can be taken again (the shim binds one per client, for days)."""

from __future__ import annotations

import pytest

from iotbench.net.node import EPHEMERAL_PORTS, Node
from iotbench.sim import Simulator


def handler(payload, src, sport, dport, dst):
    pass


def test_ephemeral_ports_count_up_and_wrap_around_to_free_ones():
    node = Node(Simulator(), "n")
    first = node.udp_bind_ephemeral(handler)
    assert first == 49152 and node.udp_bind_ephemeral(handler) == 49153
    node.udp_unbind(first)
    ports = [node.udp_bind_ephemeral(handler) for _ in range(EPHEMERAL_PORTS - 2)]
    assert ports[0] == 49154 and ports[-1] == 65535
    assert node.udp_bind_ephemeral(handler) == first  # wrapped to the one freed
    with pytest.raises(ValueError, match="every ephemeral UDP port is in use"):
        node.udp_bind_ephemeral(handler)


def test_an_unbound_port_is_free_again_and_unbinding_twice_is_harmless():
    node = Node(Simulator(), "n")
    node.udp_bind(5683, handler)
    node.udp_unbind(5683)
    node.udp_unbind(5683)
    node.udp_bind(5683, handler)
    with pytest.raises(ValueError, match="in use"):
        node.udp_bind(5683, handler)
