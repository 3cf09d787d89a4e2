"""6LoWPAN compression: byte vectors worked out from the RFC bit layouts, the choices
compress makes, round trips over many header combinations, and malformed input."""

from __future__ import annotations

import itertools

import pytest
from lowpan_helpers import (
    BROADCAST,
    CONTEXTS,
    MAC_A,
    MAC_B,
    PREFIX_DB8,
    SHORT_A,
    SHORT_B,
    addr,
    icmpv6_echo,
    link_local,
    tcp_segment,
    udp_packet,
)

from iotbench.net import ip
from iotbench.net.lowpan import (
    Dispatch,
    LowpanDecodeError,
    classify,
    compress,
    decompress,
    interface_identifier,
    is_fragment,
    is_lowpan,
    is_lowpan_ipv6,
)
from iotbench.net.lowpan.codec import (
    check_contexts,
    compress_checked,
    decode_header,
    decode_header_checked,
    decompress_checked,
)
from iotbench.proto.errors import DecodeError


def hx(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# A few packets written out byte by byte. The UDP checksums are arbitrary
# (0xbeef): compression carries them as they are.

# fe80::ff:fe00:1 -> fe80::ff:fe00:2, UDP 5683 -> 5683, hop limit 64, "hi".
LINK_LOCAL_UDP = hx(
    "6000 0000 000a 11 40"  # version 6, TC 0, flow 0; payload 10; UDP; hop limit 64
    "fe80 0000 0000 0000 0000 00ff fe00 0001"
    "fe80 0000 0000 0000 0000 00ff fe00 0002"
    "1633 1633 000a beef"  # ports 5683, 5683; length 10; checksum
    "6869"
)


# --------------------------------------------------------------------------- vectors


def test_uncompressed_ipv6_dispatch_carries_the_header_as_is():
    # RFC 4944 5.1: 01000001 (0x41), then the 40-byte IPv6 header uncompressed.
    c = compress(LINK_LOCAL_UDP, MAC_A, MAC_B, mode="none")
    assert c.header == hx("41") + LINK_LOCAL_UDP[:48]
    assert c.payload == b"hi"
    assert (c.ip_header_len, c.transport_header_len, c.uncompressed_header_len) == (41, 8, 48)
    assert decompress(c.header + c.payload, MAC_A, MAC_B) == LINK_LOCAL_UDP


def test_uncompressed_dispatch_without_udp_keeps_the_rest_in_the_payload():
    packet = icmpv6_echo(link_local(MAC_A), link_local(MAC_B), 7, 1, b"ping")
    c = compress(packet, MAC_A, MAC_B, mode="none")
    assert c.header == b"\x41" + packet[:40]
    assert (c.ip_header_len, c.transport_header_len, c.uncompressed_header_len) == (41, 0, 40)
    assert c.payload == packet[40:]


def test_iphc_link_local_udp_elides_everything_but_ports_and_checksum():
    # IPHC base, RFC 6282 3.1.1:
    #   011 TF=11 NH=1 HLIM=10   -> 0111 1110 = 0x7e  (TC, flow elided; NHC; hop limit 64)
    #   CID=0 SAC=0 SAM=11 M=0 DAC=0 DAM=11 -> 0011 0011 = 0x33  (both IIDs from the MACs)
    # UDP NHC, RFC 6282 4.3.3: 11110 C=0 P=00 -> 0xf0, ports 1633 1633, checksum beef.
    c = compress(LINK_LOCAL_UDP, MAC_A, MAC_B)
    assert c.header == hx("7e33 f0 1633 1633 beef")
    assert c.payload == b"hi"
    assert (c.ip_header_len, c.transport_header_len, c.uncompressed_header_len) == (2, 7, 48)
    assert c.datagram_size == len(LINK_LOCAL_UDP)
    assert decompress(c.header + c.payload, MAC_A, MAC_B) == LINK_LOCAL_UDP


def test_iphc_with_everything_inline():
    # DSCP 46 (EF) and ECN 01: traffic class 1011 1001 = 0xb9; flow label 0x12345;
    # next header 59 (no next header); hop limit 3; global addresses, no context.
    packet = hx(
        "6b91 2345 0004 3b 03"
        "2001 0db8 0000 0000 0000 0000 0000 0001"
        "2001 0db8 0000 0000 0000 0000 0000 0002"
        "6162 6364"
    )
    # 011 TF=00 NH=0 HLIM=00 -> 0110 0000 = 0x60
    # CID=0 SAC=0 SAM=00 M=0 DAC=0 DAM=00 -> 0x00
    # TF=00 inline: ECN(2) DSCP(6) pad(4) flow(20)
    #   01 101110 0000 0001 0010 0011 0100 0101 = 6e 01 23 45
    expected = hx(
        "6000 6e012345 3b 03"
        "2001 0db8 0000 0000 0000 0000 0000 0001"
        "2001 0db8 0000 0000 0000 0000 0000 0002"
    )
    c = compress(packet, MAC_A, MAC_B)
    assert c.header == expected
    assert (c.ip_header_len, c.transport_header_len, c.uncompressed_header_len) == (40, 0, 40)
    assert c.payload == b"abcd"
    assert decompress(c.header + c.payload, MAC_A, MAC_B) == packet


def test_iphc_16_and_64_bit_iids_and_ecn_with_flow_label():
    # fe80::ff:fe00:1234 (not MAC_A's IID) -> SAM=10, 16 bits inline;
    # fe80::1 -> DAM=01, the 64-bit IID inline. Traffic class ECN=01 DSCP=0,
    # flow 0xabcde; ICMPv6 (58) inline; hop limit 255.
    packet = hx(
        "601a bcde 0004 3a ff"
        "fe80 0000 0000 0000 0000 00ff fe00 1234"
        "fe80 0000 0000 0000 0000 0000 0000 0001"
        "8000 0000"
    )
    # 011 TF=01 NH=0 HLIM=11 -> 0110 1011 = 0x6b
    # CID=0 SAC=0 SAM=10 M=0 DAC=0 DAM=01 -> 0010 0001 = 0x21
    # TF=01 inline: ECN(2) pad(2) flow(20) = 01 00 1010 1011 1100 1101 1110 = 4a bc de
    expected = hx("6b21 4abcde 3a 1234 0000000000000001")
    c = compress(packet, MAC_A, MAC_B)
    assert c.header == expected
    assert decompress(c.header + c.payload, MAC_A, MAC_B) == packet


def test_iphc_short_mac_addresses_and_4_bit_ports():
    # Short addresses 0x1234 and 0xabcd stand for IIDs 0000:00ff:fe00:1234 and
    # ...:abcd (RFC 6282 3.2.2), so both addresses are elided. DSCP 46, ECN 0,
    # flow 0 -> TF=10; hop limit 1 -> HLIM=01; ports 0xf0b1 -> 0xf0ba.
    packet = hx(
        "6b80 0000 0008 11 01"
        "fe80 0000 0000 0000 0000 00ff fe00 1234"
        "fe80 0000 0000 0000 0000 00ff fe00 abcd"
        "f0b1 f0ba 0008 beef"
    )
    # 011 TF=10 NH=1 HLIM=01 -> 0111 0101 = 0x75
    # CID=0 SAC=0 SAM=11 M=0 DAC=0 DAM=11 -> 0x33
    # TF=10 inline: ECN(2) DSCP(6) = 00 101110 = 0x2e
    # NHC 11110 C=0 P=11 = 0xf3, ports 1 and a in one byte: 0x1a
    c = compress(packet, SHORT_A, SHORT_B)
    assert c.header == hx("7533 2e f3 1a beef")
    assert (c.ip_header_len, c.transport_header_len) == (3, 4)
    assert c.payload == b""
    assert decompress(c.header, SHORT_A, SHORT_B) == packet


def test_iphc_all_nodes_multicast_and_8_bit_source_port():
    packet = hx(
        "6000 0000 0009 11 ff"
        "fe80 0000 0000 0000 0000 00ff fe00 0001"
        "ff02 0000 0000 0000 0000 0000 0000 0001"
        "f012 1633 0009 beef 21"
    )
    # 011 TF=11 NH=1 HLIM=11 -> 0x7f
    # CID=0 SAC=0 SAM=11 M=1 DAC=0 DAM=11 -> 0011 1011 = 0x3b; ff02::01 -> 01
    # NHC 11110 C=0 P=10 = 0xf2: source port's low 8 bits 12, destination 1633
    c = compress(packet, MAC_A, BROADCAST)
    assert c.header == hx("7f3b 01 f2 12 1633 beef")
    assert decompress(c.header + c.payload, MAC_A, BROADCAST) == packet


def test_iphc_context_based_addresses_and_8_bit_destination_port():
    packet = hx(
        "6000 0000 0008 11 40"
        "2001 0db8 0000 0000 0000 0000 0000 0001"  # context 0's prefix
        "2001 0db8 0000 0001 0000 00ff fe00 0005"  # context 3's prefix, 16-bit IID form
        "04d2 f0b5 0008 beef"
    )
    # 011 TF=11 NH=1 HLIM=10 -> 0x7e
    # CID=1 SAC=1 SAM=01 M=0 DAC=1 DAM=10 -> 1101 0110 = 0xd6
    # CID byte: SCI=0 DCI=3 -> 0x03; source IID inline (8), destination 16 bits
    # NHC 11110 C=0 P=01 = 0xf1: source port 04d2, destination's low byte b5
    c = compress(packet, MAC_A, MAC_B, contexts=CONTEXTS)
    assert c.header == hx("7ed6 03 0000000000000001 0005 f1 04d2 b5 beef")
    assert decompress(c.header, MAC_A, MAC_B, contexts=CONTEXTS) == packet


def test_iphc_context_with_iid_from_the_mac():
    packet = udp_packet(PREFIX_DB8 + interface_identifier(MAC_A), addr("2001:db8::2"), 1, 2)
    c = compress(packet, MAC_A, MAC_B, contexts={0: PREFIX_DB8})
    # Both addresses are in context 0, the default: no CID byte (CID=0).
    # Source IID from MAC_A: SAC=1 SAM=11; destination IID ::2 (not a 16-bit
    # form): DAC=1 DAM=01, 64 bits inline.
    # CID=0 SAC=1 SAM=11 M=0 DAC=1 DAM=01 -> 0111 0101 = 0x75
    assert c.header[:2] == hx("7e 75")
    assert c.header[2:10] == hx("0000000000000002")
    assert decompress(c.header + c.payload, MAC_A, MAC_B, contexts={0: PREFIX_DB8}) == packet


def test_iphc_unspecified_source_to_solicited_node_multicast():
    packet = hx(
        "6000 0000 0004 3a ff"
        "0000 0000 0000 0000 0000 0000 0000 0000"
        "ff02 0000 0000 0000 0000 0001 ff00 1234"
        "8700 0000"
    )
    # 011 TF=11 NH=0 HLIM=11 -> 0111 1011 = 0x7b
    # CID=0 SAC=1 SAM=00 (::) M=1 DAC=0 DAM=01 -> 0100 1001 = 0x49
    # inline: next header 3a, then ffXX::00XX:XXXX:XXXX as 02 01ff001234
    c = compress(packet, MAC_A, BROADCAST)
    assert c.header == hx("7b49 3a 02 01ff001234")
    assert decompress(c.header + c.payload, MAC_A, BROADCAST) == packet


def test_iphc_unicast_prefix_based_multicast_with_context():
    # RFC 3306 ff3e:0040:2001:db8::1234 - flags/scope 3e, reserved 00, plen 0x40,
    # prefix 2001:db8::/64 (context 0), group 0000:1234.
    packet = hx(
        "6000 0000 0008 11 40"
        "fe80 0000 0000 0000 0000 00ff fe00 0001"
        "ff3e 0040 2001 0db8 0000 0000 0000 1234"
        "1633 1633 0008 beef"
    )
    # 011 TF=11 NH=1 HLIM=10 -> 0x7e
    # CID=0 SAC=0 SAM=11 M=1 DAC=1 DAM=00 -> 0011 1100 = 0x3c
    # inline ffXX:XXLL:PPPP:PPPP:PPPP:PPPP:XXXX:XXXX -> 3e 00 | 0000 1234
    c = compress(packet, MAC_A, BROADCAST, contexts={0: PREFIX_DB8})
    assert c.header == hx("7e3c 3e00 00001234 f0 1633 1633 beef")
    assert decompress(c.header, MAC_A, BROADCAST, contexts={0: PREFIX_DB8}) == packet
    # Without the context, the address goes inline whole.
    assert compress(packet, MAC_A, BROADCAST).header[1] & 0b1111 == 0b1000


# --------------------------------------------------------------------------- choices


@pytest.mark.parametrize(
    ("group", "dam", "inline"),
    [
        ("ff02::1", 0b11, "01"),
        ("ff02::1a", 0b11, "1a"),
        ("ff02::2:1", 0b10, "02 020001"),
        ("ff1e::89:1", 0b10, "1e 890001"),
        ("ff05::1:3", 0b10, "05 010003"),
        ("ff02::1:ff00:1234", 0b01, "02 01ff001234"),
        ("ff0e::1234:5678:9abc", 0b00, "ff0e 0000 0000 0000 0000 1234 5678 9abc"),
    ],
)
def test_multicast_forms(group, dam, inline):
    packet = icmpv6_echo(link_local(MAC_A), addr(group), 1, 1, b"")
    c = compress(packet, MAC_A, BROADCAST)
    # Second IPHC byte: CID SAC SAM(2) M DAC DAM(2).
    assert c.header[1] & 0b1111 == 0b1000 | dam  # M=1, DAC=0
    # After the base: next header (3a), hop limit 64 is elided; source elided.
    assert c.header[2:] == hx("3a") + hx(inline)
    assert decompress(c.header + c.payload, MAC_A, BROADCAST) == packet


@pytest.mark.parametrize(
    ("hop_limit", "hlim", "inline"),
    [(1, 0b01, b""), (64, 0b10, b""), (255, 0b11, b""), (0, 0b00, b"\x00"), (128, 0b00, b"\x80")],
)
def test_hop_limit_forms(hop_limit, hlim, inline):
    packet = udp_packet(link_local(MAC_A), link_local(MAC_B), 1, 2, hop_limit=hop_limit)
    c = compress(packet, MAC_A, MAC_B)
    assert c.header[0] & 0b11 == hlim
    assert c.header[2 : 2 + len(inline)] == inline
    assert decompress(c.header + c.payload, MAC_A, MAC_B) == packet


@pytest.mark.parametrize(
    ("traffic_class", "flow", "tf", "inline"),
    [
        (0, 0, 0b11, ""),
        (0xB8, 0, 0b10, "2e"),  # DSCP 46 only
        (0x03, 0, 0b10, "c0"),  # ECN only, no flow label: TF=10 (1 byte) beats TF=01
        (0x02, 0xFFFFF, 0b01, "8f ffff"),  # ECN 10, pad, flow all ones
        (0x00, 1, 0b01, "00 0001"),
        (0xFF, 0xFFFFF, 0b00, "ff 0f ffff"),  # ECN 11 DSCP 111111, pad 0000
        (0x04, 0x80000, 0b00, "01 08 0000"),  # DSCP 1: ECN 00 DSCP 000001
    ],
)
def test_traffic_class_and_flow_label_forms(traffic_class, flow, tf, inline):
    packet = udp_packet(
        link_local(MAC_A), link_local(MAC_B), 1, 2, traffic_class=traffic_class, flow_label=flow
    )
    c = compress(packet, MAC_A, MAC_B)
    assert (c.header[0] >> 3) & 0b11 == tf
    assert c.header[2 : 2 + len(hx(inline))] == hx(inline)
    assert decompress(c.header + c.payload, MAC_A, MAC_B) == packet


@pytest.mark.parametrize(
    ("sport", "dport", "nhc"),
    [
        (0xF0B0, 0xF0BF, "f3 0f"),
        (0xF0BF, 0xF0B0, "f3 f0"),
        (0xF0B3, 0xF012, "f1 f0b3 12"),  # both 0xF0xx: the destination port is compressed
        (0xF0C0, 0xF0B1, "f1 f0c0 b1"),
        (5683, 0xF000, "f1 1633 00"),
        (0xF0FF, 5683, "f2 ff 1633"),
        (5683, 5684, "f0 1633 1634"),
        (0, 0xFFFF, "f0 0000 ffff"),
        (0xF100, 0xEFFF, "f0 f100 efff"),
    ],
)
def test_udp_port_forms(sport, dport, nhc):
    packet = udp_packet(link_local(MAC_A), link_local(MAC_B), sport, dport, b"data")
    c = compress(packet, MAC_A, MAC_B)
    checksum = packet[46:48]
    assert c.header[c.ip_header_len :] == hx(nhc) + checksum
    assert c.transport_header_len == len(hx(nhc)) + 2
    assert decompress(c.header + c.payload, MAC_A, MAC_B) == packet


def test_udp_whose_length_disagrees_stays_inline():
    # UDP NHC elides the length; a UDP header that says 9 bytes inside a
    # 10-byte payload would come back wrong, so it is carried inline (NH=0).
    packet = bytearray(LINK_LOCAL_UDP)
    packet[45] = 9
    c = compress(bytes(packet), MAC_A, MAC_B)
    assert c.header == hx("7a33 11") + bytes(packet[40:48])  # 011 11 0 10: NH=0
    assert (c.ip_header_len, c.transport_header_len, c.uncompressed_header_len) == (3, 8, 48)
    assert decompress(c.header + c.payload, MAC_A, MAC_B) == bytes(packet)


def test_udp_packet_too_short_for_a_udp_header_is_carried_as_payload():
    packet = ip.build_ipv6(link_local(MAC_A), link_local(MAC_B), ip.IPPROTO_UDP, b"\x01\x02")
    c = compress(packet, MAC_A, MAC_B)
    assert (c.transport_header_len, c.uncompressed_header_len, c.payload) == (0, 40, b"\x01\x02")
    assert decompress(c.header + c.payload, MAC_A, MAC_B) == packet


def test_link_local_prefix_must_be_exactly_fe80_64():
    # fe80:0:0:1::/64 is link-local scope but not the prefix IPHC elides.
    src = addr("fe80:0:0:1::ff:fe00:1")
    packet = udp_packet(src, link_local(MAC_B), 1, 2)
    c = compress(packet, MAC_A, MAC_B)
    assert c.header[1] >> 4 == 0b0000  # SAC=0 SAM=00: inline
    assert c.header[2:18] == src
    assert decompress(c.header + c.payload, MAC_A, MAC_B) == packet


def test_interface_identifier_derivation():
    assert interface_identifier(hx("0200 00ff fe00 0001")) == hx("0000 00ff fe00 0001")
    assert interface_identifier(hx("0012 4b00 0102 0304")) == hx("0212 4b00 0102 0304")
    assert interface_identifier(hx("beef")) == hx("0000 00ff fe00 beef")
    with pytest.raises(ValueError):
        interface_identifier(b"\x01\x02\x03")


def test_compress_rejects_what_it_cannot_represent():
    with pytest.raises(ValueError):
        compress(LINK_LOCAL_UDP[:39], MAC_A, MAC_B)
    with pytest.raises(ValueError):
        compress(LINK_LOCAL_UDP + b"x", MAC_A, MAC_B)  # payload length says 10, there are 11
    with pytest.raises(ValueError):
        compress(b"\x45" + LINK_LOCAL_UDP[1:], MAC_A, MAC_B)
    with pytest.raises(ValueError):
        compress(LINK_LOCAL_UDP, MAC_A, MAC_B, mode="hc1")
    with pytest.raises(ValueError):
        compress(LINK_LOCAL_UDP, MAC_A, MAC_B, contexts={16: PREFIX_DB8})
    with pytest.raises(ValueError):
        compress(LINK_LOCAL_UDP, MAC_A, MAC_B, contexts={1: PREFIX_DB8[:4]})
    with pytest.raises(ValueError):
        compress(LINK_LOCAL_UDP, MAC_A, b"\x01\x02\x03")


# --------------------------------------------------------------------------- round trips

GLOBAL_A = addr("2001:db8::1")
GLOBAL_B = addr("2001:db8:0:1::ff:fe00:2")
OTHER = addr("2001:db9::7")

SOURCES = {
    "link-local-mac": link_local(MAC_A),
    "link-local-16": addr("fe80::ff:fe00:beef"),
    "link-local-64": addr("fe80::1234:5678:9abc:def0"),
    "global-context-0": GLOBAL_A,
    "global-context-mac": PREFIX_DB8 + interface_identifier(MAC_A),
    "global-no-context": OTHER,
    "unspecified": bytes(16),
}
DESTINATIONS = {
    "link-local-mac": link_local(MAC_B),
    "link-local-64": addr("fe80::1"),
    "global-context-3": GLOBAL_B,
    "global-no-context": OTHER,
    "ff02::1": addr("ff02::1"),
    "ff02::1a": addr("ff02::1a"),
    "ff1e::89:1": addr("ff1e::89:1"),
    "ff02::1:ff00:1": addr("ff02::1:ff00:1"),
    "ff3e:40:2001:db8::1": addr("ff3e:40:2001:db8::1"),
    "ff15::abcd:ef01:2345": addr("ff15::abcd:ef01:2345"),
}


def _packets(src: bytes, dst: bytes) -> list[bytes]:
    return [
        udp_packet(src, dst, 5683, 5683, b"coap"),
        udp_packet(src, dst, 0xF0B1, 0xF0B2, b"", hop_limit=1),
        udp_packet(src, dst, 0xF055, 40000, bytes(100), traffic_class=0x2E, flow_label=5),
        tcp_segment(src, dst, 40000, 80, hop_limit=255),
        icmpv6_echo(src, dst, 1, 2, b"ping", hop_limit=17, traffic_class=1, flow_label=0xFFFFF),
    ]


@pytest.mark.parametrize("mode", ["iphc", "none"])
@pytest.mark.parametrize(("src_name", "dst_name"), list(itertools.product(SOURCES, DESTINATIONS)))
def test_round_trip(mode, src_name, dst_name):
    dst_mac = BROADCAST if DESTINATIONS[dst_name][0] == 0xFF else MAC_B
    for contexts in (None, CONTEXTS):
        for packet in _packets(SOURCES[src_name], DESTINATIONS[dst_name]):
            c = compress(packet, MAC_A, dst_mac, mode=mode, contexts=contexts)
            assert c.header[c.ip_header_len + c.transport_header_len :] == b""
            assert packet.endswith(c.payload)
            assert len(packet) == c.uncompressed_header_len + len(c.payload)
            back = decompress(c.header + c.payload, MAC_A, dst_mac, contexts=contexts)
            assert back == packet
            # What an interface and a reassembler call, with contexts checked once.
            checked = check_contexts(contexts)
            assert compress_checked(packet, MAC_A, dst_mac, mode, checked) == c
            wire = c.header + c.payload
            assert decompress_checked(wire, MAC_A, dst_mac, checked) == packet
            assert decode_header_checked(wire, MAC_A, dst_mac, checked) == decode_header(
                wire, MAC_A, dst_mac, contexts=contexts
            )


@pytest.mark.parametrize(("src_mac", "dst_mac"), [(SHORT_A, SHORT_B), (SHORT_A, MAC_B)])
def test_round_trip_with_short_addresses(src_mac, dst_mac):
    src = hx("fe80 0000 0000 0000") + interface_identifier(src_mac)
    dst = hx("fe80 0000 0000 0000") + interface_identifier(dst_mac)
    packet = udp_packet(src, dst, 5683, 61616, b"x")
    c = compress(packet, src_mac, dst_mac)
    assert c.header[:2] == hx("7e33")  # both addresses elided
    assert decompress(c.header + c.payload, src_mac, dst_mac) == packet


def test_compression_never_makes_a_header_longer_than_uncompressed():
    for src, dst in itertools.product(SOURCES.values(), DESTINATIONS.values()):
        for packet in _packets(src, dst):
            c = compress(packet, MAC_A, MAC_B, contexts=CONTEXTS)
            assert c.ip_header_len <= 41
            assert c.transport_header_len <= 8


# --------------------------------------------------------------------------- malformed input

IPHC_OK = compress(
    udp_packet(GLOBAL_A, GLOBAL_B, 1, 2, b"x", traffic_class=0xB9, flow_label=3, hop_limit=9),
    MAC_A,
    MAC_B,
    contexts=CONTEXTS,
).header


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "empty"),
        (hx("00 60"), "NALP"),
        (hx("3f 00"), "NALP"),
        (hx("40 00"), "ESC"),
        (hx("42 00"), "HC1"),
        (hx("50 01 7e33"), "BC0"),
        (hx("80 00 00 00"), "mesh"),
        (hx("c0 50 12 34") + LINK_LOCAL_UDP, "a FRAG1 is not for decompress"),
        (hx("e0 50 12 34 05"), "a FRAGN is not for decompress"),
        (hx("f8 00"), "reserved"),
        (hx("41") + LINK_LOCAL_UDP[:39], "short uncompressed header"),
        (hx("41 45") + LINK_LOCAL_UDP[1:], "IPv4 after the IPv6 dispatch"),
        (hx("41") + LINK_LOCAL_UDP + b"!", "payload length disagrees"),
        (hx("7e"), "half an IPHC base"),
        (hx("7e33 e0"), "extension header NHC"),
        (hx("7e33 f4 1633 1633"), "UDP checksum elided"),
        (hx("7e33 f8 00"), "reserved NHC"),
        (hx("7e33 f0 1633 16"), "truncated ports"),
        (hx("7e33 f0 1633 1633 be"), "truncated checksum"),
        (hx("7e33"), "NHC missing"),
        (hx("7eb3"), "CID byte missing"),
        (hx("7a33"), "next header missing"),
        (hx("7833 11"), "hop limit missing"),
        (hx("6033 11 40"), "flow label missing"),
        (hx("6833 11 40"), "ECN and flow label cut short"),
        (hx("7a13 11 0000"), "64-bit source IID cut short"),
        (hx("7a00 11") + bytes(20), "inline destination cut short"),
        (hx("7a37 11"), "DAC=1 DAM=11 without context 0"),
        (hx("7a34 11"), "M=0 DAC=1 DAM=00 is reserved"),
        (hx("7a3d 11"), "M=1 DAC=1 DAM=01 is reserved"),
        (hx("7a3e 11"), "M=1 DAC=1 DAM=10 is reserved"),
        (hx("7a3f 11"), "M=1 DAC=1 DAM=11 is reserved"),
        (hx("7a3c 11 0000 0000 0000"), "context multicast without context"),
        (hx("7a39 11 02 0000 00"), "48-bit multicast cut short"),
        (hx("7a3b 11"), "8-bit multicast missing"),
        (IPHC_OK[:-1], "cut short at the end"),
    ],
)
def test_malformed_input_raises_lowpan_decode_error(data, why):
    with pytest.raises(LowpanDecodeError):
        decompress(data, MAC_A, MAC_B)


