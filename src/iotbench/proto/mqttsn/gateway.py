"""A sans-I/O MQTT-SN 1.2 transparent gateway: datagrams from clients, one MQTT
3.1.1 connection to the broker per client (the specification's "transparent
gateway", as opposed to an aggregating one), time passed in.

Driving it (a driver, simulated or real, does exactly this after every call;
proto/sansio.py's drain_with is that loop, real/mqttsn.py the asyncio driver):

    gw = MqttSnGateway(random.Random(seed), MqttSnGatewayParams(gw_id=1))
    gw.start(now)                               # begins ADVERTISE, if configured

    # MQTT-SN side: datagrams; addr is any hashable of the driver's (host, port)
    gw.receive(now, datagram, addr)
    for data, addr in gw.datagrams_to_send(): ...        # drains

    # broker side: one byte stream per client, named by ints the gateway picks
    for stream in gw.streams_to_open(): ...     # open a connection to the broker (drains)
    gw.stream_connected(now, stream)            # it is open: the gateway sends CONNECT
    gw.stream_receive(now, stream, data)        # bytes from the broker, any split
    gw.stream_lost(now, stream)                 # it failed to open, or closed, or broke
    for stream, data in gw.stream_data_to_send(): ...    # write these first (drains),
    for stream in gw.streams_to_close(): ...    # then close these (drains)

    gw.handle_timer(now)                        # when now >= gw.next_timer()
    for event in gw.events(): ...               # ClientConnected, ClientDisconnected, ...

A stream in streams_to_close() may still be opening; the driver then closes
it as soon as it is open (or drops the attempt). stream_lost() for a stream
the gateway closed itself is ignored. The gateway never raises for any
datagram: a malformed one or a protocol violation is counted in `stats` and
dropped. Nothing here reads a clock, opens a socket or touches global random
state; the rng only goes into the MqttClients (their first Packet Identifier).

What it does, with the choices the specification leaves open:

- Clients are known by address (a forwarder's encapsulated clients by
  forwarder address and Wireless Node Id, 5.5) and by client id. A CONNECT
  from a new client (at most max_clients) prompts for the will if asked
  (WILLTOPICREQ, WILLMSGREQ), then opens the client's own MQTT connection
  (client id, CleanSession and will taken over; keep-alive
  broker_keep_alive_s) and answers CONNACK when the broker's CONNACK comes:
  "accepted", or "rejected: congestion" for 0x03 (server unavailable) and
  "rejected: not supported" for the other refusals. With CleanSession=0 and
  Will=0 the will stored from the client's last connection is used (6.3).
- A CONNECT from an asleep or awake client returns it to the active state
  and is answered at once; its flags open no new connection. A CONNECT from
  an active client is a new connection: the old MQTT connection ends with
  DISCONNECT (no will) and a new one is opened. A CONNECT with the client id
  of a client at another address takes over (a sleeping client that moved
  keeps its state).
- Topic ids (6.5): one registry per client, ids 1, 2, 3... per connection.
  REGISTER of a name with wildcards gets "rejected: not supported", beyond
  max_topics_per_client "rejected: congestion". Before the first PUBLISH of
  a topic the client does not know, the gateway sends REGISTER and waits for
  REGACK. Predefined ids come from configuration; two-octet topic names go
  out as short topic names.
- PUBLISH from a client is passed on at the same QoS. QoS 1: PUBACK once the
  broker's PUBACK came (end to end); QoS 2: PUBREC once the broker's PUBCOMP
  came, PUBCOMP on PUBREL. A repeat of a message still on its way to the
  broker is ignored; a repeat of a QoS 2 message awaiting PUBREL gets PUBREC
  again. An unknown topic id gets PUBACK "invalid topic ID" at any QoS
  (5.4.13).
- QoS -1 (6.8): from anyone, no connection; predefined and short topics
  only (others dropped and counted), published at QoS 0 over one MQTT
  connection of the gateway's own (qos_minus_one_client_id), opened on first
  use.
- To clients, one REGISTER or QoS 1/2 PUBLISH is outstanding at a time
  (like the client's side, 6.5 and 6.6), in the order the broker delivered
  them, re-sent after Tretry (DUP=1) at most Nretry times; then the client
  is lost. At most max_buffered_messages wait per client; more are dropped
  and counted (the broker already got its acknowledgement).
- Sleeping clients (6.14): DISCONNECT with a duration puts the client to
  sleep (a duration of 0 is taken as a plain DISCONNECT) and its messages
  wait (all QoS); PINGREQ (with its client id, or any
  PINGREQ from its address) wakes it: the waiting messages go out, then
  PINGRESP, and it sleeps again. The MQTT connection stays open throughout.
  A sleeping client may publish without waking up.
- Supervision (6.11, 6.14): an active client silent for keep-alive x
  keep_alive_factor, or an asleep one for its sleep duration x the same
  factor, is lost; keep-alive 0 is never supervised. A lost client's MQTT
  connection is cut without DISCONNECT, so the broker publishes its will.
- Will updates (6.4): MQTT 3.1.1 cannot change a will on an open connection,
  so the gateway keeps the updated will; if the client is then lost, the
  gateway publishes the updated will itself and ends the MQTT connection
  with DISCONNECT (so the broker's stale copy is not published too).
- DISCONNECT without duration: answered with DISCONNECT; the MQTT
  connection ends with DISCONNECT (no will). If the broker closes a client's
  MQTT connection, the client is sent DISCONNECT (6.12) and forgotten.
- Anything from an unknown client that needs a connection is answered with
  DISCONNECT, so it connects again (6.12).
- ADVERTISE every advertise_interval_s to broadcast_addr, from start(); a
  SEARCHGW is answered with GWINFO (gateway id only) at once: broadcast when
  broadcast_addr is set (5.4.3), else to the searching client.
"""

from __future__ import annotations

import heapq
import random
from collections import OrderedDict, deque
from collections.abc import Hashable
from dataclasses import dataclass, replace

