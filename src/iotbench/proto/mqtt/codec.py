"""MQTT 3.1.1 control packet codec (OASIS MQTT Version 3.1.1, sections 1.5, 2 and 3).

Three pieces:

- `encode(packet) -> bytes` and `decode(data) -> packet` for one whole control
  packet, one frozen dataclass per packet type (`Connect`, `ConnAck`,
  `Publish`, ...). encode() raises ValueError for a packet that must not be
  sent; decode() raises `MqttDecodeError` and nothing else for bad input.
- `PacketFramer`: an incremental framer that cuts a TCP byte stream, arriving
  in any split, into whole packets. It never buffers more than one partial
  packet, and a packet whose Remaining Length exceeds the framer's
  `max_packet_size_bytes` (or a length field longer than four bytes) is a
  decode error as soon as its fixed header is complete, not a hang or an
  unbounded buffer.
- `header_length(packet_bytes)`: the fixed plus variable header length of an
  encoded packet (2.2, 2.3), so a simulator can split bytes on the wire into
  application header and payload the way proto/coap's header_length does.

What decode() checks is the wire format: packet type 1-14, the fixed-header
flags (2.2.2: 0b0010 for PUBREL, SUBSCRIBE and UNSUBSCRIBE, 0 for the others,
QoS 3 and DUP with QoS 0 in PUBLISH), Remaining Length against the packet's
layout (exact sizes for fixed-size packets, no trailing bytes), UTF-8 strings
(1.5.3: well-formed, no U+0000, no surrogates; a BOM is kept, never
stripped), non-zero Packet Identifiers (2.3.1), the CONNECT flag rules
(3.1.2.3-3.1.2.9), requested QoS bytes (3.8.3.1), SUBACK return codes
(3.9.3) and non-empty topic lists (3.8.3, 3.10.3). Topic name and filter
*syntax* (wildcards, empty topics, 4.7) is checked by the stacks with
proto/mqtt/topics.py, because its consequences differ between client and
broker.

A CONNECT whose Protocol Level is not 4 raises `UnsupportedProtocolLevel`
(a MqttDecodeError subclass) so that a broker can answer with return code
0x01 before closing, as 3.1.2.2 requires. The 3.1 name "MQIsdp" is accepted
in the same way, so an MQTT 3.1 client gets 0x01 too; any other protocol
name is malformed. A Remaining Length in a non-minimal encoding (e.g. 0x80
0x00 for 0) is accepted: 3.1.1 does not forbid it (only MQTT 5 does).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from iotbench.proto.errors import DecodeError
from iotbench.proto.octets import ONE_BYTE, as_bytes

__all__ = [
    "MAX_PACKET_SIZE_BYTES",
    "MAX_REMAINING_LENGTH",
    "PROTOCOL_LEVEL",
    "PROTOCOL_NAME",
    "SUBACK_FAILURE",
    "ConnAck",
    "Connect",
    "ConnectReturnCode",
    "Disconnect",
    "MqttDecodeError",
    "Packet",
    "PacketFramer",
    "PacketType",
    "PingReq",
    "PingResp",
    "PubAck",
    "PubComp",
    "PubRec",
    "PubRel",
    "Publish",
    "SubAck",
    "Subscribe",
    "UnsubAck",
    "Unsubscribe",
    "UnsupportedProtocolLevel",
    "Will",
    "decode",
    "decode_remaining_length",
    "encode",
    "encode_remaining_length",
    "encode_string",
    "header_length",
    "split_packets",
]

PROTOCOL_NAME = "MQTT"
PROTOCOL_LEVEL = 4
#: 2.2.3: four bytes of Remaining Length carry at most 268,435,455.
MAX_REMAINING_LENGTH = 268_435_455
#: The largest whole packet: one type byte, four length bytes, the rest.
MAX_PACKET_SIZE_BYTES = 1 + 4 + MAX_REMAINING_LENGTH
MAX_STRING_BYTES = 65535
#: 3.9.3: the SUBACK return code of a refused subscription.
SUBACK_FAILURE = 0x80
_SUBACK_CODES = frozenset({0x00, 0x01, 0x02, SUBACK_FAILURE})
_LEGACY_PROTOCOL_NAME = "MQIsdp"  # MQTT 3.1, protocol level 3


class MqttDecodeError(DecodeError):
    """The bytes are not a well-formed MQTT 3.1.1 control packet (a "malformed packet")."""


class UnsupportedProtocolLevel(MqttDecodeError):
    """A CONNECT of another MQTT version; a server answers 0x01 and closes (3.1.2.2)."""

    def __init__(self, level: int) -> None:
        super().__init__(f"unsupported protocol level {level}")
        self.level = level


class PacketType(IntEnum):
    """Control packet types (2.2.1); 0 and 15 are reserved."""

    CONNECT = 1
    CONNACK = 2
    PUBLISH = 3
    PUBACK = 4
    PUBREC = 5
    PUBREL = 6
    PUBCOMP = 7
    SUBSCRIBE = 8
    SUBACK = 9
    UNSUBSCRIBE = 10
    UNSUBACK = 11
    PINGREQ = 12
    PINGRESP = 13
    DISCONNECT = 14


# The names as decode's messages give them, looked up once: building the enum
# member is interpreted code (about 3,000 instructions), and every PUBACK read
# named its type for the check that nothing follows it.
_TYPE_NAMES: Final = {t.value: t.name for t in PacketType}


class ConnectReturnCode(IntEnum):
    """CONNACK return codes (3.2.2.3); 6-255 are reserved."""

    ACCEPTED = 0
    UNACCEPTABLE_PROTOCOL_VERSION = 1
    IDENTIFIER_REJECTED = 2
    SERVER_UNAVAILABLE = 3
    BAD_USERNAME_OR_PASSWORD = 4
    NOT_AUTHORIZED = 5


# ---- packets ------------------------------------------------------------------------


# Records below write out their __init__: compiled, it stores each field
# directly, where the one @dataclass generates is interpreted Python
# (tests/test_written_inits.py keeps it equal to the fields).


@dataclass(frozen=True, slots=True)
class Will:
    """The Will Message of a CONNECT (3.1.2.5-3.1.2.7, 3.1.3.2-3.1.3.3)."""

    topic: str
    payload: bytes = b""
    qos: int = 0
    retain: bool = False

    def __init__(
        self, topic: str, payload: bytes = b"", qos: int = 0, retain: bool = False
    ) -> None:
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "payload", payload)
        object.__setattr__(self, "qos", qos)
        object.__setattr__(self, "retain", retain)


@dataclass(frozen=True, slots=True)
class Connect:
    """CONNECT (3.1). `password` is binary data; a password needs a username (3.1.2.9)."""

    client_id: str
    clean_session: bool = True
    keep_alive_s: int = 0
    will: Will | None = None
    username: str | None = None
    password: bytes | None = None

    def __init__(
        self,
        client_id: str,
        clean_session: bool = True,
        keep_alive_s: int = 0,
        will: Will | None = None,
        username: str | None = None,
        password: bytes | None = None,
    ) -> None:
        object.__setattr__(self, "client_id", client_id)
        object.__setattr__(self, "clean_session", clean_session)
        object.__setattr__(self, "keep_alive_s", keep_alive_s)
        object.__setattr__(self, "will", will)
        object.__setattr__(self, "username", username)
        object.__setattr__(self, "password", password)


@dataclass(frozen=True, slots=True)
class ConnAck:
    """CONNACK (3.2)."""

    session_present: bool
    return_code: int

    def __init__(self, session_present: bool, return_code: int) -> None:
        object.__setattr__(self, "session_present", session_present)
        object.__setattr__(self, "return_code", return_code)


@dataclass(frozen=True, slots=True)
class Publish:
    """PUBLISH (3.3). packet_id is None for QoS 0 and set (1-65535) for QoS 1 and 2."""

    topic: str
    payload: bytes = b""
    qos: int = 0
    retain: bool = False
    dup: bool = False
    packet_id: int | None = None

    def __init__(
        self,
        topic: str,
        payload: bytes = b"",
        qos: int = 0,
        retain: bool = False,
        dup: bool = False,
        packet_id: int | None = None,
    ) -> None:
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "payload", payload)
        object.__setattr__(self, "qos", qos)
        object.__setattr__(self, "retain", retain)
        object.__setattr__(self, "dup", dup)
        object.__setattr__(self, "packet_id", packet_id)


@dataclass(frozen=True, slots=True)
class PubAck:
    """PUBACK (3.4): QoS 1 acknowledgement."""

    packet_id: int

    def __init__(self, packet_id: int) -> None:
        object.__setattr__(self, "packet_id", packet_id)


@dataclass(frozen=True, slots=True)
class PubRec:
    """PUBREC (3.5): QoS 2 delivery part 1."""

    packet_id: int

    def __init__(self, packet_id: int) -> None:
        object.__setattr__(self, "packet_id", packet_id)


@dataclass(frozen=True, slots=True)
class PubRel:
    """PUBREL (3.6): QoS 2 delivery part 2; fixed-header flags 0b0010."""

    packet_id: int

    def __init__(self, packet_id: int) -> None:
        object.__setattr__(self, "packet_id", packet_id)


@dataclass(frozen=True, slots=True)
class PubComp:
    """PUBCOMP (3.7): QoS 2 delivery part 3."""

    packet_id: int

    def __init__(self, packet_id: int) -> None:
        object.__setattr__(self, "packet_id", packet_id)


@dataclass(frozen=True, slots=True)
class Subscribe:
    """SUBSCRIBE (3.8): (topic filter, requested QoS) pairs; flags 0b0010."""

    packet_id: int
    topics: tuple[tuple[str, int], ...]

    def __init__(self, packet_id: int, topics: tuple[tuple[str, int], ...]) -> None:
        object.__setattr__(self, "packet_id", packet_id)
        object.__setattr__(self, "topics", topics)


@dataclass(frozen=True, slots=True)
class SubAck:
    """SUBACK (3.9): one return code per filter: granted QoS 0-2 or 0x80 failure."""

    packet_id: int
    return_codes: tuple[int, ...]

    def __init__(self, packet_id: int, return_codes: tuple[int, ...]) -> None:
        object.__setattr__(self, "packet_id", packet_id)
        object.__setattr__(self, "return_codes", return_codes)


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    """UNSUBSCRIBE (3.10): topic filters; flags 0b0010."""

    packet_id: int
    topics: tuple[str, ...]

    def __init__(self, packet_id: int, topics: tuple[str, ...]) -> None:
        object.__setattr__(self, "packet_id", packet_id)
        object.__setattr__(self, "topics", topics)


@dataclass(frozen=True, slots=True)
class UnsubAck:
    """UNSUBACK (3.11)."""

    packet_id: int

    def __init__(self, packet_id: int) -> None:
        object.__setattr__(self, "packet_id", packet_id)


@dataclass(frozen=True, slots=True)
class PingReq:
    """PINGREQ (3.12)."""


@dataclass(frozen=True, slots=True)
class PingResp:
    """PINGRESP (3.13)."""


@dataclass(frozen=True, slots=True)
class Disconnect:
    """DISCONNECT (3.14)."""


Packet = (
    Connect
    | ConnAck
    | Publish
    | PubAck
    | PubRec
    | PubRel
    | PubComp
    | Subscribe
    | SubAck
    | Unsubscribe
    | UnsubAck
    | PingReq
    | PingResp
    | Disconnect
)

# ---- Remaining Length (2.2.3) ---------------------------------------------------------


def encode_remaining_length(n: int) -> bytes:
    """The 1-4 byte variable-length encoding of 2.2.3 (7 bits per byte, low bits first)."""
    if not 0 <= n <= MAX_REMAINING_LENGTH:
        raise ValueError(f"remaining length must be 0..{MAX_REMAINING_LENGTH}, got {n}")
    if n < 0x80:
        return ONE_BYTE[n]  # one byte, as for most packets
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def decode_remaining_length(data: bytes | bytearray, pos: int = 1) -> tuple[int, int] | None:
    """(value, position after the field) of the Remaining Length at `pos`.

    None when `data` ends before the field does (wait for more bytes); a
    fifth length byte is a MqttDecodeError (2.2.3).
    """
    value = 0
    shift = 0
    n = len(data)
    for i in range(pos, pos + 4):
        if i >= n:
            return None
        byte = data[i]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i + 1
        shift += 7
    raise MqttDecodeError("remaining length field is longer than four bytes")


# ---- encoding ---------------------------------------------------------------------------


def _u16(n: int, what: str) -> bytes:
    if not 0 <= n <= 0xFFFF:
        raise ValueError(f"{what} must be 0..65535, got {n}")
    return n.to_bytes(2, "big")


def _packet_id(n: int | None) -> bytes:
    if n is None or not 1 <= n <= 0xFFFF:
        raise ValueError(f"packet identifier must be 1..65535, got {n}")
    return n.to_bytes(2, "big")


def _binary(b: bytes, what: str) -> bytes:
    if len(b) > MAX_STRING_BYTES:
        raise ValueError(f"{what} is {len(b)} bytes, at most {MAX_STRING_BYTES} allowed")
    return len(b).to_bytes(2, "big") + bytes(b)


def encode_string(s: str, what: str = "string") -> bytes:
    """A UTF-8 string with its 2-byte length (1.5.3); ValueError for NUL, surrogates, length."""
    if "\x00" in s:
        raise ValueError(f"{what} contains U+0000, which MQTT strings must not (1.5.3)")
    try:
        raw = s.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} is not encodable as UTF-8 (lone surrogate)") from None
    return _binary(raw, what)


def _qos(qos: int, what: str) -> int:
    if qos not in (0, 1, 2):
        raise ValueError(f"{what} must be 0, 1 or 2, got {qos}")
    return qos


def _frame(first_byte: int, body: bytes) -> bytes:
    return ONE_BYTE[first_byte] + encode_remaining_length(len(body)) + body


def _encode_connect(p: Connect) -> bytes:
    flags = 0x02 if p.clean_session else 0
    payload = [encode_string(p.client_id, "client identifier")]
    if p.will is not None:
        w = p.will
        flags |= 0x04 | (_qos(w.qos, "will QoS") << 3) | (0x20 if w.retain else 0)
        payload.append(encode_string(w.topic, "will topic"))
        payload.append(_binary(w.payload, "will message"))
    if p.username is not None:
        flags |= 0x80
        payload.append(encode_string(p.username, "user name"))
    if p.password is not None:
        if p.username is None:
            raise ValueError("a password needs a user name (3.1.2.9)")
        flags |= 0x40
        payload.append(_binary(p.password, "password"))
    head = encode_string(PROTOCOL_NAME, "protocol name") + bytes((PROTOCOL_LEVEL, flags))
    head += _u16(p.keep_alive_s, "keep alive")
    return _frame(0x10, head + b"".join(payload))


def _encode_publish(p: Publish) -> bytes:
    qos = _qos(p.qos, "QoS")
    if qos == 0 and p.dup:
        raise ValueError("DUP must be 0 for QoS 0 (3.3.1.1)")
    body = encode_string(p.topic, "topic name")
    if qos:
        body += _packet_id(p.packet_id)
    elif p.packet_id is not None:
        raise ValueError("a QoS 0 PUBLISH has no packet identifier (2.3.1)")
    flags = (0x08 if p.dup else 0) | (qos << 1) | (0x01 if p.retain else 0)
    return _frame(0x30 | flags, body + bytes(p.payload))


# Each class's type, in a table rather than as a class attribute: compiled, every
# class attribute of a dataclass becomes one of its fields (in its repr, its
# equality and the arguments `dataclasses.replace` passes to `__init__`).
_PACKET_TYPES: Final[dict[type, PacketType]] = {
    Connect: PacketType.CONNECT,
    ConnAck: PacketType.CONNACK,
    Publish: PacketType.PUBLISH,
    PubAck: PacketType.PUBACK,
    PubRec: PacketType.PUBREC,
    PubRel: PacketType.PUBREL,
    PubComp: PacketType.PUBCOMP,
    Subscribe: PacketType.SUBSCRIBE,
    SubAck: PacketType.SUBACK,
    Unsubscribe: PacketType.UNSUBSCRIBE,
    UnsubAck: PacketType.UNSUBACK,
    PingReq: PacketType.PINGREQ,
    PingResp: PacketType.PINGRESP,
    Disconnect: PacketType.DISCONNECT,
}


def encode(packet: Packet) -> bytes:
    """Wire bytes of one control packet. Raises ValueError for one that must not be sent."""
    if isinstance(packet, Publish):
        return _encode_publish(packet)
    if isinstance(packet, _ID_ONLY):
        first = 0x62 if isinstance(packet, PubRel) else _PACKET_TYPES[type(packet)] << 4
        return ONE_BYTE[first] + b"\x02" + _packet_id(packet.packet_id)
    if isinstance(packet, Connect):
        return _encode_connect(packet)
    if isinstance(packet, ConnAck):
        if not 0 <= packet.return_code <= 0xFF:
            raise ValueError(f"return code must be one byte, got {packet.return_code}")
        if packet.session_present and packet.return_code:
            raise ValueError("session present must be 0 when the connection is refused (3.2.2.2)")
        return bytes((0x20, 2, 1 if packet.session_present else 0, packet.return_code))
    if isinstance(packet, Subscribe):
        if not packet.topics:
            raise ValueError("SUBSCRIBE needs at least one topic filter (3.8.3)")
        body = [_packet_id(packet.packet_id)]
        for topic, qos in packet.topics:
            body.append(encode_string(topic, "topic filter") + bytes((_qos(qos, "requested QoS"),)))
        return _frame(0x82, b"".join(body))
    if isinstance(packet, SubAck):
        if not packet.return_codes:
            raise ValueError("SUBACK needs at least one return code (3.9.3)")
        for code in packet.return_codes:
            if code not in _SUBACK_CODES:
                raise ValueError(f"SUBACK return code must be 0, 1, 2 or 0x80, got {code}")
        return _frame(0x90, _packet_id(packet.packet_id) + bytes(packet.return_codes))
    if isinstance(packet, Unsubscribe):
        if not packet.topics:
            raise ValueError("UNSUBSCRIBE needs at least one topic filter (3.10.3)")
        body = [_packet_id(packet.packet_id)]
        body.extend(encode_string(topic, "topic filter") for topic in packet.topics)
        return _frame(0xA2, b"".join(body))
    if isinstance(packet, _EMPTY):
        return bytes((_PACKET_TYPES[type(packet)] << 4, 0))
    raise TypeError(f"not an MQTT packet: {packet!r}")


_ID_ONLY = (PubAck, PubRec, PubRel, PubComp, UnsubAck)
_EMPTY = (PingReq, PingResp, Disconnect)

# ---- decoding ---------------------------------------------------------------------------

_PINGREQ = PingReq()
_PINGRESP = PingResp()
_DISCONNECT = Disconnect()


class _Reader:
    """Walks one packet's body; every overrun is a MqttDecodeError."""

    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes, pos: int, end: int) -> None:
        self.data = data
        self.pos = pos
        self.end = end

    def left(self) -> int:
        return self.end - self.pos

    def u8(self, what: str) -> int:
        if self.pos >= self.end:
            raise MqttDecodeError(f"packet ends before the {what}")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def u16(self, what: str) -> int:
        if self.pos + 2 > self.end:
            raise MqttDecodeError(f"packet ends inside the {what}")
        hi, lo = self.data[self.pos], self.data[self.pos + 1]
        self.pos += 2
        return (hi << 8) | lo

    def packet_id(self) -> int:
        pid = self.u16("packet identifier")
        if pid == 0:
            raise MqttDecodeError("packet identifier 0 is not allowed (2.3.1)")
        return pid

    def binary(self, what: str) -> bytes:
        n = self.u16(f"{what} length")
        if self.pos + n > self.end:
            raise MqttDecodeError(f"{what} of {n} bytes is truncated")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def string(self, what: str) -> str:
        raw = self.binary(what)
        try:
            s = raw.decode("utf-8")  # strict: rejects ill-formed UTF-8 and surrogates
        except UnicodeDecodeError:
            raise MqttDecodeError(f"{what} is not well-formed UTF-8 (1.5.3)") from None
        if "\x00" in s:
            raise MqttDecodeError(f"{what} contains U+0000 (1.5.3)")
        return s

    def rest(self) -> bytes:
        b = self.data[self.pos : self.end]
        self.pos = self.end
        return b

    def done(self, what: str) -> None:
        if self.pos != self.end:
            raise MqttDecodeError(f"{self.end - self.pos} unexpected bytes at the end of {what}")


