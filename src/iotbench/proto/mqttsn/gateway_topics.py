"""The MQTT-SN gateway's topic layer: topic names and the ids that stand for them
(MQTT-SN 1.2 3.x, 6.5-6.10).

`TopicIds` turns a client's topic ids into names and back: normal ids from a
registry per client connection (its `ClientTopics`, in the session), predefined
ids from the configuration, two-octet short topic names. It answers the
clients' REGISTER, and it decides which names the gateway takes from a client
at all (valid for MQTT, not longer than max_topic_name_bytes).

    name = topics.name_of(c.topics, kind, topic_id)     # a PUBLISH's topic, or None
    topic_filter = topics.filter_of(subscribe)           # a SUBSCRIBE's filter, or None
    kind_and_id = topics.to_client(c, name)              # None: REGISTER it first
    topic_id = topics.assign(c, name)                    # for the gateway's REGISTER
    topics.registered(c, topic_id)                       # the client's REGACK, ...
"""

from __future__ import annotations

from iotbench.proto.mqtt.topics import is_valid_filter, is_valid_topic

from .codec import (
    RegAck,
    Register,
    ReturnCode,
    Subscribe,
    TopicIdType,
    Unsubscribe,
    short_topic_id,
    short_topic_name,
)
from .gateway_datagrams import ClientDatagrams
from .gateway_state import (
    CONNECTED,
    ClientSession,
    ClientTopics,
    MqttSnGatewayStats,
    mqtt_text_ok,
)
from .params import MqttSnGatewayParams


class TopicIds:
    """Topic names <-> topic ids, for every client of the gateway."""

    def __init__(
        self,
        params: MqttSnGatewayParams,
        stats: MqttSnGatewayStats,
        datagrams: ClientDatagrams,
    ) -> None:
        self._params = params
        self._stats = stats
        self._datagrams = datagrams
        self._predefined = params.predefined_topics  # id -> name
        self._predefined_ids = {name: tid for tid, name in params.predefined_topics.items()}

    def new_client(self) -> ClientTopics:
        """The empty topic table of a new client connection."""
        p = self._params
        return ClientTopics(p.max_topics_per_client, p.max_topic_bytes_per_client)

    def too_long(self, name: str) -> bool:
        """A topic name or filter from a client beyond max_topic_name_bytes (counted).
        Its memory is the gateway's from then on (a registration, a will, a
        subscription), and a UDP datagram carries up to 64 kB of it."""
        if len(name.encode("utf-8")) <= self._params.max_topic_name_bytes:
            return False
        self._stats.long_topics += 1
        return True

    # =====================================================================
    # from clients
    # =====================================================================

    def name_of(self, topics: ClientTopics | None, kind: TopicIdType, topic_id: int) -> str | None:
        """The topic name a client's PUBLISH stands for (`topics` None: a client without
        a connection); None when the id is unknown or the name no MQTT topic."""
        if kind == TopicIdType.NORMAL:
            name = topics.registry.name_of(topic_id) if topics is not None else None
        elif kind == TopicIdType.PREDEFINED:
            name = self._predefined.get(topic_id)
        else:
            name = short_topic_name(topic_id)
        if name is None or not is_valid_topic(name) or not mqtt_text_ok(name):
            return None
        return name

    def filter_of(self, m: Subscribe | Unsubscribe) -> str | None:
        """The topic filter of a SUBSCRIBE or UNSUBSCRIBE, or None when it names none
        the gateway takes."""
        if m.topic_id_type == TopicIdType.NORMAL:
            name: str | None = m.topic_name
            if self.too_long(m.topic_name):
                return None  # SUBSCRIBE: "not supported"; UNSUBSCRIBE: nothing to remove
        elif m.topic_id_type == TopicIdType.PREDEFINED:
            name = self._predefined.get(m.topic_id)
        else:
            name = short_topic_name(m.topic_id)
        if name is None or not is_valid_filter(name) or not mqtt_text_ok(name):
            return None
        return name

    def on_register(self, now: float, c: ClientSession, m: Register) -> None:
        if c.state not in CONNECTED:
            self._stats.unexpected += 1
            return
        name = m.topic_name
        # Too long is "not supported": as with a wildcard, asking again will not help.
        # A full table (count or octets) is "congestion", as for max_topics_per_client.
        if not is_valid_topic(name) or not mqtt_text_ok(name) or self.too_long(name):
            self._datagrams.send(RegAck(0, m.msg_id, ReturnCode.NOT_SUPPORTED), c.addr)
            return
        topic_id = c.topics.registry.assign(name)
        if topic_id is None:
            self._datagrams.send(RegAck(0, m.msg_id, ReturnCode.CONGESTION), c.addr)
            return
        c.topics.known.add(topic_id)
        self._datagrams.send(RegAck(topic_id, m.msg_id, ReturnCode.ACCEPTED), c.addr)

    def for_suback(self, c: ClientSession, m: Subscribe, topic_filter: str) -> int:
        """The topic id a SUBACK tells the client (5.4.16): the predefined id, or a normal
        id for a filter without wildcards (the id its PUBLISHes will carry), else 0."""
        if m.topic_id_type == TopicIdType.PREDEFINED:
            return m.topic_id
        if m.topic_id_type == TopicIdType.NORMAL and is_valid_topic(topic_filter):
            topic_id = c.topics.registry.assign(topic_filter) or 0
            if topic_id:
                c.topics.known.add(topic_id)  # the SUBACK tells the client this id
            return topic_id
        return 0  # not relevant for wildcards and short topic names

    # =====================================================================
    # to clients
    # =====================================================================

    def to_client(self, c: ClientSession, name: str) -> tuple[TopicIdType, int] | None:
        """How a topic name goes to this client; None when it needs a REGISTER first."""
        predefined = self._predefined_ids.get(name)
        if predefined is not None:
            return TopicIdType.PREDEFINED, predefined
        topic_id = c.topics.registry.id_of(name)
        if topic_id is not None and topic_id in c.topics.known:
            return TopicIdType.NORMAL, topic_id
        if len(name.encode("utf-8")) == 2:
            return TopicIdType.SHORT, short_topic_id(name)
        return None

    def assign(self, c: ClientSession, name: str) -> int | None:
        """A normal id for `name`, to REGISTER with the client; None when its table is full."""
        return c.topics.registry.assign(name)

    def registered(self, c: ClientSession, topic_id: int) -> None:
        """The client accepted the gateway's REGISTER of `topic_id`."""
        c.topics.known.add(topic_id)

    def registration_refused(self, c: ClientSession, topic_id: int) -> None:
        """The client refused the gateway's REGISTER of `topic_id`."""
        c.topics.registry.forget(topic_id)

    def unknown_to_client(self, c: ClientSession, topic_id: int) -> None:
        """The client answered "invalid topic ID": register it again before the next use."""
        c.topics.known.discard(topic_id)
