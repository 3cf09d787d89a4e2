"""What the MAC tells RPL about a unicast: ETX takes acknowledged and unacknowledged
transmissions, never a frame the MAC could not send for a busy channel (Contiki's
rpl_link_neighbor_callback ignores MAC_TX_COLLISION)."""

from __future__ import annotations

from types import SimpleNamespace

from iotbench.net.mac.csma import CHANNEL_ACCESS_FAILURE, NO_ACK, SENT
from iotbench.net.rpl.driver import RplDriver
from iotbench.sim import Simulator


class _Rpl:
    def __init__(self) -> None:
        self.results: list[tuple] = []

    def link_result(self, now, neighbour, acked, transmissions) -> bool:
        self.results.append((neighbour[-2:], acked, transmissions))
        return False


def test_channel_access_failures_do_not_reach_etx():
    mac = SimpleNamespace(on_sent=None, address=bytes(8))
    node = SimpleNamespace(protocols={}, group_listeners=[], loop_check=None)
    rpl = _Rpl()
    RplDriver(Simulator(1), node, SimpleNamespace(mac=mac), rpl)
    neighbour = bytes(range(8))
    mac.on_sent(neighbour, SENT, 2)
    mac.on_sent(neighbour, NO_ACK, 4)
    mac.on_sent(neighbour, CHANNEL_ACCESS_FAILURE, 1)
    assert rpl.results == [(b"\x06\x07", True, 2), (b"\x06\x07", False, 4)]
