"""The message layer of the CoAP endpoint (RFC 7252 section 4): Message IDs,
CON retransmission and the NON timeout, CoCoA's RTT estimates, deduplication
of what arrives, and ACK and RST matching.

`MessageLayer` is the bottom of `CoapEndpoint`'s stack (endpoint.py; docs/coap.md,
"Layers"). It is the only one that touches datagrams: it decodes what arrives
and sends what the layers above hand it. Above it are the client layer
(client.py) and the server layer (server.py); it tells them what they need
to hear through the two small interfaces below, `ClientAbove` and
`ServerAbove`, and they call its public methods.

What it owns: the next Message ID, the datagrams not yet taken by the driver,
the messages sent that an ACK or RST may still refer to (`Outgoing`, by peer
and Message ID), the dedup entries of messages received, and the CoCoA
estimator of each peer.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Hashable
from typing import Protocol

from iotbench.proto.errors import own_error
from iotbench.proto.retransmit import BackoffSchedule, CocoaEstimator, Retransmission
from iotbench.proto.timers import TimerQueue
from iotbench.proto.timers import cancel as cancel_timer

from .codec import (
    CoapDecodeError,
    CoapTooManyOptions,
    Message,
    Type,
    decode,
    encode,
    is_request,
    is_response,
)
from .exchange import (
    T_RETRANSMIT,
    ClientRequest,
    CoapStats,
    Outgoing,
    Seen,
    empty_message,
)
from .observe import Observer
from .params import CoapParams


class ClientAbove(Protocol):
    """What the message layer tells the client layer (client.py) about its requests."""

    def receive_response(self, now: float, msg: Message, addr: Hashable, seen: Seen) -> None:
        """A response in a CON or NON of its own (separate, NON, notification, group)."""

    def piggybacked_response(
        self, now: float, req: ClientRequest, out: Outgoing, msg: Message
    ) -> None:
        """A response on the ACK of `req`'s CON `out` (its Message ID matched)."""

    def empty_ack(self, now: float, req: ClientRequest) -> None:
        """An empty ACK for `req`'s CON: the response comes separately."""

    def fail(self, now: float, req: ClientRequest, reason: str) -> None:
        """`req`'s message was rejected (RST) or never acknowledged."""


class ServerAbove(Protocol):
    """What the message layer tells the server layer (server.py)."""

    def receive_request(
        self, now: float, msg: Message, addr: Hashable, seen: Seen, multicast: bool
    ) -> None:
        """A request, not a duplicate; its reply is kept in `seen` for duplicates."""

    def notification_acked(self, now: float, obs: Observer, out: Outgoing) -> None:
        """The ACK of CON notification `out` to `obs` came."""

    def before_retransmission(self, obs: Observer, out: Outgoing) -> None:
        """CON notification `out` is about to be sent again."""

    def drop_observer(self, obs: Observer) -> None:
        """A notification to `obs` was rejected (RST) or never acknowledged."""


