"""The server side of the OSCORE layer: verifying requests (RFC 8613 8.2),
protecting responses and notifications (8.3), OSCORE's error replies, and
the Echo challenge that recovers a lost replay window (Appendix B.1.2).

`ServerSide` is one part of `OscoreLayer` (layer.py), which sets up the
state it uses."""

from __future__ import annotations

import random
from collections.abc import Hashable
from typing import TYPE_CHECKING

from iotbench.proto.coap.codec import (
    CoapDecodeError,
    Code,
    Message,
    Type,
    encode,
    is_request,
)
from iotbench.proto.coap.options import Opt
from iotbench.proto.replay import ReplayWindow

from .bindings import ServerBinding
from .cache import BoundedCache
from .context import ContextExhausted, DecryptionFailed, SecurityContext
from .events import OscoreStats
from .message import CannotProtect, RequestId, aad, assemble, protect
from .option import OscoreOption, OscoreOptionError

#: What the received cache holds for a datagram: the plaintext the endpoint got,
#: the reply the layer sent, or nothing to do (an Echo challenge already answered).
PLAIN, REPLY, DONE = 0, 1, 2

#: 8.2 and 7.4: code and diagnostic payload of each OSCORE error reply.
ERRORS = {
    "decode": (Code.BAD_OPTION, "Failed to decode COSE"),
    "unknown-context": (Code.UNAUTHORIZED, "Security context not found"),
    "replay": (Code.UNAUTHORIZED, "Replay detected"),
    "decrypt": (Code.BAD_REQUEST, "Decryption failed"),
    "not-protected": (Code.UNAUTHORIZED, "OSCORE required"),
}
ECHO_BYTES = 8


def window_above(number: int, size: int) -> ReplayWindow:
    """A replay window that accepts only numbers above `number` (B.1.2: the
    repeated request's Partial IV is the lower limit of the window)."""
    window = ReplayWindow(size)
    for n in range(max(0, number - size + 1), number + 1):
        window.record(n)  # everything older is outside the window anyway
    return window


