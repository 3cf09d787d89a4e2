"""The MQTT-SN gateway's broker side: one MQTT connection per client, opened,
serviced and ended with its client, and what comes back from the broker
(deliveries to the client with their registrations and QoS flows).

`GatewayBroker` is one part of `MqttSnGateway` (gateway.py), which sets up
the state it uses."""

from __future__ import annotations

from iotbench.proto.errors import own_error
from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.codec import ConnectReturnCode
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

from .codec import (
    ConnAck,
    Disconnect,
    PingResp,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    RegAck,
    Register,
    ReturnCode,
    TopicIdType,
    UnsubAck,
    short_topic_id,
)
from .events import ClientAsleep, ClientConnected
from .gateway_state import (
    ACTIVE,
    ASLEEP,
    AWAKE,
    CONNECTING,
    BrokerLink,
    ClientSession,
    Delivery,
    Outgoing,
)


class GatewayBroker:
    """The broker side's methods of `MqttSnGateway`."""

    # =====================================================================
    # the broker side
    # =====================================================================

    def _open_link(self, owner: ClientSession | None, params: MqttClientParams) -> BrokerLink:
        stream = self._next_stream
        self._next_stream += 1
        link = BrokerLink(stream, MqttClient(self.rng, params), owner)
        self._links[stream] = link
        self._to_open.append(stream)
        return link

    def _touch(self, link: BrokerLink) -> None:
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
                except Exception as exc:  # noqa: BLE001 - one client's trouble stays its own
                    self.stats.internal_errors += 1
                    own_error(self.strict, exc, "MQTT-SN gateway")
            self._flush_link(link)
            if link.mqtt.close_requested and self._links.get(link.stream) is link:
                self._detach(link)
                self._to_close.append(link.stream)
            if link.owner is not None:
                self._rearm(link.owner)

    def _flush_link(self, link: BrokerLink) -> None:
        data = link.mqtt.data_to_send()
        if data:
            self._stream_out.setdefault(link.stream, bytearray()).extend(data)

    def _detach(self, link: BrokerLink) -> None:
        """The gateway is done with `link`: later bytes and losses for it are ignored."""
        self._links.pop(link.stream, None)
        self._touched.pop(link.stream, None)
        if self._qos_m1 is link:
            self._qos_m1 = None
        if link.owner is not None and link.owner.link is link:
            link.owner.link = None
        link.owner = None

    def _cut_link(self, link: BrokerLink) -> None:
        """Close the MQTT connection without DISCONNECT (the broker publishes the will)."""
        self._flush_link(link)
        self._detach(link)
        self._to_close.append(link.stream)

    def _end_link(self, now: float, link: BrokerLink) -> None:
        """End the MQTT connection with DISCONNECT (the broker drops the will)."""
        link.mqtt.disconnect(now)
        if link.mqtt.close_requested:
            self._flush_link(link)
            self._detach(link)
            self._to_close.append(link.stream)
        else:
            self._cut_link(link)  # never connected: nothing to say

    def _on_mqtt_event(self, now: float, link: BrokerLink, event: object) -> None:
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
            if c.state == CONNECTING:
                c.enter(ACTIVE)
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
            if c.state == CONNECTING:
                self._send(ConnAck(ReturnCode.CONGESTION), c.addr)
            else:
                self._send(Disconnect(), c.addr)
            self._forget(c, "broker-closed")  # _service closes the stream

    # =====================================================================
    # clients: messages from the broker
    # =====================================================================

    def _deliver(self, now: float, c: ClientSession, event: MessageReceived) -> None:
        if len(c.queue) >= self.params.max_buffered_messages:
            self.stats.dropped_buffer_full += 1
            return
        c.queue.append(Delivery(event.topic, event.payload, event.qos, event.retain))
        self._pump(now, c)

    def _client_topic(self, c: ClientSession, name: str) -> tuple[TopicIdType, int] | None:
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

    def _pump(self, now: float, c: ClientSession) -> None:
        """Send waiting messages, one REGISTER or QoS 1/2 PUBLISH outstanding at a time."""
        while c.state in (ACTIVE, AWAKE) and c.out is None and c.queue:
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
        if c.state == AWAKE and c.out is None and not c.queue:
            c.enter(ASLEEP)  # 6.14: all sent; PINGRESP sends the client back to sleep
            c.last_heard_s = now
            self._send(PingResp(), c.addr)
            self._events.append(ClientAsleep(c.addr, c.client_id, c.sleep_s))

    def _reply_to_out(self, c: ClientSession, kind: type, msg_id: int) -> Outgoing | None:
        out = c.out
        if out is None or type(out.message) is not kind or out.message.msg_id != msg_id:
            self.stats.unexpected += 1
            return None
        return out

    def _done(self, now: float, c: ClientSession) -> None:
        c.out = None
        self._pump(now, c)

    def _on_regack(self, now: float, c: ClientSession, m: RegAck) -> None:
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

    def _on_puback(self, now: float, c: ClientSession, m: PubAck) -> None:
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

    def _on_pubrec(self, now: float, c: ClientSession, m: PubRec) -> None:
        out = c.out
        if out is not None and type(out.message) is PubRel and out.message.msg_id == m.msg_id:
            self._send(out.message, c.addr)  # our PUBREL was lost
            return
        out = self._reply_to_out(c, Publish, m.msg_id)
        if out is None or out.message.qos != 2:
            return
        self._transmit(now, c, PubRel(m.msg_id))

    def _on_pubcomp(self, now: float, c: ClientSession, m: PubComp) -> None:
        if self._reply_to_out(c, PubRel, m.msg_id) is not None:
            self._done(now, c)