def _decode_connect(r: _Reader) -> Connect:
    name = r.string("protocol name")
    level = r.u8("protocol level")
    if name not in (PROTOCOL_NAME, _LEGACY_PROTOCOL_NAME):
        raise MqttDecodeError(f"protocol name {name!r} is not MQTT (3.1.2.1)")
    if name != PROTOCOL_NAME or level != PROTOCOL_LEVEL:
        raise UnsupportedProtocolLevel(level)
    flags = r.u8("connect flags")
    if flags & 0x01:
        raise MqttDecodeError("reserved connect flag is set (3.1.2.3)")
    keep_alive = r.u16("keep alive")
    client_id = r.string("client identifier")
    will = None
    will_qos = (flags >> 3) & 0x03
    if flags & 0x04:
        if will_qos == 3:
            raise MqttDecodeError("will QoS 3 (3.1.2.6)")
        topic = r.string("will topic")
        will = Will(topic, r.binary("will message"), will_qos, bool(flags & 0x20))
    elif will_qos or flags & 0x20:
        raise MqttDecodeError("will QoS or will retain set without the will flag (3.1.2.6)")
    username = r.string("user name") if flags & 0x80 else None
    if flags & 0x40:
        if username is None:
            raise MqttDecodeError("password flag without user name flag (3.1.2.9)")
        password = r.binary("password")
    else:
        password = None
    r.done("CONNECT")
    return Connect(client_id, bool(flags & 0x02), keep_alive, will, username, password)