def test_context_header_needs_its_contexts():
    assert decompress(IPHC_OK + b"x", MAC_A, MAC_B, contexts=CONTEXTS)
    with pytest.raises(LowpanDecodeError, match="context 3"):
        decompress(IPHC_OK + b"x", MAC_A, MAC_B, contexts={0: PREFIX_DB8})


def test_mac_of_the_wrong_size_fails_only_where_an_address_is_derived_from_it():
    c = compress(LINK_LOCAL_UDP, MAC_A, MAC_B)
    with pytest.raises(LowpanDecodeError):
        decompress(c.header + c.payload, b"", MAC_B)
    inline = compress(udp_packet(OTHER, GLOBAL_A, 1, 2), MAC_A, MAC_B)
    assert decompress(inline.header + inline.payload, b"", b"\x01\x02\x03")


def test_datagram_size_must_match_what_decompresses():
    c = compress(LINK_LOCAL_UDP, MAC_A, MAC_B)
    data = c.header + c.payload
    assert decompress(data, MAC_A, MAC_B, datagram_size=len(LINK_LOCAL_UDP)) == LINK_LOCAL_UDP
    for wrong in (len(LINK_LOCAL_UDP) - 1, len(LINK_LOCAL_UDP) + 1, 0):
        with pytest.raises(LowpanDecodeError):
            decompress(data, MAC_A, MAC_B, datagram_size=wrong)