class MessageLayer:
    """RFC 7252's messaging for one endpoint: what goes out and what comes in, by
    Message ID. Shared with the layers above (from CoapEndpoint): the
    parameters, the rng, the counters and the timer queue."""

    def __init__(
        self,
        params: CoapParams,
        rng: random.Random,
        stats: CoapStats,
        timers: TimerQueue,
        *,
        strict: bool,
        first_message_id: int | None,
    ) -> None:
        self.params = params
        self._rng = rng
        self._stats = stats
        self._timers = timers
        self._strict = strict
        if first_message_id is None:
            first_message_id = rng.randrange(0x10000)
        if not 0 <= first_message_id <= 0xFFFF:
            raise ValueError(f"first_message_id must be 0..65535, got {first_message_id}")
        self._next_mid = first_message_id
        #: CoCoA adaptive RTO (params.rto == "cocoa"), else RFC 7252's fixed schedule.
        self.cocoa = params.rto == "cocoa"
        self._rfc_schedule = BackoffSchedule(
            base_timeout_s=params.ack_timeout_s,
            max_retransmissions=params.max_retransmit,
            random_factor=params.ack_random_factor,
            backoff_factor=params.backoff_factor,
        )
        self._estimators: dict[Hashable, CocoaEstimator] = {}
        self._exchange_lifetime = params.exchange_lifetime_s
        self._non_lifetime = params.non_lifetime_s
        self._max_options = params.max_options

        self._out: list[tuple[bytes, Hashable]] = []

        # messages we sent, for ACK/RST matching; NON ones expire after NON_LIFETIME
        self._by_mid: dict[tuple[Hashable, int], Outgoing] = {}
        self._non_sent: deque[tuple[float, tuple[Hashable, int], Outgoing]] = deque()

        # messages we received: (peer, mid) -> [expiry, reply bytes or None]
        self._seen: dict[tuple[Hashable, int], Seen] = {}
        self._seen_con: deque[tuple[float, tuple[Hashable, int]]] = deque()
        self._seen_non: deque[tuple[float, tuple[Hashable, int]]] = deque()

    # The layers above; CoapEndpoint builds them on this one, then connects them.
    _client: ClientAbove
    _server: ServerAbove

    def connect(self, client: ClientAbove, server: ServerAbove) -> None:
        self._client = client
        self._server = server

    # =====================================================================
    # for the driver (through CoapEndpoint)
    # =====================================================================

    def take_datagrams(self) -> list[tuple[bytes, Hashable]]:
        """Datagrams produced since the last call, in order (drains)."""
        out = self._out
        self._out = []
        return out

    def rto_estimator(self, addr: Hashable) -> CocoaEstimator:
        """The CoCoA estimator kept for `addr` (created on first use)."""
        est = self._estimators.get(addr)
        if est is None:
            est = self._estimators[addr] = CocoaEstimator()
        return est

    def receive(self, now: float, data: bytes, addr: Hashable, multicast: bool) -> None:
        """Process one datagram from `addr`. Never raises for any input bytes."""
        stats = self._stats
        stats.messages_received += 1
        try:
            msg = decode(data, self._max_options)
        except CoapDecodeError as exc:
            stats.decode_errors += 1
            if isinstance(exc, CoapTooManyOptions):
                stats.too_many_options += 1
            if not multicast:
                self._reject_undecodable(data, addr)
            return
        try:
            self.expire(now)
            t = msg.type
            if multicast:
                self._on_multicast(now, msg, addr)
            elif t == Type.CON or t == Type.NON:
                self._on_con_or_non(now, msg, addr)
            elif t == Type.ACK:
                self._on_ack(now, msg, addr)
            else:
                self._on_rst(now, msg, addr)
        # (Not `exc` again: compiled, a name keeps the type of its first except.)
        except Exception as error:  # noqa: BLE001 - a peer's bytes must never crash a node
            stats.internal_errors += 1
            own_error(self._strict, error, "CoAP endpoint")

    def retransmission_due(self, now: float, out: Outgoing) -> None:
        """The retransmission timer of CON `out` fired: send it again, or give up."""
        out.timer = None
        retx = out.retx
        assert retx is not None
        if not retx.on_timeout(now):
            self.forget(out)
            self._give_up(now, out)
            return
        self._stats.retransmissions += 1
        owner = out.owner
        if isinstance(owner, Observer):
            self._server.before_retransmission(owner, out)
        self.send(out.data, out.addr)
        out.timer = self._timers.arm(retx.deadline_s, T_RETRANSMIT, out)

    # =====================================================================
    # for the layers above: sending
    # =====================================================================

    def send(self, data: bytes, addr: Hashable) -> None:
        """A datagram no ACK or RST will be matched to (a NON response, a group request)."""
        self._out.append((data, addr))
        self._stats.messages_sent += 1

    def new_mid(self) -> int:
        mid = self._next_mid
        self._next_mid = (mid + 1) & 0xFFFF
        return mid

    def send_con(self, now: float, out: Outgoing, parallel: int = 0) -> None:
        """First transmission of a CON and its retransmission timer (RFC 7252 4.2).

        parallel: how many other requests to the peer are outstanding (CoCoA)."""
        self._by_mid[(out.addr, out.mid)] = out
        retx = Retransmission(self._schedule(now, out.addr, parallel), self._rng)
        out.retx = retx
        self.send(out.data, out.addr)
        out.timer = self._timers.arm(retx.start(now), T_RETRANSMIT, out)

    def send_non(self, now: float, out: Outgoing) -> None:
        """A NON that an RST may refer to within NON_LIFETIME."""
        key = (out.addr, out.mid)
        self._by_mid[key] = out
        self._non_sent.append((now + self._non_lifetime, key, out))
        self.send(out.data, out.addr)

    def renumber(self, out: Outgoing, msg: Message) -> None:
        """Send `msg` in place of what `out` carried, under a new Message ID, from the
        next retransmission on (keeping its counter and timeout)."""
        old = (out.addr, out.mid)
        if self._by_mid.get(old) is out:
            del self._by_mid[old]
        msg.message_id = self.new_mid()
        out.mid = msg.message_id
        out.data = encode(msg)
        self._by_mid[(out.addr, out.mid)] = out

    def forget(self, out: Outgoing | None) -> None:
        """Stop retransmitting `out` and stop matching ACK/RST to it."""
        if out is None:
            return
        cancel_timer(out.timer)
        out.timer = None
        key = (out.addr, out.mid)
        if self._by_mid.get(key) is out:
            del self._by_mid[key]

    def acknowledged(self, now: float, out: Outgoing) -> None:
        """An ACK (or a response standing in for one) arrived for CON `out`."""
        self.forget(out)
        if self.cocoa and out.retx is not None:
            # draft-ietf-core-cocoa 4.2: an RTT sample from every acknowledged CON.
            retx = out.retx
            self.rto_estimator(out.addr).on_exchange(
                now, now - retx.first_sent_s, retx.retransmissions
            )

    def non_exchange_done(self, now: float, addr: Hashable, sent_s: float) -> None:
        """A NON request sent at `sent_s` got its response: unambiguous, so it feeds
        CoCoA's strong estimator."""
        if self.cocoa:
            self.rto_estimator(addr).on_exchange(now, now - sent_s, 0)

    def non_timeout(self, now: float, addr: Hashable, parallel: int) -> float:
        """How long a NON request to `addr` waits for its response (endpoint.py)."""
        params = self.params
        if params.non_timeout_s is not None:
            return params.non_timeout_s
        if self.cocoa:
            return self._schedule(now, addr, parallel).max_wait_s
        return params.max_transmit_wait_s

    def expire(self, now: float) -> None:
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

    # =====================================================================
    # for the layers above: replying to what came
    # =====================================================================

    def reply(self, data: bytes, addr: Hashable, seen: Seen) -> None:
        """Send our reply to a message received (a piggybacked response), and keep it
        for its duplicates (RFC 7252 4.5)."""
        seen[1] = data
        self.send(data, addr)

    def reset(self, addr: Hashable, mid: int, seen: Seen | None = None) -> None:
        """Reject a message with RST (RFC 7252 4.2/4.3)."""
        data = empty_message(Type.RST, mid)
        if seen is not None:
            seen[1] = data
        self._stats.resets_sent += 1
        self.send(data, addr)

    def ack_empty(self, addr: Hashable, mid: int, seen: Seen) -> None:
        self.reply(empty_message(Type.ACK, mid), addr, seen)

    # =====================================================================
    # internals: sending
    # =====================================================================

    def _schedule(self, now: float, addr: Hashable, parallel: int = 0) -> BackoffSchedule:
        """Retransmission schedule of a new CON towards `addr`."""
        if not self.cocoa:
            return self._rfc_schedule
        p = self.params
        return self.rto_estimator(addr).schedule(
            now, p.max_retransmit, p.ack_random_factor, parallel
        )

    def _give_up(self, now: float, out: Outgoing) -> None:
        owner = out.owner
        if isinstance(owner, ClientRequest):
            self._client.fail(now, owner, "max-retransmit")
        elif isinstance(owner, Observer):
            # RFC 7641 4.5: a CON notification that is never acknowledged ends the observation.
            self._server.drop_observer(owner)
        # A separate response that is never acknowledged is simply dropped.

    # =====================================================================
    # internals: deduplication
    # =====================================================================

    def _remember(self, now: float, key: tuple[Hashable, int], confirmable: bool) -> Seen:
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

    # =====================================================================
    # internals: receiving
    # =====================================================================

    def _reject_undecodable(self, data: bytes, addr: Hashable) -> None:
        """RFC 7252 4.2: a CON with a message format error is rejected with RST.

        Only when the 4-byte header itself is readable (version 1, type CON);
        anything else is silently dropped.
        """
        if len(data) >= 4 and data[0] >> 6 == 1 and (data[0] >> 4) & 3 == Type.CON:
            self.reset(addr, (data[2] << 8) | data[3])

    def _on_multicast(self, now: float, msg: Message, addr: Hashable) -> None:
        """A message sent to a group: only NON requests are served (RFC 7252 8.1)."""
        if msg.type != Type.NON or not is_request(msg.code):
            if msg.type == Type.CON and is_request(msg.code):
                self._stats.multicast_con_ignored += 1
            else:
                self._stats.format_errors += 1
            return
        key = (addr, msg.message_id)
        if key in self._seen:
            self._stats.duplicates += 1
            return
        self._server.receive_request(now, msg, addr, self._remember(now, key, False), True)

    def _on_con_or_non(self, now: float, msg: Message, addr: Hashable) -> None:
        key = (addr, msg.message_id)
        seen = self._seen.get(key)
        con = msg.type == Type.CON
        if seen is not None:
            self._stats.duplicates += 1
            if con and seen[1] is not None:
                self.send(seen[1], addr)
            return
        code = msg.code
        if code == 0:
            if con:
                # RFC 7252 4.3: an empty CON is a ping, answered with RST.
                self.reset(addr, msg.message_id, self._remember(now, key, True))
            else:
                self._stats.format_errors += 1  # 4.3: a NON is never empty
            return
        seen = self._remember(now, key, con)
        if is_request(code):
            self._server.receive_request(now, msg, addr, seen, False)
        elif is_response(code):
            self._client.receive_response(now, msg, addr, seen)
        else:
            # Reserved code class (1, 6, 7): reject (RFC 7252 4.2, 4.3).
            self._stats.format_errors += 1
            if con:
                self.reset(addr, msg.message_id, seen)

    def _on_ack(self, now: float, msg: Message, addr: Hashable) -> None:
        out = self._by_mid.get((addr, msg.message_id))
        if out is None or out.retx is None:
            self._stats.unexpected += 1
            return
        code = msg.code
        owner = out.owner
        if code == 0:
            self.acknowledged(now, out)
            if isinstance(owner, ClientRequest):
                self._client.empty_ack(now, owner)
            elif isinstance(owner, Observer):
                self._server.notification_acked(now, owner, out)
            return
        if not is_response(code):
            self._stats.format_errors += 1  # an ACK carries a response or nothing
            return
        if not isinstance(owner, ClientRequest):
            self._stats.unexpected += 1
            return
        self._client.piggybacked_response(now, owner, out, msg)

    def _on_rst(self, now: float, msg: Message, addr: Hashable) -> None:
        if msg.code != 0:
            self._stats.format_errors += 1  # RFC 7252 4.2: RST is always Empty
            return
        out = self._by_mid.get((addr, msg.message_id))
        if out is None:
            self._stats.unexpected += 1
            return
        self._stats.resets_received += 1
        self.forget(out)
        owner = out.owner
        if isinstance(owner, ClientRequest):
            self._client.fail(now, owner, "reset")
        elif isinstance(owner, Observer):
            # RFC 7641 3.6: RST in reply to a notification deregisters the client.
            self._server.drop_observer(owner)
