"""What "decode and encode agree" means for each codec: one check per codec.

Each `check_*` function takes one input and returns whether the decoder
accepted it. When it did, the decoded value must re-encode without an error
and decode again to an equal value (for the canonical formats, CoAP, NDN
TLV and names, S5 and 6LoWPAN fragment headers, to the very same bytes; for
the others the same bytes but for what the decoder may ignore); each
docstring states the exact property. A failed property raises
AssertionError; the decoder raising anything but its typed DecodeError
propagates as it is.

Two users: the derandomized property tests (tests/test_codec_agreement.py,
inputs from hypothesis) and the open-ended fuzz command (bench/fuzz.py,
inputs from a seeded random.Random).
"""

from __future__ import annotations

import struct

from iotbench.net import icmpv6, ieee802154, ip
from iotbench.net.lowpan import codec as lowpan
from iotbench.net.lowpan import fragments as lowpan_frag
from iotbench.net.rpl import codec as rpl
from iotbench.proto.coap import codec as coap
from iotbench.proto.dtls import messages as dtls_messages
from iotbench.proto.dtls import record as dtls_record
from iotbench.proto.mqtt import codec as mqtt
from iotbench.proto.mqttsn import codec as sn
from iotbench.proto.ndn import fragmentation as ndn_frag
from iotbench.proto.ndn import hopp, tlv
from iotbench.proto.ndn.data import Data, make_data
from iotbench.proto.ndn.framing import TlvFramer
from iotbench.proto.ndn.interest import Interest, make_interest
from iotbench.proto.ndn.lp import LpPacket
from iotbench.proto.ndn.name import Component, Name
from iotbench.proto.ndn.siginfo import SignatureInfo
from iotbench.proto.ndn.types import TT, ComponentType
from iotbench.proto.oscore.option import OscoreOption, OscoreOptionError


def check_coap(data: bytes) -> bool:
    """decode(b) accepted => encode(decode(b)) == b: every datagram decode() accepts has
    exactly one encoding (the option extensions do not overlap, option order is the
    wire's); header_length(b) == len(b) - len(payload); Block1/Block2 values that
    BlockOption.decode accepts round-trip."""
    try:
        msg = coap.decode(data)
    except coap.CoapDecodeError:
        return False
    assert coap.encode(msg) == data, "re-encoding differs"
    assert coap.header_length(data) == len(data) - len(msg.payload)
    for number in (coap.Opt.BLOCK1, coap.Opt.BLOCK2):
        for value in msg.get_options(number):
            try:
                block = coap.BlockOption.decode(value)
            except coap.CoapDecodeError:
                continue
            assert coap.BlockOption.decode(block.encode()) == block
    return True


def check_oscore_option(data: bytes) -> bool:
    """OscoreOption.decode(b) accepted => encode(decode(b)) == b (the value is
    canonical), but for a lone 0x00 flag byte, which reads as the empty value
    it is sent as (RFC 8613 6.3)."""
    try:
        option = OscoreOption.decode(data)
    except OscoreOptionError:
        return False
    assert option.encode() == (b"" if data == b"\x00" else data), "re-encoding differs"
    return True


_DTLS_BODIES: dict[
    int,
    type[dtls_messages.ClientHello]
    | type[dtls_messages.ServerHello]
    | type[dtls_messages.HelloVerifyRequest],
] = {
    dtls_messages.CLIENT_HELLO: dtls_messages.ClientHello,
    dtls_messages.SERVER_HELLO: dtls_messages.ServerHello,
    dtls_messages.HELLO_VERIFY_REQUEST: dtls_messages.HelloVerifyRequest,
}


def check_dtls(data: bytes) -> bool:
    """split_records(b) accepted => the records it returns are a prefix of b, each
    header re-encodes to its bytes; an epoch-0 handshake record's fragments re-encode
    to its payload; a whole ClientHello, ServerHello or HelloVerifyRequest body
    decodes to m with decode(encode(m)) == m (an empty extensions block and none
    are the same message); an epoch-0 alert re-encodes to its 2 bytes."""
    try:
        records = dtls_record.split_records(data)
    except dtls_record.DtlsDecodeError:
        return False
    assert data.startswith(b"".join(r for _, r in records)), "records are not a prefix"
    for header, record in records:
        assert header.encode() == record[: dtls_record.HEADER_LEN], "header re-encodes"
        payload = record[dtls_record.HEADER_LEN :]
        if header.epoch != 0:
            continue
        try:
            if header.content_type == 22:
                pieces = dtls_messages.decode_fragments(payload)
                assert b"".join(p.encode() for p in pieces) == payload, "fragments re-encode"
                for piece in pieces:
                    body_type = _DTLS_BODIES.get(piece.msg_type)
                    if piece.whole and body_type is not None:
                        msg = body_type.decode(piece.body)
                        assert body_type.decode(msg.encode()) == msg, f"re-decoded {msg!r}"
            elif header.content_type == 21:
                assert dtls_messages.Alert.decode(payload).encode() == payload
        except dtls_record.DtlsDecodeError:
            pass
    return True


