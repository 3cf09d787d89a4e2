"""A simulated node whose applications are a real host's.

An attached node stays a node of the simulated network: its radio, MAC,
6LoWPAN, RPL (or its end of a link) and its forwarding are the simulation's.
What changes is who uses its IP layer. Packets the host's programs send
(read from the host's TUN device) leave through the node's routes as if the
node had made them; packets that arrive for the node go to the host instead
of to simulated applications. The host's kernel runs TCP, so TCP works.

What stays in the simulation: routing's own messages (RPL is ICMPv6 type
155) and, when the scenario's workload runs beside the host, UDP to the ports
its simulated applications bound there. What a host sends that a 6LoWPAN
mesh has no use for is dropped and counted: neighbour discovery and router
solicitations (the mesh resolves nothing; RFC 6775 nodes route by RPL) and
MLD reports (groups are joined through the scenario, not by MLD).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from iotbench.net import ip
from iotbench.net.node import Node, is_link_local, is_multicast
from iotbench.proto.errors import DecodeError

IPPROTO_ICMP = 1
ICMPV6_RPL = 155
# RS, RA, NS, NA, Redirect (RFC 4861) and MLD queries, reports and done
# (RFC 2710, RFC 3810): the host kernel's link chatter, not its programs'.
HOST_CHATTER = frozenset({130, 131, 132, 133, 134, 135, 136, 137, 143})


@dataclass
class AttachStats:
    from_host: int = 0
    to_host: int = 0
    chatter_dropped: int = 0  # ND, RS, MLD from the host's kernel
    link_local_dropped: int = 0
    multicast_dropped: int = 0
    no_route: int = 0
    too_big: int = 0  # larger than the node's interface MTU (the TUN's MTU matches it)
    malformed: int = 0


class AttachedHost:
    """Joins `node` to a real host: `to_host` writes one IP packet to the host's TUN."""

    def __init__(
        self, node: Node, to_host: Callable[[bytes], None], *, keep_simulated_udp: bool
    ) -> None:
        if ip.IPPROTO_TCP in node.protocols:
            raise ValueError(
                f"node {node.name!r} runs the scenario's TCP workload: attach another node, "
                "or switch the workload off"
            )
        self.node = node
        self.to_host = to_host
        self.keep_simulated_udp = keep_simulated_udp
        self.stats = AttachStats()
        self._ipv4_ident = 0
        self._simulated_udp = node.protocols.get(ip.IPPROTO_UDP)
        self._simulated_icmpv6 = node.protocols.get(ip.IPPROTO_ICMPV6)
        node.protocols[ip.IPPROTO_UDP] = self._udp
        node.protocols[ip.IPPROTO_TCP] = self._deliver(ip.IPPROTO_TCP)
        node.protocols[ip.IPPROTO_ICMPV6] = self._icmpv6
        node.protocols[IPPROTO_ICMP] = self._deliver(IPPROTO_ICMP)

    @property
    def mtu(self) -> int:
        """The node's interface MTU (a link end's, or 6LoWPAN's 1280): the TUN's."""
        return int(self.node.interfaces[0].mtu)

    # ------------------------------------------------------------ host -> network

    def from_host(self, packet: bytes) -> None:
        """One IP packet the host sent: out along the node's route."""
        stats = self.stats
        try:
            if packet[0] >> 4 == 4:
                h4 = ip.parse_ipv4(packet)
                header_len, dst, proto = h4.header_len, h4.dst, h4.proto
            else:
                h6 = ip.parse_ipv6(packet)
                header_len, dst, proto = ip.IPV6_HEADER_LEN, h6.dst, h6.next_header
                if proto == ip.IPPROTO_ICMPV6 and packet[header_len] in HOST_CHATTER:
                    stats.chatter_dropped += 1
                    return
                if is_multicast(dst):
                    stats.multicast_dropped += 1
                    return
                if is_link_local(dst) or is_link_local(h6.src):
                    stats.link_local_dropped += 1
                    return
        except (DecodeError, IndexError):
            stats.malformed += 1
            return
        if len(packet) > self.mtu:
            stats.too_big += 1
            return
        route = self.node.route(dst)
        if route is None:
            stats.no_route += 1
            return
        stats.from_host += 1
        iface, next_hop = route
        transport, app = self.node.layers_of(proto, dst, packet[header_len:])
        iface.send(packet, header_len, transport, app, next_hop)

    # ------------------------------------------------------------ network -> host

    def _udp(self, body: bytes, src: bytes, dst: bytes) -> None:
        if self.keep_simulated_udp and self._simulated_udp is not None and len(body) >= 4:
            if self.node.udp_bound(int.from_bytes(body[2:4], "big")):
                self._simulated_udp(body, src, dst)
                return
        self._to_host(ip.IPPROTO_UDP, body, src, dst)

    def _icmpv6(self, body: bytes, src: bytes, dst: bytes) -> None:
        if body and body[0] == ICMPV6_RPL:
            if self._simulated_icmpv6 is not None:
                self._simulated_icmpv6(body, src, dst)
            return
        self._to_host(ip.IPPROTO_ICMPV6, body, src, dst)

    def _deliver(self, proto: int) -> Callable[[bytes, bytes, bytes], None]:
        def deliver(body: bytes, src: bytes, dst: bytes) -> None:
            self._to_host(proto, body, src, dst)

        return deliver

    def _to_host(self, proto: int, body: bytes, src: bytes, dst: bytes) -> None:
        # The node's IP layer hands up a transport segment (reassembled when it
        # came in fragments); the host gets it as one IP packet again. The hop
        # limit it arrived with is not kept: the host sees 64.
        if len(src) == 4:
            self._ipv4_ident = (self._ipv4_ident + 1) & 0xFFFF
            packet = ip.build_ipv4(src, dst, proto, body, self._ipv4_ident)
        else:
            packet = ip.build_ipv6(src, dst, proto, body)
        self.stats.to_host += 1
        self.to_host(packet)
