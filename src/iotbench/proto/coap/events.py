"""Application events a CoapEndpoint emits (drain them with `events()`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .codec import Message

__all__ = [
    "CoapEvent",
    "FailureReason",
    "GroupRequestDone",
    "GroupResponse",
    "NotificationReceived",
    "RequestFailed",
    "ResponseReceived",
]

FailureReason = Literal["timeout", "reset", "max-retransmit", "unreachable"]


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    """The response to request `request_id`.

    rtt_s: first transmission of the request to arrival of the response
    (includes server processing and, for a separate response, the wait after
    the empty ACK). transmissions: how often the request was sent (1 = no
    retransmission). For an observe registration, later notifications arrive
    as NotificationReceived with the same request_id.
    """

    request_id: int
    response: Message
    rtt_s: float
    transmissions: int


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """Request `request_id` ended without a response.

    reason: "max-retransmit" (CON never acknowledged after MAX_RETRANSMIT
    retransmissions), "reset" (the peer answered with RST), "timeout" (a NON
    request got no response within the NON timeout, or a separate response
    never followed the empty ACK), "unreachable" (the driver heard an ICMP
    error for the peer, CoapEndpoint.peer_unreachable); for a body fetched in
    blocks, one of those followed by " (block N)" when a later block's
    request failed, or "blockwise: ..." when the transfer itself went wrong
    (RFC 7959).
    """

    request_id: int
    reason: FailureReason | str


@dataclass(frozen=True, slots=True)
class NotificationReceived:
    """A fresh notification (RFC 7641 3.4) of the observation started by `request_id`.

    sequence: the Observe value, or None on a final notification. final: the
    server ended the observation (an error code or no Observe option, RFC 7641
    3.2); no more notifications follow for this request_id.
    """

    request_id: int
    message: Message
    sequence: int | None
    final: bool = False


@dataclass(frozen=True, slots=True)
class GroupResponse:
    """A member's response to the group (multicast) request `request_id`.

    source: the member's address. Any number may arrive until the
    request's wait is over (GroupRequestDone), a member's second response
    too (only a message the network repeated is dropped, by Message ID).
    """

    request_id: int
    response: Message
    source: object


@dataclass(frozen=True, slots=True)
class GroupRequestDone:
    """The wait for responses to group request `request_id` is over: `responses`
    GroupResponse events were reported, from `members` distinct sources."""

    request_id: int
    responses: int
    members: int


CoapEvent = (
    ResponseReceived | RequestFailed | NotificationReceived | GroupResponse | GroupRequestDone
)
