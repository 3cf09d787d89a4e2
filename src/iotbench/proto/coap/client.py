"""The client side of the CoAP endpoint: requests and their tokens, NSTART's
queues, responses (piggybacked, separate, group), Observe notifications, and
RFC 7959 block-wise transfers from the client's end.

`ClientSide` is one part of `CoapEndpoint` (endpoint.py), which sets up the
state it uses and offers the public calls (request, cancel, cancel_observe)."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable

from iotbench.proto.timers import cancel as cancel_timer

from .codec import (
    BlockOption,
    Code,
    Message,
    Type,
    code_name,
    encode,
)
from .events import (
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
    REQUEST,
    SENT,
    T_GROUP_DONE,
    T_NON_TIMEOUT,
    T_SEPARATE_WAIT,
    WAITING,
    ClientRequest,
    Outgoing,
    all_suppressed,
    is_success,
)
from .observe import (
    ClientObservation,
    observe_value,
)
from .options import Opt


class ClientSide:
    """The client side's methods of `CoapEndpoint`."""

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
            token = self.rng.getrandbits(8 * n).to_bytes(n, "big")
            if (addr, token) in self._by_token or token in self._group_tokens:
                continue
            if req.group_wait is not None and self._token_in_use(token):
                continue  # a group's responses come from anywhere: unique among all
            return token
        return None

    def _token_in_use(self, token: bytes) -> bool:
        return any(t == token for _, t in self._by_token)

    def _start(self, now: float, req: ClientRequest, token: bytes, parallel: int) -> None:
        addr = req.addr
        msg = req.message
        msg.token = token
        msg.message_id = self._new_mid()
        req.token = token
        req.state = SENT
        req.counted = True
        req.first_sent_s = now
        if req.started_s is None:
            req.started_s = now
        self._outstanding[addr] = parallel + 1
        self._by_token[(addr, token)] = req
        out = Outgoing(REQUEST, addr, msg.message_id, encode(msg), req)
        req.out = out
        self.stats.requests_sent += 1
        if req.group_wait is not None:
            # RFC 7390 2.7: responses from any member, until the wait is over.
            self._group_tokens[token] = req
            req.group_responses = {}
            self._send(out.data, addr)
            req.timer = self._timers.arm(now + req.group_wait, T_GROUP_DONE, req)
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

    def _fail(self, now: float, req: ClientRequest, reason: str) -> None:
        if req.state == DONE:
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

    def _await_separate(self, now: float, req: ClientRequest) -> None:
        """Empty ACK for our request: the response will come separately (RFC 7252 5.2.2)."""
        if req.state != SENT:
            return
        req.state = WAITING
        req.timer = self._timers.arm(now + self._separate_wait, T_SEPARATE_WAIT, req)
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
        if req.state == SENT and out is not None:
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
        self, now: float, req: ClientRequest, msg: Message, addr: Hashable, seen: list
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

    def _group_done(self, now: float, req: ClientRequest) -> None:
        sources = req.group_responses or {}
        self._events.append(GroupRequestDone(req.id, sum(sources.values()), len(sources)))
        self._finish(now, req)

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
            self._forget_out(out)
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

    def _settle(self, now: float, req: ClientRequest) -> None:
        """The exchange of this message is over; the request goes on (more blocks)."""
        out = req.out
        if out is not None and out.retx is not None:
            req.transmissions += out.retx.transmissions
        else:
            req.transmissions += 1
        cancel_timer(req.timer)
        req.timer = None
        self._forget_out(out)
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
            if parent.state == OBSERVING:
                self._events.append(NotificationReceived(parent.id, whole, child.notification))
        elif parent.state == BLOCKS:
            self._deliver(now, parent, whole)

    def _block_error(self, now: float, parent: ClientRequest, seq: int | None, reason: str) -> None:
        if seq is None:
            self._fail(now, parent, reason)
