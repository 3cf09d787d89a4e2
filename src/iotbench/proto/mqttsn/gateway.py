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
state; the rng only goes into the MqttClients (their first Packet Identifier)
and the retransmissions to clients (their random factor).

The gateway is a stack of layers, one object and one module each, every one
keeping its own state and calling the others only through their methods
(docs/mqttsn.md, "Layers"):

- ClientDatagrams (gateway_datagrams.py): the codec, forwarder encapsulation
  and the datagrams to send;
- BrokerLinks (gateway_broker.py): the MQTT connections to the broker, as
  streams for the driver;
- TopicIds (gateway_topics.py): topic names and ids, REGISTER from clients;
- BrokerForwarding (gateway_forwarding.py): clients' PUBLISH, SUBSCRIBE and
  UNSUBSCRIBE to the broker, and its answers back;
- ClientDelivery (gateway_delivery.py): the broker's messages to clients,
  one outstanding at a time, retransmitted;
- ClientSessions (gateway_clients.py): the session table: connect, will,
  sleep, keep-alive, the sessions' timers and their ends.

gateway_state.py holds what they keep per client, one part per layer. This
module builds the layers, hands each message to its layer through one table
(message type -> handler), each event of a broker connection through another,
and offers the driver's calls.

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
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from iotbench.proto.errors import own_error
from iotbench.proto.mqtt.events import (
    ClientEvent,
    Connected,
    ConnectionClosed,
    ConnectionRefused,
    MessageReceived,
    Published,
    Subscribed,
    Unsubscribed,
)
from iotbench.proto.timers import earliest

from .codec import (
    QOS_MINUS_ONE,
    Advertise,
    Connect,
    Disconnect,
    Encapsulated,
    GwInfo,
    Message,
    PingReq,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    RegAck,
    Register,
    SearchGw,
    Subscribe,
    Unsubscribe,
    WillMsg,
    WillMsgUpd,
    WillTopic,
    WillTopicUpd,
)
from .events import GatewayEvent
from .gateway_broker import BrokerLinks
from .gateway_clients import ClientSessions
from .gateway_datagrams import ClientDatagrams
from .gateway_forwarding import BrokerForwarding
from .gateway_state import BrokerLink, ClientSession, Forwarded, MqttSnGatewayStats
from .gateway_topics import TopicIds
from .params import MqttSnGatewayParams

__all__ = ["Forwarded", "MqttSnGateway", "MqttSnGatewayStats"]

#: A handler of a message from a connected client, or of an event of its broker
#: connection: (now, session, message or event).
Handler = Callable[[float, ClientSession, Any], None]
_M = TypeVar("_M")


def _entry(
    kind: type[_M], handler: Callable[[float, ClientSession, _M], None]
) -> tuple[type, Handler]:
    """A table entry; mypy checks that `handler` takes what `kind` is."""
    return kind, handler


