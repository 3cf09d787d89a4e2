"""A sans-I/O MQTT-SN 1.2 client: datagrams in and out, time passed in.

Driving it (the simulator's DatagramDriver and real/driver.py do exactly this):

    client = MqttSnClient(random.Random(seed), MqttSnClientParams(client_id="dev1"))
    client.receive(now, datagram, addr)         # every datagram from the socket
    client.handle_timer(now)                    # when now >= client.next_timer()
    for data, addr in client.datagrams_to_send(): ...
    for event in client.events(): ...           # Connected, Registered, Published, ...

Application calls (section numbers of the MQTT-SN 1.2 specification):

    client.search_gateway(now, broadcast_addr, radius=1)    # 6.1 -> GatewayFound
    client.connect(now, gateway_addr, will=Will("w/dev1", b"gone"))  # 6.2, 6.3
    mid = client.register(now, "sensors/t")                 # 6.5 -> Registered
    client.publish(now, topic_id, b"21.5", qos=1)           # 6.6 -> Published
    client.publish(now, 7, b"x", qos=-1, topic_id_type=TopicIdType.PREDEFINED,
                   addr=gateway_addr)                       # 6.8, no connection needed
    client.subscribe(now, "sensors/#", qos=1)               # 6.9 -> Subscribed
    client.unsubscribe(now, "sensors/#")
    client.update_will_topic(now, "w/dev1", qos=1); client.update_will_message(now, b"x")
    client.ping(now)                                        # 6.11 (keep-alive does it too)
    client.sleep(now, 600); client.wake(now)                # 6.14 -> Asleep
    client.disconnect(now)                                  # 6.12 -> Disconnected

`addr` is any hashable; the client never looks inside it (except to put a
(host, port) gateway address into a GWINFO it answers with). Nothing here
reads a clock, opens a socket or touches global random state.

Choices the specification leaves open, and what this client does:

- One request at a time. 6.5, 6.6 and 6.9 allow one outstanding REGISTER,
  one QoS 1/2 PUBLISH and one SUBSCRIBE/UNSUBSCRIBE; this client keeps one
  outstanding request of any kind and queues the rest in call order
  (max_queued), so messages leave in the order the application asked for
  them, QoS 0 ones included. Calls made while connecting wait for CONNACK.
  `max_inflight` > 1 lets that many requests be outstanding at once, as
  RIOT's asymcute does (a request context each, S4's client: 128).
- Retransmission (6.13): every unicast message that expects a reply
  (CONNECT, WILLTOPIC, WILLMSG, REGISTER, PUBLISH QoS 1/2, PUBREL, SUBSCRIBE,
  UNSUBSCRIBE, PINGREQ, DISCONNECT, WILLTOPICUPD, WILLMSGUPD) is re-sent
  after Tretry, unchanged except DUP=1 on PUBLISH and SUBSCRIBE, at most
  Nretry times; then the client gives the gateway up: the request fails with
  "gateway-lost" and Disconnected("gateway-lost") follows. Tretry is fixed
  (6.13 has no back-off), the project's BackoffSchedule with factor 1.
- Rejections (REGACK, PUBACK, SUBACK, WILL*RESP with a return code) are
  reported as RequestFailed("rejected", return_code); retrying, after Twait
  for "congestion", is the application's decision. A PUBACK "invalid topic
  ID" also forgets that topic id, so the application registers again (6.6).
- A connection's end fails every pending request ("disconnected") and
  forgets the registered topic ids: the gateway registers again what it
  publishes after a reconnection (6.5).
- Received QoS 1 PUBLISHes are acknowledged and delivered each time (at
  least once, dup as sent); QoS 2 ones are delivered on the first PUBLISH and
  their MsgId kept until PUBREL (a repeat only gets PUBREC). A PUBLISH with a
  normal topic id this client does not know is answered with PUBACK "invalid
  topic ID" (5.4.13) and not delivered.
- Sleeping (6.14): sleep() needs an idle client (no request outstanding or
  queued). wake() sends PINGREQ with the client id; buffered messages
  arrive, and the PINGRESP that ends them puts the client back to sleep
  (Asleep). Each message from the gateway while awake restarts the PINGREQ's
  retry timer, since the gateway is busy serving us. connect() while asleep
  returns to the active state (the CONNECT's flags are then not acted on by
  a transparent gateway, so this client sends them unchanged but never
  offers a will).
- Keep-alive (6.11): PINGREQ after keep_alive_s without sending anything
  while active; none while asleep (the application wakes the client before
  its sleep duration runs out). A PINGREQ from the gateway gets PINGRESP.
- An unanswered DISCONNECT (Nretry re-sends) still ends the connection with
  "disconnect": the client wanted to leave, and the gateway will time it out.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Final, cast

from mypy_extensions import mypyc_attr

from iotbench.proto.errors import own_error
from iotbench.proto.keepalive import ping_due_s
from iotbench.proto.mqtt.codec import Will
from iotbench.proto.mqtt.topics import is_valid_filter, is_valid_topic
from iotbench.proto.retransmit import Retransmission
from iotbench.proto.timers import earliest

from .codec import (
    QOS_MINUS_ONE,
    Advertise,
    ConnAck,
    Connect,
    Disconnect,
    GwInfo,
    Message,
    MqttSnDecodeError,
    PingReq,
    PingResp,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    RegAck,
    Register,
    ReturnCode,
    SearchGw,
    SubAck,
    Subscribe,
    TopicIdType,
    UnsubAck,
    Unsubscribe,
    WillMsg,
    WillMsgReq,
    WillMsgResp,
    WillMsgUpd,
    WillTopic,
    WillTopicReq,
    WillTopicResp,
    WillTopicUpd,
    decode,
    encode,
    short_topic_id,
    short_topic_name,
)
from .discovery import Discovery, KnownGateway
from .events import (
    Asleep,
    ClientEvent,
    Connected,
    ConnectionRefused,
    Disconnected,
    DisconnectReason,
    MessageReceived,
    PingResponse,
    Published,
    Registered,
    RequestFailed,
    Subscribed,
    Unsubscribed,
    WillUpdated,
)
from .params import MqttSnClientParams
from .registry import TopicRegistry

__all__ = ["MqttSnClient", "MqttSnClientStats", "QueueFull", "Will"]


# Connection states (6.14, figure 4, seen from the client).
class ClientState(StrEnum):
    """A client's state (6.14, figure 4); the values are what messages show."""

    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"  # CONNECT sent (and the will exchange), waiting for CONNACK
    ACTIVE = "active"
    ASLEEP = "asleep"
    AWAKE = "awake"  # wake-up PINGREQ sent, buffered messages arriving until PINGRESP
    DISCONNECTING = "disconnecting"  # DISCONNECT (with or without a duration) sent


