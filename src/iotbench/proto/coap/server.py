"""The server side of the CoAP endpoint: requests to resources and their
handlers, critical options, deferred and separate responses, group requests,
RFC 7959 block-wise transfers from the server's end, and RFC 7641
notifications to observers.

`ServerSide` is one part of `CoapEndpoint` (endpoint.py), which sets up the
state it uses and offers the public calls (add_resource, notify, respond)."""

from __future__ import annotations

from collections.abc import Hashable

from iotbench.proto.errors import own_error
from iotbench.proto.timers import cancel as cancel_timer

from .blockwise import MAX_SZX, block_of, szx_of, uri_key
from .codec import (
    BlockOption,
    Code,
    Message,
    Type,
    encode,
    encode_uint,
    invalid_options,
    is_request,
    is_response,
)
from .exchange import (
    BLOCK2_SERVED,
    NOTIFY,
    SEPARATE,
    T_EMPTY_ACK,
    T_REPLY,
    DeferredState,
    Outgoing,
    ServerReply,
    asks_later_block_of_an_update,
    check_encodable,
    is_success,
    suppressed,
    useless_to_group,
)
from .observe import (
    OBSERVE_DEREGISTER,
    OBSERVE_REGISTER,
    Observer,
    observe_value,
)
from .options import Opt
from .resources import (
    CT_LINK_FORMAT,
    WELL_KNOWN_CORE,
    Deferred,
    Resource,
    ResourceResponse,
    link_format,
    to_response,
)


class ServerSide:
    """The server side's methods of `CoapEndpoint`."""

    # =====================================================================
    # server side
    # =====================================================================

    def _has_bad_critical(self, options: list[tuple[int, bytes]], known: frozenset[int]) -> bool:
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
        if whole is not msg:
            last_block1 = BlockOption(msg.block1.num, False, msg.block1.szx)  # 2.5: the last
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
        seen: list,
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
                self._send_separate_ack(reply)
            else:
                reply.ack_timer = self._timers.arm(now + after, T_EMPTY_ACK, reply)

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
            self.stats.handler_errors += 1
            own_error(self.strict, exc, f"CoAP resource {res.path}")
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
        self._schedule_reply(now, ServerReply(addr, request, resp, seen, multicast), delay)

    def _schedule_reply(self, now: float, reply: ServerReply, delay: float) -> None:
        """Send `reply` after `delay` (plus a leisure for a multicast request), with
        an empty ACK first when a CON request would wait longer than
        separate_response_after_s (unless one is already sent or due)."""
        if reply.multicast:
            request, code = reply.request, reply.response.code
            if useless_to_group(request, reply.response) or suppressed(request, code):
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
            reply.ack_timer = self._timers.arm(now + after, T_EMPTY_ACK, reply)
        self._timers.arm(now + delay, T_REPLY, reply)

    def _send_separate_ack(self, reply: ServerReply) -> None:
        """RFC 7252 5.2.2: acknowledge now, respond later."""
        reply.ack_timer = None
        reply.acked = True
        self._ack_empty(reply.addr, reply.request.message_id, reply.seen)

    def _send_reply(self, now: float, reply: ServerReply) -> None:
        resp = reply.response
        addr = reply.addr
        cancel_timer(reply.ack_timer)  # the response goes first: it is the ACK
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
            out = Outgoing(SEPARATE, addr, resp.message_id, encode(resp), reply)
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
        msg.message_id = self._new_mid()
        out = Outgoing(NOTIFY, obs.addr, msg.message_id, encode(msg), obs)
        if msg.type == Type.CON:
            obs.inflight = out
            obs.last_con_s = now
            obs.non_since_con = 0
            self._send_con(now, out)
        else:
            obs.non_since_con += 1
            self._send_non(now, out)

    def _swap_in_pending(self, out: Outgoing) -> None:
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
        if isinstance(inflight, Outgoing):
            self._forget_out(inflight)
        obs.inflight = None
        obs.pending = None