class MqttSnGateway:
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
        self._datagrams = ClientDatagrams(self.stats)
        self._links = BrokerLinks(rng, params, self.stats, self._internal_error)
        self._topics = TopicIds(params, self.stats, self._datagrams)
        self._forwarding = BrokerForwarding(self.stats, self._datagrams, self._links, self._topics)
        self._sessions = ClientSessions(
            rng,
            params,
            self.stats,
            self._internal_error,
            self._datagrams,
            self._links,
            self._topics,
        )
        self._delivery = self._sessions.delivery
        self._next_advertise_s: float | None = None
        sessions, topics = self._sessions, self._topics
        forwarding, delivery = self._forwarding, self._delivery
        #: The handler of each message a connected client may send; anything else
        #: from a client is unexpected. From an unknown address these are answered
        #: with DISCONNECT (6.12: connect first).
        self._handlers: dict[type, Handler] = dict(
            [
                _entry(WillTopic, sessions.on_willtopic),
                _entry(WillMsg, sessions.on_willmsg),
                _entry(Register, topics.on_register),
                _entry(RegAck, delivery.on_regack),
                _entry(Publish, forwarding.on_publish),
                _entry(PubAck, delivery.on_puback),
                _entry(PubRec, delivery.on_pubrec),
                _entry(PubRel, forwarding.on_pubrel),
                _entry(PubComp, delivery.on_pubcomp),
                _entry(Subscribe, forwarding.on_subscribe),
                _entry(Unsubscribe, forwarding.on_unsubscribe),
                _entry(PingReq, sessions.on_pingreq),
                _entry(Disconnect, sessions.on_disconnect),
                _entry(WillTopicUpd, sessions.on_willtopicupd),
                _entry(WillMsgUpd, sessions.on_willmsgupd),
            ]
        )
        #: The handler of each event of a client's MQTT connection; the others
        #: (PingResponse, ...) are the MqttClient's own business.
        self._broker_handlers: dict[type, Handler] = dict(
            [
                _entry(MessageReceived, delivery.deliver),
                _entry(Published, forwarding.published),
                _entry(Subscribed, forwarding.subscribed),
                _entry(Unsubscribed, forwarding.unsubscribed),
                _entry(Connected, sessions.broker_connected),
                _entry(ConnectionRefused, sessions.broker_refused),
                _entry(ConnectionClosed, sessions.broker_closed),
            ]
        )

    # =====================================================================
    # outputs
    # =====================================================================

    def datagrams_to_send(self, now: float | None = None) -> list[tuple[bytes, Hashable]]:
        """Datagrams to clients since the last call, in order (drains). `now` is unused."""
        return self._datagrams.take()

    def streams_to_open(self) -> list[int]:
        """New broker connections to open (drains)."""
        return self._links.streams_to_open()

    def stream_data_to_send(self) -> list[tuple[int, bytes]]:
        """(stream, bytes) to write to the broker, one entry per stream (drains)."""
        return self._links.stream_data_to_send()

    def streams_to_close(self) -> list[int]:
        """Streams to close once their data is written (drains)."""
        return self._links.streams_to_close()

    def events(self) -> list[GatewayEvent]:
        """Diagnostic events since the last call (drains)."""
        return self._sessions.take_events()

    def next_timer(self) -> float | None:
        """Absolute time of the earliest deadline, or None (sometimes early, never late)."""
        deadlines = [
            t
            for t in (
                self._sessions.next_timer(),
                self._next_advertise_s,
                self._links.own_next_timer(),
            )
            if t is not None
        ]
        return earliest(deadlines)

    # ---- inspection ----------------------------------------------------------------------

    def client_state(self, client_id: str) -> str | None:
        """ "will-topic", "will-message", "connecting", "active", "asleep", "awake" or None."""
        c = self._sessions.by_id(client_id)
        return c.state if c is not None else None

    def buffered(self, client_id: str) -> int:
        """Messages waiting for a client (not counting one outstanding)."""
        c = self._sessions.by_id(client_id)
        return self._delivery.waiting(c) if c is not None else 0

    @property
    def clients(self) -> int:
        return len(self._sessions)

    def session(self, client_id: str) -> ClientSession | None:
        """The session of a client, to look at (tests, diagnosis); the gateway's to change."""
        return self._sessions.by_id(client_id)

    def sessions(self) -> list[ClientSession]:
        """Every client's session, to look at."""
        return self._sessions.sessions()

    @property
    def new_clients(self) -> int:
        """Clients still connecting, or silent since their CONNACK (max_new_clients)."""
        return self._sessions.new_clients

    @property
    def stored_wills(self) -> int:
        """Wills kept for CleanSession=0 clients between connections (max_stored_wills)."""
        return self._sessions.stored_wills

    @property
    def broker_streams(self) -> list[int]:
        """The streams of the broker connections the gateway holds, in the order opened."""
        return self._links.streams

    # =====================================================================
    # inputs
    # =====================================================================

    def start(self, now: float) -> None:
        """Begin advertising (6.1): the first ADVERTISE now, then every interval."""
        interval = self.params.advertise_interval_s
        if interval is not None:
            self._advertise(now, interval)

    def receive(self, now: float, data: bytes, addr: Hashable) -> None:
        """One datagram from an MQTT-SN client or forwarder. Never raises."""
        message = self._datagrams.decode(data)
        if message is None:
            return
        try:
            if type(message) is Encapsulated:
                inner = self._datagrams.unwrap(message, addr)
                if inner is not None:
                    self._on_message(now, *inner)
            else:
                self._on_message(now, message, addr)
        except Exception as exc:  # noqa: BLE001 - a client's bytes must never crash the gateway
            self._internal_error(exc)
        self._service(now)

    def stream_connected(self, now: float, stream: int) -> None:
        """Stream `stream` is open: the gateway sends its CONNECT."""
        self._links.connected(now, stream)
        self._service(now)

    def stream_receive(self, now: float, stream: int, data: bytes) -> None:
        """Bytes from the broker on `stream`, in any split (the MqttClient never raises)."""
        self._links.receive(now, stream, data)
        self._service(now)

    def stream_lost(self, now: float, stream: int) -> None:
        """`stream` failed to open, was closed by the broker, or broke."""
        never_connected = self._links.lost(now, stream)
        if never_connected is not None:
            self._sessions.broker_unreachable(never_connected)
        self._service(now)

    def handle_timer(self, now: float) -> None:
        """Run every deadline at or before `now`."""
        interval = self.params.advertise_interval_s
        due = self._next_advertise_s
        if interval is not None and due is not None and due <= now:
            self._advertise(now, interval)
        self._links.run_own_timer(now)
        self._sessions.handle_timer(now)
        self._service(now)

    # =====================================================================
    # dispatch
    # =====================================================================

    def _on_message(self, now: float, m: Message, addr: Hashable) -> None:
        if type(m) is SearchGw:
            # 5.4.3: broadcast with the searcher's radius; through a forwarder, via it.
            dest = addr
            if type(addr) is not Forwarded and self.params.broadcast_addr is not None:
                dest = self.params.broadcast_addr
            self._datagrams.send(GwInfo(self.params.gw_id), dest, m.radius)
            return
        if type(m) is Advertise or type(m) is GwInfo:
            return  # other gateways and clients talking among themselves
        if type(m) is Publish and m.qos == QOS_MINUS_ONE:
            self._forwarding.publish_without_connection(now, m)
            return
        if type(m) is Connect:
            self._sessions.on_connect(now, m, addr)
            return
        if type(m) is PingReq and m.client_id is not None:
            self._sessions.wake_elsewhere(now, m.client_id, addr)
        c = self._sessions.at(addr)
        if c is None:
            self.stats.unknown_clients += 1
            if type(m) in self._handlers:
                self._datagrams.send(Disconnect(), addr)  # 6.12: connect first
            return
        self._sessions.heard(now, c)
        handler = self._handlers.get(type(m))
        if handler is None:
            self.stats.unexpected += 1  # a message only a gateway sends
        else:
            handler(now, c, m)
        self._sessions.rearm(c)

    def _service(self, now: float) -> None:
        """Move the output of every touched broker connection out, and act on its events."""
        links = self._links
        while (link := links.next_touched()) is not None:
            for event in links.take_events(link):
                try:
                    self._on_broker_event(now, link, event)
                except Exception as exc:  # noqa: BLE001 - one client's trouble stays its own
                    self._internal_error(exc)
            links.settle(link)
            if link.owner is not None:
                self._sessions.rearm(link.owner)

    def _on_broker_event(self, now: float, link: BrokerLink, event: ClientEvent) -> None:
        c = link.owner
        if c is None:
            return  # the gateway's own connection, or one whose client is gone
        handler = self._broker_handlers.get(type(event))
        if handler is not None:
            handler(now, c, event)

    def _internal_error(self, exc: Exception) -> None:
        """An exception of our own: counted, then raised or logged (proto/errors.py)."""
        self.stats.internal_errors += 1
        own_error(self.strict, exc, "MQTT-SN gateway")

    def _advertise(self, now: float, interval: int) -> None:
        self._datagrams.send(Advertise(self.params.gw_id, interval), self.params.broadcast_addr)
        self._next_advertise_s = now + interval
