"""Hosts and routers: interfaces with IPv4/IPv6 addresses, an IP layer and UDP ports.

The IP layer builds real packets (see ip.py), fragments what exceeds the
interface MTU, reassembles fragments on receipt and hands transport segments
to the protocol registered for them (UDP here; TCP and ICMPv6 register
themselves). A node forwards IPv6 packets that are not for it (`forwarding`,
on in every node of a radio network): hop limit down by one, out along its
route. Routes are host routes (destination -> interface and next hop) and a
default route, which routing (a static tree, or RPL) fills in; a node's own
multicast groups are delivered locally, and a multicast forwarder (SMRF) may
pass them on.

Interfaces are point-to-point (`Interface`, on a channel of a link) or
6LoWPAN over an 802.15.4 MAC (net/lowpan/interface.py); both take
`send(data, ip_header_len, transport_header_len, app_header_len, next_hop)`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Final

from mypy_extensions import mypyc_attr

from iotbench.net import ip
from iotbench.net.link import Channel
from iotbench.net.packet import Packet, split_layers
from iotbench.net.reassembly import Reassembler
from iotbench.proto.errors import DecodeError
from iotbench.proto.octets import ONE_BYTE
from iotbench.sim.clock import Clock
from iotbench.sim.cpu import Cpu

# handler(payload, src_address_bytes, src_port, dst_port)
UdpHandler = Callable[[bytes, bytes, int, int, bytes], None]  # payload, src, sport, dport, dst
# handler(segment, src_address_bytes, dst_address_bytes)
ProtocolHandler = Callable[[bytes, bytes, bytes], None]
# forwarder(packet, link-layer sender, destination group, hop limit) -> accepted:
# a multicast packet arrived (see net/routing/smrf.py)
MulticastForwarder = Callable[[bytes, bytes | None, bytes, int], bool]
# app_header_length(payload) of the protocol on a (destination address, UDP port)
AppLayers = dict[tuple[bytes, int], Callable[[bytes], int]]
# (interface, next hop or None); interfaces are duck-typed (see above). Typed as
# a tuple of any length so that compiled code keeps each route one tuple object:
# forwarding tells the default route by identity (mypyc unpacks fixed-length
# tuples into C structs and boxes them anew when read).
Route = tuple[Any, ...]
EPHEMERAL_PORTS: Final = 65536 - 49152
HOP_LIMIT: Final = 64
LINK_LOCAL_PREFIX: Final = bytes.fromhex("fe80000000000000")


def is_multicast(address: bytes) -> bool:
    return len(address) == 16 and address[0] == 0xFF


def is_link_local(address: bytes) -> bool:
    """fe80::/10 unicast, or a link-local-scope multicast group (ff02::/16)."""
    return len(address) == 16 and (
        (address[0] == 0xFE and address[1] & 0xC0 == 0x80) or address[:2] == b"\xff\x02"
    )


# Subclassed by busy_wait.BusyWaitInterface, which is not compiled.
@mypyc_attr(allow_interpreted_subclasses=True)
class Interface:
    """A point-to-point interface: what it sends goes onto its channel of a link."""

    def __init__(self, node: Node, name: str, address: bytes, mtu: int) -> None:
        self.node = node
        self.name = name
        self.address = address
        self.link_local: bytes | None = None
        self.mtu = mtu
        self.channel: Channel | None = None  # the outgoing channel, set when a link attaches

    def attach(self, channel: Channel) -> None:
        self.channel = channel

    def send(
        self,
        data: bytes,
        ip_header_len: int,
        transport_header_len: int,
        app_header_len: int,
        next_hop: bytes | None = None,
    ) -> None:
        # A point-to-point link has one neighbour: the next hop needs no address.
        channel = self.channel
        if channel is None:
            raise RuntimeError(f"{self.name} has no link")
        channel.send(Packet(data, ip_header_len, transport_header_len, app_header_len))

    def receive(self, pkt: Packet) -> None:
        self.node.receive_ip(pkt.data, arrived_on=self)


class Node:
    def __init__(self, sim: Clock, name: str) -> None:
        self.sim = sim
        self.name = name
        self.interfaces: list = []
        # destination -> (interface, next hop or None)
        self.routes: dict[bytes, Route] = {}
        self.default_route: Route | None = None
        self.forwarding = False
        # How forwarded datagrams split into layers, for the byte metrics: the
        # network shares one table that the protocols' drivers fill in.
        self.app_layers: AppLayers = {}
        self.groups: set[bytes] = set()  # multicast groups joined
        # Told of every join and leave (routing announces memberships).
        self.group_listeners: list[Callable[[bytes, bool], None]] = []
        self.multicast_forwarder: MulticastForwarder | None = None
        # Routing's loop check: told (link source, next hop) of each packet going up
        # the default route; True drops it (it came back from where it would go).
        self.loop_check: Callable[[bytes | None, bytes | None], bool] | None = None
        # Where groups beyond the link are sent when that is not the default route's
        # interface: a border router's radio (its default route leads to the uplink).
        self.group_interface: Any = None
        self._local: set[bytes] = set()
        self._udp: dict[int, UdpHandler] = {}
        self.protocols: dict[int, ProtocolHandler] = {ip.IPPROTO_UDP: self._receive_udp}
        self.reassembler = Reassembler()
        # IPv4 identification starts at a random point, as real stacks do.
        self._ip_ident = sim.rng(f"node/{name}/ip-id").randrange(0x10000)
        self._ephemeral = 49152
        self.ip_decode_errors = 0
        self.udp_no_listener = 0
        self.no_route = 0
        self.forwarded = 0
        # A processor (network.device): forwarding then waits for it. None: free.
        self.cpu: Cpu | None = None
        self.profile: Any = None  # its costs (proto/ndn/profiles.py's DeviceProfile)
        self._forward_cost_s = 0.0
        self.hop_limit_exceeded = 0
        self.link_scope_dropped = 0  # link-local packets not ours: never forwarded
        self.looped = 0

    # ------------------------------------------------------------ configuration

    def add_interface(self, address: str, mtu: int) -> Interface:
        iface = Interface(
            self, f"{self.name}-eth{len(self.interfaces)}", ip.address_bytes(address), mtu
        )
        self.attach_interface(iface)
        return iface

    def attach_interface(self, iface) -> None:
        """Add an interface built elsewhere (a 6LoWPAN one); the first is the default."""
        self.interfaces.append(iface)
        self._local.add(iface.address)
        if iface.link_local is not None:
            self._local.add(iface.link_local)
        if self.default_route is None:
            self.default_route = (iface, None)

    def add_route(self, destination: str | bytes, iface, next_hop: bytes | None = None) -> None:
        dst = ip.address_bytes(destination) if isinstance(destination, str) else destination
        self.routes[dst] = (iface, next_hop)

    def remove_route(self, destination: bytes) -> None:
        self.routes.pop(destination, None)

    def use_cpu(self, cpu: Cpu, profile: Any) -> None:
        """Spend `profile`'s CPU time on `cpu` for each packet this node forwards
        (and, through their drivers, for its applications' messages)."""
        self.cpu = cpu
        self.profile = profile
        self._forward_cost_s = profile.cost_s("ip_forward")

    def set_default_route(self, iface, next_hop: bytes | None) -> None:
        self.default_route = (iface, next_hop) if iface is not None else None

    def join(self, group: bytes) -> None:
        if group not in self.groups:
            self.groups.add(group)
            for listener in self.group_listeners:
                listener(group, True)

    def leave(self, group: bytes) -> None:
        if group in self.groups:
            self.groups.discard(group)
            for listener in self.group_listeners:
                listener(group, False)

    @property
    def address(self) -> bytes:
        return self.interfaces[0].address

    def is_local(self, address: bytes) -> bool:
        return address in self._local

    def udp_bind(self, port: int, handler: UdpHandler) -> None:
        if port in self._udp:
            raise ValueError(f"{self.name}: UDP port {port} is in use")
        self._udp[port] = handler

    def udp_bind_ephemeral(self, handler: UdpHandler) -> int:
        """The next free port of the dynamic range 49152-65535 (RFC 6335), wrapping."""
        for _ in range(EPHEMERAL_PORTS):
            port = self._ephemeral
            self._ephemeral = 49152 + (port + 1 - 49152) % EPHEMERAL_PORTS
            if port not in self._udp:
                self.udp_bind(port, handler)
                return port
        raise ValueError(f"{self.name}: every ephemeral UDP port is in use")

    def udp_unbind(self, port: int) -> None:
        self._udp.pop(port, None)

    def udp_bound(self, port: int) -> bool:
        """Whether an application on this node listens on UDP `port`."""
        return port in self._udp

    # ------------------------------------------------------------ sending

    def route(self, dst: bytes) -> Route | None:
        """(interface, next hop) towards `dst`: a host route, else the default route.
        A group or a link-local address is reached directly, out of the default
        interface (the first one while there is no default route)."""
        route = self.routes.get(dst)
        if route is not None:
            return route
        if is_multicast(dst) or is_link_local(dst):
            # On the link itself: the destination is its own next hop.
            if self.group_interface is not None and dst[0] == 0xFF:
                return self.group_interface, dst
            if self.default_route is not None:
                return self.default_route[0], dst
            return (self.interfaces[0], dst) if self.interfaces else None
        return self.default_route

    def interface_for(self, dst: bytes):
        """The interface that reaches `dst`, or None."""
        route = self.route(dst)
        return route[0] if route is not None else None

    def source_for(self, iface, dst: bytes) -> bytes:
        """The source address for `dst`: link-local for link-local destinations."""
        if iface.link_local is not None and is_link_local(dst):
            return iface.link_local
        return iface.address

    def udp_send(
        self, src_port: int, dst: bytes, dst_port: int, payload: bytes, app_header_len: int = 0
    ) -> None:
        """Send one UDP datagram; `app_header_len` marks how much of it is protocol header."""
        if dst in self._local:
            # To ourselves (two applications on one host): no link, delivered next.
            segment = ip.build_udp(dst, dst, src_port, dst_port, payload)
            packet = ip.build_ipv6(dst, dst, ip.IPPROTO_UDP, segment)
            self.sim.post(self.sim.now, self.receive_ip, packet)
            return
        route = self.route(dst)
        if route is None:
            self.no_route += 1
            return
        iface, next_hop = route
        segment = ip.build_udp(self.source_for(iface, dst), dst, src_port, dst_port, payload)
        self._send_ip(
            iface, next_hop, dst, ip.IPPROTO_UDP, segment, ip.UDP_HEADER_LEN, app_header_len
        )

    def send_ip(
        self,
        iface,
        dst: bytes,
        proto: int,
        segment: bytes,
        transport_header_len: int,
        app_header_len: int,
    ) -> None:
        """Wrap a transport segment in IP, fragment it to the MTU, and transmit."""
        route = self.route(dst)
        if route is not None and route[0] is iface:
            next_hop = route[1]
        elif is_link_local(dst) or is_multicast(dst):
            # On the link the caller chose (a border router's DAO-ACK to a child,
            # its default route being its uplink): the destination is the next hop.
            next_hop = dst
        else:
            next_hop = None
        self._send_ip(iface, next_hop, dst, proto, segment, transport_header_len, app_header_len)

    def _send_ip(
        self,
        iface,
        next_hop: bytes | None,
        dst: bytes,
        proto: int,
        segment: bytes,
        transport_header_len: int,
        app_header_len: int,
    ) -> None:
        src = self.source_for(iface, dst)
        if len(src) == 4:
            ident = self._ip_ident
            self._ip_ident = (ident + 1) & 0xFFFF
            packet = ip.build_ipv4(src, dst, proto, segment, ident)
            header_len = ip.IPV4_HEADER_LEN
            if len(packet) <= iface.mtu:
                iface.send(packet, header_len, transport_header_len, app_header_len, next_hop)
                return
            fragments = ip.fragment_ipv4(packet, iface.mtu)
        else:
            packet = ip.build_ipv6(src, dst, proto, segment)
            header_len = ip.IPV6_HEADER_LEN
            if len(packet) <= iface.mtu:
                iface.send(packet, header_len, transport_header_len, app_header_len, next_hop)
                return
            ident = self._ip_ident
            self._ip_ident = (ident + 1) & 0xFFFF
            fragments = ip.fragment_ipv6(packet, iface.mtu, ident)
            header_len += ip.IPV6_FRAGMENT_HEADER_LEN
        start = 0
        for frag in fragments:
            body = len(frag) - header_len
            transport, app = split_layers(start, body, transport_header_len, app_header_len)
            iface.send(frag, header_len, transport, app, next_hop)
            start += body

    # ------------------------------------------------------------ receiving

    def receive_ip(
        self, data: bytes, link_src: bytes | None = None, arrived_on: object = None
    ) -> None:
        """An IP packet arrived on one of our interfaces (from `link_src`, on a radio;
        `arrived_on`, a point-to-point interface)."""
        try:
            if data[0] >> 4 == 4:
                # Unpacked at once: cheaper than reading the named fields one by one.
                header_len, total, ident, _df, more, offset, _ttl, proto, src, dst = ip.ipv4_fields(
                    data
                )
                body = data[header_len:total]
                if more or offset:
                    whole = self.reassembler.add(
                        self.sim.now, (src, dst, proto, ident), offset, more, body
                    )
                    if whole is None:
                        return
                    body = whole
            else:
                # Unpacked at once, as for IPv4.
                header_len, plen, proto, hop_limit, src, dst, fragmented, ident, more, offset = (
                    ip.ipv6_fields(data)
                )
                if self.forwarding and dst not in self._local:
                    if self._forward_or_keep(
                        data, src, dst, proto, hop_limit, link_src, arrived_on
                    ):
                        return
                body = data[header_len : header_len + plen]
                if fragmented:
                    whole = self.reassembler.add(
                        self.sim.now, (src, dst, proto, ident), offset, more, body
                    )
                    if whole is None:
                        return
                    body = whole
        except (DecodeError, IndexError):
            self.ip_decode_errors += 1
            return
        handler = self.protocols.get(proto)
        if handler is not None:
            handler(body, src, dst)

    def _forward_or_keep(
        self,
        data: bytes,
        src: bytes,
        dst: bytes,
        next_header: int,
        hop_limit: int,
        link_src: bytes | None,
        arrived_on: object = None,
    ) -> bool:
        """A packet not addressed to one of our addresses (its IPv6 header's fields
        given): True if it is not for us (forwarded or dropped), False if we take
        it (a multicast group we are in)."""
        if is_multicast(dst):
            group_iface = self.group_interface
            if arrived_on is not None and group_iface is not None and dst[1] != 0x02:
                # A border router's host sent a group datagram: it goes down the
                # DODAG as if the router had sent it (Contiki's rpl-border-router
                # hands SLIP's multicast to its own multicast engine).
                if hop_limit > 1:
                    self.forwarded += 1
                    copy = data[:7] + ONE_BYTE[hop_limit - 1] + data[8:]
                    transport, app = self.layers_of(next_header, dst, data[ip.IPV6_HEADER_LEN :])
                    group_iface.send(copy, ip.IPV6_HEADER_LEN, transport, app, dst)
                return True
            accepted = True
            # Link-local groups (all nodes, all RPL nodes) stay on the link.
            if self.multicast_forwarder is not None and dst[1] != 0x02:
                accepted = self.multicast_forwarder(data, link_src, dst, hop_limit)
            return not (accepted and dst in self.groups)
        if is_link_local(dst) or is_link_local(src):
            # RFC 4291 2.5.6: a link-local packet never leaves its link.
            self.link_scope_dropped += 1
            return True
        if hop_limit <= 1:
            self.hop_limit_exceeded += 1
            return True
        route = self.route(dst)
        if route is None:
            self.no_route += 1
            return True
        if route is self.default_route and self.loop_check is not None:
            if self.loop_check(link_src, route[1]):
                self.looped += 1
                return True
        self.forwarded += 1
        iface, next_hop = route
        forwarded = data[:7] + ONE_BYTE[hop_limit - 1] + data[8:]
        transport, app = self.layers_of(next_header, dst, data[ip.IPV6_HEADER_LEN :])
        if self.cpu is None:
            iface.send(forwarded, ip.IPV6_HEADER_LEN, transport, app, next_hop)
        else:
            # A partial, not a lambda: mypyc cannot compile this lambda (an internal error).
            self.cpu.run(
                self._forward_cost_s,
                partial(iface.send, forwarded, ip.IPV6_HEADER_LEN, transport, app, next_hop),
            )
        return True

    def layers_of(self, proto: int, dst: bytes, body: bytes) -> tuple[int, int]:
        """Transport- and application-header bytes of a packet this node did not make."""
        if proto == ip.IPPROTO_UDP and len(body) >= ip.UDP_HEADER_LEN:
            dissect = self.app_layers.get((dst, body[2] << 8 | body[3]))  # destination port
            payload = body[ip.UDP_HEADER_LEN :]
            return ip.UDP_HEADER_LEN, dissect(payload) if dissect is not None else 0
        if proto == ip.IPPROTO_TCP and len(body) >= 20:
            return min(len(body), (body[12] >> 4) * 4), 0
        if proto == ip.IPPROTO_ICMPV6 and len(body) >= 4:
            return 4, 0
        return 0, 0

    def _receive_udp(self, segment: bytes, src: bytes, dst: bytes) -> None:
        try:
            sport, dport, payload = ip.parse_udp(segment)
        except DecodeError:
            self.ip_decode_errors += 1
            return
        handler = self._udp.get(dport)
        if handler is None:
            self.udp_no_listener += 1  # a real host would answer ICMP port unreachable
            return
        handler(payload, src, sport, dport, dst)
