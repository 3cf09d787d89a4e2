"""IPv4, IPv6 and UDP on the wire: exact bytes, checksums, fragmentation, decode errors."""

from __future__ import annotations

import struct

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from iotbench.net import ip
from iotbench.net.ip import IpDecodeError
from iotbench.net.reassembly import Reassembler
from iotbench.proto.errors import DecodeError

V4_A = ip.address_bytes("10.0.0.1")
V4_B = ip.address_bytes("10.0.0.2")
V6_A = ip.address_bytes("fd00::1")
V6_B = ip.address_bytes("fd00::2")


def ref_checksum(data: bytes) -> int:
    """Plain RFC 1071 checksum, independent of the module under test."""
    if len(data) % 2:
        data += b"\x00"
    total = 0
    for i in range(0, len(data), 2):
        total += (data[i] << 8) | data[i + 1]
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ref_udp_checksum(src: bytes, dst: bytes, segment: bytes) -> int:
    """UDP checksum over the pseudo-header, with the segment's checksum field zeroed."""
    zeroed = segment[:6] + b"\x00\x00" + segment[8:]
    if len(src) == 4:
        pseudo = src + dst + bytes([0, 17]) + len(segment).to_bytes(2, "big")
    else:
        pseudo = src + dst + len(segment).to_bytes(4, "big") + bytes([0, 0, 0, 17])
    ck = ref_checksum(pseudo + zeroed)
    return ck or 0xFFFF


# ----------------------------------------------------------------- hand-written vectors

# 10.0.0.1:49152 -> 10.0.0.2:5683, ident 0x1234, TTL 64, payload "hello".
# IPv4 header sum 4500+0021+1234+0000+4011+0a00+0001+0a00+0002 = 0xab69 -> ~ = 0x5496.
# UDP sum 0a00+0001+0a00+0002+0011+000d (pseudo) + c000+1633+000d + 6865+6c6c+6f00
#   = 0x2e34 after folding -> ~ = 0xd1cb.
IPV4_UDP_HELLO = bytes.fromhex(
    "4500 0021 1234 0000 4011 5496 0a00 0001 0a00 0002"  # IPv4 header, checksum 5496
    "c000 1633 000d d1cb"  # UDP: ports 49152 -> 5683, length 13, checksum d1cb
    "6865 6c6c 6f"  # hello
)

# fd00::1:49152 -> fd00::2:5683, hop limit 64, payload "hello".
# UDP sum fd00+0001+fd00+0002+000d+0011 (pseudo) + c000+1633+000d + 6865+6c6c+6f00
#   = 0x41432 -> folded 0x1436 -> ~ = 0xebc9.
IPV6_UDP_HELLO = bytes.fromhex(
    "6000 0000 000d 11 40"  # version 6, payload length 13, next header UDP, hop limit 64
    "fd00 0000 0000 0000 0000 0000 0000 0001"  # source
    "fd00 0000 0000 0000 0000 0000 0000 0002"  # destination
    "c000 1633 000d ebc9"  # UDP: ports 49152 -> 5683, length 13, checksum ebc9
    "6865 6c6c 6f"  # hello
)


def test_ipv4_udp_vector_is_built_exactly():
    segment = ip.build_udp(V4_A, V4_B, 49152, 5683, b"hello")
    assert ip.build_ipv4(V4_A, V4_B, ip.IPPROTO_UDP, segment, 0x1234) == IPV4_UDP_HELLO
    # The vector's checksums agree with the independent reference too.
    assert ref_checksum(IPV4_UDP_HELLO[:20]) == 0
    assert ref_udp_checksum(V4_A, V4_B, IPV4_UDP_HELLO[20:]) == 0xD1CB


def test_ipv6_udp_vector_is_built_exactly():
    segment = ip.build_udp(V6_A, V6_B, 49152, 5683, b"hello")
    assert ip.build_ipv6(V6_A, V6_B, ip.IPPROTO_UDP, segment) == IPV6_UDP_HELLO
    assert ref_udp_checksum(V6_A, V6_B, IPV6_UDP_HELLO[40:]) == 0xEBC9


def test_ipv4_udp_vector_parses():
    h = ip.parse_ipv4(IPV4_UDP_HELLO, verify=True)
    assert h == ip.IPv4Header(20, 33, 0x1234, False, False, 0, 64, 17, V4_A, V4_B)
    assert ip.parse_udp(IPV4_UDP_HELLO[20:], V4_A, V4_B, verify=True) == (49152, 5683, b"hello")


