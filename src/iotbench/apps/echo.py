"""UDP echo client and server: the simplest request-response workload.

Used by the ns-3 speed comparison (bench/vs_ns3.py), whose peer runs ns-3's
UdpEchoClient/UdpEchoServer: the client sends `count` datagrams of `size`
bytes every `interval_s`, the server returns each one unchanged.
"""

from __future__ import annotations

from iotbench.net.node import Node
from iotbench.sim import Simulator


class UdpEchoServer:
    def __init__(self, node: Node, port: int = 9) -> None:
        self.node = node
        self.port = port
        self.echoed = 0
        node.udp_bind(port, self._on_datagram)

    def _on_datagram(self, payload: bytes, src: bytes, sport: int, dport: int, dst: bytes) -> None:
        self.echoed += 1
        self.node.udp_send(self.port, src, sport, payload)


class UdpEchoClient:
    def __init__(
        self,
        sim: Simulator,
        node: Node,
        server: bytes,
        *,
        count: int,
        port: int = 9,
        size: int = 32,
        interval_s: float = 0.01,
    ) -> None:
        self.sim = sim
        self.node = node
        self.server = server
        self.server_port = port
        self.count = count
        self.payload = bytes(size)
        self.interval_s = interval_s
        self.sent = 0
        self.received = 0
        self.first_sent_s = float("nan")
        self.port = node.udp_bind_ephemeral(self._on_datagram)

    def start(self, at: float) -> None:
        self.sim.at(at, self._send)

    def _send(self) -> None:
        if not self.sent:
            self.first_sent_s = self.sim.now
        self.node.udp_send(self.port, self.server, self.server_port, self.payload)
        self.sent += 1
        if self.sent < self.count:
            self.sim.schedule(self.interval_s, self._send)

    def _on_datagram(self, payload: bytes, src: bytes, sport: int, dport: int, dst: bytes) -> None:
        self.received += 1
