"""Fuzz every codec and every sans-I/O stack with random and mutated inputs.

    python bench/fuzz.py [--minutes N | --inputs N] [--codec NAME ...] [--seed S] [--json]
                         [--case K] [--keep-going] [--list]

Targets (`--list` prints them): one per codec (CoAP, OSCORE option values, DTLS records and
handshake messages, MQTT, MQTT-SN, the NDN TLV primitives, names and their
URIs, Interest, Data, LpPacket and S5 fragment headers, 802.15.4 frames,
6LoWPAN IPHC and fragment headers, RPL, ICMPv6, IPv4, IPv6, UDP) and one per
stack (CoAP endpoints, OSCORE and DTLS client and server layers, MQTT broker (half
of its cases with a password table and an ACL) and client, MQTT-SN gateway
and client, NDN forwarder, 6LoWPAN reassembler).

Inputs come from a seeded `random.Random`: random bytes, valid encodings
(from random messages) and valid encodings mutated 1-4 times (bits flipped,
bytes set, inserted, deleted, duplicated, the end cut off). Where a format
carries a checksum (802.15.4 FCS, ICMPv6, IPv4, UDP), most mutated inputs
get it recomputed, so that the parser behind the check is reached.

What is checked, for every input:

- a codec's decoder either returns a value or raises its typed decode error
  (a `DecodeError` subclass), nothing else;
- what it returns re-encodes without an error, and decoding the re-encoded
  bytes gives an equal value (for the canonical formats, CoAP, NDN TLV and
  names, S5 and 6LoWPAN fragment headers, the very same bytes; for MQTT and
  802.15.4 the same bytes but for what the decoder may ignore); the
  `check_*` functions in iotbench.codec_agreement, which the property tests
  use too, state the exact property of each codec;
- a stack never raises out of its receive call, never counts an internal
  error, stays within its limits, and only ever emits bytes its own codec
  decodes (the NDN forwarder decodes lazily and passes on what it does not
  read: for it, the packet structure, the name and a Data's SignatureInfo).

Inputs are generated in cases: case K of target T uses its own generator,
`random.Random(f"{seed}:{T}:{K}")`, so a failure is reproduced by running that
case alone: the failure report prints the target, the seed, the case and the
hex input(s), and the command `python bench/fuzz.py --codec T --seed S --case K`.
A codec case is 1,000 inputs; a stack case is one fresh stack fed 32 inputs.
Nothing is kept between cases, so memory stays flat however long it runs.

Output: one line per target (inputs, failures, inputs per wall second, wall
seconds, and the share of inputs the decoder accepted), then the process's
peak memory. Exit status 1 when any input failed; the run stops at the first
failure unless --keep-going. --minutes N shares N minutes among the selected
targets instead of a fixed count of inputs (default --inputs 1000000 per
target). Results are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from iotbench.codec_agreement import (
    ICMP_DST,
    ICMP_SRC,
    LOWPAN_CONTEXTS,
    V4_A,
    V4_B,
    V6_A,
    V6_B,
    check_802154,
    check_coap,
    check_dtls,
    check_hopp,
    check_icmpv6,
    check_ipv4,
    check_ipv6,
    check_lowpan,
    check_lowpan_fragment,
    check_mqtt,
    check_mqttsn,
    check_ndn_data,
    check_ndn_fragment,
    check_ndn_interest,
    check_ndn_lp,
    check_ndn_name,
    check_ndn_name_uri,
    check_ndn_tlv,
    check_oscore_option,
    check_rpl,
    check_udp,
    lowpan_macs,
    udp_addresses,
)
from iotbench.net import icmpv6, ieee802154, ip
from iotbench.net.checksum import internet_checksum
from iotbench.net.lowpan import codec as lowpan
from iotbench.net.lowpan import fragments as lowpan_frag
from iotbench.net.rpl import codec as rpl
from iotbench.proto.coap import codec as coap
from iotbench.proto.dtls import messages as dtls
from iotbench.proto.dtls.record import plain_record
from iotbench.proto.errors import DecodeError
from iotbench.proto.mqtt import codec as mqtt
from iotbench.proto.mqttsn import codec as sn
from iotbench.proto.ndn import fragmentation as ndn_frag
from iotbench.proto.ndn import hopp, tlv
from iotbench.proto.ndn.data import Data, make_data
from iotbench.proto.ndn.interest import Interest, make_interest
from iotbench.proto.ndn.lp import LpPacket
from iotbench.proto.ndn.name import Component, Name
from iotbench.proto.ndn.packet import decode_packet
from iotbench.proto.ndn.signing import HmacSha256Signer
from iotbench.proto.ndn.types import ComponentType

CODEC_CASE = 1000  # inputs per codec case
STACK_CASE = 32  # inputs per stack case (one fresh stack)


class Failure(Exception):
    """A property did not hold; `inputs` are the hex inputs that show it."""

    def __init__(self, message: str, inputs: list[str]) -> None:
        super().__init__(message)
        self.inputs = inputs


# =====================================================================
# input generation
# =====================================================================

_INTERESTING = (0x00, 0x01, 0x0D, 0x0E, 0x0F, 0x7F, 0x80, 0xFD, 0xFE, 0xFF)


def randbytes(rng: random.Random, n: int) -> bytes:
    return rng.getrandbits(8 * n).to_bytes(n, "big") if n else b""


def mutate(data: bytes, rng: random.Random) -> bytes:
    """1-4 random edits of `data`."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(8)
        n = len(b)
        i = rng.randrange(n + 1)
        if op == 0 and i < n:
            b[i] ^= 1 << rng.randrange(8)  # flip a bit
        elif op == 1 and i < n:
            b[i] = rng.choice(_INTERESTING) if rng.random() < 0.5 else rng.randrange(256)
        elif op == 2:
            b[i:i] = randbytes(rng, rng.randint(1, 4))  # insert
        elif op == 3 and i < n:
            del b[i : i + rng.randint(1, 3)]  # delete
        elif op == 4:
            del b[i:]  # truncate
        elif op == 5 and i < n:
            j = rng.randrange(i, n) + 1
            b[j:j] = b[i:j]  # duplicate a slice
        elif op == 6:
            b += randbytes(rng, rng.randint(1, 8))  # grow
        elif i < n:
            b[i] = (b[i] + rng.choice((1, -1))) & 0xFF  # off by one
    return bytes(b)


def text(rng: random.Random, max_len: int = 8) -> str:
    alphabet = "abcxyz/+#$-_.é€😀 %=\u0000"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(max_len + 1)))


def mqtt_text(rng: random.Random, max_len: int = 8) -> str:
    return text(rng, max_len).replace("\u0000", "")


# =====================================================================
# codecs: a valid-encoding generator and a property check each
# =====================================================================


@dataclass(frozen=True)
class Codec:
    name: str
    valid: Callable[[random.Random], bytes]
    #: The property; returns True when the decoder accepted the input.
    check: Callable[[bytes], bool]
    random_max: int = 64
    #: Recompute a checksum after mutation (most of the time), to reach the parser.
    fixup: Callable[[bytes], bytes] | None = None


# ---- CoAP -------------------------------------------------------------------


def valid_coap(rng: random.Random) -> bytes:
    mtype = coap.Type(rng.randrange(4))
    mid = rng.randrange(0x10000)
    code = rng.choice((0, 1, 2, 3, 4, 5, 69, 65, 68, 95, 128, 132, 160, rng.randrange(256)))
    if code == 0:
        return coap.encode(coap.Message(mtype, 0, mid))
    options = []
    for _ in range(rng.randrange(6)):
        number = rng.choice(
            (*list(coap.Opt), rng.randrange(300), rng.randrange(0x10000), 2048, 65535)
        )
        size = rng.choice((0, 1, 2, 4, rng.randrange(13), rng.randrange(12, 16), 268, 269, 270))
        options.append((number, randbytes(rng, size)))
    payload = randbytes(rng, rng.choice((0, 0, 1, rng.randrange(40))))
    token = randbytes(rng, rng.randrange(9))
    return coap.encode(coap.Message(mtype, code, mid, token, options, payload))


# ---- MQTT ------------------------------------------------------------------------


