"""The client side of the OSCORE layer: protecting requests (RFC 8613 8.1),
verifying responses and notifications (8.4, 7.4.1), and repeating a request
with the server's Echo (Appendix B.1.2, RFC 9175 2.3).

Notifications: the client keeps a Notification Number per observation and
drops a notification whose Partial IV is not above it, and all but one
without a Partial IV (7.4.1). The endpoint orders notifications by their
Observe value (RFC 7641 3.4), and 4.1.3.5.2 lets the client set it from the
Partial IV: it gets the Partial IV plus one, modulo 2^24, and a notification
without a Partial IV gets 0, so that it counts as the oldest, as 4.1.3.5.2
asks. The server's outer Observe value is ignored (4.1.3.5.2).

`ClientSide` is one part of `OscoreLayer` (layer.py), which sets up the
state it uses."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from iotbench.proto.coap.codec import (
    CoapDecodeError,
    Code,
    Message,
    Type,
    decode,
    encode,
    is_response,
)
from iotbench.proto.coap.options import Opt

from .bindings import ClientBinding
from .cache import BoundedCache
from .context import ContextExhausted, DecryptionFailed, SecurityContext
from .events import OscoreStats
from .message import CannotProtect, RequestId, aad, assemble, protect
from .option import OscoreOption, OscoreOptionError
from .server import DONE

_OBSERVE_MASK = 0xFFFFFF  # RFC 7641: Observe is a 24-bit value


class ClientSide:
    """The client side's methods of `OscoreLayer`."""

    # The state and shared methods `OscoreLayer` provides (layer.py), declared
    # for the type checker; nothing of them exists on this class at run time.
    stats: OscoreStats
    _clients: BoundedCache[ClientBinding]
    _received: BoundedCache[tuple[int, bytes]]
    _repeats: BoundedCache[bytes]
    _repeat_mids: BoundedCache[int]
    _plain: list[tuple[bytes, Hashable]]

    if TYPE_CHECKING:

        def _peer_context(self, addr: Hashable) -> SecurityContext | None: ...
        def _send(self, data: bytes, addr: Hashable) -> None: ...
        def _pass_out(self, data: bytes, addr: Hashable) -> None: ...
        def _send_protected(
            self, now: float, plain: bytes, wire: bytes, addr: Hashable
        ) -> None: ...
        def _deliver(
            self, now: float, data: bytes, plain: Message, addr: Hashable, verified: bool = True
        ) -> None: ...
        def _fail(self, addr: Hashable, reason: str, detail: str) -> None: ...
        def _own_mid(self) -> int: ...
        def _ack(self, msg: Message, addr: Hashable) -> None: ...

    def _protect_request(self, now: float, msg: Message, data: bytes, addr: Hashable) -> None:
        """8.1: protect a request of the endpoint with the peer's context."""
        ctx = self._peer_context(addr)
        if ctx is None:
            self._pass_out(data, addr)  # a peer without OSCORE
            return
        try:
            wire, request = self._seal_request(msg, ctx)
        except (ContextExhausted, CannotProtect) as exc:
            reason = "exhausted" if isinstance(exc, ContextExhausted) else "unsupported"
            self._fail(addr, reason, str(exc))
            return
        binding = ClientBinding(ctx, request, observe=msg.observe == 0, plain=data)
        self._clients.put((addr, msg.token), binding)
        self._send_protected(now, data, wire, addr)

    @staticmethod
    def _seal_request(msg: Message, ctx: SecurityContext) -> tuple[bytes, RequestId]:
        """The OSCORE bytes of request `msg` under `ctx`, with a new Partial IV (8.1)."""
        piv = ctx.new_partial_iv()
        request = RequestId(ctx.sender_id, piv)
        option = OscoreOption(piv, ctx.sender_id, ctx.id_context)
        out = protect(ctx, msg, request, ctx.nonce(ctx.sender_id, piv), option)
        return encode(out), request

    def _incoming_response(self, now: float, msg: Message, data: bytes, addr: Hashable) -> None:
        """8.4: verify a response (piggybacked, separate or a notification)."""
        if msg.type == Type.ACK:
            msg.message_id = self._endpoint_mid_of(addr, msg.message_id)
        key = (addr, msg.token)
        binding = self._clients.get(key)
        values = msg.get_options(Opt.OSCORE)
        value = values[0] if values else None  # None: not protected
        if binding is None:
            if value is None and self._peer_context(addr) is None:
                self.stats.plain += 1
                self._plain.append((encode(msg), addr))  # a peer without OSCORE
                return
            self._fail(addr, "unexpected", f"a response on token {msg.token.hex()}")
            if msg.type != Type.ACK:
                # As the endpoint treats a response nobody waits for (RFC 7252 5.3.2).
                self._send(encode(Message.empty(Type.RST, msg.message_id)), addr)
            return
        if value is None:
            self._unprotected_response(now, msg, data, addr, binding)
            return
        ctx = binding.ctx
        try:
            if len(values) > 1:  # not repeatable and critical: rejected (RFC 7252 5.4.5)
                raise OscoreOptionError("the OSCORE option is repeated")
            option = OscoreOption.decode(value)
        except OscoreOptionError as exc:
            self._drop_response(msg, addr, "decode", str(exc))
            return
        piv = option.partial_iv
        if piv is None:
            nonce = ctx.nonce(binding.request.kid, binding.request.piv)  # the request's
        else:
            nonce = ctx.nonce(ctx.recipient_id, piv)
        try:
            plain = assemble(msg, ctx.open(nonce, msg.payload, aad(binding.request)))
            if not is_response(plain.code):
                raise CoapDecodeError(f"the decrypted code {plain.code} is not a response")
        except DecryptionFailed as exc:
            self._drop_response(msg, addr, "decrypt", str(exc))
            return
        except CoapDecodeError as exc:
            self._drop_response(msg, addr, "decode", f"plaintext: {exc}")
            return
        notification = plain.has_option(Opt.OBSERVE)
        if notification and not self._number_notification(msg, addr, binding, plain, piv):
            return
        echo = plain.get_option(Opt.ECHO)
        if plain.code == Code.UNAUTHORIZED and echo is not None and binding.plain is not None:
            self._repeat_with_echo(now, msg, addr, binding, echo)
            # A copy of the challenge (the server answering a retransmission of the
            # original) is no news.
            self._received.put((addr, data), (DONE, b""), now, len(data))
            return
        binding.plain = None  # answered: no Echo repeat any more
        if not notification:
            self._clients.pop(key)  # 8: the association may go after the response
        self._deliver(now, data, plain, addr)

    def _number_notification(
        self,
        msg: Message,
        addr: Hashable,
        binding: ClientBinding,
        plain: Message,
        piv: bytes | None,
    ) -> bool:
        """7.4.1 and 4.1.3.5.2: accept a notification only if it is newer; give
        the endpoint an Observe value that orders it. False: dropped."""
        if not binding.observe:
            # 4.1.3.5.2: Observe in the answer to a request that did not ask for it.
            self._drop_response(msg, addr, "unsupported", "a notification to no registration")
            return False
        if piv is None:
            if binding.unnumbered_seen:
                self._drop_response(msg, addr, "replay", "a second notification without Partial IV")
                return False
            binding.unnumbered_seen = True
            plain.set_option(Opt.OBSERVE, 0)
            return True
        number = int.from_bytes(piv, "big")
        last = binding.notification_number
        if last is not None and number <= last:
            self._drop_response(msg, addr, "replay", f"notification {number} after {last}")
            return False
        binding.notification_number = number
        plain.set_option(Opt.OBSERVE, (number + 1) & _OBSERVE_MASK)
        return True

    def _unprotected_response(
        self, now: float, msg: Message, data: bytes, addr: Hashable, binding: ClientBinding
    ) -> None:
        """A response without OSCORE to a protected request: the server's OSCORE
        errors (8.2) come so. An error ends the request (the application sees
        it, and an event says it was unprotected); anything else is dropped."""
        if msg.code >> 5 in (4, 5):
            self._fail(addr, "unprotected-response", f"{msg.code >> 5}.{msg.code & 31:02d}")
            self._clients.pop((addr, msg.token))
            self._deliver(now, data, msg, addr, verified=False)
        else:
            self._drop_response(msg, addr, "unprotected-response", "a success without OSCORE")

    def _drop_response(self, msg: Message, addr: Hashable, reason: str, detail: str) -> None:
        """8.4 step 8: stop processing; a CON is still acknowledged (its messaging
        layer is below OSCORE) so that the server does not retransmit it."""
        self._fail(addr, reason, detail)
        self._ack(msg, addr)

    def _repeat_with_echo(
        self, now: float, msg: Message, addr: Hashable, binding: ClientBinding, echo: bytes
    ) -> None:
        """B.1.2: send the request again with the server's Echo and a new Partial IV
        (once: the repeat's own 4.01, if any, is its answer)."""
        assert binding.plain is not None
        request = decode(binding.plain)
        original_mid = request.message_id
        request.set_option(Opt.ECHO, echo)
        piggybacked = msg.type == Type.ACK and request.type == Type.CON
        if not piggybacked:
            self._ack(msg, addr)  # a separate 4.01: the endpoint's CON was acknowledged
            request.type = Type.NON
        request.message_id = self._own_mid()
        binding.plain = None
        try:
            wire, binding.request = self._seal_request(request, binding.ctx)
        except ContextExhausted as exc:  # it was protected once: nothing else can fail
            self._fail(addr, "exhausted", str(exc))
            return
        if piggybacked:
            # The endpoint still retransmits its CON: each time, the repeat goes instead,
            # and the repeat's ACK comes back to the endpoint as its own.
            self._repeats.put((addr, original_mid), wire, now, len(wire))
            self._repeat_mids.put((addr, request.message_id), original_mid, now)
        self.stats.echo_repeats += 1
        self.stats.protected += 1
        self._fail(addr, "echo-repeat", "the server asked for Echo; request repeated")
        self._send(wire, addr)

    def _endpoint_mid_of(self, addr: Hashable, mid: int) -> int:
        """The endpoint's Message ID for an ACK or RST of a repeat (else `mid`)."""
        original = self._repeat_mids.get((addr, mid))
        return mid if original is None else original

    def _endpoint_mid(self, msg: Message, data: bytes, addr: Hashable) -> bytes:
        """An Empty message for the endpoint, with its Message ID if it answers a repeat."""
        mid = self._endpoint_mid_of(addr, msg.message_id)
        if mid == msg.message_id:
            return data
        msg.message_id = mid
        return encode(msg)