def _minimal_remaining_length(data: bytes) -> bytes:
    """`data` with its Remaining Length in the minimal encoding (2.2.3)."""
    field = mqtt.decode_remaining_length(data)
    assert field is not None  # (decode accepted `data`: the field is whole)
    length, body = field
    return data[:1] + mqtt.encode_remaining_length(length) + data[body:]


def check_mqtt(data: bytes) -> bool:
    """decode(b) accepted => encode(p) is b with its Remaining Length in the minimal
    encoding (3.1.1 accepts a longer one, 2.2.3; the encoder never writes one), so
    decode(encode(p)) == p; header_length(b) accepts b and is the PUBLISH payload
    boundary."""
    try:
        packet = mqtt.decode(data)
    except mqtt.MqttDecodeError:
        return False
    wire = mqtt.encode(packet)
    assert wire == _minimal_remaining_length(data), f"re-encoded {wire.hex()}"
    again = mqtt.decode(wire)
    assert again == packet, f"re-decoded {again!r}"
    header = mqtt.header_length(data)
    if type(packet) is mqtt.Publish:
        assert len(data) - header == len(packet.payload)
    assert mqtt.split_packets(data) == [data]
    return True


def check_mqttsn(data: bytes) -> bool:
    """decode(b) accepted => decode(encode(m)) == m (the encoder writes the 1-octet Length
    whenever it fits, 5.2.1, and zeroes Flags bits the message does not use);
    header_length(b) accepts b; an encapsulated message that decodes obeys the same."""
    try:
        message = sn.decode(data)
    except sn.MqttSnDecodeError:
        return False
    again = sn.decode(sn.encode(message))
    assert again == message, f"re-decoded {again!r}"
    assert 0 <= sn.header_length(data) <= len(data)
    if type(message) is sn.Encapsulated:
        check_mqttsn(message.message)
    return True


def check_ndn_tlv(data: bytes) -> bool:
    """A run of TLV elements read_tl accepts re-encodes (encode_tlv) to the same bytes: a
    VAR-NUMBER has one accepted encoding, the shortest (packet format v0.3, "TLV
    Encoding"); a NonNegativeInteger decode_nni accepts round-trips through
    encode_nni (which writes the shortest of 1, 2, 4, 8 bytes); TlvFramer cuts the
    same elements from the bytes fed in pieces, and fails only if read_tl does."""
    read: list[tuple[int, bytes, bytes]] = []
    pos = 0
    elements: list[tuple[int, bytes, bytes]] | None = read
    try:
        while pos < len(data):
            t, vs, ve = tlv.read_tl(data, pos, len(data))
            read.append((t, data[pos:ve], data[vs:ve]))
            pos = ve
    except tlv.NdnDecodeError:
        elements = None
    if elements is not None:
        assert b"".join(tlv.encode_tlv(t, v) for t, _, v in elements) == data
        for _, _, value in elements:
            try:
                n = tlv.decode_nni(value)
            except tlv.NdnDecodeError:
                continue
            assert tlv.decode_nni(tlv.encode_nni(n)) == n
    framer = TlvFramer(max_packet_bytes=1 << 20)
    got = []
    try:
        for i in range(0, len(data), 7):
            got += framer.feed(data[i : i + 7])
    except tlv.NdnDecodeError:
        assert elements is None, "the framer refused elements read_tl accepts"
        return False
    if elements is not None:
        assert got == [whole for _, whole, _ in elements] and framer.buffered == 0
    return elements is not None


def check_ndn_name(data: bytes) -> bool:
    """Name.from_wire(b) accepted => name.wire == b (canonical); its URI parses back to it;
    each component round-trips through Component.from_wire and Component.from_uri."""
    try:
        name = Name.from_wire(data)
        components = list(name)
    except tlv.NdnDecodeError:
        return False
    assert name.wire == data
    assert Name.from_uri(name.to_uri()) == name, name.to_uri()
    for c in components:
        assert Component.from_wire(c.wire) == c
        assert Component.from_uri(c.to_uri()) == c
    return True


