"""Metrics derived from the packet log and the item log, and nothing else.

Protocol code never counts metrics itself: every number here is computed from
what crossed the links (packets with their fates) and what the applications
recorded (items). docs/metrics.md defines each name; keep the two in step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from iotbench.metrics.items import DELIVERED, GIVEN_UP, Item
from iotbench.net.packet import DELIVERED as PKT_DELIVERED
from iotbench.net.packet import LOST, OUTAGE, TRANSMITTED, Packet

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