def _decode_body(ptype: int, flags: int, r: _Reader) -> Packet:
    if ptype == 3:
        qos = (flags >> 1) & 0x03
        if qos == 3:
            raise MqttDecodeError("PUBLISH with QoS 3 (3.3.1.2)")
        dup = bool(flags & 0x08)
        if dup and not qos:
            raise MqttDecodeError("PUBLISH with DUP set and QoS 0 (3.3.1.1)")
        topic = r.string("topic name")
        pid = r.packet_id() if qos else None
        return Publish(topic, r.rest(), qos, bool(flags & 0x01), dup, pid)
    if flags != (0x02 if ptype in (6, 8, 10) else 0):
        raise MqttDecodeError(f"reserved flags {flags:#06b} in {_TYPE_NAMES[ptype]} (2.2.2)")
    if ptype in _ID_ONLY_TYPES:
        pid = r.packet_id()
        r.done(_TYPE_NAMES[ptype])
        return _ID_ONLY_TYPES[ptype](pid)
    if ptype == 1:
        return _decode_connect(r)
    if ptype == 2:
        ack_flags = r.u8("connect acknowledge flags")
        code = r.u8("return code")
        r.done("CONNACK")
        if ack_flags & 0xFE:
            raise MqttDecodeError("reserved connect acknowledge flags are set (3.2.2.1)")
        if ack_flags and code:
            raise MqttDecodeError("session present is set in a refusing CONNACK (3.2.2.2)")
        return ConnAck(bool(ack_flags), code)
    if ptype == 8:
        pid = r.packet_id()
        topics = []
        while r.left():
            topic = r.string("topic filter")
            qos = r.u8("requested QoS")
            if qos > 2:
                raise MqttDecodeError(f"requested QoS byte {qos:#04x} (3.8.3.1)")
            topics.append((topic, qos))
        if not topics:
            raise MqttDecodeError("SUBSCRIBE without topic filters (3.8.3)")
        return Subscribe(pid, tuple(topics))
    if ptype == 9:
        pid = r.packet_id()
        codes = tuple(r.rest())
        if not codes:
            raise MqttDecodeError("SUBACK without return codes (3.9.3)")
        for code in codes:
            if code not in _SUBACK_CODES:
                raise MqttDecodeError(f"reserved SUBACK return code {code:#04x} (3.9.3)")
        return SubAck(pid, codes)
    if ptype == 10:
        pid = r.packet_id()
        filters = []
        while r.left():
            filters.append(r.string("topic filter"))
        if not filters:
            raise MqttDecodeError("UNSUBSCRIBE without topic filters (3.10.3)")
        return Unsubscribe(pid, tuple(filters))
    if ptype in (12, 13, 14):
        r.done(_TYPE_NAMES[ptype])
        return _PINGREQ if ptype == 12 else _PINGRESP if ptype == 13 else _DISCONNECT
    raise MqttDecodeError(f"reserved packet type {ptype} (2.2.1)")


