"""Point-to-point links: two channels, one per direction.

A channel models a transmitter with a drop-tail queue, a serialisation rate,
a propagation delay, and the impairments of its direction. It computes each
packet's departure and arrival times when the packet is offered, so a packet
costs one kernel event (its arrival), not one per queue transition. The
run's observers (metrics/observers.py) hear of each packet as it passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from iotbench.metrics.observers import Observers
from iotbench.net.impairments import Impairment
from iotbench.net.packet import DELIVERED, LOST, OUTAGE, QUEUE_FULL, Packet
from iotbench.sim.clock import Clock


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class LinkEnd(Protocol):
    """What a link joins: an IP interface (net/node.py) or an 802.15.4 one (net/l2.py)."""

    @property
    def node(self) -> _Named: ...

    def receive(self, pkt: Packet) -> None: ...

    def attach(self, channel: Channel) -> None: ...


class Channel:
    """One direction of a link: sender's queue and transmitter, the wire, the receiver."""

    def __init__(
        self,
        sim: Clock,
        src: str,
        dst: str,
        deliver: Callable[[Packet], None],
        *,
        rate_bps: float,
        delay_s: float,
        queue_packets: int,
        impairment: Impairment,
        observers: Observers,
        overhead_bytes: int = 0,
        framed_bytes: Callable[[bytes], int] | None = None,
    ) -> None:
        self.sim = sim
        self.src = src
        self.dst = dst
        self.name = f"{src}->{dst}"
        self.deliver = deliver
        self.rate_bps = rate_bps
        # Bytes on the air that are not part of a packet (an 802.15.4 PHY's
        # preamble and headers): they cost transmission time only.
        self.overhead_bytes = overhead_bytes
        # A line that frames each packet (a serial line's SLIP or ethos, net/serial.py):
        # the packet's bytes on the line, escapes included; None: the packet's own.
        self.framed_bytes = framed_bytes
        self.delay_s = delay_s
        if queue_packets < 0:
            raise ValueError(f"queue_packets must be >= 0, not {queue_packets}")
        self.queue_packets = queue_packets
        self.impairment = impairment
        self.observers = observers
        self._busy_until = 0.0
        # Finish times of packets accepted and not yet fully transmitted (at
        # most queue_packets + 1, so a list's pop from the front is cheap).
        self._finishes: list[float] = []
        # Bound once: each packet's arrival is posted with it.
        self._arrive_callback = self._arrive

    def send(self, pkt: Packet) -> None:
        sim = self.sim
        now = sim.now
        pkt.medium = self
        pkt.src = self.src
        pkt.dst = self.dst
        if self.rate_bps:
            finishes = self._finishes
            if self._busy_until > now:
                # Busy: forget the packets that have left; the last one has not.
                while finishes[0] <= now:
                    finishes.pop(0)
                # The head of `finishes` is on the wire; the others wait in the queue.
                if len(finishes) > self.queue_packets:
                    pkt.t_sent = pkt.t_done = now
                    pkt.fate = QUEUE_FULL
                    self.observers.finished(pkt)
                    return
                start = self._busy_until
            else:
                # Idle (the usual case at IoT rates): every accepted packet has left.
                finishes.clear()
                start = now
            size = len(pkt.data) if self.framed_bytes is None else self.framed_bytes(pkt.data)
            finish = start + (size + self.overhead_bytes) * 8 / self.rate_bps
            self._busy_until = finish
            finishes.append(finish)
        else:
            start = finish = now
        pkt.t_sent = start
        observers = self.observers
        observers.transmitted(pkt)
        imp = self.impairment
        if imp.loss.lost():
            pkt.fate = LOST
            pkt.t_done = finish
            observers.finished(pkt)
            return
        sim.post(finish + self.delay_s + imp.delay.extra(), self._arrive_callback, pkt)

    def _arrive(self, pkt: Packet) -> None:
        now = self.sim.now
        pkt.t_done = now
        observers = self.observers
        if self.impairment.outages.down_during(pkt.t_sent, now):
            pkt.fate = OUTAGE
            observers.finished(pkt)
            return
        pkt.fate = DELIVERED
        observers.received(pkt, self.dst)
        observers.finished(pkt)
        self.deliver(pkt)

    @property
    def queued(self) -> int:
        """Packets waiting for the transmitter now (not counting the one on the wire)."""
        now = self.sim.now
        return max(0, sum(1 for f in self._finishes if f > now) - 1)


class PointToPointLink:
    """A full-duplex link between two interfaces, each direction its own channel."""

    def __init__(
        self,
        sim: Clock,
        a: LinkEnd,
        b: LinkEnd,
        *,
        observers: Observers,
        rate_bps: float = 0.0,
        delay_s: float = 0.0,
        queue_packets: int = 100,
        impair_a_to_b: Impairment | None = None,
        impair_b_to_a: Impairment | None = None,
        overhead_bytes: int = 0,
        framed_bytes: Callable[[bytes], int] | None = None,
    ) -> None:
        self.a, self.b = a, b
        self.a_to_b = Channel(
            sim,
            a.node.name,
            b.node.name,
            b.receive,
            rate_bps=rate_bps,
            delay_s=delay_s,
            queue_packets=queue_packets,
            impairment=impair_a_to_b or Impairment(),
            observers=observers,
            overhead_bytes=overhead_bytes,
            framed_bytes=framed_bytes,
        )
        self.b_to_a = Channel(
            sim,
            b.node.name,
            a.node.name,
            a.receive,
            rate_bps=rate_bps,
            delay_s=delay_s,
            queue_packets=queue_packets,
            impairment=impair_b_to_a or Impairment(),
            observers=observers,
            overhead_bytes=overhead_bytes,
            framed_bytes=framed_bytes,
        )
        a.attach(self.a_to_b)
        b.attach(self.b_to_a)
