"""The state a CoAP endpoint keeps per exchange, and what its layers share:
the option sets, timer kinds, request states and small message helpers of
endpoint.py, messaging.py, client.py and server.py.

The objects here pass between the layers (docs/coap.md, "Layers"): an
`Outgoing` is a message the message layer tracks by Message ID for whoever
sent it (a `ClientRequest`, a server's `ServerReply`, an observer); a
dedup entry (`Seen`) is what the message layer remembers of a message
received, and the reply the layer above sent to it."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Final

from iotbench.proto.octets import ONE_BYTE
from iotbench.proto.retransmit import Retransmission

from .codec import (
    MAX_OPTION_NUMBER,
    BlockOption,
    Code,
    Message,
    invalid_options,
)
from .observe import (
    OBSERVE_REGISTER,
    ClientObservation,
    observe_value,
)
from .options import Opt

#: Critical options a request may carry without 4.02 Bad Option. Uri-Host and
#: Uri-Port are accepted and ignored (one host per endpoint); Proxy-Uri and
#: Proxy-Scheme are recognized so that they get 5.05 (RFC 7252 5.10.2).
SERVER_CRITICAL_OPTIONS: Final = frozenset(
    {
        Opt.URI_HOST,
        Opt.URI_PORT,
        Opt.URI_PATH,
        Opt.URI_QUERY,
        Opt.ACCEPT,
        Opt.PROXY_URI,
        Opt.PROXY_SCHEME,
        Opt.BLOCK1,
        Opt.BLOCK2,
    }
)
#: Critical options a response may carry: the block options (RFC 7959); every
#: other registered response option (Content-Format, ETag, Max-Age,
#: Location-*, Observe, Size2) is elective.
CLIENT_CRITICAL_OPTIONS: Final[frozenset[int]] = frozenset({Opt.BLOCK1, Opt.BLOCK2})

#: What deduplication keeps of a message received (RFC 7252 4.5): [its expiry
#: time, the reply sent to it (bytes) or None]. A list, not an object: one is
#: made for every CON and NON received.
Seen = list[Any]

# Timer kinds (proto/timers.py's entries).
T_RETRANSMIT: Final = 0
T_NON_TIMEOUT: Final = 1
T_SEPARATE_WAIT: Final = 2
T_REPLY: Final = 3
T_EMPTY_ACK: Final = 4
T_GROUP_DONE: Final = 5

# Client request states.
QUEUED: Final = 0
SENT: Final = 1  # awaiting ACK and/or response; counts against NSTART
WAITING: Final = 2  # empty ACK received, awaiting the separate response
OBSERVING: Final = 3  # registration answered; notifications follow
DONE: Final = 4
BLOCKS: Final = 5  # its first Block2 block came; a child request fetches the rest (RFC 7959)

#: Requests whose responses a client fetches block by block (RFC 7959 2.4).
BLOCK2_METHODS: Final = (Code.GET, Code.FETCH)
# What a server cuts into Block2 blocks: GET and FETCH responses, and a POST's or
# PUT's (RFC 7959 2.5 and 3.2: the client asks for the later blocks by sending
# the request again with Block2 and no payload).
BLOCK2_SERVED: Final = (Code.GET, Code.FETCH, Code.POST, Code.PUT)


def empty_message(type_bits: int, mid: int) -> bytes:
    """Wire bytes of an Empty message: version 1, no token, code 0.00."""
    return ONE_BYTE[0x40 | (type_bits << 4)] + b"\x00" + ONE_BYTE[mid >> 8] + ONE_BYTE[mid & 0xFF]


def asks_later_block_of_an_update(msg: Message) -> bool:
    if msg.code != Code.POST and msg.code != Code.PUT:
        return False  # the method first: it needs no look through the options
    block = msg.block2
    return block is not None and block.num > 0


def is_success(code: int) -> bool:
    return code >> 5 == 2


def has_bad_critical(options: list[tuple[int, bytes]], known: frozenset[int]) -> bool:
    """Unrecognized critical options, or invalid ones (RFC 7252 5.4.1, 5.4.3, 5.4.5).

    One pass over the critical options only: an invalid elective option is
    ignored (5.4.3), so `invalid_options` is asked about critical ones alone."""
    critical = [option for option in options if option[0] & 1]
    if not critical:
        return False
    for number, _ in critical:
        if number not in known:
            return True
    return bool(invalid_options(critical))


# RFC 7967 2.1: the No-Response bits that suppress response classes 2.xx, 4.xx, 5.xx.
NO_RESPONSE_BITS: Final = {2: 0x02, 4: 0x08, 5: 0x10}
NO_RESPONSE_ALL: Final = 0x1A


def suppressed(request: Message, code: int) -> bool:
    """Whether the request's No-Response option asks not to get a response of `code`."""
    value = request.get_uint(Opt.NO_RESPONSE)
    if not value:
        return False
    return bool(value & NO_RESPONSE_BITS.get(code >> 5, 0))


def all_suppressed(request: Message) -> bool:
    value = request.get_uint(Opt.NO_RESPONSE)
    return value is not None and value & NO_RESPONSE_ALL == NO_RESPONSE_ALL


