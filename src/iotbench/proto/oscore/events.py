"""What the OSCORE layer reports besides the datagrams it passes on."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

#: Why a message was refused or dropped, as OscoreFailure.reason:
REASONS = (
    "decode",  # the OSCORE option or the decrypted message is malformed (8.2 step 2)
    "unknown-context",  # no Recipient Context for the kid (and kid context)
    "replay",  # a request's Partial IV was seen, or a notification is not newer (7.4)
    "decrypt",  # the AEAD did not verify
    "not-protected",  # a request without OSCORE where OSCORE is required
    "unprotected-response",  # a response without OSCORE to a protected request
    "unexpected",  # a protected response to no request of ours
    "no-binding",  # a response of our endpoint to no protected request (not sent)
    "exhausted",  # the Sender Sequence Number ran out (7.2.1)
    "unsupported",  # Proxy-Uri, nested OSCORE, Observe where none was asked for
    "echo-challenge",  # server: a request refused until it shows the Echo (B.1.2)
    "echo-repeat",  # client: a request repeated with the server's Echo (B.1.2)
)


@dataclass(frozen=True, slots=True)
class OscoreFailure:
    """A datagram from or to `addr` that OSCORE refused; `reason` is one of REASONS."""

    addr: Hashable
    reason: str
    detail: str


@dataclass
class OscoreStats:
    """Counters of the layer's work, for metrics and tests."""

    protected: int = 0  # messages sent protected
    opened: int = 0  # protected messages verified and passed to the endpoint
    plain: int = 0  # messages passed either way without protection (peers without OSCORE)
    duplicates: int = 0  # retransmissions answered from the caches
    failures: int = 0  # OscoreFailure events
    replies: int = 0  # the layer's own replies (OSCORE errors, Echo challenges)
    echo_challenges: int = 0
    echo_repeats: int = 0
