"""The client layer of the CoAP endpoint: requests and their tokens, NSTART's
queues, responses (piggybacked, separate, group), Observe notifications, and
RFC 7959 block-wise transfers from the client's end.

`ClientLayer` sits on the message layer (messaging.py) in `CoapEndpoint`'s
stack (endpoint.py; docs/coap.md, "Layers"). It owns every request of the
endpoint (by id, by peer and token, by group token), the NSTART queues and
counts per peer, and the events for the application. It sends through the
message layer's methods, and hears back through `ClientAbove`
(messaging.py): a response, an ACK, a failure. CoapEndpoint's request,
cancel and cancel_observe are its calls."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Hashable, Iterable, Sequence

from iotbench.proto.timers import TimerQueue
from iotbench.proto.timers import cancel as cancel_timer

from .blockwise import szx_of
from .codec import (
    MAX_TOKEN_LENGTH,
    BlockOption,
    Code,
    Message,
    Type,
    code_name,
    encode,
    is_request,
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
    BLOCKS,
    CLIENT_CRITICAL_OPTIONS,
    DONE,
    OBSERVING,
    QUEUED,
    SENT,
    T_GROUP_DONE,
    T_NON_TIMEOUT,
    T_SEPARATE_WAIT,
    WAITING,
    ClientRequest,
    CoapStats,
    Outgoing,
    Seen,
    all_suppressed,
    check_encodable,
    has_bad_critical,
    is_success,
)
from .messaging import MessageLayer
from .observe import (
    OBSERVE_DEREGISTER,
    OBSERVE_REGISTER,
    ClientObservation,
    observe_value,
)
from .options import Opt
from .params import CoapParams


class ClientLayer:
    """The requests of one endpoint, over its message layer. Shared with the other
    layers (from CoapEndpoint): the parameters, the rng, the counters and the
    timer queue."""

    def __init__(
        self,
        messaging: MessageLayer,
        params: CoapParams,
        rng: random.Random,
        stats: CoapStats,
        timers: TimerQueue,
    ) -> None:
        self._messaging = messaging
        self.params = params
        self._rng = rng
        self._stats = stats
        self._timers = timers
        self._separate_wait = (
            params.exchange_lifetime_s
            if params.separate_response_timeout_s is None
            else params.separate_response_timeout_s
        )
        self._events: list[CoapEvent] = []
        self._next_request_id = 1
        self._requests: dict[int, ClientRequest] = {}
        self._by_token: dict[tuple[Hashable, bytes], ClientRequest] = {}
        self._group_tokens: dict[bytes, ClientRequest] = {}  # open group requests
        self._outstanding: dict[Hashable, int] = {}
        self._queues: dict[Hashable, deque[ClientRequest]] = {}
        self._pumping: set[Hashable] = set()
        # Peers whose next request waits for a token in use (ordered: determinism).
        self._token_blocked: dict[Hashable, None] = {}

    # =====================================================================
    # for the application (through CoapEndpoint)
    # =====================================================================

    def take_events(self) -> list[CoapEvent]:
        """Application events produced since the last call, in order (drains)."""
        ev = self._events
        self._events = []
        return ev

    def next_event(self) -> CoapEvent | None:
        """The oldest undelivered event, or None."""
        return self._events.pop(0) if self._events else None

    def request(
        self,
        now: float,
        addr: Hashable,
        code: int,
        path: str | Sequence[str],
        *,
        confirmable: bool,
        payload: bytes,
        options: Iterable[tuple[int, bytes | str | int]],
        observe: bool,
        token: bytes | None,
        query: Sequence[str],
        multicast: bool,
        wait_s: float | None,
    ) -> int:
        """Build and start a request (see CoapEndpoint.request)."""
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
        msg.set_uri_path(path)
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
        self._messaging.expire(now)
        rid = self._submit(now, addr, msg, token, group_wait=wait_s)
        if upload is not None and rid in self._requests:
            self._requests[rid].upload = upload
        return rid

    def cancel(self, now: float, request_id: int) -> bool:
        """Forget a request without telling the peer (see CoapEndpoint.cancel)."""
        req = self._requests.get(request_id)
        if req is None:
            return False
        if req.state == QUEUED:
            self._unqueue(req)
        else:
            self._finish(now, req)
        return True

    def cancel_observe(self, now: float, request_id: int, proactive: bool) -> int | None:
        """End an observation (see CoapEndpoint.cancel_observe)."""
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

    def peer_unreachable(self, now: float, addr: Hashable) -> None:
        """Fail every request to `addr` at once ("unreachable")."""
        for req in [r for r in self._requests.values() if r.addr == addr and r.parent is None]:
            self.fail(now, req, "unreachable")

    # =====================================================================
    # timers (from CoapEndpoint.handle_timer)
    # =====================================================================

    def timed_out(self, now: float, req: ClientRequest) -> None:
        """No response in time: the NON timeout, or the wait after an empty ACK."""
        req.timer = None
        self.fail(now, req, "timeout")

    def group_done(self, now: float, req: ClientRequest) -> None:
        """A group request's wait for responses is over."""
        req.timer = None
        sources = req.group_responses or {}
        self._events.append(GroupRequestDone(req.id, sum(sources.values()), len(sources)))
        self._finish(now, req)

    # =====================================================================
    # from the message layer (ClientAbove)
    # =====================================================================

    def fail(self, now: float, req: ClientRequest, reason: str) -> None:
        """End `req` with RequestFailed (or, for a block fetch, the request it serves)."""
        if req.state == DONE:
            return
        parent = req.parent
        if parent is not None:
            # A block fetch failed: the response it completes failed with it; a
            # notification's blocks are simply lost (the observation goes on).
            self._finish(now, req)
            parent.child = None
            if req.notification is None:
                block = req.message.block2
                assert block is not None  # a block fetch always asks for a block
                self.fail(now, parent, f"{reason} (block {block.num})")
            return
        self._stats.requests_failed += 1
        self._events.append(RequestFailed(req.id, reason))
        self._finish(now, req)

    def empty_ack(self, now: float, req: ClientRequest) -> None:
        """Empty ACK for our request: the response will come separately (RFC 7252 5.2.2)."""
        if req.state != SENT:
            return
        req.state = WAITING
        req.timer = self._timers.arm(now + self._separate_wait, T_SEPARATE_WAIT, req)
        self._release(now, req)

    def piggybacked_response(
        self, now: float, req: ClientRequest, out: Outgoing, msg: Message
    ) -> None:
        """A response on the ACK of our CON `out`."""
        # RFC 7252 5.3.2: a piggybacked response must match Message ID and token.
        if msg.token != req.token:
            self._stats.unexpected += 1
            return
        if has_bad_critical(msg.options, CLIENT_CRITICAL_OPTIONS):
            self._stats.bad_options += 1  # rejecting an ACK is silently ignoring it
            return
        self._messaging.acknowledged(now, out)
        self._on_response(now, req, msg)

    def receive_response(self, now: float, msg: Message, addr: Hashable, seen: Seen) -> None:
        """A response in its own CON or NON: separate, NON, or a notification."""
        messaging = self._messaging
        req = self._by_token.get((addr, msg.token))
        if req is None or req.group_wait is not None:
            group = self._group_tokens.get(msg.token)
            if group is not None:
                self._on_group_response(now, group, msg, addr, seen)
                return
        if req is None:
            # RFC 7252 5.3.2: a response nobody waits for is rejected; for an
            # unwanted notification this is RFC 7641 3.6's reactive cancellation.
            self._stats.unexpected += 1
            messaging.reset(addr, msg.message_id, seen)
            return
        if has_bad_critical(msg.options, CLIENT_CRITICAL_OPTIONS):
            self._stats.bad_options += 1
            messaging.reset(addr, msg.message_id, seen)
            return
        if msg.type == Type.CON:
            messaging.ack_empty(addr, msg.message_id, seen)
        if req.dereg and observe_value(msg) is not None:
            return  # a late notification of the observation being cancelled
        out = req.out
        if req.state == SENT and out is not None:
            if out.retx is not None:
                if out.timer is not None:
                    # The response implies our CON arrived; its ACK was lost or is late.
                    messaging.acknowledged(now, out)
            else:
                messaging.forget(out)
                messaging.non_exchange_done(now, addr, req.first_sent_s)
        self._on_response(now, req, msg)

    # =====================================================================
    # requests, their tokens and NSTART
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
        req = ClientRequest(rid, addr, msg, token)
        req.dereg = dereg
        req.group_wait = group_wait
        self._requests[rid] = req
        self._enqueue(now, req)
        return rid

    def _enqueue(self, now: float, req: ClientRequest, first: bool = False) -> None:
        """Queue `req` for its peer (at the head with `first`) and start what NSTART allows."""
        queue = self._queues.get(req.addr)
        if queue is None:
            queue = self._queues[req.addr] = deque()
        if first:
            queue.appendleft(req)
        else:
            queue.append(req)
        self._pump(now, req.addr)

    def _unqueue(self, req: ClientRequest) -> None:
        queue = self._queues.get(req.addr)
        if queue is not None:
            queue.remove(req)
            if not queue:
                del self._queues[req.addr]
        req.state = DONE
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

    def _pick_token(self, now: float, req: ClientRequest) -> bytes | None:
        addr = req.addr
        if req.fixed_token is not None:
            if req.fixed_token in self._group_tokens or (
                req.group_wait is not None and self._token_in_use(req.fixed_token)
            ):
                return None
            holder = self._by_token.get((addr, req.fixed_token))
            if holder is None:
                return req.fixed_token
            if holder.state == OBSERVING:
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
            token = self._rng.getrandbits(8 * n).to_bytes(n, "big")
            if (addr, token) in self._by_token or token in self._group_tokens:
                continue
            if req.group_wait is not None and self._token_in_use(token):
                continue  # a group's responses come from anywhere: unique among all
            return token
        return None

    def _token_in_use(self, token: bytes) -> bool:
        return any(t == token for _, t in self._by_token)

    def _start(self, now: float, req: ClientRequest, token: bytes, parallel: int) -> None:
        messaging = self._messaging
        addr = req.addr
        msg = req.message
        msg.token = token
        msg.message_id = messaging.new_mid()
        req.token = token
        req.state = SENT
        req.counted = True
        req.first_sent_s = now
        if req.started_s is None:
            req.started_s = now
        self._outstanding[addr] = parallel + 1
        self._by_token[(addr, token)] = req
        out = Outgoing(addr, msg.message_id, encode(msg), req)
        req.out = out
        self._stats.requests_sent += 1
        if req.group_wait is not None:
            # RFC 7390 2.7: responses from any member, until the wait is over.
            self._group_tokens[token] = req
            req.group_responses = {}
            messaging.send(out.data, addr)
            req.timer = self._timers.arm(now + req.group_wait, T_GROUP_DONE, req)
            return
        if msg.type == Type.CON:
            messaging.send_con(now, out, parallel)
        elif all_suppressed(msg):
            # RFC 7967: a NON request that wants no response is done once sent.
            messaging.send_non(now, out)
            self._release(now, req)
            self._finish(now, req)
        else:
            messaging.send_non(now, out)
            timeout = messaging.non_timeout(now, addr, parallel)
            req.timer = self._timers.arm(now + timeout, T_NON_TIMEOUT, req)

    def _release(self, now: float, req: ClientRequest) -> None:
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

    def _finish(self, now: float, req: ClientRequest) -> None:
        """Forget a request or observation entirely (and the block fetch it waits for)."""
        if req.state == DONE:
            return
        if req.state == QUEUED:
            self._unqueue(req)
            return
        req.state = DONE
        child = req.child
        if child is not None:
            req.child = None
            child.parent = None
            self._finish(now, child)
        cancel_timer(req.timer)
        req.timer = None
        self._messaging.forget(req.out)
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

    def _on_group_response(
        self, now: float, req: ClientRequest, msg: Message, addr: Hashable, seen: Seen
    ) -> None:
        """A member's response to a group request: report it, keep waiting.

        Every response is reported, a member's second one too (a message
        repeated by the network was already dropped by Message ID): which to
        use is the application's choice, as RFC 7390's successor
        draft-ietf-core-groupcomm-bis puts it."""
        if has_bad_critical(msg.options, CLIENT_CRITICAL_OPTIONS):
            self._stats.bad_options += 1
            self._messaging.reset(addr, msg.message_id, seen)  # RFC 7252 5.4.1: rejected
            return
        if msg.type == Type.CON:
            self._messaging.ack_empty(addr, msg.message_id, seen)
        sources = req.group_responses
        assert sources is not None
        sources[addr] = sources.get(addr, 0) + 1
        self._events.append(GroupResponse(req.id, msg, addr))

    def _on_response(self, now: float, req: ClientRequest, msg: Message) -> None:
        """Deliver a matched response or notification to the application."""
        if req.parent is not None:
            self._on_child_block(now, req, msg)
            return
        if req.state == OBSERVING:
            self._on_notification(now, req, msg)
            return
        if req.state == BLOCKS:
            return  # a duplicate of the first block; its child fetches the rest
        seq = observe_value(msg)
        if req.dereg and seq is not None:
            return  # a late notification of the observation being cancelled
        if req.upload is not None and msg.code == Code.CONTINUE:
            self._next_upload_block(now, req, msg)
            return
        block = msg.block2
        if block is not None and block.more and req.message.code in BLOCK2_METHODS:
            if is_success(msg.code):
                # RFC 7959 2.4: fetch the other blocks, then deliver the whole body.
                self._settle(now, req)
                req.state = BLOCKS
                self._fetch_blocks(now, req, msg, None)
                return
        self._deliver(now, req, msg)

    def _deliver(self, now: float, req: ClientRequest, msg: Message) -> None:
        out = req.out
        if out is None and req.transmissions:
            transmissions = req.transmissions  # every block's, counted as they ended
        else:
            transmissions = out.retx.transmissions if out is not None and out.retx else 1
            transmissions += req.transmissions
        started = req.started_s if req.started_s is not None else req.first_sent_s
        self._events.append(ResponseReceived(req.id, msg, now - started, transmissions))
        seq = observe_value(msg)
        if req.observe and seq is not None and is_success(msg.code):
            req.state = OBSERVING
            req.observation = ClientObservation(seq, now)
            cancel_timer(req.timer)
            req.timer = None
            self._messaging.forget(out)
            self._release(now, req)
        else:
            self._finish(now, req)

    def _on_notification(self, now: float, req: ClientRequest, msg: Message) -> None:
        seq = observe_value(msg)
        if seq is None or not is_success(msg.code):
            # RFC 7641 3.2: an error or a response without Observe ends the observation.
            self._events.append(NotificationReceived(req.id, msg, None, final=True))
            self._finish(now, req)
            return
        assert req.observation is not None
        if not req.observation.accept(seq, now):
            self._stats.stale_notifications += 1
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

    def _settle(self, now: float, req: ClientRequest) -> None:
        """The exchange of this message is over; the request goes on (more blocks)."""
        out = req.out
        if out is not None and out.retx is not None:
            req.transmissions += out.retx.transmissions
        else:
            req.transmissions += 1
        cancel_timer(req.timer)
        req.timer = None
        self._messaging.forget(out)
        req.out = None
        if req.counted:
            self._release(now, req)

    def _next_block(self, now: float, req: ClientRequest, message: Message) -> None:
        """Send the request's next block: a new message, the same token, first in line."""
        self._settle(now, req)
        key = (req.addr, req.token)
        if self._by_token.get(key) is req:
            del self._by_token[key]
        req.fixed_token = req.token
        req.message = message
        req.state = QUEUED
        self._enqueue(now, req, first=True)

    def _next_upload_block(self, now: float, req: ClientRequest, msg: Message) -> None:
        """2.31 Continue: the next Block1 block, at the server's size if it asks for less."""
        sent = req.message
        mine, theirs = sent.block1, msg.block1
        if mine is None or theirs is None:
            self.fail(now, req, "blockwise: 2.31 Continue without Block1")
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

    def _fetch_blocks(
        self, now: float, parent: ClientRequest, first: Message, seq: int | None
    ) -> None:
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
        child = ClientRequest(self._next_request_id, parent.addr, nxt, None)
        self._next_request_id += 1
        child.parent = parent
        child.first = first
        child.body = bytearray(first.payload)
        child.notification = seq
        parent.child = child
        self._requests[child.id] = child
        self._enqueue(now, child)

    def _on_child_block(self, now: float, child: ClientRequest, msg: Message) -> None:
        parent = child.parent
        assert parent is not None and child.body is not None and child.first is not None
        block = msg.block2
        if not is_success(msg.code) or block is None or block.offset != len(child.body):
            self.fail(now, child, f"blockwise: {code_name(msg.code)} for a block")
            return
        child.body += msg.payload
        if len(child.body) > self.params.max_body_bytes:
            self.fail(now, child, "blockwise: the body is larger than max_body_bytes")
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
            if parent.state == OBSERVING:
                self._events.append(NotificationReceived(parent.id, whole, child.notification))
        elif parent.state == BLOCKS:
            self._deliver(now, parent, whole)

    def _block_error(self, now: float, parent: ClientRequest, seq: int | None, reason: str) -> None:
        if seq is None:
            self.fail(now, parent, reason)