_ID_ONLY_TYPES: dict[int, type[PubAck | PubRec | PubRel | PubComp | UnsubAck]] = {
    4: PubAck,
    5: PubRec,
    6: PubRel,
    7: PubComp,
    11: UnsubAck,
}


def _fixed_header(data: bytes | bytearray, pos: int = 0) -> tuple[int, int] | None:
    """(start of the variable header, end of the packet) or None when incomplete."""
    if pos >= len(data):
        return None
    ptype = data[pos] >> 4
    if ptype == 0 or ptype == 15:
        raise MqttDecodeError(f"reserved packet type {ptype} (2.2.1)")
    length = decode_remaining_length(data, pos + 1)
    if length is None:
        return None
    remaining, body = length
    return body, body + remaining


def decode(data: bytes | bytearray | memoryview) -> Packet:
    """Parse exactly one whole control packet. Raises MqttDecodeError (only) for bad input."""
    data = as_bytes(data)
    bounds = _fixed_header(data)
    if bounds is None:
        raise MqttDecodeError("packet ends inside the fixed header")
    body, end = bounds
    if end != len(data):
        raise MqttDecodeError(
            f"remaining length says {end - body} bytes, the packet has {len(data) - body}"
        )
    return _decode_body(data[0] >> 4, data[0] & 0x0F, _Reader(data, body, end))