def test_ipv6_udp_vector_parses():
    h = ip.parse_ipv6(IPV6_UDP_HELLO)
    assert h == ip.IPv6Header(40, 13, 17, 64, V6_A, V6_B, False, 0, False, 0)
    assert ip.parse_udp(IPV6_UDP_HELLO[40:], V6_A, V6_B, verify=True) == (49152, 5683, b"hello")


def test_addresses_round_trip():
    assert ip.address_bytes("10.0.0.1") == b"\x0a\x00\x00\x01"
    assert ip.address_bytes("fd00::2") == b"\xfd" + b"\x00" * 14 + b"\x02"
    assert ip.address_text(V4_B) == "10.0.0.2"
    assert ip.address_text(V6_A) == "fd00::1"


def test_error_type_is_a_decode_error():
    assert issubclass(IpDecodeError, DecodeError)
    assert issubclass(IpDecodeError, ValueError)


# ----------------------------------------------------------------- round trips

addr4 = st.binary(min_size=4, max_size=4)
addr6 = st.binary(min_size=16, max_size=16)
port = st.integers(0, 0xFFFF)


@settings(max_examples=150, deadline=None)
@given(
    addr4,
    addr4,
    st.integers(0, 255),
    st.binary(max_size=600),
    st.integers(0, 0xFFFF),
    st.integers(0, 255),
    st.integers(0, 255),
    st.booleans(),
)
def test_ipv4_round_trip(src, dst, proto, payload, ident, ttl, tos, df):
    pkt = ip.build_ipv4(src, dst, proto, payload, ident, ttl=ttl, tos=tos, dont_fragment=df)
    assert len(pkt) == 20 + len(payload)
    assert pkt[1] == tos
    assert ref_checksum(pkt[:20]) == 0
    h = ip.parse_ipv4(pkt, verify=True)
    assert h == ip.IPv4Header(20, 20 + len(payload), ident, df, False, 0, ttl, proto, src, dst)
    assert pkt[h.header_len : h.total_len] == payload


@settings(max_examples=150, deadline=None)
@given(
    addr6,
    addr6,
    st.integers(0, 255).filter(lambda n: n != ip.IPPROTO_IPV6_FRAGMENT),
    st.binary(max_size=600),
    st.integers(0, 255),
    st.integers(0, 255),
    st.integers(0, 0xFFFFF),
)
def test_ipv6_round_trip(src, dst, proto, payload, hops, tclass, flow):
    pkt = ip.build_ipv6(
        src, dst, proto, payload, hop_limit=hops, traffic_class=tclass, flow_label=flow
    )
    assert len(pkt) == 40 + len(payload)
    assert struct.unpack("!I", pkt[:4])[0] == (6 << 28) | (tclass << 20) | flow
    h = ip.parse_ipv6(pkt)
    assert h == ip.IPv6Header(40, len(payload), proto, hops, src, dst, False, 0, False, 0)
    assert pkt[40 : 40 + h.payload_len] == payload


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.tuples(addr4, addr4), st.tuples(addr6, addr6)), port, port, st.binary(max_size=700)
)
def test_udp_round_trip_and_checksum_matches_reference(addrs, sport, dport, payload):
    src, dst = addrs
    seg = ip.build_udp(src, dst, sport, dport, payload)
    assert len(seg) == 8 + len(payload)
    assert struct.unpack("!HHHH", seg[:8])[:3] == (sport, dport, 8 + len(payload))
    assert struct.unpack("!H", seg[6:8])[0] == ref_udp_checksum(src, dst, seg)
    assert ip.parse_udp(seg, src, dst, verify=True) == (sport, dport, payload)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(st.tuples(addr4, addr4), st.tuples(addr6, addr6)),
    port,
    port,
    st.binary(min_size=1, max_size=200),
    st.data(),
)
def test_udp_flipped_bit_fails_verification(addrs, sport, dport, payload, data):
    # A single flipped bit changes the one's complement sum by 2**k (never 0 mod 0xffff),
    # so it is always detected. The length field is left alone: changing it changes
    # which bytes are covered (tested separately).
    src, dst = addrs
    seg = bytearray(ip.build_udp(src, dst, sport, dport, payload))
    positions = [i for i in range(len(seg)) if i not in (4, 5)]
    byte = data.draw(st.sampled_from(positions))
    seg[byte] ^= 1 << data.draw(st.integers(0, 7))
    assume(not (len(src) == 4 and seg[6:8] == b"\x00\x00"))  # IPv4: zero = no checksum
    with pytest.raises(IpDecodeError):
        ip.parse_udp(bytes(seg), src, dst, verify=True)