# Final: compiled, a plain module-level name is looked up in the module's dict
# at each use.
DISCONNECTED: Final = ClientState.DISCONNECTED
CONNECTING: Final = ClientState.CONNECTING
ACTIVE: Final = ClientState.ACTIVE
ASLEEP: Final = ClientState.ASLEEP
AWAKE: Final = ClientState.AWAKE
DISCONNECTING: Final = ClientState.DISCONNECTING

#: Where a client may go from each state (6.14; _enter); it may always end up
#: disconnected (refused, lost, told so).
_NEXT: dict[ClientState, tuple[ClientState, ...]] = {
    DISCONNECTED: (CONNECTING,),
    CONNECTING: (ACTIVE, DISCONNECTING),
    ACTIVE: (DISCONNECTING,),
    DISCONNECTING: (ASLEEP,),  # a DISCONNECT with a duration acknowledged
    ASLEEP: (CONNECTING, AWAKE, DISCONNECTING),
    AWAKE: (CONNECTING, ASLEEP, DISCONNECTING),
}

#: The largest Data field of a PUBLISH (3-octet Length, MsgType, Flags, TopicId, MsgId).
MAX_PUBLISH_DATA = 0xFFFF - 9


# mypyc does not compile a subclass of RuntimeError: this one stays a Python class.
@mypyc_attr(native_class=False)
class QueueFull(RuntimeError):
    """A request found max_queued requests already waiting."""


@dataclass(slots=True)
class MqttSnClientStats:
    """Counters for diagnosis (metrics come from packet records, not from here)."""

    messages_sent: int = 0
    messages_received: int = 0
    decode_errors: int = 0
    retransmissions: int = 0
    unexpected: int = 0
    duplicates_received: int = 0
    unknown_topic_ids: int = 0
    internal_errors: int = 0


class _Op:
    """One message that waits for a reply, with its Tretry/Nretry supervision."""

    __slots__ = ("kind", "message", "msg_id", "publishes", "retx", "sent_s", "topic")

    def __init__(self, kind: str, message: Message, msg_id: int | None = None) -> None:
        self.kind = kind
        self.message = message
        self.msg_id = msg_id
        self.retx: Retransmission | None = None
        self.sent_s = 0.0
        self.publishes = 0  # PUBLISH transmissions of a publish op
        self.topic = ""  # REGISTER / SUBSCRIBE: the topic name asked for


