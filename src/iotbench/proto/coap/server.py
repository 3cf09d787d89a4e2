"""The server layer of the CoAP endpoint: requests to resources and their
handlers, critical options, deferred and separate responses, group requests,
RFC 7959 block-wise transfers from the server's end, and RFC 7641
notifications to observers.

`ServerLayer` sits on the message layer (messaging.py) in `CoapEndpoint`'s
stack (endpoint.py; docs/coap.md, "Layers"). It owns the resources and their
observers, the Block1 uploads and Block2 representations in progress, and
the replies that leave later than their request came. It sends through the
message layer's methods and hears back through `ServerAbove` (messaging.py):
a request, a notification's ACK, RST or failure. CoapEndpoint's
add_resource, remove_resource, observers, notify and respond are its calls."""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Literal, overload

from iotbench.proto.errors import own_error
from iotbench.proto.timers import TimerQueue
from iotbench.proto.timers import cancel as cancel_timer

from .blockwise import MAX_SZX, Representations, Uploads, block_of, szx_of, uri_key
from .codec import (
    BlockOption,
    Code,
    Message,
    Type,
    encode,
    encode_uint,
    is_response,
)
from .exchange import (
    BLOCK2_SERVED,
    SERVER_CRITICAL_OPTIONS,
    T_EMPTY_ACK,
    T_REPLY,
    CoapStats,
    DeferredState,
    Outgoing,
    Seen,
    ServerReply,
    asks_later_block_of_an_update,
    check_encodable,
    has_bad_critical,
    is_success,
    suppressed,
    useless_to_group,
)
from .messaging import MessageLayer
from .observe import (
    OBSERVE_DEREGISTER,
    OBSERVE_REGISTER,
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


class ServerLayer:
    """The resources of one endpoint, served over its message layer. Shared with the
    other layers (from CoapEndpoint): the parameters, the rng, the counters and
    the timer queue."""

    def __init__(
        self,
        messaging: MessageLayer,
        params: CoapParams,
        rng: random.Random,
        stats: CoapStats,
        timers: TimerQueue,
        *,
        strict: bool,
    ) -> None:
        self._messaging = messaging
        self.params = params
        self._rng = rng
        self._stats = stats
        self._timers = timers
        # An exception of our own in a handler: raised (a simulation), or logged
        # and answered with 5.00 (real sockets): proto/errors.py, own_error.
        self._strict = strict
        #: Critical request options accepted; CoapEndpoint.known_options.
        self.known_options: frozenset[int] = SERVER_CRITICAL_OPTIONS
        self._resources: dict[str, Resource] = {}
        self._well_known = Resource(
            WELL_KNOWN_CORE,
            self._well_known_handler,
            methods=frozenset({Code.GET}),
            content_format=CT_LINK_FORMAT,
        )
        #: Every observer of this server by peer address, over all resources.
        self._observers_by_peer: dict[Hashable, list[Observer]] = {}
        #: RFC 7959 transfers in progress.
        self._uploads = Uploads(params.exchange_lifetime_s, params.max_body_bytes)
        self._representations = Representations(params.exchange_lifetime_s)

    # =====================================================================
    # for the application (through CoapEndpoint)
    # =====================================================================

    def add_resource(
        self,
        path: str | Sequence[str],
        handler: Handler,
        *,
        observable: bool,
        methods: Iterable[int] | None,
        notify_confirmable: bool,
        content_format: int | None,
        attributes: Mapping[str, str | int | None] | None,
    ) -> Resource:
        """Serve `path` with `handler` (see CoapEndpoint.add_resource)."""
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
                self.drop_observer(obs)
        self._resources[key] = res
        return res

    def remove_resource(self, path: str | Sequence[str]) -> bool:
        """Stop serving `path`; False if it was not served."""
        res = self._resources.pop(normalize_path(path), None)
        if res is None:
            return False
        for obs in list(res.observers.values()):
            self.drop_observer(obs)
        return True

    def observers(self, path: str | Sequence[str]) -> int:
        """How many observers `path` has."""
        res = self._resources.get(normalize_path(path))
        return 0 if res is None else len(res.observers)

    def peer_unreachable(self, addr: Hashable) -> int:
        """End the observations of `addr` (RFC 7641 4.5); returns how many."""
        gone = list(self._observers_by_peer.get(addr, ()))
        for obs in gone:
            self.drop_observer(obs)
        self._stats.observers_unreachable += len(gone)
        return len(gone)

    def notify(self, now: float, path: str | Sequence[str], confirmable: bool | None) -> int:
        """Push the state of `path` to its observers (see CoapEndpoint.notify)."""
        res = self._resources.get(normalize_path(path))
        if res is None:
            raise KeyError(f"no resource at {normalize_path(path)!r}")
        if not res.observers:
            return 0
        self._messaging.expire(now)
        con = res.notify_confirmable if confirmable is None else confirmable
        seq = res.next_seq()
        observers = list(res.observers.values())
        for obs in observers:
            msg = self._notification(now, res, obs, seq, con or self._con_due(now, obs))
            if is_success(msg.code):
                self._send_notification(now, obs, msg)
            else:
                self.drop_observer(obs)
                self._transmit_notification(now, obs, msg)
        return len(observers)

    def respond(self, now: float, deferred: Deferred, result: object) -> None:
        """Answer a deferred request (see CoapEndpoint.respond)."""
        state = deferred._state
        if not isinstance(state, DeferredState) or state.server is not self:
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
        self._messaging.expire(now)
        reply = state.reply
        request = reply.request
        resp = self._response_to(request, rr.code, rr)
        check_encodable(resp)
        if state.block1 is not None:
            resp.block1 = state.block1
        reply.response = self._response_blocks(now, request, reply.addr, resp)
        delay = float(rr.delay_s)
        self._schedule_reply(now, reply, delay if delay > 0 else 0.0)

    # =====================================================================
    # timers (from CoapEndpoint.handle_timer)
    # =====================================================================

    def send_separate_ack(self, reply: ServerReply) -> None:
        """RFC 7252 5.2.2: acknowledge now, respond later."""
        reply.ack_timer = None
        reply.acked = True
        self._messaging.ack_empty(reply.addr, reply.request.message_id, reply.seen)

    def send_reply(self, now: float, reply: ServerReply) -> None:
        """The response of `reply` is ready: piggybacked, separate or NON."""
        resp = reply.response
        assert resp is not None  # a deferred reply is scheduled once answered
        addr = reply.addr
        cancel_timer(reply.ack_timer)  # the response goes first: it is the ACK
        reply.ack_timer = None
        messaging = self._messaging
        if suppressed(reply.request, resp.code):
            # RFC 7967: the client is not interested in this class of response. A CON
            # request still needs its ACK, an empty one (unless one went already).
            if reply.request.type == Type.CON and not reply.acked:
                messaging.ack_empty(addr, reply.request.message_id, reply.seen)
            self._stats.responses_suppressed += 1
            return
        if reply.request.type != Type.CON:
            # RFC 7252 5.2.3: a NON request gets a NON response.
            resp.type = Type.NON
            resp.message_id = messaging.new_mid()
            messaging.send(encode(resp), addr)
        elif reply.acked:
            resp.type = Type.CON
            resp.message_id = messaging.new_mid()
            out = Outgoing(addr, resp.message_id, encode(resp), reply)
            messaging.send_con(now, out)
        else:
            # RFC 7252 5.2.1: piggybacked on the ACK, cached for duplicates (4.5).
            resp.type = Type.ACK
            resp.message_id = reply.request.message_id
            messaging.reply(encode(resp), addr, reply.seen)

    # =====================================================================
    # from the message layer (ServerAbove)
    # =====================================================================

    def notification_acked(self, now: float, obs: Observer, out: Outgoing) -> None:
        """RFC 7641 4.5.2: the next notification may go, the newest one waiting first."""
        if obs.inflight is out:
            obs.inflight = None
            pending = obs.pending
            if pending is not None and self._is_registered(obs):
                obs.pending = None
                self._transmit_notification(now, obs, pending)

    def before_retransmission(self, obs: Observer, out: Outgoing) -> None:
        """Retransmit the newest notification instead of the old one (RFC 7641 4.5.2)."""
        msg = obs.pending
        if msg is None:
            return
        obs.pending = None
        self._messaging.renumber(out, msg)

    def drop_observer(self, obs: Observer) -> None:
        """Remove `obs` from its resource's observers and stop its notifications."""
        res = obs.resource
        if res.observers.get(obs.key) is obs:
            del res.observers[obs.key]
            same_peer = self._observers_by_peer[obs.addr]
            same_peer.remove(obs)
            if not same_peer:
                del self._observers_by_peer[obs.addr]
        inflight = obs.inflight
        if isinstance(inflight, Outgoing):
            self._messaging.forget(inflight)
        obs.inflight = None
        obs.pending = None

    def receive_request(
        self, now: float, msg: Message, addr: Hashable, seen: Seen, multicast: bool
    ) -> None:
        """A request, not a duplicate: answer it, now or later."""
        con = msg.type == Type.CON
        if multicast and has_bad_critical(msg.options, self.known_options):
            self._stats.bad_options += 1  # never an RST to a multicast request (8.2)
            return
        if has_bad_critical(msg.options, self.known_options):
            self._stats.bad_options += 1
            if con:
                self._respond(now, msg, addr, seen, self._response_to(msg, Code.BAD_OPTION))
            else:
                self._messaging.reset(addr, msg.message_id, seen)  # 5.4.1: reject the NON
            return
        if any(number == Opt.PROXY_URI or number == Opt.PROXY_SCHEME for number, _ in msg.options):
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
        block1 = msg.block1
        if whole is not msg and block1 is not None:
            last_block1 = BlockOption(block1.num, False, block1.szx)  # 2.5: the last
        kept = self._later_block(now, msg, addr)
        if kept is None and asks_later_block_of_an_update(msg):
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
        if block is None or block.num == 0 or msg.code not in BLOCK2_SERVED:
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
        seen: Seen,
        block1: BlockOption | None,
        multicast: bool,
    ) -> None:
        """A handler will answer later (respond()); acknowledge a CON meanwhile."""
        reply = ServerReply(addr, msg, None, seen, multicast)
        state = DeferredState(self, reply, block1)
        deferred.request, deferred.addr, deferred._state = msg, addr, state
        if msg.type == Type.CON:
            after = self.params.separate_response_after_s
            if after is None:
                self.send_separate_ack(reply)
            else:
                reply.ack_timer = self._timers.arm(now + after, T_EMPTY_ACK, reply)

    # ---- RFC 7959 block-wise transfers, server side ---------------------------------

    def _request_body(self, now: float, msg: Message, addr: Hashable, seen: Seen) -> Message | None:
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
        if request.code not in BLOCK2_SERVED or not is_success(resp.code):
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
        if value == OBSERVE_REGISTER and res.observable and is_success(resp.code):
            obs = res.observers.get(key)
            if obs is None and self.params.observe_one_per_peer:
                for other in [o for o in res.observers.values() if o.addr == addr]:
                    self.drop_observer(other)
            if obs is None:
                if not self._room_for_observer(res, addr):
                    # 4.1: a server that will not add an observer answers as to a
                    # plain GET; the missing Observe tells the client.
                    self._stats.observers_refused += 1
                    return
                obs = res.observers[key] = Observer(addr, msg.token, res, msg, now)
                self._observers_by_peer.setdefault(addr, []).append(obs)
            else:
                obs.request = msg
            resp.options.append((Opt.OBSERVE, encode_uint(res.next_seq())))
        elif value in (OBSERVE_REGISTER, OBSERVE_DEREGISTER):
            obs = res.observers.get(key)
            if obs is not None:
                self.drop_observer(obs)

    @overload
    def _run_handler(
        self, res: Resource, msg: Message, addr: Hashable, deferrable: Literal[False] = False
    ) -> tuple[Message, float]: ...

    @overload
    def _run_handler(
        self, res: Resource, msg: Message, addr: Hashable, deferrable: Literal[True]
    ) -> tuple[Message, float] | Deferred: ...

    def _run_handler(
        self, res: Resource, msg: Message, addr: Hashable, deferrable: bool = False
    ) -> tuple[Message, float] | Deferred:
        """Call the handler; a failure is the node's own error (proto/errors.py): raised
        in a simulation, a 5.00 on real sockets (a handler never takes the server down).

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
            check_encodable(resp)
            delay = float(rr.delay_s)
            return resp, delay if delay > 0 else 0.0
        except Exception as exc:  # noqa: BLE001
            self._stats.handler_errors += 1
            own_error(self._strict, exc, f"CoAP resource {res.path}")
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
        seen: Seen,
        resp: Message,
        delay: float = 0.0,
        multicast: bool = False,
    ) -> None:
        self._schedule_reply(now, ServerReply(addr, request, resp, seen, multicast), delay)

    def _schedule_reply(self, now: float, reply: ServerReply, delay: float) -> None:
        """Send `reply` after `delay` (plus a leisure for a multicast request), with
        an empty ACK first when a CON request would wait longer than
        separate_response_after_s (unless one is already sent or due)."""
        if reply.multicast:
            request, resp = reply.request, reply.response
            assert resp is not None  # a deferred reply is scheduled once answered
            if useless_to_group(request, resp) or suppressed(request, resp.code):
                self._stats.responses_suppressed += 1  # and no leisure drawn for it
                return
            # RFC 7252 8.2: spread the members' responses over the leisure.
            delay += self._rng.uniform(0.0, self.params.default_leisure_s)
        if delay <= 0:
            self.send_reply(now, reply)
            return
        after = self.params.separate_response_after_s
        if (
            reply.request.type == Type.CON
            and after is not None
            and delay > after
            and not reply.acked
            and reply.ack_timer is None
        ):
            reply.ack_timer = self._timers.arm(now + after, T_EMPTY_ACK, reply)
        self._timers.arm(now + delay, T_REPLY, reply)

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
        if is_success(resp.code):
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
        msg.message_id = self._messaging.new_mid()
        out = Outgoing(obs.addr, msg.message_id, encode(msg), obs)
        if msg.type == Type.CON:
            obs.inflight = out
            obs.last_con_s = now
            obs.non_since_con = 0
            self._messaging.send_con(now, out)
        else:
            obs.non_since_con += 1
            self._messaging.send_non(now, out)