def test_udp_checksum_over_wrong_addresses_fails():
    seg = ip.build_udp(V4_A, V4_B, 1, 2, b"data")
    with pytest.raises(IpDecodeError, match="checksum"):
        ip.parse_udp(seg, V4_A, ip.address_bytes("10.0.0.3"), verify=True)
    # Without verify the same bytes parse.
    assert ip.parse_udp(seg, V4_A, ip.address_bytes("10.0.0.3")) == (1, 2, b"data")


@pytest.mark.parametrize("src,dst", [(V4_A, V4_B), (V6_A, V6_B)])
def test_computed_zero_checksum_is_sent_as_all_ones(src, dst):
    # Choose a two-byte payload that makes the one's complement sum exactly 0xffff,
    # so the computed checksum is 0, which RFC 768 sends as 0xffff.
    sport, dport, length = 1000, 2000, 10
    header = struct.pack("!HHHH", sport, dport, length, 0)
    if len(src) == 4:
        pseudo = src + dst + bytes([0, 17]) + length.to_bytes(2, "big")
    else:
        pseudo = src + dst + length.to_bytes(4, "big") + bytes([0, 0, 0, 17])
    folded_sum = ~ref_checksum(pseudo + header) & 0xFFFF
    payload = (0xFFFF - folded_sum).to_bytes(2, "big")
    assert ref_checksum(pseudo + header + payload) == 0
    seg = ip.build_udp(src, dst, sport, dport, payload)
    assert seg[6:8] == b"\xff\xff"
    assert ip.parse_udp(seg, src, dst, verify=True) == (sport, dport, payload)


def test_zero_checksum_field_means_none_for_ipv4_but_is_an_error_for_ipv6():
    seg4 = ip.build_udp(V4_A, V4_B, 7, 9, b"abc")
    no_ck4 = seg4[:6] + b"\x00\x00" + seg4[8:]
    assert ip.parse_udp(no_ck4, V4_A, V4_B, verify=True) == (7, 9, b"abc")
    seg6 = ip.build_udp(V6_A, V6_B, 7, 9, b"abc")
    no_ck6 = seg6[:6] + b"\x00\x00" + seg6[8:]
    with pytest.raises(IpDecodeError, match="IPv6"):
        ip.parse_udp(no_ck6, V6_A, V6_B, verify=True)


def test_udp_length_field_bounds_the_payload():
    seg = ip.build_udp(V4_A, V4_B, 7, 9, b"abc")
    # Trailing bytes beyond the UDP length (e.g. link padding) are not payload.
    assert ip.parse_udp(seg + b"\x00\x00", V4_A, V4_B, verify=True) == (7, 9, b"abc")


# ----------------------------------------------------------------- IPv4 fragmentation


def _v4_datagram(payload_len: int, ident: int = 0xBEEF) -> tuple[bytes, bytes]:
    payload = bytes(i * 7 % 251 for i in range(payload_len))
    seg = ip.build_udp(V4_A, V4_B, 40000, 40001, payload)
    return ip.build_ipv4(V4_A, V4_B, ip.IPPROTO_UDP, seg, ident), seg


def test_ipv4_fragmentation_to_mtu_128():
    pkt, seg = _v4_datagram(1000)  # IP payload 1008 bytes
    frags = ip.fragment_ipv4(pkt, 128)
    # (128 - 20) // 8 * 8 = 104 data bytes per fragment: 9 full ones and 72 left.
    assert [len(f) for f in frags] == [124] * 9 + [92]
    body = b""
    for i, frag in enumerate(frags):
        assert len(frag) <= 128
        assert ref_checksum(frag[:20]) == 0  # every fragment's header checksum is valid
        h = ip.parse_ipv4(frag, verify=True)
        assert h.frag_offset == 104 * i
        assert h.frag_offset % 8 == 0
        assert h.more_fragments == (i < len(frags) - 1)
        assert (h.ident, h.proto, h.src, h.dst, h.ttl) == (0xBEEF, 17, V4_A, V4_B, 64)
        assert h.total_len == len(frag)
        assert h.frag_offset == len(body)
        body += frag[20:]
    assert body == seg
    # Raw flag/offset words as they are on the wire: MF = 0x2000, offset in 8-byte units.
    assert struct.unpack("!H", frags[0][6:8])[0] == 0x2000
    assert struct.unpack("!H", frags[1][6:8])[0] == 0x2000 | 13
    assert struct.unpack("!H", frags[-1][6:8])[0] == 117