class MqttSnClient:
    """One MQTT-SN client as a sans-I/O state machine over datagrams."""

    def __init__(
        self,
        rng: random.Random,
        params: MqttSnClientParams = MqttSnClientParams(),  # noqa: B008 - frozen, safe to share
        strict: bool = True,
    ) -> None:
        self.rng = rng
        self.params = params
        self.strict = strict  # an exception of our own: raised, or logged (proto/errors.py)
        self.stats = MqttSnClientStats()
        self.state = DISCONNECTED
        #: The gateway of the current (or last) connection.
        self.gateway: Hashable | None = None
        self.sleep_duration_s = 0
        self._schedule = params.retry_schedule()
        self._out: list[tuple[bytes, Hashable]] = []
        self._events: list[ClientEvent] = []
        self._discovery = Discovery(rng, params, self._send, lambda e: self._events.append(e))
        self._topics = TopicRegistry(params.max_topics)
        self._next_msg_id = rng.randrange(1, 0x10000)
        self._used_ids: set[int] = set()
        self._will: Will | None = None
        self._control: _Op | None = None  # CONNECT, WILLTOPIC, WILLMSG, DISCONNECT, wake PINGREQ
        self._inflight: list[_Op] = []  # outstanding application requests (max_inflight)
        self._queue: deque[_Op] = deque()
        self._ping: _Op | None = None  # keep-alive / ping() PINGREQ
        self._last_sent_s = 0.0
        self._qos2_in: set[int] = set()

    # =====================================================================
    # outputs
    # =====================================================================

    def datagrams_to_send(self, now: float | None = None) -> list[tuple[bytes, Hashable]]:
        """Datagrams produced since the last call, in order (drains). `now` is unused."""
        out = self._out
        self._out = []
        return out

    def events(self) -> list[ClientEvent]:
        """Events since the last call, in order (drains)."""
        ev = self._events
        self._events = []
        return ev

    def next_timer(self) -> float | None:
        """Absolute time of the earliest deadline, or None."""
        deadlines = [
            op.retx.deadline_s
            for op in (self._control, self._ping, *self._inflight)
            if op is not None and op.retx is not None
        ]
        if self.state == ACTIVE and self._ping is None:
            ping = ping_due_s(self._last_sent_s, self.params.keep_alive_s)
            if ping is not None:
                deadlines.append(ping)
        discovery = self._discovery.next_deadline()
        if discovery is not None:
            deadlines.append(discovery)
        return earliest(deadlines)

    @property
    def gateways(self) -> dict[int, KnownGateway]:
        """Gateways known from ADVERTISE and GWINFO, by gateway id."""
        return self._discovery.gateways

    @property
    def connected(self) -> bool:
        return self.state == ACTIVE

    @property
    def queued(self) -> int:
        """Requests waiting (not counting the outstanding one)."""
        return len(self._queue)

    @property
    def busy(self) -> bool:
        """A request is outstanding or queued."""
        return bool(self._inflight) or bool(self._queue)

    def topic_id(self, topic: str) -> int | None:
        """The normal topic id registered for `topic` on this connection, or None."""
        return self._topics.id_of(topic)

    def topic_name(self, topic_id: int) -> str | None:
        """The topic name of a normal topic id on this connection, or None."""
        return self._topics.name_of(topic_id)

    # =====================================================================
    # application calls
    # =====================================================================

    def search_gateway(self, now: float, broadcast_addr: Hashable, radius: int = 1) -> None:
        """Broadcast SEARCHGW after a random delay (6.1); GatewayFound or GatewaySearchFailed."""
        self._discovery.search(now, broadcast_addr, radius)

    def connect(
        self, now: float, gateway: Hashable | None = None, will: Will | None = None
    ) -> None:
        """Send CONNECT (6.2). From asleep or awake: return to the active state (6.14)."""
        p = self.params
        if self.state in (ASLEEP, AWAKE):
            if gateway is not None and gateway != self.gateway:
                raise RuntimeError("connect() to another gateway while asleep; disconnect first")
            self._start_control(
                now, "connect", Connect(p.client_id, p.keep_alive_s, p.clean_session)
            )
            self._enter(CONNECTING)
            return
        if self.state != DISCONNECTED:
            raise RuntimeError(f"connect() while {self.state}")
        if gateway is None:
            raise ValueError("connect() needs the gateway's address")
        if will is not None:
            _check_will(will.topic, will.qos)
            if len(will.payload) > MAX_PUBLISH_DATA:
                raise ValueError("will message too long")
        self.gateway = gateway
        self._will = will
        self._topics.clear()
        self._qos2_in.clear()
        self._enter(CONNECTING)
        message = Connect(p.client_id, p.keep_alive_s, p.clean_session, will is not None)
        self._start_control(now, "connect", message)

    def register(self, now: float, topic: str) -> int:
        """REGISTER a topic name (6.5); returns the MsgId that Registered will carry."""
        _check_topic(topic)
        msg_id = self._new_msg_id()
        op = _Op("register", Register(0, msg_id, topic), msg_id)
        op.topic = topic
        self._submit(now, op)
        return msg_id

    def publish(
        self,
        now: float,
        topic: int | str,
        payload: bytes,
        qos: int = 0,
        retain: bool = False,
        *,
        topic_id_type: TopicIdType = TopicIdType.NORMAL,
        addr: Hashable | None = None,
    ) -> int | None:
        """Publish; returns the MsgId (None for QoS 0 and -1) that Published will carry.

        topic: NORMAL: a registered topic id or topic name; PREDEFINED: a topic
        id; SHORT: a two-octet topic name. QoS -1 (6.8) needs no connection and
        only PREDEFINED or SHORT topics; it goes to `addr` (default: the gateway
        of the last connect()).
        """
        topic_id = self._publish_topic_id(topic, topic_id_type)
        if qos not in (QOS_MINUS_ONE, 0, 1, 2):
            raise ValueError(f"QoS must be -1, 0, 1 or 2, got {qos!r}")
        payload = bytes(payload)
        if len(payload) > MAX_PUBLISH_DATA:
            raise ValueError(f"payload of {len(payload)} octets exceeds {MAX_PUBLISH_DATA}")
        if qos == QOS_MINUS_ONE:
            if topic_id_type == TopicIdType.NORMAL:
                raise ValueError("QoS -1 needs a predefined topic id or a short topic name (6.8)")
            dest = addr if addr is not None else self.gateway
            if dest is None:
                raise ValueError("QoS -1 publish needs the gateway's address")
            self._send(
                encode(Publish(topic_id, 0, payload, qos, retain, False, topic_id_type)), dest
            )
            self._events.append(Published(None, 1))
            return None
        msg_id = self._new_msg_id() if qos else None
        message = Publish(topic_id, msg_id or 0, payload, qos, retain, False, topic_id_type)
        self._submit(now, _Op("publish", message, msg_id))
        return msg_id

    def subscribe(
        self,
        now: float,
        topic: str | int,
        qos: int = 0,
        *,
        topic_id_type: TopicIdType = TopicIdType.NORMAL,
    ) -> int:
        """SUBSCRIBE (6.9) to a topic name or filter (NORMAL), a predefined topic id, or a
        short topic name; returns the MsgId that Subscribed will carry."""
        if qos not in (0, 1, 2):
            raise ValueError(f"QoS must be 0, 1 or 2, got {qos!r}")
        name, topic_id = self._subscription_topic(topic, topic_id_type)
        msg_id = self._new_msg_id()
        op = _Op("subscribe", Subscribe(msg_id, qos, topic_id_type, name, topic_id), msg_id)
        op.topic = name
        self._submit(now, op)
        return msg_id

    def unsubscribe(
        self, now: float, topic: str | int, *, topic_id_type: TopicIdType = TopicIdType.NORMAL
    ) -> int:
        """UNSUBSCRIBE (6.9); returns the MsgId that Unsubscribed will carry."""
        name, topic_id = self._subscription_topic(topic, topic_id_type)
        msg_id = self._new_msg_id()
        self._submit(
            now, _Op("unsubscribe", Unsubscribe(msg_id, topic_id_type, name, topic_id), msg_id)
        )
        return msg_id

    def update_will_topic(
        self, now: float, topic: str | None, qos: int = 0, retain: bool = False
    ) -> None:
        """WILLTOPICUPD (6.4); topic None deletes the will. WillUpdated("topic") follows."""
        if topic is None:
            message = WillTopicUpd(None)  # the empty WILLTOPICUPD: no flags to carry (5.4.22)
        else:
            _check_will(topic, qos)
            message = WillTopicUpd(topic, qos, retain)
        self._submit(now, _Op("will-topic", message))

    def update_will_message(self, now: float, message: bytes) -> None:
        """WILLMSGUPD (6.4). WillUpdated("message") follows."""
        message = bytes(message)
        if len(message) > MAX_PUBLISH_DATA:
            raise ValueError("will message too long")
        self._submit(now, _Op("will-message", WillMsgUpd(message)))

    def ping(self, now: float) -> None:
        """Send PINGREQ now (keep-alive sends them by itself); PingResponse follows."""
        if self.state != ACTIVE:
            raise RuntimeError("ping() needs an active connection")
        if self._ping is None:
            self._start_ping(now)

    def sleep(self, now: float, duration_s: int) -> None:
        """DISCONNECT with a sleep duration (6.14); Asleep follows."""
        if self.state != ACTIVE:
            raise RuntimeError(f"sleep() while {self.state}")
        if self.busy:
            raise RuntimeError("sleep() with requests pending; wait for them first")
        if not 1 <= duration_s <= 0xFFFF:
            raise ValueError(f"sleep duration must be 1..65535 s, got {duration_s}")
        self.sleep_duration_s = duration_s
        self._ping = None
        self._enter(DISCONNECTING)
        self._start_control(now, "sleep", Disconnect(duration_s))

    def wake(self, now: float) -> None:
        """PINGREQ with the client id (6.14): buffered messages arrive, then PINGRESP."""
        if self.state != ASLEEP:
            raise RuntimeError(f"wake() while {self.state}")
        self._enter(AWAKE)
        self._start_control(now, "wake", PingReq(self.params.client_id))

    def disconnect(self, now: float) -> None:
        """DISCONNECT (6.12); pending requests fail, Disconnected("disconnect") follows."""
        if self.state in (DISCONNECTED, DISCONNECTING):
            return
        self._fail_requests("disconnected")
        self._ping = None
        self._enter(DISCONNECTING)
        self._start_control(now, "disconnect", Disconnect())

    # =====================================================================
    # inputs
    # =====================================================================

    def receive(self, now: float, data: bytes, addr: Hashable) -> None:
        """Process one datagram from `addr`. Never raises for any input bytes."""
        self.stats.messages_received += 1
        try:
            message = decode(data)
        except MqttSnDecodeError:
            self.stats.decode_errors += 1
            return
        try:
            self._on_message(now, message, addr)
        except Exception as exc:  # noqa: BLE001 - a peer's bytes must never crash a node
            self.stats.internal_errors += 1
            own_error(self.strict, exc, "MQTT-SN client")

    def handle_timer(self, now: float) -> None:
        """Run every deadline at or before `now`."""
        self._discovery.handle_timer(now)
        for op in (self._control, self._ping, *self._inflight):
            # An earlier expiry may have ended them all: only ops still held count.
            if op is not self._control and op is not self._ping and op not in self._inflight:
                continue
            if op is not None and op.retx is not None and op.retx.deadline_s <= now:
                self._on_retry_timer(now, op)
        ping = ping_due_s(self._last_sent_s, self.params.keep_alive_s)
        if self.state == ACTIVE and self._ping is None and ping is not None and now >= ping:
            self._start_ping(now)

    # =====================================================================
    # sending
    # =====================================================================

    def _send(self, data: bytes, addr: Hashable) -> None:
        self._out.append((data, addr))
        self.stats.messages_sent += 1

    def _send_gateway(self, now: float, message: Message) -> None:
        self._send(encode(message), self.gateway)
        self._last_sent_s = now

    def _transmit(self, now: float, op: _Op) -> None:
        """First transmission of `op`, supervised by Tretry/Nretry."""
        op.retx = Retransmission(self._schedule, self.rng)
        op.sent_s = now
        op.retx.start(now)
        if type(op.message) is Publish:
            op.publishes += 1
        self._send_gateway(now, op.message)

    def _start_control(self, now: float, kind: str, message: Message) -> None:
        op = _Op(kind, message)
        self._control = op
        self._transmit(now, op)

    def _start_ping(self, now: float) -> None:
        self._ping = _Op("ping", PingReq())
        self._transmit(now, self._ping)

    def _on_retry_timer(self, now: float, op: _Op) -> None:
        assert op.retx is not None  # handle_timer calls this only for a running timer
        if op.retx.on_timeout(now):
            self.stats.retransmissions += 1
            message = op.message
            if (type(message) is Publish or type(message) is Subscribe) and not message.dup:
                op.message = message = replace(message, dup=True)  # 5.3.4: DUP on re-sends
            if type(message) is Publish:
                op.publishes += 1
            self._send_gateway(now, message)
            return
        op.retx = None
        if op is self._control and op.kind == "disconnect":
            self._end("disconnect")  # we are leaving anyway; the gateway will time us out
        elif op in self._inflight and self.params.give_up == "request":
            # As RIOT's asymcute: the request fails, the connection stays.
            self._finish_request(now, op)
            self._events.append(RequestFailed(op.kind, op.msg_id, "timeout"))  # type: ignore[arg-type]
        else:
            self._end("gateway-lost")

    def _new_msg_id(self) -> int:
        if len(self._used_ids) >= 0xFFFF:
            raise QueueFull("all 65535 MsgIds are in use")
        msg_id = self._next_msg_id
        while msg_id in self._used_ids:
            msg_id = msg_id % 0xFFFF + 1
        self._next_msg_id = msg_id % 0xFFFF + 1
        self._used_ids.add(msg_id)
        return msg_id

    def _submit(self, now: float, op: _Op) -> None:
        if self.state in (DISCONNECTED, DISCONNECTING):
            self._release(op)
            raise RuntimeError(f"{op.kind} needs a connection (state {self.state})")
        if len(self._queue) >= self.params.max_queued:
            self._release(op)
            raise QueueFull(f"{len(self._queue)} requests already queued")
        self._queue.append(op)
        self._pump(now)

    def _pump(self, now: float) -> None:
        """Send queued requests, max_inflight outstanding at a time, in call order."""
        limit = self.params.max_inflight
        while self.state == ACTIVE and len(self._inflight) < limit and self._queue:
            op = self._queue.popleft()
            message = op.message
            if type(message) is Publish and message.qos == 0:
                self._send_gateway(now, message)
                self._events.append(Published(None, 1))
                continue
            self._inflight.append(op)
            self._transmit(now, op)

    def _release(self, op: _Op) -> None:
        if op.msg_id is not None:
            self._used_ids.discard(op.msg_id)

    def _finish_request(self, now: float, op: _Op) -> None:
        self._inflight.remove(op)
        self._release(op)
        self._pump(now)

    # =====================================================================
    # connection state
    # =====================================================================

    def _fail_requests(self, reason: str) -> None:
        ops = [*self._inflight, *self._queue]
        self._inflight = []
        self._queue.clear()
        for op in ops:
            self._release(op)
            self._events.append(RequestFailed(op.kind, op.msg_id, reason))  # type: ignore[arg-type]

    def _end(self, reason: DisconnectReason) -> None:
        self._fail_requests("gateway-lost" if reason == "gateway-lost" else "disconnected")
        self._control = None
        self._ping = None
        self._qos2_in.clear()
        self._topics.clear()
        self._enter(DISCONNECTED)
        self._events.append(Disconnected(reason))

    def _enter(self, state: ClientState) -> None:
        """The one place the client's state changes: as _NEXT allows, or to
        disconnected from anywhere; another move is a bug of ours."""
        if state is not DISCONNECTED and state not in _NEXT[self.state]:
            raise RuntimeError(f"MQTT-SN client cannot go from {self.state} to {state}")
        self.state = state

    def _fall_asleep(self) -> None:
        self._control = None
        self._enter(ASLEEP)
        self._events.append(Asleep(self.sleep_duration_s))

    # =====================================================================
    # receiving
    # =====================================================================

    def _on_message(self, now: float, m: Message, addr: Hashable) -> None:
        if type(m) is Advertise:
            self._discovery.on_advertise(now, m, addr)
            return
        if type(m) is GwInfo:
            self._discovery.on_gwinfo(now, m, addr)
            return
        if type(m) is SearchGw:
            self._discovery.on_searchgw(now, m, addr)
            return
        if addr != self.gateway or self.state == DISCONNECTED:
            self.stats.unexpected += 1
            return
        handler = _HANDLERS.get(type(m))
        if handler is None:
            self.stats.unexpected += 1  # a message only a client sends
            return
        handler(self, now, m)

    def _control_is(self, *kinds: str) -> bool:
        return self._control is not None and self._control.kind in kinds

    # ---- connection setup -------------------------------------------------------------

    def _on_willtopicreq(self, now: float, m: WillTopicReq) -> None:
        if self.state != CONNECTING or not self._control_is("connect", "willtopic"):
            self.stats.unexpected += 1
            return
        will = self._will
        message = WillTopic(None) if will is None else WillTopic(will.topic, will.qos, will.retain)
        self._start_control(now, "willtopic", message)

    def _on_willmsgreq(self, now: float, m: WillMsgReq) -> None:
        if self.state != CONNECTING or not self._control_is("willtopic", "willmsg"):
            self.stats.unexpected += 1
            return
        payload = self._will.payload if self._will is not None else b""
        self._start_control(now, "willmsg", WillMsg(payload))

    def _on_connack(self, now: float, m: ConnAck) -> None:
        if self.state != CONNECTING:
            self.stats.unexpected += 1
            return
        self._control = None
        if m.return_code != ReturnCode.ACCEPTED:
            self._events.append(ConnectionRefused(m.return_code))
            self._end("refused")
            return
        self._enter(ACTIVE)
        self._events.append(Connected(self.gateway))
        self._pump(now)

    def _on_disconnect(self, now: float, m: Disconnect) -> None:
        if self._control_is("sleep") and self.state == DISCONNECTING:
            self._fall_asleep()
        elif self._control_is("disconnect"):
            self._end("disconnect")
        else:
            self._end("gateway-disconnect")  # 6.12: the gateway ended it (e.g. an error)

    # ---- keep-alive and sleep ---------------------------------------------------------

    def _on_pingreq(self, now: float, m: PingReq) -> None:
        self._send_gateway(now, PingResp())

    def _on_pingresp(self, now: float, m: PingResp) -> None:
        if self.state == AWAKE and self._control_is("wake"):
            self._fall_asleep()  # 6.14: the gateway has sent all it buffered
        elif self._ping is not None:
            rtt = now - self._ping.sent_s
            self._ping = None
            self._events.append(PingResponse(rtt))
        else:
            self.stats.unexpected += 1

    def _awake_activity(self, now: float) -> None:
        """Something from the gateway while awake: it serves us; restart the PINGREQ timer."""
        op = self._control
        if self.state == AWAKE and op is not None and op.kind == "wake":
            op.retx = Retransmission(self._schedule, self.rng)
            op.retx.start(now)

    # ---- answers to our requests ---------------------------------------------------------

    def _request_for(self, kind: str, msg_id: int | None = None) -> _Op | None:
        op = self._outstanding(kind, msg_id)
        if op is None:
            self.stats.unexpected += 1
        return op

    def _outstanding(self, kind: str, msg_id: int | None) -> _Op | None:
        """The outstanding request of this kind (and MsgId, when given), if any."""
        for op in self._inflight:
            if op.kind == kind and (msg_id is None or op.msg_id == msg_id):
                return op
        return None

    def _reject(self, now: float, op: _Op, return_code: int) -> None:
        self._finish_request(now, op)
        self._events.append(RequestFailed(op.kind, op.msg_id, "rejected", return_code))  # type: ignore[arg-type]

    def _on_regack(self, now: float, m: RegAck) -> None:
        op = self._request_for("register", m.msg_id)
        if op is None:
            return
        if m.return_code != ReturnCode.ACCEPTED:
            self._reject(now, op, m.return_code)
            return
        self._topics.learn(m.topic_id, op.topic)
        self._finish_request(now, op)
        self._events.append(Registered(m.msg_id, op.topic, m.topic_id))  # op.msg_id == m.msg_id

    def _on_puback(self, now: float, m: PubAck) -> None:
        op = self._outstanding("publish", m.msg_id) if m.msg_id else None
        if op is None:
            if m.return_code != ReturnCode.ACCEPTED:
                # A rejected QoS 0 PUBLISH (5.4.13): nothing was outstanding for it.
                self._rejected_topic(m.topic_id, m.return_code)
                self._events.append(RequestFailed("publish", None, "rejected", m.return_code))
            else:
                self.stats.unexpected += 1
            return
        if m.return_code != ReturnCode.ACCEPTED:
            self._rejected_topic(m.topic_id, m.return_code)
            self._reject(now, op, m.return_code)
            return
        if type(op.message) is not Publish or op.message.qos != 1:
            self.stats.unexpected += 1  # QoS 2 is answered with PUBREC (and PUBCOMP)
            return
        self._finish_request(now, op)
        self._events.append(Published(op.msg_id, op.publishes))

    def _rejected_topic(self, topic_id: int, return_code: int) -> None:
        if return_code == ReturnCode.INVALID_TOPIC_ID:
            self._topics.forget(topic_id)  # 6.6: register the topic name again

    def _on_pubrec(self, now: float, m: PubRec) -> None:
        op = self._outstanding("publish", m.msg_id)
        if op is None or (type(op.message) is Publish and op.message.qos != 2):
            self.stats.unexpected += 1
            return
        if type(op.message) is Publish:
            # Part 2 of the QoS 2 flow: PUBREL, supervised like the PUBLISH was.
            op.message = PubRel(m.msg_id)
            self._transmit(now, op)
        else:
            self._send_gateway(now, op.message)  # a repeated PUBREC: PUBREL again

    def _on_pubcomp(self, now: float, m: PubComp) -> None:
        op = self._outstanding("publish", m.msg_id)
        if op is None or type(op.message) is not PubRel:
            self.stats.unexpected += 1
            return
        self._finish_request(now, op)
        self._events.append(Published(op.msg_id, op.publishes))

    def _on_suback(self, now: float, m: SubAck) -> None:
        op = self._request_for("subscribe", m.msg_id)
        if op is None:
            return
        if m.return_code != ReturnCode.ACCEPTED:
            self._reject(now, op, m.return_code)
            return
        sub = cast(Subscribe, op.message)  # what a "subscribe" request sends
        if sub.topic_id_type == TopicIdType.NORMAL and m.topic_id and is_valid_topic(op.topic):
            self._topics.learn(m.topic_id, op.topic)  # 5.4.16: the id PUBLISHes will carry
        self._finish_request(now, op)
        self._events.append(Subscribed(m.msg_id, m.topic_id, m.qos))  # op.msg_id == m.msg_id

    def _on_unsuback(self, now: float, m: UnsubAck) -> None:
        op = self._request_for("unsubscribe", m.msg_id)
        if op is None:
            return
        self._finish_request(now, op)
        self._events.append(Unsubscribed(m.msg_id))  # op.msg_id == m.msg_id

    def _on_willresp(self, now: float, m: WillTopicResp | WillMsgResp) -> None:
        what = "topic" if type(m) is WillTopicResp else "message"
        op = self._request_for(f"will-{what}")
        if op is None:
            return
        if m.return_code != ReturnCode.ACCEPTED:
            self._reject(now, op, m.return_code)
            return
        self._finish_request(now, op)
        self._events.append(WillUpdated(what))  # type: ignore[arg-type]

    # ---- messages from the gateway --------------------------------------------------------

    def _receiving(self) -> bool:
        return self.state in (ACTIVE, AWAKE, DISCONNECTING)

    def _on_register(self, now: float, m: Register) -> None:
        if not self._receiving():
            self.stats.unexpected += 1
            return
        self._awake_activity(now)
        if not is_valid_topic(m.topic_name) or not 1 <= m.topic_id <= 0xFFFE:
            code = ReturnCode.NOT_SUPPORTED  # a filter or a reserved id is no registration
        elif self._topics.learn(m.topic_id, m.topic_name):
            code = ReturnCode.ACCEPTED
        else:
            code = ReturnCode.CONGESTION  # max_topics reached
        self._send_gateway(now, RegAck(m.topic_id, m.msg_id, code))

    def _on_publish(self, now: float, m: Publish) -> None:
        if not self._receiving():
            self.stats.unexpected += 1
            return
        self._awake_activity(now)
        topic = self._received_topic(m)
        if topic is None and m.topic_id_type == TopicIdType.NORMAL:
            self.stats.unknown_topic_ids += 1
            self._send_gateway(now, PubAck(m.topic_id, m.msg_id, ReturnCode.INVALID_TOPIC_ID))
            return
        if m.qos == 1:
            self._send_gateway(now, PubAck(m.topic_id, m.msg_id, ReturnCode.ACCEPTED))
        elif m.qos == 2:
            self._send_gateway(now, PubRec(m.msg_id))
            if m.msg_id in self._qos2_in:
                self.stats.duplicates_received += 1
                return
            self._qos2_in.add(m.msg_id)
        self._events.append(
            MessageReceived(topic, m.topic_id, m.topic_id_type, m.data, m.qos, m.retain, m.dup)
        )

    def _received_topic(self, m: Publish) -> str | None:
        if m.topic_id_type == TopicIdType.NORMAL:
            return self._topics.name_of(m.topic_id)
        if m.topic_id_type == TopicIdType.PREDEFINED:
            return self.params.predefined_topics.get(m.topic_id)
        return short_topic_name(m.topic_id)

    def _on_pubrel(self, now: float, m: PubRel) -> None:
        self._awake_activity(now)
        self._qos2_in.discard(m.msg_id)
        self._send_gateway(now, PubComp(m.msg_id))  # known id or not, like MQTT 4.3.3

    # ---- topic arguments ------------------------------------------------------------------

    def _publish_topic_id(self, topic: int | str, kind: TopicIdType) -> int:
        if kind == TopicIdType.SHORT:
            if not isinstance(topic, str):
                raise ValueError("a short topic name is a two-octet str")
            return short_topic_id(topic)
        if isinstance(topic, str):
            if kind != TopicIdType.NORMAL:
                raise ValueError("a predefined topic is given by its id")
            topic_id = self._topics.id_of(topic)
            if topic_id is None:
                raise ValueError(f"topic {topic!r} is not registered; register() it first")
            return topic_id
        if not 0 <= topic <= 0xFFFF:
            raise ValueError(f"topic id must be 0..65535, got {topic}")
        return topic

    @staticmethod
    def _subscription_topic(topic: str | int, kind: TopicIdType) -> tuple[str, int]:
        if kind == TopicIdType.NORMAL:
            if not isinstance(topic, str) or not is_valid_filter(topic) or "\0" in topic:
                raise ValueError(f"invalid topic filter {topic!r}")
            if len(topic.encode("utf-8")) > MAX_PUBLISH_DATA:
                raise ValueError("topic filter too long")
            return topic, 0
        if kind == TopicIdType.SHORT:
            if not isinstance(topic, str):
                raise ValueError("a short topic name is a two-octet str")
            return "", short_topic_id(topic)
        if not isinstance(topic, int) or not 0 <= topic <= 0xFFFF:
            raise ValueError(f"a predefined topic id is 0..65535, got {topic!r}")
        return "", topic


