"""CoAP message codec: RFC 7252 section 3 wire format, byte for byte.

This module only turns datagrams into `Message` objects and back. It keeps
every option it finds (known or not, valid or not) as a raw (number, value)
pair, because RFC 7252 leaves the decision about unrecognized or malformed
options to the endpoint (5.4.1, 5.4.3); `options.invalid_options` and
`options.unrecognized_critical` help with that decision.

What decode() rejects is only what RFC 7252 calls a message format error
(a message that cannot be parsed at all, or that an endpoint must not accept):
bad version, TKL 9-15, truncation, reserved nibble 15, a payload marker
followed by nothing, option numbers beyond 16 bits, and an Empty message
(0.00) that carries anything after the Message ID. It raises CoapDecodeError
for all of those and never anything else, so a stack can count and drop.
A receiver may also bound the options per message (`max_options`, the
endpoint's CoapParams.max_options): decode() then stops at the first option
past the bound and raises CoapTooManyOptions, without walking the rest, so
that a datagram's cost to its receiver does not grow with its option count.

decode() is on the simulator's hot path: it walks the options once with
integer indexing and slices values out of the input; no per-byte loops and
no allocation sized by a length field before that length is checked against
the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from operator import itemgetter
from typing import Final, NamedTuple

from iotbench.proto.errors import DecodeError
from iotbench.proto.octets import ONE_BYTE, as_bytes

from .options import (
    MAX_OPTION_NUMBER,
    OPTIONS,
    Opt,
    OptFormat,
    OptionDef,
    invalid_options,
    is_critical,
    is_no_cache_key,
    is_unsafe,
    option_def,
    option_name,
    unrecognized_critical,
)

__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_SECURE_PORT",
    "MAX_OPTION_NUMBER",
    "MAX_TOKEN_LENGTH",
    "OPTIONS",
    "BlockOption",
    "CoapDecodeError",
    "CoapTooManyOptions",
    "Code",
    "Message",
    "Opt",
    "OptFormat",
    "OptionDef",
    "Type",
    "code_name",
    "code_str",
    "decode",
    "decode_uint",
    "encode",
    "encode_uint",
    "header_length",
    "invalid_options",
    "is_critical",
    "is_empty",
    "is_no_cache_key",
    "is_request",
    "is_reserved",
    "is_response",
    "is_unsafe",
    "make_code",
    "option_def",
    "option_name",
    "unrecognized_critical",
]

DEFAULT_PORT = 5683
DEFAULT_SECURE_PORT = 5684
MAX_TOKEN_LENGTH: Final = 8
PAYLOAD_MARKER: Final = 0xFF
#: The largest option delta or length the 4-bit nibble plus a 2-byte extension can carry.
MAX_EXTENDED: Final = 65535 + 269


class CoapDecodeError(DecodeError):
    """The bytes are not a well-formed CoAP message (RFC 7252 "message format error")."""


class CoapTooManyOptions(CoapDecodeError):
    """More options than the receiver takes: decode() read `limit` and stopped at the next.

    `offset` is where that option starts: what was walked of the datagram."""

    def __init__(self, limit: int, offset: int) -> None:
        super().__init__(f"more than {limit} options (stopped at byte {offset})")
        self.limit = limit
        self.offset = offset


class Type(IntEnum):
    """Message types (RFC 7252 3)."""

    CON = 0
    NON = 1
    ACK = 2
    RST = 3


_TYPES: Final = (Type.CON, Type.NON, Type.ACK, Type.RST)


def make_code(cls: int, detail: int) -> int:
    """The code byte for "c.dd": class in the top 3 bits, detail in the low 5."""
    if not (0 <= cls <= 7 and 0 <= detail <= 31):
        raise ValueError(f"code class must be 0..7 and detail 0..31, got {cls}.{detail}")
    return (cls << 5) | detail


class Code(IntEnum):
    """Method and response codes from the IANA "CoAP Codes" registry.

    Codes travel as plain ints: a decoded message keeps whatever byte it
    carried, registered or not, and compares equal to these members.
    """

    EMPTY = 0
    GET = 1
    POST = 2
    PUT = 3
    DELETE = 4
    FETCH = 5  # RFC 8132
    PATCH = 6  # RFC 8132
    IPATCH = 7  # RFC 8132
    CREATED = (2 << 5) | 1
    DELETED = (2 << 5) | 2
    VALID = (2 << 5) | 3
    CHANGED = (2 << 5) | 4
    CONTENT = (2 << 5) | 5
    CONTINUE = (2 << 5) | 31  # RFC 7959
    BAD_REQUEST = (4 << 5) | 0
    UNAUTHORIZED = (4 << 5) | 1
    BAD_OPTION = (4 << 5) | 2
    FORBIDDEN = (4 << 5) | 3
    NOT_FOUND = (4 << 5) | 4
    METHOD_NOT_ALLOWED = (4 << 5) | 5
    NOT_ACCEPTABLE = (4 << 5) | 6
    REQUEST_ENTITY_INCOMPLETE = (4 << 5) | 8  # RFC 7959
    CONFLICT = (4 << 5) | 9  # RFC 8132
    PRECONDITION_FAILED = (4 << 5) | 12
    REQUEST_ENTITY_TOO_LARGE = (4 << 5) | 13
    UNSUPPORTED_CONTENT_FORMAT = (4 << 5) | 15
    UNPROCESSABLE_ENTITY = (4 << 5) | 22  # RFC 8132
    TOO_MANY_REQUESTS = (4 << 5) | 29  # RFC 8516
    INTERNAL_SERVER_ERROR = (5 << 5) | 0
    NOT_IMPLEMENTED = (5 << 5) | 1
    BAD_GATEWAY = (5 << 5) | 2
    SERVICE_UNAVAILABLE = (5 << 5) | 3
    GATEWAY_TIMEOUT = (5 << 5) | 4
    PROXYING_NOT_SUPPORTED = (5 << 5) | 5
    HOP_LIMIT_REACHED = (5 << 5) | 8  # RFC 8768


_CODE_NAMES = {int(c): c.name if 0 < c < 32 else c.name.replace("_", " ").title() for c in Code}


def code_str(code: int) -> str:
    """Dotted notation used by the RFCs and Wireshark: 69 -> "2.05"."""
    return f"{code >> 5}.{code & 0x1F:02d}"


def code_name(code: int) -> str:
    """Readable code: "GET", "2.05 Content"; unregistered ones are only dotted ("0.25")."""
    name = _CODE_NAMES.get(code)
    if name is None:
        return code_str(code)
    return name if 0 < code < 32 else f"{code_str(code)} {name}"


def is_empty(code: int) -> bool:
    """0.00 is the Empty message (ping, empty ACK, RST)."""
    return code == 0


def is_request(code: int) -> bool:
    """Class 0 with a non-zero detail is a request method (RFC 7252 5.8)."""
    return 0 < code < 32


def is_response(code: int) -> bool:
    """Classes 2, 4 and 5 are responses; 1, 3, 6 and 7 are reserved (RFC 7252 12.1)."""
    return (code >> 5) in (2, 4, 5)


def is_reserved(code: int) -> bool:
    """Neither Empty, request nor response: the endpoint must reject such a message."""
    return (code >> 5) in (1, 3, 6, 7)


def encode_uint(n: int) -> bytes:
    """Minimal big-endian encoding of a uint option value; 0 is the empty string (RFC 7252 3.2)."""
    if n < 0:
        raise ValueError(f"uint option values are non-negative, got {n}")
    return n.to_bytes((n.bit_length() + 7) >> 3, "big")


def decode_uint(b: bytes) -> int:
    """Big-endian uint of any length; leading zeros are accepted as RFC 7252 3.2 requires."""
    return int.from_bytes(b, "big")


class BlockOption(NamedTuple):
    """Value of a Block1/Block2 (or Q-Block) option, RFC 7959 2.2.

    num: block number (20 bits at most, as the value is at most 3 bytes),
    more: the M bit, szx: log2(size) - 4. SZX 7 is reserved in CoAP over UDP
    (RFC 7959 2.2: must not be sent, 4.00 on reception); it is kept here so the
    endpoint can see and reject it.
    """

    num: int
    more: bool
    szx: int

    @property
    def size(self) -> int:
        """Block size in bytes: 2 ** (szx + 4)."""
        return 1 << (self.szx + 4)

    @property
    def offset(self) -> int:
        """Byte offset of this block in the whole body."""
        return self.num << (self.szx + 4)

    def to_uint(self) -> int:
        if not 0 <= self.num <= 0xFFFFF:
            raise ValueError(f"block number must fit in 20 bits, got {self.num}")
        if not 0 <= self.szx <= 7:
            raise ValueError(f"SZX must be 0..7, got {self.szx}")
        return (self.num << 4) | (0x08 if self.more else 0) | self.szx

    def encode(self) -> bytes:
        """Minimal option value (0 to 3 bytes)."""
        return encode_uint(self.to_uint())

    @classmethod
    def from_uint(cls, value: int) -> BlockOption:
        return cls(value >> 4, bool(value & 0x08), value & 0x07)

    @classmethod
    def decode(cls, value: bytes) -> BlockOption:
        """Parse an option value; more than 3 bytes is a format error (RFC 7959 2.2)."""
        if len(value) > 3:
            raise CoapDecodeError(f"block option value is {len(value)} bytes, at most 3 allowed")
        return cls.from_uint(int.from_bytes(value, "big"))

    @classmethod
    def from_size(cls, num: int, more: bool, size: int) -> BlockOption:
        """Build from a byte size (16, 32, ... 1024) instead of SZX."""
        szx = size.bit_length() - 5
        if size < 16 or size > 1024 or size & (size - 1):
            raise ValueError(f"block size must be a power of two in 16..1024, got {size}")
        return cls(num, more, szx)


#: What an option's value may be given as: bytes-like, a UTF-8 string or a uint.
OptionValue = bytes | bytearray | memoryview | str | int


def _to_option_value(value: OptionValue) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, int):
        return encode_uint(value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"option value must be bytes, str or int, not {type(value).__name__}")


def _split_path(path: str | Sequence[str]) -> list[str]:
    """Path to segments: "/a/b" -> ["a", "b"]; "/" and "" -> []; "/a/" -> ["a", ""].

    A trailing slash is an empty last segment (RFC 7252 erratum 4895).
    """
    if not isinstance(path, str):
        return list(path)
    path = path.removeprefix("/")
    return path.split("/") if path else []


@dataclass(slots=True)
class Message:
    """One CoAP message.

    `options` holds raw (number, value) pairs in the order they were added or
    decoded; encode() sorts them stably by number, so repeated options
    (Uri-Path segments, ETags) keep their relative order. `code` is a plain
    int (compare with `Code` members).
    """

    type: Type
    code: int
    message_id: int
    token: bytes = b""
    options: list[tuple[int, bytes]] = field(default_factory=list)
    payload: bytes = b""

    # ---- construction helpers -------------------------------------------------

    @classmethod
    def request(
        cls,
        type: Type,
        code: int,
        mid: int,
        token: bytes = b"",
        path: str | Sequence[str] = "/",
        payload: bytes = b"",
        query: Sequence[str] | None = None,
        content_format: int | None = None,
    ) -> Message:
        """A request with Uri-Path (and Uri-Query / Content-Format) set."""
        msg = cls(type, code, mid, token, payload=payload)
        for seg in _split_path(path):
            msg.options.append((Opt.URI_PATH, seg.encode("utf-8")))
        for q in query or ():
            msg.options.append((Opt.URI_QUERY, q.encode("utf-8")))
        if content_format is not None:
            msg.options.append((Opt.CONTENT_FORMAT, encode_uint(content_format)))
        return msg

    @classmethod
    def empty(cls, type: Type, mid: int) -> Message:
        """An Empty message: a CoAP ping (CON), an empty ACK, or an RST."""
        return cls(type, Code.EMPTY, mid)

    def copy(self) -> Message:
        """A copy whose options list can be changed without touching this one."""
        return Message(
            self.type, self.code, self.message_id, self.token, list(self.options), self.payload
        )

    # ---- generic option access ------------------------------------------------

    def add_option(self, number: int, value: OptionValue) -> Message:
        """Append an option; str is UTF-8, int is a minimal uint. Returns self for chaining."""
        self.options.append((number, _to_option_value(value)))
        return self

    def get_options(self, number: int) -> list[bytes]:
        """All values of option `number`, in order."""
        return [v for n, v in self.options if n == number]

    def get_option(self, number: int) -> bytes | None:
        """The first value of option `number`, or None."""
        for n, v in self.options:
            if n == number:
                return v
        return None

    def has_option(self, number: int) -> bool:
        return any(n == number for n, _ in self.options)

    def get_uint(self, number: int, default: int | None = None) -> int | None:
        """First value of a uint option, or `default` when absent."""
        v = self.get_option(number)
        return default if v is None else int.from_bytes(v, "big")

    def get_str(self, number: int) -> str | None:
        """First value of a string option; invalid UTF-8 raises CoapDecodeError."""
        v = self.get_option(number)
        return None if v is None else _utf8(v, number)

    def remove_option(self, number: int) -> int:
        """Remove every occurrence of option `number`; returns how many were removed."""
        before = len(self.options)
        self.options[:] = [o for o in self.options if o[0] != number]
        return before - len(self.options)

    def set_option(self, number: int, value: OptionValue | None) -> None:
        """Replace all occurrences of option `number` with one value (None removes it)."""
        self.remove_option(number)
        if value is not None:
            self.add_option(number, value)

    # ---- typed views ----------------------------------------------------------

    @property
    def path_segments(self) -> list[str]:
        """Uri-Path values, decoded; exact even when a segment contains "/"."""
        return [_utf8(v, Opt.URI_PATH) for n, v in self.options if n == Opt.URI_PATH]

    @property
    def uri_path(self) -> str:
        """The path "/a/b" built from the Uri-Path options; "/" when there are none."""
        return "/" + "/".join(self.path_segments)

    @uri_path.setter
    def uri_path(self, path: str | Sequence[str]) -> None:
        self.set_uri_path(path)

    def set_uri_path(self, path: str | Sequence[str]) -> None:
        """`uri_path = path`, for compiled callers: mypyc gives a property's setter
        the getter's type (str), and a list of segments would not pass."""
        self.remove_option(Opt.URI_PATH)
        for seg in _split_path(path):
            self.options.append((Opt.URI_PATH, seg.encode("utf-8")))

    @property
    def uri_query(self) -> list[str]:
        return [_utf8(v, Opt.URI_QUERY) for n, v in self.options if n == Opt.URI_QUERY]

    @uri_query.setter
    def uri_query(self, query: Sequence[str]) -> None:
        self.remove_option(Opt.URI_QUERY)
        for q in query:
            self.options.append((Opt.URI_QUERY, q.encode("utf-8")))

    @property
    def observe(self) -> int | None:
        """Observe (RFC 7641): 0/1 (de)register in requests, a sequence in notifications."""
        return self.get_uint(Opt.OBSERVE)

    @observe.setter
    def observe(self, value: int | None) -> None:
        if value is not None and value > 0xFFFFFF:
            raise ValueError(f"Observe is a 24-bit value, got {value}")
        self.set_option(Opt.OBSERVE, value)

    @property
    def content_format(self) -> int | None:
        return self.get_uint(Opt.CONTENT_FORMAT)

    @content_format.setter
    def content_format(self, value: int | None) -> None:
        self.set_option(Opt.CONTENT_FORMAT, value)

    @property
    def block1(self) -> BlockOption | None:
        v = self.get_option(Opt.BLOCK1)
        return None if v is None else BlockOption.decode(v)

    @block1.setter
    def block1(self, value: BlockOption | None) -> None:
        self.set_option(Opt.BLOCK1, None if value is None else value.encode())

    @property
    def block2(self) -> BlockOption | None:
        v = self.get_option(Opt.BLOCK2)
        return None if v is None else BlockOption.decode(v)

    @block2.setter
    def block2(self, value: BlockOption | None) -> None:
        self.set_option(Opt.BLOCK2, None if value is None else value.encode())

    def summary(self) -> str:
        """One line for logs: "CON GET mid=0x7d34 token=71 /temperature 0B"."""
        what = code_name(self.code)
        try:
            path = self.uri_path if self.has_option(Opt.URI_PATH) else ""
        except CoapDecodeError:
            path = "<bad utf-8 path>"
        return (
            f"{self.type.name} {what} mid=0x{self.message_id:04x} token={self.token.hex()}"
            f"{' ' + path if path else ''} {len(self.payload)}B"
        )