def test_lowpan_decode_error_is_a_decode_error():
    assert issubclass(LowpanDecodeError, DecodeError)


# --------------------------------------------------------------------------- dispatch


@pytest.mark.parametrize(
    ("byte", "kind"),
    [
        (0x00, Dispatch.NALP),
        (0x05, Dispatch.NALP),  # an NDN Interest (TLV type 5) straight on 802.15.4
        (0x06, Dispatch.NALP),  # an NDN Data
        (0x3F, Dispatch.NALP),
        (0x40, Dispatch.ESC),
        (0x41, Dispatch.IPV6),
        (0x42, Dispatch.HC1),
        (0x43, Dispatch.RESERVED),
        (0x50, Dispatch.BC0),
        (0x5F, Dispatch.RESERVED),
        (0x60, Dispatch.IPHC),
        (0x7F, Dispatch.IPHC),
        (0x80, Dispatch.MESH),
        (0xBF, Dispatch.MESH),
        (0xC0, Dispatch.FRAG1),
        (0xC7, Dispatch.FRAG1),
        (0xC8, Dispatch.RESERVED),
        (0xE0, Dispatch.FRAGN),
        (0xE7, Dispatch.FRAGN),
        (0xE8, Dispatch.RESERVED),
        (0xFF, Dispatch.RESERVED),
    ],
)
def test_dispatch_table(byte, kind):
    assert classify(byte) is kind
    assert is_lowpan(byte) == (kind is not Dispatch.NALP)
    assert is_lowpan_ipv6(byte) == (kind in (Dispatch.IPV6, Dispatch.IPHC))
    assert is_fragment(byte) == (kind in (Dispatch.FRAG1, Dispatch.FRAGN))


def test_every_byte_has_exactly_one_meaning():
    from iotbench.net.lowpan.dispatch import DISPATCH_TABLE

    for byte in range(256):
        matches = [kind for mask, value, kind in DISPATCH_TABLE if byte & mask == value]
        assert len(matches) <= 1, (byte, matches)
        assert classify(byte) is (matches[0] if matches else Dispatch.RESERVED)