def header_length(data: bytes | bytearray | memoryview) -> int:
    """Fixed header plus variable header of one encoded packet (the rest is its payload).

    Per 2.3 and 3.x.3: CONNECT has a 10-byte variable header and the client
    id, will, user name and password as payload; PUBLISH has the topic name
    and packet id as variable header and the application message as payload;
    SUBSCRIBE, SUBACK and UNSUBSCRIBE have the packet id as variable header
    and their lists as payload; every other packet is all header. Raises
    MqttDecodeError when the header cannot be walked; for every packet
    decode() accepts, the payload is len(data) - header_length(data).
    """
    data = as_bytes(data)
    bounds = _fixed_header(data)
    if bounds is None or bounds[1] > len(data):
        raise MqttDecodeError("truncated MQTT packet")
    body, end = bounds
    ptype = data[0] >> 4
    if ptype == 3:
        r = _Reader(data, body, end)
        r.binary("topic name")
        header = r.pos + (2 if (data[0] >> 1) & 0x03 else 0)
    elif ptype == 1:
        r = _Reader(data, body, end)
        r.binary("protocol name")
        header = r.pos + 4  # level, flags, keep alive
    elif ptype in (8, 9, 10):
        header = body + 2
    else:
        header = end
    if header > end:
        raise MqttDecodeError("truncated MQTT variable header")
    return header


