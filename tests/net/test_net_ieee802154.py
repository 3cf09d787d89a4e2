"""802.15.4 MAC data frames and the L2 nodes that send them."""

from __future__ import annotations

import binascii

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iotbench.metrics.observers import Observers, PacketRecorder
from iotbench.net import ieee802154 as mac
from iotbench.net.l2 import L2Node
from iotbench.net.link import PointToPointLink
from iotbench.sim import Simulator


def test_fcs_is_crc16_kermit():
    # The standard check value of CRC-16/KERMIT, the FCS of 802.15.4.
    assert mac.crc16(b"123456789") == 0x2189
    assert mac.crc16(b"") == 0


def _reverse_bits(value: int, width: int) -> int:
    return int(f"{value:0{width}b}"[::-1], 2)


@given(st.binary(max_size=300))
def test_fcs_is_the_reflected_twin_of_crc_ccitt(data):
    """The table-driven FCS against two other routes to the same CRC: bit by bit
    as the standard's figure shifts it, and binascii's CRC-CCITT (XModem) on the
    bytes bit-reversed, the result reversed."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8408 if crc & 1 else crc >> 1
    assert mac.crc16(data) == crc
    mirrored = bytes(_reverse_bits(b, 8) for b in data)
    assert mac.crc16(data) == _reverse_bits(binascii.crc_hqx(mirrored, 0), 16)


def test_data_frame_by_hand():
    frame = mac.Frame(7, 0x23, mac.extended_address(2), mac.extended_address(1), b"\x05\x00")
    wire = mac.encode(frame)
    # Frame control 0xdc41 (data, PAN ID compression, extended dst and src,
    # 2006), little endian; sequence 7; PAN 0x0023; addresses LSB first.
    assert wire[:5] == bytes.fromhex("41dc072300")
    assert wire[5:13] == mac.extended_address(2)[::-1]
    assert wire[13:21] == mac.extended_address(1)[::-1]
    assert wire[21:23] == b"\x05\x00"
    assert int.from_bytes(wire[-2:], "little") == mac.crc16(wire[:-2])
    assert mac.decode(wire) == frame
    assert mac.header_length(frame.dst) == 21


def test_broadcast_uses_the_short_address():
    frame = mac.Frame(1, 0x23, mac.BROADCAST, mac.extended_address(1), b"x")
    wire = mac.encode(frame)
    assert len(wire) == 3 + 2 + 2 + 8 + 1 + 2
    assert mac.decode(wire) == frame


def test_short_addresses_and_ack_request_by_hand():
    frame = mac.Frame(0x42, 5, mac.short_address(0), mac.short_address(7), b"hi", True)
    wire = mac.encode(frame)
    # Frame control: data (001), AR (bit 5), PAN ID compression (bit 6), short
    # destination (10 in bits 10-11), version 2006 (01 in bits 12-13), short
    # source (10 in bits 14-15): 0b1001_1000_0110_0001 = 0x9861, little endian.
    assert wire[:3] == bytes.fromhex("619842")
    assert wire[3:5] == bytes.fromhex("0500")  # PAN 5
    assert wire[5:7] == bytes.fromhex("0000") and wire[7:9] == bytes.fromhex("0700")
    assert len(wire) == 9 + 2 + 2 == mac.header_length(b"\0\0", 2) + 2 + 2
    assert mac.decode(wire) == frame


def test_acknowledgment_frame_by_hand():
    wire = mac.encode_ack(0x42)
    # Frame control 0x0002 (acknowledgment, version 0), sequence number, FCS.
    assert wire[:3] == bytes.fromhex("020042")
    assert len(wire) == mac.ACK_FRAME_BYTES
    assert mac.decode(wire) == mac.Ack(0x42)
    assert mac.decode(mac.encode_ack(7, frame_pending=True)) == mac.Ack(7, True)
    with pytest.raises(mac.MacDecodeError, match="not 5"):
        body = bytes.fromhex("020042") + b"x"
        mac.decode(body + mac.crc16(body).to_bytes(2, "little"))


def test_airtime_of_a_full_frame():
    from iotbench.net.radio.phy import frame_airtime_s

    # 127 bytes plus 6 bytes of SHR and PHR, 32 us per byte at 250 kbit/s.
    assert frame_airtime_s(127) == pytest.approx(133 * 32e-6)
    assert frame_airtime_s(mac.ACK_FRAME_BYTES) == pytest.approx(352e-6)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda w: w[:4], "too short"),
        (lambda w: w[:-1] + bytes([w[-1] ^ 1]), "FCS"),
        (lambda w: w + bytes(130), "exceeds 127"),
    ],
)
def test_malformed_frames(mutate, message):
    wire = mac.encode(mac.Frame(1, 0x23, mac.BROADCAST, mac.extended_address(1), b"abc"))
    with pytest.raises(mac.MacDecodeError, match=message):
        mac.decode(mutate(wire))


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 255),
    st.integers(0, 0xFFFF),
    st.sampled_from([2, 8]),
    st.sampled_from([2, 8]),
    st.binary(max_size=100),
    st.booleans(),
)
def test_data_frames_round_trip(seq, pan, dst_len, src_len, payload, ack):
    frame = mac.Frame(seq, pan, bytes(range(dst_len)), bytes(range(7, 7 + src_len)), payload, ack)
    assert mac.decode(mac.encode(frame)) == frame


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 1000),
    st.integers(0, 0xFFFF),
    st.sampled_from([2, 8]),
    st.binary(max_size=100),
    st.booleans(),
)
def test_data_frame_header_is_structs_little_endian_layout(seq, pan, dst_len, payload, ack):
    # The header is built from one integer's bytes; struct's layout is the reference.
    import struct

    dst, src = bytes(range(1, 1 + dst_len)), bytes(range(9, 17))
    frame = mac.encode_data(seq, pan, dst, src, payload, ack)
    fc = struct.unpack_from("<H", frame)[0]
    body = struct.pack("<HBH", fc, seq & 0xFF, pan) + dst[::-1] + src[::-1] + payload
    assert frame == body + struct.pack("<H", mac.crc16(body))


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=140),
        st.builds(
            lambda seq, payload, ack: mac.encode_data(
                seq, 0x23, b"\x00\x01", b"\x00\x02", payload, ack
            ),
            st.integers(0, 255),
            st.binary(max_size=100),
            st.booleans(),
        ),
        st.builds(mac.encode_ack, st.integers(0, 255), st.booleans()),
    )
)
def test_payload_of_is_decodes_payload_with_the_same_checks(data):
    try:
        decoded = mac.decode(data)
    except mac.MacDecodeError:
        with pytest.raises(mac.MacDecodeError):
            mac.payload_of(data)
        return
    expected = decoded.payload if isinstance(decoded, mac.Frame) else None
    assert mac.payload_of(data) == expected


@pytest.mark.parametrize("pan", [-1, 0x10000])
def test_a_pan_identifier_must_be_16_bits(pan):
    with pytest.raises(ValueError, match="PAN identifier"):
        mac.encode_data(1, pan, b"\x00\x01", b"\x00\x02", b"x", True)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=140))
def test_random_bytes_raise_only_decode_error(data):
    try:
        mac.decode(data)
    except mac.MacDecodeError:
        pass


def test_l2_nodes_exchange_frames_addressed_to_them():
    sim = Simulator(1)
    log = []
    a, b, c = L2Node(sim, "a", 1), L2Node(sim, "b", 2), L2Node(sim, "c", 3)
    ia, ib = a.add_interface(102), b.add_interface(102)
    PointToPointLink(
        sim,
        ia,
        ib,
        rate_bps=250_000,
        observers=Observers(PacketRecorder(log)),
        overhead_bytes=mac.PHY_OVERHEAD_BYTES,
    )
    got = []
    ib.on_frame = lambda src, payload: got.append((sim.now, src, payload))
    ia.send(b.address, b"hello", 0, 5)
    ia.send(mac.BROADCAST, b"all")
    ia.send(c.address, b"not for b")
    sim.run()
    # 21-byte header + 5 + 2-byte FCS, plus 6 bytes of PHY, at 250 kbit/s.
    assert got[0] == (pytest.approx((21 + 5 + 2 + 6) * 8 / 250_000), a.address, b"hello")
    assert [p for _, _, p in got] == [b"hello", b"all"]
    assert b.not_for_us == 1
    assert log[0].link_header_len == 23 and log[0].app_header_len == 5


def test_an_l2_mtu_must_fit_the_frame():
    node = L2Node(Simulator(1), "a", 1)
    with pytest.raises(ValueError, match="1..104"):
        node.add_interface(105)


def test_extended_addresses_of_large_networks_are_distinct_and_keep_small_ones():
    # Below 65,536 nodes the addresses are the ones every baseline was made with.
    assert mac.extended_address(1).hex() == "020000fffe000001"
    assert mac.extended_address(0xFFFF, 3).hex() == "020000fffe03ffff"
    # Beyond, the index's high byte goes into the third byte (100,000 nodes and more).
    assert mac.extended_address(0x10000).hex() == "020001fffe000000"
    assert mac.extended_address(100_000).hex() == "020001fffe0086a0"
    many = {mac.extended_address(i) for i in range(0, 1 << 24, 4099)}
    assert len(many) == len(range(0, 1 << 24, 4099))
    with pytest.raises(ValueError, match="node index"):
        mac.extended_address(1 << 24)
    with pytest.raises(ValueError, match="radio network"):
        mac.extended_address(1, 256)


def test_flipped_turns_an_address_around_and_back():
    address = mac.extended_address(7)
    assert mac.flipped(address) == address[::-1]
    assert mac.flipped(mac.flipped(address)) == address
    # Past what it remembers it forgets, and still answers the same.
    for i in range(70_000):
        assert mac.flipped(i.to_bytes(3, "big")) == i.to_bytes(3, "little")
    assert mac.flipped(address) == address[::-1]


def test_the_same_address_bytes_split_differently_are_different_addresses():
    """A short destination and an extended source, or the other way round, can
    stand on the air as the same ten bytes: the frame's addressing modes, not
    the bytes, say where one address ends (the pairs decoded once are
    remembered by their bytes, for each destination length apart)."""
    short, extended = bytes(2), bytes(8)
    first = mac.Frame(1, 0, short, extended, b"", False)
    second = mac.Frame(1, 0, extended, short, b"", False)
    wire_first, wire_second = mac.encode(first), mac.encode(second)
    assert wire_first[5:15] == wire_second[5:15]
    for _ in range(2):  # decoded afresh, then from what was remembered
        assert mac.decode(wire_first) == first
        assert mac.decode(wire_second) == second
