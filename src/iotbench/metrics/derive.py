"""Item metrics, and the NDN frame meter, from the accumulators a run keeps.

Protocol code never counts metrics itself: every number here comes from
what crossed the media (observers that the media feed as packets pass, see
traffic.py) and what the applications recorded (items.py).
docs/metrics.md defines each name; keep the two in step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from iotbench.metrics.items import ItemStats
from iotbench.metrics.observers import Observer
from iotbench.net.packet import Packet

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


@dataclass(frozen=True)
class ItemSummary:
    """The items' delivery, latency distribution, throughput and completion time."""

    started: int
    delivered: int
    given_up: int
    task_completion_time_s: float
    items_per_s: float
    payload_bps: float
    latency_mean_s: float
    latency_min_s: float
    latency_max_s: float
    #: PERCENTILES' latencies, in their order.
    latency_percentiles_s: tuple[float, ...]

    @property
    def unfinished(self) -> int:
        """Items neither delivered nor given up when the run ended."""
        return self.started - self.delivered - self.given_up

    def latency_percentile_s(self, q: int) -> float:
        return self.latency_percentiles_s[PERCENTILES.index(q)]

    def metrics(self) -> dict[str, float | int]:
        started = self.started
        out: dict[str, float | int] = {
            "items": started,
            "items_delivered": self.delivered,
            "items_given_up": self.given_up,
            "items_unfinished": self.unfinished,
            "delivery_ratio": self.delivered / started if started else math.nan,
            "task_completion_time_s": self.task_completion_time_s,
            "throughput_items_per_s": self.items_per_s,
            "throughput_payload_bps": self.payload_bps,
            "latency_mean_s": self.latency_mean_s,
            "latency_min_s": self.latency_min_s,
            "latency_max_s": self.latency_max_s,
        }
        for q, value in zip(PERCENTILES, self.latency_percentiles_s, strict=True):
            out[f"latency_p{q}_s"] = value
        return out


def summarize_items(stats: ItemStats, t_first_packet: float | None) -> ItemSummary:
    """The items' summary from what finished items left behind; `t_first_packet`:
    when the traffic began, if before the first item (a connection set up first)."""
    started, delivered = stats.started, stats.delivered
    latencies = sorted(stats.latencies)
    start = stats.first_start if stats.first_start is not None else 0.0
    if t_first_packet is not None:
        start = min(start, t_first_packet)
    end = stats.last_end if stats.last_end is not None else start
    # Throughput counts the time in which readouts arrived: the wait before the
    # last give-up is bookkeeping, not traffic (a NON client waits 93 s for it).
    last = stats.last_delivered_end
    window = last - start if delivered and last is not None else 0.0
    if window > 0:
        items_per_s = delivered / window
        payload_bps = 8 * stats.payload_bytes / window
    else:
        items_per_s = payload_bps = 0.0 if started and not delivered else math.nan
    return ItemSummary(
        started=started,
        delivered=delivered,
        given_up=stats.given_up,
        task_completion_time_s=end - start,
        items_per_s=items_per_s,
        payload_bps=payload_bps,
        latency_mean_s=sum(latencies) / len(latencies) if latencies else math.nan,
        latency_min_s=latencies[0] if latencies else math.nan,
        latency_max_s=latencies[-1] if latencies else math.nan,
        latency_percentiles_s=tuple(percentile(latencies, q) for q in PERCENTILES),
    )


def item_metrics(stats: ItemStats, t_first_packet: float | None) -> dict[str, float | int]:
    """Delivery counts, latency distribution, throughput and task completion time."""
    return summarize_items(stats, t_first_packet).metrics()


def rtt_ms_metrics(stats: ItemStats) -> dict[str, float]:
    """S5's round trip: the latency of delivered items, in milliseconds."""
    latencies = [1000 * latency for latency in stats.latencies]
    if not latencies:
        return {"rtt_mean_ms": math.nan, "rtt_min_ms": math.nan, "rtt_max_ms": math.nan}
    return {
        "rtt_mean_ms": sum(latencies) / len(latencies),
        "rtt_min_ms": min(latencies),
        "rtt_max_ms": max(latencies),
    }


class NdnFrameMeter(Observer):
    """NDN over 802.15.4 (S5): how many frames each Data that `node` sent took.

    A frame's payload is an NDN packet (a Data starts with type 6) or an S5
    fragment (3-byte header: first bit 1, the More-Fragments bit 0x20, the
    sequence number in the low 5 bits of the first byte, a 16-bit
    identification); a fragmented Data is recognised by its first fragment.
    Only frames the MAC sends for the first time count (a retry is the same
    frame again), and the fragments of a Data are followed until the last
    one, so the meter holds only Data still being sent.
    """

    def __init__(self, node: str) -> None:
        self.node = node
        self.data_packets = 0
        self.data_frames = 0
        self._open: dict[int, None] = {}  # identifications of fragmented Data under way

    def transmitted(self, pkt: Packet) -> None:
        if pkt.src != self.node or pkt.attempt > 1:
            return
        data = pkt.data
        payload = data[pkt.link_header_len - 2 : -2]  # between the MAC header and the FCS
        if not payload:
            return
        first = payload[0]
        if not first & 0x80:
            if first == DATA_TLV_TYPE:
                self.data_packets += 1
                self.data_frames += 1
            return
        ident = int.from_bytes(payload[1:3], "big")
        if first & 0x1F == 0:  # the first fragment tells what the packet is
            if payload[3:4] == bytes((DATA_TLV_TYPE,)):
                self.data_packets += 1
                self._open[ident] = None
            else:
                self._open.pop(ident, None)
        if ident in self._open:
            self.data_frames += 1
            if not first & 0x20:  # the last fragment
                del self._open[ident]

    def metrics(self) -> dict[str, float]:
        frames, packets = self.data_frames, self.data_packets
        return {"fragments_per_data": frames / packets if packets else math.nan}
