"""RFC 7641 Observe: sequence-number freshness and per-observation state."""

from __future__ import annotations

from collections.abc import Hashable, MutableMapping
from typing import Final, Protocol

from .codec import Message
from .options import Opt

__all__ = [
    "FRESHNESS_TIMEOUT_S",
    "OBSERVE_DEREGISTER",
    "OBSERVE_REGISTER",
    "ClientObservation",
    "Observer",
    "is_fresh",
    "observe_value",
]

OBSERVE_REGISTER: Final = 0
OBSERVE_DEREGISTER: Final = 1
#: RFC 7641 3.4: after this long, a notification is fresh whatever its number.
FRESHNESS_TIMEOUT_S = 128.0
_HALF = 1 << 23


def is_fresh(v1: int, t1: float, v2: int, t2: float) -> bool:
    """RFC 7641 3.4: is notification (v2, arriving at t2) newer than (v1, t1)?

    Observe values are 24-bit serial numbers: V2 is newer if it is ahead of
    V1 by less than half the number space, counting across the wrap; and
    after 128 s any value is accepted, since the numbers may have wrapped
    meanwhile (or the server restarted).
    """
    return (
        (v1 < v2 and v2 - v1 < _HALF)
        or (v1 > v2 and v1 - v2 > _HALF)
        or t2 > t1 + FRESHNESS_TIMEOUT_S
    )


def observe_value(msg: Message) -> int | None:
    """The Observe value, or None when absent or longer than its 3 allowed bytes.

    RFC 7252 5.4.3: an option value of the wrong length is treated like an
    unrecognized option, and Observe is elective, so a bad one is ignored.
    """
    for number, value in msg.options:
        if number == Opt.OBSERVE:
            if len(value) > 3:
                return None
            return int.from_bytes(value, "big")
    return None


class ClientObservation:
    """What a client remembers about one observation (RFC 7641 3.4)."""

    __slots__ = ("last_seq", "last_time_s", "notifications")

    def __init__(self, seq: int, now: float) -> None:
        self.last_seq = seq
        self.last_time_s = now
        self.notifications = 0

    def accept(self, seq: int, now: float) -> bool:
        """True (and remember it) when notification `seq` is fresher than the last one."""
        if not is_fresh(self.last_seq, self.last_time_s, seq, now):
            return False
        self.last_seq = seq
        self.last_time_s = now
        self.notifications += 1
        return True


class ObservedResource(Protocol):
    """What an observation needs of its resource (resources.py's `Resource`): the
    list of observers it is an entry of."""

    @property
    def observers(self) -> MutableMapping[tuple[Hashable, bytes], Observer]: ...


class Observer:
    """One entry in a resource's list of observers (RFC 7641 4.1).

    request: the registration GET, replayed into the handler for each
    notification so the representation honours its options (Accept, query).
    inflight: the CON notification still awaiting its ACK, if any; pending:
    a newer notification waiting to replace it (RFC 7641 4.5.2: a server does
    not send notifications in parallel to one client; the newest state is sent
    in place of the next retransmission, keeping the retransmission counter
    and timeout).
    """

    __slots__ = (
        "addr",
        "inflight",
        "last_con_s",
        "non_since_con",
        "pending",
        "request",
        "resource",
        "token",
    )

    def __init__(
        self, addr: Hashable, token: bytes, resource: ObservedResource, request: Message, now: float
    ) -> None:
        self.addr = addr
        self.token = token
        self.resource = resource
        self.request = request
        self.inflight: object | None = None
        self.pending: Message | None = None
        # When a CON last went to it (the registration counts: it was answered),
        # and how many NON notifications since (RFC 7641 4.5).
        self.last_con_s = now
        self.non_since_con = 0

    @property
    def key(self) -> tuple[Hashable, bytes]:
        return (self.addr, self.token)
