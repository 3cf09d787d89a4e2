"""Hosts whose protocol runs straight on an IEEE 802.15.4 link layer (no IP).

NDN on constrained nodes (S4, S5) puts its packets, or fragments of them,
directly into 802.15.4 data frames. An `L2Node` has an extended address and
interfaces; an `L2Interface` sends frames with a real MAC header and FCS,
either onto an 802.15.4-like point-to-point link (`attach`, no MAC: one
frame, one transmission) or through a CSMA/CA MAC on a radio (`attach_mac`,
with acknowledgments and retries for unicast), and hands the payload of
every frame for it (or broadcast) to the receiver registered for the frame's
source, else to its default receiver.

Layers of a frame: the MAC header and FCS count as link header
(`bytes_link_header`), a fragmentation header as the transport header, and
the protocol's header bytes as application header.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from iotbench.net import ieee802154 as mac
from iotbench.net.packet import DATA, Packet
from iotbench.sim.clock import Clock

OnFrame = Callable[[bytes, bytes], None]  # (source address, payload)


class L2Node:
    def __init__(self, sim: Clock, name: str, index: int) -> None:
        self.sim = sim
        self.name = name
        self.address = mac.extended_address(index)
        self.interfaces: list[L2Interface] = []
        # The MAC sequence number starts at a random point, as radios do.
        self._seq = sim.rng(f"node/{name}/mac-seq").randrange(256)
        self.decode_errors = 0
        self.not_for_us = 0

    def add_interface(self, mtu: int, pan_id: int = mac.DEFAULT_PAN_ID) -> L2Interface:
        iface = L2Interface(self, mtu, pan_id)
        self.interfaces.append(iface)
        return iface

    def next_seq(self) -> int:
        seq = self._seq
        self._seq = (seq + 1) & 0xFF
        return seq


class L2Interface:
    """One 802.15.4 interface; `mtu` is the payload a frame may carry."""

    def __init__(self, node: L2Node, mtu: int, pan_id: int) -> None:
        limit = mac.MAX_FRAME_BYTES - mac.header_length(node.address) - mac.FCS_BYTES
        if not 1 <= mtu <= limit:
            raise ValueError(f"an 802.15.4 payload MTU must be 1..{limit}, got {mtu}")
        self.node = node
        self.mtu = mtu
        self.pan_id = pan_id
        self.address = node.address
        self.channel: Any = None  # a point-to-point link's channel (link.Channel)
        self.mac: Any = None  # or an 802.15.4 MAC (net/mac)
        self.on_frame: OnFrame | None = None  # frames from sources without a receiver
        self._receivers: dict[bytes, OnFrame] = {}

    def attach(self, channel) -> None:
        """Onto a point-to-point 802.15.4-like link: no MAC, one transmission per frame."""
        self.channel = channel

    def attach_mac(self, mac_layer) -> None:
        """Onto a radio, through a CSMA/CA MAC (whose address becomes this interface's)."""
        self.mac = mac_layer
        self.address = mac_layer.address
        mac_layer.on_receive = self._from_mac

    def add_receiver(self, peer: bytes, on_frame: OnFrame) -> None:
        """Frames from `peer` go to `on_frame` (a unicast face to that neighbour)."""
        self._receivers[peer] = on_frame

    def intercept(self, wrap: Callable[[OnFrame | None], OnFrame]) -> None:
        """Put `wrap(receiver)` in front of every receiver, the default one included
        (a protocol beside NDN, such as HoPP, that takes its own frames first)."""
        for peer, receiver in list(self._receivers.items()):
            self._receivers[peer] = wrap(receiver)
        self.on_frame = wrap(self.on_frame)

    def send(
        self,
        dst: bytes,
        payload: bytes,
        transport_header_len: int = 0,
        app_header_len: int = 0,
        kind: str = DATA,
    ) -> None:
        """One data frame to `dst` (an address, or mac.BROADCAST); `kind` as Packet's."""
        if self.mac is not None:
            self.mac.send(dst, payload, 0, 0, transport_header_len, app_header_len, kind)
            return
        frame = mac.encode(mac.Frame(self.node.next_seq(), self.pan_id, dst, self.address, payload))
        link_header = len(frame) - len(payload)
        pkt = Packet(frame, 0, transport_header_len, app_header_len, link_header)
        pkt.kind = kind
        self.channel.send(pkt)

    def receive(self, pkt: Packet) -> None:
        """A frame off the point-to-point link: decoded and filtered here, as a MAC would."""
        try:
            frame = mac.decode(pkt.data)
        except mac.MacDecodeError:
            self.node.decode_errors += 1
            return
        if not isinstance(frame, mac.Frame):  # an acknowledgment: no MAC here asked for one
            self.node.not_for_us += 1
            return
        if frame.dst != self.address and frame.dst != mac.BROADCAST:
            self.node.not_for_us += 1
            return
        self._deliver(frame.src, frame.payload)

    def _from_mac(self, payload: bytes, src: bytes, dst: bytes, pkt: Packet) -> None:
        self._deliver(src, payload)

    def _deliver(self, src: bytes, payload: bytes) -> None:
        receiver = self._receivers.get(src, self.on_frame)
        if receiver is not None:
            receiver(src, payload)