class ServerSide:
    """The server side's methods of `OscoreLayer`."""

    # The state and shared methods `OscoreLayer` provides (layer.py), declared
    # for the type checker; nothing of them exists on this class at run time.
    rng: random.Random
    require_oscore: bool
    stats: OscoreStats
    _contexts: dict[tuple[bytes | None, bytes], SecurityContext]
    _servers: BoundedCache[ServerBinding]
    _identities: BoundedCache[bytes]
    _received: BoundedCache[tuple[int, bytes]]
    _plain: list[tuple[bytes, Hashable]]

    if TYPE_CHECKING:

        def _send(self, data: bytes, addr: Hashable) -> None: ...
        def _pass_out(self, data: bytes, addr: Hashable) -> None: ...
        def _send_protected(
            self, now: float, plain: bytes, wire: bytes, addr: Hashable
        ) -> None: ...
        def _deliver(
            self, now: float, data: bytes, plain: Message, addr: Hashable, verified: bool = True
        ) -> None: ...
        def _fail(self, addr: Hashable, reason: str, detail: str) -> None: ...
        def _reply_header(self, request: Message) -> tuple[Type, int]: ...

    def _plain_request(self, now: float, msg: Message, data: bytes, addr: Hashable) -> None:
        if self.require_oscore:
            self._refuse(now, msg, data, addr, "not-protected", "a request without OSCORE")
        else:
            self.stats.plain += 1
            self._plain.append((data, addr))

    def _open_request(self, now: float, msg: Message, data: bytes, addr: Hashable) -> None:
        """8.2: find the context, check the Partial IV, decrypt, pass on."""
        try:
            kid_context, kid, piv = _request_option(msg)
        except OscoreOptionError as exc:
            self._refuse(now, msg, data, addr, "decode", str(exc))
            return
        ctx = self._contexts.get((kid_context, kid))
        if ctx is None:
            self._refuse(now, msg, data, addr, "unknown-context", f"kid {kid.hex()!r}")
            return
        number = int.from_bytes(piv, "big")
        if ctx.replay is not None and not ctx.replay.is_fresh(number):
            self._refuse(now, msg, data, addr, "replay", f"Partial IV {number}")
            return
        request = RequestId(kid, piv)
        try:
            plaintext = ctx.open(ctx.nonce(ctx.recipient_id, piv), msg.payload, aad(request))
        except DecryptionFailed as exc:
            self._refuse(now, msg, data, addr, "decrypt", str(exc))
            return
        try:
            plain = assemble(msg, plaintext)
            if not is_request(plain.code):
                raise CoapDecodeError(f"the decrypted code {plain.code} is not a request")
        except CoapDecodeError as exc:
            # Authentic, so the Partial IV is spent; the content cannot be used.
            self._record(ctx, number)
            self._refuse(now, msg, data, addr, "decode", f"plaintext: {exc}")
            return
        if ctx.replay is None:
            if ctx.echo is None or plain.get_option(Opt.ECHO) != ctx.echo:
                self._challenge(now, ctx, msg, data, addr, request)
                return
            ctx.replay = window_above(number, ctx.window_size)  # fresh: B.1.2 recovered
            ctx.echo = None
        else:
            ctx.replay.record(number)
        self._servers.put((addr, msg.token), ServerBinding(ctx, request))
        self._identities.put(addr, ctx.recipient_id)
        self._deliver(now, data, plain, addr)

    @staticmethod
    def _record(ctx: SecurityContext, number: int) -> None:
        if ctx.replay is not None:
            ctx.replay.record(number)

    def _refuse(
        self, now: float, msg: Message, data: bytes, addr: Hashable, reason: str, detail: str
    ) -> None:
        """Report, and answer with OSCORE's unprotected error (8.2), Max-Age 0."""
        self._fail(addr, reason, detail)
        code, diagnostic = ERRORS[reason]
        kind, mid = self._reply_header(msg)
        reply = Message(kind, code, mid, msg.token, [(Opt.MAX_AGE, b"")], diagnostic.encode())
        self._reply(now, data, encode(reply), addr)

    def _reply(self, now: float, data: bytes, reply: bytes, addr: Hashable) -> None:
        """Send the layer's answer to `data`, and the same again to its duplicates."""
        self.stats.replies += 1
        self._received.put((addr, data), (REPLY, reply), now, len(data) + len(reply))
        self._send(reply, addr)

    def _challenge(
        self,
        now: float,
        ctx: SecurityContext,
        msg: Message,
        data: bytes,
        addr: Hashable,
        request: RequestId,
    ) -> None:
        """B.1.2: a protected 4.01 with only Echo, under the server's own Partial IV."""
        if ctx.echo is None:
            ctx.echo = self.rng.getrandbits(8 * ECHO_BYTES).to_bytes(ECHO_BYTES, "big")
        kind, mid = self._reply_header(msg)
        answer = Message(kind, Code.UNAUTHORIZED, mid, msg.token, [(Opt.ECHO, ctx.echo)])
        try:
            piv = ctx.new_partial_iv()
        except ContextExhausted as exc:
            self._fail(addr, "exhausted", str(exc))
            return
        out = protect(ctx, answer, request, ctx.nonce(ctx.sender_id, piv), OscoreOption(piv))
        self.stats.echo_challenges += 1
        self._fail(addr, "echo-challenge", "replay window unknown: the request must show Echo")
        self._reply(now, data, encode(out), addr)

    def _protect_response(self, now: float, msg: Message, data: bytes, addr: Hashable) -> None:
        """8.3: protect a response of the endpoint with its request's binding."""
        key = (addr, msg.token)
        binding = self._servers.get(key)
        if binding is None:
            if self.require_oscore:
                # Its request came protected (nothing else reaches the endpoint),
                # but the binding is gone: sending it in the clear would leak it.
                self._fail(addr, "no-binding", f"a response on token {msg.token.hex()}")
            else:
                self._pass_out(data, addr)
            return
        ctx = binding.ctx
        notification = msg.has_option(Opt.OBSERVE)
        try:
            if notification or binding.nonce_used:
                # 4.1.3.5.2: every notification has its own Partial IV (also the
                # first: simpler, and allowed); so has any second response.
                piv = ctx.new_partial_iv()
                nonce, option = ctx.nonce(ctx.sender_id, piv), OscoreOption(piv)
            else:
                nonce = ctx.nonce(binding.request.kid, binding.request.piv)
                option = OscoreOption()
            out = protect(ctx, msg, binding.request, nonce, option)
        except (ContextExhausted, CannotProtect) as exc:
            reason = "exhausted" if isinstance(exc, ContextExhausted) else "unsupported"
            self._fail(addr, reason, str(exc))
            return
        binding.nonce_used = True
        if not notification:
            self._servers.pop(key)  # 8: the association may go after the response
        self._send_protected(now, data, encode(out), addr)


def _request_option(msg: Message) -> tuple[bytes | None, bytes, bytes]:
    """The 'kid context', 'kid' and Partial IV of a request's OSCORE option."""
    values = msg.get_options(Opt.OSCORE)
    if len(values) > 1:
        raise OscoreOptionError("the OSCORE option is repeated")
    option = OscoreOption.decode(values[0])
    if option.partial_iv is None or option.kid is None:
        raise OscoreOptionError("a request carries a Partial IV and a kid (5)")
    return option.kid_context, option.kid, option.partial_iv
