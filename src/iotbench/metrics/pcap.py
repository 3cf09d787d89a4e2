"""pcap files of simulated traffic, readable by Wireshark and tshark.

Classic pcap with nanosecond timestamps (magic 0xa1b23c4d) and LINKTYPE_RAW
(101): each record is a bare IPv4 or IPv6 packet, as the simulator put it on
the wire. Timestamps are virtual time, so the same run gives the same bytes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable

from iotbench.net.packet import TRANSMITTED, Packet

LINKTYPE_RAW = 101
_MAGIC_NS = 0xA1B23C4D
_GLOBAL = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")
SNAPLEN = 262144


def pcap_bytes(packets: Iterable[Packet]) -> bytes:
    """Every transmitted packet (queue drops never reached the wire), in send order."""
    out = [_GLOBAL.pack(_MAGIC_NS, 2, 4, 0, 0, SNAPLEN, LINKTYPE_RAW)]
    sent = sorted(
        (p for p in packets if p.fate in TRANSMITTED),
        key=lambda p: p.t_sent,  # stable: ties keep the order of sending
    )
    for p in sent:
        ns = round(p.t_sent * 1e9)
        n = len(p.data)
        out.append(_RECORD.pack(ns // 1_000_000_000, ns % 1_000_000_000, n, n))
        out.append(p.data)
    return b"".join(out)


def write_pcap(path: str, packets: Iterable[Packet]) -> None:
    """Write atomically: a reader never sees a half-written capture."""
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(pcap_bytes(packets))
    os.replace(tmp, path)