def _utf8(value: bytes, number: int) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CoapDecodeError(f"{option_name(number)} value is not UTF-8") from exc


# ---- encoding -------------------------------------------------------------------


def _ext(x: int, what: str) -> tuple[int, bytes]:
    """Nibble and extension bytes for an option delta or length (RFC 7252 3.1)."""
    if x < 13:
        return x, b""
    if x < 269:
        return 13, ONE_BYTE[x - 13]
    if x <= MAX_EXTENDED:
        return 14, (x - 269).to_bytes(2, "big")
    raise ValueError(f"option {what} {x} exceeds {MAX_EXTENDED}")


_by_number = itemgetter(0)


def encode(msg: Message) -> bytes:
    """Wire bytes of `msg`. Raises ValueError for a message that must not be sent."""
    token = msg.token
    tkl = len(token)
    if tkl > MAX_TOKEN_LENGTH:
        raise ValueError(f"token is {tkl} bytes, at most {MAX_TOKEN_LENGTH} allowed")
    code = msg.code
    if not 0 <= code <= 0xFF:
        raise ValueError(f"code must be one byte, got {code}")
    mid = msg.message_id
    if not 0 <= mid <= 0xFFFF:
        raise ValueError(f"message id must be 16-bit, got {mid}")
    mtype = msg.type
    if not 0 <= mtype <= 3:
        raise ValueError(f"message type must be 0..3, got {mtype}")
    options = msg.options
    payload = msg.payload
    if code == 0 and (tkl or options or payload):
        raise ValueError("an Empty message (0.00) carries no token, options or payload")

    header = ONE_BYTE[0x40 | (mtype << 4) | tkl] + ONE_BYTE[code]
    parts = [header, ONE_BYTE[mid >> 8], ONE_BYTE[mid & 0xFF], token]
    prev = 0
    for number, value in sorted(options, key=_by_number) if len(options) > 1 else options:
        if not 0 <= number <= MAX_OPTION_NUMBER:
            raise ValueError(f"option number must be 0..{MAX_OPTION_NUMBER}, got {number}")
        delta = number - prev
        length = len(value)
        if delta < 13 and length < 13:
            parts.append(ONE_BYTE[(delta << 4) | length])
        else:
            dn, dx = _ext(delta, "delta")
            ln, lx = _ext(length, "length")
            parts.append(ONE_BYTE[(dn << 4) | ln] + dx + lx)
        parts.append(value)
        prev = number
    if payload:
        parts.append(b"\xff")
        parts.append(payload)
    return b"".join(parts)


