"""pcap output: exact file format, timestamps, what is written; tshark reads it cleanly."""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from iotbench.metrics.observers import Observers, PacketRecorder
from iotbench.metrics.pcap import LINKTYPE_RAW, SNAPLEN, PcapWriter, pcap_bytes, write_pcap
from iotbench.net import ip
from iotbench.net.link import PointToPointLink
from iotbench.net.node import Node
from iotbench.net.packet import DELIVERED, IN_FLIGHT, LOST, OUTAGE, QUEUE_FULL, Packet
from iotbench.sim import Simulator

GLOBAL = struct.Struct("<IHHiIII")
RECORD = struct.Struct("<IIII")


def read_pcap(raw: bytes) -> tuple[tuple, list[tuple[int, int, int, int, bytes]]]:
    """An independent little reader: global header fields and (sec, nsec, incl, orig, data)."""
    header = GLOBAL.unpack_from(raw)
    records, pos = [], GLOBAL.size
    while pos < len(raw):
        sec, nsec, incl, orig = RECORD.unpack_from(raw, pos)
        pos += RECORD.size
        records.append((sec, nsec, incl, orig, raw[pos : pos + incl]))
        pos += incl
    assert pos == len(raw)
    return header, records


def pkt(data: bytes, t_sent: float, fate: str) -> Packet:
    p = Packet(data, 20, 8, 0)
    p.t_sent = t_sent
    p.fate = fate
    p.src, p.dst = "a", "b"
    return p


def test_global_header_fields():
    raw = pcap_bytes([])
    assert len(raw) == 24
    # Magic a1b23c4d (nanosecond timestamps) written little-endian.
    assert raw[:4] == bytes.fromhex("4d3cb2a1")
    assert GLOBAL.unpack(raw) == (0xA1B23C4D, 2, 4, 0, 0, 262144, 101)
    assert (SNAPLEN, LINKTYPE_RAW) == (262144, 101)


def test_records_have_nanosecond_timestamps_and_exact_bytes():
    packets = [
        pkt(b"\x45" + bytes(27), 0.0, DELIVERED),
        pkt(b"\x45" + bytes(39), 1.25, LOST),
        pkt(b"\x60" + bytes(47), 2.000000001, OUTAGE),
        pkt(b"\x45" + bytes(99), 3.5, IN_FLIGHT),
        pkt(b"\x45" + bytes(59), 123456.789012345, DELIVERED),
    ]
    _, records = read_pcap(pcap_bytes(packets))
    assert [(s, ns) for s, ns, *_ in records] == [
        (0, 0),
        (1, 250_000_000),
        (2, 1),
        (3, 500_000_000),
        (123456, 789_012_345),
    ]
    assert [r[4] for r in records] == [p.data for p in packets]
    assert all(incl == orig == len(data) for _, _, incl, orig, data in records)


def test_queue_full_packets_are_not_written_and_records_are_in_time_order():
    a = pkt(b"\x45" + bytes(19), 2.0, DELIVERED)
    dropped = pkt(b"\x45" + bytes(29), 0.5, QUEUE_FULL)
    b = pkt(b"\x45" + bytes(39), 1.0, LOST)
    c = pkt(b"\x45" + bytes(49), 1.0, DELIVERED)  # same instant as b, offered after it
    _, records = read_pcap(pcap_bytes([a, dropped, b, c]))
    assert [r[4] for r in records] == [b.data, c.data, a.data]


