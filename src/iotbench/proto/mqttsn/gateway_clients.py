"""The MQTT-SN gateway's client sessions: CONNECT with its will set-up, sleep
and wake-up, keep-alive, DISCONNECT, will updates, and the timers that end a
session (MQTT-SN 1.2 6.3-6.6, 6.14).

`GatewayClients` is one part of `MqttSnGateway` (gateway.py), which sets up
the state it uses."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace

from iotbench.proto.keepalive import given_up_s
from iotbench.proto.mqtt.params import MqttClientParams
from iotbench.proto.mqtt.topics import is_valid_topic

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
    Subscribe,
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
)
from .events import ClientAsleep, ClientAwake, ClientDisconnected
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
    Forwarded,
    mqtt_text_ok,
)


class GatewayClients:
    """The client sessions' methods of `MqttSnGateway`."""

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
            if c is not None and c.state in (ASLEEP, AWAKE) and c.addr != addr:
                self._move(now, c, addr)  # 6.14: a sleeping client may wake up elsewhere
        c = self._clients.get(addr)
        if c is None:
            self._unknown_client(m, addr)
            return
        c.last_heard_s = now
        if c.state in CONNECTED:
            self._new.pop(c, None)  # it speaks after its CONNACK: no longer new
        handler = _HANDLERS.get(t)
        if handler is None:
            self.stats.unexpected += 1  # a message only a gateway sends
        else:
            getattr(self, handler)(now, c, m)
        self._rearm(c)

    def _unknown_client(self, m: Message, addr: Hashable) -> None:
        self.stats.unknown_clients += 1
        if type(m) in _CLIENT_MESSAGES:
            self._send(Disconnect(), addr)  # 6.12: connect first

    def _move(self, now: float, c: ClientSession, addr: Hashable) -> None:
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
            if c.state in (ASLEEP, AWAKE):
                self._wake_to_active(now, c, m)
                return
            if c.state == CONNECTING:
                return  # a repeated CONNECT; the broker's CONNACK will answer it
            if c.state in (WILL_TOPIC, WILL_MSG) and m.will:
                c.enter(WILL_TOPIC)  # a repeated CONNECT: prompt again
                self._send(WillTopicReq(), addr)
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
            self.stats.refused += 1
            self._send(ConnAck(ReturnCode.NOT_SUPPORTED), addr)
            return
        if not self._make_room(now):
            self.stats.refused += 1
            self._send(ConnAck(ReturnCode.CONGESTION), addr)
            return
        p = self.params
        c = ClientSession(addr, m, now, p.max_topics_per_client, p.max_topic_bytes_per_client)
        self._clients[addr] = c
        self._by_id[c.client_id] = c
        self._new[c] = None
        stored = self._stored_wills.pop(c.client_id, None)
        if stored is not None and not m.clean_session and not m.will:
            c.will_topic, c.will_msg, c.will_qos, c.will_retain = stored  # 6.3
        if m.will:
            self._send(WillTopicReq(), addr)
        else:
            self._connect_broker(c)
        self._rearm(c)

    def _make_room(self, now: float) -> bool:
        """Whether a new client may have a slot. With max_new_clients, the oldest new
        client gives up its slot once there are that many or the table is full: a
        CONNECT costs nothing to send from any address, so clients that have sent
        nothing since their CONNACK may crowd out each other, never the others."""
        share = self.params.max_new_clients
        full = len(self._clients) >= self.params.max_clients
        if share is not None and self._new and (full or len(self._new) >= share):
            self._evict(now, next(iter(self._new)))
            full = len(self._clients) >= self.params.max_clients
        return not full

    def _evict(self, now: float, c: ClientSession) -> None:
        """End a new client to make room; told so, in case it is a real one."""
        self.stats.evicted += 1
        self._send(
            ConnAck(ReturnCode.CONGESTION) if c.state in SETTING_UP else Disconnect(), c.addr
        )
        self._drop(now, c, "evicted", graceful=True)

    def _wake_to_active(self, now: float, c: ClientSession, m: Connect) -> None:
        c.enter(ACTIVE)
        c.keep_alive_s = m.duration_s
        self._send(ConnAck(ReturnCode.ACCEPTED), c.addr)
        self._pump(now, c)

    def _connect_broker(self, c: ClientSession) -> None:
        c.enter(CONNECTING)
        params = MqttClientParams(
            client_id=c.client_id,
            clean_session=c.clean_session,
            keep_alive_s=self.params.broker_keep_alive_s,
            will=c.will(),
        )
        c.link = self._open_link(c, params)

    def _on_willtopic(self, now: float, c: ClientSession, m: WillTopic) -> None:
        if c.state not in (WILL_TOPIC, WILL_MSG):
            self._repeated_setup(c)
            return
        if m.topic is None:
            c.will_topic = None  # 6.3: the empty WILLTOPIC deletes the will
            self._connect_broker(c)
            return
        if not is_valid_topic(m.topic) or not mqtt_text_ok(m.topic) or self._too_long(m.topic):
            self.stats.refused += 1
            self._send(ConnAck(ReturnCode.NOT_SUPPORTED), c.addr)
            self._forget(c, "refused")
            return
        c.will_topic, c.will_qos, c.will_retain = m.topic, m.qos, m.retain
        c.enter(WILL_MSG)
        self._send(WillMsgReq(), c.addr)

    def _on_willmsg(self, now: float, c: ClientSession, m: WillMsg) -> None:
        if c.state != WILL_MSG:
            self._repeated_setup(c)
            return
        c.will_msg = m.message
        self._connect_broker(c)

    def _repeated_setup(self, c: ClientSession) -> None:
        """A WILLTOPIC or WILLMSG again: while the broker connects, its CONNACK will answer;
        once active, our CONNACK was lost and is sent again."""
        if c.state in CONNECTED:
            self._send(ConnAck(ReturnCode.ACCEPTED), c.addr)
        elif c.state != CONNECTING:
            self.stats.unexpected += 1

    def _on_disconnect(self, now: float, c: ClientSession, m: Disconnect) -> None:
        if m.duration_s and c.state in CONNECTED:  # a sleep of 0 s is a plain DISCONNECT
            c.enter(ASLEEP)
            c.sleep_s = m.duration_s
            self._suspend(c)
            self._send(Disconnect(), c.addr)
            self._events.append(ClientAsleep(c.addr, c.client_id, c.sleep_s))
            return
        self._send(Disconnect(), c.addr)
        self._drop(now, c, "disconnect", graceful=True)

    def _suspend(self, c: ClientSession) -> None:
        """Going to sleep: stop re-sending; an unacknowledged PUBLISH waits for the wake-up."""
        out = c.out
        c.out = None
        if out is not None and out.delivery is not None and type(out.message) is Publish:
            c.queue.appendleft(out.delivery)

    def _on_pingreq(self, now: float, c: ClientSession, m: PingReq) -> None:
        if c.state == ASLEEP:
            c.enter(AWAKE)
            self._events.append(ClientAwake(c.addr, c.client_id, len(c.queue)))
            self._pump(now, c)  # the buffered messages, then PINGRESP (6.14)
        elif c.state == AWAKE:
            return  # a repeated wake-up PINGREQ: the PINGRESP ends the delivery
        elif c.state == ACTIVE:
            self._send(PingResp(), c.addr)
        else:
            self.stats.unexpected += 1

    def _on_willtopicupd(self, now: float, c: ClientSession, m: WillTopicUpd) -> None:
        if c.state not in CONNECTED:
            self.stats.unexpected += 1
            return
        topic = m.topic
        if topic is not None and (
            not is_valid_topic(topic) or not mqtt_text_ok(topic) or self._too_long(topic)
        ):
            self._send(WillTopicResp(ReturnCode.NOT_SUPPORTED), c.addr)
            return
        if m.topic is None:
            c.will_topic, c.will_msg = None, b""  # 5.4.22: deletes topic and message
        else:
            c.will_topic, c.will_qos, c.will_retain = m.topic, m.qos, m.retain
        c.will_changed = True
        self._send(WillTopicResp(ReturnCode.ACCEPTED), c.addr)

    def _on_willmsgupd(self, now: float, c: ClientSession, m: WillMsgUpd) -> None:
        if c.state not in CONNECTED:
            self.stats.unexpected += 1
            return
        c.will_msg = m.message
        c.will_changed = True
        self._send(WillMsgResp(ReturnCode.ACCEPTED), c.addr)

    # ---- ending clients ----------------------------------------------------------------

    def _forget(self, c: ClientSession, reason: str) -> None:
        """Remove the client's state (its link, if any, is dealt with by the caller)."""
        if self._clients.get(c.addr) is c:
            del self._clients[c.addr]
        if self._by_id.get(c.client_id) is c:
            del self._by_id[c.client_id]
        self._new.pop(c, None)
        c.scheduled = None
        if c.link is not None:
            c.link.owner = None
            c.link = None
        if not c.clean_session and c.state in CONNECTED:
            self._store_will(c)
        self._events.append(ClientDisconnected(c.addr, c.client_id, reason))

    def _store_will(self, c: ClientSession) -> None:
        """6.3: a CleanSession=0 client's will outlives its connection."""
        wills = self._stored_wills
        wills[c.client_id] = (c.will_topic, c.will_msg, c.will_qos, c.will_retain)
        wills.move_to_end(c.client_id)
        while len(wills) > self.params.max_stored_wills:
            wills.popitem(last=False)

    def _drop(self, now: float, c: ClientSession, reason: str, *, graceful: bool) -> None:
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
    # timers
    # =====================================================================

    def _deadline(self, c: ClientSession) -> float | None:
        deadlines = []
        factor = self.params.keep_alive_factor
        if c.state in SETTING_UP:
            deadlines.append(c.since_s + self.params.connect_timeout_s)
        elif c.state == ACTIVE:
            alive = self._alive_until(c)
            if alive is not None:
                deadlines.append(alive)
        else:
            deadlines.append(c.last_heard_s + c.sleep_s * factor)
        if c.out is not None:
            deadlines.append(c.out.retx.deadline_s)
        if c.link is not None:
            t = c.link.mqtt.next_timer()
            if t is not None:
                deadlines.append(t)
        return min(deadlines) if deadlines else None

    def _alive_until(self, c: ClientSession) -> float | None:
        """When an active client is lost: after keep-alive x factor of silence (6.11);
        with keep-alive 0, after idle_timeout_s of silence, if set."""
        if c.keep_alive_s:
            return given_up_s(c.last_heard_s, c.keep_alive_s, self.params.keep_alive_factor)
        idle = self.params.idle_timeout_s
        return None if idle is None else c.last_heard_s + idle

    def _rearm(self, c: ClientSession) -> None:
        if self._clients.get(c.addr) is not c:
            return
        deadline = self._deadline(c)
        if deadline is None:
            c.scheduled = None
        elif c.scheduled is None or deadline < c.scheduled:
            self._timers.arm(deadline, CHECK, c)
            c.scheduled = deadline

    def _check(self, now: float, c: ClientSession) -> None:
        if self._clients.get(c.addr) is not c:
            return
        link = c.link
        if link is not None:
            t = link.mqtt.next_timer()
            if t is not None and t <= now:
                link.mqtt.handle_timer(now)
                self._touch(link)
        factor = self.params.keep_alive_factor
        if c.state in SETTING_UP:
            if now >= c.since_s + self.params.connect_timeout_s:
                if c.state == CONNECTING:
                    self._send(ConnAck(ReturnCode.CONGESTION), c.addr)
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
        out = c.out
        if out is not None and out.retx.deadline_s <= now:
            if not out.retx.on_timeout(now):
                self._drop(now, c, "retries-exhausted", graceful=False)
                return
            self.stats.retransmissions += 1
            if type(out.message) is Publish and not out.message.dup:
                out.message = replace(out.message, dup=True)
            self._send(out.message, c.addr)


#: The method that handles each message a connected client may send.
_HANDLERS = {
    WillTopic: "_on_willtopic",
    WillMsg: "_on_willmsg",
    Register: "_on_register",
    RegAck: "_on_regack",
    Publish: "_on_publish",
    PubAck: "_on_puback",
    PubRec: "_on_pubrec",
    PubRel: "_on_pubrel",
    PubComp: "_on_pubcomp",
    Subscribe: "_on_subscribe",
    Unsubscribe: "_on_unsubscribe",
    PingReq: "_on_pingreq",
    Disconnect: "_on_disconnect",
    WillTopicUpd: "_on_willtopicupd",
    WillMsgUpd: "_on_willmsgupd",
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