# ---- decoding -------------------------------------------------------------------


def decode(data: bytes | bytearray | memoryview, max_options: int | None = None) -> Message:
    """Parse one datagram. Raises CoapDecodeError (and nothing else) for bad input.

    max_options: the most options taken; the next one raises CoapTooManyOptions
    before its header is read. None: no bound (tools that read captured traffic).
    """
    data = as_bytes(data)
    n = len(data)
    if n < 4:
        raise CoapDecodeError(f"datagram of {n} bytes is shorter than the 4-byte header")
    b0 = data[0]
    if b0 >> 6 != 1:
        raise CoapDecodeError(f"unknown CoAP version {b0 >> 6}")
    tkl = b0 & 0x0F
    if tkl > MAX_TOKEN_LENGTH:
        raise CoapDecodeError(f"token length {tkl} is reserved")
    code = data[1]
    pos = 4 + tkl
    if code == 0:
        # RFC 7252 4.1: TKL 0 and nothing after the Message ID.
        if n != 4 or tkl:
            raise CoapDecodeError("Empty message (0.00) with a token or bytes after the message id")
        return Message(_TYPES[(b0 >> 4) & 3], 0, (data[2] << 8) | data[3])
    if pos > n:
        raise CoapDecodeError("datagram ends inside the token")
    token = data[4:pos]
    options: list[tuple[int, bytes]] = []
    payload = b""
    number = 0
    # Options still allowed; counting down costs one subtraction per option. Without
    # a bound, n: every option takes a byte at least, so it is never reached.
    bound = n if max_options is None else max_options
    left = bound
    while pos < n:
        byte = data[pos]
        if byte == PAYLOAD_MARKER:
            pos += 1
            if pos == n:
                raise CoapDecodeError("payload marker followed by an empty payload")
            payload = data[pos:]
            break
        if not left:
            raise CoapTooManyOptions(bound, pos)
        left -= 1
        pos += 1
        delta = byte >> 4
        length = byte & 0x0F
        if delta >= 13:
            if delta == 13:
                if pos >= n:
                    raise CoapDecodeError("datagram ends inside an option delta")
                delta = data[pos] + 13
                pos += 1
            elif delta == 14:
                if pos + 2 > n:
                    raise CoapDecodeError("datagram ends inside an option delta")
                delta = ((data[pos] << 8) | data[pos + 1]) + 269
                pos += 2
            else:
                raise CoapDecodeError("option delta nibble 15 is reserved")
        if length >= 13:
            if length == 13:
                if pos >= n:
                    raise CoapDecodeError("datagram ends inside an option length")
                length = data[pos] + 13
                pos += 1
            elif length == 14:
                if pos + 2 > n:
                    raise CoapDecodeError("datagram ends inside an option length")
                length = ((data[pos] << 8) | data[pos + 1]) + 269
                pos += 2
            else:
                raise CoapDecodeError("option length nibble 15 is reserved")
        number += delta
        if number > MAX_OPTION_NUMBER:
            raise CoapDecodeError(f"option number {number} exceeds {MAX_OPTION_NUMBER}")
        end = pos + length
        if end > n:
            raise CoapDecodeError(f"option {number} value of {length} bytes is truncated")
        options.append((number, data[pos:end]))
        pos = end
    return Message(_TYPES[(b0 >> 4) & 3], code, (data[2] << 8) | data[3], token, options, payload)


