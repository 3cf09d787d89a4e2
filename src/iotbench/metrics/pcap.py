"""pcap files of simulated traffic, readable by Wireshark and tshark.

Classic pcap with nanosecond timestamps (magic 0xa1b23c4d). IP links use
LINKTYPE_RAW (101): each record is a bare IPv4 or IPv6 packet, as the
simulator put it on the wire. 802.15.4 links use
LINKTYPE_IEEE802_15_4_WITHFCS (195): each record is a MAC frame with its FCS.
Timestamps are virtual time, so the same run gives the same bytes.

`PcapWriter` is the observer a run uses: it writes each record as the run
goes, so a capture costs no memory that grows with the run. A queued link
hands it packets whose transmission lies ahead; it holds those (never more
than the queues hold) until the clock passes their time, so records come
out in order of transmission, as Wireshark expects.
"""

from __future__ import annotations

import heapq
import itertools
import struct
from collections.abc import Iterable

from iotbench.metrics.observers import Observer
from iotbench.metrics.outfile import OutFile
from iotbench.net.packet import TRANSMITTED, Packet
from iotbench.sim import Simulator

LINKTYPE_RAW = 101
LINKTYPE_IEEE802_15_4_WITHFCS = 195
_MAGIC_NS = 0xA1B23C4D
_GLOBAL = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")
SNAPLEN = 262144


def pcap_header(linktype: int = LINKTYPE_RAW) -> bytes:
    return _GLOBAL.pack(_MAGIC_NS, 2, 4, 0, 0, SNAPLEN, linktype)


def pcap_record(t_s: float, data: bytes) -> bytes:
    """One packet record, stamped `t_s` seconds (from the epoch, or from a run's start)."""
    ns = round(t_s * 1e9)
    n = len(data)
    return _RECORD.pack(ns // 1_000_000_000, ns % 1_000_000_000, n, n) + data


def pcap_bytes(packets: Iterable[Packet], linktype: int = LINKTYPE_RAW) -> bytes:
    """Every transmitted packet (queue drops never reached the wire), in send order:
    a whole capture from a list of packets, for tests and small tools."""
    sent = sorted(
        (p for p in packets if p.fate in TRANSMITTED),
        key=lambda p: p.t_sent,  # stable: ties keep the order of sending
    )
    return pcap_header(linktype) + b"".join(pcap_record(p.t_sent, p.data) for p in sent)


def write_pcap(path: str, packets: Iterable[Packet], linktype: int = LINKTYPE_RAW) -> None:
    """Write atomically: a reader never sees a half-written capture."""
    out = OutFile(path)
    out.write(pcap_bytes(packets, linktype))
    out.commit()


class PcapWriter(Observer):
    """Writes every transmitted packet to `path` as the run goes; the file
    appears under its name when `close()` finishes it, and `abort()` leaves
    none (metrics/outfile.py)."""

    def __init__(self, sim: Simulator, path: str, linktype: int = LINKTYPE_RAW) -> None:
        self.sim = sim
        self._file = OutFile(path)
        self._file.write(pcap_header(linktype))
        # (t_sent, order of offering, data) of packets whose transmission lies ahead.
        self._ahead: list[tuple[float, int, bytes]] = []
        self._order = itertools.count()

    def transmitted(self, pkt: Packet) -> None:
        ahead = self._ahead
        now = self.sim.now
        if pkt.t_sent <= now and not ahead:
            self._file.write(pcap_record(pkt.t_sent, pkt.data))  # the usual case
            return
        heapq.heappush(ahead, (pkt.t_sent, next(self._order), pkt.data))
        # Later packets are sent at `now` or after, so what lies before it is final.
        while ahead and ahead[0][0] <= now:
            t_sent, _, data = heapq.heappop(ahead)
            self._file.write(pcap_record(t_sent, data))

    def close(self) -> None:
        for t_sent, _, data in sorted(self._ahead):
            self._file.write(pcap_record(t_sent, data))
        self._ahead.clear()
        self._file.commit()

    def abort(self) -> None:
        self._file.discard()


# --------------------------------------------------------------------- pcapng

# pcapng (draft-ietf-opsawg-pcapng): one capture of a network with several
# media, each an interface of its own link type (an 802.15.4 radio, an
# Ethernet uplink), which classic pcap cannot hold.
_BLOCK_SHB, _BLOCK_IDB, _BLOCK_EPB = 0x0A0D0D0A, 0x00000001, 0x00000006
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_OPT_END, _OPT_IF_NAME, _OPT_IF_TSRESOL = 0, 2, 9


def _option(code: int, value: bytes) -> bytes:
    padding = b"\x00" * (-len(value) % 4)
    return struct.pack("<HH", code, len(value)) + value + padding


def _block(kind: int, body: bytes) -> bytes:
    length = 12 + len(body)
    return struct.pack("<II", kind, length) + body + struct.pack("<I", length)


def pcapng_header(interfaces: list[tuple[int, str]]) -> bytes:
    """Section header and one interface description per (link type, name)."""
    shb = _block(_BLOCK_SHB, struct.pack("<IHHq", _BYTE_ORDER_MAGIC, 1, 0, -1))
    idbs = b""
    for linktype, name in interfaces:
        options = (
            _option(_OPT_IF_NAME, name.encode())
            + _option(_OPT_IF_TSRESOL, bytes((9,)))  # nanoseconds
            + _option(_OPT_END, b"")
        )
        idbs += _block(_BLOCK_IDB, struct.pack("<HHI", linktype, 0, SNAPLEN) + options)
    return shb + idbs


def pcapng_record(interface: int, t_s: float, data: bytes) -> bytes:
    ns = round(t_s * 1e9)
    padded = data + b"\x00" * (-len(data) % 4)
    body = struct.pack("<IIIII", interface, ns >> 32, ns & 0xFFFFFFFF, len(data), len(data))
    return _block(_BLOCK_EPB, body + padded)


class PcapNgWriter(PcapWriter):
    """A `PcapWriter` for networks of several media: pcapng, one interface per medium.

    `media`: (the objects packets name as their `medium`, link type, interface
    name) per interface; a point-to-point link is one interface for the
    channels of both its directions."""

    def __init__(
        self, sim: Simulator, path: str, media: list[tuple[tuple[object, ...], int, str]]
    ) -> None:
        self.sim = sim
        self._interface = {m: i for i, (objects, _, _) in enumerate(media) for m in objects}
        self._file = OutFile(path)
        self._file.write(pcapng_header([(linktype, name) for _, linktype, name in media]))
        # Records whose send time is still ahead, with their interface:
        # (t_sent, order, (interface, bytes)).
        self._ahead_on: list[tuple[float, int, tuple[int, bytes]]] = []
        self._order = itertools.count()

    def transmitted(self, pkt: Packet) -> None:
        interface = self._interface[pkt.medium]
        ahead = self._ahead_on
        now = self.sim.now
        if pkt.t_sent <= now and not ahead:
            self._file.write(pcapng_record(interface, pkt.t_sent, pkt.data))
            return
        heapq.heappush(ahead, (pkt.t_sent, next(self._order), (interface, pkt.data)))
        while ahead and ahead[0][0] <= now:
            t_sent, _, (i, data) = heapq.heappop(ahead)
            self._file.write(pcapng_record(i, t_sent, data))

    def close(self) -> None:
        for t_sent, _, (i, data) in sorted(self._ahead_on):
            self._file.write(pcapng_record(i, t_sent, data))
        self._ahead_on.clear()
        self._file.commit()
