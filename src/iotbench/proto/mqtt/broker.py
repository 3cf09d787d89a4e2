"""A sans-I/O MQTT 3.1.1 broker serving many byte-stream connections, time passed in.

Driving it (the simulator's TCP and real/stream.py do exactly this):

    broker = MqttBroker(random.Random(seed), MqttBrokerParams())
    broker.connection_made(now, conn)          # conn: any hashable id of the driver's
    broker.receive_data(now, conn, data)       # bytes from that peer, any split
    broker.connection_lost(now, conn)          # the peer closed or the transport failed
    broker.handle_timer(now)                   # when now >= broker.next_timer()
    for conn, data in broker.data_to_send(): ...      # write first (drains),
    for conn in broker.connections_to_close(): ...    # then close (drains)
    for event in broker.events(): ...          # ClientConnected, ClientDisconnected

Bytes queued for a connection before it appears in connections_to_close()
(a CONNACK refusal, say) must be written before it is closed. The broker
never raises for any bytes a peer sends: a malformed packet or a protocol
violation closes that connection (4.8), publishes its will, and is counted
in `stats`. Nothing here reads a clock, opens a socket or touches global
random state; the rng names clients that connect with an empty client id
and picks each session's first Packet Identifier.

What it implements: clean and persistent sessions keyed by client id, with
session takeover (3.1.4); topic filters with `+`, `#` and the `$` rule
(topics.py); retained messages (3.3.1.3); will messages (3.1.2.5); QoS 0/1/2
in both directions with QoS downgrade to min(publish QoS, granted QoS)
(3.8.4); an in-flight window and a queue per session (flows.py), queueing
for offline persistent sessions; keep-alive enforcement (1.5 x keep-alive,
3.1.2.10); optionally, user names and passwords (auth.py) and topic access
control (acl.py) as mosquitto's password_file, allow_anonymous and
acl_file have them.

Choices the specification leaves open, and what this broker does:

- A client id of any length and any characters is accepted (3.1.3.1 allows
  more than the required 23 alphanumerics). An empty one with
  CleanSession=1 gets a unique "auto-<16 hex digits>" id; with
  CleanSession=0 it is refused with 0x02 (3.1.3.1, required).
- Takeover: the older connection is closed and its will is published (it
  ended without DISCONNECT); a persistent session passes to the new
  connection.
- A message matching several of one client's filters is delivered once, at
  the highest granted QoS among them (3.3.5). Retained messages are sent per
  new or replaced filter (3.8.4), after the SUBACK.
- QoS 0 messages for offline sessions are not queued (3.1.2.4 makes that
  optional); queued messages beyond max_queued_messages are dropped and
  counted (stats.dropped_queue_full).
- A syntactically invalid filter in SUBSCRIBE or UNSUBSCRIBE, or a PUBLISH
  or will to an invalid topic name, is a protocol violation: the
  connection is closed (4.8). SUBACK 0x80 is kept for filters refused
  because of max_subscriptions_per_session or the ACL.
- Topics starting with `$` may be published to like any other; only the
  wildcard rule of 4.7.2 treats them specially.
- With an ACL (mosquitto's rules): a filter the client may not read gets
  SUBACK 0x80, the other filters of the SUBSCRIBE are granted; a PUBLISH to
  a topic it may not write completes its QoS flow and goes nowhere (3.1.1
  cannot report it); each message reaches only subscribers that may read
  its topic, retained ones too; a will is published only if its client may
  write its topic, checked when it is published (as mosquitto 2.0 does); a
  persistent session taken up by a client that may read less loses the
  waiting messages that client may not read.
- A repeated PUBLISH QoS 2 with a stored Packet Identifier gets PUBREC again
  and is not delivered again (method B of 4.3.3); an unknown PUBREL still
  gets PUBCOMP. Acknowledgements for unknown ids are ignored and counted.
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Final

from ..errors import own_error
from ..keepalive import given_up_s
from ..timers import DEADLINE, OBJ, TimerQueue
from .acl import ClientAcl
from .auth import refusal
from .codec import (
    SUBACK_FAILURE,
    ConnAck,
    Connect,
    ConnectReturnCode,
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
    UnsupportedProtocolLevel,
    Will,
    decode,
    encode,
)
from .events import BrokerEvent, ClientConnected, ClientDisconnected, CloseReason
from .flows import Inbox, Outbox, OutMessage, PacketIds
from .params import MqttBrokerParams
from .topics import is_valid_filter, is_valid_topic, matches

__all__ = ["MqttBroker", "MqttBrokerStats"]

_CHECK: Final = 0  # the broker's one kind of timer: check a connection (_check)


def _stale(entry: list) -> bool:
    """A timer entry whose connection has closed, or wants checking at another time."""
    c = entry[OBJ]
    return not c.open or c.wake_at != entry[DEADLINE]


#: 3.1.2.10: the server closes after one and a half keep-alive periods of silence.
KEEP_ALIVE_GRACE: Final = 1.5


@dataclass(slots=True)
class MqttBrokerStats:
    """Counters for diagnosis (metrics come from packet records, not from here)."""

    connections: int = 0
    packets_received: int = 0
    packets_sent: int = 0
    decode_errors: int = 0
    protocol_errors: int = 0
    internal_errors: int = 0
    refused: int = 0
    takeovers: int = 0
    keep_alive_timeouts: int = 0
    connect_timeouts: int = 0
    messages_received: int = 0
    duplicates_received: int = 0
    messages_routed: int = 0
    retransmissions: int = 0
    dropped_queue_full: int = 0
    dropped_offline_qos0: int = 0
    retained_refused: int = 0
    subscriptions_refused: int = 0
    denied_subscriptions: int = 0
    denied_publishes: int = 0
    denied_deliveries: int = 0
    denied_wills: int = 0
    wills_published: int = 0
    unknown_acks: int = 0


class _Session:
    """What the broker keeps per client id (3.1.2.4), online or not."""

    __slots__ = ("acl", "clean", "client_id", "conn", "inbox", "made", "outbox", "subscriptions")

    def __init__(self, client_id: str, clean: bool, outbox: Outbox, made: int) -> None:
        self.client_id = client_id
        #: Sessions made before this one: the order the broker delivers a message in.
        self.made = made
        self.clean = clean
        self.subscriptions: dict[str, int] = {}  # filter -> granted QoS
        self.outbox = outbox
        self.inbox = Inbox()
        self.conn: _Conn | None = None
        #: What its current (or last) client may do; None: no ACL, everything.
        self.acl: ClientAcl | None = None


class _Conn:
    """One transport connection."""

    __slots__ = (
        "framer",
        "id",
        "keep_alive_s",
        "last_received_s",
        "open",
        "opened_s",
        "session",
        "wake_at",
        "will",
    )

    def __init__(self, conn: Hashable, now: float, framer: PacketFramer) -> None:
        self.id = conn
        self.framer = framer
        self.opened_s = now
        self.last_received_s = now
        self.keep_alive_s = 0
        self.session: _Session | None = None  # set by an accepted CONNECT
        self.will: Will | None = None
        self.open = True
        self.wake_at: float | None = None  # time of this connection's live timer entry


def _made(session: _Session) -> int:
    return session.made


class MqttBroker:
    """An MQTT 3.1.1 broker as a sans-I/O state machine over many byte streams."""

    def __init__(
        self,
        rng: random.Random,
        params: MqttBrokerParams = MqttBrokerParams(),  # noqa: B008 - frozen, safe to share
        strict: bool = True,
    ) -> None:
        self.rng = rng
        self.params = params
        self.strict = strict  # an exception of our own: raised, or logged (proto/errors.py)
        self.stats = MqttBrokerStats()
        self._retry = params.retry_schedule()
        self._conns: dict[Hashable, _Conn] = {}
        self._sessions: dict[str, _Session] = {}
        self._sessions_made = 0
        # The sessions subscribed to each filter, so that a message is matched
        # against each filter once, not against every session's (a broker behind an
        # MQTT-SN gateway holds a session per sensor): filters without wildcards by
        # the topic they match, the others to be matched one by one.
        self._exact: dict[str, dict[_Session, None]] = {}
        self._wildcard: dict[str, dict[_Session, None]] = {}
        self._retained: dict[str, tuple[bytes, int]] = {}  # topic -> (payload, QoS)
        self._out: dict[Hashable, bytearray] = {}
        self._to_close: list[Hashable] = []
        self._events: list[BrokerEvent] = []
        # [deadline, sequence, connection]; an entry is live while conn.wake_at == deadline.
        # Entries' objects: connections to check; an entry is stale when its
        # connection has closed or wants checking at another time (wake_at).
        self._timers = TimerQueue()
        # Connections whose deadlines may have moved, in the order they were touched
        # (a dict, not a set: a set of objects iterates in memory-address order,
        # which differs from process to process).
        self._dirty: dict[_Conn, None] = {}

    # =====================================================================
    # outputs
    # =====================================================================

    def data_to_send(self) -> list[tuple[Hashable, bytes]]:
        """(connection, bytes) to write, one entry per connection, in order (drains)."""
        out = [(conn, bytes(buf)) for conn, buf in self._out.items() if buf]
        self._out.clear()
        return out

    def connections_to_close(self) -> list[Hashable]:
        """Connections to close once their data is written (drains)."""
        conns = self._to_close
        self._to_close = []
        return conns

    def events(self) -> list[BrokerEvent]:
        """Diagnostic events since the last call (drains)."""
        ev = self._events
        self._events = []
        return ev

    def next_timer(self) -> float | None:
        """Absolute time of the earliest deadline, or None."""
        timers = self._timers
        while (entry := timers.peek()) is not None and _stale(entry):
            timers.pop()
        return entry[DEADLINE] if entry is not None else None

    # ---- inspection ------------------------------------------------------------------

    @property
    def sessions(self) -> dict[str, bool]:
        """client id -> online, for every stored session."""
        return {cid: s.conn is not None for cid, s in self._sessions.items()}

    @property
    def retained(self) -> dict[str, bytes]:
        """topic -> payload of every retained message."""
        return {topic: payload for topic, (payload, _) in self._retained.items()}

    def subscriptions(self, client_id: str) -> dict[str, int]:
        """filter -> granted QoS of a session (empty when there is none)."""
        s = self._sessions.get(client_id)
        return dict(s.subscriptions) if s is not None else {}

    def queued(self, client_id: str) -> int:
        """Messages in flight or queued for a session."""
        s = self._sessions.get(client_id)
        return len(s.outbox) if s is not None else 0

    # =====================================================================
    # inputs
    # =====================================================================

    def connection_made(self, now: float, conn: Hashable) -> None:
        """A new transport connection `conn` (any hashable id)."""
        old = self._conns.get(conn)
        if old is not None:  # the driver reused an id without reporting the loss
            self._close(now, old, "connection-lost", tell_driver=False)
        c = _Conn(conn, now, PacketFramer(self.params.max_packet_size_bytes))
        self._conns[conn] = c
        self.stats.connections += 1
        if self.params.connect_timeout_s is not None:
            self._wake(c, now + self.params.connect_timeout_s)

    def receive_data(self, now: float, conn: Hashable, data: bytes) -> None:
        """Bytes from connection `conn`, in any split. Never raises for any input bytes."""
        c = self._conns.get(conn)
        if c is None:
            return  # closed by us; bytes that were already on their way
        try:
            self._receive(now, c, data)
        except Exception as exc:  # noqa: BLE001 - a peer's bytes must never crash the broker
            self.stats.internal_errors += 1
            own_error(self.strict, exc, "MQTT broker")
            self._close(now, c, "protocol-error", f"internal error: {exc!r}")
        self._rearm_dirty()

    def connection_lost(self, now: float, conn: Hashable) -> None:
        """The peer closed `conn` or the transport failed (no-op for one we closed)."""
        c = self._conns.get(conn)
        if c is not None:
            self._close(now, c, "connection-lost", tell_driver=False)
            self._rearm_dirty()

    def handle_timer(self, now: float) -> None:
        """Run every deadline at or before `now`."""
        timers = self._timers
        while (entry := timers.peek()) is not None and entry[DEADLINE] <= now:
            timers.pop()
            if _stale(entry):
                continue
            c = entry[OBJ]
            c.wake_at = None
            try:
                self._check(now, c)
            except Exception as exc:  # noqa: BLE001 - see receive_data
                self.stats.internal_errors += 1
                own_error(self.strict, exc, "MQTT broker")
                self._close(now, c, "protocol-error", f"internal error: {exc!r}")
            self._dirty[c] = None
        self._rearm_dirty()

    # =====================================================================
    # connections
    # =====================================================================

    def _receive(self, now: float, c: _Conn, data: bytes) -> None:
        self._dirty[c] = None  # a packet may move its keep-alive or re-send deadlines
        framer = c.framer
        framer.feed(data)
        while c.open:
            try:
                raw = framer.next_packet()
                if raw is None:
                    return
                packet = decode(raw)
            except UnsupportedProtocolLevel as exc:
                self.stats.decode_errors += 1
                if c.session is None:
                    # 3.1.2.2: answer 0x01, then close.
                    self._write(c, ConnAck(False, ConnectReturnCode.UNACCEPTABLE_PROTOCOL_VERSION))
                    self.stats.refused += 1
                    self._close(now, c, "refused", str(exc))
                else:
                    self._violation(now, c, "second CONNECT (3.1.0-2)")
                return
            except MqttDecodeError as error:  # (not `exc`: compiled, one name has one type)
                self.stats.decode_errors += 1
                self._close(now, c, "protocol-error", f"malformed packet: {error}")
                return
            self.stats.packets_received += 1
            c.last_received_s = now
            self._on_packet(now, c, packet)

    def _write(self, c: _Conn, packet: Packet) -> None:
        buf = self._out.get(c.id)
        if buf is None:
            buf = self._out[c.id] = bytearray()
        buf += encode(packet)
        self.stats.packets_sent += 1

    def _close(
        self, now: float, c: _Conn, reason: CloseReason, detail: str = "", *, tell_driver=True
    ) -> None:
        """End connection `c`: detach its session, publish its will unless it said goodbye."""
        if not c.open:
            return
        c.open = False
        if self._conns.get(c.id) is c:
            del self._conns[c.id]
        if tell_driver:
            self._to_close.append(c.id)
        else:
            self._out.pop(c.id, None)  # nobody left to read it
        session = c.session
        if session is not None:
            session.conn = None
            session.outbox.go_offline()
            if session.clean and self._sessions.get(session.client_id) is session:
                self._discard(session)  # 3.1.2.4: it lasts as long as the connection
        if c.will is not None and reason != "disconnect":
            assert session is not None  # a will is kept only once CONNECT made a session
            will, c.will = c.will, None
            if session.acl is not None and not session.acl.may_write(will.topic):
                self.stats.denied_wills += 1
            else:
                self.stats.wills_published += 1
                self._route(now, will.topic, will.payload, will.qos, will.retain)
        c.will = None
        if reason == "protocol-error":
            self.stats.protocol_errors += 1
        self._events.append(
            ClientDisconnected(c.id, session.client_id if session else None, reason, detail)
        )

    def _violation(self, now: float, c: _Conn, detail: str) -> None:
        self._close(now, c, "protocol-error", detail)

    # ---- timers ---------------------------------------------------------------------

    def _wake(self, c: _Conn, deadline: float) -> None:
        """Make sure `c` is checked at `deadline` or earlier."""
        if c.wake_at is None or deadline < c.wake_at:
            c.wake_at = deadline
            self._timers.arm(deadline, _CHECK, c)

    def _deadline(self, c: _Conn) -> float | None:
        if c.session is None:
            timeout = self.params.connect_timeout_s
            return None if timeout is None else c.opened_s + timeout
        deadline = c.session.outbox.next_deadline()
        alive = given_up_s(c.last_received_s, c.keep_alive_s, KEEP_ALIVE_GRACE)
        if alive is not None:
            deadline = alive if deadline is None else min(deadline, alive)
        return deadline

    def _rearm_dirty(self) -> None:
        """Re-arm the connections whose deadlines may have moved.

        An earlier deadline gets a new heap entry; a later one keeps the live
        entry, which wakes the connection early once to re-arm (cheaper than
        an entry per received packet); no deadline at all retires the entry.
        """
        for c in self._dirty:
            if c.open:
                deadline = self._deadline(c)
                if deadline is None:
                    c.wake_at = None
                else:
                    self._wake(c, deadline)
        self._dirty.clear()

    def _check(self, now: float, c: _Conn) -> None:
        """A deadline of `c` may have passed: time-outs, then re-sends."""
        if c.session is None:
            timeout = self.params.connect_timeout_s
            if timeout is not None and now >= c.opened_s + timeout:
                self.stats.connect_timeouts += 1
                self._close(now, c, "connect-timeout")
            return
        alive = given_up_s(c.last_received_s, c.keep_alive_s, KEEP_ALIVE_GRACE)
        if alive is not None and now >= alive:
            self.stats.keep_alive_timeouts += 1
            self._close(now, c, "keep-alive-timeout")
            return
        self.stats.retransmissions += c.session.outbox.handle_timer(now)

    # =====================================================================
    # packets
    # =====================================================================

    def _on_packet(self, now: float, c: _Conn, packet: Packet) -> None:
        t = type(packet)
        session = c.session
        if session is None:
            if isinstance(packet, Connect):
                self._on_connect(now, c, packet)
            else:
                self._violation(now, c, f"{t.__name__} before CONNECT (3.1.0-1)")
            return
        if isinstance(packet, Publish):
            self._on_publish(now, c, session, packet)
        elif isinstance(packet, PubAck):
            self._ack(session.outbox.puback(now, packet.packet_id))
        elif isinstance(packet, PubRec):
            self._ack(session.outbox.pubrec(now, packet.packet_id))
        elif isinstance(packet, PubComp):
            self._ack(session.outbox.pubcomp(now, packet.packet_id))
        elif isinstance(packet, PubRel):
            session.inbox.on_pubrel(packet.packet_id, lambda p: self._write(c, p))
        elif isinstance(packet, Subscribe):
            self._on_subscribe(now, c, session, packet)
        elif isinstance(packet, Unsubscribe):
            self._on_unsubscribe(now, c, session, packet)
        elif isinstance(packet, PingReq):
            self._write(c, PingResp())
        elif isinstance(packet, Disconnect):
            c.will = None  # 3.14.4: discarded without publishing
            self._close(now, c, "disconnect")
        elif isinstance(packet, Connect):
            self._violation(now, c, "second CONNECT (3.1.0-2)")
        else:
            self._violation(now, c, f"a client does not send {t.__name__}")

    def _ack(self, matched: bool) -> None:
        if not matched:
            self.stats.unknown_acks += 1

    def _refuse(self, now: float, c: _Conn, code: int, detail: str) -> None:
        self._write(c, ConnAck(False, code))
        self.stats.refused += 1
        self._close(now, c, "refused", detail)

    def _on_connect(self, now: float, c: _Conn, packet: Connect) -> None:
        p = self.params
        if packet.will is not None and not is_valid_topic(packet.will.topic):
            self._violation(now, c, f"will topic {packet.will.topic!r} is invalid (3.1.3.3)")
            return
        client_id = packet.client_id
        if not client_id:
            if not packet.clean_session:
                self._refuse(now, c, ConnectReturnCode.IDENTIFIER_REJECTED, "empty client id")
                return
            client_id = self._new_client_id()
        code = refusal(p.passwords, p.anonymous_allowed, packet.username, packet.password)
        if code is not None:
            anonymous = code == ConnectReturnCode.NOT_AUTHORIZED
            self._refuse(now, c, code, "no user name" if anonymous else "bad user name or password")
            return
        session = self._sessions.get(client_id)
        if session is not None and session.conn is not None:
            # 3.1.4: the existing connection of this client id is closed.
            self.stats.takeovers += 1
            self._close(now, session.conn, "takeover")
            session = self._sessions.get(client_id)  # gone if it was a clean session
        if session is not None and packet.clean_session:
            self._discard(session)  # 3.1.2.4: discard the previous session
            session = None
        present = session is not None
        if session is None:
            if len(self._sessions) >= p.max_sessions:
                self._refuse(now, c, ConnectReturnCode.SERVER_UNAVAILABLE, "max_sessions reached")
                return
            outbox = Outbox(
                PacketIds(self.rng),
                self.rng,
                max_inflight=p.max_inflight,
                max_queued=p.max_queued_messages,
                retry=self._retry,
            )
            session = _Session(client_id, packet.clean_session, outbox, self._sessions_made)
            self._sessions[client_id] = session
            self._sessions_made += 1
        session.conn = c
        c.session = session
        if p.acl is not None:
            session.acl = acl = p.acl.for_client(client_id, packet.username)
            if present:  # mosquitto too re-checks what waits, for a client that may read less
                self.stats.denied_deliveries += session.outbox.drop_unless(
                    lambda msg: acl.may_read(msg.topic)
                )
        c.keep_alive_s = packet.keep_alive_s
        c.will = packet.will
        self._write(c, ConnAck(present, ConnectReturnCode.ACCEPTED))
        self._events.append(ClientConnected(c.id, client_id, present))
        # 4.4: re-send unacknowledged PUBLISH and PUBREL, then what queued while offline.
        resent = len(session.outbox.inflight)
        session.outbox.go_online(now, lambda _now, pkt: self._write(c, pkt))
        self.stats.retransmissions += resent

    def _new_client_id(self) -> str:
        while True:
            client_id = f"auto-{self.rng.getrandbits(64):016x}"
            if client_id not in self._sessions:
                return client_id

    def _on_publish(self, now: float, c: _Conn, session: _Session, packet: Publish) -> None:
        if not is_valid_topic(packet.topic):
            self._violation(now, c, f"PUBLISH to invalid topic name {packet.topic!r} (3.3.2.1)")
            return
        self.stats.messages_received += 1
        if not session.inbox.on_publish(packet, lambda p: self._write(c, p)):
            self.stats.duplicates_received += 1
        elif session.acl is not None and not session.acl.may_write(packet.topic):
            # Acknowledged above all the same: 3.1.1 has no way to say no (mosquitto too).
            self.stats.denied_publishes += 1
        else:
            self._route(now, packet.topic, packet.payload, packet.qos, packet.retain)

    def _on_subscribe(self, now: float, c: _Conn, session: _Session, packet: Subscribe) -> None:
        for topic_filter, _ in packet.topics:
            if not is_valid_filter(topic_filter):
                self._violation(now, c, f"invalid topic filter {topic_filter!r} (4.7.1)")
                return
        p = self.params
        acl = session.acl
        subs = session.subscriptions
        codes = []
        granted = []
        for topic_filter, qos in packet.topics:
            if acl is not None and not acl.may_subscribe(topic_filter):
                self.stats.denied_subscriptions += 1
                codes.append(SUBACK_FAILURE)
                continue
            if topic_filter not in subs and len(subs) >= p.max_subscriptions_per_session:
                self.stats.subscriptions_refused += 1
                codes.append(SUBACK_FAILURE)
                continue
            subs[topic_filter] = qos = min(qos, p.max_qos)
            self._index(topic_filter)[session] = None
            codes.append(qos)
            granted.append((topic_filter, qos))
        self._write(c, SubAck(packet.packet_id, tuple(codes)))
        # 3.3.1.3 / 3.8.4: matching retained messages go to each new or replaced subscription.
        for topic_filter, qos in granted:
            for topic, (payload, retained_qos) in self._retained.items():
                if not matches(topic_filter, topic):
                    continue
                if acl is not None and not acl.may_read(topic):
                    self.stats.denied_deliveries += 1
                    continue
                msg = OutMessage(topic, payload, min(qos, retained_qos), True)
                self._deliver(now, session, msg)

    def _on_unsubscribe(self, now: float, c: _Conn, session: _Session, packet: Unsubscribe):
        for topic_filter in packet.topics:
            if not is_valid_filter(topic_filter):
                self._violation(now, c, f"invalid topic filter {topic_filter!r} (4.7.1)")
                return
        for topic_filter in packet.topics:
            if session.subscriptions.pop(topic_filter, None) is not None:
                self._unindex(session, topic_filter)
        self._write(c, UnsubAck(packet.packet_id))  # even when nothing matched (3.10.4)

    # =====================================================================
    # routing
    # =====================================================================

    def _route(self, now: float, topic: str, payload: bytes, qos: int, retain: bool) -> None:
        """An accepted application message (or will) to every matching session."""
        if retain:
            self._store_retained(topic, payload, qos)
        best: dict[_Session, int] = {}  # session -> its matching filters' highest QoS
        for session in self._exact.get(topic, ()):
            best[session] = session.subscriptions[topic]
        for topic_filter, sessions in self._wildcard.items():
            if matches(topic_filter, topic):
                for session in sessions:
                    granted = session.subscriptions[topic_filter]
                    if granted > best.get(session, -1):
                        best[session] = granted
        for session in sorted(best, key=_made) if len(best) > 1 else best:
            if session.acl is not None and not session.acl.may_read(topic):
                self.stats.denied_deliveries += 1
                continue
            # 3.3.1.3: RETAIN is 0 towards existing subscriptions.
            self._deliver(now, session, OutMessage(topic, payload, min(qos, best[session]), False))

    def _index(self, topic_filter: str) -> dict[_Session, None]:
        """The sessions subscribed to `topic_filter` (made empty if none)."""
        index = self._wildcard if "+" in topic_filter or "#" in topic_filter else self._exact
        sessions = index.get(topic_filter)
        if sessions is None:
            sessions = index[topic_filter] = {}
        return sessions

    def _unindex(self, session: _Session, topic_filter: str) -> None:
        index = self._wildcard if "+" in topic_filter or "#" in topic_filter else self._exact
        sessions = index[topic_filter]
        del sessions[session]
        if not sessions:
            del index[topic_filter]

    def _discard(self, session: _Session) -> None:
        """The session ends: it gets no more messages."""
        del self._sessions[session.client_id]
        for topic_filter in session.subscriptions:
            self._unindex(session, topic_filter)

    def _deliver(self, now: float, session: _Session, msg: OutMessage) -> None:
        if session.conn is None and msg.qos == 0:
            self.stats.dropped_offline_qos0 += 1
            return
        if not session.outbox.add(now, msg):
            self.stats.dropped_queue_full += 1
            return
        self.stats.messages_routed += 1
        if session.conn is not None:
            self._dirty[session.conn] = None

    def _store_retained(self, topic: str, payload: bytes, qos: int) -> None:
        retained = self._retained
        if not payload:
            retained.pop(topic, None)  # 3.3.1.3: a zero-byte retained message deletes
        elif topic in retained or len(retained) < self.params.max_retained_messages:
            retained[topic] = (payload, qos)
        else:
            self.stats.retained_refused += 1