def check_ndn_name_uri(data: bytes | str) -> bool:
    """Name(text) accepted => Name(name.to_uri()) == name and the name's wire decodes to
    it; any other text raises NdnDecodeError (bytes are read as UTF-8, invalid ones as
    lone surrogates, which a URI cannot hold)."""
    uri = data if isinstance(data, str) else data.decode("utf-8", "surrogateescape")
    try:
        name = Name(uri)
    except tlv.NdnDecodeError:
        return False
    assert Name(name.to_uri()) == name, name.to_uri()
    assert Name.from_wire(name.wire) == name
    return True


def _without_digest_value(name: Name) -> list:
    return [(c.type,) if c.type == ComponentType.PARAMETERS_SHA256_DIGEST else c for c in name]


def check_ndn_interest(data: bytes) -> bool:
    """Interest(b).validate() accepted => make_interest() given its fields builds an
    Interest that validates to the same fields (the ParametersSha256Digest value is
    recomputed, unknown non-critical elements are dropped, the signature is not
    redone); its InterestSignatureInfo round-trips; with_nonce, with_hop_limit and
    with_lifetime_ms change only their field."""
    try:
        interest = Interest(data).validate()
        name = interest.name
    except tlv.NdnDecodeError:
        return False
    fields = (
        interest.can_be_prefix,
        interest.must_be_fresh,
        interest.forwarding_hint,
        interest.nonce,
        interest.lifetime_ms,
        interest.hop_limit,
        interest.app_parameters,
    )
    rebuilt = make_interest(
        name,
        can_be_prefix=interest.can_be_prefix,
        must_be_fresh=interest.must_be_fresh,
        forwarding_hint=interest.forwarding_hint,
        nonce=interest.nonce,
        lifetime_ms=interest.lifetime_ms if interest.has_lifetime else None,
        hop_limit=interest.hop_limit,
        app_parameters=interest.app_parameters,
    )
    back = Interest(rebuilt.wire).validate()
    assert _without_digest_value(back.name) == _without_digest_value(name)
    assert (
        back.can_be_prefix,
        back.must_be_fresh,
        back.forwarding_hint,
        back.nonce,
        back.lifetime_ms,
        back.hop_limit,
        back.app_parameters,
    ) == fields
    assert back.parameters_digest_valid()
    info = interest.signature_info
    if info is not None:
        assert SignatureInfo.from_wire(info.encode(TT.INTEREST_SIGNATURE_INFO)) == info
    edited = interest.with_nonce(7).with_hop_limit(3).with_lifetime_ms(1000)
    edited = Interest(edited.wire).validate()
    assert (edited.nonce, edited.hop_limit, edited.lifetime_ms) == (7, 3, 1000)
    assert edited.name == name and edited.app_parameters == interest.app_parameters
    return True


def check_ndn_data(data: bytes) -> bool:
    """Data(b).validate() accepted => make_data() given its name, content and MetaInfo
    builds a Data that validates to the same name, content and MetaInfo (the
    signature is not redone); its SignatureInfo round-trips."""
    try:
        packet = Data(data).validate()
    except tlv.NdnDecodeError:
        return False
    meta = packet.meta_info
    rebuilt = make_data(
        packet.name,
        packet.content,
        content_type=meta.content_type,
        freshness_period_ms=meta.freshness_period_ms,
        final_block_id=meta.final_block_id,
    )
    back = Data(rebuilt.wire).validate()
    assert (back.name, back.content, back.meta_info) == (packet.name, packet.content, meta)
    info = packet.signature_info
    assert SignatureInfo.from_wire(info.encode()) == info
    return True


def check_ndn_lp(data: bytes) -> bool:
    """LpPacket.decode(b) accepted => LpPacket.decode(p.encode()) == p (the encoder writes
    Sequence, Ack and TxSequence in 8 bytes and NonNegativeIntegers in the shortest
    form, and drops the header fields NDNLPv2 lets a receiver ignore)."""
    try:
        packet = LpPacket.decode(data)
    except tlv.NdnDecodeError:
        return False
    again = LpPacket.decode(packet.encode())
    assert again == packet, f"re-decoded {again!r}"
    return True


