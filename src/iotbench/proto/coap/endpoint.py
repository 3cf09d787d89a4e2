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

The endpoint is a stack of three layer objects, one module each (as aiocoap
separates its message manager from its token manager), each owning its own
state (docs/coap.md, "Layers"):

- `MessageLayer` (messaging.py): Message IDs, CON retransmission, CoCoA's
  estimates, deduplication, ACK and RST matching; the only one that decodes
  and sends datagrams.
- `ClientLayer` (client.py), on it: requests, tokens, NSTART, responses,
  notifications received, block-wise as a client; the application's events.
- `ServerLayer` (server.py), on it too: resources, handlers, replies,
  observers and notifications sent, block-wise as a server.

The two above call the message layer's methods; it calls back through the
small interfaces `ClientAbove` and `ServerAbove` (messaging.py). They share
only what CoapEndpoint hands each at construction: the parameters, the rng
(one stream, so the order of draws is the order of events), the counters
(CoapStats) and the timer queue (one, so that deadlines that fall together
run in the order they were armed, whichever layer armed them). exchange.py
holds what passes between them. `CoapEndpoint` builds the stack and is the
public face: its calls go to the layer they belong to.

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
from collections.abc import Hashable, Iterable, Mapping, Sequence

from iotbench.proto.retransmit import CocoaEstimator
from iotbench.proto.timers import KIND, OBJ, TimerQueue

from .client import ClientLayer
from .events import (
    CoapEvent,
    GroupRequestDone,
    GroupResponse,
    NotificationReceived,
    RequestFailed,
    ResponseReceived,
)
from .exchange import (
    SERVER_CRITICAL_OPTIONS,
    T_EMPTY_ACK,
    T_GROUP_DONE,
    T_NON_TIMEOUT,
    T_REPLY,
    T_RETRANSMIT,
    T_SEPARATE_WAIT,
    CoapStats,
)
from .messaging import MessageLayer
from .params import CoapParams
from .resources import (
    Deferred,
    Handler,
    Resource,
    ResourceResponse,
)
from .server import ServerLayer

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


