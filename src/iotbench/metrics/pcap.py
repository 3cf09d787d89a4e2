"""pcap files of simulated traffic, readable by Wireshark and tshark.

Classic pcap with nanosecond timestamps (magic 0xa1b23c4d). IP links use
LINKTYPE_RAW (101): each record is a bare IPv4 or IPv6 packet, as the
simulator put it on the wire. 802.15.4 links use
LINKTYPE_IEEE802_15_4_WITHFCS (195): each record is a MAC frame with its FCS.
Timestamps are virtual time, so the same run gives the same bytes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable

from iotbench.net.packet import TRANSMITTED, Packet

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
    """Every transmitted packet (queue drops never reached the wire), in send order."""
    sent = sorted(
        (p for p in packets if p.fate in TRANSMITTED),
        key=lambda p: p.t_sent,  # stable: ties keep the order of sending
    )
    return pcap_header(linktype) + b"".join(pcap_record(p.t_sent, p.data) for p in sent)


def write_pcap(path: str, packets: Iterable[Packet], linktype: int = LINKTYPE_RAW) -> None:
    """Write atomically: a reader never sees a half-written capture."""
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(pcap_bytes(packets, linktype))
    os.replace(tmp, path)
