"""Events the MQTT-SN client and gateway emit (drain them with `events()`)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal

from .codec import TopicIdType

__all__ = [
    "Asleep",
    "ClientAsleep",
    "ClientAwake",
    "ClientConnected",
    "ClientDisconnected",
    "ClientEvent",
    "Connected",
    "ConnectionRefused",
    "Disconnected",
    "DisconnectReason",
    "GatewayEvent",
    "GatewayFound",
    "GatewayLost",
    "GatewaySearchFailed",
    "MessageReceived",
    "PingResponse",
    "Published",
    "Registered",
    "RequestFailed",
    "RequestKind",
    "Subscribed",
    "Unsubscribed",
    "WillUpdated",
]

# ---- client ---------------------------------------------------------------------------

#: Why the client's connection ended:
#: "disconnect": our DISCONNECT was answered (or, unanswered, given up on);
#: "refused": CONNACK with a rejection code (ConnectionRefused came first);
#: "gateway-lost": Nretry retransmissions went unanswered (6.13);
#: "gateway-disconnect": the gateway sent DISCONNECT on its own (6.12).
DisconnectReason = Literal["disconnect", "refused", "gateway-lost", "gateway-disconnect"]

#: The application calls whose outcome RequestFailed reports.
RequestKind = Literal[
    "register", "publish", "subscribe", "unsubscribe", "will-topic", "will-message"
]


@dataclass(frozen=True, slots=True)
class GatewayFound:
    """A gateway became known, from an ADVERTISE or a GWINFO (6.1)."""

    gw_id: int
    addr: Hashable


@dataclass(frozen=True, slots=True)
class GatewayLost:
    """A gateway known from ADVERTISE missed Nadv of them (6.1)."""

    gw_id: int
    addr: Hashable


@dataclass(frozen=True, slots=True)
class GatewaySearchFailed:
    """search_gateway(): no GWINFO or ADVERTISE after every SEARCHGW."""


@dataclass(frozen=True, slots=True)
class Connected:
    """CONNACK accepted the connection (or the return to the active state, 6.14)."""

    gateway: Hashable


@dataclass(frozen=True, slots=True)
class ConnectionRefused:
    """CONNACK with a rejection code (5.3.10); Disconnected("refused") follows."""

    return_code: int


@dataclass(frozen=True, slots=True)
class Disconnected:
    """The connection ended; pending requests failed first (RequestFailed)."""

    reason: DisconnectReason


@dataclass(frozen=True, slots=True)
class Asleep:
    """The gateway acknowledged our DISCONNECT with a duration, or a wake-up
    PINGREQ ended with PINGRESP: the client sleeps (6.14)."""

    duration_s: int


@dataclass(frozen=True, slots=True)
class Registered:
    """REGACK accepted: publish to `topic_id` from now on (6.5)."""

    msg_id: int
    topic: str
    topic_id: int


@dataclass(frozen=True, slots=True)
class Published:
    """A message left our hands for good: QoS -1/0 sent (msg_id None), QoS 1 PUBACK,
    QoS 2 PUBCOMP received. transmissions counts the PUBLISH sends."""

    msg_id: int | None
    transmissions: int = 1


@dataclass(frozen=True, slots=True)
class Subscribed:
    """SUBACK accepted; topic_id is the id the gateway will publish a topic name
    with (0x0000 for wildcard filters and short topic names, 5.4.16)."""

    msg_id: int
    topic_id: int
    qos: int


@dataclass(frozen=True, slots=True)
class Unsubscribed:
    """UNSUBACK."""

    msg_id: int


@dataclass(frozen=True, slots=True)
class WillUpdated:
    """WILLTOPICRESP or WILLMSGRESP accepted the update (6.4)."""

    what: Literal["topic", "message"]


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """A request did not succeed. reason "rejected": the gateway answered with
    return_code (5.3.10; for "congestion" wait Twait before retrying, 6.5);
    "disconnected": the connection ended before the answer; "gateway-lost":
    Nretry retransmissions went unanswered (Disconnected follows); "timeout":
    they went unanswered and the client gives up this request alone
    (MqttSnClientParams.give_up = "request")."""

    kind: RequestKind
    msg_id: int | None
    reason: Literal["rejected", "disconnected", "gateway-lost", "timeout"]
    return_code: int | None = None


@dataclass(frozen=True, slots=True)
class MessageReceived:
    """A PUBLISH from the gateway. topic is the name the id stands for (registered,
    predefined or short), None if this client does not know it."""

    topic: str | None
    topic_id: int
    topic_id_type: TopicIdType
    payload: bytes
    qos: int
    retain: bool
    dup: bool


@dataclass(frozen=True, slots=True)
class PingResponse:
    """PINGRESP to a keep-alive or ping() PINGREQ, rtt_s after its first transmission."""

    rtt_s: float


ClientEvent = (
    GatewayFound
    | GatewayLost
    | GatewaySearchFailed
    | Connected
    | ConnectionRefused
    | Disconnected
    | Asleep
    | Registered
    | Published
    | Subscribed
    | Unsubscribed
    | WillUpdated
    | RequestFailed
    | MessageReceived
    | PingResponse
)

# ---- gateway (for diagnosis) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClientConnected:
    """The gateway sent CONNACK "accepted" to a client that was not active."""

    addr: Hashable
    client_id: str


@dataclass(frozen=True, slots=True)
class ClientAsleep:
    """A client went to sleep for duration_s (DISCONNECT with a duration, or PINGRESP
    after a wake-up)."""

    addr: Hashable
    client_id: str
    duration_s: int


@dataclass(frozen=True, slots=True)
class ClientAwake:
    """A sleeping client woke up with PINGREQ; its buffered messages follow."""

    addr: Hashable
    client_id: str
    buffered: int


@dataclass(frozen=True, slots=True)
class ClientDisconnected:
    """The gateway forgot a client. reason: "disconnect" (its DISCONNECT),
    "keep-alive-timeout" (active and silent), "sleep-timeout" (asleep and
    silent), "retries-exhausted" (no answer to Nretry re-sends), "connect-timeout",
    "refused" (CONNACK with a rejection), "broker-closed" (the MQTT connection
    ended), "broker-unreachable" (it could not be opened), "replaced" (a new
    CONNECT from the client, or one with its client id from elsewhere),
    "idle-timeout" (Duration 0 and silent for MqttSnGatewayParams.idle_timeout_s),
    "evicted" (a new client that had sent nothing since its CONNACK, ended for
    a newer one beyond MqttSnGatewayParams.max_new_clients)."""

    addr: Hashable
    client_id: str
    reason: str


GatewayEvent = ClientConnected | ClientAsleep | ClientAwake | ClientDisconnected
