"""What a radio network's frames carried: a tally per link and message type.

`FrameTally` hears every frame put on the air and counts it under (sender,
addressee, message type): first transmissions, MAC retransmissions and their
bytes, and the frames a full MAC queue dropped before they were ever sent.
It answers "which messages fill which links" (docs/studies/s4.md uses it to
tell congestion from a protocol's own repeats) and is written with a run's
series (`iotbench run --series`) as `<name>.frames.csv`:

    node, neighbour, type, frames, retries, bytes, queue_drops

`neighbour` is the addressee's name or `broadcast`. A message type is read
from the frame's bytes (`frame_type`): an 802.15.4 acknowledgment; HoPP's
SOL, PAM, NAM; an NDN Interest, Data or NDNLPv2 packet; RPL's DIS, DIO, DAO
and DAO-ACK; CoAP by its message type; MQTT-SN; other UDP by port, other
ICMPv6 by type; a 6LoWPAN fragment after the first. The tally's size is
bounded by links times types, whatever the run's length.
"""

from __future__ import annotations

from iotbench.metrics.observers import Observer
from iotbench.metrics.outfile import OutFile
from iotbench.net import ieee802154 as mac
from iotbench.net.lowpan.codec import LowpanDecodeError, decode_header
from iotbench.net.lowpan.dispatch import Dispatch, classify
from iotbench.net.packet import BROADCAST, QUEUE_FULL, Packet
from iotbench.proto.ndn import hopp

COLUMNS = ("node", "neighbour", "type", "frames", "retries", "bytes", "queue_drops")

_HOPP = {hopp.SOL_TYPE: "hopp-sol", hopp.PAM_TYPE: "hopp-pam", hopp.NAM_TYPE: "hopp-nam"}
_NDN = {0x05: "ndn-interest", 0x06: "ndn-data", 0x64: "ndn-lp"}
_RPL = {0x00: "rpl-dis", 0x01: "rpl-dio", 0x02: "rpl-dao", 0x03: "rpl-dao-ack"}
_COAP = ("coap-con", "coap-non", "coap-ack", "coap-rst")
_ICMPV6, _UDP, _TCP, _RPL_TYPE = 58, 17, 6, 155
_COAP_PORTS = (5683, 5684)
_MQTTSN_PORTS = (1883, 1884)


def frame_type(data: bytes, ndn: bool = False) -> str:
    """The message an 802.15.4 frame (with its FCS) carries, as a short name.

    `ndn`: the network runs NDN straight over the MAC, where an NDNLPv2 packet's
    first byte (0x64) would otherwise read as a compressed IPv6 header."""
    try:
        frame = mac.decode(data)
    except mac.MacDecodeError:
        return "malformed"
    if isinstance(frame, mac.Ack):
        return "ack"
    payload = frame.payload
    if not payload:
        return "empty"
    if hopp.is_hopp(payload):
        return _HOPP.get(payload[2], "hopp") if len(payload) > 2 else "hopp"
    first = payload[0]
    if first in (0x05, 0x06) or (ndn and first == 0x64):
        return _NDN[first]
    if ndn and first & 0x80:
        return "ndn-fragment"
    return _lowpan_type(payload, frame.src, frame.dst)


def _lowpan_type(payload: bytes, src: bytes, dst: bytes) -> str:
    kind = classify(payload[0])
    if kind is Dispatch.FRAGN:
        return "6lowpan-fragment"
    if kind is Dispatch.FRAG1:
        payload = payload[4:]  # the first fragment's headers follow its 4-byte header
    try:
        header = decode_header(payload, src, dst)
    except LowpanDecodeError:
        return "6lowpan"
    ip = header.headers
    rest = payload[header.consumed :]
    next_header = ip[6]
    if next_header == _ICMPV6:
        if len(rest) < 2:
            return "icmpv6"
        if rest[0] == _RPL_TYPE:
            return _RPL.get(rest[1], "rpl")
        return f"icmpv6-{rest[0]}"
    if next_header == _UDP:
        udp = ip[40:48] if len(ip) >= 48 else rest[:8]  # NHC-compressed, or inline
        body = rest if len(ip) >= 48 else rest[8:]
        if len(udp) < 8:
            return "udp"
        src_port, dst_port = int.from_bytes(udp[0:2], "big"), int.from_bytes(udp[2:4], "big")
        if src_port in _COAP_PORTS or dst_port in _COAP_PORTS:
            return _COAP[(body[0] >> 4) & 0x3] if body else "coap"
        if src_port in _MQTTSN_PORTS or dst_port in _MQTTSN_PORTS:
            return "mqtt-sn"
        return f"udp-{dst_port}"
    if next_header == _TCP:
        return "tcp"
    return f"ipv6-{next_header}"


class _Tally:
    __slots__ = ("bytes", "frames", "queue_drops", "retries")

    def __init__(self) -> None:
        self.frames = 0
        self.retries = 0
        self.bytes = 0
        self.queue_drops = 0


class FrameTally(Observer):
    """Frames per (sender, addressee, message type); see the module doc."""

    def __init__(self, ndn: bool = False) -> None:
        self.ndn = ndn
        self.tally: dict[tuple[str, str, str], _Tally] = {}

    def _entry(self, pkt: Packet) -> _Tally:
        key = (pkt.src or "?", pkt.dst or BROADCAST, frame_type(pkt.data, self.ndn))
        entry = self.tally.get(key)
        if entry is None:
            entry = self.tally[key] = _Tally()
        return entry

    def transmitted(self, pkt: Packet) -> None:
        entry = self._entry(pkt)
        if pkt.attempt == 1:
            entry.frames += 1
        else:
            entry.retries += 1
        entry.bytes += len(pkt.data)

    def finished(self, pkt: Packet) -> None:
        if pkt.fate == QUEUE_FULL:
            self._entry(pkt).queue_drops += 1

    def write(self, out: OutFile) -> None:
        out.write(",".join(COLUMNS) + "\n")
        for (node, neighbour, kind), t in sorted(self.tally.items()):
            out.write(
                f"{node},{neighbour},{kind},{t.frames},{t.retries},{t.bytes},{t.queue_drops}\n"
            )
