"""Wireshark's 6LoWPAN dissector (tshark) reads the 802.15.4 frames our 6LoWPAN
codec writes: uncompressed and IPHC headers, context-based and multicast addresses,
UDP NHC port forms and fragments (one datagram sent in reverse order).

tshark must rebuild every IPv6 packet byte for byte (its "Decompressed 6LoWPAN
IPHC" and "Reassembled 6LoWPAN" data sources), find the addresses and ports we
put in, verify the UDP, TCP and ICMPv6 checksums over what it decompressed, decode
the CoAP messages, and flag nothing as malformed or as an expert-info error.
"""

from __future__ import annotations

import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from iotbench.metrics.pcap import LINKTYPE_IEEE802_15_4_WITHFCS, pcap_header, pcap_record
from iotbench.net import ip
from iotbench.net.checksum import internet_checksum
from iotbench.net.ieee802154 import (
    BROADCAST,
    DEFAULT_PAN_ID,
    FCS_BYTES,
    MAX_FRAME_BYTES,
    Frame,
    encode,
    extended_address,
    header_length,
)
from iotbench.net.lowpan import compress, fragment, interface_identifier
from iotbench.net.lowpan.fragments import parse_fragment_header
from iotbench.proto.coap.codec import Code, Message, Type
from iotbench.proto.coap.codec import decode as coap_decode
from iotbench.proto.coap.codec import encode as coap_encode

pytestmark = pytest.mark.interop

MAC_A, MAC_B = extended_address(1), extended_address(2)
LINK_LOCAL = bytes.fromhex("fe80000000000000")
LL_A, LL_B = LINK_LOCAL + interface_identifier(MAC_A), LINK_LOCAL + interface_identifier(MAC_B)
CONTEXTS = {0: bytes.fromhex("20010db800000000"), 3: bytes.fromhex("20010db800000001")}
# The same contexts, told to tshark.
PREFS = [
    "-o",
    "6lowpan.context0:2001:db8::/64",
    "-o",
    "6lowpan.context3:2001:db8:0:1::/64",
    "-o",
    "udp.check_checksum:TRUE",
    "-o",
    "tcp.check_checksum:TRUE",
]
IPPROTO_ICMPV6 = 58


@dataclass
class Datagram:
    name: str
    packet: bytes
    src_mac: bytes
    dst_mac: bytes
    mode: str = "iphc"
    reverse: bool = False  # send the fragments last first
    # Filled in when written: the frame payloads, and 1-based frame numbers.
    pieces: tuple[bytes, ...] = ()
    first_frame: int = 0
    last_frame: int = 0  # where the datagram is complete, whatever the fragment order


def coap(mid: int, code: int, path: str, payload: bytes = b"") -> bytes:
    return coap_encode(Message.request(Type.CON, code, mid, bytes((mid & 0xFF,)), path, payload))


def udp(src: bytes, dst: bytes, sport: int, dport: int, data: bytes, **kw: int) -> bytes:
    return ip.build_ipv6(src, dst, ip.IPPROTO_UDP, ip.build_udp(src, dst, sport, dport, data), **kw)


def icmpv6_echo(src: bytes, dst: bytes, seq: int, data: bytes, **kw: int) -> bytes:
    body = bytes((128, 0, 0, 0, 0x12, 0x34)) + seq.to_bytes(2, "big") + data
    checksum = internet_checksum(src + dst + body, IPPROTO_ICMPV6 + len(body))
    body = body[:2] + checksum.to_bytes(2, "big") + body[4:]
    return ip.build_ipv6(src, dst, IPPROTO_ICMPV6, body, **kw)


def tcp_syn(src: bytes, dst: bytes, sport: int, dport: int) -> bytes:
    segment = bytearray(
        sport.to_bytes(2, "big")
        + dport.to_bytes(2, "big")
        + (7).to_bytes(4, "big")
        + bytes(4)
        + bytes((5 << 4, 0x02))
        + (1024).to_bytes(2, "big")
        + bytes(4)
    )
    checksum = internet_checksum(src + dst + bytes(segment), ip.IPPROTO_TCP + len(segment))
    segment[16:18] = checksum.to_bytes(2, "big")
    return ip.build_ipv6(src, dst, ip.IPPROTO_TCP, bytes(segment))


def addr(text: str) -> bytes:
    return ip.address_bytes(text)