def check_ndn_fragment(data: bytes) -> bool:
    """FragmentHeader.decode(b) accepted => its encode() is b[:3] (the header has one
    encoding: the reserved bit must be 0) and decodes back to the same header."""
    try:
        header = ndn_frag.FragmentHeader.decode(data)
    except ndn_frag.FragmentError:
        return False
    assert header.encode() == data[:3]
    assert ndn_frag.FragmentHeader.decode(header.encode() + data[3:]) == header
    return True


def check_hopp(data: bytes) -> bool:
    """hopp.decode(b) accepted => its message re-encodes to bytes that decode to the
    same message (a NAM drops TLVs of unused types, so the bytes may be shorter)."""
    try:
        message = hopp.decode(data)
    except hopp.HoppDecodeError:
        return False
    wire = message.encode()
    assert hopp.decode(wire) == message
    if not isinstance(message, hopp.Nam):
        assert wire == data, f"re-encoded {wire.hex()}"
    return True


_FC_NOT_KEPT = 0x0010 | 0x0380 | 0x3000


def check_802154(data: bytes) -> bool:
    """decode(b) accepted => a data frame: encode(f) is b but for the frame control bits
    f does not keep (Frame Pending, reserved, version) and the FCS that follows from
    them, so decode(encode(f)) == f; an acknowledgment: decode(encode_ack(seq,
    frame_pending)) == ack."""
    try:
        frame = ieee802154.decode(data)
    except ieee802154.MacDecodeError:
        return False
    if isinstance(frame, ieee802154.Ack):
        again = ieee802154.decode(ieee802154.encode_ack(frame.seq, frame.frame_pending))
    else:
        wire = ieee802154.encode(frame)
        fc, fc2 = struct.unpack_from("<H", data)[0], struct.unpack_from("<H", wire)[0]
        assert fc & ~_FC_NOT_KEPT == fc2 & ~_FC_NOT_KEPT, f"frame control {fc:#06x} -> {fc2:#06x}"
        assert wire[2:-2] == data[2:-2], f"re-encoded {wire.hex()}"
        again = ieee802154.decode(wire)
    assert again == frame, f"re-decoded {again!r}"
    return True


LOWPAN_MACS = (
    bytes.fromhex("0200000000000001"),
    bytes.fromhex("0001"),
    bytes.fromhex("1122334455667788"),
    bytes.fromhex("fffe"),
)


LOWPAN_CONTEXTS = {0: bytes.fromhex("fd00000000000000"), 5: bytes.fromhex("20010db800010000")}


def lowpan_macs(selector: int) -> tuple[bytes, bytes]:
    return LOWPAN_MACS[selector & 3], LOWPAN_MACS[(selector >> 2) & 3]


def check_lowpan(data: bytes) -> bool:
    """Input: a byte choosing the link-layer addresses, then a 6LoWPAN packet.
    decompress(b) accepted => for both modes (IPHC and uncompressed),
    decompress(compress(packet)) == packet (several encodings of one header exist,
    RFC 6282 3.1.1: the values, not the bytes, must agree)."""
    if not data:
        return False
    src_mac, dst_mac = lowpan_macs(data[0])
    try:
        packet = lowpan.decompress(data[1:], src_mac, dst_mac, contexts=LOWPAN_CONTEXTS)
    except lowpan.LowpanDecodeError:
        return False
    for mode in ("iphc", "none"):
        c = lowpan.compress(packet, src_mac, dst_mac, mode=mode, contexts=LOWPAN_CONTEXTS)
        again = lowpan.decompress(c.header + c.payload, src_mac, dst_mac, contexts=LOWPAN_CONTEXTS)
        assert again == packet, f"{mode}: re-decompressed {again.hex()}"
        assert len(c.header) == c.ip_header_len + c.transport_header_len
    return True


def check_lowpan_fragment(data: bytes) -> bool:
    """parse_fragment_header(b) accepted => frag1_header/fragn_header of its fields is
    b[:header length] (RFC 4944 5.3: one encoding per header) and parses back equal."""
    try:
        h = lowpan_frag.parse_fragment_header(data)
    except lowpan.LowpanDecodeError:
        return False
    if h.first:
        wire = lowpan_frag.frag1_header(h.size, h.tag)
    else:
        wire = lowpan_frag.fragn_header(h.size, h.tag, h.offset)
    assert wire == data[: h.length]
    assert lowpan_frag.parse_fragment_header(wire) == h
    return True


