"""What the MQTT-SN gateway (gateway.py) keeps per client and per broker connection:
the client states of 6.14, a client's session, its link to the broker and its
messages in flight.

A session is made of parts, each kept by one layer of the gateway and changed
by no other: the session itself (state, keep-alive, will, its broker link) by
the session table (gateway_clients.py), `ClientTopics` by the topic layer
(gateway_topics.py), `ToBroker` by the forwarding layer (gateway_forwarding.py)
and `ToClient` by the delivery layer (gateway_delivery.py). Every layer may
read a session's address, client id, state and broker link (the forwarding
layer sends on it)."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.codec import Will
from iotbench.proto.retransmit import Retransmission
from iotbench.proto.timers import DEADLINE, OBJ

from .codec import (
    Connect,
    Message,
    Subscribe,
)
from .registry import TopicRegistry


class SessionState(StrEnum):
    """A client's state (6.14, figure 4, seen from the gateway); disconnected and
    lost clients have no session. The values are what messages show."""

    WILL_TOPIC = "will-topic"  # WILLTOPICREQ sent
    WILL_MSG = "will-message"  # WILLMSGREQ sent
    CONNECTING = "connecting"  # waiting for the broker's CONNACK
    ACTIVE = "active"
    ASLEEP = "asleep"
    AWAKE = "awake"


# Final: compiled, a plain module-level name is looked up in the module's dict
# at each use, in every module that imports it.
WILL_TOPIC: Final = SessionState.WILL_TOPIC
WILL_MSG: Final = SessionState.WILL_MSG
CONNECTING: Final = SessionState.CONNECTING
ACTIVE: Final = SessionState.ACTIVE
ASLEEP: Final = SessionState.ASLEEP
AWAKE: Final = SessionState.AWAKE
#: Where a session may go from each state (ClientSession.enter): a repeated
#: CONNECT prompts for the will again, a sleeping client's CONNECT makes it
#: active, a DISCONNECT with a duration puts a connected one to sleep.
_NEXT: dict[SessionState, tuple[SessionState, ...]] = {
    WILL_TOPIC: (WILL_TOPIC, WILL_MSG, CONNECTING),
    WILL_MSG: (WILL_TOPIC, WILL_MSG, CONNECTING),  # a WILLTOPIC again: WILLMSGREQ was lost
    CONNECTING: (ACTIVE,),
    ACTIVE: (ASLEEP,),
    ASLEEP: (ACTIVE, AWAKE, ASLEEP),
    AWAKE: (ACTIVE, ASLEEP),
}
SETTING_UP: Final = (WILL_TOPIC, WILL_MSG, CONNECTING)
CONNECTED: Final = (ACTIVE, ASLEEP, AWAKE)

CHECK: Final = 0  # the gateway's one kind of timer (proto/timers.py): check a client session


def stale_timer(entry: list) -> bool:
    """A timer entry whose session wants checking at another time, or not at all."""
    return entry[OBJ].scheduled != entry[DEADLINE]


# Records below write out their __init__: compiled, it stores each field
# directly, where the one @dataclass generates is interpreted Python
# (tests/test_written_inits.py keeps it equal to the fields).


@dataclass(frozen=True, slots=True)
class Forwarded:
    """The address of a client behind a forwarder (5.5)."""

    forwarder: Hashable
    node_id: bytes

    def __init__(self, forwarder: Hashable, node_id: bytes) -> None:
        object.__setattr__(self, "forwarder", forwarder)
        object.__setattr__(self, "node_id", node_id)


@dataclass(slots=True)
class MqttSnGatewayStats:
    """Counters for diagnosis (metrics come from packet records, not from here)."""

    datagrams_received: int = 0
    datagrams_sent: int = 0
    decode_errors: int = 0
    unexpected: int = 0
    internal_errors: int = 0
    refused: int = 0
    evicted: int = 0  # new clients ended to make room (max_new_clients)
    unknown_clients: int = 0
    long_topics: int = 0  # topic names beyond max_topic_name_bytes, refused
    invalid_topic_ids: int = 0
    retransmissions: int = 0
    dropped_buffer_full: int = 0
    dropped_qos_minus_one: int = 0
    dropped_rejected: int = 0
    messages_from_clients: int = 0
    messages_to_clients: int = 0


class BrokerLink:
    """One MQTT connection to the broker: the stream a driver carries, the MqttClient
    on it. Kept by the broker layer (gateway_broker.py)."""

    __slots__ = ("mqtt", "owner", "stream")

    def __init__(self, stream: int, mqtt: MqttClient, owner: ClientSession | None) -> None:
        self.stream = stream
        self.mqtt = mqtt
        self.owner = owner  # None: the gateway's own QoS -1 connection, or given up


class Delivery:
    """A message from the broker on its way to one client."""

    __slots__ = ("payload", "qos", "retain", "topic")

    def __init__(self, topic: str, payload: bytes, qos: int, retain: bool) -> None:
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain


class Outgoing:
    """A REGISTER, PUBLISH QoS 1/2 or PUBREL the gateway sent to a client, awaiting its reply."""

    __slots__ = ("delivery", "message", "retx")

    def __init__(self, message: Message, retx: Retransmission, delivery: Delivery | None) -> None:
        self.message = message
        self.retx = retx
        self.delivery = delivery  # what a PUBLISH carries, to send again after a sleep


class ClientTopics:
    """The normal topic ids of one client connection (6.5), kept by the topic layer."""

    __slots__ = ("known", "registry")

    def __init__(self, max_topics: int, max_bytes: int) -> None:
        self.registry = TopicRegistry(max_topics, max_bytes)
        self.known: set[int] = set()  # ids the client has acknowledged or chosen


class ToBroker:
    """A client's requests on their way to the broker, kept by the forwarding layer."""

    __slots__ = ("awaiting_pubrel", "pubs", "pubs_by_msg_id", "subs", "unsubs")

    def __init__(self) -> None:
        self.pubs: dict[int, tuple[int, int, int]] = {}  # MQTT pid -> (msg id, topic id, QoS)
        self.pubs_by_msg_id: dict[int, int] = {}  # MQTT-SN msg id -> MQTT pid, in flight
        self.awaiting_pubrel: set[int] = set()
        self.subs: dict[int, tuple[int, Subscribe, str]] = {}  # pid -> (msg id, SUBSCRIBE, filter)
        self.unsubs: dict[int, int] = {}  # pid -> msg id


