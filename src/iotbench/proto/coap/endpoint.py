"""A sans-I/O CoAP endpoint: client and server in one object.

Implements the RFC 7252 messaging layer (section 4: CON retransmission,
deduplication, ACK/RST matching, NSTART), the request/response layer
(section 5: piggybacked and separate responses, token matching, critical
options), RFC 7641 Observe and RFC 7959 block-wise transfers on both sides,
RFC 6690 /.well-known/core, RFC 7967 No-Response, and the CoCoA adaptive RTO
(draft-ietf-core-cocoa) as an alternative to the fixed RFC 7252 timeout.

Driving it (the simulator and the real-socket driver do exactly this):

    ep = CoapEndpoint(random.Random(seed))
    ep.receive(now, datagram, addr)          # every datagram from the socket
    ep.handle_timer(now)                     # when now >= ep.next_timer()
    rid = ep.request(now, addr, Code.GET, "/temp")
    for data, addr in ep.datagrams_to_send(): ...
    for event in ep.events(): ...            # ResponseReceived, RequestFailed, ...

`addr` is any hashable; the endpoint never looks inside it. Nothing here reads
a clock, opens a socket or touches global random state.

Choices the RFCs leave open, and what this endpoint does:

- Message IDs start at a value drawn from the rng and increase by one per
  message, shared by all destinations. Tokens are drawn from the rng when a
  request is first transmitted (CoapParams.token_length bytes, default 4),
  redrawn if already in use towards that peer. With 0-byte tokens only one
  request (or observation) per peer can be in flight; others wait in the
  NSTART queue.
- NSTART counts client requests only (RFC 7252 4.7 "outstanding
  interactions"): a CON request until its ACK or response, a NON request until
  its response or the NON timeout. Requests beyond it are queued per peer in
  FIFO order and sent when one completes. Separate responses and
  notifications are not counted; notifications follow RFC 7641 4.5.2 instead
  (at most one CON notification in flight per observer).
- NON timeout: CoapParams.non_timeout_s if set; otherwise the worst-case
  time a CON request would wait before giving up with the same retransmission
  schedule: MAX_TRANSMIT_WAIT (93 s) with rto="rfc7252", and with
  rto="cocoa" ACK_RANDOM_FACTOR * sum(min(RTO * f**n, 32 s), n = 0..MAX_RETRANSMIT)
  for the destination's current RTO and CoCoA backoff factor f. With no
  measurement yet (RTO 2 s, f = 2) that is again 93 s, so the adaptive client
  starts exactly like the RFC one and then tracks the measured RTT. RTT samples
  of NON request/response pairs feed the strong estimator (they are never
  ambiguous).
- CoCoA RTT samples come from every CON this endpoint sends (requests,
  separate responses, CON notifications) when its ACK (or the response)
  arrives: strong without retransmission, weak with one or two, none after.
- Separate responses: a handler may report a processing time
  (ResourceResponse.delay_s). With CoapParams.separate_response_after_s set
  and a slower handler, the server sends an empty ACK after
  separate_response_after_s and the response as a separate CON when it is
  ready; otherwise the response is piggybacked when ready. A client waits
  CoapParams.separate_response_timeout_s (default EXCHANGE_LIFETIME) after the
  empty ACK before failing the request with "timeout".
- Deduplication (RFC 7252 4.5): every CON and NON received is remembered by
  (peer, Message ID) for EXCHANGE_LIFETIME / NON_LIFETIME together with the
  reply it got (ACK, piggybacked response or RST); a duplicate CON gets that
  reply again without re-running the handler, a duplicate NON is ignored.
- Rejection (RFC 7252 4.2, 4.3): an empty CON (ping), a CON with a reserved
  code class or that cannot be parsed past its header, a request with an
  unrecognized critical option sent as NON, and any response the client was
  not waiting for (CON or NON; this is also RFC 7641's reactive cancellation)
  are answered with RST. ACKs and RSTs are never answered. Unrecognized
  critical options in a CON request get 4.02 Bad Option (5.4.1); in a
  response they make it be rejected.
- Observe (RFC 7641): observers are keyed by (peer, token) per resource (4.1).
  Each registration response and each notify() takes a new sequence number
  per resource (24 bits, 4.4). A failed CON notification (MAX_RETRANSMIT
  timeouts) or an RST to any notification removes the observer (4.5, 3.6),
  and so does `peer_unreachable` (an ICMP error the driver heard, 4.5). A
  notification goes out as CON when the observer has had none for
  observe_con_interval_s (24 h, 4.5) or observe_con_every NONs. The list of
  observers is bounded per resource and per peer (CoapParams); a
  registration past a bound is answered without Observe (4.1).
  On the client, notifications are checked with the 3.4 freshness rule;
  stale ones are acknowledged but not reported.
- Block-wise (RFC 7959, CoapParams.block_size_bytes): a client fetches the
  blocks of a GET or FETCH response one by one with the same token and
  reports the body whole; the blocks of an observed response or notification
  (2.6) come by a child request (plain GETs, new token) while the
  observation keeps its token. A client uploads a larger payload in Block1
  blocks and follows a server's smaller size from its 2.31 on. A server
  cuts Block2 blocks from the representation it kept at block 0 (per peer
  and URI, so a changing resource never mixes states within one transfer),
  assembles Block1 uploads per peer, method and URI, and keeps at most 64 of
  each for EXCHANGE_LIFETIME. A POST's or PUT's large response goes in Block2
  blocks too; the client asks for the later ones by sending the request
  again with Block2 (RFC 7959 3.2), answered from the kept response, never
  by running the request again (4.08 when nothing is kept). Error responses
  go whole. Not implemented: Q-Block (RFC 9177), BERT.
- Deferred answers: a handler that returns a Deferred answers later with
  respond(). A CON request gets its empty ACK at once, or after
  separate_response_after_s when that is set (so that an answer ready by
  then rides on the ACK; the same timer as for a slow handler's delay_s),
  and a later answer goes as a separate CON; a duplicate of the request is
  answered with what was sent for it (the empty ACK, or nothing yet), never
  handed to the handler again. The answer may carry delay_s like any
  handler's, is cut into Block2 blocks when large, and registers no
  observer.
- Group communication (RFC 7252 8, RFC 7390 2.7-2.8): receive(...,
  multicast=True) marks a datagram sent to a group address. A CON request
  by multicast is ignored (8.1 makes multicast requests NON) and nothing
  sent to a group is ever answered with RST or ACK. The response is a
  unicast NON sent after a leisure drawn uniformly from [0,
  default_leisure_s] (8.2) from the endpoint's rng, after the handler's
  delay_s or respond(). Responses with nothing useful to say, errors (4.xx,
  5.xx) and empty payloads other than 2.03, are not sent (8.2, RFC 7390
  2.7) unless the request carries No-Response, which then decides (RFC
  7967: 0 asks for everything). A multicast request is not assembled from
  Block1 blocks and registers no observer. request(..., multicast=True)
  sends one NON to a group, never retransmitted, and reports every
  response (GroupResponse, matched by token alone, from any source) until
  `wait_s` has passed (default: default_leisure_s + ack_timeout_s), then
  GroupRequestDone with the counts. Its token is unique among all open
  requests; the group request counts against NSTART towards the group
  address until then (the group is the "given server" of 4.7).
"""

from __future__ import annotations

import dataclasses
import heapq
import random
from collections import deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from iotbench.proto.retransmit import BackoffSchedule, CocoaEstimator, Retransmission

from .blockwise import MAX_SZX, Representations, Uploads, block_of, szx_of, uri_key
from .codec import (
    MAX_OPTION_NUMBER,
    MAX_TOKEN_LENGTH,
    BlockOption,
    CoapDecodeError,
    Code,
    Message,
    Type,
    code_name,
    decode,
    encode,
    encode_uint,
    invalid_options,
    is_request,
    is_response,
)
from .events import (
    CoapEvent,
    GroupRequestDone,
    GroupResponse,
    NotificationReceived,
    RequestFailed,
    ResponseReceived,
)
from .observe import (
    OBSERVE_DEREGISTER,
    OBSERVE_REGISTER,
    ClientObservation,
    Observer,
    observe_value,
)
from .options import Opt
from .params import CoapParams
from .resources import (
    CT_LINK_FORMAT,
    WELL_KNOWN_CORE,
    Deferred,
    Handler,
    Resource,
    ResourceResponse,
    link_format,
    normalize_path,
    to_response,
)

# Events and ResourceResponse are re-exported so that drivers need one import.
__all__ = [
    "SERVER_CRITICAL_OPTIONS",
    "CoapEndpoint",
    "CoapStats",
    "Deferred",
    "GroupRequestDone",
    "GroupResponse",
    "NotificationReceived",
    "RequestFailed",
    "ResourceResponse",
    "ResponseReceived",
]

