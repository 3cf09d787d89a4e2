"""Traffic meters: packets and bytes on the wire, per layer and per node, as they pass.

`TrafficMeter` is the observer that every run has. It keeps running sums, so
its memory does not grow with the run: per layer, the packets and bytes that
were put on the wire and how many of them were lost on the way; per node,
what it sent, received and lost at its own queue.

A window restricts the per-layer sums to packets sent in [t0, t1), for
metrics that cover one exchange rather than the run (S1's object download:
from the client's first packet of the download to the arrival of the last
object byte). `TrafficMeter(sim, windowed=True)` counts nothing until
`arm_window(node)` is called and `node` then puts a packet on the wire (t0);
`close_window(t1)` ends it. A packet accepted before the window
closed but still queued at t1 (its `t_sent` lies at or after t1) is taken
back out: the meter remembers the packets it counted whose transmission lies
in the future, which are no more than the links' queues hold.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Final

from iotbench.metrics.observers import Observer
from iotbench.net.packet import ACK, CONTROL, DATA, LOST_FATES, QUEUE_FULL, Packet
from iotbench.sim import Simulator

# Every medium (a link's channel, a MAC) names a packet's sender before its
# observers hear of it.
_NAMED: Final = "a packet reached the observers without its sender's name"


class LayerSums:
    """Packets and bytes by layer."""

    __slots__ = ("app", "ip", "link", "lost", "packets", "total", "transport")

    def __init__(self) -> None:
        self.packets = self.total = self.link = self.ip = self.transport = self.app = 0
        self.lost = 0

    def add(self, pkt: Packet, sign: int = 1) -> None:
        self.packets += sign
        self.total += sign * len(pkt.data)
        self.link += sign * pkt.link_header_len
        self.ip += sign * pkt.ip_header_len
        self.transport += sign * pkt.transport_header_len
        self.app += sign * pkt.app_header_len


class KindSum:
    """Packets and bytes of one kind. (Compiled, the counts are fields of the
    object: a list of two ints made a new int object for nearly every frame.)"""

    __slots__ = ("bytes", "packets")

    def __init__(self) -> None:
        self.packets = self.bytes = 0


class KindSums:
    """Packets and bytes of each kind (data, control, acknowledgments) on the air."""

    __slots__ = ("by_kind",)

    def __init__(self) -> None:
        self.by_kind: dict[str, KindSum] = {}

    def add(self, pkt: Packet) -> None:
        sums = self.by_kind.get(pkt.kind)
        if sums is None:
            sums = self.by_kind[pkt.kind] = KindSum()
        sums.packets += 1
        sums.bytes += len(pkt.data)

    def of(self, kind: str) -> KindSum:
        """The sums of `kind` (zero for a kind never seen)."""
        return self.by_kind.get(kind) or KindSum()


class NodeCounts:
    """What one node put on the wire, received, lost on the way, lost at its queue."""

    __slots__ = ("lost", "queue_drops", "received", "sent")

    def __init__(self) -> None:
        self.sent = self.received = self.lost = self.queue_drops = 0


class TrafficMeter(Observer):
    def __init__(self, sim: Simulator, windowed: bool = False) -> None:
        self.sim = sim
        self.wire = LayerSums()
        self.kinds = KindSums()
        self.nodes: dict[str, NodeCounts] = {}
        self.queue_drops = 0
        # The window (see the module doc). Without one, every packet counts.
        self.t0 = -math.inf
        self.t1 = math.inf
        self._windowed = windowed
        self._opener: str | None = None
        self._counting = not windowed
        self._future: list[tuple[float, int, Packet]] = []  # counted, t_sent still ahead
        self._seq = itertools.count()

    def node(self, name: str) -> NodeCounts:
        counts = self.nodes.get(name)
        if counts is None:
            counts = self.nodes[name] = NodeCounts()
        return counts

    # ------------------------------------------------------------- the window

    def arm_window(self, node: str) -> None:
        """Count from the next packet that `node` puts on the wire."""
        self._opener = node

    def close_window(self, t1: float) -> None:
        """Stop counting at t1 (now): packets sent from t1 on are not part of it."""
        self.t1 = t1
        for t_sent, _, pkt in self._future:
            if t_sent >= t1:
                self.wire.add(pkt, -1)
        self._future.clear()

    @property
    def window_start(self) -> float | None:
        """t0, once a packet of the armed node opened the window."""
        return self.t0 if self.t0 > -math.inf else None

    # ------------------------------------------------------------- the hooks

    def transmitted(self, pkt: Packet) -> None:
        # On every packet's path: written out rather than calling helpers.
        src = pkt.src
        assert src is not None, _NAMED
        counts = self.nodes.get(src)
        if counts is None:
            counts = self.node(src)
        counts.sent += 1
        if pkt.kind != DATA:  # the rare kinds only: data is the rest
            self.kinds.add(pkt)
        if not self._windowed:
            w = self.wire
            w.packets += 1
            w.total += len(pkt.data)
            w.link += pkt.link_header_len
            w.ip += pkt.ip_header_len
            w.transport += pkt.transport_header_len
            w.app += pkt.app_header_len
            return
        t_sent = pkt.t_sent
        if not self._counting:
            if pkt.src != self._opener:
                return
            self._counting = True
            self.t0 = t_sent
        if not self.t0 <= t_sent < self.t1:
            return
        self.wire.add(pkt)
        if self.t1 == math.inf:
            self._remember_future(pkt, t_sent)

    def _remember_future(self, pkt: Packet, t_sent: float) -> None:
        # Only windowed meters need this; the packets it keeps are the ones
        # queued now (the window may close before they leave).
        future = self._future
        now = self.sim.now
        while future and future[0][0] < now:
            heapq.heappop(future)
        heapq.heappush(future, (t_sent, next(self._seq), pkt))

    def received(self, pkt: Packet, node: str) -> None:
        counts = self.nodes.get(node)
        if counts is None:
            counts = self.node(node)
        counts.received += 1

    def finished(self, pkt: Packet) -> None:
        fate = pkt.fate
        src = pkt.src
        assert src is not None, _NAMED
        if fate in LOST_FATES:
            self.node(src).lost += 1
            # Lost on its way: counted with the packets of its window.
            if self._counting and self.t0 <= pkt.t_sent < self.t1:
                self.wire.lost += 1
        elif fate == QUEUE_FULL:
            self.queue_drops += 1
            self.node(src).queue_drops += 1

    # ------------------------------------------------------------- the metrics

    def wire_metrics(self) -> dict[str, int]:
        w = self.wire
        return {
            "packets": w.packets,
            "bytes_total": w.total,
            "bytes_link_header": w.link,
            "bytes_ip_header": w.ip,
            "bytes_transport_header": w.transport,
            "bytes_app_header": w.app,
            "bytes_payload": w.total - w.link - w.ip - w.transport - w.app,
            "packets_lost": w.lost,
            "packets_queue_dropped": self.queue_drops,
        }

    def kind_metrics(self) -> dict[str, int]:
        """Control and acknowledgment traffic, and the data traffic that is the rest."""
        out = {}
        control = self.kinds.of(CONTROL)
        acks = self.kinds.of(ACK)
        out["packets_control"], out["bytes_control"] = control.packets, control.bytes
        out["packets_ack"], out["bytes_ack"] = acks.packets, acks.bytes
        out["packets_data"] = self.wire.packets - control.packets - acks.packets
        out["bytes_data"] = self.wire.total - control.bytes - acks.bytes
        return out

    def node_metrics(self, name: str) -> dict[str, int]:
        """Packets `name` put on the wire plus packets delivered to it."""
        c = self.nodes.get(name) or NodeCounts()
        return {
            "packets_total": c.sent + c.received,
            "packets_sent": c.sent,
            "packets_received": c.received,
        }