def header_length(data: bytes | bytearray | memoryview) -> int:
    """Bytes before the payload: header, token, options and the 0xFF marker if present.

    Walks the option headers without building anything, so metrics can split
    "CoAP header bytes" from "payload bytes" cheaply. Raises CoapDecodeError
    when the structure cannot be walked (version, TKL, truncation, nibble 15,
    marker without payload); unlike decode() it does not check the semantic
    rules (Empty message contents, option number range). For every datagram
    decode() accepts, it equals len(data) - len(decode(data).payload).
    """
    n = len(data)
    if n < 4 or data[0] >> 6 != 1 or (data[0] & 0x0F) > MAX_TOKEN_LENGTH:
        raise CoapDecodeError("not a CoAP header")
    pos = 4 + (data[0] & 0x0F)
    if pos > n:
        raise CoapDecodeError("datagram ends inside the token")
    while pos < n:
        byte = data[pos]
        pos += 1
        if byte == PAYLOAD_MARKER:
            if pos == n:
                raise CoapDecodeError("payload marker followed by an empty payload")
            return pos
        delta = byte >> 4
        length = byte & 0x0F
        if delta == 15 or length == 15:
            raise CoapDecodeError("option nibble 15 is reserved")
        if delta == 13:
            pos += 1
        elif delta == 14:
            pos += 2
        if length == 13:
            if pos >= n:
                raise CoapDecodeError("datagram ends inside an option length")
            length = data[pos] + 13
            pos += 1
        elif length == 14:
            if pos + 2 > n:
                raise CoapDecodeError("datagram ends inside an option length")
            length = ((data[pos] << 8) | data[pos + 1]) + 269
            pos += 2
        pos += length
        if pos > n:
            raise CoapDecodeError("datagram ends inside an option")
    return n