def test_ipv4_fragments_reassemble_in_any_order():
    pkt, seg = _v4_datagram(1000)
    frags = ip.fragment_ipv4(pkt, 128)
    r = Reassembler()
    out = []
    for frag in reversed(frags):
        h = ip.parse_ipv4(frag)
        whole = r.add(
            0.0,
            (h.src, h.dst, h.proto, h.ident),
            h.frag_offset,
            h.more_fragments,
            frag[20 : h.total_len],
        )
        if whole is not None:
            out.append(whole)
    assert out == [seg]
    assert len(r) == 0


def test_ipv4_small_datagram_is_not_fragmented():
    pkt, _ = _v4_datagram(100)
    assert ip.fragment_ipv4(pkt, 128) == [pkt]
    assert ip.fragment_ipv4(pkt, len(pkt)) == [pkt]


def test_ipv4_exact_multiple_has_no_empty_last_fragment():
    pkt, _seg = _v4_datagram(208 - 8)  # IP payload exactly 2 * 104
    frags = ip.fragment_ipv4(pkt, 128)
    assert [len(f) for f in frags] == [124, 124]
    assert [ip.parse_ipv4(f).more_fragments for f in frags] == [True, False]


def test_refragmenting_a_fragment_keeps_more_fragments_set():
    pkt, _ = _v4_datagram(1000)
    second = ip.fragment_ipv4(pkt, 128)[1]  # offset 104, MF set, 104 data bytes
    pieces = ip.fragment_ipv4(second, 60)  # 40 data bytes each
    hs = [ip.parse_ipv4(p, verify=True) for p in pieces]
    assert [h.frag_offset for h in hs] == [104, 144, 184]
    assert [h.total_len - 20 for h in hs] == [40, 40, 24]
    assert all(h.more_fragments for h in hs)
    assert b"".join(p[20:] for p in pieces) == second[20:]


def test_ipv4_dont_fragment_and_tiny_mtu_are_refused():
    seg = ip.build_udp(V4_A, V4_B, 1, 2, bytes(200))
    df = ip.build_ipv4(V4_A, V4_B, 17, seg, 1, dont_fragment=True)
    with pytest.raises(ValueError, match="DF"):
        ip.fragment_ipv4(df, 128)
    pkt = ip.build_ipv4(V4_A, V4_B, 17, seg, 1)
    with pytest.raises(ValueError):
        ip.fragment_ipv4(pkt, 27)  # 7 bytes of room: less than one 8-byte unit


def test_ipv4_builder_rejects_bad_arguments():
    with pytest.raises(ValueError):
        ip.build_ipv4(V4_A, V4_B, 17, b"", 0, frag_offset=12)
    with pytest.raises(ValueError):
        ip.build_ipv4(V4_A, V4_B, 17, bytes(65516), 0)
    assert len(ip.build_ipv4(V4_A, V4_B, 17, bytes(65515), 0)) == 65535


# ----------------------------------------------------------------- IPv6 fragmentation


def test_ipv6_source_fragmentation_with_fragment_header():
    payload = bytes(i % 256 for i in range(1000))
    seg = ip.build_udp(V6_A, V6_B, 40000, 40001, payload)  # 1008 bytes
    pkt = ip.build_ipv6(V6_A, V6_B, 17, seg, hop_limit=9, traffic_class=0xB8, flow_label=0x12345)
    frags = ip.fragment_ipv6(pkt, 128, ident=0xCAFEF00D)
    # (128 - 40 - 8) // 8 * 8 = 80 data bytes per fragment: 12 full, 48 left.
    assert [len(f) for f in frags] == [128] * 12 + [96]
    body = b""
    for i, frag in enumerate(frags):
        assert frag[:4] == pkt[:4]  # version, traffic class and flow label kept
        assert frag[6] == ip.IPPROTO_IPV6_FRAGMENT
        assert struct.unpack("!H", frag[4:6])[0] == len(frag) - 40
        # Fragment header: next header, reserved, offset << 3 | M, identification.
        nxt, reserved, off_m, ident = struct.unpack("!BBHI", frag[40:48])
        assert (nxt, reserved, ident) == (17, 0, 0xCAFEF00D)
        assert off_m == (80 * i) | (1 if i < 12 else 0)
        h = ip.parse_ipv6(frag)
        assert h == ip.IPv6Header(
            48, len(frag) - 48, 17, 9, V6_A, V6_B, True, 0xCAFEF00D, i < 12, 80 * i
        )
        assert h.frag_offset == len(body)
        body += frag[48:]
    assert body == seg


