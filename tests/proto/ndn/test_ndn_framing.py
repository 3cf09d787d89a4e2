"""TlvFramer: whole NDN packets out of a byte stream, in any split, with bounded buffering."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ndn_strategies import FAST

from iotbench.proto.ndn import make_data, make_interest
from iotbench.proto.ndn.framing import MAX_PACKET_BYTES, TlvFramer
from iotbench.proto.ndn.lp import LpPacket
from iotbench.proto.ndn.tlv import NdnDecodeError

PACKETS = [
    make_interest("/a/b", nonce=1).wire,
    make_data("/a/b", b"x" * 300).wire,  # 3-byte TLV-LENGTH
    LpPacket.make_nack(make_interest("/c", nonce=2).wire).encode(),
    bytes.fromhex("fd03e800"),  # an empty element of a 3-byte TLV-TYPE: framed, not judged
]
STREAM = b"".join(PACKETS)


def test_one_feed_with_every_packet():
    assert TlvFramer().feed(STREAM) == PACKETS


@pytest.mark.parametrize("piece", [1, 2, 3, 7, 64])
def test_any_piece_size(piece):
    framer = TlvFramer()
    out = []
    for i in range(0, len(STREAM), piece):
        out += framer.feed(STREAM[i : i + piece])
    assert out == PACKETS and framer.buffered == 0


@FAST
@given(st.lists(st.integers(0, len(STREAM)), max_size=8))
def test_random_splits(cuts):
    framer = TlvFramer()
    bounds = [0, *sorted(cuts), len(STREAM)]
    out = []
    for a, b in zip(bounds, bounds[1:]):
        out += framer.feed(STREAM[a:b])
    assert out == PACKETS


def test_incomplete_element_waits_with_bounded_buffer():
    framer = TlvFramer()
    big = make_data("/big", bytes(MAX_PACKET_BYTES - 100)).wire
    assert framer.feed(big[:-1]) == [] and framer.buffered == len(big) - 1
    assert framer.feed(big[-1:]) == [big] and framer.buffered == 0


@pytest.mark.parametrize(
    "bad",
    [
        "0000",  # TLV-TYPE 0
        "05fd0001",  # TLV-LENGTH not in its shortest form
        "fe0000000500",  # TLV-TYPE not in its shortest form
        "05fe00010000",  # 65536 bytes announced: over the limit
        "05fd2261",  # 8801 bytes announced
    ],
)
def test_bad_headers_fail_the_stream(bad):
    framer = TlvFramer()
    assert framer.feed(PACKETS[0]) == [PACKETS[0]]
    with pytest.raises(NdnDecodeError):
        framer.feed(bytes.fromhex(bad))
    with pytest.raises(NdnDecodeError):  # no resynchronisation after a framing error
        framer.feed(PACKETS[0])


def test_limit_is_configurable():
    framer = TlvFramer(max_packet_bytes=10)
    assert framer.feed(bytes.fromhex("0508") + bytes(8)) == [bytes.fromhex("0508") + bytes(8)]
    with pytest.raises(NdnDecodeError):
        framer.feed(bytes.fromhex("0509"))
