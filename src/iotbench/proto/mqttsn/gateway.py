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

The gateway is one object assembled from its parts, one module each:
gateway_clients.py (sessions: connect, will, sleep, keep-alive, their
timers), gateway_topics.py (what clients send on to the broker: REGISTER,
PUBLISH, SUBSCRIBE) and gateway_broker.py (the MQTT connections and what
comes back on them); gateway_state.py holds what it keeps per client. This
module sets up the state they share and offers the driver's calls.

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
- New clients (still connecting, or silent since their CONNACK) may hold
  at most max_new_clients slots, if set: one more CONNECT, or one that
  finds the table full, ends the oldest of them instead of being refused.
  A CONNECT costs nothing to send from a spoofed address; this keeps a
  flood of them from taking the slots and broker connections of clients
  that talk.
- A CONNECT from an asleep or awake client returns it to the active state
  and is answered at once; its flags open no new connection. A CONNECT from
  an active client is a new connection: the old MQTT connection ends with
  DISCONNECT (no will) and a new one is opened. A CONNECT with the client id
  of a client at another address takes over (a sleeping client that moved
  keeps its state).
- Topic ids (6.5): one registry per client, ids 1, 2, 3... per connection.
  REGISTER of a name with wildcards or longer than max_topic_name_bytes
  gets "rejected: not supported", beyond max_topics_per_client or
  max_topic_bytes_per_client "rejected: congestion". Before the first
  PUBLISH of a topic the client does not know, the gateway sends REGISTER
  and waits for REGACK. Predefined ids come from configuration; two-octet
  topic names go out as short topic names.
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
  factor, is lost; keep-alive 0 is supervised only with idle_timeout_s
  (never by default). A lost client's MQTT connection is cut without
  DISCONNECT, so the broker publishes its will.
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

import random
from collections import OrderedDict
from collections.abc import Hashable

from iotbench.proto.errors import own_error
from iotbench.proto.retransmit import Retransmission
from iotbench.proto.timers import DEADLINE, OBJ, TimerQueue

from .codec import (
    Advertise,
    ConnAck,
    Encapsulated,
    Message,
    MqttSnDecodeError,
    ReturnCode,
    decode,
    encode,
)
from .events import GatewayEvent
from .gateway_broker import GatewayBroker
from .gateway_clients import GatewayClients
from .gateway_state import (
    BrokerLink,
    ClientSession,
    Delivery,
    Forwarded,
    MqttSnGatewayStats,
    Outgoing,
    stale_timer,
)
from .gateway_topics import GatewayTopics
from .params import MqttSnGatewayParams

__all__ = ["Forwarded", "MqttSnGateway", "MqttSnGatewayStats"]


class MqttSnGateway(GatewayClients, GatewayTopics, GatewayBroker):
    """An MQTT-SN transparent gateway as a sans-I/O state machine."""

    def __init__(
        self,
        rng: random.Random,
        params: MqttSnGatewayParams = MqttSnGatewayParams(),  # noqa: B008 - frozen, safe to share
        strict: bool = True,
    ) -> None:
        self.rng = rng
        self.params = params
        self.strict = strict  # an exception of our own: raised, or logged (proto/errors.py)
        self.stats = MqttSnGatewayStats()
        self._schedule = params.retry_schedule()
        self._predefined_ids = {name: tid for tid, name in params.predefined_topics.items()}
        self._clients: dict[Hashable, ClientSession] = {}
        self._by_id: dict[str, ClientSession] = {}
        # Clients still connecting or silent since their CONNACK, oldest first (as a
        # dict, for order and removal by key): whom max_new_clients ends first.
        self._new: dict[ClientSession, None] = {}
        self._stored_wills: OrderedDict[str, tuple[str | None, bytes, int, bool]] = OrderedDict()
        self._links: dict[int, BrokerLink] = {}
        self._next_stream = 1
        self._qos_m1: BrokerLink | None = None
        self._out: list[tuple[bytes, Hashable]] = []
        self._to_open: list[int] = []
        self._stream_out: dict[int, bytearray] = {}
        self._to_close: list[int] = []
        self._events: list[GatewayEvent] = []
        self._touched: dict[int, BrokerLink] = {}  # links whose MqttClient may have output
        # Entries' objects: client sessions to check; an entry is stale when its
        # session wants checking at another time (scheduled) or none.
        self._timers = TimerQueue()
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
        timers = self._timers
        while (entry := timers.peek()) is not None and stale_timer(entry):
            timers.pop()
        deadlines = [entry[DEADLINE]] if entry is not None else []
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
        except Exception as exc:  # noqa: BLE001 - a client's bytes must never crash the gateway
            self.stats.internal_errors += 1
            own_error(self.strict, exc, "MQTT-SN gateway")
        self._service(now)

    def stream_connected(self, now: float, stream: int) -> None:
        """Stream `stream` is open: the gateway sends its CONNECT."""
        link = self._links.get(stream)
        if link is not None and not link.mqtt.connected and not link.mqtt.close_requested:
            try:
                link.mqtt.connect(now)
            except RuntimeError as exc:  # the driver reported the connection twice
                self.stats.internal_errors += 1
                own_error(self.strict, exc, "MQTT-SN gateway")
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

    def _open_failed(self, link: BrokerLink) -> None:
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
        timers = self._timers
        while (entry := timers.peek()) is not None and entry[DEADLINE] <= now:
            timers.pop()
            if stale_timer(entry):
                continue
            c = entry[OBJ]
            c.scheduled = None
            try:
                self._check(now, c)
            except Exception as exc:  # noqa: BLE001 - see receive()
                self.stats.internal_errors += 1
                own_error(self.strict, exc, "MQTT-SN gateway")
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
        self, now: float, c: ClientSession, message: Message, delivery: Delivery | None = None
    ) -> None:
        """Send a message that waits for the client's reply, under Tretry/Nretry."""
        retx = Retransmission(self._schedule, self.rng)
        retx.start(now)
        c.out = Outgoing(message, retx, delivery)
        self._send(message, c.addr)
