"""Hosts whose protocol runs straight on an IEEE 802.15.4 link layer (no IP).

NDN on constrained nodes (S4, S5) puts its packets, or fragments of them,
directly into 802.15.4 data frames. An `L2Node` has an extended address and
interfaces; an `L2Interface` attaches to a link like an IP interface does,
sends frames with a real MAC header and FCS, and hands the payload of every
frame addressed to it (or broadcast) to its `on_frame` callback.

Layers of a frame in the packet log: the MAC header and FCS count as the
network-layer header (`bytes_ip_header`), a fragmentation header as the
transport header, and the protocol's header bytes as application header.
"""

from __future__ import annotations

from collections.abc import Callable

from iotbench.net import ieee802154 as mac
from iotbench.net.packet import Packet
from iotbench.sim import Simulator

OnFrame = Callable[[bytes, bytes], None]  # (source address, payload)


class L2Node:
    def __init__(self, sim: Simulator, name: str, index: int) -> None:
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
        self.channel = None
        self.on_frame: OnFrame | None = None

    def attach(self, channel) -> None:
        self.channel = channel

    def send(
        self, dst: bytes, payload: bytes, transport_header_len: int = 0, app_header_len: int = 0
    ) -> None:
        """One data frame to `dst` (an extended address, or mac.BROADCAST)."""
        frame = mac.encode(mac.Frame(self.node.next_seq(), self.pan_id, dst, self.address, payload))
        link_header = len(frame) - len(payload)
        self.channel.send(Packet(frame, 0, transport_header_len, app_header_len, link_header))

    def receive(self, pkt: Packet) -> None:
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
        if self.on_frame is not None:
            self.on_frame(frame.src, frame.payload)
