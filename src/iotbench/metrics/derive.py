"""Metrics derived from the packet log and the item log, and nothing else.

Protocol code never counts metrics itself: every number here is computed from
what crossed the links (packets with their fates) and what the applications
recorded (items). docs/metrics.md defines each name; keep the two in step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from iotbench.metrics.items import DELIVERED, GIVEN_UP, Item
from iotbench.net.ieee802154 import FCS_BYTES
from iotbench.net.packet import DELIVERED as PKT_DELIVERED
from iotbench.net.packet import LOST, OUTAGE, TRANSMITTED, Packet

DATA_TLV_TYPE = 6  # an NDN Data packet

PERCENTILES = (50, 90, 95, 99)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile by linear interpolation between closest ranks."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def wire_metrics(packets: Iterable[Packet], t0: float = -math.inf, t1: float = math.inf) -> dict:
    """Packets and bytes put on the wire (both directions) with t_sent in [t0, t1).

    Half-open: a packet sent at the very instant t1 (an ACK of the packet whose
    arrival ends a download) is a reaction to the end, not part of the interval.
    """
    count = total = ip_b = transport_b = app_b = dropped = 0
    for p in packets:
        if p.fate not in TRANSMITTED or not t0 <= p.t_sent < t1:
            continue
        count += 1
        total += len(p.data)
        ip_b += p.ip_header_len
        transport_b += p.transport_header_len
        app_b += p.app_header_len
        if p.fate == LOST or p.fate == OUTAGE:
            # Not `!= delivered`: a packet still in flight when the run ends was not lost.
            dropped += 1
    return {
        "packets": count,
        "bytes_total": total,
        "bytes_ip_header": ip_b,
        "bytes_transport_header": transport_b,
        "bytes_app_header": app_b,
        "bytes_payload": total - ip_b - transport_b - app_b,
        "packets_lost": dropped,
    }


def node_packet_metrics(packets: Iterable[Packet], node: str) -> dict:
    """Packets sent by `node` (put on the wire) plus packets delivered to it."""
    sent = received = 0
    for p in packets:
        ch = p.channel
        if ch.src == node and p.fate in TRANSMITTED:
            sent += 1
        elif ch.dst == node and p.fate == PKT_DELIVERED:
            received += 1
    return {"packets_total": sent + received, "packets_sent": sent, "packets_received": received}


def item_metrics(items: Sequence[Item], t_first_packet: float | None) -> dict:
    """Delivery counts, latency distribution, throughput and task completion time."""
    delivered = [it for it in items if it.status == DELIVERED]
    given_up = sum(1 for it in items if it.status == GIVEN_UP)
    latencies = sorted(it.t_end - it.t_start for it in delivered)
    ends = [it.t_end for it in items if it.t_end is not None]
    start = items[0].t_start if items else 0.0
    if t_first_packet is not None:
        start = min(start, t_first_packet)
    end = max(ends) if ends else start
    duration = end - start
    payload = sum(it.payload_bytes for it in delivered)
    # Throughput counts the time in which readouts arrived: the wait before the
    # last give-up is bookkeeping, not traffic (a NON client waits 93 s for it).
    window = max(it.t_end for it in delivered) - start if delivered else 0.0
    if window > 0:
        items_per_s, payload_bps = len(delivered) / window, 8 * payload / window
    else:
        items_per_s = payload_bps = 0.0 if items and not delivered else math.nan
    out = {
        "items": len(items),
        "items_delivered": len(delivered),
        "items_given_up": given_up,
        "items_unfinished": len(items) - len(delivered) - given_up,
        "delivery_ratio": len(delivered) / len(items) if items else math.nan,
        "task_completion_time_s": duration,
        "throughput_items_per_s": items_per_s,
        "throughput_payload_bps": payload_bps,
        "latency_mean_s": sum(latencies) / len(latencies) if latencies else math.nan,
        "latency_min_s": latencies[0] if latencies else math.nan,
        "latency_max_s": latencies[-1] if latencies else math.nan,
    }
    for q in PERCENTILES:
        out[f"latency_p{q}_s"] = percentile(latencies, q)
    return out


def ndn_frame_metrics(packets: Iterable[Packet], node: str) -> dict:
    """NDN over 802.15.4 (S5): how many frames each Data that `node` sent took.

    A frame's payload is an NDN packet (a Data starts with type 6) or an S5
    fragment (3-byte header: first bit 1, the sequence number in the low 5
    bits of the first byte, a 16-bit identification); a fragmented Data is
    recognised by its first fragment. NaN when the node sent no Data.
    """
    data_packets = data_frames = 0
    data_idents: set[int] = set()
    fragments: dict[int, int] = {}
    for p in packets:
        if p.channel.src != node or p.fate not in TRANSMITTED:
            continue
        payload = p.data[p.ip_header_len - FCS_BYTES : -FCS_BYTES]
        if not payload:
            continue
        if not payload[0] & 0x80:
            if payload[0] == DATA_TLV_TYPE:
                data_packets += 1
                data_frames += 1
            continue
        ident = int.from_bytes(payload[1:3], "big")
        fragments[ident] = fragments.get(ident, 0) + 1
        if payload[0] & 0x1F == 0 and payload[3:4] == bytes((DATA_TLV_TYPE,)):
            data_idents.add(ident)
            data_packets += 1
    data_frames += sum(fragments[i] for i in data_idents)
    return {"fragments_per_data": data_frames / data_packets if data_packets else math.nan}


def rtt_ms_metrics(items: Sequence[Item]) -> dict:
    """S5's round trip: the latency of delivered items, in milliseconds."""
    latencies = [1000 * (it.t_end - it.t_start) for it in items if it.status == DELIVERED]
    if not latencies:
        return {"rtt_mean_ms": math.nan, "rtt_min_ms": math.nan, "rtt_max_ms": math.nan}
    return {
        "rtt_mean_ms": sum(latencies) / len(latencies),
        "rtt_min_ms": min(latencies),
        "rtt_max_ms": max(latencies),
    }
