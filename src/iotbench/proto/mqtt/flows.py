"""QoS 0/1/2 message flows (3.1.1 sections 4.3, 4.4, 4.6), shared by client and broker.

Both ends of an MQTT connection publish to each other with the same rules,
so the client and each broker session own the same three pieces:

- `PacketIds`: the 16-bit Packet Identifiers this sender has in use (2.3.1).
- `Outbox`: messages we publish. QoS 1/2 messages are "in flight" from their
  first PUBLISH until PUBACK (QoS 1) or PUBCOMP (QoS 2); at most
  `max_inflight` at a time, the rest wait in a FIFO queue of at most
  `max_queued_messages`, QoS 0 messages included, so that the peer sees
  messages in the order they were published (4.6). While offline nothing
  is sent; going online re-sends every in-flight message in its original
  order with DUP=1, or its PUBREL once PUBREC came (4.4), then the queue.
  With a retry schedule, unacknowledged messages are also re-sent over the
  same connection (proto/retransmit.py timing).
- `Inbox`: messages we receive. QoS 1 is acknowledged each time it arrives
  (at least once); QoS 2 follows method B of figure 4.3: the Packet
  Identifier is stored and the message delivered on the first PUBLISH,
  later copies are only answered with PUBREC until PUBREL releases the id.

Nothing here encodes bytes: packets go to the owner's `send(packet)`, or
`send(now, packet)` for the Outbox, whose sends happen inside its own calls.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable

from iotbench.proto.retransmit import BackoffSchedule, Retransmission
from iotbench.proto.timers import earliest

from .codec import Packet, PubAck, PubComp, Publish, PubRec, PubRel

__all__ = ["Inbox", "OutMessage", "Outbox", "PacketIds"]

Send = Callable[[Packet], None]
TimedSend = Callable[[float, Packet], None]


class PacketIds:
    """Packet Identifiers in use by one sender; a new one is the next free after the last."""

    __slots__ = ("_next", "_used")

    def __init__(self, rng: random.Random) -> None:
        # A random start: identifiers of consecutive sessions rarely collide in traces.
        self._next = rng.randrange(1, 0x10000)
        self._used: set[int] = set()

    def allocate(self) -> int | None:
        """A currently unused identifier (1..65535), or None when all are in use."""
        if len(self._used) >= 0xFFFF:
            return None
        pid = self._next
        while pid in self._used:
            pid = pid % 0xFFFF + 1
        self._used.add(pid)
        self._next = pid % 0xFFFF + 1
        return pid

    def release(self, pid: int) -> None:
        self._used.discard(pid)

    def __len__(self) -> int:
        return len(self._used)


class OutMessage:
    """One message we publish and its progress."""

    __slots__ = (
        "packet_id",
        "payload",
        "qos",
        "released",
        "retain",
        "retx",
        "topic",
        "transmissions",
    )

    def __init__(self, topic: str, payload: bytes, qos: int, retain: bool) -> None:
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.packet_id: int | None = None
        self.released = False  # QoS 2: PUBREC received, PUBREL sent
        self.transmissions = 0  # PUBLISH sends; > 0 means a re-send carries DUP=1
        self.retx: Retransmission | None = None


class Outbox:
    """Messages we publish: in-flight window, FIFO queue, acknowledgements, re-sends."""

    __slots__ = (
        "_rng",
        "_send",
        "ids",
        "inflight",
        "max_inflight",
        "max_queued",
        "on_done",
        "queue",
        "retry",
    )

    def __init__(
        self,
        ids: PacketIds,
        rng: random.Random,
        *,
        max_inflight: int,
        max_queued: int,
        retry: BackoffSchedule | None = None,
        on_done: Callable[[OutMessage], None] | None = None,
    ) -> None:
        self.ids = ids
        self._rng = rng
        self.max_inflight = max_inflight
        self.max_queued = max_queued
        self.retry = retry
        self.on_done = on_done or (lambda msg: None)
        #: packet id -> message, in the order of their first PUBLISH.
        self.inflight: dict[int, OutMessage] = {}
        self.queue: deque[OutMessage] = deque()
        self._send: TimedSend | None = None

    @property
    def online(self) -> bool:
        return self._send is not None

    def __len__(self) -> int:
        return len(self.inflight) + len(self.queue)

    # ---- publishing ---------------------------------------------------------------

    def add(self, now: float, msg: OutMessage) -> bool:
        """Send `msg` now or queue it; False (and nothing changes) when it cannot be taken."""
        if self._send is not None and not self.queue and self._has_room(msg):
            return self._start(now, msg)
        if len(self.queue) >= self.max_queued:
            return False
        if msg.qos and self._assign_id(msg) is None:
            return False
        self.queue.append(msg)
        return True

    def _has_room(self, msg: OutMessage) -> bool:
        return msg.qos == 0 or len(self.inflight) < self.max_inflight

    def _assign_id(self, msg: OutMessage) -> int | None:
        """The message's packet id, allocated if it has none; None when all are in use."""
        if msg.packet_id is None:
            msg.packet_id = self.ids.allocate()
        return msg.packet_id

    def _start(self, now: float, msg: OutMessage) -> bool:
        """First transmission of a message that has room in the window."""
        if msg.qos == 0:
            self._publish(now, msg)
            self.on_done(msg)
            return True
        pid = self._assign_id(msg)
        if pid is None:
            return False
        self.inflight[pid] = msg
        self._publish(now, msg)
        self._arm(now, msg)
        return True

    def _pump(self, now: float) -> None:
        """Move queued messages into the window while there is room, in order."""
        queue = self.queue
        while self._send is not None and queue and self._has_room(queue[0]):
            self._start(now, queue.popleft())

    def _publish(self, now: float, msg: OutMessage) -> None:
        assert self._send is not None  # only called while online
        self._send(
            now,
            Publish(
                msg.topic,
                msg.payload,
                msg.qos,
                msg.retain,
                dup=msg.transmissions > 0,
                packet_id=msg.packet_id,
            ),
        )
        msg.transmissions += 1

    def _retransmit(self, now: float, pid: int, msg: OutMessage) -> None:
        """Re-send in-flight message `msg`, whose packet id is `pid`, while online."""
        if msg.released:
            assert self._send is not None  # only called while online
            self._send(now, PubRel(pid))
        else:
            self._publish(now, msg)

    def _arm(self, now: float, msg: OutMessage) -> None:
        if self.retry is not None:
            msg.retx = Retransmission(self.retry, self._rng)
            msg.retx.start(now)

    # ---- acknowledgements -----------------------------------------------------------

    def puback(self, now: float, pid: int) -> bool:
        """PUBACK; False when it matches no QoS 1 message in flight."""
        msg = self.inflight.get(pid)
        if msg is None or msg.qos != 1:
            return False
        self._complete(now, pid, msg)
        return True

    def pubrec(self, now: float, pid: int) -> bool:
        """PUBREC: send PUBREL (again, for a repeated PUBREC); False when unmatched."""
        msg = self.inflight.get(pid)
        if msg is None or msg.qos != 2:
            return False
        msg.released = True
        if self._send is not None:
            self._send(now, PubRel(pid))
            self._arm(now, msg)
        return True

    def pubcomp(self, now: float, pid: int) -> bool:
        """PUBCOMP; False when it matches no released QoS 2 message."""
        msg = self.inflight.get(pid)
        if msg is None or not msg.released:
            return False
        self._complete(now, pid, msg)
        return True

    def _complete(self, now: float, pid: int, msg: OutMessage) -> None:
        del self.inflight[pid]
        self.ids.release(pid)
        self.on_done(msg)
        self._pump(now)

    # ---- connection changes and timers ------------------------------------------------

    def go_online(self, now: float, send: TimedSend) -> None:
        """A connection is up: re-send what is in flight (4.4), then the queue."""
        self._send = send
        for pid, msg in list(self.inflight.items()):
            self._retransmit(now, pid, msg)
            self._arm(now, msg)
        self._pump(now)

    def go_offline(self) -> None:
        """The connection is gone: keep every message, send nothing, stop re-send timers."""
        self._send = None
        for msg in self.inflight.values():
            msg.retx = None

    def discard_inflight(self) -> dict[int, OutMessage]:
        """Drop the in-flight messages (a clean session), returned by packet id, in
        the order of their first PUBLISH; queued ones stay."""
        dropped = dict(self.inflight)
        for pid in dropped:
            self.ids.release(pid)
        self.inflight.clear()
        return dropped

    def drop_unless(self, keep: Callable[[OutMessage], bool]) -> int:
        """Drop the messages, in flight or queued, that `keep` refuses; returns how many.
        A QoS 2 message whose PUBREL is due stays: the peer has it already."""
        before = len(self)
        for pid, msg in list(self.inflight.items()):
            if not msg.released and not keep(msg):
                del self.inflight[pid]
                self.ids.release(pid)
        kept: deque[OutMessage] = deque()
        for msg in self.queue:
            if keep(msg):
                kept.append(msg)
            elif msg.packet_id is not None:
                self.ids.release(msg.packet_id)
        self.queue = kept
        return before - len(self)

    def next_deadline(self) -> float | None:
        """The earliest re-send deadline over this connection, or None."""
        deadlines = [m.retx.deadline_s for m in self.inflight.values() if m.retx is not None]
        return earliest(deadlines)

    def handle_timer(self, now: float) -> int:
        """Re-send every message whose deadline passed; returns how many were re-sent."""
        if self._send is None:
            return 0
        resent = 0
        for pid, msg in list(self.inflight.items()):
            retx = msg.retx
            if retx is None or retx.deadline_s > now:
                continue
            if retx.on_timeout(now):
                self._retransmit(now, pid, msg)
                resent += 1
            else:
                msg.retx = None  # given up on this connection; re-sent on the next one
        return resent


class Inbox:
    """Acknowledges incoming PUBLISHes and remembers QoS 2 ids until PUBREL."""

    __slots__ = ("awaiting_release",)

    def __init__(self) -> None:
        self.awaiting_release: set[int] = set()

    def on_publish(self, pkt: Publish, send: Send) -> bool:
        """Acknowledge `pkt`; True when it is to be delivered (not a QoS 2 duplicate)."""
        if pkt.qos == 0:
            return True
        pid = pkt.packet_id
        assert pid is not None  # decode() refuses a QoS 1 or 2 PUBLISH without one
        if pkt.qos == 1:
            send(PubAck(pid))
            return True
        fresh = pid not in self.awaiting_release
        self.awaiting_release.add(pid)
        send(PubRec(pid))
        return fresh

    def on_pubrel(self, pid: int, send: Send) -> None:
        """PUBREL: forget the id and answer PUBCOMP, known id or not (4.3.3)."""
        self.awaiting_release.discard(pid)
        send(PubComp(pid))

    def clear(self) -> None:
        self.awaiting_release.clear()
