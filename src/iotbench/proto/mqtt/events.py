"""Events the MQTT client and broker emit (drain them with `events()`)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BrokerEvent",
    "ClientConnected",
    "ClientDisconnected",
    "ClientEvent",
    "CloseReason",
    "Connected",
    "ConnectionClosed",
    "ConnectionRefused",
    "MessageReceived",
    "PingResponse",
    "ProtocolError",
    "PublishFailed",
    "Published",
    "Subscribed",
    "Unsubscribed",
]

#: Why a connection ended:
#: "disconnect": DISCONNECT was sent (client) or received (broker);
#: "connection-lost": the transport reported the connection gone;
#: "refused": CONNACK with a non-zero return code;
#: "protocol-error": a malformed packet or a protocol violation;
#: "keep-alive-timeout": no PINGRESP in time (client), or 1.5 x keep-alive of
#: silence (broker); "connack-timeout" / "connect-timeout": no CONNACK
#: (client) / no CONNECT (broker) in time; "takeover": another connection
#: connected with the same client id (broker).
CloseReason = Literal[
    "disconnect",
    "connection-lost",
    "refused",
    "protocol-error",
    "keep-alive-timeout",
    "connack-timeout",
    "connect-timeout",
    "takeover",
]

# ---- client -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Connected:
    """CONNACK accepted the connection (return_code is 0)."""

    session_present: bool
    return_code: int = 0


@dataclass(frozen=True, slots=True)
class ConnectionRefused:
    """CONNACK refused the connection (3.2.2.3); ConnectionClosed("refused") follows."""

    return_code: int


@dataclass(frozen=True, slots=True)
class Published:
    """A message left our hands for good.

    QoS 0: handed to the transport (packet_id None). QoS 1: PUBACK received.
    QoS 2: PUBCOMP received. transmissions counts the PUBLISH sends (1 = never
    re-sent), across connections.
    """

    packet_id: int | None
    transmissions: int = 1


@dataclass(frozen=True, slots=True)
class PublishFailed:
    """A QoS 1/2 message was dropped unacknowledged.

    reason "session-discarded": connect() with clean_session threw away the
    session it was in flight in (3.1.2.4: the client discards its state too).
    """

    packet_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class MessageReceived:
    """An application message from the broker (a QoS 2 message is reported once)."""

    topic: str
    payload: bytes
    qos: int
    retain: bool
    dup: bool


@dataclass(frozen=True, slots=True)
class Subscribed:
    """SUBACK: the granted QoS per filter, 0x80 for a refused one."""

    packet_id: int
    granted: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Unsubscribed:
    """UNSUBACK."""

    packet_id: int


@dataclass(frozen=True, slots=True)
class PingResponse:
    """PINGRESP, rtt_s after our PINGREQ."""

    rtt_s: float


@dataclass(frozen=True, slots=True)
class ProtocolError:
    """The broker sent a malformed packet or broke the protocol; the client closes."""

    message: str


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """The connection ended (once per connection); the client can connect() again."""

    reason: CloseReason


ClientEvent = (
    Connected
    | ConnectionRefused
    | Published
    | PublishFailed
    | MessageReceived
    | Subscribed
    | Unsubscribed
    | PingResponse
    | ProtocolError
    | ConnectionClosed
)

# ---- broker (for diagnosis) -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClientConnected:
    """A CONNECT was accepted on connection `conn`."""

    conn: Hashable
    client_id: str
    session_present: bool


@dataclass(frozen=True, slots=True)
class ClientDisconnected:
    """Connection `conn` ended; client_id is None if it never connected.

    detail names the malformed packet or violation for "protocol-error".
    """

    conn: Hashable
    client_id: str | None
    reason: CloseReason
    detail: str = ""


BrokerEvent = ClientConnected | ClientDisconnected