def _check_topic(topic: str) -> None:
    if not isinstance(topic, str) or not is_valid_topic(topic) or "\0" in topic:
        raise ValueError(f"invalid topic name {topic!r}: empty or with wildcards")
    if len(topic.encode("utf-8")) > MAX_PUBLISH_DATA:
        raise ValueError("topic name too long")


def _check_will(topic: str, qos: int) -> None:
    _check_topic(topic)
    if qos not in (0, 1, 2):
        raise ValueError(f"will QoS must be 0, 1 or 2, got {qos!r}")


#: The method that handles each message a gateway may send, by message type.
_HANDLERS: dict[type[Message], Callable[[MqttSnClient, float, Any], None]] = {
    WillTopicReq: MqttSnClient._on_willtopicreq,
    WillMsgReq: MqttSnClient._on_willmsgreq,
    ConnAck: MqttSnClient._on_connack,
    Disconnect: MqttSnClient._on_disconnect,
    PingReq: MqttSnClient._on_pingreq,
    PingResp: MqttSnClient._on_pingresp,
    RegAck: MqttSnClient._on_regack,
    PubAck: MqttSnClient._on_puback,
    PubRec: MqttSnClient._on_pubrec,
    PubComp: MqttSnClient._on_pubcomp,
    SubAck: MqttSnClient._on_suback,
    UnsubAck: MqttSnClient._on_unsuback,
    WillTopicResp: MqttSnClient._on_willresp,
    WillMsgResp: MqttSnClient._on_willresp,
    Register: MqttSnClient._on_register,
    Publish: MqttSnClient._on_publish,
    PubRel: MqttSnClient._on_pubrel,
}
