"""Hosts: interfaces with IPv4/IPv6 addresses, an IP layer and UDP ports.

The IP layer builds real packets (see ip.py), fragments what exceeds the
interface MTU, reassembles fragments on receipt and hands transport segments
to the protocol registered for them (UDP here; TCP registers itself later).
"""

from __future__ import annotations

from collections.abc import Callable

from iotbench.net import ip
from iotbench.net.packet import Packet, split_layers
from iotbench.net.reassembly import Reassembler
from iotbench.proto.errors import DecodeError
from iotbench.sim import Simulator

# handler(payload, src_address_bytes, src_port, dst_port)
UdpHandler = Callable[[bytes, bytes, int, int], None]
# handler(segment, src_address_bytes, dst_address_bytes)
ProtocolHandler = Callable[[bytes, bytes, bytes], None]
EPHEMERAL_PORTS = 65536 - 49152


class Interface:
    def __init__(self, node: Node, name: str, address: bytes, mtu: int) -> None:
        self.node = node
        self.name = name
        self.address = address
        self.mtu = mtu
        self.channel = None  # the outgoing channel, set when a link attaches

    def attach(self, channel) -> None:
        self.channel = channel

    def receive(self, pkt: Packet) -> None:
        self.node.receive_ip(pkt.data)


class Node:
    def __init__(self, sim: Simulator, name: str) -> None:
        self.sim = sim
        self.name = name
        self.interfaces: list[Interface] = []
        self.routes: dict[bytes, Interface] = {}
        self.default_interface: Interface | None = None
        self._udp: dict[int, UdpHandler] = {}
        self.protocols: dict[int, ProtocolHandler] = {ip.IPPROTO_UDP: self._receive_udp}
        self.reassembler = Reassembler()
        # IPv4 identification starts at a random point, as real stacks do.
        self._ip_ident = sim.rng(f"node/{name}/ip-id").randrange(0x10000)
        self._ephemeral = 49152
        self.ip_decode_errors = 0
        self.udp_no_listener = 0
        self.no_route = 0

    # ------------------------------------------------------------ configuration

    def add_interface(self, address: str, mtu: int) -> Interface:
        iface = Interface(
            self, f"{self.name}-eth{len(self.interfaces)}", ip.address_bytes(address), mtu
        )
        self.interfaces.append(iface)
        if self.default_interface is None:
            self.default_interface = iface
        return iface

    def add_route(self, destination: str, iface: Interface) -> None:
        self.routes[ip.address_bytes(destination)] = iface

    @property
    def address(self) -> bytes:
        return self.interfaces[0].address

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

    # ------------------------------------------------------------ sending

    def interface_for(self, dst: bytes) -> Interface | None:
        """The interface that reaches `dst`: a host route, else the default."""
        return self.routes.get(dst) or self.default_interface

    def udp_send(
        self, src_port: int, dst: bytes, dst_port: int, payload: bytes, app_header_len: int = 0
    ) -> None:
        """Send one UDP datagram; `app_header_len` marks how much of it is protocol header."""
        iface = self.interface_for(dst)
        if iface is None:
            self.no_route += 1
            return
        segment = ip.build_udp(iface.address, dst, src_port, dst_port, payload)
        self.send_ip(iface, dst, ip.IPPROTO_UDP, segment, ip.UDP_HEADER_LEN, app_header_len)

    def send_ip(
        self,
        iface: Interface,
        dst: bytes,
        proto: int,
        segment: bytes,
        transport_header_len: int,
        app_header_len: int,
    ) -> None:
        """Wrap a transport segment in IP, fragment it to the MTU, and transmit."""
        channel = iface.channel
        src = iface.address
        if len(src) == 4:
            ident = self._ip_ident
            self._ip_ident = (ident + 1) & 0xFFFF
            packet = ip.build_ipv4(src, dst, proto, segment, ident)
            header_len = ip.IPV4_HEADER_LEN
            if len(packet) <= iface.mtu:
                channel.send(Packet(packet, header_len, transport_header_len, app_header_len))
                return
            fragments = ip.fragment_ipv4(packet, iface.mtu)
        else:
            packet = ip.build_ipv6(src, dst, proto, segment)
            header_len = ip.IPV6_HEADER_LEN
            if len(packet) <= iface.mtu:
                channel.send(Packet(packet, header_len, transport_header_len, app_header_len))
                return
            ident = self._ip_ident
            self._ip_ident = (ident + 1) & 0xFFFF
            fragments = ip.fragment_ipv6(packet, iface.mtu, ident)
            header_len += ip.IPV6_FRAGMENT_HEADER_LEN
        start = 0
        for frag in fragments:
            body = len(frag) - header_len
            transport, app = split_layers(start, body, transport_header_len, app_header_len)
            channel.send(Packet(frag, header_len, transport, app))
            start += body

    # ------------------------------------------------------------ receiving

    def receive_ip(self, data: bytes) -> None:
        """An IP packet arrived on one of our interfaces."""
        try:
            if data[0] >> 4 == 4:
                # Unpacked at once: cheaper than reading the named fields one by one.
                h = ip.parse_ipv4(data)
                header_len, total, ident, _df, more, offset, _ttl, proto, src, dst = h
                body = data[header_len:total]
                if more or offset:
                    body = self.reassembler.add(
                        self.sim.now, (src, dst, proto, ident), offset, more, body
                    )
                    if body is None:
                        return
            else:
                h6 = ip.parse_ipv6(data)
                body = data[h6.header_len : h6.header_len + h6.payload_len]
                if h6.fragmented:
                    body = self.reassembler.add(
                        self.sim.now,
                        (h6.src, h6.dst, h6.next_header, h6.ident),
                        h6.frag_offset,
                        h6.more_fragments,
                        body,
                    )
                    if body is None:
                        return
                proto, src, dst = h6.next_header, h6.src, h6.dst
        except (DecodeError, IndexError):
            self.ip_decode_errors += 1
            return
        handler = self.protocols.get(proto)
        if handler is not None:
            handler(body, src, dst)

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
        handler(payload, src, sport, dport)