#: Critical options a request may carry without 4.02 Bad Option. Uri-Host and
#: Uri-Port are accepted and ignored (one host per endpoint); Proxy-Uri and
#: Proxy-Scheme are recognized so that they get 5.05 (RFC 7252 5.10.2).
SERVER_CRITICAL_OPTIONS = frozenset(
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
CLIENT_CRITICAL_OPTIONS: frozenset[int] = frozenset({Opt.BLOCK1, Opt.BLOCK2})

# What an outgoing message tracked by Message ID belongs to.
_REQUEST = 0
_SEPARATE = 1
_NOTIFY = 2

# Timer kinds; a cancelled timer entry gets kind _CANCELLED.
_CANCELLED = -1
_T_RETRANSMIT = 0
_T_NON_TIMEOUT = 1
_T_SEPARATE_WAIT = 2
_T_REPLY = 3
_T_EMPTY_ACK = 4
_T_GROUP_DONE = 5

# Client request states.
_QUEUED = 0
_SENT = 1  # awaiting ACK and/or response; counts against NSTART
_WAITING = 2  # empty ACK received, awaiting the separate response
_OBSERVING = 3  # registration answered; notifications follow
_DONE = 4
_BLOCKS = 5  # its first Block2 block came; a child request fetches the rest (RFC 7959)

#: Requests whose responses a client fetches block by block (RFC 7959 2.4).
_BLOCK2_METHODS = (Code.GET, Code.FETCH)
# What a server cuts into Block2 blocks: GET and FETCH responses, and a POST's or
# PUT's (RFC 7959 2.5 and 3.2: the client asks for the later blocks by sending
# the request again with Block2 and no payload).
_BLOCK2_SERVED = (Code.GET, Code.FETCH, Code.POST, Code.PUT)


def _empty(type_bits: int, mid: int) -> bytes:
    """Wire bytes of an Empty message: version 1, no token, code 0.00."""
    return bytes((0x40 | (type_bits << 4), 0, mid >> 8, mid & 0xFF))


def _asks_later_block_of_an_update(msg: Message) -> bool:
    block = msg.block2
    return block is not None and block.num > 0 and msg.code in (Code.POST, Code.PUT)


def _is_success(code: int) -> bool:
    return code >> 5 == 2


# RFC 7967 2.1: the No-Response bits that suppress response classes 2.xx, 4.xx, 5.xx.
NO_RESPONSE_BITS = {2: 0x02, 4: 0x08, 5: 0x10}
NO_RESPONSE_ALL = 0x1A


def suppressed(request: Message, code: int) -> bool:
    """Whether the request's No-Response option asks not to get a response of `code`."""
    value = request.get_uint(Opt.NO_RESPONSE)
    return bool(value) and bool(value & NO_RESPONSE_BITS.get(code >> 5, 0))


def all_suppressed(request: Message) -> bool:
    value = request.get_uint(Opt.NO_RESPONSE)
    return value is not None and value & NO_RESPONSE_ALL == NO_RESPONSE_ALL


@dataclass(slots=True)
class CoapStats:
    """Counters for diagnosis (metrics come from packet records, not from here)."""

    messages_sent: int = 0
    messages_received: int = 0
    decode_errors: int = 0
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


class _Outgoing:
    """A message we sent that an ACK or RST may refer to, by (peer, Message ID)."""

    __slots__ = ("addr", "data", "kind", "mid", "owner", "retx", "timer")

    def __init__(self, kind: int, addr: Hashable, mid: int, data: bytes, owner: object) -> None:
        self.kind = kind
        self.addr = addr
        self.mid = mid
        self.data = data
        self.owner = owner
        self.retx: Retransmission | None = None
        self.timer: list | None = None


class _Request:
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
        self.state = _QUEUED
        self.counted = False
        self.out: _Outgoing | None = None
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
        self.parent: _Request | None = None
        self.child: _Request | None = None
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


class _Reply:
    """A server response that leaves later than the request arrived.

    ack_timer: the pending empty ACK (RFC 7252 5.2.2), disarmed when the
    response goes first and rides on the ACK instead."""

    __slots__ = ("ack_timer", "acked", "addr", "multicast", "request", "response", "seen")

    def __init__(
        self,
        addr: Hashable,
        request: Message,
        response: Message | None,
        seen: list,
        multicast: bool = False,
    ) -> None:
        self.addr = addr
        self.request = request
        self.response = response
        self.seen = seen
        self.acked = False
        self.multicast = multicast
        self.ack_timer: list | None = None


class _DeferredState:
    """What the endpoint keeps for a Deferred until respond()."""

    __slots__ = ("block1", "endpoint", "reply")

    def __init__(self, endpoint: CoapEndpoint, reply: _Reply, block1: BlockOption | None) -> None:
        self.endpoint = endpoint
        self.reply = reply
        self.block1 = block1


class CoapEndpoint:
    """One CoAP endpoint (client, server, or both) as a sans-I/O state machine."""

    def __init__(
        self,
        rng: random.Random,
        params: CoapParams = CoapParams(),  # noqa: B008 - frozen, safe to share
        *,
        first_message_id: int | None = None,
        token_length: int | None = None,
    ) -> None:
        if token_length is not None:
            # Shorthand for CoapParams.token_length (validated there).
            params = dataclasses.replace(params, token_length=token_length)
        self.rng = rng
        self.params = params
        self.stats = CoapStats()
        #: Critical request options accepted by the server; extend it when a
        #: handler implements more (e.g. If-Match).
        self.known_options: frozenset[int] = SERVER_CRITICAL_OPTIONS
        if first_message_id is None:
            first_message_id = rng.randrange(0x10000)
        if not 0 <= first_message_id <= 0xFFFF:
            raise ValueError(f"first_message_id must be 0..65535, got {first_message_id}")
        self._next_mid = first_message_id
        self._next_request_id = 1
        #: Every observer of this server by peer address, over all resources.
        self._observers_by_peer: dict[Hashable, list[Observer]] = {}
        #: RFC 7959 transfers in progress on the server side.
        self._uploads = Uploads(params.exchange_lifetime_s, params.max_body_bytes)
        self._representations = Representations(params.exchange_lifetime_s)
        self._cocoa = params.rto == "cocoa"
        self._rfc_schedule = BackoffSchedule(
            base_timeout_s=params.ack_timeout_s,
            max_retransmissions=params.max_retransmit,
            random_factor=params.ack_random_factor,
            backoff_factor=params.backoff_factor,
        )
        self._exchange_lifetime = params.exchange_lifetime_s
        self._non_lifetime = params.non_lifetime_s
        self._separate_wait = (
            params.exchange_lifetime_s
            if params.separate_response_timeout_s is None
            else params.separate_response_timeout_s
        )

        self._out: list[tuple[bytes, Hashable]] = []
        self._events: list[CoapEvent] = []
        self._timers: list[list] = []
        self._timer_seq = 0

        # client side
        self._requests: dict[int, _Request] = {}
        self._by_token: dict[tuple[Hashable, bytes], _Request] = {}
        self._group_tokens: dict[bytes, _Request] = {}  # open group requests
        self._outstanding: dict[Hashable, int] = {}
        self._queues: dict[Hashable, deque[_Request]] = {}
        self._pumping: set[Hashable] = set()
        # Peers whose next request waits for a token in use (ordered: determinism).
        self._token_blocked: dict[Hashable, None] = {}
        self._estimators: dict[Hashable, CocoaEstimator] = {}

        # messages we sent, for ACK/RST matching; NON ones expire after NON_LIFETIME
        self._by_mid: dict[tuple[Hashable, int], _Outgoing] = {}
        self._non_sent: deque[tuple[float, tuple[Hashable, int], _Outgoing]] = deque()

        # messages we received: (peer, mid) -> [expiry, reply bytes or None]
        self._seen: dict[tuple[Hashable, int], list] = {}
        self._seen_con: deque[tuple[float, tuple[Hashable, int]]] = deque()
        self._seen_non: deque[tuple[float, tuple[Hashable, int]]] = deque()

        # server side
        self._resources: dict[str, Resource] = {}
        self._well_known = Resource(
            WELL_KNOWN_CORE,
            self._well_known_handler,
            methods=frozenset({Code.GET}),
            content_format=CT_LINK_FORMAT,
        )

    # =====================================================================
    # outputs
    # =====================================================================

    def datagrams_to_send(self, now: float | None = None) -> list[tuple[bytes, Hashable]]:
        """Datagrams produced since the last call, in order (drains). `now` is unused."""
        out = self._out
        self._out = []
        return out

    def events(self) -> list[CoapEvent]:
        """Application events produced since the last call, in order (drains)."""
        ev = self._events
        self._events = []
        return ev

    def next_event(self) -> CoapEvent | None:
        """The oldest undelivered event, or None."""
        return self._events.pop(0) if self._events else None

    def next_timer(self) -> float | None:
        """Absolute time of the earliest pending deadline, or None."""
        heap = self._timers
        while heap and heap[0][2] == _CANCELLED:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    # =====================================================================
    # inputs
    # =====================================================================

    def handle_timer(self, now: float) -> None:
        """Run every deadline at or before `now`."""
        heap = self._timers
        while heap and heap[0][0] <= now:
            _, _, kind, obj = heapq.heappop(heap)
            if kind == _T_RETRANSMIT:
                self._on_retransmit_timer(now, obj)
            elif kind == _T_NON_TIMEOUT or kind == _T_SEPARATE_WAIT:
                obj.timer = None
                self._fail(now, obj, "timeout")
            elif kind == _T_REPLY:
                self._send_reply(now, obj)
            elif kind == _T_EMPTY_ACK:
                self._send_separate_ack(obj)
            elif kind == _T_GROUP_DONE:
                obj.timer = None
                self._group_done(now, obj)

    def receive(self, now: float, data: bytes, addr: Hashable, *, multicast: bool = False) -> None:
        """Process one datagram from `addr`. Never raises for any input bytes.

        multicast: the datagram was sent to a group address this node joined
        (RFC 7252 8): no RST or ACK ever answers it, a response waits a leisure.
        """
        self.stats.messages_received += 1
        try:
            msg = decode(data)
        except CoapDecodeError:
            self.stats.decode_errors += 1
            if not multicast:
                self._reject_undecodable(data, addr)
            return
        try:
            self._expire(now)
            t = msg.type
            if multicast:
                self._on_multicast(now, msg, addr)
            elif t == Type.CON or t == Type.NON:
                self._on_con_or_non(now, msg, addr)
            elif t == Type.ACK:
                self._on_ack(now, msg, addr)
            else:
                self._on_rst(now, msg, addr)
        except Exception:  # noqa: BLE001 - a peer's bytes must never crash a node
            self.stats.internal_errors += 1

    # =====================================================================
    # client API
    # =====================================================================

    def request(
        self,
        now: float,
        addr: Hashable,
        code: int,
        path: str | Sequence[str] = "/",
        *,
        confirmable: bool = True,
        payload: bytes = b"",
        options: Iterable[tuple[int, bytes | str | int]] = (),
        observe: bool = False,
        token: bytes | None = None,
        query: Sequence[str] = (),
        multicast: bool = False,
        wait_s: float | None = None,
    ) -> int:
        """Start a request; returns its request id (events carry it).

        observe=True adds Observe: 0 (RFC 7641 registration). An explicit
        `token` that names a live observation of the same peer takes that
        observation over (re-registration, RFC 7641 3.3.1); one that names a
        pending request waits until that request ends.

        multicast=True: `addr` is a group; the request goes NON (whatever
        `confirmable` says, RFC 7252 8.1), every member's response comes as
        GroupResponse until `wait_s` has passed (default default_leisure_s +
        ack_timeout_s), then GroupRequestDone.
        """
        if not is_request(code):
            raise ValueError(f"code {code} is not a request method")
        if multicast:
            if observe:
                raise ValueError("a group request cannot register an observation")
            confirmable = False
            if wait_s is None:
                wait_s = self.params.default_leisure_s + self.params.ack_timeout_s
            if not wait_s > 0:
                raise ValueError(f"wait_s must be > 0, got {wait_s!r}")
        elif wait_s is not None:
            raise ValueError("wait_s is for group (multicast) requests")
        if token is not None and len(token) > MAX_TOKEN_LENGTH:
            raise ValueError(f"token is {len(token)} bytes, at most {MAX_TOKEN_LENGTH} allowed")
        msg = Message(Type.CON if confirmable else Type.NON, int(code), 0, payload=bytes(payload))
        msg.uri_path = path
        for q in query:
            msg.add_option(Opt.URI_QUERY, q)
        for number, value in options:
            msg.add_option(number, value)
        if observe:
            msg.set_option(Opt.OBSERVE, OBSERVE_REGISTER)
        upload = None
        size = None if multicast else self.params.block_size_bytes
        if size is not None:
            szx = szx_of(size)
            if len(msg.payload) > size:
                # RFC 7959 2.5: the body in Block1 blocks; Size1 announces it whole.
                upload = msg.payload
                msg.payload = upload[:size]
                msg.block1 = BlockOption(0, True, szx)
                msg.set_option(Opt.SIZE1, len(upload))
            if code in _BLOCK2_METHODS:
                msg.block2 = BlockOption(0, False, szx)  # 2.4: early size negotiation
        _check_encodable(msg)
        self._expire(now)
        rid = self._submit(now, addr, msg, token, group_wait=wait_s)
        if upload is not None and rid in self._requests:
            self._requests[rid].upload = upload
        return rid

    def respond(self, now: float, deferred: Deferred, result: object) -> None:
        """Answer a request whose handler returned `deferred`; `result` is anything
        a handler may return (ResourceResponse, (code, payload...), bytes, str).

        The answer leaves now, or ResourceResponse.delay_s later, as a
        handler's would; to a multicast request, after a leisure drawn now.
        ValueError for a Deferred this endpoint did not take, one already
        answered, or a result that is not a response (the Deferred can then
        still be answered)."""
        state = deferred._state
        if not isinstance(state, _DeferredState) or state.endpoint is not self:
            raise ValueError("this Deferred was not returned by a handler of this endpoint")
        if deferred.answered:
            raise ValueError("this Deferred has been answered already")
        try:
            rr = to_response(result)
            if not is_response(rr.code):
                raise ValueError(f"{rr.code} is not a response code")
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        deferred.answered = True
        self._expire(now)
        reply = state.reply
        request = reply.request
        resp = self._response_to(request, rr.code, rr)
        _check_encodable(resp)
        if state.block1 is not None:
            resp.block1 = state.block1
        reply.response = self._response_blocks(now, request, reply.addr, resp)
        delay = float(rr.delay_s)
        self._schedule_reply(now, reply, delay if delay > 0 else 0.0)

    def cancel(self, now: float, request_id: int) -> bool:
        """Forget a request or observation without telling the peer; no event follows.

        Later responses or notifications for it are answered with RST.
        """
        req = self._requests.get(request_id)
        if req is None:
            return False
        if req.state == _QUEUED:
            self._unqueue(req)
        else:
            self._finish(now, req)
        return True

    def cancel_observe(self, now: float, request_id: int, proactive: bool = True) -> int | None:
        """End an observation (RFC 7641 3.6).

        proactive: send a GET with Observe: 1 and the registration's token and
        options; returns the request id of that deregistration, whose response
        arrives as ResponseReceived. Otherwise forget it locally; the next
        notification is answered with RST (reactive), and None is returned.
        """
        req = self._requests.get(request_id)
        if req is None or not req.observe:
            return None
        if req.state == _QUEUED:
            self._unqueue(req)
            return None
        token = req.token
        self._finish(now, req)
        if not proactive:
            return None
        msg = req.message.copy()
        msg.set_option(Opt.OBSERVE, OBSERVE_DEREGISTER)
        return self._submit(now, req.addr, msg, token, dereg=True)

    def rto_estimator(self, addr: Hashable) -> CocoaEstimator:
        """The CoCoA estimator kept for `addr` (created on first use)."""
        est = self._estimators.get(addr)
        if est is None:
            est = self._estimators[addr] = CocoaEstimator()
        return est

    # =====================================================================
    # server API
    # =====================================================================

    def add_resource(
        self,
        path: str | Sequence[str],
        handler: Handler,
        *,
        observable: bool = False,
        methods: Iterable[int] | None = None,
        notify_confirmable: bool = False,
        content_format: int | None = None,
        attributes: Mapping[str, str | int | None] | None = None,
    ) -> Resource:
        """Serve `path` with `handler(request, addr)`.

        methods: allowed request codes (others get 4.05); None allows all.
        notify_confirmable: notifications go out as CON (else NON).
        content_format and attributes (rt, if, title, sz...) appear in
        /.well-known/core; observable resources are listed with ;obs.
        """
        key = normalize_path(path)
        res = Resource(
            key,
            handler,
            observable=observable,
            methods=None if methods is None else frozenset(int(m) for m in methods),
            notify_confirmable=notify_confirmable,
            content_format=content_format,
            attributes=dict(attributes or {}),
        )
        old = self._resources.get(key)
        if old is not None:
            for obs in list(old.observers.values()):
                self._remove_observer(obs)
        self._resources[key] = res
        return res

    def remove_resource(self, path: str | Sequence[str]) -> bool:
        """Stop serving `path` (its observers are dropped); False if it was not served."""
        res = self._resources.pop(normalize_path(path), None)
        if res is None:
            return False
        for obs in list(res.observers.values()):
            self._remove_observer(obs)
        return True

    def observers(self, path: str | Sequence[str]) -> int:
        """How many observers `path` has."""
        res = self._resources.get(normalize_path(path))
        return 0 if res is None else len(res.observers)

    def peer_unreachable(self, now: float, addr: Hashable) -> int:
        """The network said `addr` is unreachable (an ICMP port or host unreachable
        for something we sent it): end its observations (RFC 7641 4.5), and fail
        our requests to it at once ("unreachable") rather than after the
        give-up. Returns how many observations ended."""
        gone = list(self._observers_by_peer.get(addr, ()))
        for obs in gone:
            self._remove_observer(obs)
        self.stats.observers_unreachable += len(gone)
        for req in [r for r in self._requests.values() if r.addr == addr and r.parent is None]:
            self._fail(now, req, "unreachable")
        return len(gone)

    def notify(
        self, now: float, path: str | Sequence[str], *, confirmable: bool | None = None
    ) -> int:
        """Push the current state of `path` to all its observers; returns how many.

        confirmable: CON or NON for this notification; None uses the
        resource's notify_confirmable. All observers get the same new sequence
        number. A handler answer other than 2.xx ends each observation
        (RFC 7641 3.2: the error goes out without Observe).
        """
        res = self._resources.get(normalize_path(path))
        if res is None:
            raise KeyError(f"no resource at {normalize_path(path)!r}")
        if not res.observers:
            return 0
        self._expire(now)
        con = res.notify_confirmable if confirmable is None else confirmable
        seq = res.next_seq()
        observers = list(res.observers.values())
        for obs in observers:
            msg = self._notification(now, res, obs, seq, con or self._con_due(now, obs))
            if _is_success(msg.code):
                self._send_notification(now, obs, msg)
            else:
                self._remove_observer(obs)
                self._transmit_notification(now, obs, msg)
        return len(observers)

    # =====================================================================
    # sending machinery
    # =====================================================================

    def _send(self, data: bytes, addr: Hashable) -> None:
        self._out.append((data, addr))
        self.stats.messages_sent += 1

    def _new_mid(self) -> int:
        mid = self._next_mid
        self._next_mid = (mid + 1) & 0xFFFF
        return mid

    def _arm(self, deadline: float, kind: int, obj: object) -> list:
        self._timer_seq += 1
        entry = [deadline, self._timer_seq, kind, obj]
        heapq.heappush(self._timers, entry)
        return entry

    @staticmethod
    def _disarm(entry: list | None) -> None:
        if entry is not None:
            entry[2] = _CANCELLED

    def _schedule(self, now: float, addr: Hashable, parallel: int = 0) -> BackoffSchedule:
        """Retransmission schedule of a new CON towards `addr`."""
        if not self._cocoa:
            return self._rfc_schedule
        p = self.params
        return self.rto_estimator(addr).schedule(
            now, p.max_retransmit, p.ack_random_factor, parallel
        )

    def _non_timeout(self, now: float, addr: Hashable, parallel: int) -> float:
        if self.params.non_timeout_s is not None:
            return self.params.non_timeout_s
        if self._cocoa:
            return self._schedule(now, addr, parallel).max_wait_s
        return self.params.max_transmit_wait_s

    def _send_con(self, now: float, out: _Outgoing, parallel: int = 0) -> None:
        """First transmission of a CON and its retransmission timer (RFC 7252 4.2)."""
        self._by_mid[(out.addr, out.mid)] = out
        retx = Retransmission(self._schedule(now, out.addr, parallel), self.rng)
        out.retx = retx
        self._send(out.data, out.addr)
        out.timer = self._arm(retx.start(now), _T_RETRANSMIT, out)

    def _send_non(self, now: float, out: _Outgoing) -> None:
        """A NON that an RST may refer to within NON_LIFETIME."""
        key = (out.addr, out.mid)
        self._by_mid[key] = out
        self._non_sent.append((now + self._non_lifetime, key, out))
        self._send(out.data, out.addr)

    def _forget_out(self, out: _Outgoing | None) -> None:
        """Stop retransmitting `out` and stop matching ACK/RST to it."""
        if out is None:
            return
        self._disarm(out.timer)
        out.timer = None
        key = (out.addr, out.mid)
        if self._by_mid.get(key) is out:
            del self._by_mid[key]

    def _on_retransmit_timer(self, now: float, out: _Outgoing) -> None:
        out.timer = None
        retx = out.retx
        assert retx is not None
        if not retx.on_timeout(now):
            self._forget_out(out)
            self._give_up(now, out)
            return
        self.stats.retransmissions += 1
        if out.kind == _NOTIFY:
            self._swap_in_pending(out)
        self._send(out.data, out.addr)
        out.timer = self._arm(retx.deadline_s, _T_RETRANSMIT, out)

    def _give_up(self, now: float, out: _Outgoing) -> None:
        if out.kind == _REQUEST:
            self._fail(now, out.owner, "max-retransmit")
        elif out.kind == _NOTIFY:
            # RFC 7641 4.5: a CON notification that is never acknowledged ends the observation.
            self._remove_observer(out.owner)
        # A separate response that is never acknowledged is simply dropped.

    def _rtt_sample(self, now: float, out: _Outgoing) -> None:
        """Feed CoCoA from an acknowledged CON (draft-ietf-core-cocoa 4.2)."""
        if self._cocoa and out.retx is not None:
            retx = out.retx
            self.rto_estimator(out.addr).on_exchange(
                now, now - retx.first_sent_s, retx.retransmissions
            )

    def _expire(self, now: float) -> None:
        """Drop dedup entries and NON matches past their lifetime (RFC 7252 4.5)."""
        seen = self._seen
        for order in (self._seen_con, self._seen_non):
            while order and order[0][0] <= now:
                _, key = order.popleft()
                entry = seen.get(key)
                if entry is not None and entry[0] <= now:
                    del seen[key]
        sent = self._non_sent
        while sent and sent[0][0] <= now:
            _, key, out = sent.popleft()
            if self._by_mid.get(key) is out:
                del self._by_mid[key]

    def _remember(self, now: float, key: tuple[Hashable, int], confirmable: bool) -> list:
        """Start deduplicating (peer, mid); returns the entry whose [1] holds our reply."""
        if len(self._seen) >= self.params.dedup_capacity:
            self._forget_oldest_seen()
        if confirmable:
            expiry = now + self._exchange_lifetime
            self._seen_con.append((expiry, key))
        else:
            expiry = now + self._non_lifetime
            self._seen_non.append((expiry, key))
        entry = [expiry, None]
        self._seen[key] = entry
        return entry

    def _forget_oldest_seen(self) -> None:
        """Drop the dedup entry that would expire first (a flood must not grow memory)."""
        con, non = self._seen_con, self._seen_non
        order = con if con and (not non or con[0][0] <= non[0][0]) else non
        _, key = order.popleft()
        self._seen.pop(key, None)

    def _reset(self, addr: Hashable, mid: int, seen: list | None = None) -> None:
        """Reject a message with RST (RFC 7252 4.2/4.3)."""
        data = _empty(Type.RST, mid)
        if seen is not None:
            seen[1] = data
        self.stats.resets_sent += 1
        self._send(data, addr)

    def _ack_empty(self, addr: Hashable, mid: int, seen: list) -> None:
        data = _empty(Type.ACK, mid)
        seen[1] = data
        self._send(data, addr)

    def _reject_undecodable(self, data: bytes, addr: Hashable) -> None:
        """RFC 7252 4.2: a CON with a message format error is rejected with RST.

        Only when the 4-byte header itself is readable (version 1, type CON);
        anything else is silently dropped.
        """
        if len(data) >= 4 and data[0] >> 6 == 1 and (data[0] >> 4) & 3 == Type.CON:
            self._reset(addr, (data[2] << 8) | data[3])

    # =====================================================================
    # receiving: message layer
    # =====================================================================

    def _on_con_or_non(self, now: float, msg: Message, addr: Hashable) -> None:
        key = (addr, msg.message_id)
        seen = self._seen.get(key)
        con = msg.type == Type.CON
        if seen is not None:
            self.stats.duplicates += 1
            if con and seen[1] is not None:
                self._send(seen[1], addr)
            return
        code = msg.code
        if code == 0:
            if con:
                # RFC 7252 4.3: an empty CON is a ping, answered with RST.
                self._reset(addr, msg.message_id, self._remember(now, key, True))
            else:
                self.stats.format_errors += 1  # 4.3: a NON is never empty
            return
        seen = self._remember(now, key, con)
        if is_request(code):
            self._on_request(now, msg, addr, seen)
        elif is_response(code):
            self._on_separate_or_non_response(now, msg, addr, seen)
        else:
            # Reserved code class (1, 6, 7): reject (RFC 7252 4.2, 4.3).
            self.stats.format_errors += 1
            if con:
                self._reset(addr, msg.message_id, seen)

    def _on_ack(self, now: float, msg: Message, addr: Hashable) -> None:
        out = self._by_mid.get((addr, msg.message_id))
        if out is None or out.retx is None:
            self.stats.unexpected += 1
            return
        code = msg.code
        if code == 0:
            self._acknowledged(now, out)
            if out.kind == _REQUEST:
                self._await_separate(now, out.owner)
            return
        if not is_response(code):
            self.stats.format_errors += 1  # an ACK carries a response or nothing
            return
        if out.kind != _REQUEST:
            self.stats.unexpected += 1
            return
        req: _Request = out.owner
        # RFC 7252 5.3.2: a piggybacked response must match Message ID and token.
        if msg.token != req.token:
            self.stats.unexpected += 1
            return
        if self._has_bad_critical(msg.options, CLIENT_CRITICAL_OPTIONS):
            self.stats.bad_options += 1  # rejecting an ACK is silently ignoring it
            return
        self._acknowledged(now, out)
        self._on_response(now, req, msg)

    def _on_rst(self, now: float, msg: Message, addr: Hashable) -> None:
        if msg.code != 0:
            self.stats.format_errors += 1  # RFC 7252 4.2: RST is always Empty
            return
        out = self._by_mid.get((addr, msg.message_id))
        if out is None:
            self.stats.unexpected += 1
            return
        self.stats.resets_received += 1
        self._forget_out(out)
        if out.kind == _REQUEST:
            self._fail(now, out.owner, "reset")
        elif out.kind == _NOTIFY:
            # RFC 7641 3.6: RST in reply to a notification deregisters the client.
            self._remove_observer(out.owner)

    def _acknowledged(self, now: float, out: _Outgoing) -> None:
        """An ACK (or a response standing in for one) arrived for CON `out`."""
        self._forget_out(out)
        self._rtt_sample(now, out)
        if out.kind == _NOTIFY:
            obs: Observer = out.owner
            if obs.inflight is out:
                obs.inflight = None
                pending = obs.pending
                if pending is not None and self._is_registered(obs):
                    obs.pending = None
                    self._transmit_notification(now, obs, pending)

    # =====================================================================
    # client side
    # =====================================================================

    def _submit(
        self,
        now: float,
        addr: Hashable,
        msg: Message,
        token: bytes | None,
        dereg: bool = False,
        group_wait: float | None = None,
    ) -> int:
        rid = self._next_request_id
        self._next_request_id += 1
        req = _Request(rid, addr, msg, token)
        req.dereg = dereg
        req.group_wait = group_wait
        self._requests[rid] = req
        self._enqueue(now, req)
        return rid

    def _enqueue(self, now: float, req: _Request, first: bool = False) -> None:
        """Queue `req` for its peer (at the head with `first`) and start what NSTART allows."""
        queue = self._queues.get(req.addr)
        if queue is None:
            queue = self._queues[req.addr] = deque()
        if first:
            queue.appendleft(req)
        else:
            queue.append(req)
        self._pump(now, req.addr)

    def _unqueue(self, req: _Request) -> None:
        queue = self._queues.get(req.addr)
        if queue is not None:
            queue.remove(req)
            if not queue:
                del self._queues[req.addr]
        req.state = _DONE
        del self._requests[req.id]

    def _pump(self, now: float, addr: Hashable) -> None:
        """Start queued requests to `addr` while NSTART allows (RFC 7252 4.7)."""
        queue = self._queues.get(addr)
        if queue is None or addr in self._pumping:
            return  # nothing queued, or already pumping further up the stack
        self._pumping.add(addr)
        try:
            nstart = self.params.nstart
            while queue:
                running = self._outstanding.get(addr, 0)
                if running >= nstart:
                    break
                req = queue[0]
                token = self._pick_token(now, req)
                if token is None:
                    self._token_blocked[addr] = None
                    break  # its token is still in use; keep FIFO order
                queue.popleft()
                self._start(now, req, token, running)
        finally:
            self._pumping.discard(addr)
        if not queue:
            self._queues.pop(addr, None)

    def _pick_token(self, now: float, req: _Request) -> bytes | None:
        addr = req.addr
        if req.fixed_token is not None:
            if req.fixed_token in self._group_tokens or (
                req.group_wait is not None and self._token_in_use(req.fixed_token)
            ):
                return None
            holder = self._by_token.get((addr, req.fixed_token))
            if holder is None:
                return req.fixed_token
            if holder.state == _OBSERVING:
                self._finish(now, holder)  # re-registration takes the observation over
                return req.fixed_token
            return None
        n = self.params.token_length
        if n == 0:
            free = (addr, b"") not in self._by_token and b"" not in self._group_tokens
            if req.group_wait is not None:
                free = free and not self._token_in_use(b"")
            return b"" if free else None
        for _ in range(16):
            token = self.rng.getrandbits(8 * n).to_bytes(n, "big")
            if (addr, token) in self._by_token or token in self._group_tokens:
                continue
            if req.group_wait is not None and self._token_in_use(token):
                continue  # a group's responses come from anywhere: unique among all
            return token
        return None

    def _token_in_use(self, token: bytes) -> bool:
        return any(t == token for _, t in self._by_token)

    def _start(self, now: float, req: _Request, token: bytes, parallel: int) -> None:
        addr = req.addr
        msg = req.message
        msg.token = token
        msg.message_id = self._new_mid()
        req.token = token
        req.state = _SENT
        req.counted = True
        req.first_sent_s = now
        if req.started_s is None:
            req.started_s = now
        self._outstanding[addr] = parallel + 1
        self._by_token[(addr, token)] = req
        out = _Outgoing(_REQUEST, addr, msg.message_id, encode(msg), req)
        req.out = out
        self.stats.requests_sent += 1
        if req.group_wait is not None:
            # RFC 7390 2.7: responses from any member, until the wait is over.
            self._group_tokens[token] = req
            req.group_responses = {}
            self._send(out.data, addr)
            req.timer = self._arm(now + req.group_wait, _T_GROUP_DONE, req)
            return
        if msg.type == Type.CON:
            self._send_con(now, out, parallel)
        elif all_suppressed(msg):
            # RFC 7967: a NON request that wants no response is done once sent.
            self._send_non(now, out)
            self._release(now, req)
            self._finish(now, req)
        else:
            self._send_non(now, out)
            timeout = self._non_timeout(now, addr, parallel)
            req.timer = self._arm(now + timeout, _T_NON_TIMEOUT, req)

    def _release(self, now: float, req: _Request) -> None:
        """The request no longer counts against NSTART; let the queue move."""
        if req.counted:
            req.counted = False
            addr = req.addr
            left = self._outstanding[addr] - 1
            if left:
                self._outstanding[addr] = left
            else:
                del self._outstanding[addr]
            self._pump(now, addr)

    def _finish(self, now: float, req: _Request) -> None:
        """Forget a request or observation entirely (and the block fetch it waits for)."""
        if req.state == _DONE:
            return
        if req.state == _QUEUED:
            self._unqueue(req)
            return
        req.state = _DONE
        child = req.child
        if child is not None:
            req.child = None
            child.parent = None
            self._finish(now, child)
        self._disarm(req.timer)
        req.timer = None
        self._forget_out(req.out)
        key = (req.addr, req.token)
        if self._by_token.get(key) is req:
            del self._by_token[key]
        if self._group_tokens.get(req.token) is req:
            del self._group_tokens[req.token]
        self._requests.pop(req.id, None)
        if req.counted:
            self._release(now, req)
        else:
            self._pump(now, req.addr)  # a freed token may unblock the queue
        blocked = self._token_blocked
        if blocked:
            # A group request's token is unique among all peers, so a token freed
            # here may be the one another peer's queue waits for.
            self._token_blocked = {}
            for addr in blocked:
                self._pump(now, addr)

    def _fail(self, now: float, req: _Request, reason: str) -> None:
        if req.state == _DONE:
            return
        parent = req.parent
        if parent is not None:
            # A block fetch failed: the response it completes failed with it; a
            # notification's blocks are simply lost (the observation goes on).
            self._finish(now, req)
            parent.child = None
            if req.notification is None:
                self._fail(now, parent, f"{reason} (block {req.message.block2.num})")
            return
        self.stats.requests_failed += 1
        self._events.append(RequestFailed(req.id, reason))  # type: ignore[arg-type]
        self._finish(now, req)

    def _await_separate(self, now: float, req: _Request) -> None:
        """Empty ACK for our request: the response will come separately (RFC 7252 5.2.2)."""
        if req.state != _SENT:
            return
        req.state = _WAITING
        req.timer = self._arm(now + self._separate_wait, _T_SEPARATE_WAIT, req)
        self._release(now, req)

    def _on_separate_or_non_response(
        self, now: float, msg: Message, addr: Hashable, seen: list
    ) -> None:
        """A response in its own CON or NON: separate, NON, or a notification."""
        req = self._by_token.get((addr, msg.token))
        if req is None or req.group_wait is not None:
            group = self._group_tokens.get(msg.token)
            if group is not None:
                self._on_group_response(now, group, msg, addr, seen)
                return
        if req is None:
            # RFC 7252 5.3.2: a response nobody waits for is rejected; for an
            # unwanted notification this is RFC 7641 3.6's reactive cancellation.
            self.stats.unexpected += 1
            self._reset(addr, msg.message_id, seen)
            return
        if self._has_bad_critical(msg.options, CLIENT_CRITICAL_OPTIONS):
            self.stats.bad_options += 1
            self._reset(addr, msg.message_id, seen)
            return
        if msg.type == Type.CON:
            self._ack_empty(addr, msg.message_id, seen)
        if req.dereg and observe_value(msg) is not None:
            return  # a late notification of the observation being cancelled
        out = req.out
        if req.state == _SENT and out is not None:
            if out.retx is not None:
                if out.timer is not None:
                    # The response implies our CON arrived; its ACK was lost or is late.
                    self._acknowledged(now, out)
            else:
                self._forget_out(out)
                if self._cocoa:
                    # NON request/response: unambiguous, feeds the strong estimator.
                    self.rto_estimator(addr).on_exchange(now, now - req.first_sent_s, 0)
        self._on_response(now, req, msg)

    def _on_group_response(
        self, now: float, req: _Request, msg: Message, addr: Hashable, seen: list
    ) -> None:
        """A member's response to a group request: report it, keep waiting.

        Every response is reported, a member's second one too (a message
        repeated by the network was already dropped by Message ID): which to
        use is the application's choice, as RFC 7390's successor
        draft-ietf-core-groupcomm-bis puts it."""
        if self._has_bad_critical(msg.options, CLIENT_CRITICAL_OPTIONS):
            self.stats.bad_options += 1
            self._reset(addr, msg.message_id, seen)  # RFC 7252 5.4.1: rejected
            return
        if msg.type == Type.CON:
            self._ack_empty(addr, msg.message_id, seen)
        sources = req.group_responses
        assert sources is not None
        sources[addr] = sources.get(addr, 0) + 1
        self._events.append(GroupResponse(req.id, msg, addr))

    def _group_done(self, now: float, req: _Request) -> None:
        sources = req.group_responses or {}
        self._events.append(GroupRequestDone(req.id, sum(sources.values()), len(sources)))
        self._finish(now, req)

    def _on_response(self, now: float, req: _Request, msg: Message) -> None:
        """Deliver a matched response or notification to the application."""
        if req.parent is not None:
            self._on_child_block(now, req, msg)
            return
        if req.state == _OBSERVING:
            self._on_notification(now, req, msg)
            return
        if req.state == _BLOCKS:
            return  # a duplicate of the first block; its child fetches the rest
        seq = observe_value(msg)
        if req.dereg and seq is not None:
            return  # a late notification of the observation being cancelled
        if req.upload is not None and msg.code == Code.CONTINUE:
            self._next_upload_block(now, req, msg)
            return
        block = msg.block2
        if block is not None and block.more and req.message.code in _BLOCK2_METHODS:
            if _is_success(msg.code):
                # RFC 7959 2.4: fetch the other blocks, then deliver the whole body.
                self._settle(now, req)
                req.state = _BLOCKS
                self._fetch_blocks(now, req, msg, None)
                return
        self._deliver(now, req, msg)

    def _deliver(self, now: float, req: _Request, msg: Message) -> None:
        out = req.out
        if out is None and req.transmissions:
            transmissions = req.transmissions  # every block's, counted as they ended
        else:
            transmissions = out.retx.transmissions if out is not None and out.retx else 1
            transmissions += req.transmissions
        started = req.started_s if req.started_s is not None else req.first_sent_s
        self._events.append(ResponseReceived(req.id, msg, now - started, transmissions))
        seq = observe_value(msg)
        if req.observe and seq is not None and _is_success(msg.code):
            req.state = _OBSERVING
            req.observation = ClientObservation(seq, now)
            self._disarm(req.timer)
            req.timer = None
            self._forget_out(out)
            self._release(now, req)
        else:
            self._finish(now, req)

    def _on_notification(self, now: float, req: _Request, msg: Message) -> None:
        seq = observe_value(msg)
        if seq is None or not _is_success(msg.code):
            # RFC 7641 3.2: an error or a response without Observe ends the observation.
            self._events.append(NotificationReceived(req.id, msg, None, final=True))
            self._finish(now, req)
            return
        assert req.observation is not None
        if not req.observation.accept(seq, now):
            self.stats.stale_notifications += 1
            return
        block = msg.block2
        if block is not None and block.more:
            # RFC 7959 2.6: the rest of the new state with plain GETs, then report it.
            if req.child is not None:
                self._finish(now, req.child)  # an older state's blocks: this one is newer
            self._fetch_blocks(now, req, msg, seq)
            return
        self._events.append(NotificationReceived(req.id, msg, seq))

    # ---- RFC 7959 block-wise transfers, client side ---------------------------------

    def _settle(self, now: float, req: _Request) -> None:
        """The exchange of this message is over; the request goes on (more blocks)."""
        out = req.out
        if out is not None and out.retx is not None:
            req.transmissions += out.retx.transmissions
        else:
            req.transmissions += 1
        self._disarm(req.timer)
        req.timer = None
        self._forget_out(out)
        req.out = None
        if req.counted:
            self._release(now, req)

    def _next_block(self, now: float, req: _Request, message: Message) -> None:
        """Send the request's next block: a new message, the same token, first in line."""
        self._settle(now, req)
        key = (req.addr, req.token)
        if self._by_token.get(key) is req:
            del self._by_token[key]
        req.fixed_token = req.token
        req.message = message
        req.state = _QUEUED
        self._enqueue(now, req, first=True)

    def _next_upload_block(self, now: float, req: _Request, msg: Message) -> None:
        """2.31 Continue: the next Block1 block, at the server's size if it asks for less."""
        sent = req.message
        mine, theirs = sent.block1, msg.block1
        if mine is None or theirs is None:
            self._fail(now, req, "blockwise: 2.31 Continue without Block1")
            return
        upload = req.upload
        assert upload is not None
        szx = min(mine.szx, theirs.szx)
        size = 1 << (szx + 4)
        offset = mine.offset + len(sent.payload)
        nxt = sent.copy()
        nxt.payload = upload[offset : offset + size]
        nxt.block1 = BlockOption(offset // size, offset + size < len(upload), szx)
        nxt.remove_option(Opt.SIZE1)  # announced with the first block
        self._next_block(now, req, nxt)

    def _fetch_blocks(self, now: float, parent: _Request, first: Message, seq: int | None) -> None:
        """A child request fetches the blocks after `first` (RFC 7959 2.4, 2.6)."""
        block = first.block2
        assert block is not None
        if block.num != 0:
            self._block_error(now, parent, seq, "blockwise: the first block is not block 0")
            return
        nxt = parent.message.copy()
        nxt.remove_option(Opt.OBSERVE)
        nxt.remove_option(Opt.BLOCK1)
        nxt.remove_option(Opt.SIZE1)
        nxt.payload = b""
        nxt.block2 = BlockOption(1, False, block.szx)
        child = _Request(self._next_request_id, parent.addr, nxt, None)
        self._next_request_id += 1
        child.parent = parent
        child.first = first
        child.body = bytearray(first.payload)
        child.notification = seq
        parent.child = child
        self._requests[child.id] = child
        self._enqueue(now, child)

    def _on_child_block(self, now: float, child: _Request, msg: Message) -> None:
        parent = child.parent
        assert parent is not None and child.body is not None and child.first is not None
        block = msg.block2
        if not _is_success(msg.code) or block is None or block.offset != len(child.body):
            self._fail(now, child, f"blockwise: {code_name(msg.code)} for a block")
            return
        child.body += msg.payload
        if len(child.body) > self.params.max_body_bytes:
            self._fail(now, child, "blockwise: the body is larger than max_body_bytes")
            return
        if block.more:
            nxt = child.message.copy()
            nxt.block2 = BlockOption(block.num + 1, False, block.szx)
            self._next_block(now, child, nxt)
            return
        whole = child.first.copy()
        whole.payload = bytes(child.body)
        whole.remove_option(Opt.BLOCK2)
        parent.child = None
        parent.transmissions += child.transmissions
        out = child.out
        parent.transmissions += out.retx.transmissions if out is not None and out.retx else 1
        child.parent = None
        self._finish(now, child)
        if child.notification is not None:
            if parent.state == _OBSERVING:
                self._events.append(NotificationReceived(parent.id, whole, child.notification))
        elif parent.state == _BLOCKS:
            self._deliver(now, parent, whole)

    def _block_error(self, now: float, parent: _Request, seq: int | None, reason: str) -> None:
        if seq is None:
            self._fail(now, parent, reason)

    # =====================================================================
    # server side
    # =====================================================================

    def _has_bad_critical(self, options: list[tuple[int, bytes]], known: frozenset[int]) -> bool:
        """Unrecognized critical options, or invalid ones (RFC 7252 5.4.1, 5.4.3, 5.4.5)."""
        if not options:
            return False
        for number, _ in options:
            if number & 1 and number not in known:
                return True
        return any(number & 1 for number, _ in invalid_options(options))

    def _on_multicast(self, now: float, msg: Message, addr: Hashable) -> None:
        """A message sent to a group: only NON requests are served (RFC 7252 8.1)."""
        if msg.type != Type.NON or not is_request(msg.code):
            if msg.type == Type.CON and is_request(msg.code):
                self.stats.multicast_con_ignored += 1
            else:
                self.stats.format_errors += 1
            return
        key = (addr, msg.message_id)
        if key in self._seen:
            self.stats.duplicates += 1
            return
        self._on_request(now, msg, addr, self._remember(now, key, False), multicast=True)

    def _on_request(
        self, now: float, msg: Message, addr: Hashable, seen: list, multicast: bool = False
    ) -> None:
        con = msg.type == Type.CON
        if multicast and self._has_bad_critical(msg.options, self.known_options):
            self.stats.bad_options += 1  # never an RST to a multicast request (8.2)
            return
        if self._has_bad_critical(msg.options, self.known_options):
            self.stats.bad_options += 1
            if con:
                self._respond(now, msg, addr, seen, self._response_to(msg, Code.BAD_OPTION))
            else:
                self._reset(addr, msg.message_id, seen)  # 5.4.1: reject the NON
            return
        if msg.has_option(Opt.PROXY_URI) or msg.has_option(Opt.PROXY_SCHEME):
            resp = self._response_to(msg, Code.PROXYING_NOT_SUPPORTED)
            self._respond(now, msg, addr, seen, resp, multicast=multicast)
            return
        path = msg.uri_path
        res = self._resources.get(path)
        if res is None:
            res = self._well_known if path == WELL_KNOWN_CORE else None
        if res is None:
            resp = self._response_to(msg, Code.NOT_FOUND)
            self._respond(now, msg, addr, seen, resp, multicast=multicast)
            return
        if res.methods is not None and msg.code not in res.methods:
            resp = self._response_to(msg, Code.METHOD_NOT_ALLOWED)
            self._respond(now, msg, addr, seen, resp, multicast=multicast)
            return
        whole = msg if multicast else self._request_body(now, msg, addr, seen)
        if whole is None:
            return  # answered: 2.31 Continue for the next block, or why not
        last_block1 = None
        if whole is not msg:
            last_block1 = BlockOption(msg.block1.num, False, msg.block1.szx)  # 2.5: the last
        kept = self._later_block(now, msg, addr)
        if kept is None and _asks_later_block_of_an_update(msg):
            # Never run a POST or PUT again for a later block of its response.
            error = self._response_to(msg, Code.REQUEST_ENTITY_INCOMPLETE)
            error.payload = b"Block2: no response of this request is kept; send it again"
            self._respond(now, msg, addr, seen, error, multicast=multicast)
            return
        if kept is not None:
            # RFC 7959 2.4: later blocks come from the representation block 0 was
            # cut from; the handler (which may answer only later) is not asked again.
            resp = self._response_blocks(now, msg, addr, kept)
            self._respond(now, msg, addr, seen, resp, multicast=multicast)
            return
        outcome = self._run_handler(res, whole, addr, deferrable=True)
        if isinstance(outcome, Deferred):
            self._defer(now, outcome, msg, addr, seen, last_block1, multicast)
            return
        resp, delay = outcome
        if msg.code == Code.GET and not multicast:
            self._observe_request(now, res, msg, addr, resp)
        if last_block1 is not None:
            resp.block1 = last_block1
        resp = self._response_blocks(now, msg, addr, resp)
        self._respond(now, msg, addr, seen, resp, delay, multicast)

    def _later_block(self, now: float, msg: Message, addr: Hashable) -> Message | None:
        """The representation kept for a request for block 1 or later, if any."""
        block = msg.block2
        if block is None or block.num == 0 or msg.code not in _BLOCK2_SERVED:
            return None
        if msg.has_option(Opt.OBSERVE):
            return None
        kept = self._representations.get(now, (addr, msg.code, uri_key(msg)))
        if kept is None:
            return None
        resp = kept.copy()
        resp.token = msg.token
        return resp

    def _defer(
        self,
        now: float,
        deferred: Deferred,
        msg: Message,
        addr: Hashable,
        seen: list,
        block1: BlockOption | None,
        multicast: bool,
    ) -> None:
        """A handler will answer later (respond()); acknowledge a CON meanwhile."""
        reply = _Reply(addr, msg, None, seen, multicast)
        state = _DeferredState(self, reply, block1)
        deferred.request, deferred.addr, deferred._state = msg, addr, state
        if msg.type == Type.CON:
            after = self.params.separate_response_after_s
            if after is None:
                self._send_separate_ack(reply)
            else:
                reply.ack_timer = self._arm(now + after, _T_EMPTY_ACK, reply)

    # ---- RFC 7959 block-wise transfers, server side ---------------------------------

    def _request_body(self, now: float, msg: Message, addr: Hashable, seen: list) -> Message | None:
        """The request with its whole body, once every Block1 block has come; None when
        this block was answered instead (2.31 Continue, 4.08, 4.13, 4.00)."""
        block = msg.block1
        if block is None:
            return msg
        if block.szx > MAX_SZX:
            resp = self._response_to(msg, Code.BAD_REQUEST)
            resp.payload = b"Block1: SZX 7 is reserved (RFC 7959 2.2)"
            self._respond(now, msg, addr, seen, resp)
            return None
        own = self.params.block_size_bytes
        szx = block.szx if own is None else min(block.szx, szx_of(own))
        result = self._uploads.add(now, (addr, uri_key(msg)), block, msg.payload)
        if isinstance(result, bytes):
            whole = msg.copy()
            whole.payload = result
            whole.remove_option(Opt.BLOCK1)
            whole.remove_option(Opt.SIZE1)
            return whole
        if result == "continue":
            resp = self._response_to(msg, Code.CONTINUE)
            resp.block1 = BlockOption(block.num, True, szx)  # 2.5: our size from now on
        elif result == "too-large":
            resp = self._response_to(msg, Code.REQUEST_ENTITY_TOO_LARGE)
            resp.set_option(Opt.SIZE1, self.params.max_body_bytes)
        else:
            resp = self._response_to(msg, Code.REQUEST_ENTITY_INCOMPLETE)
            resp.payload = f"Block1: block {block.num} does not follow what came".encode()
        self._respond(now, msg, addr, seen, resp)
        return None

    def _response_blocks(
        self, now: float, request: Message, addr: Hashable, resp: Message
    ) -> Message:
        """The block of `resp` the request asks for (RFC 7959 2.4), or `resp` whole.

        A response larger than our block size, or one to a request with Block2,
        goes out in blocks; every block of one transfer comes from the
        representation its block 0 was cut from."""
        if request.code not in _BLOCK2_SERVED or not _is_success(resp.code):
            return resp
        if resp.code == Code.CONTINUE:
            return resp  # 2.31: a Block1 upload goes on (RFC 7959 2.9.1)
        asked = request.block2
        own = self.params.block_size_bytes
        if asked is None:
            if own is None or len(resp.payload) <= own:
                return resp
            num, szx = 0, szx_of(own)
        elif asked.szx > MAX_SZX:
            error = self._response_to(request, Code.BAD_REQUEST)
            error.payload = b"Block2: SZX 7 is reserved (RFC 7959 2.2)"
            return error
        else:
            num = asked.num
            # 2.4: the size asked for or smaller on block 0; later blocks keep
            # the size the client learned from block 0.
            szx = min(asked.szx, szx_of(own)) if own is not None and num == 0 else asked.szx
        key = (addr, request.code, uri_key(request))
        source = resp
        if num > 0:
            kept = self._representations.get(now, key)
            if kept is not None:
                source = kept
        piece = block_of(source.payload, num, szx)
        if piece is None:
            error = self._response_to(request, Code.BAD_OPTION)
            error.payload = b"Block2: block number beyond the end of the representation"
            return error
        payload, more = piece
        out = resp.copy()
        out.options = [o for o in source.options if o[0] != Opt.OBSERVE]
        if resp.observe is not None:
            out.set_option(Opt.OBSERVE, resp.get_option(Opt.OBSERVE))
        out.payload = payload
        out.block2 = BlockOption(num, more, szx)
        if num == 0 or request.has_option(Opt.SIZE2):
            out.set_option(Opt.SIZE2, len(source.payload))
        if num == 0 and more:
            self._representations.keep(now, key, source)
        elif not more:
            self._representations.drop(key)
        return out

    def _observe_request(
        self, now: float, res: Resource, msg: Message, addr: Hashable, resp: Message
    ) -> None:
        """RFC 7641 4.1: register, update or remove the (peer, token) observer."""
        value = observe_value(msg)
        if value is None:
            return
        key = (addr, msg.token)
        if value == OBSERVE_REGISTER and res.observable and _is_success(resp.code):
            obs = res.observers.get(key)
            if obs is None and self.params.observe_one_per_peer:
                for other in [o for o in res.observers.values() if o.addr == addr]:
                    self._remove_observer(other)
            if obs is None:
                if not self._room_for_observer(res, addr):
                    # 4.1: a server that will not add an observer answers as to a
                    # plain GET; the missing Observe tells the client.
                    self.stats.observers_refused += 1
                    return
                obs = res.observers[key] = Observer(addr, msg.token, res, msg, now)
                self._observers_by_peer.setdefault(addr, []).append(obs)
            else:
                obs.request = msg
            resp.options.append((Opt.OBSERVE, encode_uint(res.next_seq())))
        elif value in (OBSERVE_REGISTER, OBSERVE_DEREGISTER):
            obs = res.observers.get(key)
            if obs is not None:
                self._remove_observer(obs)

    def _run_handler(
        self, res: Resource, msg: Message, addr: Hashable, deferrable: bool = False
    ) -> tuple[Message, float] | Deferred:
        """Call the handler; any failure becomes 5.00 (a handler never crashes the node).

        A Deferred comes back as it is where the caller can wait (`deferrable`:
        requests); elsewhere (notifications) it is an error."""
        try:
            result = res.handler(msg, addr)
            if deferrable and isinstance(result, Deferred):
                if result._state is not None:
                    raise ValueError("a Deferred answers one request; this one is taken")
                return result
            rr = to_response(result)
            if not is_response(rr.code):
                raise ValueError(f"{rr.code} is not a response code")
            resp = self._response_to(msg, rr.code, rr)
            _check_encodable(resp)
            delay = float(rr.delay_s)
            return resp, delay if delay > 0 else 0.0
        except Exception:  # noqa: BLE001
            self.stats.handler_errors += 1
            return self._response_to(msg, Code.INTERNAL_SERVER_ERROR), 0.0

    def _response_to(
        self, request: Message, code: int, rr: ResourceResponse | None = None
    ) -> Message:
        """A response Message with the request's token; type and MID are set when sent."""
        resp = Message(Type.ACK, int(code), 0, request.token)
        if rr is not None:
            if rr.content_format is not None:
                resp.options.append((Opt.CONTENT_FORMAT, encode_uint(rr.content_format)))
            for number, value in rr.options:
                resp.add_option(number, value)
            resp.payload = bytes(rr.payload)
        return resp

    def _respond(
        self,
        now: float,
        request: Message,
        addr: Hashable,
        seen: list,
        resp: Message,
        delay: float = 0.0,
        multicast: bool = False,
    ) -> None:
        self._schedule_reply(now, _Reply(addr, request, resp, seen, multicast), delay)

    def _schedule_reply(self, now: float, reply: _Reply, delay: float) -> None:
        """Send `reply` after `delay` (plus a leisure for a multicast request), with
        an empty ACK first when a CON request would wait longer than
        separate_response_after_s (unless one is already sent or due)."""
        if reply.multicast:
            request, code = reply.request, reply.response.code
            if _useless_to_group(request, reply.response) or suppressed(request, code):
                self.stats.responses_suppressed += 1  # and no leisure drawn for it
                return
            # RFC 7252 8.2: spread the members' responses over the leisure.
            delay += self.rng.uniform(0.0, self.params.default_leisure_s)
        if delay <= 0:
            self._send_reply(now, reply)
            return
        after = self.params.separate_response_after_s
        if (
            reply.request.type == Type.CON
            and after is not None
            and delay > after
            and not reply.acked
            and reply.ack_timer is None
        ):
            reply.ack_timer = self._arm(now + after, _T_EMPTY_ACK, reply)
        self._arm(now + delay, _T_REPLY, reply)

    def _send_separate_ack(self, reply: _Reply) -> None:
        """RFC 7252 5.2.2: acknowledge now, respond later."""
        reply.ack_timer = None
        reply.acked = True
        self._ack_empty(reply.addr, reply.request.message_id, reply.seen)

    def _send_reply(self, now: float, reply: _Reply) -> None:
        resp = reply.response
        addr = reply.addr
        self._disarm(reply.ack_timer)  # the response goes first: it is the ACK
        reply.ack_timer = None
        if suppressed(reply.request, resp.code):
            # RFC 7967: the client is not interested in this class of response. A CON
            # request still needs its ACK, an empty one (unless one went already).
            if reply.request.type == Type.CON and not reply.acked:
                self._ack_empty(addr, reply.request.message_id, reply.seen)
            self.stats.responses_suppressed += 1
            return
        if reply.request.type != Type.CON:
            # RFC 7252 5.2.3: a NON request gets a NON response.
            resp.type = Type.NON
            resp.message_id = self._new_mid()
            self._send(encode(resp), addr)
        elif reply.acked:
            resp.type = Type.CON
            resp.message_id = self._new_mid()
            out = _Outgoing(_SEPARATE, addr, resp.message_id, encode(resp), reply)
            self._send_con(now, out)
        else:
            # RFC 7252 5.2.1: piggybacked on the ACK, cached for duplicates (4.5).
            resp.type = Type.ACK
            resp.message_id = reply.request.message_id
            data = encode(resp)
            reply.seen[1] = data
            self._send(data, addr)

    def _well_known_handler(self, request: Message, addr: Hashable) -> ResourceResponse:
        payload = link_format(self._resources.values(), request.uri_query)
        return ResourceResponse(payload=payload, content_format=CT_LINK_FORMAT)

    # ---- notifications --------------------------------------------------------

    def _is_registered(self, obs: Observer) -> bool:
        return obs.resource.observers.get(obs.key) is obs

    def _room_for_observer(self, res: Resource, addr: Hashable) -> bool:
        params = self.params
        return (
            len(res.observers) < params.max_observers_per_resource
            and len(self._observers_by_peer.get(addr, ())) < params.max_observations_per_peer
        )

    def _con_due(self, now: float, obs: Observer) -> bool:
        """RFC 7641 4.5: is it time to make sure this observer is still there?"""
        every = self.params.observe_con_every
        return now - obs.last_con_s >= self.params.observe_con_interval_s or (
            every > 0 and obs.non_since_con + 1 >= every
        )

    def _notification(
        self, now: float, res: Resource, obs: Observer, seq: int, con: bool
    ) -> Message:
        resp, _ = self._run_handler(res, obs.request, obs.addr)
        resp.type = Type.CON if con else Type.NON
        if _is_success(resp.code):
            resp.options.append((Opt.OBSERVE, encode_uint(seq)))
            # RFC 7959 2.6: a large state goes out as its first block; the
            # client fetches the rest with GET, from the same representation.
            resp = self._response_blocks(now, obs.request, obs.addr, resp)
        return resp

    def _send_notification(self, now: float, obs: Observer, msg: Message) -> None:
        if obs.inflight is not None:
            # RFC 7641 4.5.2: never two notifications in flight to one observer;
            # the newest state replaces the one being retransmitted.
            msg.type = Type.CON
            obs.pending = msg
            return
        self._transmit_notification(now, obs, msg)

    def _transmit_notification(self, now: float, obs: Observer, msg: Message) -> None:
        msg.message_id = self._new_mid()
        out = _Outgoing(_NOTIFY, obs.addr, msg.message_id, encode(msg), obs)
        if msg.type == Type.CON:
            obs.inflight = out
            obs.last_con_s = now
            obs.non_since_con = 0
            self._send_con(now, out)
        else:
            obs.non_since_con += 1
            self._send_non(now, out)

    def _swap_in_pending(self, out: _Outgoing) -> None:
        """Retransmit the newest notification instead of the old one (RFC 7641 4.5.2)."""
        obs: Observer = out.owner
        msg = obs.pending
        if msg is None:
            return
        obs.pending = None
        old = (out.addr, out.mid)
        if self._by_mid.get(old) is out:
            del self._by_mid[old]
        msg.message_id = self._new_mid()
        out.mid = msg.message_id
        out.data = encode(msg)
        self._by_mid[(out.addr, out.mid)] = out

    def _remove_observer(self, obs: Observer) -> None:
        res = obs.resource
        if res.observers.get(obs.key) is obs:
            del res.observers[obs.key]
            same_peer = self._observers_by_peer[obs.addr]
            same_peer.remove(obs)
            if not same_peer:
                del self._observers_by_peer[obs.addr]
        inflight = obs.inflight
        if isinstance(inflight, _Outgoing):
            self._forget_out(inflight)
        obs.inflight = None
        obs.pending = None


def _useless_to_group(request: Message, resp: Message) -> bool:
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


def _check_encodable(msg: Message) -> None:
    """Raise ValueError now for what encode() would refuse later (option numbers, lengths)."""
    for number, value in msg.options:
        if not 0 <= number <= MAX_OPTION_NUMBER:
            raise ValueError(f"option number must be 0..{MAX_OPTION_NUMBER}, got {number}")
        if len(value) > 65535 + 269:
            raise ValueError(f"option {number} value of {len(value)} bytes is too long")
    if not 0 <= msg.code <= 0xFF:
        raise ValueError(f"code must be one byte, got {msg.code}")