def _capture(version: int) -> list[Packet]:
    """A small run: a small datagram each way, one fragmented datagram (10 or 13
    fragments), then a burst of 30 small datagrams of which 9 overflow the queue."""
    sim = Simulator(3)
    addresses = {4: ("10.0.0.1", "10.0.0.2"), 6: ("fd00::1", "fd00::2")}[version]
    client, server = Node(sim, "client"), Node(sim, "server")
    ci, si = client.add_interface(addresses[0], 128), server.add_interface(addresses[1], 128)
    log: list[Packet] = []
    PointToPointLink(
        sim,
        ci,
        si,
        rate_bps=250_000,
        delay_s=0.01,
        queue_packets=20,
        observers=Observers(PacketRecorder(log)),
    )
    server.udp_bind(40000, lambda *args: None)
    client.udp_send(49152, server.address, 40000, b"hello world")
    server.udp_send(40000, client.address, 49152, b"x" * 50)
    sim.run()
    sim.at(1.0, client.udp_send, 49152, server.address, 40001, bytes(1000))
    sim.run()
    for _ in range(30):
        sim.at(2.0, client.udp_send, 49152, server.address, 40002, b"burst" * 4)
    sim.run()
    return log


def test_capture_of_a_run_with_queue_drops():
    log = _capture(4)
    written = [p for p in log if p.fate != QUEUE_FULL]
    assert len(log) - len(written) == 9  # 1 on the wire + 20 queued, 9 dropped
    _, records = read_pcap(pcap_bytes(log))
    assert len(records) == len(written)
    assert [r[4] for r in records] == [p.data for p in sorted(written, key=lambda p: p.t_sent)]
    # Every record is a valid IPv4 packet as sent.
    for *_, data in records:
        ip.parse_ipv4(data, verify=True)


def test_write_pcap_is_atomic_and_equals_pcap_bytes(tmp_path):
    log = _capture(6)
    path = tmp_path / "run.pcap"
    write_pcap(str(path), log)
    assert path.read_bytes() == pcap_bytes(log)
    assert [p.name for p in tmp_path.iterdir()] == ["run.pcap"]  # no temporary left behind


def test_the_streaming_writer_gives_the_same_bytes_as_a_whole_capture(tmp_path):
    """PcapWriter, fed as the run goes (queued packets arrive before their time),
    writes exactly what pcap_bytes makes of the whole log, and only at close."""
    sim = Simulator(3)
    client, server = Node(sim, "client"), Node(sim, "server")
    ci, si = client.add_interface("10.0.0.1", 128), server.add_interface("10.0.0.2", 128)
    log: list[Packet] = []
    path = tmp_path / "run.pcap"
    writer = PcapWriter(sim, str(path))
    PointToPointLink(
        sim,
        ci,
        si,
        rate_bps=250_000,
        delay_s=0.01,
        queue_packets=20,
        observers=Observers(PacketRecorder(log), writer),
    )
    server.udp_bind(
        40000, lambda payload, src, sport, dport, dst: server.udp_send(40000, src, sport, payload)
    )
    for t in (0.0, 0.001, 0.002):  # echoes cross requests still queued on the other side
        sim.at(t, client.udp_send, 49152, server.address, 40000, bytes(300))
    sim.run()
    assert not path.exists()  # nothing under the final name before close
    writer.close()
    assert path.read_bytes() == pcap_bytes(log)
    assert [p.name for p in tmp_path.iterdir()] == ["run.pcap"]


def test_an_aborted_writer_leaves_nothing(tmp_path):
    writer = PcapWriter(Simulator(0), str(tmp_path / "run.pcap"))
    writer.abort()
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------- interop: tshark


