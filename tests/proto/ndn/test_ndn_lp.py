"""NDNLPv2 LpPacket framing and header fields, with hand-encoded packets."""

import pytest

from iotbench.proto.ndn.interest import make_interest
from iotbench.proto.ndn.lp import LpPacket, is_ignorable_lp_field
from iotbench.proto.ndn.tlv import NdnDecodeError
from iotbench.proto.ndn.types import NackReason

INTEREST = make_interest("/a", nonce=1).wire


def test_nack_by_hand():
    # LpPacket(100) { Nack(800) { NackReason(801) = 150 }, Fragment(80) = Interest }
    nack = bytes.fromhex("fd0320" + "05" + "fd0321" + "01" + "96")
    frag = bytes([0x50, len(INTEREST)]) + INTEREST
    wire = bytes([0x64, len(nack) + len(frag)]) + nack + frag
    assert LpPacket.make_nack(INTEREST, NackReason.NO_ROUTE).encode() == wire
    p = LpPacket.decode(wire)
    assert p.nack == NackReason.NO_ROUTE and p.fragment == INTEREST


def test_nack_without_reason_means_none():
    wire = bytes.fromhex("6406" + "fd032000" + "5000")
    p = LpPacket.decode(wire)
    assert p.nack == NackReason.NONE and p.fragment == b""
    assert LpPacket(nack=NackReason.NONE, fragment=b"").encode() == wire


def test_all_fields_round_trip():
    p = LpPacket(
        fragment=INTEREST,
        sequence=2**64 - 1,
        frag_index=0,
        frag_count=1,
        pit_token=b"\x01\x02",
        nack=NackReason.CONGESTION,
        incoming_face_id=300,
        next_hop_face_id=7,
        congestion_mark=1,
        acks=(1, 2, 3),
        tx_sequence=99,
    )
    assert LpPacket.decode(p.encode()) == p
    assert not p.is_idle and LpPacket(acks=(5,)).is_idle


def test_fixed_width_fields_accept_short_encodings():
    wire = bytes.fromhex("6403" + "510107")  # Sequence in one byte
    assert LpPacket.decode(wire).sequence == 7
    with pytest.raises(NdnDecodeError):
        LpPacket.decode(bytes.fromhex("6402" + "5100"))


def test_unknown_header_fields():
    assert is_ignorable_lp_field(800 + 0x4C - 0x4C + 4 * 5)  # 820: 800..959, low bits 00
    assert not is_ignorable_lp_field(801) and not is_ignorable_lp_field(960)
    skip = bytes.fromhex("fd03b400" + "5000")  # 948: ignorable
    assert LpPacket.decode(bytes([0x64, len(skip)]) + skip).fragment == b""
    for bad in ("fd03b500", "5400", "6300"):  # 949 (low bits 01), 84, 99: unknown, not ignorable
        body = bytes.fromhex(bad + "5000")
        with pytest.raises(NdnDecodeError, match="unknown"):
            LpPacket.decode(bytes([0x64, len(body)]) + body)


def test_order_and_repeats():
    for bad in (
        "5201005101000000000000000000",  # FragIndex before Sequence... reversed order
        "520100520100",  # FragIndex twice
        "5000" + "520100",  # a field after the Fragment
    ):
        body = bytes.fromhex(bad)
        with pytest.raises(NdnDecodeError):
            LpPacket.decode(bytes([0x64, len(body)]) + body)
    # Ack may repeat.
    acks = bytes.fromhex("fd034401" + "01" + "fd034401" + "02")
    assert LpPacket.decode(bytes([0x64, len(acks)]) + acks).acks == (1, 2)


def test_framing_errors():
    with pytest.raises(NdnDecodeError, match="LpPacket"):
        LpPacket.decode(INTEREST)
    with pytest.raises(NdnDecodeError, match="trailing"):
        LpPacket.decode(bytes.fromhex("64005000"))
