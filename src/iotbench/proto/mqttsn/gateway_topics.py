"""The MQTT-SN gateway's client-to-broker messages: topic registration,
PUBLISH at every QoS (QoS -1 included), SUBSCRIBE and UNSUBSCRIBE, each
carried to the client's MQTT connection (MQTT-SN 1.2 6.7-6.10).

`GatewayTopics` is one part of `MqttSnGateway` (gateway.py), which sets up
the state it uses."""

from __future__ import annotations

from iotbench.proto.mqtt.client import QueueFull
from iotbench.proto.mqtt.events import (
    Subscribed,
)
from iotbench.proto.mqtt.params import MqttClientParams
from iotbench.proto.mqtt.topics import is_valid_filter, is_valid_topic

from .codec import (
    QOS_MINUS_ONE,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    RegAck,
    Register,
    ReturnCode,
    SubAck,
    Subscribe,
    TopicIdType,
    UnsubAck,
    Unsubscribe,
    short_topic_name,
)
from .gateway_state import (
    CONNECTED,
    ClientSession,
    mqtt_text_ok,
)


class GatewayTopics:
    """The client-to-broker messages' methods of `MqttSnGateway`."""

    # =====================================================================
    # clients: messages to the broker
    # =====================================================================

    def _too_long(self, name: str) -> bool:
        """A topic name or filter from a client beyond max_topic_name_bytes (counted).
        Its memory is the gateway's from then on (a registration, a will, a
        subscription), and a UDP datagram carries up to 64 kB of it."""
        if len(name.encode("utf-8")) <= self.params.max_topic_name_bytes:
            return False
        self.stats.long_topics += 1
        return True

    def _publish_topic(
        self, c: ClientSession | None, kind: TopicIdType, topic_id: int
    ) -> str | None:
        if kind == TopicIdType.NORMAL:
            name = c.topics.name_of(topic_id) if c is not None else None
        elif kind == TopicIdType.PREDEFINED:
            name = self.params.predefined_topics.get(topic_id)
        else:
            name = short_topic_name(topic_id)
        if name is None or not is_valid_topic(name) or not mqtt_text_ok(name):
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

    def _on_register(self, now: float, c: ClientSession, m: Register) -> None:
        if c.state not in CONNECTED:
            self.stats.unexpected += 1
            return
        name = m.topic_name
        # Too long is "not supported": as with a wildcard, asking again will not help.
        # A full table (count or octets) is "congestion", as for max_topics_per_client.
        if not is_valid_topic(name) or not mqtt_text_ok(name) or self._too_long(name):
            self._send(RegAck(0, m.msg_id, ReturnCode.NOT_SUPPORTED), c.addr)
            return
        topic_id = c.topics.assign(name)
        if topic_id is None:
            self._send(RegAck(0, m.msg_id, ReturnCode.CONGESTION), c.addr)
            return
        c.known_ids.add(topic_id)
        self._send(RegAck(topic_id, m.msg_id, ReturnCode.ACCEPTED), c.addr)

    def _on_publish(self, now: float, c: ClientSession, m: Publish) -> None:
        if c.state not in CONNECTED or c.link is None:
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

    def _published(self, now: float, c: ClientSession, pid: int | None) -> None:
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

    def _on_pubrel(self, now: float, c: ClientSession, m: PubRel) -> None:
        c.awaiting_pubrel.discard(m.msg_id)
        self._send(PubComp(m.msg_id), c.addr)  # known id or not, like MQTT 4.3.3

    def _subscription_filter(self, m: Subscribe | Unsubscribe) -> str | None:
        if m.topic_id_type == TopicIdType.NORMAL:
            name = m.topic_name
            if self._too_long(name):
                return None  # SUBSCRIBE: "not supported"; UNSUBSCRIBE: nothing to remove
        elif m.topic_id_type == TopicIdType.PREDEFINED:
            name = self.params.predefined_topics.get(m.topic_id)
        else:
            name = short_topic_name(m.topic_id)
        if name is None or not is_valid_filter(name) or not mqtt_text_ok(name):
            return None
        return name

    def _on_subscribe(self, now: float, c: ClientSession, m: Subscribe) -> None:
        if c.state not in CONNECTED or c.link is None:
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

    def _subscribed(self, now: float, c: ClientSession, event: Subscribed) -> None:
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

    def _on_unsubscribe(self, now: float, c: ClientSession, m: Unsubscribe) -> None:
        if c.state not in CONNECTED or c.link is None:
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