def _tshark(tshark: str, *args: str) -> str:
    result = subprocess.run(
        [tshark, "-n", *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _problems(tshark: str, path: str) -> str:
    """Frames tshark flags as malformed or with warnings/errors (checksums verified)."""
    return _tshark(
        tshark,
        "-r",
        path,
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
        "-Y",
        "_ws.malformed || _ws.expert.severity >= warning",
    )


@pytest.mark.interop
@pytest.mark.parametrize("version", [4, 6])
def test_tshark_reads_our_pcap(version, tmp_path, require_peer):
    tshark = require_peer("tshark")
    log = _capture(version)
    path = str(tmp_path / f"v{version}.pcap")
    write_pcap(path, log)
    src_field = "ip.src" if version == 4 else "ipv6.src"
    checksum_fields = ["-e", "udp.checksum.status"]
    if version == 4:
        checksum_fields += ["-e", "ip.checksum.status"]
    lines = _tshark(
        tshark,
        "-r",
        path,
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
        "-T",
        "fields",
        "-e",
        src_field,
        "-e",
        "udp.dstport",
        *checksum_fields,
    )
    table = [line.split("\t") for line in lines.splitlines()]
    rows = [tuple(row[:2]) for row in table]
    client, server = {4: ("10.0.0.1", "10.0.0.2"), 6: ("fd00::1", "fd00::2")}[version]
    written = [p for p in log if p.fate != QUEUE_FULL]
    assert len(rows) == len(written)
    fragments = 10 if version == 4 else 13
    assert rows[:2] == [(client, "40000"), (server, "49152")]
    # The fragmented datagram: tshark reassembles it and finds port 40001 in the last.
    assert rows[2 : 2 + fragments] == [(client, "")] * (fragments - 1) + [(client, "40001")]
    assert rows[2 + fragments :] == [(client, "40002")] * 21
    # tshark verified every IPv4 header and UDP checksum: 1 = PROTO_CHECKSUM_E_GOOD.
    assert {v for row in table for v in row[2:] if v} == {"1"}
    if version == 4:
        assert all(row[3] == "1" for row in table)
    # Nothing malformed, no expert warnings or errors.
    assert _problems(tshark, path) == ""


@pytest.mark.interop
def test_tshark_check_does_catch_malformed_packets(tmp_path, require_peer):
    # The detector used above must be able to fail: a UDP length beyond the packet
    # and a wrong UDP checksum are both reported.
    tshark = require_peer("tshark")
    a, b = ip.address_bytes("10.0.0.1"), ip.address_bytes("10.0.0.2")
    seg = ip.build_udp(a, b, 1, 40000, b"abcdef")
    bad_length = bytearray(ip.build_ipv4(a, b, 17, seg, 5))
    bad_length[24:26] = b"\x00\x40"
    bad_checksum = bytearray(ip.build_ipv4(a, b, 17, seg, 6))
    bad_checksum[27] ^= 1
    path = str(tmp_path / "bad.pcap")
    write_pcap(path, [pkt(bytes(bad_length), 0.0, DELIVERED), pkt(bytes(bad_checksum), 1.0, LOST)])
    assert len(_problems(tshark, path).splitlines()) == 2


# ----------------------------------------------------------------- the peer helper


def test_require_peer_finds_skips_or_fails(require_peer, monkeypatch):
    assert require_peer("sh") == shutil.which("sh")
    monkeypatch.delenv("IOTBENCH_REQUIRE_PEERS", raising=False)
    with pytest.raises(pytest.skip.Exception):
        require_peer("no-such-peer-iotbench")
    monkeypatch.setenv("IOTBENCH_REQUIRE_PEERS", "1")
    with pytest.raises(pytest.fail.Exception, match="IOTBENCH_REQUIRE_PEERS"):
        require_peer("no-such-peer-iotbench")
    monkeypatch.setenv("IOTBENCH_REQUIRE_PEERS", "0")
    with pytest.raises(pytest.skip.Exception):
        require_peer("no-such-peer-iotbench")


def test_require_module_imports_skips_or_fails(require_module, monkeypatch):
    assert require_module("shutil") is shutil
    monkeypatch.delenv("IOTBENCH_REQUIRE_PEERS", raising=False)
    with pytest.raises(pytest.skip.Exception):
        require_module("no_such_peer_iotbench")
    monkeypatch.setenv("IOTBENCH_REQUIRE_PEERS", "1")
    with pytest.raises(pytest.fail.Exception, match="IOTBENCH_REQUIRE_PEERS"):
        require_module("no_such_peer_iotbench")