def valid_mqtt_packet(rng: random.Random) -> mqtt.Packet:
    kind = rng.randrange(14)
    pid = rng.choice((1, 0xFFFF, rng.randrange(1, 0x10000)))
    if kind == 0:
        username = mqtt_text(rng) if rng.random() < 0.5 else None
        password = (
            randbytes(rng, rng.randrange(6))
            if username is not None and rng.random() < 0.5
            else None
        )
        will = None
        if rng.random() < 0.5:
            will = mqtt.Will(
                mqtt_text(rng),
                randbytes(rng, rng.randrange(10)),
                rng.randrange(3),
                rng.random() < 0.5,
            )
        return mqtt.Connect(
            mqtt_text(rng), rng.random() < 0.5, rng.randrange(0x10000), will, username, password
        )
    if kind == 1:
        rc = rng.choice((0, 0, 1, 5, rng.randrange(256)))
        return mqtt.ConnAck(rc == 0 and rng.random() < 0.5, rc)
    if kind == 2:
        qos = rng.randrange(3)
        return mqtt.Publish(
            mqtt_text(rng),
            randbytes(rng, rng.choice((0, 5, rng.randrange(200)))),
            qos,
            rng.random() < 0.5,
            bool(qos) and rng.random() < 0.5,
            pid if qos else None,
        )
    if kind in (3, 4, 5, 6, 10):
        cls = {3: mqtt.PubAck, 4: mqtt.PubRec, 5: mqtt.PubRel, 6: mqtt.PubComp, 10: mqtt.UnsubAck}
        return cls[kind](pid)
    if kind == 7:
        topics = tuple((mqtt_text(rng), rng.randrange(3)) for _ in range(rng.randint(1, 3)))
        return mqtt.Subscribe(pid, topics)
    if kind == 8:
        return mqtt.SubAck(
            pid, tuple(rng.choice((0, 1, 2, 0x80)) for _ in range(rng.randint(1, 4)))
        )
    if kind == 9:
        return mqtt.Unsubscribe(pid, tuple(mqtt_text(rng) for _ in range(rng.randint(1, 3))))
    return (mqtt.PingReq(), mqtt.PingResp(), mqtt.Disconnect())[kind - 11]


def valid_mqtt(rng: random.Random) -> bytes:
    return mqtt.encode(valid_mqtt_packet(rng))


# ---- MQTT-SN ------------------------------------------------------------------------


def valid_sn_message(rng: random.Random) -> sn.Message:
    kind = rng.randrange(28)
    u16 = rng.choice((0, 1, 0xFFFF, rng.randrange(0x10000)))
    mid = rng.randrange(0x10000)
    rc = rng.choice((0, 1, 2, 3, rng.randrange(256)))
    qos = rng.choice((-1, 0, 1, 2))
    tit = sn.TopicIdType(rng.randrange(3))
    name = text(rng)
    blob = randbytes(rng, rng.choice((0, 3, rng.randrange(300))))
    match kind:
        case 0:
            return sn.Advertise(rng.randrange(256), u16)
        case 1:
            return sn.SearchGw(rng.randrange(256))
        case 2:
            return sn.GwInfo(rng.randrange(256), randbytes(rng, rng.choice((0, 6, 18))))
        case 3:
            return sn.Connect(
                name, u16, rng.random() < 0.5, rng.random() < 0.5, rng.choice((1, 1, 0, 2))
            )
        case 4:
            return sn.ConnAck(rc)
        case 5:
            return sn.WillTopicReq()
        case 6:
            if rng.random() < 0.2:
                return sn.WillTopic(None)
            return sn.WillTopic(name, max(qos, 0), rng.random() < 0.5)
        case 7:
            return sn.WillMsgReq()
        case 8:
            return sn.WillMsg(blob)
        case 9:
            return sn.Register(u16, mid, name)
        case 10:
            return sn.RegAck(u16, mid, rc)
        case 11:
            return sn.Publish(u16, mid, blob, qos, rng.random() < 0.5, rng.random() < 0.5, tit)
        case 12:
            return sn.PubAck(u16, mid, rc)
        case 13:
            return sn.PubRec(mid)
        case 14:
            return sn.PubRel(mid)
        case 15:
            return sn.PubComp(mid)
        case 16:
            if tit == sn.TopicIdType.NORMAL:
                return sn.Subscribe(mid, qos, tit, name, 0, rng.random() < 0.5)
            return sn.Subscribe(mid, qos, tit, "", u16, rng.random() < 0.5)
        case 17:
            return sn.SubAck(u16, mid, rc, qos)
        case 18:
            if tit == sn.TopicIdType.NORMAL:
                return sn.Unsubscribe(mid, tit, name)
            return sn.Unsubscribe(mid, tit, "", u16)
        case 19:
            return sn.UnsubAck(mid)
        case 20:
            return sn.PingReq(name or None)
        case 21:
            return sn.PingResp()
        case 22:
            return sn.Disconnect(u16 if rng.random() < 0.5 else None)
        case 23:
            if rng.random() < 0.2:
                return sn.WillTopicUpd(None)
            return sn.WillTopicUpd(name, max(qos, 0), rng.random() < 0.5)
        case 24:
            return sn.WillTopicResp(rc)
        case 25:
            return sn.WillMsgUpd(blob)
        case 26:
            return sn.WillMsgResp(rc)
    inner = (
        sn.encode(valid_sn_message(rng))
        if rng.random() < 0.8
        else randbytes(rng, 2 + rng.randrange(10))
    )
    return sn.Encapsulated(rng.randrange(256), randbytes(rng, rng.randrange(9)), inner)


def valid_mqttsn(rng: random.Random) -> bytes:
    return sn.encode(valid_sn_message(rng))


# ---- NDN ------------------------------------------------------------------------


def valid_component(rng: random.Random) -> Component:
    kind = rng.randrange(10)
    if kind == 0:
        return Component(rng.choice((1, 2)), randbytes(rng, 32))
    if kind == 1:
        typ = rng.choice((0x32, 0x34, 0x36, 0x38, 0x3A))
        return Component(typ, randbytes(rng, rng.choice((1, 2, 4, 8))))
    if kind == 2:
        return Component(8, b"." * rng.randrange(5))
    if kind == 3:
        return Component(
            rng.choice((3, 0xFC, 0xFD, 0xFFFF, rng.randrange(3, 0x10000))),
            randbytes(rng, rng.randrange(6)),
        )
    return Component(8, randbytes(rng, rng.choice((0, 1, 3, 8, 252, 253))))


def valid_name(rng: random.Random, max_len: int = 5) -> Name:
    return Name([valid_component(rng) for _ in range(rng.randrange(max_len + 1))])


_HMAC = HmacSha256Signer(b"fuzz", key_name="/k")


def valid_interest(rng: random.Random) -> Interest:
    name = Name([c for c in valid_name(rng) if c.type != 2])
    params = randbytes(rng, rng.randrange(20)) if rng.random() < 0.3 else None
    return make_interest(
        name,
        can_be_prefix=rng.random() < 0.5,
        must_be_fresh=rng.random() < 0.5,
        forwarding_hint=[valid_name(rng, 2) for _ in range(rng.choice((0, 0, 1, 2)))],
        nonce=rng.randrange(1 << 32) if rng.random() < 0.8 else None,
        lifetime_ms=rng.choice((None, 0, 4000, rng.randrange(1 << 40))),
        hop_limit=rng.choice((None, 0, 1, 255)),
        app_parameters=params,
        signer=_HMAC if params is not None and rng.random() < 0.5 else None,
    )


def valid_data(rng: random.Random) -> Data:
    return make_data(
        valid_name(rng),
        randbytes(rng, rng.choice((0, 4, rng.randrange(200)))),
        content_type=rng.choice((None, 0, 1, 3, rng.randrange(1 << 20))),
        freshness_period_ms=rng.choice((None, 0, 1000, rng.randrange(1 << 40))),
        final_block_id=valid_component(rng) if rng.random() < 0.3 else None,
        signer=_HMAC if rng.random() < 0.3 else None,
    )


def valid_lp(rng: random.Random) -> bytes:
    fragment = None
    r = rng.random()
    if r < 0.5:
        fragment = valid_interest(rng).wire
    elif r < 0.7:
        fragment = valid_data(rng).wire
    elif r < 0.8:
        fragment = randbytes(rng, rng.randrange(20))

    def maybe(value):
        return value if rng.random() < 0.3 else None

    return LpPacket(
        fragment=fragment,
        sequence=maybe(rng.randrange(1 << 64)),
        frag_index=maybe(rng.randrange(4)),
        frag_count=maybe(rng.randint(1, 4)),
        pit_token=maybe(randbytes(rng, rng.randrange(9))),
        nack=maybe(rng.choice((0, 50, 100, 150, rng.randrange(1 << 16)))),
        incoming_face_id=maybe(rng.randrange(1 << 20)),
        next_hop_face_id=maybe(rng.randrange(300)),
        congestion_mark=maybe(rng.randrange(3)),
        acks=tuple(rng.randrange(1 << 64) for _ in range(rng.choice((0, 0, 0, 1, 3)))),
        tx_sequence=maybe(rng.randrange(1 << 64)),
    ).encode()


