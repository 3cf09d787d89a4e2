"""One CoAP message in and out of its OSCORE form (RFC 8613 4, 5.3, 5.4).

Which option goes where (4.1, Figure 5):

- Outer only (Class U): Uri-Host, Uri-Port, Proxy-Scheme (proxies route on
  them), Hop-Limit (RFC 8768) and EDHOC (RFC 9668), besides the OSCORE
  option itself.
- Inner and Outer: Observe. A request carries its value in both (4.1.3.5.1);
  a notification carries the value outer, for proxies, and an empty one inner
  (4.1.3.5.2), since its order comes from the Partial IV.
- Inner (Class E): everything else, Block1/Block2/Size1/Size2 among them
  (end-to-end block-wise, 4.1.3.4.1), Max-Age, No-Response, Echo and
  Request-Tag (RFC 9175), and every option this table does not know (4.1).
  Class I: none is defined, so the AAD's `options` is always empty.

The Outer Code is POST for requests and FETCH for requests with Observe, 2.04
for responses and 2.05 for responses with Observe (4.2, 4.1.3.5). A receiver
discards the Outer Code and every outer Class E option (8.2 and 8.4 step 1).

Not built: Proxy-Uri, which 4.1.3.3 has the client split into Proxy-Scheme,
Uri-Host, Uri-Port (outer) and Uri-Path, Uri-Query (inner); a message with it
is refused rather than sent with its path in the clear. Nor outer Block
options, which only proxies add (4.1.3.4.2): they are discarded as any outer
Class E option, so a message a proxy cut into blocks does not verify.

The plaintext (5.3) is the code, the inner options and the payload, i.e. a
CoAP message without its first four bytes and token; it is built and parsed
with the CoAP codec (codec.py) rather than a second option encoder.
"""

from __future__ import annotations

from dataclasses import dataclass

from iotbench.proto.coap.codec import Code, Message, Type, decode, encode, is_request
from iotbench.proto.coap.options import Opt

from . import cbor
from .context import AES_CCM_16_64_128, SecurityContext
from .option import OscoreOption

#: Class U: left outside the ciphertext for proxies.
OUTER_ONLY = frozenset({Opt.URI_HOST, Opt.URI_PORT, Opt.PROXY_SCHEME, Opt.HOP_LIMIT, Opt.EDHOC})
#: 5.4: oscore_version.
OSCORE_VERSION = 1
#: What precedes the plaintext in its CoAP form: version 1, CON, no token; the code follows.
_HEADER = 0x40


class CannotProtect(ValueError):
    """A message OSCORE does not protect: nested OSCORE (4.1.3.7) or Proxy-Uri (not built)."""


@dataclass(frozen=True, slots=True)
class RequestId:
    """The request's 'kid' and Partial IV: what binds its responses to it (5.4, 7.1)."""

    kid: bytes
    piv: bytes


def external_aad(request: RequestId) -> bytes:
    """aad_array = [oscore_version, [alg_aead], request_kid, request_piv, options]."""
    return cbor.dumps([OSCORE_VERSION, [AES_CCM_16_64_128], request.kid, request.piv, b""])


def aad(request: RequestId) -> bytes:
    """The AEAD's AAD: Enc_structure = ["Encrypt0", h'', external_aad] (5.4)."""
    return cbor.dumps(["Encrypt0", b"", external_aad(request)])


def outer_code(msg: Message) -> int:
    observe = msg.has_option(Opt.OBSERVE)
    if is_request(msg.code):
        return Code.FETCH if observe else Code.POST
    return Code.CONTENT if observe else Code.CHANGED


def split(msg: Message) -> tuple[list[tuple[int, bytes]], bytes]:
    """The outer options and the plaintext of `msg` (4.1, 5.3)."""
    request = is_request(msg.code)
    outer: list[tuple[int, bytes]] = []
    inner: list[tuple[int, bytes]] = []
    for number, value in msg.options:
        if number == Opt.OSCORE:
            raise CannotProtect("the message is already an OSCORE message (4.1.3.7)")
        if number == Opt.PROXY_URI:
            raise CannotProtect("Proxy-Uri is not decomposed (4.1.3.3, not built)")
        if number in OUTER_ONLY:
            outer.append((number, value))
        elif number == Opt.OBSERVE:
            outer.append((number, value))
            inner.append((number, value if request else b""))
        else:
            inner.append((number, value))
    body = encode(Message(Type.CON, msg.code, 0, b"", inner, msg.payload))
    return outer, body[1:2] + body[4:]  # the code, then options and payload


def parse_plaintext(plaintext: bytes) -> Message:
    """The code, inner options and payload of a plaintext; CoapDecodeError if malformed."""
    return decode(bytes((_HEADER,)) + plaintext[:1] + b"\0\0" + plaintext[1:])


def protect(
    ctx: SecurityContext,
    msg: Message,
    request: RequestId,
    nonce: bytes,
    option: OscoreOption,
) -> Message:
    """The OSCORE message of `msg`: type, Message ID and token unchanged (Class U)."""
    outer, plaintext = split(msg)
    ciphertext = ctx.seal(nonce, plaintext, aad(request))
    outer.append((Opt.OSCORE, option.encode()))
    return Message(msg.type, outer_code(msg), msg.message_id, msg.token, outer, ciphertext)


def assemble(msg: Message, plaintext: bytes) -> Message:
    """The original message of OSCORE message `msg` from its decrypted plaintext.

    Outer Class U options stay, the outer code and outer Class E options go,
    the decrypted code, options and payload come in (8.2 steps 1 and 7);
    CoapDecodeError when the plaintext is not a code, options and payload.
    """
    inner = parse_plaintext(plaintext)
    outer = [(n, v) for n, v in msg.options if n in OUTER_ONLY]
    return Message(
        msg.type, inner.code, msg.message_id, msg.token, outer + inner.options, inner.payload
    )