def split_packets(data: bytes | bytearray | memoryview) -> list[bytes]:
    """Cut bytes that hold whole packets back to back into the packets (no decoding).

    Raises MqttDecodeError when the bytes do not end on a packet boundary.
    """
    data = as_bytes(data)
    out = []
    pos = 0
    while pos < len(data):
        bounds = _fixed_header(data, pos)
        if bounds is None or bounds[1] > len(data):
            raise MqttDecodeError("bytes end inside a packet")
        out.append(data[pos : bounds[1]])
        pos = bounds[1]
    return out


# ---- stream framing -------------------------------------------------------------------


class PacketFramer:
    """Cuts a byte stream into whole packets, holding at most one partial packet.

        framer.feed(chunk)
        while (raw := framer.next_packet()) is not None:
            packet = decode(raw)

    next_packet() raises MqttDecodeError for a reserved packet type, a length
    field longer than four bytes, or a packet larger than
    `max_packet_size_bytes` (fixed header included), as soon as the fixed
    header shows it; once it has raised, the stream cannot be resynchronised
    and every later call raises again.
    """

    __slots__ = ("_buf", "_error", "_pos", "max_packet_size_bytes")

    def __init__(self, max_packet_size_bytes: int = MAX_PACKET_SIZE_BYTES) -> None:
        if not 2 <= max_packet_size_bytes <= MAX_PACKET_SIZE_BYTES:
            raise ValueError(
                f"max_packet_size_bytes must be 2..{MAX_PACKET_SIZE_BYTES}, "
                f"got {max_packet_size_bytes}"
            )
        self.max_packet_size_bytes = max_packet_size_bytes
        self._buf = bytearray()
        self._pos = 0
        self._error: MqttDecodeError | None = None

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes from the stream (any split)."""
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet returned as a packet."""
        return len(self._buf) - self._pos

    def next_packet(self) -> bytes | None:
        """The next whole packet's bytes, or None until more bytes arrive."""
        if self._error is not None:
            raise self._error
        buf, pos = self._buf, self._pos
        try:
            bounds = _fixed_header(buf, pos)
            if bounds is not None and bounds[1] - pos > self.max_packet_size_bytes:
                raise MqttDecodeError(
                    f"packet of {bounds[1] - pos} bytes exceeds the limit of "
                    f"{self.max_packet_size_bytes} bytes"
                )
        except MqttDecodeError as exc:
            self._error = exc
            self._buf = bytearray()  # nothing in it will ever be used
            self._pos = 0
            raise
        if bounds is None or bounds[1] > len(buf):
            return None
        end = bounds[1]
        packet = bytes(buf[pos:end])
        if end == len(buf):
            buf.clear()
            self._pos = 0
        else:
            self._pos = end
        return packet
