"""OSCORE (RFC 8613) as a datagram layer under a CoAP endpoint.

    layer = OscoreLayer(random.Random(seed))
    layer.add_peer(server_addr, SecurityContext(secret, b"", b"\\x01"))   # client role
    layer.add_context(SecurityContext(secret, b"\\x01", b""))            # server role
    secured = SecuredEndpoint(CoapEndpoint(rng), layer)                # proto/coap/secured.py

The endpoint stays a plain CoAP endpoint: it sends and receives plaintext
CoAP datagrams, and the layer turns requests and responses into OSCORE
messages and back (message.py), one datagram at a time, with the CoAP codec.
Empty messages (ACK, RST, ping) pass untouched: OSCORE protects the
request/response layer, not the messaging layer (RFC 8613 1, 4.2).

Contexts: a client context per peer address (`add_peer`, or `any_peer` for
all); server contexts by (ID Context, Recipient ID), found from a request's
'kid context' and 'kid' (`add_context`). A context may be both, as 3.1
allows. Requests to a peer without a context go out unprotected, and so do
the responses to them.

What the layer keeps, each table bounded so that no flood grows memory:

- Bindings, token -> (context, request kid and Partial IV) (8; bindings.py):
  the client's to verify responses and notifications, the server's to
  protect them. At most `max_bindings` each; the oldest goes first, and an
  observation whose binding went can no longer be protected or verified.
- The protected bytes of what the endpoint sent, by the exact plaintext
  datagram, for EXCHANGE_LIFETIME: a retransmission of a CON, or the
  endpoint's answer to a duplicate request, goes out as the very bytes sent
  first, so a retransmission never takes a new Partial IV.
- What every datagram received became (its plaintext, or the layer's reply),
  by the exact bytes, for EXCHANGE_LIFETIME: a duplicate skips OSCORE (its
  Partial IV was seen: it would be taken for a replay) and reaches the
  endpoint, whose RFC 7252 deduplication answers it as the first time.

A received datagram is read only up to `max_options` options (CoapParams'
default, 64): one with more goes to the endpoint as it came, which stops at
its own bound and rejects it (RST for a CON), so a datagram of 32,700 options
costs the layer no more than the endpoint (docs/coap.md, "Options per
message").

A server (`require_oscore`, the default) refuses requests without OSCORE
with an unprotected 4.01 and Max-Age 0. OSCORE's own errors are unprotected
too, as 8.2 says, each with Max-Age 0 and the RFC's diagnostic: 4.02 "Failed
to decode COSE", 4.01 "Security context not found", 4.01 "Replay detected",
4.00 "Decryption failed". Failures are reported as `OscoreFailure` events.

Echo (RFC 9175, option 252) recovers a server's replay window that a reboot
lost (Appendix B.1.2): while a context's window is unknown, a request that
decrypts is answered with a protected 4.01 carrying only Echo, with the
server's own Partial IV; the client's repeat carrying the Echo starts the
window just above its Partial IV. The client's repeat lives in this layer,
once per request: the stored request goes again with the Echo option and a
new Partial IV, on the same token (RFC 9175 allows it: OSCORE binds the
response to the new request). It needs a Message ID, which only the
endpoint hands out; the layer takes its own half the ID space away from the
endpoint's latest, which the endpoint (one ID per message) reaches only
after 32,768 messages. When the 4.01 came piggybacked on the ACK of a CON,
the repeat is a CON, sent at once, that rides the endpoint's own
retransmissions (each retransmission of the original is replaced by the
repeat's bytes, and the repeat's ACK is handed to the endpoint as the
original's), so the exchange keeps the endpoint's timing; otherwise the
repeat is one NON.

Not built: Group OSCORE (multicast passes the layer untouched, see
secured.py), Proxy-Uri and outer Block options (message.py), OSCORE over
HTTP or reliable transports, and Appendix B.2's context re-derivation.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable

from iotbench.proto.coap.codec import (
    CoapDecodeError,
    Message,
    Type,
    decode,
    encode,
    is_request,
    is_response,
)
from iotbench.proto.coap.options import Opt
from iotbench.proto.coap.params import CoapParams
from iotbench.proto.crypto_work import Work
from iotbench.proto.sansio import DrainedQueues

from .bindings import ClientBinding, ServerBinding
from .cache import BoundedCache
from .client import ClientSide
from .context import SecurityContext
from .events import REASONS, OscoreFailure, OscoreStats
from .server import PLAIN, REPLY, ServerSide

#: RFC 7252 4.8.2's EXCHANGE_LIFETIME with its default parameters (247 s).
LIFETIME_S = CoapParams().exchange_lifetime_s
#: The layer's own Message IDs are this far from the endpoint's latest.
OWN_MID_OFFSET = 0x8000


class OscoreLayer(DrainedQueues, ServerSide, ClientSide):
    """The OSCORE layer; implements proto/coap/secured.py's DatagramSecurity."""

    def __init__(
        self,
        rng: random.Random,
        *,
        any_peer: SecurityContext | None = None,
        require_oscore: bool = True,
        max_bindings: int = 1024,
        cache_entries: int = 256,
        cache_bytes: int = 512 * 1024,
        lifetime_s: float = LIFETIME_S,
        max_options: int = CoapParams.max_options,
    ) -> None:
        self.rng = rng  # Echo values only
        self.max_options = max_options
        self.require_oscore = require_oscore
        self._peers: dict[Hashable, SecurityContext] = {}
        self._any_peer = any_peer
        self._contexts: dict[tuple[bytes | None, bytes], SecurityContext] = {}
        self._clients: BoundedCache[ClientBinding] = BoundedCache(max_bindings)
        self._servers: BoundedCache[ServerBinding] = BoundedCache(max_bindings)
        # The Recipient ID of each peer's latest verified request (peer_identity).
        self._identities: BoundedCache[bytes] = BoundedCache(max_bindings)
        self._sent: BoundedCache[bytes] = BoundedCache(cache_entries, lifetime_s, cache_bytes)
        self._received: BoundedCache[tuple[int, bytes]] = BoundedCache(
            cache_entries, lifetime_s, cache_bytes
        )
        # Echo repeats riding the endpoint's retransmissions (client.py).
        self._repeats: BoundedCache[bytes] = BoundedCache(64, lifetime_s, cache_bytes)
        self._repeat_mids: BoundedCache[int] = BoundedCache(64, lifetime_s)
        self._caches = (self._sent, self._received, self._repeats, self._repeat_mids)
        self._out: list[tuple[bytes, Hashable]] = []
        self._plain: list[tuple[bytes, Hashable]] = []
        self._events: list[object] = []
        self._last_mid = 0  # the endpoint's latest Message ID of a CON or NON
        self._own = 0
        self.stats = OscoreStats()
        #: Told (plaintext, protected message) for every message protected: an
        #: observer's way to recognise it (the simulator's metrics).
        self.on_sealed: Callable[[bytes, bytes], None] | None = None

    @property
    def work(self) -> Work:
        """The AEAD work of every context this layer holds (proto/crypto_work.py)."""
        contexts = {id(c): c for c in (*self._peers.values(), *self._contexts.values())}
        if self._any_peer is not None:
            contexts[id(self._any_peer)] = self._any_peer
        return sum((c.meter.total for c in contexts.values()), Work())

    # ---- configuration -------------------------------------------------------------

    def add_peer(self, addr: Hashable, ctx: SecurityContext) -> None:
        """Protect requests to `addr` with `ctx` (the client role); `any_peer` is
        the context of every peer without its own (a client of one server)."""
        self._peers[addr] = ctx

    def _peer_context(self, addr: Hashable) -> SecurityContext | None:
        return self._peers.get(addr, self._any_peer)

    def add_context(self, ctx: SecurityContext) -> None:
        """Verify requests whose 'kid' is ctx's Recipient ID (the server role).

        A request names the context by 'kid' and, when ctx has an ID
        Context, by 'kid context' too; as aiocoap does, a context with an ID
        Context is found only by a request that carries it."""
        key = (ctx.id_context, ctx.recipient_id)
        if key in self._contexts and self._contexts[key] is not ctx:
            raise ValueError("two contexts with one ID Context and Recipient ID")
        self._contexts[key] = ctx

    def peer_identity(self, addr: Hashable) -> str | None:
        """Who `addr` proved to be: the Sender ID (hex) of the context its latest
        verified request used, or None. The endpoint handles a request right
        after the layer opened it, so in a handler this names that request's
        sender."""
        kid = self._identities.get(addr)
        return None if kid is None else kid.hex()

    # ---- DatagramSecurity ----------------------------------------------------------

    def outgoing(self, now: float, data: bytes, addr: Hashable) -> None:
        self._expire(now)
        if len(data) >= 4:
            kind, mid = (data[0] >> 4) & 3, (data[2] << 8) | data[3]
            if kind in (Type.CON, Type.NON):
                self._last_mid = mid
            repeat = self._repeats.get((addr, mid)) if kind == Type.CON else None
            if repeat is not None:
                self._send(repeat, addr)  # a retransmission of a request repeated with Echo
                return
        cached = self._sent.get((addr, data))
        if cached is not None:
            self.stats.duplicates += 1
            self._send(cached, addr)
            return
        try:
            msg = decode(data)
        except CoapDecodeError:
            msg = None  # not ours to judge; the endpoint never sends such bytes
        if msg is not None and is_request(msg.code):
            self._protect_request(now, msg, data, addr)
        elif msg is not None and is_response(msg.code):
            self._protect_response(now, msg, data, addr)
        else:
            self._pass_out(data, addr)

    def incoming(self, now: float, data: bytes, addr: Hashable) -> None:
        self._expire(now)
        seen = self._received.get((addr, data))
        if seen is not None:
            self.stats.duplicates += 1
            kind, out = seen
            if kind == PLAIN:
                self._plain.append((out, addr))
            elif kind == REPLY:
                self._send(out, addr)
            return
        try:
            msg = decode(data, self.max_options)
        except CoapDecodeError:
            # A message format error (too many options included) is the endpoint's to
            # reject (RST for a CON).
            self._plain.append((data, addr))
            return
        if msg.code == 0:
            self._plain.append((self._endpoint_mid(msg, data, addr), addr))
        elif is_request(msg.code) and msg.type in (Type.CON, Type.NON):
            if msg.has_option(Opt.OSCORE):
                self._open_request(now, msg, data, addr)
            else:
                self._plain_request(now, msg, data, addr)
        elif is_response(msg.code) and msg.type != Type.RST:
            self._incoming_response(now, msg, data, addr)
        else:
            self._plain.append((data, addr))  # reserved codes: the endpoint rejects them

    def next_timer(self) -> float | None:
        return None  # tables expire as calls come; nothing waits for a time

    def handle_timer(self, now: float) -> None:
        self._expire(now)

    # ---- shared by the client and server sides -------------------------------------

    def _expire(self, now: float) -> None:
        for cache in self._caches:
            cache.expire(now)

    def _send(self, data: bytes, addr: Hashable) -> None:
        self._out.append((data, addr))

    def _pass_out(self, data: bytes, addr: Hashable) -> None:
        self.stats.plain += 1
        self._send(data, addr)

    def _send_protected(self, now: float, plain: bytes, wire: bytes, addr: Hashable) -> None:
        self.stats.protected += 1
        self._sent.put((addr, plain), wire, now, len(plain) + len(wire))
        if self.on_sealed is not None:
            self.on_sealed(plain, wire)
        self._send(wire, addr)

    def _deliver(
        self, now: float, data: bytes, plain: Message, addr: Hashable, verified: bool = True
    ) -> None:
        """Hand a message to the endpoint, and remember it for duplicates."""
        out = encode(plain)
        if verified:
            self.stats.opened += 1
        else:
            self.stats.plain += 1
        self._received.put((addr, data), (PLAIN, out), now, len(data) + len(out))
        self._plain.append((out, addr))

    def _fail(self, addr: Hashable, reason: str, detail: str) -> None:
        assert reason in REASONS, reason
        self.stats.failures += 1
        self._events.append(OscoreFailure(addr, reason, detail))

    def _own_mid(self) -> int:
        """A Message ID for the layer's own messages, far from the endpoint's."""
        self._own = (self._own + 1) & 0xFF
        return (self._last_mid + OWN_MID_OFFSET + self._own) & 0xFFFF

    def _reply_header(self, request: Message) -> tuple[Type, int]:
        """Type and Message ID of an answer to `request`: piggybacked on the ACK of
        a CON, or a NON of our own for a NON (RFC 7252 5.2)."""
        if request.type == Type.CON:
            return Type.ACK, request.message_id
        return Type.NON, self._own_mid()

    def _ack(self, msg: Message, addr: Hashable) -> None:
        """Acknowledge a CON the endpoint will not see, so that its sender stops."""
        if msg.type == Type.CON:
            self._send(encode(Message.empty(Type.ACK, msg.message_id)), addr)
