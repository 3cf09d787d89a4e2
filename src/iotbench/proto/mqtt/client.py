"""A sans-I/O MQTT 3.1.1 client: one byte stream, time passed in.

Driving it (the simulator's TCP and real/stream.py do exactly this):

    client = MqttClient(random.Random(seed), MqttClientParams(keep_alive_s=60))
    client.connect(now)                        # once the transport is connected
    client.receive_data(now, data)             # bytes from the peer, any split
    client.connection_lost(now)                # the transport closed or failed
    client.handle_timer(now)                   # when now >= client.next_timer()
    pid = client.publish(now, "a/b", b"21.5", qos=1)
    client.subscribe(now, [("a/#", 2)]); client.unsubscribe(now, ["a/#"])
    client.ping(now); client.disconnect(now)
    transport.write(client.data_to_send())     # drains
    for event in client.events(): ...          # Connected, Published, MessageReceived...
    if client.close_requested: transport.close()

One MqttClient outlives its connections: after ConnectionClosed, open a new
transport and call connect(now) again. With clean_session=False the session
(unacknowledged messages, QoS 2 ids) carries over and is resumed as 3.1.1
section 4.4 requires. Nothing here reads a clock, opens a socket or touches
global random state; the rng only picks the first Packet Identifier.

Choices the specification leaves open, and what this client does:

- PUBLISH, SUBSCRIBE and UNSUBSCRIBE wait for CONNACK (the spec allows sending
  them right after CONNECT; like most clients we do not, so a refused
  connection carries no application data). Calls made while not connected
  are queued and sent once connected; PINGREQ and DISCONNECT need a
  connection.
- publish() raises QueueFull when the in-flight window and the queue are
  both full (MqttClientParams.max_inflight, max_queued_messages), and
  ValueError for an invalid topic, QoS or payload.
- SUBSCRIBE and UNSUBSCRIBE are not re-sent: section 4.4 requires re-sending
  only PUBLISH and PUBREL. If the connection ends before SUBACK/UNSUBACK,
  the application subscribes again.
- connect() with clean_session discards the session (3.1.2.4): messages in
  flight are reported as PublishFailed("session-discarded"); messages that
  were never sent stay queued and go out on the new session.
- Session Present 0 after a persistent connect while we hold in-flight
  messages (the broker lost the session): we re-send them anyway, the
  broker treats them as new. Session Present 1 without local state is
  accepted too (3.2.2.2 asks us to close only if we never had a session,
  which a fresh client object cannot tell from a restarted one); after a
  clean-session CONNECT it breaks 3.2.2.2 and is a protocol error.
- Keep-alive (3.1.2.10): PINGREQ after keep_alive_s without sending any
  packet; no PINGRESP within ping_timeout_s closes the connection
  ("keep-alive-timeout"); no CONNACK within connack_timeout_s closes it
  ("connack-timeout").
- A malformed packet, a packet a server must not send, or a packet before
  CONNACK is a protocol error: ProtocolError, then ConnectionClosed and
  close_requested (4.8). Acknowledgements for unknown Packet Identifiers are
  ignored (counted in stats.unknown_acks).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import Final

from mypy_extensions import mypyc_attr

from ..keepalive import ping_due_s
from ..timers import earliest
from .codec import (
    MAX_REMAINING_LENGTH,
    ConnAck,
    Connect,
    Disconnect,
    MqttDecodeError,
    Packet,
    PacketFramer,
    PingReq,
    PingResp,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    SubAck,
    Subscribe,
    UnsubAck,
    Unsubscribe,
    decode,
    encode,
    encode_string,
)
from .events import (
    ClientEvent,
    CloseReason,
    Connected,
    ConnectionClosed,
    ConnectionRefused,
    MessageReceived,
    PingResponse,
    ProtocolError,
    Published,
    PublishFailed,
    Subscribed,
    Unsubscribed,
)
from .flows import Inbox, Outbox, OutMessage, PacketIds
from .params import MqttClientParams
from .topics import is_valid_filter, is_valid_topic

__all__ = ["MqttClient", "MqttClientStats", "QueueFull"]


class ConnectionState(Enum):
    IDLE = "idle"  # no connection (before connect(), after it closed)
    CONNECTING = "connecting"  # CONNECT sent, waiting for CONNACK
    CONNECTED = "connected"


# Final, and compared by identity: compiled, a plain module-level name is looked
# up in the module's dict at each use, and `==` on an Enum is a generic call
# (next_timer runs after every call into the client).
_IDLE: Final = ConnectionState.IDLE
_CONNECTING: Final = ConnectionState.CONNECTING
_CONNECTED: Final = ConnectionState.CONNECTED
#: Where a connection may go from each state (_enter); it may always end (IDLE).
_NEXT = {_IDLE: (_CONNECTING,), _CONNECTING: (_CONNECTED,), _CONNECTED: ()}


# mypyc does not compile a subclass of RuntimeError: this one stays a Python class.
@mypyc_attr(native_class=False)
class QueueFull(RuntimeError):
    """publish() found the in-flight window and the message queue full."""


@dataclass(slots=True)
class MqttClientStats:
    """Counters for diagnosis (metrics come from packet records, not from here)."""

    packets_sent: int = 0
    packets_received: int = 0
    decode_errors: int = 0
    protocol_errors: int = 0
    retransmissions: int = 0
    duplicates_received: int = 0
    unknown_acks: int = 0
    pings_sent: int = 0


class MqttClient:
    """One MQTT 3.1.1 client as a sans-I/O state machine over one byte stream."""

    def __init__(
        self,
        rng: random.Random,
        params: MqttClientParams = MqttClientParams(),  # noqa: B008 - frozen, safe to share
    ) -> None:
        self.rng = rng
        self.params = params
        self.stats = MqttClientStats()
        self.close_requested = False
        self._state = _IDLE
        self._framer = PacketFramer(params.max_packet_size_bytes)
        self._out = bytearray()
        self._events: list[ClientEvent] = []
        self._ids = PacketIds(rng)
        self._outbox = Outbox(
            self._ids,
            rng,
            max_inflight=params.max_inflight,
            max_queued=params.max_queued_messages,
            retry=params.retry_schedule(),
            on_done=self._on_published,
        )
        self._inbox = Inbox()
        # SUBSCRIBE / UNSUBSCRIBE: waiting to be sent, and sent awaiting their ack.
        self._control: deque[Subscribe | Unsubscribe] = deque()
        self._pending_sub: dict[int, int] = {}  # packet id -> number of filters
        self._pending_unsub: set[int] = set()
        self._connect_sent_s = 0.0
        self._last_sent_s = 0.0
        self._ping_sent_s: float | None = None

    # =====================================================================
    # outputs
    # =====================================================================

    def data_to_send(self) -> bytes:
        """Bytes to write to the transport since the last call (drains)."""
        data = bytes(self._out)
        self._out.clear()
        return data

    def events(self) -> list[ClientEvent]:
        """Events since the last call, in order (drains)."""
        ev = self._events
        self._events = []
        return ev

    def next_timer(self) -> float | None:
        """Absolute time of the earliest deadline, or None."""
        deadlines = []
        p = self.params
        if self._state is _CONNECTING:
            if p.connack_timeout is not None:
                deadlines.append(self._connect_sent_s + p.connack_timeout)
        elif self._state is _CONNECTED:
            if self._ping_sent_s is not None:
                if p.ping_timeout is not None:
                    deadlines.append(self._ping_sent_s + p.ping_timeout)
            else:
                ping = ping_due_s(self._last_sent_s, p.keep_alive_s)
                if ping is not None:
                    deadlines.append(ping)
            retry = self._outbox.next_deadline()
            if retry is not None:
                deadlines.append(retry)
        return earliest(deadlines)

    @property
    def connected(self) -> bool:
        """CONNACK accepted the current connection."""
        return self._state is _CONNECTED

    @property
    def in_flight(self) -> int:
        """QoS 1/2 messages sent and not completely acknowledged."""
        return len(self._outbox.inflight)

    @property
    def queued(self) -> int:
        """Messages waiting for the window or a connection."""
        return len(self._outbox.queue)

    # =====================================================================
    # application calls
    # =====================================================================

    def connect(self, now: float) -> None:
        """Send CONNECT on a freshly opened transport."""
        if self._state is not _IDLE:
            raise RuntimeError("connect() while a connection is open; disconnect first")
        p = self.params
        self.close_requested = False
        self._framer = PacketFramer(p.max_packet_size_bytes)
        self._out.clear()
        if p.clean_session:
            for pid in self._outbox.discard_inflight():
                self._events.append(PublishFailed(pid, "session-discarded"))
            self._inbox.clear()
        self._enter(_CONNECTING)
        self._connect_sent_s = now
        self._send(
            now,
            Connect(p.client_id, p.clean_session, p.keep_alive_s, p.will, p.username, p.password),
        )

    def publish(
        self, now: float, topic: str, payload: bytes, qos: int = 0, retain: bool = False
    ) -> int | None:
        """Publish a message; returns its Packet Identifier (None for QoS 0).

        Published(packet_id) follows when it is done (see events.Published).
        """
        if not is_valid_topic(topic):
            raise ValueError(f"invalid topic name {topic!r}: empty or with wildcards (4.7)")
        if qos not in (0, 1, 2):
            raise ValueError(f"QoS must be 0, 1 or 2, got {qos!r}")
        msg = OutMessage(topic, bytes(payload), qos, bool(retain))
        # Fail now on what encode() would refuse later (NUL, lengths), not inside a timer.
        size = len(encode_string(topic, "topic name")) + 2 + len(msg.payload)
        if size > MAX_REMAINING_LENGTH:
            raise ValueError(f"PUBLISH of {size} bytes exceeds {MAX_REMAINING_LENGTH} (2.2.3)")
        if not self._outbox.add(now, msg):
            raise QueueFull(
                f"{self.in_flight} messages in flight and {self.queued} queued "
                f"(max_inflight {self.params.max_inflight}, "
                f"max_queued_messages {self.params.max_queued_messages})"
            )
        return msg.packet_id

    def subscribe(self, now: float, topics: list[tuple[str, int]]) -> int:
        """Subscribe to (filter, requested QoS) pairs; returns the SUBSCRIBE's Packet Identifier."""
        topics = [(f, q) for f, q in topics]
        for topic_filter, qos in topics:
            if not is_valid_filter(topic_filter):
                raise ValueError(f"invalid topic filter {topic_filter!r} (4.7.1)")
            if qos not in (0, 1, 2):
                raise ValueError(f"QoS must be 0, 1 or 2, got {qos!r}")
        if not topics:
            raise ValueError("subscribe needs at least one topic filter")
        pid = self._new_control_id()
        packet = Subscribe(pid, tuple(topics))
        encode(packet)  # ValueError now for an unencodable filter
        self._pending_sub[pid] = len(topics)
        self._send_control(now, packet)
        return pid

    def unsubscribe(self, now: float, topic_filters: list[str]) -> int:
        """Unsubscribe from filters; returns the UNSUBSCRIBE's Packet Identifier."""
        topic_filters = list(topic_filters)
        for topic_filter in topic_filters:
            if not is_valid_filter(topic_filter):
                raise ValueError(f"invalid topic filter {topic_filter!r} (4.7.1)")
        if not topic_filters:
            raise ValueError("unsubscribe needs at least one topic filter")
        pid = self._new_control_id()
        packet = Unsubscribe(pid, tuple(topic_filters))
        encode(packet)
        self._pending_unsub.add(pid)
        self._send_control(now, packet)
        return pid

    def ping(self, now: float) -> None:
        """Send PINGREQ now (keep-alive sends them by itself)."""
        if self._state is not _CONNECTED:
            raise RuntimeError("ping() needs a connection")
        self._send_ping(now)

    def disconnect(self, now: float) -> None:
        """Send DISCONNECT and ask for the transport to be closed (no-op when not connected)."""
        if self._state is _IDLE:
            return
        self._send(now, Disconnect())
        self._close("disconnect")

    # =====================================================================
    # transport inputs
    # =====================================================================

    def _open(self) -> bool:
        """A connection is open or being opened. (A method: mypy would take the
        state as fixed by a test before a loop whose packets may close it.)"""
        return self._state is not _IDLE

    def receive_data(self, now: float, data: bytes) -> None:
        """Bytes from the transport, in any split. Never raises for any input bytes."""
        if self._state is _IDLE:
            return  # no connection of ours: nothing to say to it
        framer = self._framer
        framer.feed(data)
        while self._open():
            try:
                raw = framer.next_packet()
                if raw is None:
                    return
                packet = decode(raw)
            except MqttDecodeError as exc:
                self.stats.decode_errors += 1
                self._protocol_error(f"malformed packet: {exc}")
                return
            self.stats.packets_received += 1
            self._on_packet(now, packet)

    def connection_lost(self, now: float) -> None:
        """The transport closed (or failed); no-op when we closed it ourselves."""
        if self._state is not _IDLE:
            self._close("connection-lost")

    def handle_timer(self, now: float) -> None:
        """Run every deadline at or before `now`."""
        p = self.params
        if self._state is _CONNECTING:
            timeout = p.connack_timeout
            if timeout is not None and now >= self._connect_sent_s + timeout:
                self._close("connack-timeout")
            return
        if self._state is not _CONNECTED:
            return
        if self._ping_sent_s is not None:
            timeout = p.ping_timeout
            if timeout is not None and now >= self._ping_sent_s + timeout:
                self._close("keep-alive-timeout")
                return
        else:
            ping = ping_due_s(self._last_sent_s, p.keep_alive_s)
            if ping is not None and now >= ping:
                self._send_ping(now)
        self.stats.retransmissions += self._outbox.handle_timer(now)

    # =====================================================================
    # internals
    # =====================================================================

    def _send(self, now: float, packet: Packet) -> None:
        self._out += encode(packet)
        self.stats.packets_sent += 1
        self._last_sent_s = now

    def _send_ping(self, now: float) -> None:
        self._send(now, PingReq())
        self.stats.pings_sent += 1
        if self._ping_sent_s is None:
            self._ping_sent_s = now

    def _new_control_id(self) -> int:
        pid = self._ids.allocate()
        if pid is None:
            raise QueueFull("all 65535 packet identifiers are in use")
        return pid

    def _send_control(self, now: float, packet: Subscribe | Unsubscribe) -> None:
        if self._state is _CONNECTED:
            self._send(now, packet)
        else:
            self._control.append(packet)

    def _on_published(self, msg: OutMessage) -> None:
        self._events.append(Published(msg.packet_id, msg.transmissions))

    def _enter(self, state: ConnectionState) -> None:
        """The one place the connection's state changes: as _NEXT allows, or to IDLE
        from anywhere; another move is a bug of ours."""
        if state is not _IDLE and state not in _NEXT[self._state]:
            raise RuntimeError(f"MQTT client cannot go from {self._state.value} to {state.value}")
        self._state = state

    def _close(self, reason: CloseReason) -> None:
        """End the current connection: stop sending, report once, ask for the close."""
        self._enter(_IDLE)
        self._ping_sent_s = None
        self._outbox.go_offline()
        # Sent SUBSCRIBE/UNSUBSCRIBE will never be answered (they are not re-sent).
        for pid in [*self._pending_sub, *self._pending_unsub]:
            if not any(c.packet_id == pid for c in self._control):
                self._ids.release(pid)
                self._pending_sub.pop(pid, None)
                self._pending_unsub.discard(pid)
        self.close_requested = True
        self._events.append(ConnectionClosed(reason))

    def _protocol_error(self, message: str) -> None:
        self.stats.protocol_errors += 1
        self._events.append(ProtocolError(message))
        self._close("protocol-error")

    def _on_packet(self, now: float, packet: Packet) -> None:
        t = type(packet)
        if self._state is _CONNECTING:
            if isinstance(packet, ConnAck):
                self._on_connack(now, packet)
            else:
                self._protocol_error(f"{t.__name__} before CONNACK (3.2)")
            return
        if isinstance(packet, Publish):
            self._on_publish(now, packet)
        elif isinstance(packet, PubAck):
            self._ack(self._outbox.puback(now, packet.packet_id))
        elif isinstance(packet, PubRec):
            self._ack(self._outbox.pubrec(now, packet.packet_id))
        elif isinstance(packet, PubComp):
            self._ack(self._outbox.pubcomp(now, packet.packet_id))
        elif isinstance(packet, PubRel):
            self._inbox.on_pubrel(packet.packet_id, lambda p: self._send(now, p))
        elif isinstance(packet, SubAck):
            self._on_suback(packet)
        elif isinstance(packet, UnsubAck):
            if packet.packet_id in self._pending_unsub:
                self._pending_unsub.discard(packet.packet_id)
                self._ids.release(packet.packet_id)
                self._events.append(Unsubscribed(packet.packet_id))
            else:
                self.stats.unknown_acks += 1
        elif isinstance(packet, PingResp):
            if self._ping_sent_s is not None:
                self._events.append(PingResponse(now - self._ping_sent_s))
                self._ping_sent_s = None
        else:
            # CONNECT, SUBSCRIBE, UNSUBSCRIBE, PINGREQ, DISCONNECT, a second CONNACK.
            self._protocol_error(f"a server does not send {t.__name__}")

    def _ack(self, matched: bool) -> None:
        if not matched:
            self.stats.unknown_acks += 1

    def _on_connack(self, now: float, packet: ConnAck) -> None:
        if packet.return_code != 0:
            self._events.append(ConnectionRefused(packet.return_code))
            self._close("refused")
            return
        if packet.session_present and self.params.clean_session:
            self._protocol_error("Session Present 1 after a clean-session CONNECT (3.2.2.2)")
            return
        self._enter(_CONNECTED)
        self._events.append(Connected(packet.session_present, 0))
        while self._control:
            self._send(now, self._control.popleft())
        self.stats.retransmissions += len(self._outbox.inflight)  # re-sent just below (4.4)
        self._outbox.go_online(now, self._send)

    def _on_publish(self, now: float, packet: Publish) -> None:
        if not is_valid_topic(packet.topic):
            self._protocol_error(f"PUBLISH to invalid topic name {packet.topic!r} (3.3.2.1)")
            return
        if self._inbox.on_publish(packet, lambda p: self._send(now, p)):
            self._events.append(
                MessageReceived(packet.topic, packet.payload, packet.qos, packet.retain, packet.dup)
            )
        else:
            self.stats.duplicates_received += 1

    def _on_suback(self, packet: SubAck) -> None:
        count = self._pending_sub.get(packet.packet_id)
        if count is None:
            self.stats.unknown_acks += 1
            return
        if len(packet.return_codes) != count:
            self._protocol_error(
                f"SUBACK has {len(packet.return_codes)} return codes for {count} filters (3.9.3)"
            )
            return
        del self._pending_sub[packet.packet_id]
        self._ids.release(packet.packet_id)
        self._events.append(Subscribed(packet.packet_id, packet.return_codes))