class CoapEndpoint:
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
        self._timers = TimerQueue()
        #: The layers, bottom up (read them for diagnosis; drive the endpoint).
        self.message_layer = MessageLayer(
            params,
            rng,
            self.stats,
            self._timers,
            strict=strict,
            first_message_id=first_message_id,
        )
        self.client_layer = ClientLayer(self.message_layer, params, rng, self.stats, self._timers)
        self.server_layer = ServerLayer(
            self.message_layer, params, rng, self.stats, self._timers, strict=strict
        )
        self.message_layer.connect(self.client_layer, self.server_layer)

    @property
    def known_options(self) -> frozenset[int]:
        """Critical request options accepted by the server; extend it when a
        handler implements more (e.g. If-Match)."""
        return self.server_layer.known_options

    @known_options.setter
    def known_options(self, options: frozenset[int]) -> None:
        self.server_layer.known_options = options

    # =====================================================================
    # outputs
    # =====================================================================

    def datagrams_to_send(self, now: float | None = None) -> list[tuple[bytes, Hashable]]:
        """Datagrams produced since the last call, in order (drains). `now` is unused."""
        return self.message_layer.take_datagrams()

    def events(self) -> list[CoapEvent]:
        """Application events produced since the last call, in order (drains)."""
        return self.client_layer.take_events()

    def next_event(self) -> CoapEvent | None:
        """The oldest undelivered event, or None."""
        return self.client_layer.next_event()

    def next_timer(self) -> float | None:
        """Absolute time of the earliest pending deadline, or None."""
        return self._timers.next_deadline()

    # =====================================================================
    # inputs
    # =====================================================================

    def handle_timer(self, now: float) -> None:
        """Run every deadline at or before `now`, each by the layer that armed it."""
        timers = self._timers
        while (entry := timers.pop_due(now)) is not None:
            kind, obj = entry[KIND], entry[OBJ]
            if kind == T_RETRANSMIT:
                self.message_layer.retransmission_due(now, obj)
            elif kind == T_NON_TIMEOUT or kind == T_SEPARATE_WAIT:
                self.client_layer.timed_out(now, obj)
            elif kind == T_REPLY:
                self.server_layer.send_reply(now, obj)
            elif kind == T_EMPTY_ACK:
                self.server_layer.send_separate_ack(obj)
            elif kind == T_GROUP_DONE:
                self.client_layer.group_done(now, obj)

    def receive(self, now: float, data: bytes, addr: Hashable, *, multicast: bool = False) -> None:
        """Process one datagram from `addr`. Never raises for any input bytes.

        multicast: the datagram was sent to a group address this node joined
        (RFC 7252 8): no RST or ACK ever answers it, a response waits a leisure.
        """
        self.message_layer.receive(now, data, addr, multicast)

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
        return self.client_layer.request(
            now,
            addr,
            code,
            path,
            confirmable=confirmable,
            payload=payload,
            options=options,
            observe=observe,
            token=token,
            query=query,
            multicast=multicast,
            wait_s=wait_s,
        )

    def cancel(self, now: float, request_id: int) -> bool:
        """Forget a request or observation without telling the peer; no event follows.

        Later responses or notifications for it are answered with RST.
        """
        return self.client_layer.cancel(now, request_id)

    def cancel_observe(self, now: float, request_id: int, proactive: bool = True) -> int | None:
        """End an observation (RFC 7641 3.6).

        proactive: send a GET with Observe: 1 and the registration's token and
        options; returns the request id of that deregistration, whose response
        arrives as ResponseReceived. Otherwise forget it locally; the next
        notification is answered with RST (reactive), and None is returned.
        """
        return self.client_layer.cancel_observe(now, request_id, proactive)

    def rto_estimator(self, addr: Hashable) -> CocoaEstimator:
        """The CoCoA estimator kept for `addr` (created on first use)."""
        return self.message_layer.rto_estimator(addr)

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
        return self.server_layer.add_resource(
            path,
            handler,
            observable=observable,
            methods=methods,
            notify_confirmable=notify_confirmable,
            content_format=content_format,
            attributes=attributes,
        )

    def remove_resource(self, path: str | Sequence[str]) -> bool:
        """Stop serving `path` (its observers are dropped); False if it was not served."""
        return self.server_layer.remove_resource(path)

    def observers(self, path: str | Sequence[str]) -> int:
        """How many observers `path` has."""
        return self.server_layer.observers(path)

    def respond(self, now: float, deferred: Deferred, result: object) -> None:
        """Answer a request whose handler returned `deferred`; `result` is anything
        a handler may return (ResourceResponse, (code, payload...), bytes, str).

        The answer leaves now, or ResourceResponse.delay_s later, as a
        handler's would; to a multicast request, after a leisure drawn now.
        ValueError for a Deferred this endpoint did not take, one already
        answered, or a result that is not a response (the Deferred can then
        still be answered)."""
        self.server_layer.respond(now, deferred, result)

    def notify(
        self, now: float, path: str | Sequence[str], *, confirmable: bool | None = None
    ) -> int:
        """Push the current state of `path` to all its observers; returns how many.

        confirmable: CON or NON for this notification; None uses the
        resource's notify_confirmable. All observers get the same new sequence
        number. A handler answer other than 2.xx ends each observation
        (RFC 7641 3.2: the error goes out without Observe).
        """
        return self.server_layer.notify(now, path, confirmable)

    def peer_unreachable(self, now: float, addr: Hashable) -> int:
        """The network said `addr` is unreachable (an ICMP port or host unreachable
        for something we sent it): end its observations (RFC 7641 4.5), and fail
        our requests to it at once ("unreachable") rather than after the
        give-up. Returns how many observations ended."""
        gone = self.server_layer.peer_unreachable(addr)
        self.client_layer.peer_unreachable(now, addr)
        return gone