class ToClient:
    """The broker's messages on their way to a client, kept by the delivery layer:
    those waiting, and the one sent and not yet answered."""

    __slots__ = ("next_msg_id", "out", "queue")

    def __init__(self) -> None:
        self.queue: deque[Delivery] = deque()
        self.out: Outgoing | None = None
        self.next_msg_id = 1

    def new_msg_id(self) -> int:
        msg_id = self.next_msg_id
        self.next_msg_id = msg_id % 0xFFFF + 1
        return msg_id


class ClientSession:
    """What the gateway keeps per MQTT-SN client: the session table's fields, and
    the parts the other layers keep (see the module's docstring)."""

    __slots__ = (
        "addr",
        "client_id",
        "clean_session",
        "keep_alive_s",
        "last_heard_s",
        "link",
        "scheduled",
        "since_s",
        "sleep_s",
        "state",
        "to_broker",
        "to_client",
        "topics",
        "will_changed",
        "will_msg",
        "will_qos",
        "will_retain",
        "will_topic",
    )

    def __init__(self, addr: Hashable, m: Connect, now: float, topics: ClientTopics) -> None:
        self.addr = addr
        self.client_id = m.client_id
        self.clean_session = m.clean_session
        self.keep_alive_s = m.duration_s
        self.state = WILL_TOPIC
        self.since_s = now
        self.last_heard_s = now
        self.sleep_s = 0
        self.link: BrokerLink | None = None
        self.will_topic: str | None = None
        self.will_msg = b""
        self.will_qos = 0
        self.will_retain = False
        self.will_changed = False
        self.scheduled: float | None = None  # deadline of this client's live timer entry
        self.topics = topics
        self.to_broker = ToBroker()
        self.to_client = ToClient()

    def enter(self, state: SessionState) -> None:
        """The one place a session's state changes, as _NEXT allows; another
        move is a bug of ours."""
        if state not in _NEXT[self.state]:
            raise RuntimeError(f"MQTT-SN session cannot go from {self.state} to {state}")
        self.state = state

    def will(self) -> Will | None:
        if self.will_topic is None:
            return None
        return Will(self.will_topic, self.will_msg, self.will_qos, self.will_retain)

    def link_detached(self, link: BrokerLink) -> None:
        """The broker layer is done with `link` (closed, failed, or ended by us)."""
        if self.link is link:
            self.link = None


def mqtt_text_ok(s: str) -> bool:
    """A string MQTT 3.1.1 can carry (1.5.3: no U+0000; lengths fit)."""
    return "\0" not in s and len(s.encode("utf-8")) <= 0xFFFF