def valid_ndn_packet(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.4:
        return valid_interest(rng).wire
    if r < 0.8:
        return valid_data(rng).wire
    return valid_lp(rng)


def valid_tlv(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.5:
        return valid_ndn_packet(rng)
    parts = []
    for _ in range(rng.randint(1, 4)):
        t = rng.choice((1, 7, 252, 253, 0xFFFF, 0x10000, 0xFFFFFFFF, rng.randrange(1, 300)))
        value = rng.choice(
            (
                tlv.encode_nni(rng.randrange(1 << rng.choice((8, 16, 32, 64)))),
                randbytes(rng, rng.randrange(20)),
            )
        )
        parts.append(tlv.encode_tlv(t, value))
    return b"".join(parts)


def valid_name_wire(rng: random.Random) -> bytes:
    return valid_name(rng).wire


def valid_name_uri(rng: random.Random) -> bytes:
    uri = valid_name(rng).to_uri()
    r = rng.random()
    if r < 0.2:
        uri = "ndn:" + uri
    elif r < 0.3:
        uri += "/"
    elif r < 0.4:
        uri = uri.replace("/", "/seg=" + str(rng.randrange(1 << 64)) + "/", 1)
    return uri.encode("utf-8")


def valid_ndn_fragment(rng: random.Random) -> bytes:
    packet = valid_ndn_packet(rng)
    mtu = rng.randrange(4, 120)
    frames = (
        ndn_frag.fragment(packet, mtu, rng.randrange(0x10000))
        if -(-len(packet) // (mtu - 3)) <= 32
        else [packet]
    )
    return rng.choice(frames)


def valid_hopp(rng: random.Random) -> bytes:
    def text(limit: int) -> str:
        return "/" + "".join(rng.choice("abcp0123456789/") for _ in range(rng.randrange(limit)))

    kind = rng.randrange(3)
    if kind == 0:
        return hopp.Sol(rng.random() < 0.5).encode()
    if kind == 1:
        pam = hopp.Pam(rng.randrange(0x10000), text(31), rng.random() < 0.5, rng.randrange(256))
        return pam.encode()
    return hopp.Nam(tuple(text(63) for _ in range(rng.randrange(1, 4)))).encode()


# ---- IEEE 802.15.4 ----------------------------------------------------------------


def _mac_address(rng: random.Random) -> bytes:
    return randbytes(rng, rng.choice((2, 8))) if rng.random() < 0.8 else ieee802154.BROADCAST


def valid_802154(rng: random.Random) -> bytes:
    if rng.random() < 0.2:
        return ieee802154.encode_ack(rng.randrange(256), rng.random() < 0.5)
    dst, src = _mac_address(rng), randbytes(rng, rng.choice((2, 8)))
    room = ieee802154.MAX_FRAME_BYTES - 5 - len(dst) - len(src) - 2
    return ieee802154.encode(
        ieee802154.Frame(
            rng.randrange(256),
            rng.randrange(0x10000),
            dst,
            src,
            randbytes(rng, rng.randrange(room + 1)),
            rng.random() < 0.5,
        )
    )


def fix_fcs(data: bytes) -> bytes:
    if len(data) < 3:
        return data
    return data[:-2] + struct.pack("<H", ieee802154.crc16(data[:-2]))


#: Frame control bits a decoded data frame does not keep: Frame Pending, the reserved
#: bits 7-9 and the frame version (2003 or 2006; 802.15.4-2006 7.2.1.1).


# ---- 6LoWPAN ----------------------------------------------------------------------


def _lowpan_address(rng: random.Random, mac: bytes, *, source: bool) -> bytes:
    iid = lowpan.interface_identifier(mac)
    prefix = rng.choice((lowpan.LINK_LOCAL_PREFIX, *LOWPAN_CONTEXTS.values(), randbytes(rng, 8)))
    r = rng.randrange(10)
    if r == 0 and source:
        return bytes(16)
    if r == 1 and not source:  # multicast, in each compressible form
        return rng.choice(
            (
                b"\xff\x02" + bytes(13) + randbytes(rng, 1),
                b"\xff" + randbytes(rng, 1) + bytes(11) + randbytes(rng, 3),
                b"\xff" + randbytes(rng, 1) + bytes(9) + randbytes(rng, 5),
                b"\xff" + randbytes(rng, 2) + b"\x40" + LOWPAN_CONTEXTS[5] + randbytes(rng, 4),
                b"\xff" + randbytes(rng, 15),
            )
        )
    if r == 2:
        return randbytes(rng, 16)
    if r < 6:
        return prefix + iid
    if r < 8:
        return prefix + bytes.fromhex("000000fffe00") + randbytes(rng, 2)
    return prefix + randbytes(rng, 8)


def valid_ipv6_packet(rng: random.Random, src_mac: bytes, dst_mac: bytes) -> bytes:
    src = _lowpan_address(rng, src_mac, source=True)
    dst = _lowpan_address(rng, dst_mac, source=False)
    payload = randbytes(rng, rng.choice((0, 4, rng.randrange(80))))
    r = rng.random()
    if r < 0.5:
        proto = ip.IPPROTO_UDP
        ports = rng.choice((0xF0B0, 0xF000, 5683, rng.randrange(0x10000)))
        sport = ports | rng.randrange(16) if ports >= 0xF000 else ports
        dport = rng.choice((0xF0B1, 0xF0AB, 1234, rng.randrange(0x10000)))
        payload = ip.build_udp(src, dst, sport, dport, payload)
        if rng.random() < 0.1:
            payload = payload[:4] + struct.pack("!H", rng.randrange(0x10000)) + payload[6:]
    else:
        proto = rng.choice((ip.IPPROTO_ICMPV6, ip.IPPROTO_TCP, ip.IPPROTO_UDP, rng.randrange(256)))
    traffic_class = rng.choice((0, 0, 0xB8, 0x01, rng.randrange(256)))
    flow = rng.choice((0, 0, 0xABCDE, rng.randrange(1 << 20)))
    hop = rng.choice((1, 64, 255, rng.randrange(256)))
    return ip.build_ipv6(
        src, dst, proto, payload, hop_limit=hop, traffic_class=traffic_class, flow_label=flow
    )


def valid_lowpan(rng: random.Random) -> bytes:
    selector = rng.randrange(16)
    src_mac, dst_mac = lowpan_macs(selector)
    packet = valid_ipv6_packet(rng, src_mac, dst_mac)
    mode = "iphc" if rng.random() < 0.8 else "none"
    c = lowpan.compress(packet, src_mac, dst_mac, mode=mode, contexts=LOWPAN_CONTEXTS)
    return bytes((selector,)) + c.header + c.payload


def valid_lowpan_fragment(rng: random.Random) -> bytes:
    size, tag = rng.randrange(0x800), rng.randrange(0x10000)
    body = randbytes(rng, rng.randrange(20))
    if rng.random() < 0.5:
        return lowpan_frag.frag1_header(size, tag) + body
    return lowpan_frag.fragn_header(size, tag, 8 * rng.randrange(256)) + body


# ---- RPL, ICMPv6 ----------------------------------------------------------------


def valid_rpl_message(rng: random.Random) -> rpl.Message:
    kind = rng.randrange(4)

    def addr() -> bytes:
        return randbytes(rng, 16)

    def opaque() -> rpl.Opaque:
        return rpl.Opaque(
            rng.choice((2, 3, 7, 9, 0x20, rng.randrange(9, 256))), randbytes(rng, rng.randrange(10))
        )

    if kind == 0:
        return rpl.Dis(tuple(opaque() for _ in range(rng.choice((0, 0, 1, 2)))), rng.randrange(256))
    if kind == 1:
        config = None
        if rng.random() < 0.5:
            config = rpl.DodagConfiguration(
                rng.random() < 0.5,
                rng.randrange(8),
                rng.randrange(256),
                rng.randrange(256),
                rng.randrange(256),
                rng.randrange(0x10000),
                rng.randrange(1, 0x10000),
                rng.randrange(0x10000),
                rng.randrange(256),
                rng.randrange(0x10000),
            )
        prefix = None
        if rng.random() < 0.5:
            prefix = rpl.PrefixInformation(
                addr(),
                rng.randrange(129),
                rng.random() < 0.5,
                rng.random() < 0.5,
                rng.random() < 0.5,
                rng.randrange(1 << 32),
                rng.randrange(1 << 32),
            )
        return rpl.Dio(
            rng.randrange(256),
            rng.randrange(256),
            rng.randrange(0x10000),
            addr(),
            rng.randrange(256),
            rng.random() < 0.5,
            rng.randrange(8),
            rng.randrange(8),
            config,
            prefix,
            tuple(opaque() for _ in range(rng.choice((0, 0, 1)))),
        )
    if kind == 2:
        targets = []
        for _ in range(rng.choice((0, 1, 2))):
            length = rng.choice((128, 64, 0, rng.randrange(129)))
            size = (length + 7) // 8
            target = rpl.Target(randbytes(rng, size).ljust(16, b"\0"), length, rng.randrange(256))
            transit = rpl.Transit(
                rng.randrange(256),
                rng.randrange(256),
                rng.randrange(256),
                rng.random() < 0.5,
                addr() if rng.random() < 0.3 else None,
            )
            targets.append((target, transit))
        return rpl.Dao(
            rng.randrange(256),
            rng.randrange(256),
            tuple(targets),
            rng.random() < 0.5,
            addr() if rng.random() < 0.5 else None,
        )
    return rpl.DaoAck(
        rng.randrange(256),
        rng.randrange(256),
        rng.choice((0, 128, rng.randrange(256))),
        addr() if rng.random() < 0.5 else None,
    )


def valid_rpl(rng: random.Random) -> bytes:
    code, body = rpl.encode(valid_rpl_message(rng))
    return bytes((code,)) + body


def valid_icmpv6(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        code, body = rpl.encode(valid_rpl_message(rng))
        return icmpv6.build_icmpv6(ICMP_SRC, ICMP_DST, icmpv6.ICMPV6_RPL, code, body)
    return icmpv6.build_icmpv6(
        ICMP_SRC,
        ICMP_DST,
        rng.randrange(256),
        rng.randrange(256),
        randbytes(rng, rng.randrange(40)),
    )


def fix_icmpv6(data: bytes) -> bytes:
    if len(data) < 4:
        return data
    return icmpv6.build_icmpv6(ICMP_SRC, ICMP_DST, data[0], data[1], data[4:])


# ---- IPv4, IPv6, UDP ----------------------------------------------------------------


def valid_ipv4(rng: random.Random) -> bytes:
    payload = randbytes(rng, rng.choice((0, 8, rng.randrange(100))))
    packet = ip.build_ipv4(
        V4_A,
        V4_B,
        rng.choice((ip.IPPROTO_UDP, ip.IPPROTO_TCP, rng.randrange(256))),
        payload,
        rng.randrange(0x10000),
        ttl=rng.randrange(256),
        tos=rng.randrange(256),
        dont_fragment=rng.random() < 0.5,
        more_fragments=rng.random() < 0.3,
        frag_offset=rng.choice((0, 8 * rng.randrange(0x2000))),
    )
    if rng.random() < 0.2:
        return (
            rng.choice(ip.fragment_ipv4(packet, rng.randrange(28, 80)))
            if not packet[6] & 0x40
            else packet
        )
    return packet


def fix_ipv4(data: bytes) -> bytes:
    if len(data) < 20:
        return data
    header_len = (data[0] & 0x0F) * 4
    if header_len < 20 or header_len > len(data):
        return data
    header = bytearray(data[:header_len])
    header[10:12] = b"\0\0"
    struct.pack_into("!H", header, 10, internet_checksum(bytes(header)))
    return bytes(header) + data[header_len:]


def valid_ipv6(rng: random.Random) -> bytes:
    payload = randbytes(rng, rng.choice((0, 8, rng.randrange(300))))
    packet = ip.build_ipv6(
        V6_A,
        V6_B,
        rng.choice((ip.IPPROTO_UDP, ip.IPPROTO_ICMPV6, rng.randrange(256))),
        payload,
        hop_limit=rng.randrange(256),
        traffic_class=rng.randrange(256),
        flow_label=rng.randrange(1 << 20),
    )
    if rng.random() < 0.4 and len(packet) > 100:
        return rng.choice(ip.fragment_ipv6(packet, rng.randrange(56, 200), rng.randrange(1 << 32)))
    return packet


def valid_udp(rng: random.Random) -> bytes:
    selector = rng.randrange(256)
    src, dst = udp_addresses(selector)
    payload = randbytes(rng, rng.choice((0, 1, rng.randrange(100))))
    return bytes((selector,)) + ip.build_udp(
        src, dst, rng.randrange(0x10000), rng.randrange(0x10000), payload
    )


def fix_udp(data: bytes) -> bytes:
    if len(data) < 9:
        return data
    src, dst = udp_addresses(data[0])
    sport, dport, length, _ = struct.unpack_from("!HHHH", data, 1)
    if not 8 <= length <= len(data) - 1:
        return data
    return (
        data[:1] + ip.build_udp(src, dst, sport, dport, data[9 : 1 + length]) + data[1 + length :]
    )


def _dtls_handshake(rng: random.Random) -> tuple[int, bytes]:
    """A handshake message type and a valid body of it."""
    types = {rng.randrange(1 << 16) for _ in range(rng.randrange(3))}
    extensions = tuple((t, randbytes(rng, rng.randrange(4))) for t in sorted(types))
    kind = rng.randrange(5)
    if kind == 0:
        suites = (0xC0A8, rng.randrange(1 << 16))
        cookie = randbytes(rng, rng.randrange(20))
        hello = dtls.ClientHello(randbytes(rng, 32), suites, cookie, extensions=extensions)
        return dtls.CLIENT_HELLO, hello.encode()
    if kind == 1:
        return dtls.SERVER_HELLO, dtls.ServerHello(
            randbytes(rng, 32), 0xC0A8, extensions=extensions
        ).encode()
    if kind == 2:
        return dtls.HELLO_VERIFY_REQUEST, dtls.HelloVerifyRequest(randbytes(rng, 16)).encode()
    if kind == 3:
        return dtls.CLIENT_KEY_EXCHANGE, dtls.encode_psk_identity(randbytes(rng, 6))
    return dtls.SERVER_HELLO_DONE, b""


def valid_dtls(rng: random.Random) -> bytes:
    """A datagram of 1-3 DTLS records: handshake messages, alerts, CCS, protected data."""
    records = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        seq = rng.randrange(1 << 48)
        if kind < 0.6:
            msg_type, body = _dtls_handshake(rng)
            whole = dtls.whole_message(msg_type, rng.randrange(4), body)
            records.append(plain_record(22, 0, seq, whole.encode()))
        elif kind < 0.75:
            alert = bytes((rng.choice((1, 2)), rng.randrange(256)))
            records.append(plain_record(21, 0, seq, alert))
        elif kind < 0.85:
            records.append(plain_record(20, 0, seq, b"\x01"))
        else:
            records.append(plain_record(23, 1, seq, randbytes(rng, 16 + rng.randrange(24))))
    return b"".join(records)


def valid_oscore_option(rng: random.Random) -> bytes:
    """An OSCORE option value (RFC 8613 6.1) with any of its fields."""
    from iotbench.proto.oscore.option import OscoreOption

    piv = randbytes(rng, rng.randint(1, 5)) if rng.random() < 0.7 else None
    kid = randbytes(rng, rng.randrange(8)) if rng.random() < 0.6 else None
    kid_context = randbytes(rng, rng.randrange(20)) if rng.random() < 0.3 else None
    return OscoreOption(piv, kid, kid_context).encode()


CODECS = [
    Codec("coap", valid_coap, check_coap),
    Codec("oscore-option", valid_oscore_option, check_oscore_option, 16),
    Codec("dtls", valid_dtls, check_dtls, 96),
    Codec("mqtt", valid_mqtt, check_mqtt),
    Codec("mqttsn", valid_mqttsn, check_mqttsn),
    Codec("ndn-tlv", valid_tlv, check_ndn_tlv),
    Codec("ndn-name", valid_name_wire, check_ndn_name),
    Codec("ndn-name-uri", valid_name_uri, check_ndn_name_uri),
    Codec("ndn-interest", lambda rng: valid_interest(rng).wire, check_ndn_interest, 96),
    Codec("ndn-data", lambda rng: valid_data(rng).wire, check_ndn_data, 96),
    Codec("ndn-lp", valid_lp, check_ndn_lp, 96),
    Codec("ndn-fragment", valid_ndn_fragment, check_ndn_fragment),
    Codec("hopp", valid_hopp, check_hopp),
    Codec("ieee802154", valid_802154, check_802154, 127, fix_fcs),
    Codec("6lowpan-iphc", valid_lowpan, check_lowpan),
    Codec("6lowpan-frag", valid_lowpan_fragment, check_lowpan_fragment),
    Codec("rpl", valid_rpl, check_rpl),
    Codec("icmpv6", valid_icmpv6, check_icmpv6, 64, fix_icmpv6),
    Codec("ipv4", valid_ipv4, check_ipv4, 64, fix_ipv4),
    Codec("ipv6", valid_ipv6, check_ipv6, 96),
    Codec("udp", valid_udp, check_udp, 64, fix_udp),
]


def codec_input(codec: Codec, rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.2:
        return randbytes(rng, rng.randrange(codec.random_max + 1))
    data = codec.valid(rng)
    if r < 0.3:
        return data
    data = mutate(data, rng)
    if codec.fixup is not None and rng.random() < 0.8:
        data = codec.fixup(data)
    return data


def run_codec_case(codec: Codec, rng: random.Random, count: int, stats: dict) -> None:
    check = codec.check
    for _ in range(count):
        data = codec_input(codec, rng)
        try:
            accepted = check(data)
        except Exception as exc:
            raise Failure(_describe(exc), [data.hex()]) from exc
        stats["inputs"] += 1
        stats["accepted"] += accepted


def _describe(exc: BaseException) -> str:
    if isinstance(exc, AssertionError):
        return f"property does not hold: {exc}" if str(exc) else "property does not hold"
    if isinstance(exc, DecodeError):
        return f"{type(exc).__name__} raised outside decoding: {exc}"
    return f"unexpected {type(exc).__name__}: {exc}"


# =====================================================================
# stacks
# =====================================================================


def _datagram(
    rng: random.Random, valid: Callable[[random.Random], bytes], corpus: list[bytes]
) -> bytes:
    """Random bytes, a corpus datagram or a valid one, each mutated or not."""
    r = rng.random()
    if r < 0.15:
        return randbytes(rng, rng.randrange(64))
    data = rng.choice(corpus) if corpus and r < 0.6 else valid(rng)
    return mutate(data, rng) if rng.random() < 0.6 else data


def _canonical(decode: Callable[[bytes], Any], encode: Callable[[Any], bytes], data: bytes) -> None:
    assert encode(decode(data)) == data, f"the stack emitted non-canonical bytes {data.hex()}"


class StackCase:
    """Records a case's inputs (at most STACK_CASE of them) for the failure report."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.inputs: list[str] = []

    def note(self, label: str, data: bytes) -> bytes:
        self.inputs.append(f"{label}:{data.hex()}")
        return data


# ---- CoAP endpoints -----------------------------------------------------------------

COAP_CLIENT, COAP_SERVER = ("10.0.0.2", 5683), ("10.0.0.1", 5683)
_COAP_TOKENS = (b"\x01\x02\x03\x04", b"\x05\x06", b"\x07")


def _coap_corpus() -> list[bytes]:
    from iotbench.proto.coap.codec import Code, Message, Opt, Type

    tok = _COAP_TOKENS[0]
    msgs = [
        Message.request(Type.CON, Code.GET, 0x1000, tok, "/t"),
        Message.request(Type.NON, Code.GET, 0x1001, tok, "/slow"),
        Message.request(Type.CON, Code.POST, 0x1002, tok, "/t", payload=b"abc"),
        Message.request(Type.CON, Code.GET, 0x1003, tok, "/.well-known/core", query=["rt=x*"]),
        Message.request(Type.CON, Code.PUT, 0x1010, tok, "/up", payload=b"x" * 16),
        Message(Type.ACK, Code.CONTENT, 0x1004, tok, [(Opt.CONTENT_FORMAT, b"")], b"ok"),
        Message(Type.CON, Code.CONTENT, 0x1005, tok, [(Opt.OBSERVE, b"\x07")], b"n"),
        Message(Type.NON, Code.NOT_FOUND, 0x1006, tok),
        Message.empty(Type.ACK, 0x1004),
        Message.empty(Type.RST, 0x1005),
        Message.empty(Type.CON, 0x1009),
        Message(Type.ACK, Code.CONTENT, 0x1005, _COAP_TOKENS[2], [(Opt.OBSERVE, b"\x02")], b"r"),
        Message(Type.NON, Code.CONTENT, 0x2000, _COAP_TOKENS[1], [], b"non"),
        Message(Type.CON, Code.CONTENT, 0x2002, _COAP_TOKENS[2], [(Opt.OBSERVE, b"\x01")], b"n"),
        Message(Type.ACK, Code.CONTENT, 0x1004, tok, [(Opt.BLOCK2, b"\x0a")], b"b" * 64),
        Message(Type.ACK, Code.CONTINUE, 0x1004, tok, [(Opt.BLOCK1, b"\x0a")]),
    ]
    reg = Message.request(Type.CON, Code.GET, 0x100A, tok, "/obs-con")
    reg.observe = 0
    msgs.append(reg)
    big = Message.request(Type.CON, Code.GET, 0x100B, tok, "/big")
    big.block2 = coap.BlockOption(1, False, 0)
    msgs.append(big)
    return [coap.encode(m) for m in msgs]


_COAP_CORPUS = _coap_corpus()


def run_coap_endpoint_case(case: StackCase, count: int, stats: dict) -> None:
    from iotbench.proto.coap.endpoint import CoapEndpoint
    from iotbench.proto.coap.params import CoapParams
    from iotbench.proto.coap.resources import ResourceResponse

    rng = case.rng
    params = rng.choice(
        (
            CoapParams(),
            CoapParams(rto="cocoa", separate_response_after_s=0.5, token_length=0),
            CoapParams(nstart=3, token_length=1, separate_response_after_s=0.0),
        )
    )
    server = CoapEndpoint(random.Random(7), params)
    server.add_resource("/t", lambda r, a: b"21.5", observable=True, content_format=0)
    server.add_resource("/slow", lambda r, a: ResourceResponse(payload=b"x", delay_s=3.0))
    server.add_resource("/obs-con", lambda r, a: "v", observable=True, notify_confirmable=True)
    server.add_resource("/big", lambda r, a: b"B" * 300)
    client = CoapEndpoint(random.Random(8), params, first_message_id=0x1004)
    client.request(0.0, COAP_SERVER, coap.Code.GET, "/t", token=_COAP_TOKENS[0])
    client.request(0.0, COAP_SERVER, coap.Code.GET, "/t", confirmable=False, token=_COAP_TOKENS[1])
    client.request(0.0, COAP_SERVER, coap.Code.GET, "/t", observe=True, token=_COAP_TOKENS[2])
    now = 0.0

    def drain(ep: CoapEndpoint) -> None:
        for data, addr in ep.datagrams_to_send():
            _canonical(coap.decode, coap.encode, data)
            assert addr in (COAP_CLIENT, COAP_SERVER)
        ep.events()
        assert ep.stats.internal_errors == 0, "internal error in the endpoint"

    drain(server)
    drain(client)
    for _ in range(count):
        data = case.note("datagram", _datagram(rng, valid_coap, _COAP_CORPUS))
        now += rng.choice((0.0, 0.1, 1.0, 5.0, 30.0))
        server.receive(now, data, COAP_CLIENT)
        client.receive(now, data, COAP_SERVER)
        for ep in (server, client):
            t = ep.next_timer()
            if t is not None and t <= now:
                ep.handle_timer(now)
            drain(ep)
        server.notify(now, "/obs-con")
        drain(server)
        stats["inputs"] += 1


# ---- DTLS layers ---------------------------------------------------------------------

DTLS_CLIENT, DTLS_SERVER = ("10.0.0.2", 5684), ("10.0.0.1", 5684)


def _dtls_corpus() -> list[bytes]:
    """Every datagram of a real handshake and its first data, for mutation."""
    from iotbench.proto.dtls.layer import DtlsLayer
    from iotbench.proto.dtls.params import PskClientCredentials, PskServerCredentials

    client = DtlsLayer(random.Random(1), client=PskClientCredentials(b"id", b"key"))
    server = DtlsLayer(random.Random(2), server=PskServerCredentials({b"id": b"key"}))
    client.outgoing(0.0, b"data", DTLS_SERVER)
    corpus = []
    for _ in range(8):
        for data, _ in client.datagrams_to_send():
            corpus.append(data)
            server.incoming(0.0, data, DTLS_CLIENT)
        for data, _ in server.datagrams_to_send():
            corpus.append(data)
            client.incoming(0.0, data, DTLS_SERVER)
    return corpus


_DTLS_CORPUS = _dtls_corpus()


def run_dtls_layer_case(case: StackCase, count: int, stats: dict) -> None:
    """A client and a server layer fed the same datagrams; their own output must parse."""
    from iotbench.proto.dtls.layer import DtlsLayer
    from iotbench.proto.dtls.params import DtlsParams, PskClientCredentials, PskServerCredentials
    from iotbench.proto.dtls.record import split_records

    rng = case.rng
    params = DtlsParams(max_datagram_bytes=rng.choice((64, 1232)), max_sessions=4)
    client = DtlsLayer(random.Random(1), params, client=PskClientCredentials(b"id", b"key"))
    server = DtlsLayer(random.Random(2), params, server=PskServerCredentials({b"id": b"key"}))
    client.outgoing(0.0, b"data", DTLS_SERVER)
    now = 0.0
    for _ in range(count):
        data = case.note("datagram", _datagram(rng, valid_dtls, _DTLS_CORPUS))
        now += rng.choice((0.0, 0.1, 1.0, 5.0))
        server.incoming(now, data, (DTLS_CLIENT[0], rng.randrange(3)))
        client.incoming(now, data, DTLS_SERVER)
        for layer in (client, server):
            t = layer.next_timer()
            if t is not None and t <= now:
                layer.handle_timer(now)
            for out, _ in layer.datagrams_to_send():
                assert len(out) <= params.max_datagram_bytes or out[0] == 23, "datagram too large"
                split_records(out)
            layer.plaintexts()
            layer.events()
        assert len(server._sessions) <= params.max_sessions
        stats["inputs"] += 1


# ---- OSCORE layers --------------------------------------------------------------------

OSCORE_CLIENT, OSCORE_SERVER = ("10.0.0.2", 40000), ("10.0.0.1", 5683)


def _oscore_layers(window_known: bool, **limits):
    """A client and a server OSCORE layer sharing RFC 8613 C.1's context."""
    from iotbench.proto.oscore.context import SecurityContext
    from iotbench.proto.oscore.layer import OscoreLayer

    secret, salt = bytes(range(1, 17)), bytes.fromhex("9e7ca92223786340")
    client = OscoreLayer(random.Random(1), **limits)
    client.add_peer(OSCORE_SERVER, SecurityContext(secret, b"", b"\x01", master_salt=salt))
    server = OscoreLayer(random.Random(2), **limits)
    server.add_context(
        SecurityContext(secret, b"\x01", b"", master_salt=salt, replay_window_known=window_known)
    )
    return client, server


def _oscore_corpus() -> list[bytes]:
    """Protected requests, answers and notifications of one exchange, for mutation."""
    from iotbench.proto.coap.codec import Code, Message, Type

    client, server = _oscore_layers(True)
    corpus = []
    requests = [
        Message.request(Type.CON, Code.GET, 0x10, b"tk", "/t"),
        Message.request(Type.NON, Code.PUT, 0x11, b"t2", "/t", payload=b"v"),
    ]
    requests[0].observe = 0
    for request in requests:
        client.outgoing(0.0, coap.encode(request), OSCORE_SERVER)
        for data, _ in client.datagrams_to_send():
            corpus.append(data)
            server.incoming(0.0, data, OSCORE_CLIENT)
        server.plaintexts()
    for mtype, mid, observe in ((Type.ACK, 0x10, 1), (Type.CON, 0x99, 2), (Type.NON, 0x11, None)):
        answer = Message(mtype, Code.CONTENT, mid, b"tk" if observe else b"t2", payload=b"21")
        if observe is not None:
            answer.observe = observe
        server.outgoing(0.0, coap.encode(answer), OSCORE_CLIENT)
        corpus += [data for data, _ in server.datagrams_to_send()]
    return corpus


_OSCORE_CORPUS = _oscore_corpus()


def _is_coap(data: bytes) -> bool:
    try:
        coap.decode(data)
    except coap.CoapDecodeError:
        return False
    return True


def run_oscore_layer_case(case: StackCase, count: int, stats: dict) -> None:
    """A client and a server layer fed the same datagrams, answering what they let
    through; what they send must be canonical CoAP, their tables within bounds."""
    from iotbench.proto.coap.codec import Code, Message, Type

    rng = case.rng
    limits = {"max_bindings": 4, "cache_entries": 8, "cache_bytes": 4096}
    client, server = _oscore_layers(rng.random() < 0.5, **limits)
    request = Message.request(Type.CON, Code.GET, 0x10, b"tk", "/t")
    request.observe = 0
    client.outgoing(0.0, coap.encode(request), OSCORE_SERVER)
    client.datagrams_to_send()
    now = 0.0
    for _ in range(count):
        data = case.note("datagram", _datagram(rng, valid_coap, _OSCORE_CORPUS))
        now += rng.choice((0.0, 0.1, 1.0, 30.0, 300.0))
        server.incoming(now, data, OSCORE_CLIENT)
        client.incoming(now, data, OSCORE_SERVER)
        for layer, peer in ((client, OSCORE_SERVER), (server, OSCORE_CLIENT)):
            for plain, _ in layer.plaintexts():
                # As if the endpoint sent back what it got (it only ever sends CoAP;
                # bytes it would reject pass the layer untouched).
                if _is_coap(plain):
                    layer.outgoing(now, plain, peer)
            for out, _ in layer.datagrams_to_send():
                _canonical(coap.decode, coap.encode, out)
            layer.events()
            assert len(layer._clients) <= limits["max_bindings"], "client bindings grow"
            assert len(layer._servers) <= limits["max_bindings"], "server bindings grow"
            for cache in (layer._sent, layer._received):
                assert len(cache) <= limits["cache_entries"], "a cache grows"
                assert cache.size_bytes <= limits["cache_bytes"] or len(cache) == 1
        stats["inputs"] += 1


# ---- MQTT broker and client ----------------------------------------------------------


def _mqtt_chunk(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.15:
        return randbytes(rng, rng.randrange(60))
    wire = b"".join(valid_mqtt(rng) for _ in range(rng.randint(1, 3)))
    return mutate(wire, rng) if r < 0.6 else wire


def _check_mqtt_output(data: bytes) -> None:
    for raw in mqtt.split_packets(data):
        _canonical(mqtt.decode, mqtt.encode, raw)


#: The broker's security for half the cases: user "x" (password "p") and anonymous
#: clients, an ACL with every kind of entry over the fuzzer's topic characters.
_MQTT_ACL = """\
topic readwrite #
topic deny +/+
topic read a/#
user x
topic write #
topic deny $
pattern readwrite %c/#
pattern read %u
"""


def run_mqtt_broker_case(case: StackCase, count: int, stats: dict) -> None:
    from iotbench.proto.mqtt.acl import Acl
    from iotbench.proto.mqtt.broker import MqttBroker
    from iotbench.proto.mqtt.params import MqttBrokerParams

    rng = case.rng
    secured = rng.random() < 0.5
    security = {"users": {"x": b"p"}, "allow_anonymous": True, "acl": Acl.parse(_MQTT_ACL)}
    params = MqttBrokerParams(
        **(security if secured else {}),
        max_packet_size_bytes=256,
        max_inflight=2,
        max_queued_messages=3,
        max_sessions=3,
        max_subscriptions_per_session=4,
        max_retained_messages=5,
        retry_interval_s=1.0,
        connect_timeout_s=20.0,
    )
    b = MqttBroker(random.Random(3), params)
    for conn in range(3):
        b.connection_made(0.0, conn)
    now = 0.0
    for _ in range(count):
        conn = rng.randrange(3)
        action = rng.random()
        now += rng.choice((0.0, 0.3, 2.0, 8.0))
        if action < 0.85:
            data = _mqtt_chunk(rng)
            if rng.random() < 0.3:  # a CONNECT first, to reach the connected states
                user = "x" if secured and rng.random() < 0.5 else None
                connect = mqtt.Connect(
                    f"c{conn}", rng.random() < 0.5, 10, username=user, password=user and b"p"
                )
                data = mqtt.encode(connect) + data
            b.receive_data(now, conn, case.note(f"conn{conn}", data))
        elif action < 0.93:
            case.note(f"lost{conn}", b"")
            b.connection_lost(now, conn)
        else:
            case.note(f"made{conn}", b"")
            b.connection_made(now, conn)
        t = b.next_timer()
        if t is not None and t <= now:
            b.handle_timer(now)
        for _, out in b.data_to_send():
            _check_mqtt_output(out)
        b.connections_to_close()
        b.events()
        assert b.stats.internal_errors == 0, "internal error in the broker"
        assert len(b.sessions) <= params.max_sessions
        assert len(b.retained) <= params.max_retained_messages
        stats["inputs"] += 1


def run_mqtt_client_case(case: StackCase, count: int, stats: dict) -> None:
    from iotbench.proto.mqtt.client import MqttClient
    from iotbench.proto.mqtt.params import MqttClientParams

    rng = case.rng
    params = MqttClientParams(
        client_id="c",
        keep_alive_s=5,
        max_packet_size_bytes=256,
        max_inflight=2,
        max_queued_messages=3,
        retry_interval_s=1.0,
    )
    c = MqttClient(random.Random(4), params)
    c.publish(0.0, "t/q", b"queued", 1)
    c.connect(0.0)
    c.subscribe(0.0, [("t/#", 2)])
    now = 0.0
    first = True
    for i in range(count):
        now += rng.choice((0.0, 0.5, 2.0, 6.0))
        data = _mqtt_chunk(rng)
        if first or rng.random() < 0.1:
            data = mqtt.encode(mqtt.ConnAck(False, 0)) + data
            first = False
        c.receive_data(now, case.note("data", data))
        if i % 4 == 3 and c.queued < params.max_queued_messages:
            c.publish(now, "t/x", b"%d" % i, i % 3)
        t = c.next_timer()
        if t is not None and t <= now:
            c.handle_timer(now)
        if c.close_requested and not c.connected:
            c.connection_lost(now)
            c.connect(now)
        _check_mqtt_output(c.data_to_send())
        c.events()
        assert c.in_flight <= params.max_inflight and c.queued <= params.max_queued_messages
        stats["inputs"] += 1


# ---- MQTT-SN gateway and client --------------------------------------------------------

SN_GW = ("10.0.0.1", 1884)
SN_SENDERS = [(f"sn-{n}", 1000) for n in "xyzw"]


def _sn_corpus() -> list[bytes]:
    tit = sn.TopicIdType
    msgs = [
        sn.Connect("x", 5),
        sn.Connect("y", 0, False, True),
        sn.WillTopic("w/a", 1, True),
        sn.WillMsg(b"gone"),
        sn.Register(0, 1, "t/a"),
        sn.RegAck(1, 1, 0),
        sn.Publish(1, 0, b"x", 0),
        sn.Publish(1, 4, b"y", 1),
        sn.Publish(2, 5, b"z", 2, dup=True),
        sn.Publish(1, 0, b"p", -1, topic_id_type=tit.PREDEFINED),
        sn.Publish(0x6162, 0, b"s", -1, topic_id_type=tit.SHORT),
        sn.PubAck(1, 4, 0),
        sn.PubRec(5),
        sn.PubRel(5),
        sn.PubComp(5),
        sn.Subscribe(8, 1, tit.NORMAL, "t/+"),
        sn.Subscribe(10, 0, tit.PREDEFINED, topic_id=1),
        sn.Unsubscribe(12, tit.NORMAL, "t/+"),
        sn.PingReq(),
        sn.PingReq("x"),
        sn.Disconnect(),
        sn.Disconnect(30),
        sn.WillTopicUpd("w/b", 0, False),
        sn.WillMsgUpd(b"bye"),
        sn.SearchGw(1),
    ]
    wires = [sn.encode(m) for m in msgs]
    return wires + [sn.encode(sn.Encapsulated(0, b"\x07", w)) for w in wires[:6]]


_SN_CORPUS = _sn_corpus()


class _SnPipe:
    """A gateway joined to an in-memory MQTT broker, delivering everything at once."""

    def __init__(self) -> None:
        from iotbench.proto.mqtt.broker import MqttBroker
        from iotbench.proto.mqtt.params import MqttBrokerParams
        from iotbench.proto.mqttsn.gateway import MqttSnGateway
        from iotbench.proto.mqttsn.params import MqttSnGatewayParams

        self.limits = MqttSnGatewayParams(
            max_clients=3,
            max_buffered_messages=3,
            max_topics_per_client=3,
            max_stored_wills=2,
            predefined_topics={1: "p/1"},
            keep_alive_factor=1.5,
        )
        self.gw = MqttSnGateway(random.Random(1), self.limits)
        self.broker = MqttBroker(random.Random(2), MqttBrokerParams())
        self.open: set[int] = set()

    def pump(self, now: float) -> None:
        gw, broker = self.gw, self.broker
        for _ in range(200):
            moved = False
            for data, _addr in gw.datagrams_to_send():
                message = sn.decode(data)
                assert sn.encode(message) == data, "the gateway emitted non-canonical bytes"
            for stream in gw.streams_to_open():
                moved = True
                self.open.add(stream)
                broker.connection_made(now, ("gw", stream))
                gw.stream_connected(now, stream)
            for stream, data in gw.stream_data_to_send():
                if stream in self.open:
                    moved = True
                    broker.receive_data(now, ("gw", stream), data)
            for stream in gw.streams_to_close():
                if stream in self.open:
                    self.open.discard(stream)
                    broker.connection_lost(now, ("gw", stream))
            for conn, data in broker.data_to_send():
                if conn[1] in self.open:
                    moved = True
                    gw.stream_receive(now, conn[1], data)
            for conn in broker.connections_to_close():
                if conn[1] in self.open:
                    self.open.discard(conn[1])
                    gw.stream_lost(now, conn[1])
            gw.events()
            broker.events()
            if not moved:
                return

    def advance(self, now: float) -> None:
        for stack in (self.gw, self.broker):
            t = stack.next_timer()
            if t is not None and t <= now:
                stack.handle_timer(now)
        self.pump(now)


def run_mqttsn_gateway_case(case: StackCase, count: int, stats: dict) -> None:
    rng = case.rng
    pipe = _SnPipe()
    gw = pipe.gw
    now = 0.0
    for addr in SN_SENDERS[:3]:
        gw.receive(now, sn.encode(sn.Connect(addr[0], 5)), addr)
        gw.receive(now, sn.encode(sn.Subscribe(1, 2, sn.TopicIdType.NORMAL, "#")), addr)
        pipe.pump(now)
    for _ in range(count):
        addr = rng.choice(SN_SENDERS)
        data = case.note(addr[0], _datagram(rng, valid_mqttsn, _SN_CORPUS))
        gw.receive(now, data, addr)
        pipe.pump(now)
        now += rng.choice((0.0, 0.01, 1.0, 12.0))
        pipe.advance(now)
        assert gw.stats.internal_errors == 0, "internal error in the gateway"
        assert pipe.broker.stats.internal_errors == 0, "internal error in the broker"
        assert gw.clients <= pipe.limits.max_clients
        stats["inputs"] += 1


def run_mqttsn_client_case(case: StackCase, count: int, stats: dict) -> None:
    from iotbench.proto.mqttsn.client import MqttSnClient
    from iotbench.proto.mqttsn.params import MqttSnClientParams

    rng = case.rng
    c = MqttSnClient(
        random.Random(10), MqttSnClientParams(client_id="dev", keep_alive_s=5, max_topics=3)
    )
    now = 0.0
    state = rng.randrange(4)
    if state >= 1:
        c.connect(now, SN_GW)
    replies = [
        sn.encode(sn.ConnAck(0)),
        sn.encode(sn.SubAck(0, 1, 0, 1)),
        sn.encode(sn.RegAck(3, 2, 0)),
    ]
    for i in range(count):
        if state >= 2 and i < len(replies) and rng.random() < 0.7:
            data = replies[i]
        else:
            data = _datagram(rng, valid_mqttsn, _SN_CORPUS)
        case.note("datagram", data)
        c.receive(now, data, SN_GW)
        c.receive(now, data, ("elsewhere", 1))
        if c.connected and rng.random() < 0.2:
            c.subscribe(now, "t/#", 1) if c.queued < 2 else None
        now += rng.choice((0.0, 0.01, 1.0, 12.0))
        t = c.next_timer()
        if t is not None and t <= now:
            c.handle_timer(now)
        for out, _addr in c.datagrams_to_send():
            _canonical(sn.decode, sn.encode, out)
        c.events()
        assert c.stats.internal_errors == 0, "internal error in the client"
        stats["inputs"] += 1


# ---- NDN forwarder ------------------------------------------------------------------


def _ndn_frame(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.1:
        return randbytes(rng, rng.randrange(64))
    if r < 0.2:
        return valid_ndn_fragment(rng)
    if r < 0.55:
        name = (
            Name("/a").append(bytes((rng.randrange(4),))) if rng.random() < 0.7 else valid_name(rng)
        )
        wire = make_interest(
            Name([c for c in name if c.type != ComponentType.PARAMETERS_SHA256_DIGEST]),
            can_be_prefix=rng.random() < 0.3,
            nonce=rng.randrange(4),
            lifetime_ms=rng.choice((None, 10, 1000)),
            hop_limit=rng.choice((None, 0, 1, 5)),
        ).wire
    elif r < 0.85:
        name = (
            Name("/a").append(bytes((rng.randrange(4),))) if rng.random() < 0.7 else valid_name(rng)
        )
        wire = make_data(name, b"v", freshness_period_ms=rng.choice((None, 0, 100))).wire
    else:
        wire = valid_lp(rng)
    return mutate(wire, rng) if rng.random() < 0.5 else wire


def run_ndn_forwarder_case(case: StackCase, count: int, stats: dict) -> None:
    from iotbench.proto.ndn.forwarder import Forwarder, ForwarderConfig

    rng = case.rng
    config = rng.choice(
        (
            ForwarderConfig(),
            ForwarderConfig(pit_max_entries=4, cs_max_bytes=300, retx_max=2, strategy="multicast"),
            ForwarderConfig(send_nacks=False, unsolicited_data="admit-all", cs_policy="lru"),
        )
    )
    fw = Forwarder(random.Random(5), config)
    sent: list[bytes] = []
    faces = [
        fw.add_face(sent.append, local=True),
        fw.add_face(sent.append, mtu=rng.choice((None, 40, 100))),
        fw.add_face(sent.append, s5_fragments=False),
    ]
    fw.add_route("/a", faces[1].face_id)
    fw.add_route("/", faces[2].face_id)
    now = 0.0
    for _ in range(count):
        face = rng.choice(faces)
        data = case.note(f"face{face.face_id}", _ndn_frame(rng))
        fw.receive(now, face.face_id, data)
        now += rng.choice((0.0, 0.005, 0.5, 5.0))
        t = fw.next_timer()
        if t is not None and t <= now:
            fw.handle_timer(now)
        for wire in sent:
            # Fields are decoded lazily (interest.py, data.py): a forwarder vets the
            # structure and what it reads (the name; for a Data also its SignatureInfo,
            # as NFD does), and passes the rest on as it came.
            if ndn_frag.is_fragment(wire):
                ndn_frag.FragmentHeader.decode(wire)
            else:
                packet = decode_packet(wire)
                if isinstance(packet, LpPacket) and packet.nack is not None:
                    packet = Interest(packet.fragment)
                if not isinstance(packet, LpPacket):
                    assert packet.name is not None
                if isinstance(packet, Data):
                    assert packet.signature_info is not None
        sent.clear()
        assert fw.counters.internal_errors == 0, f"internal error: {fw.last_internal_error!r}"
        stats["inputs"] += 1


# ---- 6LoWPAN reassembler -------------------------------------------------------------


def run_lowpan_reassembler_case(case: StackCase, count: int, stats: dict) -> None:
    rng = case.rng
    r = lowpan_frag.Reassembler(
        timeout_s=rng.choice((1.0, 60.0)), max_datagrams=2, max_bytes=1500, contexts=LOWPAN_CONTEXTS
    )
    pending: list[tuple[bytes, bytes, bytes]] = []
    now = 0.0
    for _ in range(count):
        if not pending or rng.random() < 0.3:
            selector = rng.randrange(16)
            src_mac, dst_mac = lowpan_macs(selector)
            packet = valid_ipv6_packet(rng, src_mac, dst_mac) + randbytes(rng, rng.randrange(300))
            packet = packet[:4] + struct.pack("!H", len(packet) - 40) + packet[6:]
            c = lowpan.compress(
                packet,
                src_mac,
                dst_mac,
                mode=rng.choice(("iphc", "none")),
                contexts=LOWPAN_CONTEXTS,
            )
            pieces = lowpan_frag.fragment(c, rng.randrange(0x10000), rng.choice((60, 100, 127)))
            rng.shuffle(pieces)
            pending = [(src_mac, dst_mac, p) for p in pieces]
        src_mac, dst_mac, piece = pending.pop()
        if rng.random() < 0.3:
            piece = mutate(piece, rng)
        case.note(f"{src_mac.hex()}>{dst_mac.hex()}", piece)
        packet = r.add(now, src_mac, dst_mac, piece)
        if packet is not None:
            assert packet[0] >> 4 == 6, "not an IPv6 packet"
            assert struct.unpack_from("!H", packet, 4)[0] == len(packet) - 40, "payload length"
        assert len(r) <= r.max_datagrams and r.held_bytes <= r.max_bytes
        now += rng.choice((0.0, 0.01, 0.5, 2.0))
        stats["inputs"] += 1


STACKS: dict[str, Callable[[StackCase, int, dict], None]] = {
    "coap-endpoint": run_coap_endpoint_case,
    "dtls-layer": run_dtls_layer_case,
    "oscore-layer": run_oscore_layer_case,
    "mqtt-broker": run_mqtt_broker_case,
    "mqtt-client": run_mqtt_client_case,
    "mqttsn-gateway": run_mqttsn_gateway_case,
    "mqttsn-client": run_mqttsn_client_case,
    "ndn-forwarder": run_ndn_forwarder_case,
    "6lowpan-reassembler": run_lowpan_reassembler_case,
}
TARGETS = [c.name for c in CODECS] + list(STACKS)
_CODEC_BY_NAME = {c.name: c for c in CODECS}


# =====================================================================
# driver
# =====================================================================


def case_rng(seed: int, target: str, case: int) -> random.Random:
    return random.Random(f"{seed}:{target}:{case}")


def run_case(target: str, seed: int, case: int, count: int, stats: dict) -> None:
    rng = case_rng(seed, target, case)
    codec = _CODEC_BY_NAME.get(target)
    if codec is not None:
        run_codec_case(codec, rng, count, stats)
        return
    record = StackCase(rng)
    try:
        STACKS[target](record, count, stats)
    except Failure:
        raise
    except Exception as exc:
        raise Failure(_describe(exc), record.inputs) from exc


def fuzz_target(
    target: str,
    seed: int,
    *,
    inputs: int | None,
    seconds: float | None,
    only_case: int | None,
    keep_going: bool,
    out=sys.stdout,
) -> dict:
    per_case = CODEC_CASE if target in _CODEC_BY_NAME else STACK_CASE
    stats = {"target": target, "inputs": 0, "accepted": 0, "failures": 0}
    start = time.perf_counter()
    cases = [only_case] if only_case is not None else None
    case = 0
    while True:
        if cases is not None:
            if not cases:
                break
            case = cases.pop()
            count = per_case
        else:
            if inputs is not None and stats["inputs"] >= inputs:
                break
            if seconds is not None and time.perf_counter() - start >= seconds:
                break
            count = per_case if inputs is None else min(per_case, inputs - stats["inputs"])
        try:
            run_case(target, seed, case, count, stats)
        except Failure as failure:
            stats["failures"] += 1
            stats["inputs"] += 1  # the failing input
            report_failure(target, seed, case, failure, out)
            if not keep_going:
                break
        case += 1
    wall = time.perf_counter() - start
    stats["wall_s"] = round(wall, 3)
    stats["inputs_per_s"] = round(stats["inputs"] / wall) if wall > 0 else 0
    return stats


def report_failure(target: str, seed: int, case: int, failure: Failure, out) -> None:
    cause = failure.__cause__
    print(f"FAILURE {target} seed={seed} case={case}: {failure}", file=out)
    for item in failure.inputs:
        print(f"  input {item}", file=out)
    if cause is not None:
        print("".join(traceback.format_exception(cause)).rstrip(), file=out)
    print(
        f"  reproduce: python bench/fuzz.py --codec {target} --seed {seed} --case {case}", file=out
    )
    out.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Fuzz every codec and sans-I/O stack (see the module docstring)."
    )
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--inputs", type=int, help="inputs per target (default 1000000)")
    budget.add_argument(
        "--minutes", type=float, help="total wall minutes, shared equally among the targets"
    )
    parser.add_argument(
        "--codec",
        "--target",
        dest="targets",
        nargs="+",
        metavar="NAME",
        choices=TARGETS,
        help="targets to run (default: every codec and stack; --list shows them)",
    )
    parser.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    parser.add_argument("--case", type=int, help="run only this case of each target (reproduce)")
    parser.add_argument("--keep-going", action="store_true", help="count failures, do not stop")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name in TARGETS:
            print(name, "(codec)" if name in _CODEC_BY_NAME else "(stack)")
        return 0
    targets = args.targets or TARGETS
    inputs = args.inputs
    seconds = None
    if args.minutes is not None:
        seconds = args.minutes * 60 / len(targets)
    elif inputs is None:
        inputs = 1_000_000
    results = []
    if not args.json:
        print(
            f"{'target':<20} {'inputs':>10} {'failures':>8} {'inputs/s':>9} {'wall s':>8} {'accepted':>8}"
        )
    for target in targets:
        stats = fuzz_target(
            target,
            args.seed,
            inputs=inputs,
            seconds=seconds,
            only_case=args.case,
            keep_going=args.keep_going,
            out=sys.stderr if args.json else sys.stdout,
        )
        results.append(stats)
        if not args.json:
            accepted = stats["accepted"] / stats["inputs"] if stats["inputs"] else 0.0
            print(
                f"{target:<20} {stats['inputs']:>10} {stats['failures']:>8} "
                f"{stats['inputs_per_s']:>9} {stats['wall_s']:>8.1f} "
                f"{accepted:>8.1%}"
                if target in _CODEC_BY_NAME
                else f"{target:<20} {stats['inputs']:>10} {stats['failures']:>8} "
                f"{stats['inputs_per_s']:>9} {stats['wall_s']:>8.1f} {'-':>8}",
                flush=True,
            )
        if stats["failures"] and not args.keep_going:
            break
    peak_mb = round(peak_rss_bytes() / 2**20, 1)
    if args.json:
        print(json.dumps({"seed": args.seed, "peak_rss_mb": peak_mb, "results": results}, indent=2))
    else:
        print(f"seed {args.seed}; peak memory of the process {peak_mb} MB")
    return 1 if any(s["failures"] for s in results) else 0


def peak_rss_bytes() -> int:
    """Peak resident memory of this process (0 where the platform does not say)."""
    try:
        import resource
    except ImportError:  # not on Windows
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS bytes, Linux KiB


if __name__ == "__main__":
    sys.exit(main())
