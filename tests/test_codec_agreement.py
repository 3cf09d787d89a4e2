"""Decoders and encoders agree on what is valid, for every codec.

For each codec, inputs are (a) random bytes and (b) valid encodings, as they
are and mutated (bits flipped, bytes set, inserted or deleted, the end cut off).
Whenever the decoder accepts an input (returns without its typed decode error),
the encoder must accept the decoded value, and decoding what it produces must
give an equal value; the decoder must raise nothing but its typed error. The
`check_*` functions (iotbench.codec_agreement) state the exact round-trip
property of each codec: byte for byte where the encoding is canonical, value
for value where the encoder normalises what the decoder tolerates
(non-minimal lengths, option order, ignored bits).

The examples are derandomized by the profile in tests/conftest.py; open-ended
exploration is `python bench/fuzz.py`, which runs the same checks.
The hand-written vectors at the end are the mismatches these properties found.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
from iotbench.proto.ndn.data import make_data
from iotbench.proto.ndn.interest import Interest, make_interest
from iotbench.proto.ndn.lp import LpPacket
from iotbench.proto.ndn.name import Component, Name
from iotbench.proto.ndn.signing import HmacSha256Signer
from iotbench.proto.oscore.option import OscoreOption
from mutations import inputs

AGREE = settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))

# ---- inputs -------------------------------------------------------------------------

text = st.text(
    st.sampled_from("abz/+#$-_.é€😀 %=") | st.characters(exclude_categories=("Cs",)), max_size=8
)
mqtt_text = text.map(lambda s: s.replace("\x00", ""))
u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)


# =====================================================================
# DTLS 1.2 records and handshake messages (RFC 6347 4.1, 4.2; RFC 4279)
# =====================================================================

_extensions = st.lists(st.tuples(u16, st.binary(max_size=6)), max_size=3, unique_by=lambda e: e[0])


@st.composite
def dtls_bodies(draw: st.DrawFn) -> tuple[int, bytes]:
    kind = draw(st.sampled_from(["ch", "sh", "hvr", "psk", "empty"]))
    rand = draw(st.binary(min_size=32, max_size=32))
    if kind == "ch":
        suites = tuple(draw(st.lists(u16, min_size=1, max_size=4)))
        cookie = draw(st.binary(max_size=20))
        ext = tuple(draw(_extensions))
        return dtls.CLIENT_HELLO, dtls.ClientHello(rand, suites, cookie, extensions=ext).encode()
    if kind == "sh":
        return dtls.SERVER_HELLO, dtls.ServerHello(
            rand, draw(u16), extensions=tuple(draw(_extensions))
        ).encode()
    if kind == "hvr":
        return dtls.HELLO_VERIFY_REQUEST, dtls.HelloVerifyRequest(
            draw(st.binary(max_size=32))
        ).encode()
    if kind == "psk":
        return dtls.CLIENT_KEY_EXCHANGE, dtls.encode_psk_identity(draw(st.binary(max_size=12)))
    return dtls.SERVER_HELLO_DONE, b""


@st.composite
def dtls_datagrams(draw: st.DrawFn) -> bytes:
    records = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["handshake", "alert", "ccs", "protected"]))
        seq = draw(st.integers(0, (1 << 48) - 1))
        if kind == "handshake":
            msg_type, body = draw(dtls_bodies())
            whole = dtls.whole_message(msg_type, draw(u16), body)
            records.append(plain_record(22, 0, seq, whole.encode()))
        elif kind == "alert":
            records.append(
                plain_record(
                    21, 0, seq, dtls.Alert(draw(st.sampled_from([1, 2])), draw(u8)).encode()
                )
            )
        elif kind == "ccs":
            records.append(plain_record(20, 0, seq, b"\x01"))
        else:
            records.append(
                plain_record(
                    23, draw(st.integers(1, 3)), seq, draw(st.binary(min_size=16, max_size=40))
                )
            )
    return b"".join(records)


@AGREE
@given(inputs(dtls_datagrams(), max_random=96))
def test_dtls(data):
    check_dtls(data)


# =====================================================================
# CoAP (RFC 7252 section 3)
# =====================================================================


@st.composite
def coap_messages(draw: st.DrawFn) -> bytes:
    mtype = draw(st.sampled_from(list(coap.Type)))
    mid = draw(u16)
    code = draw(st.sampled_from([0, 1, 2, 69, 68, 95, 132, 160]) | u8)
    if code == 0:
        return coap.encode(coap.Message(mtype, 0, mid))
    number = st.sampled_from(list(coap.Opt)) | st.integers(0, 300) | u16
    value = st.binary(max_size=14) | st.binary(min_size=266, max_size=272)
    options = draw(st.lists(st.tuples(number, value), max_size=5))
    token, payload = draw(st.binary(max_size=8)), draw(st.binary(max_size=24))
    return coap.encode(coap.Message(mtype, code, mid, token, options, payload))


@AGREE
@given(inputs(coap_messages()))
def test_coap(data):
    check_coap(data)


oscore_options = st.builds(
    lambda piv, kid, ctx: OscoreOption(piv, kid, ctx).encode(),
    st.none() | st.binary(min_size=1, max_size=5),
    st.none() | st.binary(max_size=8),
    st.none() | st.binary(max_size=20),
)


@AGREE
@given(inputs(oscore_options, 32))
def test_oscore_option(data):
    check_oscore_option(data)


# =====================================================================
# MQTT 3.1.1
# =====================================================================

_pid = st.integers(1, 0xFFFF)


@st.composite
def _connects(draw: st.DrawFn) -> mqtt.Connect:
    username = draw(st.none() | mqtt_text)
    password = draw(st.none() | st.binary(max_size=6)) if username is not None else None
    will = draw(
        st.none()
        | st.builds(mqtt.Will, mqtt_text, st.binary(max_size=8), st.integers(0, 2), st.booleans())
    )
    return mqtt.Connect(draw(mqtt_text), draw(st.booleans()), draw(u16), will, username, password)


@st.composite
def _publishes(draw: st.DrawFn) -> mqtt.Publish:
    qos = draw(st.integers(0, 2))
    dup = draw(st.booleans()) if qos else False
    payload = draw(st.binary(max_size=20) | st.binary(min_size=120, max_size=140))
    return mqtt.Publish(
        draw(mqtt_text), payload, qos, draw(st.booleans()), dup, draw(_pid) if qos else None
    )


mqtt_packets = st.one_of(
    _connects(),
    st.builds(lambda sp, rc: mqtt.ConnAck(sp and rc == 0, rc), st.booleans(), u8),
    _publishes(),
    st.builds(mqtt.PubAck, _pid),
    st.builds(mqtt.PubRec, _pid),
    st.builds(mqtt.PubRel, _pid),
    st.builds(mqtt.PubComp, _pid),
    st.builds(
        mqtt.Subscribe,
        _pid,
        st.lists(st.tuples(mqtt_text, st.integers(0, 2)), min_size=1, max_size=3).map(tuple),
    ),
    st.builds(
        mqtt.SubAck,
        _pid,
        st.lists(st.sampled_from([0, 1, 2, 0x80]), min_size=1, max_size=3).map(tuple),
    ),
    st.builds(mqtt.Unsubscribe, _pid, st.lists(mqtt_text, min_size=1, max_size=3).map(tuple)),
    st.builds(mqtt.UnsubAck, _pid),
    st.sampled_from([mqtt.PingReq(), mqtt.PingResp(), mqtt.Disconnect()]),
)


@AGREE
@given(inputs(mqtt_packets.map(mqtt.encode)))
def test_mqtt(data):
    check_mqtt(data)


@AGREE
@given(st.integers(1, 14), st.integers(0, 15), st.binary(max_size=4) | st.binary(max_size=40))
def test_mqtt_every_packet_type(packet_type, flags, body):
    """A random body behind every packet type and flags, with a matching Remaining Length."""
    check_mqtt(bytes([packet_type << 4 | flags, len(body)]) + body)


# =====================================================================
# MQTT-SN 1.2
# =====================================================================

_qos_sn = st.sampled_from([-1, 0, 1, 2])
_tit = st.sampled_from(list(sn.TopicIdType))


@st.composite
def _subscribes(draw: st.DrawFn):
    kind = draw(_tit)
    if kind == sn.TopicIdType.NORMAL:
        name, topic_id = draw(text), 0
    else:
        name, topic_id = "", draw(u16)
    if draw(st.booleans()):
        return sn.Subscribe(draw(u16), draw(_qos_sn), kind, name, topic_id, draw(st.booleans()))
    return sn.Unsubscribe(draw(u16), kind, name, topic_id)


_blob = st.binary(max_size=12) | st.binary(min_size=250, max_size=260)
_will_topic = st.one_of(
    st.just((None, 0, False)), st.tuples(text, st.integers(0, 2), st.booleans())
)
sn_messages = st.one_of(
    st.builds(sn.Advertise, u8, u16),
    st.builds(sn.SearchGw, u8),
    st.builds(sn.GwInfo, u8, st.sampled_from([b"", bytes(6), bytes(range(18))])),
    st.builds(sn.Connect, text, u16, st.booleans(), st.booleans(), u8),
    st.builds(sn.ConnAck, u8),
    st.sampled_from([sn.WillTopicReq(), sn.WillMsgReq(), sn.PingResp()]),
    _will_topic.map(lambda t: sn.WillTopic(*t)),
    _will_topic.map(lambda t: sn.WillTopicUpd(*t)),
    st.builds(sn.WillMsg, _blob),
    st.builds(sn.WillMsgUpd, _blob),
    st.builds(sn.Register, u16, u16, text),
    st.builds(sn.RegAck, u16, u16, u8),
    st.builds(sn.Publish, u16, u16, _blob, _qos_sn, st.booleans(), st.booleans(), _tit),
    st.builds(sn.PubAck, u16, u16, u8),
    st.builds(sn.PubRec, u16),
    st.builds(sn.PubRel, u16),
    st.builds(sn.PubComp, u16),
    _subscribes(),
    st.builds(sn.SubAck, u16, u16, u8, _qos_sn),
    st.builds(sn.UnsubAck, u16),
    st.builds(sn.PingReq, st.none() | text.filter(bool)),
    st.builds(sn.Disconnect, st.none() | u16),
    st.builds(sn.WillTopicResp, u8),
    st.builds(sn.WillMsgResp, u8),
)
sn_wires = sn_messages.map(sn.encode)
sn_wires = sn_wires | st.builds(
    lambda ctrl, node, inner: sn.encode(sn.Encapsulated(ctrl, node, inner)),
    u8,
    st.binary(max_size=8),
    sn_wires | st.binary(min_size=2, max_size=12),
)


@AGREE
@given(inputs(sn_wires))
def test_mqttsn(data):
    check_mqttsn(data)


@AGREE
@given(sn_messages)
def test_mqttsn_what_encodes_decodes_to_itself(message):
    """The other direction: encode() refuses a value the wire cannot carry."""
    assert sn.decode(sn.encode(message)) == message


# =====================================================================
# NDN: TLV, names and URIs, Interest, Data, LpPacket, S5 fragments
# =====================================================================


@st.composite
def components(draw: st.DrawFn) -> Component:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return Component(draw(st.sampled_from([1, 2])), draw(st.binary(min_size=32, max_size=32)))
    if kind == 1:
        n = draw(st.sampled_from([1, 2, 4, 8]))
        return Component(
            draw(st.sampled_from([0x32, 0x34, 0x36, 0x38, 0x3A])),
            draw(st.binary(min_size=n, max_size=n)),
        )
    if kind == 2:
        return Component(8, b"." * draw(st.integers(0, 4)))
    if kind == 3:
        return Component(
            draw(st.sampled_from([3, 0xFC, 0xFD, 0xFFFF]) | st.integers(3, 0xFFFF)),
            draw(st.binary(max_size=6)),
        )
    return Component(8, draw(st.binary(max_size=10)))


names = st.lists(components(), max_size=4).map(Name)
_HMAC = HmacSha256Signer(b"k", key_name="/k")


@st.composite
def interests(draw: st.DrawFn) -> bytes:
    name = Name([c for c in draw(names) if c.type != 2])
    params = draw(st.none() | st.binary(max_size=12))
    return make_interest(
        name,
        can_be_prefix=draw(st.booleans()),
        must_be_fresh=draw(st.booleans()),
        forwarding_hint=draw(st.lists(names, max_size=2)),
        nonce=draw(st.none() | st.integers(0, 2**32 - 1)),
        lifetime_ms=draw(st.none() | st.integers(0, 2**40)),
        hop_limit=draw(st.none() | u8),
        app_parameters=params,
        signer=_HMAC if params is not None and draw(st.booleans()) else None,
    ).wire


@st.composite
def datas(draw: st.DrawFn) -> bytes:
    return make_data(
        draw(names),
        draw(st.binary(max_size=40)),
        content_type=draw(st.none() | st.integers(0, 2**20)),
        freshness_period_ms=draw(st.none() | st.integers(0, 2**40)),
        final_block_id=draw(st.none() | components()),
        signer=_HMAC if draw(st.booleans()) else None,
    ).wire


_opt = st.none  # an optional field
lp_packets = st.builds(
    LpPacket,
    fragment=st.none() | interests() | st.binary(max_size=10),
    sequence=_opt() | st.integers(0, 2**64 - 1),
    frag_index=_opt() | st.integers(0, 3),
    frag_count=_opt() | st.integers(1, 4),
    pit_token=_opt() | st.binary(max_size=8),
    nack=_opt() | st.sampled_from([0, 50, 100, 150]) | u16,
    incoming_face_id=_opt() | st.integers(0, 2**20),
    next_hop_face_id=_opt() | u16,
    congestion_mark=_opt() | st.integers(0, 2),
    acks=st.lists(st.integers(0, 2**64 - 1), max_size=2).map(tuple),
    tx_sequence=_opt() | st.integers(0, 2**64 - 1),
).map(LpPacket.encode)
ndn_packets = interests() | datas() | lp_packets


@st.composite
def tlv_runs(draw: st.DrawFn) -> bytes:
    types = st.sampled_from([1, 7, 252, 253, 0xFFFF, 0x10000, 0xFFFFFFFF]) | st.integers(1, 300)
    values = st.integers(0, 2**64 - 1).map(tlv.encode_nni) | st.binary(max_size=12)
    return b"".join(
        tlv.encode_tlv(t, v)
        for t, v in draw(st.lists(st.tuples(types, values), min_size=1, max_size=3))
    )


@AGREE
@given(inputs(tlv_runs() | ndn_packets))
def test_ndn_tlv(data):
    check_ndn_tlv(data)


@AGREE
@given(inputs(names.map(lambda n: n.wire)))
def test_ndn_name(data):
    check_ndn_name(data)


_uris = names.map(lambda n: n.to_uri().encode("utf-8"))


@AGREE
@given(inputs(_uris).map(lambda b: b.decode("utf-8", "surrogateescape")))
def test_ndn_name_uri(uri):
    check_ndn_name_uri(uri)


@AGREE
@given(inputs(interests(), 96))
def test_ndn_interest(data):
    check_ndn_interest(data)


@AGREE
@given(inputs(datas(), 96))
def test_ndn_data(data):
    check_ndn_data(data)


@AGREE
@given(inputs(lp_packets, 96))
def test_ndn_lp(data):
    check_ndn_lp(data)


_fragments = st.builds(
    lambda packet, mtu, ident, pick: (
        frames := ndn_frag.fragment(packet, mtu, ident)
        if -(-len(packet) // (mtu - 3)) <= ndn_frag.MAX_FRAGMENTS
        else [packet]
    )[pick % len(frames)],
    ndn_packets,
    st.integers(4, 120),
    u16,
    st.integers(0, 31),
)


@AGREE
@given(inputs(_fragments))
def test_ndn_fragment(data):
    check_ndn_fragment(data)


_hopp = st.one_of(
    st.builds(lambda flags: hopp.Sol(bool(flags & 1)).encode(), st.integers(0, 255)),
    st.builds(
        lambda rank, prefix: hopp.Pam(rank, prefix).encode(),
        u16,
        st.text(alphabet="/ap0123", max_size=31),
    ),
    st.builds(
        lambda names: hopp.Nam(tuple(names)).encode(),
        st.lists(st.text(alphabet="/ap0123", max_size=63), min_size=1, max_size=3),
    ),
)


@AGREE
@given(inputs(_hopp))
def test_hopp(data):
    check_hopp(data)


# =====================================================================
# IEEE 802.15.4 (2006, section 7.2)
# =====================================================================

_mac = st.binary(min_size=2, max_size=2) | st.binary(min_size=8, max_size=8)


@st.composite
def mac_frames(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 4)) == 0:
        return ieee802154.encode_ack(draw(u8), draw(st.booleans()))
    dst, src = draw(_mac | st.just(ieee802154.BROADCAST)), draw(_mac)
    room = ieee802154.MAX_FRAME_BYTES - 7 - len(dst) - len(src)
    payload = draw(st.binary(max_size=room))
    return ieee802154.encode(
        ieee802154.Frame(draw(u8), draw(u16), dst, src, payload, draw(st.booleans()))
    )


def fix_fcs(data: bytes) -> bytes:
    return data[:-2] + struct.pack("<H", ieee802154.crc16(data[:-2])) if len(data) >= 3 else data


#: Frame control bits a decoded data frame does not keep: Frame Pending, the reserved
#: bits 7-9 and the frame version (2003 or 2006; 7.2.1.1).


@AGREE
@given(inputs(mac_frames(), 127, fix_fcs))
def test_ieee802154(data):
    check_802154(data)


@AGREE
@given(
    st.builds(
        ieee802154.Frame,
        u8,
        u16,
        _mac | st.just(ieee802154.BROADCAST),
        _mac,
        st.binary(max_size=20) | st.binary(min_size=95, max_size=120),
        st.booleans(),
    )
)
def test_ieee802154_what_encodes_decodes_to_itself(frame):
    """The other direction: encode() refuses a frame decode() refuses (over 127 bytes)."""
    try:
        wire = ieee802154.encode(frame)
    except ValueError:
        assert 5 + len(frame.dst) + len(frame.src) + len(frame.payload) + 2 > 127
        return
    assert ieee802154.decode(wire) == frame


# =====================================================================
# 6LoWPAN (RFC 4944, RFC 6282)
# =====================================================================


@st.composite
def _lowpan_address(draw: st.DrawFn, mac: bytes, source: bool) -> bytes:
    prefix = draw(
        st.sampled_from([lowpan.LINK_LOCAL_PREFIX, *LOWPAN_CONTEXTS.values()])
        | st.binary(min_size=8, max_size=8)
    )
    b = st.binary
    forms = [
        st.just(prefix + lowpan.interface_identifier(mac)),
        b(min_size=2, max_size=2).map(lambda x: prefix + bytes.fromhex("000000fffe00") + x),
        b(min_size=8, max_size=8).map(lambda x: prefix + x),
        b(min_size=16, max_size=16),
    ]
    if source:
        forms.append(st.just(bytes(16)))
    else:
        forms += [
            b(min_size=1, max_size=1).map(lambda x: b"\xff\x02" + bytes(13) + x),
            b(min_size=4, max_size=4).map(lambda x: b"\xff" + x[:1] + bytes(11) + x[1:]),
            b(min_size=6, max_size=6).map(lambda x: b"\xff" + x[:1] + bytes(9) + x[1:]),
            b(min_size=6, max_size=6).map(
                lambda x: b"\xff" + x[:2] + b"\x40" + LOWPAN_CONTEXTS[5] + x[2:]
            ),
        ]
    return draw(st.one_of(forms))


@st.composite
def lowpan_packets(draw: st.DrawFn) -> bytes:
    """A selector byte for the link-layer addresses, then a compressed IPv6 packet."""
    selector = draw(st.integers(0, 15))
    src_mac, dst_mac = lowpan_macs(selector)
    src, dst = draw(_lowpan_address(src_mac, True)), draw(_lowpan_address(dst_mac, False))
    payload = draw(st.binary(max_size=24))
    if draw(st.booleans()):
        proto = ip.IPPROTO_UDP
        ports = st.sampled_from([0xF0B0, 0xF0B7, 0xF005, 0xF0BF, 5683]) | u16
        payload = ip.build_udp(src, dst, draw(ports), draw(ports), payload)
    else:
        proto = draw(st.sampled_from([ip.IPPROTO_ICMPV6, ip.IPPROTO_UDP, 44]) | u8)
    packet = ip.build_ipv6(
        src,
        dst,
        proto,
        payload,
        hop_limit=draw(st.sampled_from([1, 64, 255]) | u8),
        traffic_class=draw(st.sampled_from([0, 1, 0xB8]) | u8),
        flow_label=draw(st.sampled_from([0, 0xABCDE]) | st.integers(0, 2**20 - 1)),
    )
    mode = draw(st.sampled_from(["iphc", "iphc", "none"]))
    c = lowpan.compress(packet, src_mac, dst_mac, mode=mode, contexts=LOWPAN_CONTEXTS)
    return bytes((selector,)) + c.header + c.payload


@AGREE
@given(inputs(lowpan_packets()))
def test_lowpan_iphc(data):
    check_lowpan(data)


_lowpan_fragments = st.one_of(
    st.builds(
        lambda s, t, b: lowpan_frag.frag1_header(s, t) + b,
        st.integers(0, 0x7FF),
        u16,
        st.binary(max_size=8),
    ),
    st.builds(
        lambda s, t, o, b: lowpan_frag.fragn_header(s, t, 8 * o) + b,
        st.integers(0, 0x7FF),
        u16,
        u8,
        st.binary(max_size=8),
    ),
)


@AGREE
@given(inputs(_lowpan_fragments, 8))
def test_lowpan_fragment(data):
    check_lowpan_fragment(data)


# =====================================================================
# RPL (RFC 6550 section 6) and ICMPv6 (RFC 4443)
# =====================================================================

_addr16 = st.binary(min_size=16, max_size=16)
_opaque = st.builds(
    rpl.Opaque, st.sampled_from([2, 3, 7, 9]) | st.integers(9, 255), st.binary(max_size=8)
)


@st.composite
def _targets(draw: st.DrawFn) -> tuple[rpl.Target, rpl.Transit]:
    length = draw(st.sampled_from([128, 64, 0]) | st.integers(0, 128))
    prefix = draw(st.binary(min_size=(length + 7) // 8, max_size=(length + 7) // 8))
    target = rpl.Target(prefix.ljust(16, b"\0"), length, draw(u8))
    transit = rpl.Transit(
        draw(u8), draw(u8), draw(u8), draw(st.booleans()), draw(st.none() | _addr16)
    )
    return target, transit


rpl_messages = st.one_of(
    st.builds(rpl.Dis, st.lists(_opaque, max_size=2).map(tuple), u8),
    st.builds(
        rpl.Dio,
        u8,
        u8,
        u16,
        _addr16,
        u8,
        st.booleans(),
        st.integers(0, 7),
        st.integers(0, 7),
        st.none()
        | st.builds(
            rpl.DodagConfiguration,
            st.booleans(),
            st.integers(0, 7),
            u8,
            u8,
            u8,
            u16,
            st.integers(1, 0xFFFF),
            u16,
            u8,
            u16,
        ),
        st.none()
        | st.builds(
            rpl.PrefixInformation,
            _addr16,
            st.integers(0, 128),
            st.booleans(),
            st.booleans(),
            st.booleans(),
            st.integers(0, 2**32 - 1),
            st.integers(0, 2**32 - 1),
        ),
        st.lists(_opaque, max_size=1).map(tuple),
    ),
    st.builds(
        rpl.Dao,
        u8,
        u8,
        st.lists(_targets(), max_size=2).map(tuple),
        st.booleans(),
        st.none() | _addr16,
    ),
    st.builds(rpl.DaoAck, u8, u8, u8, st.none() | _addr16),
)


@AGREE
@given(inputs(rpl_messages.map(lambda m: bytes((rpl.encode(m)[0],)) + rpl.encode(m)[1])))
def test_rpl(data):
    check_rpl(data)


_loose_addr = st.binary(min_size=15, max_size=17) | st.binary(min_size=0, max_size=1)
_loose_opaque = st.builds(rpl.Opaque, st.integers(0, 9) | u8, st.binary(max_size=4))
loose_rpl_messages = st.one_of(
    st.builds(rpl.Dis, st.lists(_loose_opaque, max_size=2).map(tuple), u8),
    st.builds(
        rpl.Dio,
        u8,
        u8,
        u16,
        _loose_addr,
        u8,
        st.booleans(),
        st.integers(0, 9),
        st.integers(0, 9),
        st.none()
        | st.builds(
            rpl.DodagConfiguration,
            path_control_size=st.integers(0, 9),
            min_hop_rank_increase=st.integers(0, 2),
        ),
        st.none()
        | st.builds(rpl.PrefixInformation, _loose_addr, st.integers(0, 130) | st.just(64)),
        st.lists(_loose_opaque, max_size=2).map(tuple),
    ),
    st.builds(
        rpl.Dao,
        u8,
        u8,
        st.lists(
            st.tuples(
                st.builds(rpl.Target, _loose_addr, st.integers(0, 130) | st.just(128)),
                st.builds(rpl.Transit, u8, parent=st.none() | _loose_addr),
            ),
            max_size=2,
        ).map(tuple),
        st.booleans(),
        st.none() | _loose_addr,
    ),
    st.builds(rpl.DaoAck, u8, u8, u8, st.none() | _loose_addr),
)


@AGREE
@given(loose_rpl_messages)
def test_rpl_what_encodes_decodes_to_itself(message):
    """The other direction: encode() refuses a value decode() would refuse or change
    (addresses not 16 bytes, prefix lengths beyond 128, a target's bytes beyond its
    prefix length, bit fields too wide, a MinHopRankIncrease of 0, padding options)."""
    try:
        code, body = rpl.encode(message)
    except ValueError:
        return
    assert rpl.decode(code, body) == message


def fix_icmpv6(data: bytes) -> bytes:
    return (
        icmpv6.build_icmpv6(ICMP_SRC, ICMP_DST, data[0], data[1], data[4:])
        if len(data) >= 4
        else data
    )


_icmp = st.builds(
    lambda t, c, b: icmpv6.build_icmpv6(ICMP_SRC, ICMP_DST, t, c, b),
    st.just(155) | u8,
    u8,
    st.binary(max_size=30),
)


@AGREE
@given(inputs(_icmp, 48, fix_icmpv6))
def test_icmpv6(data):
    check_icmpv6(data)


# =====================================================================
# IPv4 (RFC 791), IPv6 (RFC 8200), UDP (RFC 768)
# =====================================================================


@st.composite
def ipv4_packets(draw: st.DrawFn) -> bytes:
    return ip.build_ipv4(
        V4_A,
        V4_B,
        draw(u8),
        draw(st.binary(max_size=40)),
        draw(u16),
        ttl=draw(u8),
        tos=draw(u8),
        dont_fragment=draw(st.booleans()),
        more_fragments=draw(st.booleans()),
        frag_offset=8 * draw(st.integers(0, 0x1FFF)),
    )


def fix_ipv4(data: bytes) -> bytes:
    header_len = (data[0] & 0x0F) * 4 if data else 0
    if len(data) < 20 or not 20 <= header_len <= len(data):
        return data
    header = bytearray(data[:header_len])
    header[10:12] = internet_checksum(bytes(header[:10] + b"\0\0" + header[12:])).to_bytes(2, "big")
    return bytes(header) + data[header_len:]


@AGREE
@given(inputs(ipv4_packets(), 48, fix_ipv4))
def test_ipv4(data):
    check_ipv4(data)


@st.composite
def ipv6_packets(draw: st.DrawFn) -> bytes:
    payload = draw(st.binary(max_size=40) | st.binary(min_size=100, max_size=200))
    packet = ip.build_ipv6(
        V6_A,
        V6_B,
        draw(st.sampled_from([17, 58]) | u8),
        payload,
        hop_limit=draw(u8),
        traffic_class=draw(u8),
        flow_label=draw(st.integers(0, 2**20 - 1)),
    )
    if len(packet) > 100 and draw(st.booleans()):
        pieces = ip.fragment_ipv6(
            packet, draw(st.integers(56, 120)), draw(st.integers(0, 2**32 - 1))
        )
        return pieces[draw(st.integers(0, len(pieces) - 1))]
    return packet


@AGREE
@given(inputs(ipv6_packets(), 64))
def test_ipv6(data):
    check_ipv6(data)


@st.composite
def udp_datagrams(draw: st.DrawFn) -> bytes:
    """A selector byte for IPv4 or IPv6 addresses, then the datagram."""
    selector = draw(u8)
    src, dst = udp_addresses(selector)
    return bytes((selector,)) + ip.build_udp(
        src, dst, draw(u16), draw(u16), draw(st.binary(max_size=30))
    )


def fix_udp(data: bytes) -> bytes:
    if len(data) < 9:
        return data
    sport, dport, length, _ = struct.unpack_from("!HHHH", data, 1)
    if not 8 <= length <= len(data) - 1:
        return data
    src, dst = udp_addresses(data[0])
    return (
        data[:1] + ip.build_udp(src, dst, sport, dport, data[9 : 1 + length]) + data[1 + length :]
    )


@AGREE
@given(inputs(udp_datagrams(), 48, fix_udp))
def test_udp(data):
    check_udp(data)


# =====================================================================
# every single-bit flip and every truncation of valid encodings
# =====================================================================
#
# Random mutations rarely hit the one bit that matters (the CONNACK session present
# flag next to a refusing return code, 3.2.2.2); these walk all of them.

FLIPPED_BYTES = 32  # the headers are in the first bytes; longer tails only add time
_EXHAUSTIVE = [
    ("coap", coap_messages(), check_coap),
    ("oscore-option", oscore_options, check_oscore_option),
    ("mqtt", mqtt_packets.map(mqtt.encode), check_mqtt),
    ("mqttsn", sn_wires, check_mqttsn),
    ("ndn-tlv", tlv_runs(), check_ndn_tlv),
    ("ndn-name", names.map(lambda n: n.wire), check_ndn_name),
    ("ndn-interest", interests(), check_ndn_interest),
    ("ndn-data", datas(), check_ndn_data),
    ("ndn-lp", lp_packets, check_ndn_lp),
    ("ndn-fragment", _fragments, check_ndn_fragment),
    ("ieee802154", mac_frames(), lambda b: check_802154(fix_fcs(b))),
    ("6lowpan-iphc", lowpan_packets(), check_lowpan),
    ("6lowpan-frag", _lowpan_fragments, check_lowpan_fragment),
    ("rpl", rpl_messages.map(lambda m: bytes((rpl.encode(m)[0],)) + rpl.encode(m)[1]), check_rpl),
    ("icmpv6", _icmp, lambda b: check_icmpv6(fix_icmpv6(b))),
    ("ipv4", ipv4_packets(), lambda b: check_ipv4(fix_ipv4(b))),
    ("ipv6", ipv6_packets(), check_ipv6),
    ("udp", udp_datagrams(), lambda b: check_udp(fix_udp(b))),
]


@pytest.mark.parametrize(
    ("valid", "check"), [e[1:] for e in _EXHAUSTIVE], ids=[e[0] for e in _EXHAUSTIVE]
)
@settings(AGREE, max_examples=40)
@given(data=st.data())
def test_every_bit_flip_and_truncation(valid, check, data):
    wire = data.draw(valid)
    for i in range(min(len(wire), FLIPPED_BYTES)):
        for bit in range(8):
            check(wire[:i] + bytes((wire[i] ^ (1 << bit),)) + wire[i + 1 :])
    for end in range(len(wire)):
        check(wire[:end])
    check(wire)


# =====================================================================
# regression vectors: the mismatches the properties above found
# =====================================================================


@pytest.mark.parametrize(
    "uri",
    [
        "/a\udc80b",  # a lone surrogate (bytes read with "surrogateescape"): UnicodeEncodeError
        "/%41\udcbd",  # the same after a percent-escape
        "/" + "9" * 5000 + "=a",  # a type number int() refuses to parse: ValueError
        "/seg=" + "9" * 5000,  # the same for a seg= value
        "/000123456=x",  # type 123456, beyond 65535
        "/seg=" + "1" * 21,  # beyond 64 bits
    ],
)
def test_ndn_uri_errors_are_ndn_decode_errors(uri):
    # Packet format v0.3 "NDN URI Scheme"; RFC 3629 3 (no UTF-8 for surrogates).
    with pytest.raises(tlv.NdnDecodeError):
        Name(uri)
    check_ndn_name_uri(uri)


def test_ndn_uri_numbers_with_leading_zeros_still_parse():
    assert Name("/0000000000000000000000008=a/seg=000000000000000000000001") == Name("/a/seg=1")


def test_mqttsn_header_length_of_an_encapsulated_non_message():
    # 5.5: decode() leaves the encapsulated bytes raw, and accepted this; header_length()
    # raised MqttSnDecodeError on the inner bytes, which are not a message.
    data = bytes.fromhex("03fe8eca9603fe8eca95")
    message = sn.decode(data)
    assert type(message) is sn.Encapsulated and message.message == bytes.fromhex("ca9603fe8eca95")
    assert sn.header_length(data) == len(data)
    inner = sn.encode(sn.Publish(1, 0, b"data"))
    wrapped = sn.encode(sn.Encapsulated(0, b"\x07", inner))
    assert sn.header_length(wrapped) == len(wrapped) - len(b"data")


@pytest.mark.parametrize(
    ("security", "version", "message"),
    [
        (True, 1, "Security Enabled"),  # 7.2.1.1.2: an Auxiliary Security Header follows
        (False, 2, "version 2 is reserved"),  # 7.2.1.1.7
        (False, 3, "version 3 is reserved"),
    ],
)
def test_802154_frames_whose_layout_the_decoder_does_not_know(security, version, message):
    # The decoder took the security header for payload, and encode() dropped the bits.
    frame = ieee802154.Frame(1, 0x23, ieee802154.BROADCAST, bytes(range(8)), b"\x05\x01\x02")
    wire = bytearray(ieee802154.encode(frame))
    wire[0] |= 0x08 if security else 0
    wire[1] = (wire[1] & ~0x30) | version << 4
    with pytest.raises(ieee802154.MacDecodeError, match=message):
        ieee802154.decode(fix_fcs(bytes(wire)))


def test_802154_bits_the_decoder_may_ignore():
    # Frame Pending and the reserved bits (ignored on receipt, 7.2.1.1) and version 0.
    frame = ieee802154.Frame(1, 0x23, b"\x00\x01", bytes(range(8)), b"x")
    wire = bytearray(ieee802154.encode(frame))
    wire[0] |= 0x10 | 0x80
    wire[1] = (wire[1] & ~0x30) | 0x03
    assert ieee802154.decode(fix_fcs(bytes(wire))) == frame
    check_802154(fix_fcs(bytes(wire)))


def test_802154_encode_refuses_a_frame_over_127_bytes():
    # aMaxPHYPacketSize (6.4.1): decode() refused the frame encode() had built.
    fits = ieee802154.Frame(1, 0x23, bytes(8), bytes(8), bytes(104))
    assert len(ieee802154.encode(fits)) == 127
    with pytest.raises(ValueError, match="exceeds 127"):
        ieee802154.encode(ieee802154.Frame(1, 0x23, bytes(8), bytes(8), bytes(105)))


def test_make_interest_refuses_a_parameters_digest_without_parameters():
    # The decoder refuses such an Interest (Interest.name); the encoder built it.
    name = Name([b"a", Component.params_digest(bytes(32))])
    with pytest.raises(ValueError, match="app_parameters"):
        make_interest(name)
    interest = Interest(make_interest(name, app_parameters=b"p").wire).validate()
    assert interest.parameters_digest_valid()


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (rpl.Dio(1, 1, 256, bytes(15)), "16-byte"),  # the DODAGID was padded silently
        (rpl.Dio(1, 1, 256, bytes(16), mop=8), "3-bit"),  # spilled into the next bit
        (rpl.Dio(1, 1, 256, bytes(16), options=(rpl.Opaque(4, bytes(14)),)), "opaque"),
        (
            rpl.Dio(
                1, 1, 256, bytes(16), configuration=rpl.DodagConfiguration(min_hop_rank_increase=0)
            ),
            " 0",
        ),
        (rpl.Dao(1, 1, ((rpl.Target(bytes(16), 129), rpl.Transit(30)),)), "0..128"),
        (rpl.Dao(1, 1, ((rpl.Target(b"\xfd" * 16, 64), rpl.Transit(30)),)), "beyond"),
        (rpl.Dao(1, 1, ((rpl.Target(bytes(16)), rpl.Transit(30, parent=bytes(8))),)), "16"),
        (rpl.DaoAck(1, 1, dodag_id=b""), "16-byte"),
        (rpl.Dis((rpl.Opaque(1, b"\0\0"),)), "opaque"),
    ],
)
def test_rpl_encode_refuses_what_decode_would_read_otherwise(message, reason):
    # RFC 6550 figures 14-17 and 6.7: each was encoded, and decoded to another value
    # or refused.
    with pytest.raises(ValueError, match=reason):
        rpl.encode(message)


@pytest.mark.parametrize(
    "message",
    [
        sn.PingReq(""),  # 5.4.19: no ClientId and an empty one are the same bytes
        sn.WillTopic(None, 1),  # 5.4.7: the empty WILLTOPIC has no Flags
        sn.WillTopicUpd(None, 0, True),
        sn.Subscribe(1, 0, sn.TopicIdType.NORMAL, "t", topic_id=5),  # 5.4.15: one or other
        sn.Subscribe(1, 0, sn.TopicIdType.PREDEFINED, "t", topic_id=5),
        sn.Unsubscribe(1, sn.TopicIdType.SHORT, "ab", topic_id=0x6162),
    ],
)
def test_mqttsn_encode_refuses_values_the_wire_cannot_carry(message):
    with pytest.raises(ValueError):
        sn.encode(message)