def check_rpl(data: bytes) -> bool:
    """Input: the ICMPv6 code, then the body. decode(code, body) accepted =>
    encode(m) gives the same code and decode(*encode(m)) == m (re-encoding drops
    padding and the options RPL says to skip, and puts DIO options in one order)."""
    if not data:
        return False
    try:
        message = rpl.decode(data[0], data[1:])
    except rpl.RplDecodeError:
        return False
    code, body = rpl.encode(message)
    assert code == data[0]
    again = rpl.decode(code, body)
    assert again == message, f"re-decoded {again!r}"
    return True


ICMP_SRC = ip.address_bytes("fe80::1")


ICMP_DST = ip.address_bytes("ff02::1a")


def check_icmpv6(data: bytes) -> bool:
    """parse_icmpv6(m) accepted => parse_icmpv6(build_icmpv6(type, code, body)) gives the
    same (type, code, body) (the bytes may differ: a checksum of 0x0000 and 0xFFFF both
    verify)."""
    try:
        parsed = icmpv6.parse_icmpv6(data, ICMP_SRC, ICMP_DST)
    except icmpv6.Icmpv6DecodeError:
        return False
    wire = icmpv6.build_icmpv6(ICMP_SRC, ICMP_DST, *parsed)
    assert icmpv6.parse_icmpv6(wire, ICMP_SRC, ICMP_DST) == parsed
    return True


def check_ipv4(data: bytes) -> bool:
    """parse_ipv4(b) accepted => build_ipv4() of its fields and payload parses (with the
    checksum verified) to the same fields, but for the header length (options are
    not rebuilt) and the total length that follows from it."""
    try:
        h = ip.parse_ipv4(data)
    except ip.IpDecodeError:
        return False
    try:
        ip.parse_ipv4(data, verify=True)
    except ip.IpDecodeError:
        pass
    payload = data[h.header_len : h.total_len]
    wire = ip.build_ipv4(
        h.src,
        h.dst,
        h.proto,
        payload,
        h.ident,
        ttl=h.ttl,
        tos=data[1],
        dont_fragment=h.dont_fragment,
        more_fragments=h.more_fragments,
        frag_offset=h.frag_offset,
    )
    again = ip.parse_ipv4(wire, verify=True)
    assert again == h._replace(header_len=20, total_len=20 + len(payload)), again
    assert wire[1] == data[1]
    return True


def check_ipv6(data: bytes) -> bool:
    """parse_ipv6(b) accepted => the same header rebuilt with build_ipv6 (with the RFC 8200
    4.5 Fragment header, reserved fields zero, before the payload when b had one)
    parses to the same fields, with the same version, traffic class and flow label."""
    try:
        h = ip.parse_ipv6(data)
    except ip.IpDecodeError:
        return False
    first = struct.unpack_from("!I", data)[0]
    payload = data[h.header_len : h.header_len + h.payload_len]
    if h.fragmented:
        payload = (
            struct.pack("!BBHI", h.next_header, 0, h.frag_offset | h.more_fragments, h.ident)
            + payload
        )
    wire = ip.build_ipv6(
        h.src,
        h.dst,
        ip.IPPROTO_IPV6_FRAGMENT if h.fragmented else h.next_header,
        payload,
        hop_limit=h.hop_limit,
        traffic_class=(first >> 20) & 0xFF,
        flow_label=first & 0xFFFFF,
    )
    again = ip.parse_ipv6(wire)
    assert again == h, again
    assert wire[:4] == data[:4]
    return True


V4_A, V4_B = ip.address_bytes("10.0.0.1"), ip.address_bytes("192.168.1.2")
V6_A, V6_B = ip.address_bytes("fd00::1"), ip.address_bytes("2001:db8::2")


def udp_addresses(selector: int) -> tuple[bytes, bytes]:
    return (V4_A, V4_B) if selector & 1 else (V6_A, V6_B)


def check_udp(data: bytes) -> bool:
    """Input: a byte choosing IPv4 or IPv6 addresses, then the datagram.
    parse_udp(b) accepted (checksum verified or not) => parse_udp(build_udp(ports,
    payload), verify=True) gives the same ports and payload."""
    if not data:
        return False
    src, dst = udp_addresses(data[0])
    accepted = False
    for verify in (False, True):
        try:
            parsed = ip.parse_udp(data[1:], src, dst, verify=verify)
        except ip.IpDecodeError:
            continue
        accepted = True
        wire = ip.build_udp(src, dst, *parsed)
        assert ip.parse_udp(wire, src, dst, verify=True) == parsed
    return accepted
