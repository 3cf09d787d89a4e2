"""TCP segments on the wire: layout, options, checksum, malformed input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iotbench.net.checksum import internet_checksum
from iotbench.net.ip import IPPROTO_TCP, pseudo_header_sum
from iotbench.net.tcp.segment import (
    ACK,
    FIN,
    PSH,
    SYN,
    Segment,
    TcpDecodeError,
    decode,
    encode,
    options_bytes,
)

SRC = bytes([192, 168, 1, 2])
DST = bytes([192, 168, 1, 1])
SRC6 = bytes.fromhex("fd000000000000000000000000000001")
DST6 = bytes.fromhex("fd000000000000000000000000000002")


def test_linux_syn_layout_by_hand():
    syn = Segment(
        40000,
        80,
        0x01020304,
        0,
        SYN,
        64240,
        mss=1460,
        sack_permitted=True,
        timestamps=(0x11223344, 0),
        wscale=7,
    )
    data = encode(syn, SRC, DST)
    # The 20-byte header, written out field by field (RFC 9293 3.1).
    assert data[:4] == struct.pack("!HH", 40000, 80)
    assert data[4:8] == bytes.fromhex("01020304")
    assert data[8:12] == bytes(4)
    assert data[12] == (40 // 4) << 4  # data offset: 40 bytes
    assert data[13] == 0x02  # SYN
    assert data[14:16] == struct.pack("!H", 64240)
    assert data[18:20] == bytes(2)  # urgent pointer
    # Options exactly as Linux sends them: MSS, SACK-permitted + TS, NOP + WS.
    assert data[20:] == bytes.fromhex("020405b40402080a112233440000000001030307")
    # The checksum verifies over the pseudo-header.
    assert internet_checksum(data, pseudo_header_sum(SRC, DST, IPPROTO_TCP, len(data))) == 0


def test_established_segment_with_timestamps_and_sack():
    seg = Segment(80, 40000, 1000, 2000, ACK, 501, timestamps=(5, 6), sack_blocks=((3000, 4000),))
    assert options_bytes(seg) == bytes.fromhex("0101080a00000005000000060101050a00000bb800000fa0")
    assert len(encode(seg, SRC, DST)) == 20 + 24


def test_fast_open_cookie_request_and_cookie_are_padded_with_trailing_nops():
    request = Segment(1, 2, 0, 0, SYN, 100, fast_open=b"")
    assert options_bytes(request) == bytes.fromhex("22020101")
    cookie = Segment(1, 2, 0, 0, SYN, 100, fast_open=bytes(range(8)))
    assert options_bytes(cookie) == bytes.fromhex("220a00010203040506070101")


@pytest.mark.parametrize(("src", "dst"), [(SRC, DST), (SRC6, DST6)])
def test_round_trip_of_every_field(src, dst):
    seg = Segment(
        12345,
        443,
        0xFFFFFFF0,
        7,
        SYN | ACK,
        65535,
        b"",
        mss=536,
        wscale=14,
        sack_permitted=True,
        timestamps=(1, 2),
        fast_open=b"\xaa" * 16,
    )
    back = decode(encode(seg, src, dst), src, dst)
    assert back == seg
    data = Segment(1, 2, 3, 4, ACK | PSH | FIN, 5, b"hello", sack_blocks=((1, 2), (3, 4), (5, 6)))
    assert decode(encode(data, src, dst), src, dst) == data


def test_wscale_above_14_is_read_as_14():
    seg = Segment(1, 2, 3, 4, SYN, 5, wscale=14)
    raw = bytearray(encode(seg, SRC, DST))
    raw[-1] = 20  # the shift byte
    assert decode(bytes(raw), SRC, DST, verify=False).wscale == 14


def test_unknown_options_are_skipped():
    seg = Segment(1, 2, 3, 4, ACK, 5, b"x")
    raw = bytearray(
        encode(
            seg,
            SRC,
            DST,
        )
    )
    # Splice in an unknown 4-byte option (kind 99) and fix the offset.
    raw[12] = (24 // 4) << 4
    raw[20:20] = bytes((99, 4, 0, 0))
    back = decode(bytes(raw), SRC, DST, verify=False)
    assert back.payload == b"x"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b[:19], "shorter than a header"),
        (lambda b: b[:12] + bytes([0x40]) + b[13:], "data offset 16"),
        (lambda b: b[:12] + bytes([0xF0]) + b[13:], "data offset 60"),
        (lambda b: b[:12] + bytes([b[12] | 0x01]) + b[13:], "reserved bits"),
        (lambda b: b[:16] + bytes([b[16] ^ 0xFF]) + b[17:], "checksum"),
    ],
)
def test_malformed_segments(mutate, message):
    data = encode(Segment(1, 2, 3, 4, ACK, 5, b"payload"), SRC, DST)
    with pytest.raises(TcpDecodeError, match=message):
        decode(mutate(data), SRC, DST)


@pytest.mark.parametrize(
    "options",
    [
        bytes((2, 3, 0, 0)),  # MSS with length 3
        bytes((8, 10, 0, 0)),  # timestamps running past the header
        bytes((5, 2, 1, 1)),  # SACK with no block
        bytes((34, 5, 1, 2, 3, 1, 1, 1)),  # Fast Open cookie of 3 bytes
        bytes((3, 0, 0, 0)),  # length 0
        bytes((1, 1, 1, 2)),  # a kind with no length byte at the end
    ],
)
def test_malformed_options(options):
    base = bytearray(encode(Segment(1, 2, 3, 4, ACK, 5), SRC, DST))
    base[12] = ((20 + len(options)) // 4) << 4
    with pytest.raises(TcpDecodeError):
        decode(bytes(base) + options, SRC, DST, verify=False)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=80))
def test_random_bytes_raise_only_decode_error(data):
    try:
        decode(data, SRC, DST, verify=False)
    except TcpDecodeError:
        pass


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_mutated_segments_raise_only_decode_error(draw):
    seg = Segment(
        1,
        2,
        3,
        4,
        SYN | ACK,
        5,
        b"abc",
        mss=1400,
        sack_permitted=True,
        timestamps=(9, 9),
        wscale=3,
        fast_open=b"12345678",
    )
    raw = bytearray(encode(seg, SRC, DST))
    for _ in range(draw.draw(st.integers(1, 6))):
        i = draw.draw(st.integers(0, len(raw) - 1))
        raw[i] = draw.draw(st.integers(0, 255))
    try:
        decode(bytes(raw), SRC, DST, verify=draw.draw(st.booleans()))
    except TcpDecodeError:
        pass