def datagrams() -> list[Datagram]:
    def get(mid: int) -> bytes:
        return coap(mid, Code.GET, ".well-known/core")

    def put(mid: int) -> bytes:
        return coap(mid, Code.PUT, "store", bytes(i % 251 for i in range(400)))

    return [
        Datagram(
            "uncompressed", udp(LL_A, LL_B, 5683, 5683, get(0x1001)), MAC_A, MAC_B, mode="none"
        ),
        Datagram(
            "iphc",
            udp(
                LL_A, LL_B, 5683, 5683, get(0x1002), hop_limit=255, traffic_class=0xB8, flow_label=7
            ),
            MAC_A,
            MAC_B,
        ),
        Datagram("iphc-fragmented", udp(LL_A, LL_B, 0xF0B1, 5683, put(0x1003)), MAC_A, MAC_B),
        Datagram(
            "iphc-fragmented-reversed",
            udp(LL_B, LL_A, 5683, 0xF012, put(0x1004), traffic_class=1, flow_label=0xABCDE),
            MAC_B,
            MAC_A,
            reverse=True,
        ),
        Datagram(
            "uncompressed-fragmented",
            udp(LL_A, LL_B, 40000, 5683, put(0x1005)),
            MAC_A,
            MAC_B,
            "none",
        ),
        Datagram(
            "all-nodes",
            udp(LL_A, addr("ff02::1"), 0xF0B1, 0xF0BA, b"hello", hop_limit=1, traffic_class=0xB8),
            MAC_A,
            BROADCAST,
        ),
        Datagram(
            "site-multicast-coap",
            udp(LL_A, addr("ff05::fd"), 61616, 5683, coap(0x1008, Code.GET, "sensors")),
            MAC_A,
            BROADCAST,
        ),
        Datagram(
            "unicast-prefix-multicast",
            icmpv6_echo(LL_A, addr("ff3e:40:2001:db8::1234"), 3, b"", hop_limit=64),
            MAC_A,
            BROADCAST,
        ),
        Datagram(
            "inline-multicast",
            icmpv6_echo(LL_A, addr("ff0e::1234:5678:9abc"), 4, b"", hop_limit=64),
            MAC_A,
            BROADCAST,
        ),
        Datagram(
            "context",
            udp(addr("2001:db8::1"), addr("2001:db8:0:1::ff:fe00:5"), 0xF0AB, 5683, get(0x1006)),
            MAC_A,
            MAC_B,
        ),
        Datagram(
            "context-iid-from-mac",
            udp(
                CONTEXTS[0] + interface_identifier(MAC_A),
                addr("2001:db8::2"),
                1234,
                5683,
                get(0x1007),
            ),
            MAC_A,
            MAC_B,
        ),
        Datagram(
            "icmpv6", icmpv6_echo(LL_A, addr("fe80::1"), 1, b"ping", hop_limit=9), MAC_A, MAC_B
        ),
        Datagram(
            "icmpv6-solicited-node",
            icmpv6_echo(LL_A, addr("ff02::1:ff00:2"), 2, b"ping", hop_limit=255),
            MAC_A,
            BROADCAST,
        ),
        Datagram("tcp", tcp_syn(addr("2001:db8::1"), addr("2001:db9::9"), 40001, 80), MAC_A, MAC_B),
    ]


def write_capture(path: Path, items: list[Datagram]) -> None:
    records = []
    for item in items:
        c = compress(item.packet, item.src_mac, item.dst_mac, mode=item.mode, contexts=CONTEXTS)
        room = MAX_FRAME_BYTES - header_length(item.dst_mac) - FCS_BYTES
        pieces = fragment(c, 0x4000 + len(records), room)
        if item.reverse:
            pieces.reverse()
        item.pieces = tuple(pieces)
        item.first_frame = len(records) + 1
        for piece in pieces:
            frame = encode(Frame(len(records), DEFAULT_PAN_ID, item.dst_mac, item.src_mac, piece))
            assert len(frame) <= MAX_FRAME_BYTES
            records.append(pcap_record(len(records) * 0.01, frame))
        item.last_frame = len(records)
    path.write_bytes(pcap_header(LINKTYPE_IEEE802_15_4_WITHFCS) + b"".join(records))


