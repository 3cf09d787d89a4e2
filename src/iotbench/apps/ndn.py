"""NDN nodes in the simulator: a Forwarder, its faces on 802.15.4 links, a CPU.

The Forwarder and NdnApp are the sans-I/O parts of proto/ndn; this module
gives them a place in virtual time:

- `L2Face`: a face on an `L2Interface`, unicast to one neighbour's address or
  broadcast to every node in range. Packets larger than the interface MTU are
  cut into S5's 3-byte-header fragments here, so that each frame can be
  logged with its layers (MAC header, fragment header, NDN header, Content);
  arriving fragments are reassembled by the Forwarder.
- a `Cpu` (sim/cpu.py) per node, busy for the cost the node's device
  profile gives each operation (a forwarding decision, creating and signing a
  Data, verifying one); operations wait for it in order.
- `NdnNode`: the Forwarder, its timer and its faces.
"""

from __future__ import annotations

import random
from typing import Final

from iotbench.net import ieee802154 as mac
from iotbench.net.l2 import L2Interface
from iotbench.proto.ndn.forwarder import Forwarder, ForwarderConfig
from iotbench.proto.ndn.fragmentation import HEADER_SIZE, FragmentHeader, fragment, is_fragment
from iotbench.proto.ndn.profiles import DeviceProfile
from iotbench.proto.ndn.tlv import NdnDecodeError, read_tl
from iotbench.proto.ndn.types import TT
from iotbench.sim import Simulator
from iotbench.sim.cpu import Cpu
from iotbench.sim.deadline import DeadlineTimer


class NdnNode:
    """An NDN forwarder on a simulated node, with the node's device profile."""

    def __init__(
        self,
        sim: Simulator,
        name: str,
        profile: DeviceProfile,
        config: ForwarderConfig,
        rng: random.Random,
    ) -> None:
        self.sim = sim
        self.name = name
        self.profile = profile
        # The two costs paid per packet, looked up once (a profile is frozen).
        self.forward_cost_s = profile.cost_s("forward_packet")  # a forwarding decision
        # creating an Interest and forwarding it
        self.interest_cost_s = profile.cost_s("interest_create") + self.forward_cost_s
        self.forwarder = Forwarder(rng, config)
        self.cpu = Cpu(sim)
        self._timer = DeadlineTimer(sim, self._on_timer)
        self._ident = rng.randrange(0x10000)  # fragment identification, per sender
        self.faces: dict[str, int] = {}  # neighbour node -> face id (radio networks)

    def pump(self) -> None:
        """Re-arm the forwarder's timer; call after every call into it."""
        self._timer.set(self.forwarder.next_timer())

    def _on_timer(self) -> None:
        self.forwarder.handle_timer(self.sim.now)
        self.pump()

    def next_identification(self) -> int:
        ident = self._ident
        self._ident = (ident + 1) & 0xFFFF
        return ident

    def add_l2_face(self, iface: L2Interface, peer: bytes | None = None) -> int:
        """A face on `iface` to `peer` (an address), or broadcast when None; its id."""
        face = L2Face(self, iface, mac.BROADCAST if peer is None else peer)
        face.face_id = self.forwarder.add_face(face.send).face_id
        if peer is None:
            iface.on_frame = face.receive  # frames from anyone without a face of their own
        else:
            iface.add_receiver(peer, face.receive)
        return face.face_id


class L2Face:
    def __init__(self, node: NdnNode, iface: L2Interface, dst: bytes) -> None:
        self.node = node
        self.iface = iface
        self.dst = dst
        self.face_id = -1

    def send(self, wire: bytes) -> None:
        """An NDN packet from the forwarder: one frame, or its fragments."""
        start, end = _content_span(wire)
        mtu = self.iface.mtu
        if len(wire) <= mtu:
            self.iface.send(self.dst, wire, 0, len(wire) - (end - start))
            return
        offset = 0
        for frame in fragment(wire, mtu, self.node.next_identification()):
            body = len(frame) - HEADER_SIZE
            content = max(0, min(end, offset + body) - max(start, offset))
            self.iface.send(self.dst, frame, HEADER_SIZE, body - content)
            offset += body

    def receive(self, src: bytes, payload: bytes) -> None:
        """A frame for us: the forwarder takes it once the CPU has decided on it.

        A forwarding decision is paid once per packet: for a fragmented one,
        with its last fragment.
        """
        node = self.node
        last = not is_fragment(payload) or not _more_fragments(payload)
        cost = node.forward_cost_s if last else 0.0

        def work() -> None:
            node.forwarder.receive(node.sim.now, self.face_id, payload)
            node.pump()

        node.cpu.run(cost, work)


def _more_fragments(frame: bytes) -> bool:
    try:
        return FragmentHeader.decode(frame).more
    except NdnDecodeError:
        return False


_DATA_TYPE: Final = int(TT.DATA)  # a Data's first byte
_CONTENT_TYPE: Final = int(TT.CONTENT)


def _content_span(wire: bytes) -> tuple[int, int]:
    """The Content bytes of a Data (its payload); an empty span for anything else.

    A forwarder sends only Data it built or decoded, so the Content element is
    found by walking the Data's elements, without decoding it again."""
    if not wire or wire[0] != _DATA_TYPE:
        return 0, 0
    try:
        _, pos, end = read_tl(wire, 0, len(wire))
        while pos < end:
            kind, start, stop = read_tl(wire, pos, end)
            if kind == _CONTENT_TYPE:
                return start, stop
            pos = stop
    except NdnDecodeError:
        pass
    return 0, 0
