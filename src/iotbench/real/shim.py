"""The impairment shim: real UDP traffic through the simulator's network model.

This machine's kernel has no netem, so real-mode impairment happens in user
space. The shim listens on a UDP address for clients and relays their
datagrams to a server, and back; in between, each datagram crosses the same
two-node network a simulation builds from a scenario's `network` section
(`world/networks/pair.py`): real IPv4/IPv6 and UDP headers, fragmentation to the
link MTU and reassembly, the link's rate, drop-tail queue and propagation
delay, and the impairment models of each direction (loss, extra delay,
outages, redraws). Only the clock differs: `RealTimeClock` instead of the
event kernel.

    client --UDP--> [listen] shim [relay socket per client] --UDP--> server
                      |  simulated client node --link--> simulated server node |

Each client address gets a relay socket of its own towards the server (so the
server can tell clients apart and its answers find their way back) and a UDP
port of its own on the simulated client node. `to_server` impairments apply to
what clients send, `to_client` to what the server answers.

Item-based schedules of a scenario (a parameter redrawn every N items, outages
that start with randomly chosen items) count a datagram from a client as an
item, since the shim sees datagrams, not requests: retransmissions count too.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from iotbench.metrics.observers import Observer, Observers
from iotbench.metrics.pcap import pcap_header, pcap_record
from iotbench.net.link import Channel
from iotbench.net.packet import Packet
from iotbench.real.clock import RealTimeClock
from iotbench.scenarios.settings import network_settings
from iotbench.world.networks import build_two_node_network
from iotbench.world.networks.base import PairNetwork

#: UDP payload that fits one IP datagram (65535 minus the IP and UDP headers).
MAX_PAYLOAD = {4: 65535 - 20 - 8, 6: 65535 - 8}
FLUSH_INTERVAL_S = 0.5  # how often the link's packets are written to pcap
MAX_WAITING = 64  # datagrams held for a client whose relay socket is not open yet
SWEEP_INTERVAL_S = 10.0  # how often idle clients are forgotten (at most)


@dataclass(frozen=True)
class ShimLimits:
    """Bounds that keep a long-running shim's memory finite under any traffic."""

    max_clients: int = 1024  # a new client beyond this is not relayed (and counted)
    idle_timeout_s: float = 300.0  # a client silent for this long is forgotten


@dataclass
class ShimStats:
    datagrams_from_clients: int = 0
    datagrams_from_server: int = 0
    delivered_to_server: int = 0
    delivered_to_clients: int = 0
    refused_clients: int = 0  # datagrams of clients beyond max_clients
    too_large: int = 0  # datagrams that no IP packet can carry
    forgotten_clients: int = 0
    #: (channel name, fate) -> packets on the simulated link
    packets: Counter = field(default_factory=Counter)


class DatagramItems:
    """What Network.follow_items needs of an item log: its callbacks when an item
    starts. The shim starts an item per datagram from a client (see the module doc)."""

    def __init__(self) -> None:
        self.network_on_start: list[Callable[[int], None]] = []
        self.started = 0

    def start(self) -> None:
        index = self.started
        self.started += 1
        for callback in self.network_on_start:
            callback(index)


class LinkLog(Observer):
    """What crosses the simulated link: fates counted per direction as they become
    final, and pcap records written every FLUSH_INTERVAL_S (so a busy shim does
    not write to disk per datagram)."""

    def __init__(self, stats: ShimStats, pcap, epoch: float) -> None:
        self.stats = stats
        self.pcap = pcap
        self.epoch = epoch  # wall-clock time of the shim's t = 0, for pcap stamps
        self._records: list[bytes] = []

    def transmitted(self, pkt: Packet) -> None:
        if self.pcap is not None:
            self._records.append(pcap_record(self.epoch + pkt.t_sent, pkt.data))

    def finished(self, pkt: Packet) -> None:
        channel = cast(Channel, pkt.medium)  # the shim's network is one point-to-point link
        self.stats.packets[(channel.name, pkt.fate)] += 1

    def flush(self) -> None:
        records, self._records = self._records, []
        if self.pcap is None or not records:
            return
        try:
            self.pcap.write(b"".join(records))
            self.pcap.flush()
        except OSError as exc:  # e.g. the disk is full: relaying matters more
            print(f"iotbench: shim: pcap no longer written: {exc}", file=sys.stderr)
            self.pcap = None