@dataclass(slots=True)
class CoapStats:
    """Counters for diagnosis (metrics come from packet records, not from here)."""

    messages_sent: int = 0
    messages_received: int = 0
    decode_errors: int = 0
    too_many_options: int = 0  # of decode_errors: past CoapParams.max_options
    format_errors: int = 0
    duplicates: int = 0
    retransmissions: int = 0
    resets_sent: int = 0
    resets_received: int = 0
    unexpected: int = 0
    bad_options: int = 0
    handler_errors: int = 0
    responses_suppressed: int = 0  # RFC 7967 No-Response
    internal_errors: int = 0
    stale_notifications: int = 0
    requests_sent: int = 0
    requests_failed: int = 0
    observers_refused: int = 0  # registrations past a bound (CoapParams.max_observ*)
    observers_unreachable: int = 0  # removed on an ICMP error for their address
    multicast_con_ignored: int = 0  # CON requests that came by multicast (RFC 7252 8.1)


class Outgoing:
    """A message we sent that an ACK or RST may refer to, by (peer, Message ID).

    owner: what it was sent for, which also says which layer hears of its
    ACK, RST or failure: a ClientRequest (the client layer), an Observer (a
    notification: the server layer) or a ServerReply (a separate response,
    which nobody needs to hear of)."""

    __slots__ = ("addr", "data", "mid", "owner", "retx", "timer")

    def __init__(self, addr: Hashable, mid: int, data: bytes, owner: object) -> None:
        self.addr = addr
        self.mid = mid
        self.data = data
        self.owner = owner
        self.retx: Retransmission | None = None
        self.timer: list | None = None


class ClientRequest:
    """Client-side state of one request (and of the observation it may start)."""

    __slots__ = (
        "addr",
        "body",
        "child",
        "counted",
        "dereg",
        "first",
        "first_sent_s",
        "fixed_token",
        "group_responses",
        "group_wait",
        "id",
        "message",
        "notification",
        "observation",
        "out",
        "parent",
        "started_s",
        "state",
        "timer",
        "token",
        "transmissions",
        "upload",
    )

    def __init__(self, rid: int, addr: Hashable, message: Message, fixed_token: bytes | None):
        self.id = rid
        self.addr = addr
        self.message = message
        self.fixed_token = fixed_token
        self.token = b""
        self.state = QUEUED
        self.counted = False
        self.out: Outgoing | None = None
        self.first_sent_s = 0.0
        self.started_s: float | None = None  # its first block's first transmission
        self.transmissions = 0  # of the blocks before the current one
        self.timer: list | None = None
        self.observation: ClientObservation | None = None
        self.dereg = False
        # RFC 7959: the whole request body sent in Block1 blocks; for a child
        # request that fetches Block2 blocks, its parent, the first block's
        # response, the body so far and the notification's sequence number.
        self.upload: bytes | None = None
        self.parent: ClientRequest | None = None
        self.child: ClientRequest | None = None
        self.first: Message | None = None
        self.body: bytearray | None = None
        self.notification: int | None = None
        # A group (multicast) request: how long it collects responses, and how
        # many came from each source.
        self.group_wait: float | None = None
        self.group_responses: dict[Hashable, int] | None = None

    @property
    def observe(self) -> bool:
        return observe_value(self.message) == OBSERVE_REGISTER


class ServerReply:
    """A server response that leaves later than the request arrived.

    ack_timer: the pending empty ACK (RFC 7252 5.2.2), disarmed when the
    response goes first and rides on the ACK instead."""

    __slots__ = ("ack_timer", "acked", "addr", "multicast", "request", "response", "seen")

    def __init__(
        self,
        addr: Hashable,
        request: Message,
        response: Message | None,
        seen: Seen,
        multicast: bool = False,
    ) -> None:
        self.addr = addr
        self.request = request
        self.response = response
        self.seen = seen
        self.acked = False
        self.multicast = multicast
        self.ack_timer: list | None = None


class DeferredState:
    """What the server layer keeps for a Deferred until respond()."""

    __slots__ = ("block1", "reply", "server")

    def __init__(self, server: object, reply: ServerReply, block1: BlockOption | None) -> None:
        self.server = server  # the server layer that took it: only it may answer
        self.reply = reply
        self.block1 = block1


def useless_to_group(request: Message, resp: Message) -> bool:
    """RFC 7252 8.2, RFC 7390 2.7: a multicast request is not answered by default
    when there is nothing useful to say: an error (4.xx, 5.xx) or an empty
    payload (which includes RFC 6690 4.1's /.well-known/core filter that
    matched nothing), except 2.03 Valid, whose news is its code. A request
    with No-Response has said what it wants instead (RFC 7967: 0 asks for
    every response), and suppressed() then decides."""
    if request.has_option(Opt.NO_RESPONSE):
        return False
    code = resp.code
    return code >> 5 in (4, 5) or (not resp.payload and code != Code.VALID)


def check_encodable(msg: Message) -> None:
    """Raise ValueError now for what encode() would refuse later (option numbers, lengths)."""
    for number, value in msg.options:
        if not 0 <= number <= MAX_OPTION_NUMBER:
            raise ValueError(f"option number must be 0..{MAX_OPTION_NUMBER}, got {number}")
        if len(value) > 65535 + 269:
            raise ValueError(f"option {number} value of {len(value)} bytes is too long")
    if not 0 <= msg.code <= 0xFF:
        raise ValueError(f"code must be one byte, got {msg.code}")