def test_ipv6_small_packet_is_not_fragmented():
    pkt = ip.build_ipv6(V6_A, V6_B, 17, bytes(80))
    assert ip.fragment_ipv6(pkt, 128, 1) == [pkt]
    with pytest.raises(ValueError):
        ip.fragment_ipv6(ip.build_ipv6(V6_A, V6_B, 17, bytes(100)), 55, 1)


# ----------------------------------------------------------------- decode errors


@pytest.mark.parametrize("cut", range(len(IPV4_UDP_HELLO)))
def test_truncated_ipv4_raises_decode_error(cut):
    with pytest.raises(IpDecodeError):
        ip.parse_ipv4(IPV4_UDP_HELLO[:cut])


@pytest.mark.parametrize("cut", range(len(IPV6_UDP_HELLO)))
def test_truncated_ipv6_raises_decode_error(cut):
    with pytest.raises(IpDecodeError):
        ip.parse_ipv6(IPV6_UDP_HELLO[:cut])


@pytest.mark.parametrize("cut", range(len(IPV4_UDP_HELLO) - 20))
def test_truncated_udp_raises_decode_error(cut):
    with pytest.raises(IpDecodeError):
        ip.parse_udp(IPV4_UDP_HELLO[20 : 20 + cut], V4_A, V4_B)


def _patched(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new) :]


@pytest.mark.parametrize(
    "bad,match",
    [
        (_patched(IPV4_UDP_HELLO, 0, b"\x65"), "version"),
        (_patched(IPV4_UDP_HELLO, 0, b"\x44"), "IHL"),
        (_patched(IPV4_UDP_HELLO, 0, b"\x4f"), "total length"),  # IHL 60 > total 33
        (_patched(IPV4_UDP_HELLO, 2, b"\x00\x13"), "total length"),  # 19 < header
        (_patched(IPV4_UDP_HELLO, 2, b"\x00\x22"), "total length"),  # 34 > 33 bytes
        (_patched(IPV4_UDP_HELLO, 6, b"\x80\x00"), "reserved"),
    ],
)
def test_malformed_ipv4_headers(bad, match):
    with pytest.raises(IpDecodeError, match=match):
        ip.parse_ipv4(bad)


def test_ipv4_options_are_skipped_by_header_length():
    # IHL 6 (24 bytes) is legal and fits in 33 bytes; only the checksum is now stale.
    bad = _patched(IPV4_UDP_HELLO, 0, b"\x46")
    assert ip.parse_ipv4(bad).header_len == 24
    with pytest.raises(IpDecodeError, match="checksum"):
        ip.parse_ipv4(bad, verify=True)


def test_ipv4_checksum_verified_only_on_request():
    bad = _patched(IPV4_UDP_HELLO, 8, b"\x3f")  # TTL changed, checksum stale
    assert ip.parse_ipv4(bad).ttl == 0x3F
    with pytest.raises(IpDecodeError, match="checksum"):
        ip.parse_ipv4(bad, verify=True)


def test_malformed_ipv6_headers():
    with pytest.raises(IpDecodeError, match="version"):
        ip.parse_ipv6(_patched(IPV6_UDP_HELLO, 0, b"\x40"))
    with pytest.raises(IpDecodeError, match="payload length"):
        ip.parse_ipv6(_patched(IPV6_UDP_HELLO, 4, b"\x00\x0e"))
    # Next header "Fragment" with fewer than 8 payload bytes.
    short = ip.build_ipv6(V6_A, V6_B, ip.IPPROTO_IPV6_FRAGMENT, b"\x11\x00\x00")
    with pytest.raises(IpDecodeError, match="Fragment"):
        ip.parse_ipv6(short)


def test_malformed_udp_length():
    seg = IPV4_UDP_HELLO[20:]
    with pytest.raises(IpDecodeError):
        ip.parse_udp(_patched(seg, 4, b"\x00\x07"))  # below the header size
    with pytest.raises(IpDecodeError):
        ip.parse_udp(_patched(seg, 4, b"\x00\x0e"))  # beyond the bytes