class _Client:
    """One client address: its port on the simulated client node and its relay socket."""

    __slots__ = ("addr", "sim_port", "transport", "waiting", "last_heard")

    def __init__(self, addr, sim_port: int, now: float) -> None:
        self.addr = addr
        self.sim_port = sim_port
        self.transport: asyncio.DatagramTransport | None = None
        self.waiting: list[bytes] = []  # for the server, until the relay socket is open
        self.last_heard = now


class _Listener(asyncio.DatagramProtocol):
    def __init__(self, shim: ImpairmentShim) -> None:
        self.shim = shim

    def datagram_received(self, data: bytes, addr) -> None:
        self.shim.from_client(data, addr)

    def error_received(self, exc: Exception) -> None:
        pass  # e.g. ICMP port unreachable for a client that left: nothing to do


class _Relay(asyncio.DatagramProtocol):
    def __init__(self, shim: ImpairmentShim, client: _Client) -> None:
        self.shim = shim
        self.client = client

    def datagram_received(self, data: bytes, addr) -> None:
        self.shim.from_server(data, self.client)

    def error_received(self, exc: Exception) -> None:
        pass  # the server is not there (yet): the client's retransmissions will tell


class ImpairmentShim:
    """Relays UDP between clients and `server` through the simulated network.

    `network` is a validated scenario `network` section (with its `seed`), parsed
    into settings here;
    `total_items` is what random-items outages choose among.
    """

    def __init__(
        self,
        network: dict,
        server: tuple[str, int],
        *,
        total_items: int = 0,
        limits: ShimLimits | None = None,
        pcap=None,
    ) -> None:
        self.server = server
        self.limits = limits or ShimLimits()
        self.stats = ShimStats()
        self.loop = asyncio.get_running_loop()
        settings = network_settings(network)
        self.clock = RealTimeClock(self.loop, settings.seed)
        self.log = LinkLog(self.stats, pcap, epoch=time.time())
        if pcap is not None:
            pcap.write(pcap_header())
        self.items = DatagramItems()
        self.net: PairNetwork = build_two_node_network(self.clock, settings, Observers(self.log))
        self.net.follow_items(self.items, total_items)
        self.ip_version = settings.ip_version
        # IP hosts: shim_cli refuses a network whose link layer is not IP.
        self.client_node = self.net.ip_node("client")
        self.server_node = self.net.ip_node("producer")
        self._sim_client = self.net.address(self.client_node)
        self._sim_server = self.net.address(self.server_node)
        self._server_port = server[1]
        self.server_node.udp_bind(self._server_port, self._at_server)
        self.listener: asyncio.DatagramTransport | None = None
        self.clients: dict[object, _Client] = {}
        self._by_port: dict[int, _Client] = {}
        self._tasks: set[asyncio.Task] = set()
        self._flusher = self.loop.call_later(FLUSH_INTERVAL_S, self._flush)
        self._sweep_every_s = min(SWEEP_INTERVAL_S, self.limits.idle_timeout_s / 2)
        self._sweeper = self.loop.call_later(self._sweep_every_s, self._sweep)

    async def listen(self, host: str, port: int) -> tuple[str, int]:
        """Open the clients' side; the (host, port) it is bound to."""
        self.listener, _ = await self.loop.create_datagram_endpoint(
            lambda: _Listener(self), local_addr=(host, port)
        )
        return self.listener.get_extra_info("sockname")[:2]

    # ------------------------------------------------------------ client -> server

    def from_client(self, data: bytes, addr) -> None:
        self.stats.datagrams_from_clients += 1
        client = self.clients.get(addr) or self._new_client(addr)
        if client is None:
            self.stats.refused_clients += 1
            return
        client.last_heard = self.clock.now
        if len(data) > MAX_PAYLOAD[self.ip_version]:
            self.stats.too_large += 1
            return
        self.items.start()
        self.client_node.udp_send(client.sim_port, self._sim_server, self._server_port, data)

    def _new_client(self, addr) -> _Client | None:
        if len(self.clients) >= self.limits.max_clients:
            return None
        sim_port = self.client_node.udp_bind_ephemeral(self._at_client)
        client = _Client(addr, sim_port, self.clock.now)
        self.clients[addr] = client
        self._by_port[sim_port] = client
        task = self.loop.create_task(self._open_relay(client))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return client

    async def _open_relay(self, client: _Client) -> None:
        family = socket.AF_INET6 if ":" in self.server[0] else socket.AF_INET
        try:
            transport, _ = await self.loop.create_datagram_endpoint(
                lambda: _Relay(self, client), remote_addr=self.server, family=family
            )
        except OSError:
            self._forget(client)  # the server's address cannot be reached at all
            return
        if self._by_port.get(client.sim_port) is not client:  # forgotten meanwhile
            transport.close()
            return
        client.transport = transport
        for data in client.waiting:
            transport.sendto(data)
        client.waiting.clear()

    def _at_server(self, payload: bytes, src: bytes, sport: int, dport: int, dst: bytes) -> None:
        """A datagram crossed the simulated link to the server node: on to the server."""
        client = self._by_port.get(sport)
        if client is None:
            return
        self.stats.delivered_to_server += 1
        if client.transport is None:
            if len(client.waiting) < MAX_WAITING:
                client.waiting.append(payload)
        else:
            client.transport.sendto(payload)

    # ------------------------------------------------------------ server -> client

    def from_server(self, data: bytes, client: _Client) -> None:
        self.stats.datagrams_from_server += 1
        if self._by_port.get(client.sim_port) is not client:
            return
        if len(data) > MAX_PAYLOAD[self.ip_version]:
            self.stats.too_large += 1
            return
        self.server_node.udp_send(self._server_port, self._sim_client, client.sim_port, data)

    def _at_client(self, payload: bytes, src: bytes, sport: int, dport: int, dst: bytes) -> None:
        """A datagram crossed the simulated link to the client node: on to the client."""
        client = self._by_port.get(dport)
        if client is None or self.listener is None:
            return
        self.stats.delivered_to_clients += 1
        self.listener.sendto(payload, client.addr)

    # ------------------------------------------------------------ housekeeping

    def _forget(self, client: _Client) -> None:
        self.clients.pop(client.addr, None)
        self._by_port.pop(client.sim_port, None)
        self.client_node.udp_unbind(client.sim_port)
        if client.transport is not None:
            client.transport.close()
        self.stats.forgotten_clients += 1

    def _sweep(self) -> None:
        horizon = self.clock.now - self.limits.idle_timeout_s
        for client in [c for c in self.clients.values() if c.last_heard < horizon]:
            self._forget(client)
        self._sweeper = self.loop.call_later(self._sweep_every_s, self._sweep)

    def _flush(self) -> None:
        self.log.flush()
        self._flusher = self.loop.call_later(FLUSH_INTERVAL_S, self._flush)

    def close(self) -> None:
        self._flusher.cancel()
        self._sweeper.cancel()
        for task in self._tasks:
            task.cancel()
        self.log.flush()
        for client in list(self.clients.values()):
            self._forget(client)
        if self.listener is not None:
            self.listener.close()

    def summary(self) -> list[str]:
        """What went through, for the closing lines of `iotbench shim`."""
        s = self.stats
        lines = [
            f"clients {len(self.clients) + s.forgotten_clients} "
            f"(refused datagrams {s.refused_clients}, too large {s.too_large})",
            f"to server: {s.datagrams_from_clients} datagrams in, {s.delivered_to_server} out",
            f"to client: {s.datagrams_from_server} datagrams in, {s.delivered_to_clients} out",
        ]
        for channel in (self.net.link.a_to_b.name, self.net.link.b_to_a.name):
            fates = {fate: n for (name, fate), n in sorted(s.packets.items()) if name == channel}
            shown = ", ".join(f"{fate} {n}" for fate, n in fates.items()) or "none"
            lines.append(f"link {channel} packets: {shown}")
        return lines
