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

The endpoint is one object assembled from its layers, one module each (as
aiocoap splits its message and token managers): messaging.py (Message IDs,
retransmission, deduplication, ACK and RST), client.py (requests, tokens,
NSTART, responses, notifications received, block-wise as a client) and
server.py (resources, handlers, replies, notifications sent, block-wise as a
server); exchange.py holds what they keep per exchange. This module sets up
the state they share and offers the public calls.

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
- Options per message (CoapParams.max_options, 64): a message with more is
  one this endpoint cannot parse, so a CON gets RST (4.2) and a NON nothing
  (4.3), as for any format error. Not 4.02 (5.4.1): the decoder stops at the
  bound, so nothing after it is known, not even whether an option there is
  critical; and an RST keeps no state, where a 4.02 would be remembered for
  deduplication for EXCHANGE_LIFETIME.
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
import random
from collections import deque
from collections.abc import Hashable, Iterable, Mapping, Sequence

from iotbench.proto.errors import own_error
from iotbench.proto.retransmit import BackoffSchedule, CocoaEstimator
from iotbench.proto.timers import KIND, OBJ, TimerQueue

from .blockwise import Representations, Uploads, szx_of
from .client import ClientSide
from .codec import (
    MAX_TOKEN_LENGTH,
    BlockOption,
    CoapDecodeError,
    CoapTooManyOptions,
    Code,
    Message,
    Type,
    decode,
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
from .exchange import (
    BLOCK2_METHODS,
    QUEUED,
    SERVER_CRITICAL_OPTIONS,
    T_EMPTY_ACK,
    T_GROUP_DONE,
    T_NON_TIMEOUT,
    T_REPLY,
    T_RETRANSMIT,
    T_SEPARATE_WAIT,
    ClientRequest,
    CoapStats,
    DeferredState,
    Outgoing,
    check_encodable,
    is_success,
)
from .messaging import Messaging
from .observe import (
    OBSERVE_DEREGISTER,
    OBSERVE_REGISTER,
    Observer,
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
    normalize_path,
    to_response,
)
from .server import ServerSide

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


class CoapEndpoint(Messaging, ClientSide, ServerSide):
    """One CoAP endpoint (client, server, or both) as a sans-I/O state machine."""

    def __init__(
        self,
        rng: random.Random,
        params: CoapParams = CoapParams(),  # noqa: B008 - frozen, safe to share
        *,
        first_message_id: int | None = None,
        token_length: int | None = None,
        strict: bool = True,
    ) -> None:
        if token_length is not None:
            # Shorthand for CoapParams.token_length (validated there).
            params = dataclasses.replace(params, token_length=token_length)
        self.rng = rng
        self.params = params
        # An exception of our own in a guard: raised (a simulation), or logged and
        # counted (real sockets): proto/errors.py, own_error.
        self.strict = strict
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
        self._max_options = params.max_options
        self._non_lifetime = params.non_lifetime_s
        self._separate_wait = (
            params.exchange_lifetime_s
            if params.separate_response_timeout_s is None
            else params.separate_response_timeout_s
        )

        self._out: list[tuple[bytes, Hashable]] = []
        self._events: list[CoapEvent] = []
        self._timers = TimerQueue()

        # client side
        self._requests: dict[int, ClientRequest] = {}
        self._by_token: dict[tuple[Hashable, bytes], ClientRequest] = {}
        self._group_tokens: dict[bytes, ClientRequest] = {}  # open group requests
        self._outstanding: dict[Hashable, int] = {}
        self._queues: dict[Hashable, deque[ClientRequest]] = {}
        self._pumping: set[Hashable] = set()
        # Peers whose next request waits for a token in use (ordered: determinism).
        self._token_blocked: dict[Hashable, None] = {}
        self._estimators: dict[Hashable, CocoaEstimator] = {}

        # messages we sent, for ACK/RST matching; NON ones expire after NON_LIFETIME
        self._by_mid: dict[tuple[Hashable, int], Outgoing] = {}
        self._non_sent: deque[tuple[float, tuple[Hashable, int], Outgoing]] = deque()

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
        return self._timers.next_deadline()

    # =====================================================================
    # inputs
    # =====================================================================

    def handle_timer(self, now: float) -> None:
        """Run every deadline at or before `now`."""
        timers = self._timers
        while (entry := timers.pop_due(now)) is not None:
            kind, obj = entry[KIND], entry[OBJ]
            if kind == T_RETRANSMIT:
                self._on_retransmit_timer(now, obj)
            elif kind == T_NON_TIMEOUT or kind == T_SEPARATE_WAIT:
                obj.timer = None
                self._fail(now, obj, "timeout")
            elif kind == T_REPLY:
                self._send_reply(now, obj)
            elif kind == T_EMPTY_ACK:
                self._send_separate_ack(obj)
            elif kind == T_GROUP_DONE:
                obj.timer = None
                self._group_done(now, obj)

    def receive(self, now: float, data: bytes, addr: Hashable, *, multicast: bool = False) -> None:
        """Process one datagram from `addr`. Never raises for any input bytes.

        multicast: the datagram was sent to a group address this node joined
        (RFC 7252 8): no RST or ACK ever answers it, a response waits a leisure.
        """
        self.stats.messages_received += 1
        try:
            msg = decode(data, self._max_options)
        except CoapDecodeError as exc:
            self.stats.decode_errors += 1
            if isinstance(exc, CoapTooManyOptions):
                self.stats.too_many_options += 1
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
        except Exception as exc:  # noqa: BLE001 - a peer's bytes must never crash a node
            self.stats.internal_errors += 1
            own_error(self.strict, exc, "CoAP endpoint")

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
            if code in BLOCK2_METHODS:
                msg.block2 = BlockOption(0, False, szx)  # 2.4: early size negotiation
        check_encodable(msg)
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
        if not isinstance(state, DeferredState) or state.endpoint is not self:
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
        check_encodable(resp)
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
        if req.state == QUEUED:
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
        if req.state == QUEUED:
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
            if is_success(msg.code):
                self._send_notification(now, obs, msg)
            else:
                self._remove_observer(obs)
                self._transmit_notification(now, obs, msg)
        return len(observers)
