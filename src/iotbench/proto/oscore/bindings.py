"""What each end keeps per token between a request and its responses (RFC 8613 8).

"Both endpoints MUST keep the association (Token, {Security Context, Partial
IV of the request})" (8): the server to protect its responses, the client to
verify them. The association may be forgotten after the response, except
while an observation lasts.
"""

from __future__ import annotations

from dataclasses import dataclass

from .context import SecurityContext
from .message import RequestId


@dataclass(slots=True)
class ServerBinding:
    """A verified request whose responses are still to be protected."""

    ctx: SecurityContext
    request: RequestId
    #: The request's nonce protects at most one response (5.2, D.4); every
    #: later one (a notification, a second answer) takes its own Partial IV.
    nonce_used: bool = False


@dataclass(slots=True)
class ClientBinding:
    """A protected request whose responses are still to be verified."""

    ctx: SecurityContext
    request: RequestId
    observe: bool  # an Observe registration (Observe 0)
    #: The request as the endpoint sent it, kept until its first response for
    #: the Echo repeat (B.1.2); None once that cannot happen any more.
    plain: bytes | None
    #: 7.4.1: the largest Partial IV of the notifications verified so far.
    notification_number: int | None = None
    #: 7.4.1: at most one notification without a Partial IV, the oldest.
    unnumbered_seen: bool = False
