"""The MQTT-SN gateway's session table: who is connected, and the lives of their
sessions (MQTT-SN 1.2 6.2-6.4, 6.11, 6.12, 6.14).

`ClientSessions` keeps the clients by address and by client id, the wills of
CleanSession=0 clients between connections, and one timer per session. It
answers CONNECT (with the will set-up), DISCONNECT (with or without a sleep
duration), PINGREQ (keep-alive, or a sleeping client's wake-up) and the will
updates; it opens a session's MQTT connection on the broker layer and acts on
what that connection says about itself (accepted, refused, closed); and it
ends sessions: on request, on silence, on a full table (max_new_clients), or
when the delivery layer gives up on the client.

It sits on the delivery layer (`ClientDelivery`, which it creates and which
tells it when an awake client has had everything) and uses the topic layer
(names a client may give its will) and the broker layer (its links). Its
diagnostic events are what MqttSnGateway.events() returns.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Callable, Hashable

from iotbench.proto.keepalive import given_up_s
from iotbench.proto.mqtt.codec import ConnectReturnCode
from iotbench.proto.mqtt.events import Connected, ConnectionClosed, ConnectionRefused
from iotbench.proto.mqtt.topics import is_valid_topic
from iotbench.proto.timers import DEADLINE, OBJ, TimerQueue, earliest

from .codec import (
    PROTOCOL_ID,
    ConnAck,
    Connect,
    Disconnect,
    PingReq,
    PingResp,
    ReturnCode,
    WillMsg,
    WillMsgReq,
    WillMsgResp,
    WillMsgUpd,
    WillTopic,
    WillTopicReq,
    WillTopicResp,
    WillTopicUpd,
)
from .events import ClientAsleep, ClientAwake, ClientConnected, ClientDisconnected, GatewayEvent
from .gateway_broker import BrokerLinks
from .gateway_datagrams import ClientDatagrams
from .gateway_delivery import ClientDelivery
from .gateway_state import (
    ACTIVE,
    ASLEEP,
    AWAKE,
    CHECK,
    CONNECTED,
    CONNECTING,
    SETTING_UP,
    WILL_MSG,
    WILL_TOPIC,
    ClientSession,
    MqttSnGatewayStats,
    mqtt_text_ok,
    stale_timer,
)
from .gateway_topics import TopicIds
from .params import MqttSnGatewayParams

#: A will as stored between connections: topic, message, QoS, retain.
StoredWill = tuple[str | None, bytes, int, bool]


class ClientSessions:
    """The gateway's clients: their sessions from CONNECT to the end, and their timers."""

    def __init__(
        self,
        rng: random.Random,
        params: MqttSnGatewayParams,
        stats: MqttSnGatewayStats,
        guard: Callable[[Exception], None],
        datagrams: ClientDatagrams,
        links: BrokerLinks,
        topics: TopicIds,
    ) -> None:
        self._params = params
        self._stats = stats
        self._guard = guard  # counts, and raises or logs, an exception of our own
        self._datagrams = datagrams
        self._links = links
        self._topics = topics
        self.delivery = ClientDelivery(
            rng, params, stats, datagrams, topics, all_delivered=self._back_to_sleep
        )
        self._clients: dict[Hashable, ClientSession] = {}
        self._by_id: dict[str, ClientSession] = {}
        # Clients still connecting or silent since their CONNACK, oldest first (as a
        # dict, for order and removal by key): whom max_new_clients ends first.
        self._new: dict[ClientSession, None] = {}
        self._stored_wills: OrderedDict[str, StoredWill] = OrderedDict()
        self._events: list[GatewayEvent] = []
        # Entries' objects: client sessions to check; an entry is stale when its
        # session wants checking at another time (scheduled) or none.
        self._timers = TimerQueue()

    # =====================================================================
    # inspection
    # =====================================================================

    def __len__(self) -> int:
        return len(self._clients)

    def at(self, addr: Hashable) -> ClientSession | None:
        """The session of the client at `addr`."""
        return self._clients.get(addr)

    def by_id(self, client_id: str) -> ClientSession | None:
        return self._by_id.get(client_id)

    def sessions(self) -> list[ClientSession]:
        return list(self._clients.values())

    @property
    def new_clients(self) -> int:
        """Clients still connecting, or silent since their CONNACK."""
        return len(self._new)

    @property
    def stored_wills(self) -> int:
        """Wills kept for CleanSession=0 clients between their connections."""
        return len(self._stored_wills)

    def take_events(self) -> list[GatewayEvent]:
        """Diagnostic events since the last call (drains)."""
        ev = self._events
        self._events = []
        return ev

    # =====================================================================
    # messages from clients
    # =====================================================================

    def heard(self, now: float, c: ClientSession) -> None:
        """Any message from a known client: it is alive, and no longer new once connected."""
        c.last_heard_s = now
        if c.state in CONNECTED:
            self._new.pop(c, None)  # it speaks after its CONNACK: no longer new

    def wake_elsewhere(self, now: float, client_id: str, addr: Hashable) -> None:
        """A PINGREQ with a client id: a sleeping client may wake up at a new address (6.14)."""
        c = self._by_id.get(client_id)
        if c is not None and c.state in (ASLEEP, AWAKE) and c.addr != addr:
            self._move(now, c, addr)

    def _move(self, now: float, c: ClientSession, addr: Hashable) -> None:
        old = self._clients.get(addr)
        if old is not None and old is not c:
            self._drop(now, old, "replaced", graceful=True)
        self._clients.pop(c.addr, None)
        c.addr = addr
        self._clients[addr] = c

    def on_connect(self, now: float, m: Connect, addr: Hashable) -> None:
        c = self._clients.get(addr)
        if c is not None and c.client_id == m.client_id:
            c.last_heard_s = now
            if c.state in (ASLEEP, AWAKE):
                self._wake_to_active(now, c, m)
                return
            if c.state == CONNECTING:
                return  # a repeated CONNECT; the broker's CONNACK will answer it
            if c.state in (WILL_TOPIC, WILL_MSG) and m.will:
                c.enter(WILL_TOPIC)  # a repeated CONNECT: prompt again
                self._datagrams.send(WillTopicReq(), addr)
                return
        other = self._by_id.get(m.client_id)
        if other is not None and other.addr != addr and other.state in (ASLEEP, AWAKE):
            self._move(now, other, addr)
            self._wake_to_active(now, other, m)
            return
        if c is not None:
            self._drop(now, c, "replaced", graceful=True)
        if other is not None and other is not c:
            self._drop(now, other, "replaced", graceful=True)
        if m.protocol_id != PROTOCOL_ID or not m.client_id or not mqtt_text_ok(m.client_id):
            self._stats.refused += 1
            self._datagrams.send(ConnAck(ReturnCode.NOT_SUPPORTED), addr)
            return
        if not self._make_room(now):
            self._stats.refused += 1
            self._datagrams.send(ConnAck(ReturnCode.CONGESTION), addr)
            return
        c = ClientSession(addr, m, now, self._topics.new_client())
        self._clients[addr] = c
        self._by_id[c.client_id] = c
        self._new[c] = None
        stored = self._stored_wills.pop(c.client_id, None)
        if stored is not None and not m.clean_session and not m.will:
            c.will_topic, c.will_msg, c.will_qos, c.will_retain = stored  # 6.3
        if m.will:
            self._datagrams.send(WillTopicReq(), addr)
        else:
            self._connect_broker(c)
        self.rearm(c)

    def _make_room(self, now: float) -> bool:
        """Whether a new client may have a slot. With max_new_clients, the oldest new
        client gives up its slot once there are that many or the table is full: a
        CONNECT costs nothing to send from any address, so clients that have sent
        nothing since their CONNACK may crowd out each other, never the others."""
        share = self._params.max_new_clients
        full = len(self._clients) >= self._params.max_clients
        if share is not None and self._new and (full or len(self._new) >= share):
            self._evict(now, next(iter(self._new)))
            full = len(self._clients) >= self._params.max_clients
        return not full

    def _evict(self, now: float, c: ClientSession) -> None:
        """End a new client to make room; told so, in case it is a real one."""
        self._stats.evicted += 1
        self._datagrams.send(
            ConnAck(ReturnCode.CONGESTION) if c.state in SETTING_UP else Disconnect(), c.addr
        )
        self._drop(now, c, "evicted", graceful=True)

    def _wake_to_active(self, now: float, c: ClientSession, m: Connect) -> None:
        c.enter(ACTIVE)
        c.keep_alive_s = m.duration_s
        self._datagrams.send(ConnAck(ReturnCode.ACCEPTED), c.addr)
        self.delivery.pump(now, c)

    def _connect_broker(self, c: ClientSession) -> None:
        c.enter(CONNECTING)
        c.link = self._links.open(c, c.client_id, c.clean_session, c.will())

    def on_willtopic(self, now: float, c: ClientSession, m: WillTopic) -> None:
        if c.state not in (WILL_TOPIC, WILL_MSG):
            self._repeated_setup(c)
            return
        if m.topic is None:
            c.will_topic = None  # 6.3: the empty WILLTOPIC deletes the will
            self._connect_broker(c)
            return
        if not self._will_topic_ok(m.topic):
            self._stats.refused += 1
            self._datagrams.send(ConnAck(ReturnCode.NOT_SUPPORTED), c.addr)
            self._forget(c, "refused")
            return
        c.will_topic, c.will_qos, c.will_retain = m.topic, m.qos, m.retain
        c.enter(WILL_MSG)
        self._datagrams.send(WillMsgReq(), c.addr)

    def _will_topic_ok(self, topic: str) -> bool:
        return is_valid_topic(topic) and mqtt_text_ok(topic) and not self._topics.too_long(topic)

    def on_willmsg(self, now: float, c: ClientSession, m: WillMsg) -> None:
        if c.state != WILL_MSG:
            self._repeated_setup(c)
            return
        c.will_msg = m.message
        self._connect_broker(c)

    def _repeated_setup(self, c: ClientSession) -> None:
        """A WILLTOPIC or WILLMSG again: while the broker connects, its CONNACK will answer;
        once active, our CONNACK was lost and is sent again."""
        if c.state in CONNECTED:
            self._datagrams.send(ConnAck(ReturnCode.ACCEPTED), c.addr)
        elif c.state != CONNECTING:
            self._stats.unexpected += 1

    def on_disconnect(self, now: float, c: ClientSession, m: Disconnect) -> None:
        if m.duration_s and c.state in CONNECTED:  # a sleep of 0 s is a plain DISCONNECT
            c.enter(ASLEEP)
            c.sleep_s = m.duration_s
            self.delivery.suspend(c)
            self._datagrams.send(Disconnect(), c.addr)
            self._events.append(ClientAsleep(c.addr, c.client_id, c.sleep_s))
            return
        self._datagrams.send(Disconnect(), c.addr)
        self._drop(now, c, "disconnect", graceful=True)

    def on_pingreq(self, now: float, c: ClientSession, m: PingReq) -> None:
        if c.state == ASLEEP:
            c.enter(AWAKE)
            self._events.append(ClientAwake(c.addr, c.client_id, self.delivery.waiting(c)))
            self.delivery.pump(now, c)  # the buffered messages, then PINGRESP (6.14)
        elif c.state == AWAKE:
            return  # a repeated wake-up PINGREQ: the PINGRESP ends the delivery
        elif c.state == ACTIVE:
            self._datagrams.send(PingResp(), c.addr)
        else:
            self._stats.unexpected += 1

    def _back_to_sleep(self, now: float, c: ClientSession) -> None:
        """The delivery layer has sent an awake client everything (6.14)."""
        c.enter(ASLEEP)  # PINGRESP sends the client back to sleep
        c.last_heard_s = now
        self._datagrams.send(PingResp(), c.addr)
        self._events.append(ClientAsleep(c.addr, c.client_id, c.sleep_s))

    def on_willtopicupd(self, now: float, c: ClientSession, m: WillTopicUpd) -> None:
        if c.state not in CONNECTED:
            self._stats.unexpected += 1
            return
        if m.topic is not None and not self._will_topic_ok(m.topic):
            self._datagrams.send(WillTopicResp(ReturnCode.NOT_SUPPORTED), c.addr)
            return
        if m.topic is None:
            c.will_topic, c.will_msg = None, b""  # 5.4.22: deletes topic and message
        else:
            c.will_topic, c.will_qos, c.will_retain = m.topic, m.qos, m.retain
        c.will_changed = True
        self._datagrams.send(WillTopicResp(ReturnCode.ACCEPTED), c.addr)

    def on_willmsgupd(self, now: float, c: ClientSession, m: WillMsgUpd) -> None:
        if c.state not in CONNECTED:
            self._stats.unexpected += 1
            return
        c.will_msg = m.message
        c.will_changed = True
        self._datagrams.send(WillMsgResp(ReturnCode.ACCEPTED), c.addr)

    # =====================================================================
    # what a session's MQTT connection says about itself
    # =====================================================================

    def broker_connected(self, now: float, c: ClientSession, event: Connected) -> None:
        if c.state == CONNECTING:
            c.enter(ACTIVE)
            self._datagrams.send(ConnAck(ReturnCode.ACCEPTED), c.addr)
            self._events.append(ClientConnected(c.addr, c.client_id))

    def broker_refused(self, now: float, c: ClientSession, event: ConnectionRefused) -> None:
        code = (
            ReturnCode.CONGESTION
            if event.return_code == ConnectReturnCode.SERVER_UNAVAILABLE
            else ReturnCode.NOT_SUPPORTED
        )
        self._stats.refused += 1
        self._datagrams.send(ConnAck(code), c.addr)
        self._forget(c, "refused")

    def broker_closed(self, now: float, c: ClientSession, event: ConnectionClosed) -> None:
        """The broker side ended on its own: tell the client (6.12), forget it (the
        broker layer closes the stream)."""
        if c.state == CONNECTING:
            self._datagrams.send(ConnAck(ReturnCode.CONGESTION), c.addr)
        else:
            self._datagrams.send(Disconnect(), c.addr)
        self._forget(c, "broker-closed")

    def broker_unreachable(self, c: ClientSession) -> None:
        """The session's MQTT connection never opened."""
        self._datagrams.send(ConnAck(ReturnCode.CONGESTION), c.addr)
        self._forget(c, "broker-unreachable")

    # =====================================================================
    # ending sessions
    # =====================================================================

    def _forget(self, c: ClientSession, reason: str) -> None:
        """Remove the client's state (its link, if any, is dealt with by the caller)."""
        if self._clients.get(c.addr) is c:
            del self._clients[c.addr]
        if self._by_id.get(c.client_id) is c:
            del self._by_id[c.client_id]
        self._new.pop(c, None)
        c.scheduled = None
        if c.link is not None:
            self._links.release(c.link)
            c.link = None
        if not c.clean_session and c.state in CONNECTED:
            self._store_will(c)
        self._events.append(ClientDisconnected(c.addr, c.client_id, reason))

    def _store_will(self, c: ClientSession) -> None:
        """6.3: a CleanSession=0 client's will outlives its connection."""
        wills = self._stored_wills
        wills[c.client_id] = (c.will_topic, c.will_msg, c.will_qos, c.will_retain)
        wills.move_to_end(c.client_id)
        while len(wills) > self._params.max_stored_wills:
            wills.popitem(last=False)

    def _drop(self, now: float, c: ClientSession, reason: str, *, graceful: bool) -> None:
        """End a client. graceful: its MQTT connection ends with DISCONNECT (no will)."""
        link = c.link
        if link is not None:
            if graceful:
                self._links.end(now, link)
            elif c.will_changed:
                # The broker holds a stale will: publish the current one, then leave cleanly.
                will = c.will()
                if will is not None:
                    self._links.publish_will(now, link, will)
                self._links.end(now, link)
            else:
                self._links.cut(link)
        self._forget(c, reason)

    # =====================================================================
    # timers
    # =====================================================================

    def next_timer(self) -> float | None:
        """The earliest deadline of a session (stale entries dropped on the way)."""
        timers = self._timers
        while (entry := timers.peek()) is not None and stale_timer(entry):
            timers.pop()
        return entry[DEADLINE] if entry is not None else None

    def handle_timer(self, now: float) -> None:
        """Check every session whose deadline is at or before `now`."""
        timers = self._timers
        while (entry := timers.peek()) is not None and entry[DEADLINE] <= now:
            timers.pop()
            if stale_timer(entry):
                continue
            c = entry[OBJ]
            c.scheduled = None
            try:
                self._check(now, c)
            except Exception as exc:  # noqa: BLE001 - one client's trouble stays its own
                self._guard(exc)
            self.rearm(c)

    def rearm(self, c: ClientSession) -> None:
        """Arm the session's timer for its next deadline, unless one armed comes earlier."""
        if self._clients.get(c.addr) is not c:
            return
        deadline = self._deadline(c)
        if deadline is None:
            c.scheduled = None
        elif c.scheduled is None or deadline < c.scheduled:
            self._timers.arm(deadline, CHECK, c)
            c.scheduled = deadline

    def _deadline(self, c: ClientSession) -> float | None:
        deadlines = []
        factor = self._params.keep_alive_factor
        if c.state in SETTING_UP:
            deadlines.append(c.since_s + self._params.connect_timeout_s)
        elif c.state == ACTIVE:
            alive = self._alive_until(c)
            if alive is not None:
                deadlines.append(alive)
        else:
            deadlines.append(c.last_heard_s + c.sleep_s * factor)
        retry = self.delivery.deadline(c)
        if retry is not None:
            deadlines.append(retry)
        if c.link is not None:
            t = self._links.next_timer(c.link)
            if t is not None:
                deadlines.append(t)
        return earliest(deadlines)

    def _alive_until(self, c: ClientSession) -> float | None:
        """When an active client is lost: after keep-alive x factor of silence (6.11);
        with keep-alive 0, after idle_timeout_s of silence, if set."""
        if c.keep_alive_s:
            return given_up_s(c.last_heard_s, c.keep_alive_s, self._params.keep_alive_factor)
        idle = self._params.idle_timeout_s
        return None if idle is None else c.last_heard_s + idle

    def _check(self, now: float, c: ClientSession) -> None:
        if self._clients.get(c.addr) is not c:
            return
        if c.link is not None:
            self._links.run_timer(now, c.link)
        factor = self._params.keep_alive_factor
        if c.state in SETTING_UP:
            if now >= c.since_s + self._params.connect_timeout_s:
                if c.state == CONNECTING:
                    self._datagrams.send(ConnAck(ReturnCode.CONGESTION), c.addr)
                self._drop(now, c, "connect-timeout", graceful=True)
                return
        elif c.state == ACTIVE:
            alive = self._alive_until(c)
            if alive is not None and now >= alive:
                reason = "keep-alive-timeout" if c.keep_alive_s else "idle-timeout"
                self._drop(now, c, reason, graceful=False)
                return
        elif now >= c.last_heard_s + c.sleep_s * factor:
            self._drop(now, c, "sleep-timeout", graceful=False)
            return
        if not self.delivery.retransmit(now, c):
            self._drop(now, c, "retries-exhausted", graceful=False)
