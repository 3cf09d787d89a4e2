"""RFC 7252's messaging layer of the CoAP endpoint (section 4): Message IDs,
CON retransmission and the NON timeout, deduplication of what arrives, and
ACK and RST matching.

`Messaging` is one part of `CoapEndpoint` (endpoint.py), which sets up the
state it uses; client.py and server.py are the request/response layer above."""

from __future__ import annotations

from collections.abc import Hashable

from iotbench.proto.retransmit import BackoffSchedule, Retransmission
from iotbench.proto.timers import cancel as cancel_timer

from .codec import (
    Message,
    Type,
    is_request,
    is_response,
)
from .exchange import (
    CLIENT_CRITICAL_OPTIONS,
    NOTIFY,
    REQUEST,
    T_RETRANSMIT,
    ClientRequest,
    Outgoing,
    empty_message,
)
from .observe import (
    Observer,
)


class Messaging:
    """The messaging layer's methods of `CoapEndpoint`."""

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

    def _send_con(self, now: float, out: Outgoing, parallel: int = 0) -> None:
        """First transmission of a CON and its retransmission timer (RFC 7252 4.2)."""
        self._by_mid[(out.addr, out.mid)] = out
        retx = Retransmission(self._schedule(now, out.addr, parallel), self.rng)
        out.retx = retx
        self._send(out.data, out.addr)
        out.timer = self._timers.arm(retx.start(now), T_RETRANSMIT, out)

    def _send_non(self, now: float, out: Outgoing) -> None:
        """A NON that an RST may refer to within NON_LIFETIME."""
        key = (out.addr, out.mid)
        self._by_mid[key] = out
        self._non_sent.append((now + self._non_lifetime, key, out))
        self._send(out.data, out.addr)

    def _forget_out(self, out: Outgoing | None) -> None:
        """Stop retransmitting `out` and stop matching ACK/RST to it."""
        if out is None:
            return
        cancel_timer(out.timer)
        out.timer = None
        key = (out.addr, out.mid)
        if self._by_mid.get(key) is out:
            del self._by_mid[key]

    def _on_retransmit_timer(self, now: float, out: Outgoing) -> None:
        out.timer = None
        retx = out.retx
        assert retx is not None
        if not retx.on_timeout(now):
            self._forget_out(out)
            self._give_up(now, out)
            return
        self.stats.retransmissions += 1
        if out.kind == NOTIFY:
            self._swap_in_pending(out)
        self._send(out.data, out.addr)
        out.timer = self._timers.arm(retx.deadline_s, T_RETRANSMIT, out)

    def _give_up(self, now: float, out: Outgoing) -> None:
        if out.kind == REQUEST:
            self._fail(now, out.owner, "max-retransmit")
        elif out.kind == NOTIFY:
            # RFC 7641 4.5: a CON notification that is never acknowledged ends the observation.
            self._remove_observer(out.owner)
        # A separate response that is never acknowledged is simply dropped.

    def _rtt_sample(self, now: float, out: Outgoing) -> None:
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
        data = empty_message(Type.RST, mid)
        if seen is not None:
            seen[1] = data
        self.stats.resets_sent += 1
        self._send(data, addr)

    def _ack_empty(self, addr: Hashable, mid: int, seen: list) -> None:
        data = empty_message(Type.ACK, mid)
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
            if out.kind == REQUEST:
                self._await_separate(now, out.owner)
            return
        if not is_response(code):
            self.stats.format_errors += 1  # an ACK carries a response or nothing
            return
        if out.kind != REQUEST:
            self.stats.unexpected += 1
            return
        req: ClientRequest = out.owner
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
        if out.kind == REQUEST:
            self._fail(now, out.owner, "reset")
        elif out.kind == NOTIFY:
            # RFC 7641 3.6: RST in reply to a notification deregisters the client.
            self._remove_observer(out.owner)

    def _acknowledged(self, now: float, out: Outgoing) -> None:
        """An ACK (or a response standing in for one) arrived for CON `out`."""
        self._forget_out(out)
        self._rtt_sample(now, out)
        if out.kind == NOTIFY:
            obs: Observer = out.owner
            if obs.inflight is out:
                obs.inflight = None
                pending = obs.pending
                if pending is not None and self._is_registered(obs):
                    obs.pending = None
                    self._transmit_notification(now, obs, pending)
