"""What a TcpConnection tells its application (drain them with `events()`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CloseReason = Literal["closed", "reset", "refused", "timeout", "aborted"]


@dataclass(frozen=True, slots=True)
class Connected:
    """The connection can carry data (a client's handshake completed; a server
    accepted it, before the handshake's last ACK when Fast Open data came in
    the SYN)."""


@dataclass(frozen=True, slots=True)
class DataReceived:
    """In-order bytes from the peer."""

    data: bytes


@dataclass(frozen=True, slots=True)
class PeerClosed:
    """The peer sent FIN: no more data will arrive (end of stream)."""


@dataclass(frozen=True, slots=True)
class Closed:
    """The connection is over for the application.

    closed: both sides finished normally; reset: the peer sent RST; refused:
    RST in answer to our SYN; timeout: retransmissions (or SYN retries) ran
    out; aborted: this side aborted with RST.
    """

    reason: CloseReason


@dataclass(frozen=True, slots=True)
class FastOpenCookie:
    """A server granted a TCP Fast Open cookie (RFC 7413); `mss` is its MSS,
    cached with the cookie to size the data of a later SYN."""

    cookie: bytes
    mss: int


TcpEvent = Connected | DataReceived | PeerClosed | Closed | FastOpenCookie