from iotbench.proto.mqtt.client import MqttClient, QueueFull
from iotbench.proto.mqtt.codec import ConnectReturnCode, Will
from iotbench.proto.mqtt.events import (
    Connected,
    ConnectionClosed,
    ConnectionRefused,
    MessageReceived,
    Published,
    Subscribed,
    Unsubscribed,
)
from iotbench.proto.mqtt.params import MqttClientParams
from iotbench.proto.mqtt.topics import is_valid_filter, is_valid_topic
from iotbench.proto.retransmit import Retransmission

from .codec import (
    PROTOCOL_ID,
    QOS_MINUS_ONE,
    Advertise,
    ConnAck,
    Connect,
    Disconnect,
    Encapsulated,
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
from .events import ClientAsleep, ClientAwake, ClientConnected, ClientDisconnected, GatewayEvent
from .params import MqttSnGatewayParams
from .registry import TopicRegistry

__all__ = ["Forwarded", "MqttSnGateway", "MqttSnGatewayStats"]

# Client states (6.14, figure 4, seen from the gateway); disconnected and lost
# clients have no state here.
_WILL_TOPIC = "will-topic"  # WILLTOPICREQ sent
_WILL_MSG = "will-message"  # WILLMSGREQ sent
_CONNECTING = "connecting"  # waiting for the broker's CONNACK
_ACTIVE = "active"
_ASLEEP = "asleep"
_AWAKE = "awake"
_SETTING_UP = (_WILL_TOPIC, _WILL_MSG, _CONNECTING)
_CONNECTED = (_ACTIVE, _ASLEEP, _AWAKE)


@dataclass(frozen=True, slots=True)
class Forwarded:
    """The address of a client behind a forwarder (5.5)."""

    forwarder: Hashable
    node_id: bytes


@dataclass(slots=True)
class MqttSnGatewayStats:
    """Counters for diagnosis (metrics come from packet records, not from here)."""

    datagrams_received: int = 0
    datagrams_sent: int = 0
    decode_errors: int = 0
    unexpected: int = 0
    internal_errors: int = 0
    refused: int = 0
    unknown_clients: int = 0
    invalid_topic_ids: int = 0
    retransmissions: int = 0
    dropped_buffer_full: int = 0
    dropped_qos_minus_one: int = 0
    dropped_rejected: int = 0
    messages_from_clients: int = 0
    messages_to_clients: int = 0


class _Link:
    """One MQTT connection to the broker: the stream a driver carries, the MqttClient on it."""

    __slots__ = ("mqtt", "owner", "stream")

    def __init__(self, stream: int, mqtt: MqttClient, owner: _Client | None) -> None:
        self.stream = stream
        self.mqtt = mqtt
        self.owner = owner  # None: the gateway's own QoS -1 connection


class _Delivery:
    """A message from the broker on its way to one client."""

    __slots__ = ("payload", "qos", "retain", "topic")

    def __init__(self, topic: str, payload: bytes, qos: int, retain: bool) -> None:
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain


class _Out:
    """A REGISTER, PUBLISH QoS 1/2 or PUBREL the gateway sent to a client, awaiting its reply."""

    __slots__ = ("delivery", "message", "retx")

    def __init__(self, message: Message, retx: Retransmission, delivery: _Delivery | None) -> None:
        self.message = message
        self.retx = retx
        self.delivery = delivery  # what a PUBLISH carries, to send again after a sleep


class _Client:
    """What the gateway keeps per MQTT-SN client."""

    __slots__ = (
        "addr",
        "awaiting_pubrel",
        "client_id",
        "clean_session",
        "keep_alive_s",
        "known_ids",
        "last_heard_s",
        "link",
        "next_msg_id",
        "out",
        "pubs",
        "pubs_by_msg_id",
        "queue",
        "scheduled",
        "since_s",
        "sleep_s",
        "state",
        "subs",
        "topics",
        "unsubs",
        "will_changed",
        "will_msg",
        "will_qos",
        "will_retain",
        "will_topic",
    )

    def __init__(self, addr: Hashable, m: Connect, now: float, max_topics: int) -> None:
        self.addr = addr
        self.client_id = m.client_id
        self.clean_session = m.clean_session
        self.keep_alive_s = m.duration_s
        self.state = _WILL_TOPIC
        self.since_s = now
        self.last_heard_s = now
        self.sleep_s = 0
        self.link: _Link | None = None
        self.topics = TopicRegistry(max_topics)
        self.known_ids: set[int] = set()  # normal ids the client has acknowledged or chosen
        self.will_topic: str | None = None
        self.will_msg = b""
        self.will_qos = 0
        self.will_retain = False
        self.will_changed = False
        # client -> broker
        self.pubs: dict[int, tuple[int, int, int]] = {}  # MQTT pid -> (msg id, topic id, QoS)
        self.pubs_by_msg_id: dict[int, int] = {}  # MQTT-SN msg id -> MQTT pid, in flight
        self.awaiting_pubrel: set[int] = set()
        self.subs: dict[int, tuple[int, Subscribe, str]] = {}  # pid -> (msg id, SUBSCRIBE, filter)
        self.unsubs: dict[int, int] = {}  # pid -> msg id
        # broker -> client
        self.queue: deque[_Delivery] = deque()
        self.out: _Out | None = None
        self.next_msg_id = 1
        self.scheduled: float | None = None  # deadline of this client's live timer entry

    def will(self) -> Will | None:
        if self.will_topic is None:
            return None
        return Will(self.will_topic, self.will_msg, self.will_qos, self.will_retain)

    def new_msg_id(self) -> int:
        msg_id = self.next_msg_id
        self.next_msg_id = msg_id % 0xFFFF + 1
        return msg_id


def _mqtt_text_ok(s: str) -> bool:
    """A string MQTT 3.1.1 can carry (1.5.3: no U+0000; lengths fit)."""
    return "\0" not in s and len(s.encode("utf-8")) <= 0xFFFF


class MqttSnGateway:
    """An MQTT-SN transparent gateway as a sans-I/O state machine."""

    def __init__(
        self,
        rng: random.Random,
        params: MqttSnGatewayParams = MqttSnGatewayParams(),  # noqa: B008 - frozen, safe to share
    ) -> None:
        self.rng = rng
        self.params = params
        self.stats = MqttSnGatewayStats()
        self._schedule = params.retry_schedule()
        self._predefined_ids = {name: tid for tid, name in params.predefined_topics.items()}
        self._clients: dict[Hashable, _Client] = {}
        self._by_id: dict[str, _Client] = {}
        self._stored_wills: OrderedDict[str, tuple[str | None, bytes, int, bool]] = OrderedDict()
        self._links: dict[int, _Link] = {}
        self._next_stream = 1
        self._qos_m1: _Link | None = None
        self._out: list[tuple[bytes, Hashable]] = []
        self._to_open: list[int] = []
        self._stream_out: dict[int, bytearray] = {}
        self._to_close: list[int] = []
        self._events: list[GatewayEvent] = []
        self._touched: dict[int, _Link] = {}  # links whose MqttClient may have output
        self._timers: list[tuple[float, int, _Client]] = []
        self._timer_seq = 0
        self._next_advertise_s: float | None = None

    # =====================================================================
    # outputs
    # =====================================================================

    def datagrams_to_send(self, now: float | None = None) -> list[tuple[bytes, Hashable]]:
        """Datagrams to clients since the last call, in order (drains). `now` is unused."""
        out = self._out
        self._out = []
        return out

    def streams_to_open(self) -> list[int]:
        """New broker connections to open (drains)."""
        out = self._to_open
        self._to_open = []
        return out

    def stream_data_to_send(self) -> list[tuple[int, bytes]]:
        """(stream, bytes) to write to the broker, one entry per stream (drains)."""
        out = [(stream, bytes(buf)) for stream, buf in self._stream_out.items() if buf]
        self._stream_out.clear()
        return out

    def streams_to_close(self) -> list[int]:
        """Streams to close once their data is written (drains)."""
        out = self._to_close
        self._to_close = []
        return out

    def events(self) -> list[GatewayEvent]:
        """Diagnostic events since the last call (drains)."""
        ev = self._events
        self._events = []
        return ev

    def next_timer(self) -> float | None:
        """Absolute time of the earliest deadline, or None (sometimes early, never late)."""
        heap = self._timers
        while heap and heap[0][2].scheduled != heap[0][0]:
            heapq.heappop(heap)  # stale entry
        deadlines = [heap[0][0]] if heap else []
        if self._next_advertise_s is not None:
            deadlines.append(self._next_advertise_s)
        if self._qos_m1 is not None:
            t = self._qos_m1.mqtt.next_timer()
            if t is not None:
                deadlines.append(t)
        return min(deadlines) if deadlines else None

    # ---- inspection ----------------------------------------------------------------------

    def client_state(self, client_id: str) -> str | None:
        """ "will-topic", "will-message", "connecting", "active", "asleep", "awake" or None."""
        c = self._by_id.get(client_id)
        return c.state if c is not None else None

    def buffered(self, client_id: str) -> int:
        """Messages waiting for a client (not counting one outstanding)."""
        c = self._by_id.get(client_id)
        return len(c.queue) if c is not None else 0

    @property
    def clients(self) -> int:
        return len(self._clients)

    # =====================================================================
    # inputs
    # =====================================================================

    def start(self, now: float) -> None:
        """Begin advertising (6.1): the first ADVERTISE now, then every interval."""
        if self.params.advertise_interval_s is not None:
            self._advertise(now)

    def receive(self, now: float, data: bytes, addr: Hashable) -> None:
        """One datagram from an MQTT-SN client or forwarder. Never raises."""
        self.stats.datagrams_received += 1
        try:
            message = decode(data)
        except MqttSnDecodeError:
            self.stats.decode_errors += 1
            return
        try:
            if type(message) is Encapsulated:
                self._on_encapsulated(now, message, addr)
            else:
                self._on_message(now, message, addr)
        except Exception:  # noqa: BLE001 - a client's bytes must never crash the gateway
            self.stats.internal_errors += 1
        self._service(now)

    def stream_connected(self, now: float, stream: int) -> None:
        """Stream `stream` is open: the gateway sends its CONNECT."""
        link = self._links.get(stream)
        if link is not None and not link.mqtt.connected and not link.mqtt.close_requested:
            try:
                link.mqtt.connect(now)
            except RuntimeError:
                self.stats.internal_errors += 1  # reported twice by the driver
            self._touch(link)
        self._service(now)

    def stream_receive(self, now: float, stream: int, data: bytes) -> None:
        """Bytes from the broker on `stream`, in any split (the MqttClient never raises)."""
        link = self._links.get(stream)
        if link is not None:
            link.mqtt.receive_data(now, data)
            self._touch(link)
        self._service(now)

    def stream_lost(self, now: float, stream: int) -> None:
        """`stream` failed to open, was closed by the broker, or broke."""
        link = self._links.get(stream)
        if link is not None:
            link.mqtt.connection_lost(now)
            if link.mqtt.close_requested:
                self._touch(link)  # ConnectionClosed: handled in _service
            else:
                self._open_failed(link)  # no connection ever: the MqttClient has no news
        self._service(now)

    def _open_failed(self, link: _Link) -> None:
        c = link.owner
        self._detach(link)
        if c is None:
            self.stats.dropped_qos_minus_one += link.mqtt.queued
        else:
            self._send(ConnAck(ReturnCode.CONGESTION), c.addr)
            self._forget(c, "broker-unreachable")

    def handle_timer(self, now: float) -> None:
        """Run every deadline at or before `now`."""
        if self._next_advertise_s is not None and self._next_advertise_s <= now:
            self._advertise(now)
        if self._qos_m1 is not None:
            t = self._qos_m1.mqtt.next_timer()
            if t is not None and t <= now:
                self._qos_m1.mqtt.handle_timer(now)
                self._touch(self._qos_m1)
        heap = self._timers
        while heap and heap[0][0] <= now:
            t, _, c = heapq.heappop(heap)
            if c.scheduled != t:
                continue
            c.scheduled = None
            try:
                self._check(now, c)
            except Exception:  # noqa: BLE001 - see receive()
                self.stats.internal_errors += 1
            self._rearm(c)
        self._service(now)

    # =====================================================================
    # sending to clients
    # =====================================================================

    def _send(self, message: Message, addr: Hashable, radius: int = 0) -> None:
        data = encode(message)
        if type(addr) is Forwarded:
            data = encode(Encapsulated(radius, addr.node_id, data))
            addr = addr.forwarder
        self._out.append((data, addr))
        self.stats.datagrams_sent += 1

    def _advertise(self, now: float) -> None:
        interval = self.params.advertise_interval_s
        self._send(Advertise(self.params.gw_id, interval), self.params.broadcast_addr)
        self._next_advertise_s = now + interval

    def _transmit(
        self, now: float, c: _Client, message: Message, delivery: _Delivery | None = None
    ) -> None:
        """Send a message that waits for the client's reply, under Tretry/Nretry."""
        retx = Retransmission(self._schedule, self.rng)
        retx.start(now)
        c.out = _Out(message, retx, delivery)
        self._send(message, c.addr)

    # =====================================================================
    # the broker side
    # =====================================================================

    def _open_link(self, owner: _Client | None, params: MqttClientParams) -> _Link:
        stream = self._next_stream
        self._next_stream += 1
        link = _Link(stream, MqttClient(self.rng, params), owner)
        self._links[stream] = link
        self._to_open.append(stream)
        return link

    def _touch(self, link: _Link) -> None:
        self._touched[link.stream] = link

    def _service(self, now: float) -> None:
        """Move the output of every touched MqttClient out, and act on its events."""
        while self._touched:
            link = self._touched.pop(next(iter(self._touched)))
            if self._links.get(link.stream) is not link:
                continue  # detached meanwhile
            self._flush_link(link)
            for event in link.mqtt.events():
                try:
                    self._on_mqtt_event(now, link, event)
                except Exception:  # noqa: BLE001 - one client's trouble stays its own
                    self.stats.internal_errors += 1
            self._flush_link(link)
            if link.mqtt.close_requested and self._links.get(link.stream) is link:
                self._detach(link)
                self._to_close.append(link.stream)
            if link.owner is not None:
                self._rearm(link.owner)

    def _flush_link(self, link: _Link) -> None:
        data = link.mqtt.data_to_send()
        if data:
            self._stream_out.setdefault(link.stream, bytearray()).extend(data)

    def _detach(self, link: _Link) -> None:
        """The gateway is done with `link`: later bytes and losses for it are ignored."""
        self._links.pop(link.stream, None)
        self._touched.pop(link.stream, None)
        if self._qos_m1 is link:
            self._qos_m1 = None
        if link.owner is not None and link.owner.link is link:
            link.owner.link = None
        link.owner = None

    def _cut_link(self, link: _Link) -> None:
        """Close the MQTT connection without DISCONNECT (the broker publishes the will)."""
        self._flush_link(link)
        self._detach(link)
        self._to_close.append(link.stream)

    def _end_link(self, now: float, link: _Link) -> None:
        """End the MQTT connection with DISCONNECT (the broker drops the will)."""
        link.mqtt.disconnect(now)
        if link.mqtt.close_requested:
            self._flush_link(link)
            self._detach(link)
            self._to_close.append(link.stream)
        else:
            self._cut_link(link)  # never connected: nothing to say

    def _on_mqtt_event(self, now: float, link: _Link, event: object) -> None:
        c = link.owner
        t = type(event)
        if c is None:
            if t is ConnectionClosed and self._qos_m1 is link:
                self._qos_m1 = None  # reopened on next use; _service closes this one
            return
        if t is MessageReceived:
            self._deliver(now, c, event)
        elif t is Published:
            self._published(now, c, event.packet_id)
        elif t is Subscribed:
            self._subscribed(now, c, event)
        elif t is Unsubscribed:
            msg_id = c.unsubs.pop(event.packet_id, None)
            if msg_id is not None:
                self._send(UnsubAck(msg_id), c.addr)
        elif t is Connected:
            if c.state == _CONNECTING:
                c.state = _ACTIVE
                self._send(ConnAck(ReturnCode.ACCEPTED), c.addr)
                self._events.append(ClientConnected(c.addr, c.client_id))
        elif t is ConnectionRefused:
            rc = event.return_code
            code = (
                ReturnCode.CONGESTION
                if rc == ConnectReturnCode.SERVER_UNAVAILABLE
                else ReturnCode.NOT_SUPPORTED
            )
            self.stats.refused += 1
            self._send(ConnAck(code), c.addr)
            self._forget(c, "refused")
        elif t is ConnectionClosed:
            # The broker side ended on its own: tell the client (6.12), forget it.
            if c.state == _CONNECTING:
                self._send(ConnAck(ReturnCode.CONGESTION), c.addr)
            else:
                self._send(Disconnect(), c.addr)
            self._forget(c, "broker-closed")  # _service closes the stream

    # =====================================================================
    # clients: connection
    # =====================================================================

    def _on_encapsulated(self, now: float, m: Encapsulated, addr: Hashable) -> None:
        try:
            inner = decode(m.message)
        except MqttSnDecodeError:
            self.stats.decode_errors += 1
            return
        if type(inner) is Encapsulated:
            self.stats.unexpected += 1  # one forwarder hop only
            return
        self._on_message(now, inner, Forwarded(addr, m.node_id), m.radius)

    def _on_message(self, now: float, m: Message, addr: Hashable, radius: int = 0) -> None:
        t = type(m)
        if t is SearchGw:
            # 5.4.3: broadcast with the searcher's radius; through a forwarder, via it.
            dest = addr
            if type(addr) is not Forwarded and self.params.broadcast_addr is not None:
                dest = self.params.broadcast_addr
            self._send(GwInfo(self.params.gw_id), dest, m.radius)
            return
        if t is Advertise or t is GwInfo:
            return  # other gateways and clients talking among themselves
        if t is Publish and m.qos == QOS_MINUS_ONE:
            self._qos_minus_one(now, m)
            return
        if t is Connect:
            self._on_connect(now, m, addr)
            return
        if t is PingReq and m.client_id is not None:
            c = self._by_id.get(m.client_id)
            if c is not None and c.state in (_ASLEEP, _AWAKE) and c.addr != addr:
                self._move(now, c, addr)  # 6.14: a sleeping client may wake up elsewhere
        c = self._clients.get(addr)
        if c is None:
            self._unknown_client(m, addr)
            return
        c.last_heard_s = now
        handler = _HANDLERS.get(t)
        if handler is None:
            self.stats.unexpected += 1  # a message only a gateway sends
        else:
            handler(self, now, c, m)
        self._rearm(c)

    def _unknown_client(self, m: Message, addr: Hashable) -> None:
        self.stats.unknown_clients += 1
        if type(m) in _CLIENT_MESSAGES:
            self._send(Disconnect(), addr)  # 6.12: connect first

    def _move(self, now: float, c: _Client, addr: Hashable) -> None:
        old = self._clients.get(addr)
        if old is not None and old is not c:
            self._drop(now, old, "replaced", graceful=True)
        self._clients.pop(c.addr, None)
        c.addr = addr
        self._clients[addr] = c

    def _on_connect(self, now: float, m: Connect, addr: Hashable) -> None:
        c = self._clients.get(addr)
        if c is not None and c.client_id == m.client_id:
            c.last_heard_s = now
            if c.state in (_ASLEEP, _AWAKE):
                self._wake_to_active(now, c, m)
                return
            if c.state == _CONNECTING:
                return  # a repeated CONNECT; the broker's CONNACK will answer it
            if c.state in (_WILL_TOPIC, _WILL_MSG) and m.will:
                c.state = _WILL_TOPIC  # a repeated CONNECT: prompt again
                self._send(WillTopicReq(), addr)
                return
        other = self._by_id.get(m.client_id)
        if other is not None and other.addr != addr and other.state in (_ASLEEP, _AWAKE):
            self._move(now, other, addr)
            self._wake_to_active(now, other, m)
            return
        if c is not None:
            self._drop(now, c, "replaced", graceful=True)
        if other is not None and other is not c:
            self._drop(now, other, "replaced", graceful=True)
        if m.protocol_id != PROTOCOL_ID or not m.client_id or not _mqtt_text_ok(m.client_id):
            self.stats.refused += 1
            self._send(ConnAck(ReturnCode.NOT_SUPPORTED), addr)
            return
        if len(self._clients) >= self.params.max_clients:
            self.stats.refused += 1
            self._send(ConnAck(ReturnCode.CONGESTION), addr)
            return
        c = _Client(addr, m, now, self.params.max_topics_per_client)
        self._clients[addr] = c
        self._by_id[c.client_id] = c
        stored = self._stored_wills.pop(c.client_id, None)
        if stored is not None and not m.clean_session and not m.will:
            c.will_topic, c.will_msg, c.will_qos, c.will_retain = stored  # 6.3
        if m.will:
            self._send(WillTopicReq(), addr)
        else:
            self._connect_broker(c)
        self._rearm(c)

    def _wake_to_active(self, now: float, c: _Client, m: Connect) -> None:
        c.state = _ACTIVE
        c.keep_alive_s = m.duration_s
        self._send(ConnAck(ReturnCode.ACCEPTED), c.addr)
        self._pump(now, c)

    def _connect_broker(self, c: _Client) -> None:
        c.state = _CONNECTING
        params = MqttClientParams(
            client_id=c.client_id,
            clean_session=c.clean_session,
            keep_alive_s=self.params.broker_keep_alive_s,
            will=c.will(),
        )
        c.link = self._open_link(c, params)

    def _on_willtopic(self, now: float, c: _Client, m: WillTopic) -> None:
        if c.state not in (_WILL_TOPIC, _WILL_MSG):
            self._repeated_setup(c)
            return
        if m.topic is None:
            c.will_topic = None  # 6.3: the empty WILLTOPIC deletes the will
            self._connect_broker(c)
            return
        if not is_valid_topic(m.topic) or not _mqtt_text_ok(m.topic):
            self.stats.refused += 1
            self._send(ConnAck(ReturnCode.NOT_SUPPORTED), c.addr)
            self._forget(c, "refused")
            return
        c.will_topic, c.will_qos, c.will_retain = m.topic, m.qos, m.retain
        c.state = _WILL_MSG
        self._send(WillMsgReq(), c.addr)

    def _on_willmsg(self, now: float, c: _Client, m: WillMsg) -> None:
        if c.state != _WILL_MSG:
            self._repeated_setup(c)
            return
        c.will_msg = m.message
        self._connect_broker(c)

    def _repeated_setup(self, c: _Client) -> None:
        """A WILLTOPIC or WILLMSG again: while the broker connects, its CONNACK will answer;
        once active, our CONNACK was lost and is sent again."""
        if c.state in _CONNECTED:
            self._send(ConnAck(ReturnCode.ACCEPTED), c.addr)
        elif c.state != _CONNECTING:
            self.stats.unexpected += 1

    def _on_disconnect(self, now: float, c: _Client, m: Disconnect) -> None:
        if m.duration_s and c.state in _CONNECTED:  # a sleep of 0 s is a plain DISCONNECT
            c.state = _ASLEEP
            c.sleep_s = m.duration_s
            self._suspend(c)
            self._send(Disconnect(), c.addr)
            self._events.append(ClientAsleep(c.addr, c.client_id, c.sleep_s))
            return
        self._send(Disconnect(), c.addr)
        self._drop(now, c, "disconnect", graceful=True)

    def _suspend(self, c: _Client) -> None:
        """Going to sleep: stop re-sending; an unacknowledged PUBLISH waits for the wake-up."""
        out = c.out
        c.out = None
        if out is not None and out.delivery is not None and type(out.message) is Publish:
            c.queue.appendleft(out.delivery)

    def _on_pingreq(self, now: float, c: _Client, m: PingReq) -> None:
        if c.state == _ASLEEP:
            c.state = _AWAKE
            self._events.append(ClientAwake(c.addr, c.client_id, len(c.queue)))
            self._pump(now, c)  # the buffered messages, then PINGRESP (6.14)
        elif c.state == _AWAKE:
            return  # a repeated wake-up PINGREQ: the PINGRESP ends the delivery
        elif c.state == _ACTIVE:
            self._send(PingResp(), c.addr)
        else:
            self.stats.unexpected += 1

    def _on_willtopicupd(self, now: float, c: _Client, m: WillTopicUpd) -> None:
        if c.state not in _CONNECTED:
            self.stats.unexpected += 1
            return
        if m.topic is not None and (not is_valid_topic(m.topic) or not _mqtt_text_ok(m.topic)):
            self._send(WillTopicResp(ReturnCode.NOT_SUPPORTED), c.addr)
            return
        if m.topic is None:
            c.will_topic, c.will_msg = None, b""  # 5.4.22: deletes topic and message
        else:
            c.will_topic, c.will_qos, c.will_retain = m.topic, m.qos, m.retain
        c.will_changed = True
        self._send(WillTopicResp(ReturnCode.ACCEPTED), c.addr)

    def _on_willmsgupd(self, now: float, c: _Client, m: WillMsgUpd) -> None:
        if c.state not in _CONNECTED:
            self.stats.unexpected += 1
            return
        c.will_msg = m.message
        c.will_changed = True
        self._send(WillMsgResp(ReturnCode.ACCEPTED), c.addr)

    # ---- ending clients ----------------------------------------------------------------

    def _forget(self, c: _Client, reason: str) -> None:
        """Remove the client's state (its link, if any, is dealt with by the caller)."""
        if self._clients.get(c.addr) is c:
            del self._clients[c.addr]
        if self._by_id.get(c.client_id) is c:
            del self._by_id[c.client_id]
        c.scheduled = None
        if c.link is not None:
            c.link.owner = None
            c.link = None
        if not c.clean_session and c.state in _CONNECTED:
            self._store_will(c)
        self._events.append(ClientDisconnected(c.addr, c.client_id, reason))

    def _store_will(self, c: _Client) -> None:
        """6.3: a CleanSession=0 client's will outlives its connection."""
        wills = self._stored_wills
        wills[c.client_id] = (c.will_topic, c.will_msg, c.will_qos, c.will_retain)
        wills.move_to_end(c.client_id)
        while len(wills) > self.params.max_stored_wills:
            wills.popitem(last=False)

    def _drop(self, now: float, c: _Client, reason: str, *, graceful: bool) -> None:
        """End a client. graceful: its MQTT connection ends with DISCONNECT (no will)."""
        link = c.link
        if link is not None:
            if graceful:
                self._end_link(now, link)
            elif c.will_changed:
                # The broker holds a stale will: publish the current one, then leave cleanly.
                will = c.will()
                if will is not None and link.mqtt.connected:
                    link.mqtt.publish(now, will.topic, will.payload, will.qos, will.retain)
                self._end_link(now, link)
            else:
                self._cut_link(link)
        self._forget(c, reason)

    # =====================================================================
    # clients: messages to the broker
    # =====================================================================

    def _publish_topic(self, c: _Client | None, kind: TopicIdType, topic_id: int) -> str | None:
        if kind == TopicIdType.NORMAL:
            name = c.topics.name_of(topic_id) if c is not None else None
        elif kind == TopicIdType.PREDEFINED:
            name = self.params.predefined_topics.get(topic_id)
        else:
            name = short_topic_name(topic_id)
        if name is None or not is_valid_topic(name) or not _mqtt_text_ok(name):
            return None
        return name

    def _qos_minus_one(self, now: float, m: Publish) -> None:
        name = None
        if m.topic_id_type != TopicIdType.NORMAL:  # 6.8: no registration without a connection
            name = self._publish_topic(None, m.topic_id_type, m.topic_id)
        if name is None:
            self.stats.dropped_qos_minus_one += 1
            return
        link = self._qos_m1
        if link is None:
            params = MqttClientParams(
                client_id=self.params.qos_minus_one_mqtt_client_id,
                keep_alive_s=self.params.broker_keep_alive_s,
            )
            link = self._qos_m1 = self._open_link(None, params)
        try:
            link.mqtt.publish(now, name, m.data, 0, m.retain)
        except (QueueFull, ValueError):
            self.stats.dropped_qos_minus_one += 1
            return
        self.stats.messages_from_clients += 1
        self._touch(link)

    def _on_register(self, now: float, c: _Client, m: Register) -> None:
        if c.state not in _CONNECTED:
            self.stats.unexpected += 1
            return
        name = m.topic_name
        if not is_valid_topic(name) or not _mqtt_text_ok(name):
            self._send(RegAck(0, m.msg_id, ReturnCode.NOT_SUPPORTED), c.addr)
            return
        topic_id = c.topics.assign(name)
        if topic_id is None:
            self._send(RegAck(0, m.msg_id, ReturnCode.CONGESTION), c.addr)
            return
        c.known_ids.add(topic_id)
        self._send(RegAck(topic_id, m.msg_id, ReturnCode.ACCEPTED), c.addr)

    def _on_publish(self, now: float, c: _Client, m: Publish) -> None:
        if c.state not in _CONNECTED or c.link is None:
            self.stats.unexpected += 1
            return
        if m.qos == 2 and m.msg_id in c.awaiting_pubrel:
            self._send(PubRec(m.msg_id), c.addr)  # its PUBREC was lost
            return
        if m.qos and m.msg_id in c.pubs_by_msg_id:
            return  # a repeat of a message still on its way to the broker
        name = self._publish_topic(c, m.topic_id_type, m.topic_id)
        if name is None:
            self.stats.invalid_topic_ids += 1
            self._send(PubAck(m.topic_id, m.msg_id, ReturnCode.INVALID_TOPIC_ID), c.addr)
            return
        try:
            pid = c.link.mqtt.publish(now, name, m.data, m.qos, m.retain)
        except (QueueFull, ValueError):
            self._send(PubAck(m.topic_id, m.msg_id, ReturnCode.CONGESTION), c.addr)
            return
        self.stats.messages_from_clients += 1
        if pid is not None:
            c.pubs[pid] = (m.msg_id, m.topic_id, m.qos)
            c.pubs_by_msg_id[m.msg_id] = pid
        self._touch(c.link)

    def _published(self, now: float, c: _Client, pid: int | None) -> None:
        entry = c.pubs.pop(pid, None) if pid is not None else None
        if entry is None:
            return
        msg_id, topic_id, qos = entry
        c.pubs_by_msg_id.pop(msg_id, None)
        if qos == 1:
            self._send(PubAck(topic_id, msg_id, ReturnCode.ACCEPTED), c.addr)
        else:
            c.awaiting_pubrel.add(msg_id)
            self._send(PubRec(msg_id), c.addr)

    def _on_pubrel(self, now: float, c: _Client, m: PubRel) -> None:
        c.awaiting_pubrel.discard(m.msg_id)
        self._send(PubComp(m.msg_id), c.addr)  # known id or not, like MQTT 4.3.3

    def _subscription_filter(self, m: Subscribe | Unsubscribe) -> str | None:
        if m.topic_id_type == TopicIdType.NORMAL:
            name = m.topic_name
        elif m.topic_id_type == TopicIdType.PREDEFINED:
            name = self.params.predefined_topics.get(m.topic_id)
        else:
            name = short_topic_name(m.topic_id)
        if name is None or not is_valid_filter(name) or not _mqtt_text_ok(name):
            return None
        return name

    def _on_subscribe(self, now: float, c: _Client, m: Subscribe) -> None:
        if c.state not in _CONNECTED or c.link is None:
            self.stats.unexpected += 1
            return
        if any(msg_id == m.msg_id for msg_id, _, _ in c.subs.values()):
            return  # a repeat; the SUBACK is on its way
        topic_filter = self._subscription_filter(m)
        if topic_filter is None or m.qos == QOS_MINUS_ONE:
            code = (
                ReturnCode.INVALID_TOPIC_ID
                if m.topic_id_type == TopicIdType.PREDEFINED
                else ReturnCode.NOT_SUPPORTED
            )
            self._send(SubAck(0, m.msg_id, code), c.addr)
            return
        try:
            pid = c.link.mqtt.subscribe(now, [(topic_filter, m.qos)])
        except QueueFull:
            self._send(SubAck(0, m.msg_id, ReturnCode.CONGESTION), c.addr)
            return
        c.subs[pid] = (m.msg_id, m, topic_filter)
        self._touch(c.link)

    def _subscribed(self, now: float, c: _Client, event: Subscribed) -> None:
        entry = c.subs.pop(event.packet_id, None)
        if entry is None:
            return
        msg_id, m, topic_filter = entry
        granted = event.granted[0]
        if granted not in (0, 1, 2):
            self._send(SubAck(0, msg_id, ReturnCode.NOT_SUPPORTED), c.addr)
            return
        topic_id = 0  # 5.4.16: not relevant for wildcards and short topic names
        if m.topic_id_type == TopicIdType.PREDEFINED:
            topic_id = m.topic_id
        elif m.topic_id_type == TopicIdType.NORMAL and is_valid_topic(topic_filter):
            topic_id = c.topics.assign(topic_filter) or 0
            if topic_id:
                c.known_ids.add(topic_id)  # the SUBACK tells the client this id
        self._send(SubAck(topic_id, msg_id, ReturnCode.ACCEPTED, granted), c.addr)

    def _on_unsubscribe(self, now: float, c: _Client, m: Unsubscribe) -> None:
        if c.state not in _CONNECTED or c.link is None:
            self.stats.unexpected += 1
            return
        if m.msg_id in c.unsubs.values():
            return
        topic_filter = self._subscription_filter(m)
        if topic_filter is None:
            self._send(UnsubAck(m.msg_id), c.addr)  # nothing to remove
            return
        try:
            pid = c.link.mqtt.unsubscribe(now, [topic_filter])
        except QueueFull:
            return  # no identifier free; the client will repeat its UNSUBSCRIBE
        c.unsubs[pid] = m.msg_id
        self._touch(c.link)

    # =====================================================================
    # clients: messages from the broker
    # =====================================================================

    def _deliver(self, now: float, c: _Client, event: MessageReceived) -> None:
        if len(c.queue) >= self.params.max_buffered_messages:
            self.stats.dropped_buffer_full += 1
            return
        c.queue.append(_Delivery(event.topic, event.payload, event.qos, event.retain))
        self._pump(now, c)

    def _client_topic(self, c: _Client, name: str) -> tuple[TopicIdType, int] | None:
        """How a topic name goes to this client; None when it needs a REGISTER first."""
        predefined = self._predefined_ids.get(name)
        if predefined is not None:
            return TopicIdType.PREDEFINED, predefined
        topic_id = c.topics.id_of(name)
        if topic_id is not None and topic_id in c.known_ids:
            return TopicIdType.NORMAL, topic_id
        if len(name.encode("utf-8")) == 2:
            return TopicIdType.SHORT, short_topic_id(name)
        return None

    def _pump(self, now: float, c: _Client) -> None:
        """Send waiting messages, one REGISTER or QoS 1/2 PUBLISH outstanding at a time."""
        while c.state in (_ACTIVE, _AWAKE) and c.out is None and c.queue:
            d = c.queue[0]
            topic = self._client_topic(c, d.topic)
            if topic is None:
                topic_id = c.topics.assign(d.topic)
                if topic_id is None:
                    c.queue.popleft()
                    self.stats.dropped_buffer_full += 1  # no topic id left for this client
                    continue
                self._transmit(now, c, Register(topic_id, c.new_msg_id(), d.topic))
                break
            c.queue.popleft()
            kind, topic_id = topic
            msg_id = c.new_msg_id() if d.qos else 0
            message = Publish(topic_id, msg_id, d.payload, d.qos, d.retain, False, kind)
            self.stats.messages_to_clients += 1
            if d.qos:
                self._transmit(now, c, message, d)
            else:
                self._send(message, c.addr)
        if c.state == _AWAKE and c.out is None and not c.queue:
            c.state = _ASLEEP  # 6.14: all sent; PINGRESP sends the client back to sleep
            c.last_heard_s = now
            self._send(PingResp(), c.addr)
            self._events.append(ClientAsleep(c.addr, c.client_id, c.sleep_s))

    def _reply_to_out(self, c: _Client, kind: type, msg_id: int) -> _Out | None:
        out = c.out
        if out is None or type(out.message) is not kind or out.message.msg_id != msg_id:
            self.stats.unexpected += 1
            return None
        return out

    def _done(self, now: float, c: _Client) -> None:
        c.out = None
        self._pump(now, c)

    def _on_regack(self, now: float, c: _Client, m: RegAck) -> None:
        out = self._reply_to_out(c, Register, m.msg_id)
        if out is None:
            return
        topic_id = out.message.topic_id
        if m.return_code == ReturnCode.ACCEPTED:
            c.known_ids.add(topic_id)
        else:
            c.topics.forget(topic_id)
            if c.queue:
                c.queue.popleft()  # the message that needed the topic cannot go
            self.stats.dropped_rejected += 1
        self._done(now, c)

    def _on_puback(self, now: float, c: _Client, m: PubAck) -> None:
        out = self._reply_to_out(c, Publish, m.msg_id)
        if out is None:
            return
        if m.return_code != ReturnCode.ACCEPTED:
            self.stats.dropped_rejected += 1
            if m.return_code == ReturnCode.INVALID_TOPIC_ID:
                c.known_ids.discard(m.topic_id)  # register again before the next one
        elif out.message.qos != 1:
            self.stats.unexpected += 1
            return
        self._done(now, c)

    def _on_pubrec(self, now: float, c: _Client, m: PubRec) -> None:
        out = c.out
        if out is not None and type(out.message) is PubRel and out.message.msg_id == m.msg_id:
            self._send(out.message, c.addr)  # our PUBREL was lost
            return
        out = self._reply_to_out(c, Publish, m.msg_id)
        if out is None or out.message.qos != 2:
            return
        self._transmit(now, c, PubRel(m.msg_id))

    def _on_pubcomp(self, now: float, c: _Client, m: PubComp) -> None:
        if self._reply_to_out(c, PubRel, m.msg_id) is not None:
            self._done(now, c)

    # =====================================================================
    # timers
    # =====================================================================

    def _deadline(self, c: _Client) -> float | None:
        deadlines = []
        factor = self.params.keep_alive_factor
        if c.state in _SETTING_UP:
            deadlines.append(c.since_s + self.params.connect_timeout_s)
        elif c.state == _ACTIVE:
            if c.keep_alive_s:
                deadlines.append(c.last_heard_s + c.keep_alive_s * factor)
        else:
            deadlines.append(c.last_heard_s + c.sleep_s * factor)
        if c.out is not None:
            deadlines.append(c.out.retx.deadline_s)
        if c.link is not None:
            t = c.link.mqtt.next_timer()
            if t is not None:
                deadlines.append(t)
        return min(deadlines) if deadlines else None

    def _rearm(self, c: _Client) -> None:
        if self._clients.get(c.addr) is not c:
            return
        deadline = self._deadline(c)
        if deadline is None:
            c.scheduled = None
        elif c.scheduled is None or deadline < c.scheduled:
            self._timer_seq += 1
            heapq.heappush(self._timers, (deadline, self._timer_seq, c))
            c.scheduled = deadline

    def _check(self, now: float, c: _Client) -> None:
        if self._clients.get(c.addr) is not c:
            return
        link = c.link
        if link is not None:
            t = link.mqtt.next_timer()
            if t is not None and t <= now:
                link.mqtt.handle_timer(now)
                self._touch(link)
        factor = self.params.keep_alive_factor
        if c.state in _SETTING_UP:
            if now >= c.since_s + self.params.connect_timeout_s:
                if c.state == _CONNECTING:
                    self._send(ConnAck(ReturnCode.CONGESTION), c.addr)
                self._drop(now, c, "connect-timeout", graceful=True)
                return
        elif c.state == _ACTIVE:
            if c.keep_alive_s and now >= c.last_heard_s + c.keep_alive_s * factor:
                self._drop(now, c, "keep-alive-timeout", graceful=False)
                return
        elif now >= c.last_heard_s + c.sleep_s * factor:
            self._drop(now, c, "sleep-timeout", graceful=False)
            return
        out = c.out
        if out is not None and out.retx.deadline_s <= now:
            if not out.retx.on_timeout(now):
                self._drop(now, c, "retries-exhausted", graceful=False)
                return
            self.stats.retransmissions += 1
            if type(out.message) is Publish and not out.message.dup:
                out.message = replace(out.message, dup=True)
            self._send(out.message, c.addr)


_HANDLERS = {
    WillTopic: MqttSnGateway._on_willtopic,
    WillMsg: MqttSnGateway._on_willmsg,
    Register: MqttSnGateway._on_register,
    RegAck: MqttSnGateway._on_regack,
    Publish: MqttSnGateway._on_publish,
    PubAck: MqttSnGateway._on_puback,
    PubRec: MqttSnGateway._on_pubrec,
    PubRel: MqttSnGateway._on_pubrel,
    PubComp: MqttSnGateway._on_pubcomp,
    Subscribe: MqttSnGateway._on_subscribe,
    Unsubscribe: MqttSnGateway._on_unsubscribe,
    PingReq: MqttSnGateway._on_pingreq,
    Disconnect: MqttSnGateway._on_disconnect,
    WillTopicUpd: MqttSnGateway._on_willtopicupd,
    WillMsgUpd: MqttSnGateway._on_willmsgupd,
}

#: What only a connected client sends: from an unknown address, answered with DISCONNECT.
_CLIENT_MESSAGES = frozenset(
    {
        WillTopic,
        WillMsg,
        Register,
        RegAck,
        Publish,
        PubAck,
        PubRec,
        PubRel,
        PubComp,
        Subscribe,
        Unsubscribe,
        PingReq,
        Disconnect,
        WillTopicUpd,
        WillMsgUpd,
    }
)
