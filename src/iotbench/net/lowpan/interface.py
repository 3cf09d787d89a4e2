"""A node's IPv6 interface over 802.15.4: 6LoWPAN between the IP layer and the MAC.

Sending: the IPv6 packet is compressed (or given the uncompressed dispatch),
cut into FRAG1/FRAGN fragments when it does not fit one frame, and each
piece goes to the MAC as one frame to the next hop's link-layer address, or
to the broadcast address for a multicast destination. The next hop's
link-layer address comes from its interface identifier (RFC 4944 section 6:
an EUI-64 with the universal/local bit inverted, or 0000:00ff:fe00:XXXX for a
short address), so no neighbour discovery is needed: every address in a
radio network is formed that way (docs/sixlowpan-rpl.md).

Receiving: frames from the MAC go to the reassembler, which hands back whole
IPv6 packets. Datagrams are reassembled at every hop and fragmented again
when forwarded (hop-by-hop reassembly, as RIOT and Contiki-NG do by default).

Each frame carries its layers for the byte metrics: 6LoWPAN's dispatch and
fragment header belong to the link layer, with the MAC header and FCS; the
(compressed) IPv6 header to IP; the (compressed) UDP header to transport.
"""

from __future__ import annotations

import random
from typing import Final

from iotbench.net import ieee802154 as mac
from iotbench.net.ip import IPPROTO_ICMPV6
from iotbench.net.lowpan.codec import (
    Compressed,
    check_contexts,
    compress_checked,
    interface_identifier,
)
from iotbench.net.lowpan.fragments import FRAG1_HEADER_LEN, FRAGN_HEADER_LEN, Reassembler, fragment
from iotbench.net.mac.csma import CsmaMac
from iotbench.net.node import LINK_LOCAL_PREFIX, Node, is_multicast
from iotbench.net.packet import CONTROL, DATA, Packet
from iotbench.proto.octets import ONE_BYTE

IPV6_MIN_MTU: Final = 1280


def mac_of(address: bytes, length: int) -> bytes:
    """The link-layer address (`length` bytes: 2 short, 8 extended) an IPv6
    address of a radio node was formed from. (The length cannot be read off the
    address: an EUI-64 may look like the short-address form.)"""
    iid = address[8:]
    if length == 2:
        return iid[6:]
    return ONE_BYTE[iid[0] ^ 0x02] + iid[1:]


def address_of(prefix: bytes, link_address: bytes) -> bytes:
    """The IPv6 address of `link_address` under a /64 `prefix`."""
    return prefix[:8] + interface_identifier(link_address)


class LowpanInterface:
    def __init__(
        self,
        node: Node,
        mac_layer: CsmaMac,
        prefix: bytes,
        rng: random.Random,
        *,
        compression: str = "none",
        reassembler: Reassembler | None = None,
        contexts: dict[int, bytes] | None = None,
    ) -> None:
        self.node = node
        self.mac = mac_layer
        self.name = f"{node.name}-wpan0"
        self.link_local = address_of(LINK_LOCAL_PREFIX, mac_layer.address)
        self.address = address_of(prefix, mac_layer.address)
        self.mtu = IPV6_MIN_MTU
        self.compression = compression
        # Checked once here: every packet's compression takes them as they are.
        self.contexts = check_contexts(
            contexts or ({0: prefix[:8]} if compression == "iphc" else {})
        )
        self.reassembler = reassembler or Reassembler(contexts=self.contexts)
        self._tag = rng.randrange(0x10000)  # datagram tags start at a random point
        self.dropped = 0  # datagrams the MAC queue did not take whole
        mac_layer.on_receive = self._on_frame

    def send(
        self,
        data: bytes,
        ip_header_len: int,
        transport_header_len: int,
        app_header_len: int,
        next_hop: bytes | None = None,
    ) -> None:
        """One IPv6 packet to `next_hop` (an IPv6 address of a neighbour, or a group)."""
        if next_hop is None or is_multicast(next_hop):
            dst = mac.BROADCAST
        else:
            dst = mac_of(next_hop, len(self.mac.address))
        packed = compress_checked(data, self.mac.address, dst, self.compression, self.contexts)
        room = mac.MAX_FRAME_BYTES - mac.header_length(dst, len(self.mac.address)) - mac.FCS_BYTES
        tag = self._tag
        pieces = fragment(packed, tag, room)
        if len(pieces) > 1:
            self._tag = (tag + 1) & 0xFFFF
        layers = _Layers(packed, self.compression, transport_header_len, app_header_len)
        kind = CONTROL if data[6] == IPPROTO_ICMPV6 else DATA
        for index, piece in enumerate(pieces):
            # The tuple taken apart first: compiled, a call with *args goes through
            # Python's call protocol, a call with its arguments written out is direct.
            link, ip_len, transport_len, app_len = layers.of(index, len(pieces), len(piece))
            if not self.mac.send(dst, piece, link, ip_len, transport_len, app_len, kind):
                self.dropped += 1

    def _on_frame(self, payload: bytes, src: bytes, dst: bytes, pkt: Packet) -> None:
        packet = self.reassembler.add(self.node.sim.now, src, dst, payload)
        if packet is not None:
            self.node.receive_ip(packet, src)


class _Layers:
    """How each piece of a 6LoWPAN datagram splits into link, IP, transport, app bytes."""

    def __init__(self, packed: Compressed, mode: str, transport_len: int, app_len: int) -> None:
        # The uncompressed dispatch byte is 6LoWPAN's, not IP's.
        self.dispatch = 1 if mode == "none" else 0
        self.ip = packed.ip_header_len - self.dispatch
        self.transport_compressed = packed.transport_header_len
        # Without NHC the transport header (UDP inline, ICMPv6, TCP) opens the payload.
        self.transport_inline = 0 if packed.transport_header_len else transport_len
        self.app = app_len
        self.header = len(packed.header)
        self._payload_at = 0  # payload bytes handed out so far

    def of(self, index: int, pieces: int, size: int) -> tuple[int, int, int, int]:
        """(link_extra, ip, transport, app) of piece `index` of `size` bytes."""
        if pieces == 1:
            frag, header = 0, self.header
        elif index == 0:
            frag, header = FRAG1_HEADER_LEN, self.header
        else:
            frag, header = FRAGN_HEADER_LEN, 0
        body = size - frag - header
        start, end = self._payload_at, self._payload_at + body
        self._payload_at = end
        transport = max(0, min(end, self.transport_inline) - start)
        app_end = self.transport_inline + self.app
        app = max(0, min(end, app_end) - max(start, self.transport_inline))
        if header:
            return (
                frag + self.dispatch,
                self.ip,
                self.transport_compressed + transport,
                app,
            )
        return frag, 0, transport, app
