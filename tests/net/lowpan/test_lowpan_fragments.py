"""6LoWPAN fragmentation: header vectors, how fragment() splits, and the Reassembler's
order independence, RFC 4944 5.3 rules, timeouts and bounds."""

from __future__ import annotations

import itertools
import random

import pytest
from lowpan_helpers import (
    BROADCAST,
    CONTEXTS,
    MAC_A,
    MAC_B,
    addr,
    icmpv6_echo,
    link_local,
    tcp_segment,
    udp_packet,
)

from iotbench.net.lowpan import LowpanDecodeError, Reassembler, compress, decompress, fragment
from iotbench.net.lowpan.fragments import (
    FragmentHeader,
    frag1_header,
    fragn_header,
    parse_fragment_header,
)

ROOM = 104  # an 802.15.4 frame's payload with 8-byte addresses and PAN ID compression


def hx(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def big_udp(size: int, **ipv6: int) -> bytes:
    data = bytes((i * 7) % 256 for i in range(size))
    return udp_packet(link_local(MAC_A), link_local(MAC_B), 61616, 5683, data, **ipv6)


# --------------------------------------------------------------------------- headers


def test_frag1_header_bits():
    # RFC 4944 5.3: 11000 | datagram_size (11 bits) | datagram_tag (16 bits)
    # size 348 = 001 0101 1100 -> 11000001 01011100 = c1 5c; tag 0x1234
    assert frag1_header(348, 0x1234) == hx("c15c 1234")
    assert frag1_header(2047, 0xFFFF) == hx("c7ff ffff")  # 11000111 11111111
    assert frag1_header(40, 0) == hx("c028 0000")


def test_fragn_header_bits():
    # 11100 | datagram_size (11) | datagram_tag (16) | datagram_offset (8, in 8-byte units)
    # size 348, tag 0x1234, offset 320 bytes = 40 units = 0x28
    assert fragn_header(348, 0x1234, 320) == hx("e15c 1234 28")
    assert fragn_header(2047, 1, 2040) == hx("e7ff 0001 ff")


def test_fragment_header_arguments_are_checked():
    for bad in [(2048, 1), (-1, 1), (100, 0x10000), (100, -1)]:
        with pytest.raises(ValueError):
            frag1_header(*bad)
    with pytest.raises(ValueError):
        fragn_header(100, 1, 12)  # not a multiple of 8


def test_parse_fragment_headers():
    assert parse_fragment_header(hx("c15c 1234 7e33")) == FragmentHeader(True, 348, 0x1234, 0, 4)
    assert parse_fragment_header(hx("e15c 1234 28 00")) == FragmentHeader(
        False, 348, 0x1234, 320, 5
    )
    for bad in [b"", hx("c15c 12"), hx("e15c 1234"), hx("7e33 0000 00"), hx("c85c 1234")]:
        with pytest.raises(LowpanDecodeError):
            parse_fragment_header(bad)


# --------------------------------------------------------------------------- fragment()


def test_a_packet_that_fits_goes_without_a_fragment_header():
    c = compress(big_udp(10), MAC_A, MAC_B)
    assert fragment(c, 7, ROOM) == [c.header + c.payload]
    exact = compress(big_udp(ROOM - len(c.header)), MAC_A, MAC_B)
    assert fragment(exact, 7, ROOM) == [exact.header + exact.payload]


def test_fragment_layout_in_detail():
    # 300 bytes of UDP data: a 348-byte datagram. IPHC base 2 + UDP NHC 6 (source
    # port 0xF0B0 in 8 bits, destination 16, checksum) = 8 bytes of header.
    packet = big_udp(300)
    c = compress(packet, MAC_A, MAC_B)
    assert (len(c.header), c.uncompressed_header_len, c.datagram_size) == (8, 48, 348)
    pieces = fragment(c, 0x1234, ROOM)
    # FRAG1: 4 + 8 + k <= 104 with 48 + k a multiple of 8: k = 88 (48 + 88 = 136).
    assert pieces[0] == hx("c15c 1234") + c.header + c.payload[:88]
    # FRAGNs: (104 - 5) // 8 * 8 = 96 bytes each, at offsets 136, 232, then 28 bytes at 328.
    assert pieces[1] == hx("e15c 1234 11") + c.payload[88:184]  # 136 / 8 = 17
    assert pieces[2] == hx("e15c 1234 1d") + c.payload[184:280]  # 232 / 8 = 29
    assert pieces[3] == hx("e15c 1234 29") + c.payload[280:]  # 328 / 8 = 41
    assert len(pieces) == 4


@pytest.mark.parametrize("mode", ["iphc", "none"])
@pytest.mark.parametrize("size", [80, 95, 96, 97, 200, 500, 1000, 1232, 1952])
@pytest.mark.parametrize("room", [60, 81, ROOM, 127])
def test_fragments_cover_the_datagram_on_8_byte_boundaries(mode, size, room):
    packet = big_udp(size)
    c = compress(packet, MAC_A, MAC_B, mode=mode)
    pieces = fragment(c, 99, room)
    assert all(len(p) <= room for p in pieces)
    if len(pieces) == 1:
        assert pieces[0] == c.header + c.payload
        return
    expected_offset = 0
    rebuilt = b""
    for i, piece in enumerate(pieces):
        h = parse_fragment_header(piece)
        assert (h.first, h.size, h.tag) == (i == 0, len(packet), 99)
        assert h.offset == expected_offset
        body = piece[h.length :]
        if h.first:
            assert body.startswith(c.header)
            data = body[len(c.header) :]
            expected_offset = c.uncompressed_header_len + len(data)
        else:
            data = body
            expected_offset += len(data)
        if i < len(pieces) - 1:
            assert expected_offset % 8 == 0
        rebuilt += data
    assert rebuilt == c.payload
    assert expected_offset == len(packet)


def test_fragment_refuses_what_the_headers_cannot_express():
    c = compress(big_udp(2000), MAC_A, MAC_B)  # 2048 bytes: one too many for 11 bits
    with pytest.raises(ValueError):
        fragment(c, 1, ROOM)
    c = compress(big_udp(200), MAC_A, MAC_B, mode="none")  # a 49-byte header
    with pytest.raises(ValueError):
        fragment(c, 1, 52)  # no room for the header in the FRAG1
    with pytest.raises(ValueError):
        fragment(compress(big_udp(200), MAC_A, MAC_B), 1, 12)  # 7 bytes per FRAGN
    with pytest.raises(ValueError):
        fragment(compress(big_udp(200), MAC_A, MAC_B), 0x10000, ROOM)


# --------------------------------------------------------------------------- reassembly


def frames_of(packet: bytes, tag: int, *, mode: str = "iphc", room: int = ROOM, **kw) -> list:
    return fragment(compress(packet, MAC_A, MAC_B, mode=mode, **kw), tag, room)


PACKETS = {
    "udp-300": big_udp(300, traffic_class=0xB8, flow_label=0xABCDE),
    "udp-1232": big_udp(1232, hop_limit=255),
    "udp-exact-boundary": big_udp(8 * 30),
    "tcp": tcp_segment(
        addr("2001:db8::1"), addr("2001:db8:0:1::ff:fe00:2"), 1, 2, bytes(range(256)), hop_limit=7
    ),
    "icmpv6": icmpv6_echo(link_local(MAC_A), link_local(MAC_B), 1, 2, bytes(400)),
    "global-udp": udp_packet(addr("2001:db8::1"), addr("2001:db9::2"), 0xF0B1, 0xF0B2, bytes(333)),
}


@pytest.mark.parametrize("mode", ["iphc", "none"])
@pytest.mark.parametrize("name", list(PACKETS))
@pytest.mark.parametrize("seed", range(4))
def test_reassembly_in_any_order(mode, name, seed):
    packet = PACKETS[name]
    pieces = frames_of(packet, 0xBEEF, mode=mode, room=70, contexts=CONTEXTS)
    assert len(pieces) > 1
    order = list(pieces)
    random.Random(seed).shuffle(order)
    r = Reassembler(contexts=CONTEXTS)
    results = [r.add(1.0, MAC_A, MAC_B, piece) for piece in order]
    assert results[:-1] == [None] * (len(order) - 1)
    assert results[-1] == packet
    assert (len(r), r.held_bytes, r.completed, r.decode_errors, r.discarded) == (0, 0, 1, 0, 0)


def test_every_order_of_four_fragments():
    packet = PACKETS["udp-300"]
    pieces = frames_of(packet, 1)
    assert len(pieces) == 4
    for order in itertools.permutations(pieces):
        r = Reassembler()
        results = [r.add(0.0, MAC_A, MAC_B, p) for p in order]
        assert results == [None, None, None, packet]


def test_reassembled_bodies_decompress_with_datagram_size():
    # Concatenating FRAG1's body and the FRAGNs' bodies gives the unfragmented
    # compressed packet back; decompress checks it against datagram_size.
    packet = PACKETS["udp-300"]
    pieces = frames_of(packet, 1)
    whole = pieces[0][4:] + b"".join(p[5:] for p in pieces[1:])
    assert decompress(whole, MAC_A, MAC_B, datagram_size=len(packet)) == packet


def test_unfragmented_packets_pass_straight_through():
    r = Reassembler()
    packet = udp_packet(link_local(MAC_A), link_local(MAC_B), 1, 2, b"x")
    c = compress(packet, MAC_A, MAC_B)
    assert r.add(0.0, MAC_A, MAC_B, c.header + c.payload) == packet
    c = compress(packet, MAC_A, MAC_B, mode="none")
    assert r.add(0.0, MAC_A, MAC_B, c.header + c.payload) == packet
    assert (r.completed, r.decode_errors, len(r)) == (0, 0, 0)


def test_not_lowpan_payloads_are_counted_apart():
    r = Reassembler()
    assert r.add(0.0, MAC_A, MAC_B, hx("05 07 07 05 08 03 6e 64 6e")) is None  # an NDN Interest
    assert r.add(0.0, MAC_A, MAC_B, b"") is None
    assert r.add(0.0, MAC_A, MAC_B, hx("42 00 00")) is None  # HC1: not supported
    assert (r.not_lowpan, r.decode_errors) == (1, 2)


def test_interleaved_datagrams_are_kept_apart_by_source_destination_and_tag():
    p1, p2, p3 = PACKETS["udp-300"], PACKETS["icmpv6"], big_udp(250)
    streams = [
        [(MAC_A, MAC_B, f) for f in frames_of(p1, 5)],
        [(MAC_A, MAC_B, f) for f in frames_of(p2, 6)],
        # The same tag from another sender: a different datagram.
        [
            (MAC_B, MAC_A, f)
            for f in fragment(compress(p3, MAC_B, MAC_A), 5, ROOM)  # src/dst swapped
        ],
    ]
    r = Reassembler()
    got = []
    for batch in itertools.zip_longest(*streams):
        for item in batch:
            if item is not None:
                src, dst, frame = item
                out = r.add(0.0, src, dst, frame)
                if out is not None:
                    got.append(out)
    assert sorted(got) == sorted([p1, p2, p3])
    assert r.completed == 3 and len(r) == 0


def test_duplicates_are_ignored():
    packet = PACKETS["udp-300"]
    pieces = frames_of(packet, 3)
    r = Reassembler()
    assert r.add(0.0, MAC_A, MAC_B, pieces[0]) is None
    assert r.add(0.0, MAC_A, MAC_B, pieces[0]) is None
    assert r.add(0.0, MAC_A, MAC_B, pieces[2]) is None
    assert r.add(0.0, MAC_A, MAC_B, pieces[2]) is None
    assert r.add(0.0, MAC_A, MAC_B, pieces[1]) is None
    assert r.add(0.0, MAC_A, MAC_B, pieces[3]) == packet
    assert (r.discarded, r.decode_errors, r.completed) == (0, 0, 1)


def test_an_overlap_with_different_data_discards_and_starts_afresh():
    packet = PACKETS["udp-300"]
    pieces = frames_of(packet, 3)
    forged = pieces[1][:5] + bytes(len(pieces[1]) - 5)  # same place, other bytes
    r = Reassembler()
    r.add(0.0, MAC_A, MAC_B, pieces[0])
    r.add(0.0, MAC_A, MAC_B, pieces[1])
    assert r.add(0.0, MAC_A, MAC_B, forged) is None
    assert r.discarded == 1
    # RFC 4944 5.3: a fresh reassembly begins with the newest fragment.
    assert len(r) == 1 and r.held_bytes == len(forged) - 5
    # The genuine piece, sent again, conflicts in turn and replaces the forged one,
    # after which the genuine datagram completes.
    assert r.add(0.0, MAC_A, MAC_B, pieces[1]) is None
    assert r.discarded == 2 and r.held_bytes == len(pieces[1]) - 5
    results = [r.add(0.0, MAC_A, MAC_B, p) for p in (pieces[0], pieces[2], pieces[3])]
    assert results == [None, None, packet]


def test_an_overlap_at_another_offset_discards():
    packet = PACKETS["udp-300"]
    pieces = frames_of(packet, 3)
    h = parse_fragment_header(pieces[1])
    # Same bytes, but claimed 8 bytes later: overlaps pieces[1] at a different offset.
    shifted = fragn_header(h.size, h.tag, h.offset + 8) + pieces[1][5:]
    r = Reassembler()
    r.add(0.0, MAC_A, MAC_B, pieces[1])
    r.add(0.0, MAC_A, MAC_B, shifted)
    assert r.discarded == 1


def test_a_changed_size_discards_the_datagram():
    packet = PACKETS["udp-300"]
    pieces = frames_of(packet, 3)
    h = parse_fragment_header(pieces[1])
    other_size = fragn_header(h.size + 8, h.tag, h.offset) + pieces[1][5:]
    r = Reassembler()
    r.add(0.0, MAC_A, MAC_B, pieces[0])
    r.add(0.0, MAC_A, MAC_B, other_size)
    assert r.discarded == 1 and len(r) == 1
    assert r.add(0.0, MAC_A, MAC_B, pieces[2]) is None  # the old size again: afresh once more
    assert r.discarded == 2
    assert [r.add(0.0, MAC_A, MAC_B, p) for p in (pieces[0], pieces[1], pieces[3])][-1] == packet


def test_a_fragment_beyond_the_size_discards_the_datagram():
    packet = PACKETS["udp-300"]
    pieces = frames_of(packet, 3)
    h = parse_fragment_header(pieces[3])
    beyond = fragn_header(h.size, h.tag, h.offset + 8) + pieces[3][5:]
    r = Reassembler()
    r.add(0.0, MAC_A, MAC_B, pieces[0])
    assert r.add(0.0, MAC_A, MAC_B, beyond) is None
    assert (r.discarded, r.decode_errors, len(r)) == (1, 1, 0)


def test_a_first_fragment_longer_than_its_size_is_rejected():
    c = compress(PACKETS["udp-300"], MAC_A, MAC_B)
    r = Reassembler()
    frame = frag1_header(60, 1) + c.header + c.payload[:20]  # 48 + 20 > 60
    assert r.add(0.0, MAC_A, MAC_B, frame) is None
    frame = frag1_header(44, 1) + c.header  # size below the 48 bytes of headers
    assert r.add(0.0, MAC_A, MAC_B, frame) is None
    assert r.decode_errors == 2 and len(r) == 0


@pytest.mark.parametrize(
    "frame",
    [
        hx("c15c"),  # FRAG1 header cut short
        hx("e15c 1234"),  # FRAGN header cut short
        hx("e15c 1234 28"),  # FRAGN without data
        hx("e15c 1234 00 0102030405060708"),  # FRAGN at offset 0
        hx("c020 1234 7e33 f0"),  # size 32: below an IPv6 header
        hx("c15c 1234 42 00"),  # FRAG1 with HC1 inside
        hx("c15c 1234 c15c 1234"),  # a fragment inside a fragment
        hx("c15c 1234 7e"),  # FRAG1 with half an IPHC header
        hx("c15c 1234 41") + bytes(20),  # FRAG1 with a short uncompressed header
    ],
)
def test_bad_fragments_are_decode_errors(frame):
    r = Reassembler()
    assert r.add(0.0, MAC_A, MAC_B, frame) is None
    assert r.decode_errors == 1 and len(r) == 0 and r.held_bytes == 0


def test_uncompressed_frag1_must_agree_with_the_datagram_size():
    packet = PACKETS["udp-300"]
    pieces = frames_of(packet, 3, mode="none")
    h = parse_fragment_header(pieces[0])
    lying = frag1_header(h.size + 8, h.tag) + pieces[0][4:]
    r = Reassembler()
    assert r.add(0.0, MAC_A, MAC_B, lying) is None
    assert r.decode_errors == 1


def test_timeout_drops_lazily_on_add_and_on_expire():
    packet = PACKETS["udp-300"]
    pieces = frames_of(packet, 3)
    r = Reassembler(timeout_s=10.0)
    assert r.timeout_s == 10.0 and Reassembler().timeout_s == 60.0
    assert r.next_expiry() is None
    r.add(5.0, MAC_A, MAC_B, pieces[0])
    r.add(7.0, MAC_A, MAC_B, pieces[1])
    assert r.next_expiry() == 15.0  # from the first fragment
    r.expire(14.9)
    assert len(r) == 1
    r.expire(15.0)
    assert (len(r), r.timeouts, r.held_bytes, r.next_expiry()) == (0, 1, 0, None)
    # Lazily: the late fragments start a new datagram that never completes.
    r.add(20.0, MAC_A, MAC_B, pieces[2])
    other = frames_of(big_udp(200), 4)
    r.add(29.0, MAC_A, MAC_B, other[0])
    assert r.next_expiry() == 30.0
    r.add(31.0, MAC_A, MAC_B, pieces[3])  # expires the datagram begun at 20.0 first
    assert r.timeouts == 2 and len(r) == 2
    assert r.next_expiry() == 39.0


def test_max_datagrams_bounds_concurrent_reassemblies():
    r = Reassembler(max_datagrams=2)
    firsts = [frames_of(big_udp(200), tag)[0] for tag in range(3)]
    for f in firsts:
        r.add(0.0, MAC_A, MAC_B, f)
    assert len(r) == 2 and r.discarded == 1


def test_max_bytes_bounds_what_is_held():
    packet = big_udp(300)  # 348 bytes
    r = Reassembler(max_bytes=700)
    for tag in range(3):
        r.add(0.0, MAC_A, MAC_B, frames_of(packet, tag)[0])
    assert len(r) == 2 and r.discarded == 1  # 2 * 348 <= 700 < 3 * 348
    assert r.held_bytes <= 700
    # The admitted ones still complete.
    for piece in frames_of(packet, 0)[1:]:
        out = r.add(0.0, MAC_A, MAC_B, piece)
    assert out == packet
    small = Reassembler(max_bytes=300)
    assert small.add(0.0, MAC_A, MAC_B, frames_of(packet, 1)[0]) is None
    assert small.discarded == 1 and len(small) == 0


def test_broadcast_destination_and_multicast_reassemble():
    packet = udp_packet(link_local(MAC_A), addr("ff02::1"), 5683, 5683, bytes(200))
    pieces = fragment(compress(packet, MAC_A, BROADCAST), 77, ROOM)
    r = Reassembler()
    assert [r.add(0.0, MAC_A, BROADCAST, p) for p in reversed(pieces)][-1] == packet


def test_bad_configuration_is_a_value_error():
    for kwargs in ({"timeout_s": 0}, {"max_datagrams": 0}, {"contexts": {1: b"short"}}):
        with pytest.raises(ValueError):
            Reassembler(**kwargs)
