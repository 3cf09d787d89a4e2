"""The frame tally of `--series`: what each frame carries, counted per link and type."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotbench.metrics.frames import FrameTally, frame_type
from iotbench.metrics.outfile import OutFile
from iotbench.net import ieee802154 as mac
from iotbench.net.lowpan.codec import compress
from iotbench.net.packet import QUEUE_FULL, Packet
from iotbench.proto.ndn import hopp
from iotbench.proto.ndn.data import make_data
from iotbench.proto.ndn.interest import make_interest

A, B = bytes.fromhex("0200000000000001"), bytes.fromhex("0200000000000002")
SRC_IP = bytes.fromhex("fe800000000000000000000000000001")
DST_IP = bytes.fromhex("fe800000000000000000000000000002")


def frame(payload: bytes) -> bytes:
    return mac.encode_data(7, 0x23, B, A, payload, True)


def ipv6(next_header: int, body: bytes) -> bytes:
    return struct.pack("!IHBB", 6 << 28, len(body), next_header, 64) + SRC_IP + DST_IP + body


def udp(src_port: int, dst_port: int, body: bytes) -> bytes:
    return struct.pack("!HHHH", src_port, dst_port, 8 + len(body), 0) + body


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        (hopp.Sol().encode(), "hopp-sol"),
        (hopp.Pam(1, "/i3").encode(), "hopp-pam"),
        (hopp.Nam(("/i3/1",)).encode(), "hopp-nam"),
        (make_interest("/i3/1", nonce=1).wire, "ndn-interest"),
        (make_data("/i3/1", b"v").wire, "ndn-data"),
        (b"\x41" + ipv6(58, bytes([155, 1]) + bytes(22)), "rpl-dio"),
        (b"\x41" + ipv6(58, bytes([155, 2]) + bytes(18)), "rpl-dao"),
        (b"\x41" + ipv6(58, bytes([128, 0, 0, 0])), "icmpv6-128"),
        (b"\x41" + ipv6(17, udp(49152, 5683, b"\x42\x01\x00\x01")), "coap-con"),
        (b"\x41" + ipv6(17, udp(5683, 49152, b"\x62\x44\x00\x01")), "coap-ack"),
        (b"\x41" + ipv6(17, udp(49152, 1883, b"\x02\x18")), "mqtt-sn"),
        (b"\x41" + ipv6(17, udp(1, 9, b"x")), "udp-9"),
        (b"\xe0\x50\x00\x01\x05" + bytes(20), "6lowpan-fragment"),
    ],
)
def test_frames_are_told_by_what_they_carry(payload, kind):
    assert frame_type(frame(payload)) == kind


def test_compressed_and_fragmented_headers_are_read_too():
    packet = ipv6(17, udp(49152, 5683, b"\x52\x01\x00\x01" + bytes(60)))
    compressed = compress(packet, A, B)
    assert frame_type(frame(compressed.header + compressed.payload)) == "coap-non"
    size = compressed.datagram_size
    frag1 = struct.pack("!HH", 0xC000 | size, 1) + compressed.header + compressed.payload[:40]
    assert frame_type(frame(frag1)) == "coap-non"


def test_acknowledgments_and_an_lp_packet_on_an_ndn_network():
    assert frame_type(mac.encode_ack(3)) == "ack"
    lp = b"\x64\x03\x50\x01\x00"
    assert frame_type(frame(lp), ndn=True) == "ndn-lp"
    assert frame_type(frame(lp)) != "ndn-lp"  # on an IP network the byte is IPHC's


@given(st.binary(max_size=120), st.binary(max_size=100))
def test_any_bytes_get_a_type_and_no_exception(data, payload):
    assert frame_type(data) and frame_type(data, ndn=True)
    assert frame_type(frame(payload)) and frame_type(frame(payload), ndn=True)


def test_the_tally_counts_first_sends_retries_bytes_and_queue_drops(tmp_path):
    tally = FrameTally(ndn=True)
    wire = frame(make_interest("/i3/1", nonce=1).wire)
    for attempt in (1, 2, 3):
        pkt = Packet(wire, 0, 0, 0, 23)
        pkt.src, pkt.dst, pkt.attempt = "n1", "n0", attempt
        tally.transmitted(pkt)
    dropped = Packet(frame(hopp.Sol().encode()), 0, 0, 0, 23)
    dropped.src, dropped.dst, dropped.fate = "n1", "broadcast", QUEUE_FULL
    tally.finished(dropped)
    out = OutFile(str(tmp_path / "f.csv"), "w")
    tally.write(out)
    out.commit()
    assert (tmp_path / "f.csv").read_text().splitlines() == [
        "node,neighbour,type,frames,retries,bytes,queue_drops",
        "n1,broadcast,hopp-sol,0,0,0,1",
        f"n1,n0,ndn-interest,1,2,{3 * len(wire)},0",
    ]