def run(tshark: str, pcap: Path, *args: str) -> str:
    done = subprocess.run(
        [tshark, "-r", str(pcap), *PREFS, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def data_sources(hex_dump: str) -> list[dict[str, bytes]]:
    """Per frame, the bytes of each data source `tshark -x` prints ("Frame",
    "Decompressed 6LoWPAN IPHC", "Reassembled 6LoWPAN", ...).

    Frames are separated by a blank line; a frame with one data source prints
    its bytes without a "Frame (N bytes):" title.
    """
    frames = []
    for block in hex_dump.strip("\n").split("\n\n"):
        sources: dict[str, bytearray] = {}
        current = sources.setdefault("Frame", bytearray())
        for line in block.splitlines():
            if line.endswith(" bytes):"):
                current = sources.setdefault(line.rsplit(" (", 1)[0], bytearray())
            else:
                _offset, rest = line.split("  ", 1)
                current += bytes.fromhex(rest[:48])  # 16 bytes as "xx " each, then ASCII
        frames.append({name: bytes(data) for name, data in sources.items()})
    return frames


def fields(tshark: str, pcap: Path, *names: str) -> list[dict[str, str]]:
    cmd = ["-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
    for name in names:
        cmd += ["-e", name]
    out = run(tshark, pcap, *cmd)
    return [dict(zip(names, line.split("\t"))) for line in out.splitlines()]


def text(address: bytes) -> str:
    return str(ipaddress.IPv6Address(address))


def test_tshark_decodes_our_6lowpan_frames(tmp_path, require_peer):
    tshark = require_peer("tshark")
    items = datagrams()
    pcap = tmp_path / "lowpan.pcap"
    write_capture(pcap, items)
    total_frames = items[-1].last_frame
    fragmented = [i for i in items if i.last_frame > i.first_frame]
    assert len(fragmented) == 3  # the 400-byte CoAP PUT does not fit one frame

    # Nothing malformed, no expert-info error, in the full dissection.
    verbose = run(tshark, pcap, "-V")
    assert "Malformed" not in verbose
    assert "Expert Info (Error" not in verbose
    assert verbose.count("\n6LoWPAN") == total_frames  # every frame has a 6LoWPAN layer
    assert run(tshark, pcap, "-Y", "_ws.malformed || _ws.expert.severity >= warning") == ""

    # tshark rebuilds exactly the packets we compressed.
    sources = data_sources(run(tshark, pcap, "-x"))
    assert len(sources) == total_frames
    for item in items:
        frame = sources[item.last_frame - 1]
        rebuilt = {k: v for k, v in frame.items() if k != "Frame"}
        if item.mode == "none" and item.last_frame == item.first_frame:
            assert rebuilt == {}  # nothing to rebuild: the IPv6 packet is in the frame as is
            assert frame["Frame"][-FCS_BYTES - len(item.packet) : -FCS_BYTES] == item.packet
        elif item.last_frame > item.first_frame:
            assert rebuilt["Reassembled 6LoWPAN"] == item.packet, item.name
        else:
            assert rebuilt == {"Decompressed 6LoWPAN IPHC": item.packet}, item.name

    rows = fields(
        tshark,
        pcap,
        "wpan.fcs_ok",
        "6lowpan.frag.size",
        "6lowpan.frag.offset",
        "ipv6.src",
        "ipv6.dst",
        "ipv6.plen",
        "ipv6.hlim",
        "ipv6.tclass",
        "ipv6.flow",
        "ipv6.nxt",
        "udp.srcport",
        "udp.dstport",
        "udp.length",
        "udp.checksum.status",
        "coap.code",
        "coap.mid",
        "icmpv6.checksum.status",
        "tcp.checksum.status",
    )
    assert len(rows) == total_frames
    # LINKTYPE_IEEE802_15_4_WITHFCS: tshark takes the last 2 bytes as the CRC-16 FCS
    # (no wpan.fcs_format preference needed) and finds every one good.
    assert {row["wpan.fcs_ok"] for row in rows} == {"1"}
    for item in items:
        row = rows[item.last_frame - 1]
        h = ip.parse_ipv6(item.packet)
        first = int.from_bytes(item.packet[:4], "big")
        assert (row["ipv6.src"], row["ipv6.dst"]) == (text(h.src), text(h.dst)), item.name
        assert int(row["ipv6.plen"]) == h.payload_len
        assert int(row["ipv6.hlim"]) == h.hop_limit
        assert int(row["ipv6.tclass"], 16) == (first >> 20) & 0xFF
        assert int(row["ipv6.flow"], 16) == first & 0xFFFFF
        assert int(row["ipv6.nxt"]) == h.next_header
        if h.next_header == ip.IPPROTO_UDP:
            sport, dport, data = ip.parse_udp(item.packet[40:])
            assert (int(row["udp.srcport"]), int(row["udp.dstport"])) == (sport, dport)
            assert int(row["udp.length"]) == 8 + len(data)
            assert row["udp.checksum.status"] == "1"  # good
            if 5683 in (sport, dport):
                message = coap_decode(data)
                assert int(row["coap.code"]) == message.code
                assert int(row["coap.mid"]) == message.message_id
        elif h.next_header == IPPROTO_ICMPV6:
            assert row["icmpv6.checksum.status"] == "1"
        else:
            assert row["tcp.checksum.status"] == "1"
    # tshark reads the fragment headers as we wrote them: sizes and offsets count
    # bytes of the uncompressed datagram.
    for item in fragmented:
        numbers = range(item.first_frame, item.last_frame + 1)
        assert {rows[n - 1]["6lowpan.frag.size"] for n in numbers} == {str(len(item.packet))}
        offsets = [int(rows[n - 1]["6lowpan.frag.offset"] or 0) for n in numbers]
        assert offsets == [parse_fragment_header(p).offset for p in item.pieces]
        assert offsets[0 if not item.reverse else -1] == 0 and len(set(offsets)) == len(offsets)
