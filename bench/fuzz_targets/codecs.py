"""The codec targets: a valid-encoding generator and a property check for each codec."""

from __future__ import annotations

import random
import struct

from fuzz_targets.common import Codec, mqtt_text, randbytes, text
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
from iotbench.proto.mqtt import codec as mqtt
from iotbench.proto.mqttsn import codec as sn
from iotbench.proto.ndn import fragmentation as ndn_frag
from iotbench.proto.ndn import hopp, tlv
from iotbench.proto.ndn.data import Data, make_data
from iotbench.proto.ndn.interest import Interest, make_interest
from iotbench.proto.ndn.lp import LpPacket
from iotbench.proto.ndn.name import Component, Name
from iotbench.proto.ndn.signing import HmacSha256Signer

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
