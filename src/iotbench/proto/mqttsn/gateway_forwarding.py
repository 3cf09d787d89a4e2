"""The MQTT-SN gateway's forwarding layer: what clients send on to the broker
(MQTT-SN 1.2 6.6-6.10), and the broker's answers to it.

`BrokerForwarding` takes a client's PUBLISH (QoS 0, 1 and 2, and QoS -1 from
anyone, 6.8), SUBSCRIBE and UNSUBSCRIBE to the client's MQTT connection, and
answers the client once the broker has: PUBACK after the broker's PUBACK
(end to end), PUBREC after its PUBCOMP, then PUBCOMP on the client's PUBREL;
SUBACK and UNSUBACK after the broker's. It keeps each client's requests in
flight in the session's `ToBroker`, asks the topic layer what names the ids
stand for, and sends through the broker layer's links.
"""

from __future__ import annotations

from iotbench.proto.mqtt.client import QueueFull
from iotbench.proto.mqtt.events import Published, Subscribed, Unsubscribed

from .codec import (
    QOS_MINUS_ONE,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    ReturnCode,
    SubAck,
    Subscribe,
    TopicIdType,
    UnsubAck,
    Unsubscribe,
)
from .gateway_broker import BrokerLinks
from .gateway_datagrams import ClientDatagrams
from .gateway_state import CONNECTED, ClientSession, MqttSnGatewayStats
from .gateway_topics import TopicIds


class BrokerForwarding:
    """Clients' PUBLISH, SUBSCRIBE and UNSUBSCRIBE, carried to the broker and answered."""

    def __init__(
        self,
        stats: MqttSnGatewayStats,
        datagrams: ClientDatagrams,
        links: BrokerLinks,
        topics: TopicIds,
    ) -> None:
        self._stats = stats
        self._datagrams = datagrams
        self._links = links
        self._topics = topics

    # =====================================================================
    # from clients
    # =====================================================================

    def publish_without_connection(self, now: float, m: Publish) -> None:
        """QoS -1 (6.8): predefined and short topics only, at QoS 0 over the gateway's
        own MQTT connection."""
        name = None
        if m.topic_id_type != TopicIdType.NORMAL:  # 6.8: no registration without a connection
            name = self._topics.name_of(None, m.topic_id_type, m.topic_id)
        if name is None:
            self._stats.dropped_qos_minus_one += 1
            return
        link = self._links.own_link()
        try:
            self._links.publish(now, link, name, m.data, 0, m.retain)
        except (QueueFull, ValueError):
            self._stats.dropped_qos_minus_one += 1
            return
        self._stats.messages_from_clients += 1

    def on_publish(self, now: float, c: ClientSession, m: Publish) -> None:
        flows = c.to_broker
        if c.state not in CONNECTED or c.link is None:
            self._stats.unexpected += 1
            return
        if m.qos == 2 and m.msg_id in flows.awaiting_pubrel:
            self._datagrams.send(PubRec(m.msg_id), c.addr)  # its PUBREC was lost
            return
        if m.qos and m.msg_id in flows.pubs_by_msg_id:
            return  # a repeat of a message still on its way to the broker
        name = self._topics.name_of(c.topics, m.topic_id_type, m.topic_id)
        if name is None:
            self._stats.invalid_topic_ids += 1
            self._datagrams.send(PubAck(m.topic_id, m.msg_id, ReturnCode.INVALID_TOPIC_ID), c.addr)
            return
        try:
            pid = self._links.publish(now, c.link, name, m.data, m.qos, m.retain)
        except (QueueFull, ValueError):
            self._datagrams.send(PubAck(m.topic_id, m.msg_id, ReturnCode.CONGESTION), c.addr)
            return
        self._stats.messages_from_clients += 1
        if pid is not None:
            flows.pubs[pid] = (m.msg_id, m.topic_id, m.qos)
            flows.pubs_by_msg_id[m.msg_id] = pid

    def on_pubrel(self, now: float, c: ClientSession, m: PubRel) -> None:
        c.to_broker.awaiting_pubrel.discard(m.msg_id)
        self._datagrams.send(PubComp(m.msg_id), c.addr)  # known id or not, like MQTT 4.3.3

    def on_subscribe(self, now: float, c: ClientSession, m: Subscribe) -> None:
        flows = c.to_broker
        if c.state not in CONNECTED or c.link is None:
            self._stats.unexpected += 1
            return
        if any(msg_id == m.msg_id for msg_id, _, _ in flows.subs.values()):
            return  # a repeat; the SUBACK is on its way
        topic_filter = self._topics.filter_of(m)
        if topic_filter is None or m.qos == QOS_MINUS_ONE:
            code = (
                ReturnCode.INVALID_TOPIC_ID
                if m.topic_id_type == TopicIdType.PREDEFINED
                else ReturnCode.NOT_SUPPORTED
            )
            self._datagrams.send(SubAck(0, m.msg_id, code), c.addr)
            return
        try:
            pid = self._links.subscribe(now, c.link, topic_filter, m.qos)
        except QueueFull:
            self._datagrams.send(SubAck(0, m.msg_id, ReturnCode.CONGESTION), c.addr)
            return
        flows.subs[pid] = (m.msg_id, m, topic_filter)

    def on_unsubscribe(self, now: float, c: ClientSession, m: Unsubscribe) -> None:
        flows = c.to_broker
        if c.state not in CONNECTED or c.link is None:
            self._stats.unexpected += 1
            return
        if m.msg_id in flows.unsubs.values():
            return
        topic_filter = self._topics.filter_of(m)
        if topic_filter is None:
            self._datagrams.send(UnsubAck(m.msg_id), c.addr)  # nothing to remove
            return
        try:
            pid = self._links.unsubscribe(now, c.link, topic_filter)
        except QueueFull:
            return  # no identifier free; the client will repeat its UNSUBSCRIBE
        flows.unsubs[pid] = m.msg_id

    # =====================================================================
    # the broker's answers
    # =====================================================================

    def published(self, now: float, c: ClientSession, event: Published) -> None:
        """The broker's PUBACK (QoS 1) or PUBCOMP (QoS 2) for a client's PUBLISH."""
        flows = c.to_broker
        pid = event.packet_id
        entry = flows.pubs.pop(pid, None) if pid is not None else None
        if entry is None:
            return
        msg_id, topic_id, qos = entry
        flows.pubs_by_msg_id.pop(msg_id, None)
        if qos == 1:
            self._datagrams.send(PubAck(topic_id, msg_id, ReturnCode.ACCEPTED), c.addr)
        else:
            flows.awaiting_pubrel.add(msg_id)
            self._datagrams.send(PubRec(msg_id), c.addr)

    def subscribed(self, now: float, c: ClientSession, event: Subscribed) -> None:
        entry = c.to_broker.subs.pop(event.packet_id, None)
        if entry is None:
            return
        msg_id, m, topic_filter = entry
        granted = event.granted[0]
        if granted not in (0, 1, 2):
            self._datagrams.send(SubAck(0, msg_id, ReturnCode.NOT_SUPPORTED), c.addr)
            return
        topic_id = self._topics.for_suback(c, m, topic_filter)
        self._datagrams.send(SubAck(topic_id, msg_id, ReturnCode.ACCEPTED, granted), c.addr)

    def unsubscribed(self, now: float, c: ClientSession, event: Unsubscribed) -> None:
        msg_id = c.to_broker.unsubs.pop(event.packet_id, None)
        if msg_id is not None:
            self._datagrams.send(UnsubAck(msg_id), c.addr)
