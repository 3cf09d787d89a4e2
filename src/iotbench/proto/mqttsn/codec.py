"""MQTT-SN 1.2 message codec (MQTT For Sensor Networks Protocol Specification
Version 1.2, Stanford-Clark and Truong, sections 5.2 to 5.5), byte for byte.

- `encode(message) -> bytes` and `decode(datagram) -> message` for one whole
  message, one frozen dataclass per message type (`Advertise`, `Connect`,
  `Publish`, ...; defined in messages.py, imported from here). encode()
  raises ValueError for a message that cannot be sent; decode() raises
  `MqttSnDecodeError` and nothing else for bad input.
- The Forwarder Encapsulation (5.5) is the message `Encapsulated`; its
  `message` stays raw bytes, decoded with a second decode() by whoever
  unwraps it.
- `header_length(datagram)`: the bytes before the application payload, so a
  simulator can split bytes on the wire into header and payload: for PUBLISH
  the payload is the Data field, for every other message all is header.
- Helpers for the two-octet fields: `short_topic_id("ab")` and
  `short_topic_name(topic_id)` (short topic names, 3.x / 5.3.4), and
  `pack_udp_address` / `unpack_udp_address` for the GwAdd field of GWINFO.

Wire format (5.2): Length (1 octet, or 0x01 followed by 2 octets) counts the
whole message including itself; MsgType (1 octet); the variable part. The
encoder uses the 1-octet form whenever the total fits in 255 octets (5.2.1).

What decode() rejects: a Length that does not equal the datagram's size
(one UDP datagram carries one message), a 1-octet Length below 2, a 3-octet
Length below 4, reserved MsgTypes (0x03, 0x11, 0x19, 0x1E-0xFD, 0xFF), a
variable part of the wrong size for its type, strings that are not UTF-8,
the reserved TopicIdType 0b11 in PUBLISH, SUBSCRIBE and UNSUBSCRIBE, and an
encapsulation whose Length is shorter than its fixed part or that carries no
message. It accepts what the specification only asks senders not to do, so
that a stack can answer it (the gateway, not the codec, refuses e.g. an
empty client id): Flags bits that a message does not use are ignored, MsgId
0 and the reserved TopicIds 0x0000/0xFFFF are kept as they are, the 3-octet
Length form is accepted for short messages, and Return Codes 0x04-0xFF are
kept as numbers.

What decode() accepts, encode() accepts, and decode(encode(m)) == m. encode()
refuses the values the wire cannot tell apart from others: an empty PINGREQ
client id (5.4.19), a QoS or retain flag on the empty WILLTOPIC (5.4.7), a
SUBSCRIBE or UNSUBSCRIBE with both a topic name and a topic id (5.4.15).
"""

from __future__ import annotations

import ipaddress
from typing import Final

from iotbench.proto.errors import DecodeError
from iotbench.proto.octets import ONE_BYTE, as_bytes

from .messages import (
    MSG_TYPES,
    PROTOCOL_ID,
    Advertise,
    ConnAck,
    Connect,
    Disconnect,
    Encapsulated,
    GwInfo,
    Message,
    MsgType,
    PingReq,
    PingResp,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    RegAck,
    Register,
    ReturnCode,
    SearchGw,
    SubAck,
    Subscribe,
    TopicIdType,
    UnsubAck,
    Unsubscribe,
    WillMsg,
    WillMsgReq,
    WillMsgResp,
    WillMsgUpd,
    WillTopic,
    WillTopicReq,
    WillTopicResp,
    WillTopicUpd,
)

__all__ = [
    "MAX_MESSAGE_BYTES",
    "PROTOCOL_ID",
    "QOS_MINUS_ONE",
    "Advertise",
    "ConnAck",
    "Connect",
    "Disconnect",
    "Encapsulated",
    "GwInfo",
    "Message",
    "MsgType",
    "MqttSnDecodeError",
    "PingReq",
    "PingResp",
    "PubAck",
    "PubComp",
    "PubRec",
    "PubRel",
    "Publish",
    "RegAck",
    "Register",
    "ReturnCode",
    "SearchGw",
    "SubAck",
    "Subscribe",
    "TopicIdType",
    "UnsubAck",
    "Unsubscribe",
    "WillMsg",
    "WillMsgReq",
    "WillMsgResp",
    "WillMsgUpd",
    "WillTopic",
    "WillTopicReq",
    "WillTopicResp",
    "WillTopicUpd",
    "decode",
    "encode",
    "header_length",
    "pack_udp_address",
    "short_topic_id",
    "short_topic_name",
    "unpack_udp_address",
]

#: 5.2.1: the 3-octet Length form counts up to 65535 octets.
MAX_MESSAGE_BYTES: Final = 0xFFFF
#: 5.3.4: QoS "-1" (publish without connection) is the flag value 0b11.
QOS_MINUS_ONE: Final = -1
_LONG_LENGTH: Final = 0x01  # 5.2.1: first octet 0x01 announces the 3-octet Length form


class MqttSnDecodeError(DecodeError):
    """The bytes are not a well-formed MQTT-SN 1.2 message."""


# Flags bits (5.3.4).
_DUP: Final = 0x80
_QOS_SHIFT: Final = 5
_RETAIN: Final = 0x10
_WILL: Final = 0x08
_CLEAN_SESSION: Final = 0x04
_TOPIC_ID_TYPE: Final = 0x03


# ---- two-octet helpers ----------------------------------------------------------------


def short_topic_id(name: str) -> int:
    """The TopicId field of short topic name `name` (exactly two octets of UTF-8)."""
    raw = name.encode("utf-8")
    if len(raw) != 2:
        raise ValueError(f"a short topic name is two octets, {name!r} is {len(raw)}")
    return int.from_bytes(raw, "big")


def short_topic_name(topic_id: int) -> str | None:
    """The short topic name in a TopicId field, or None when the octets are not UTF-8."""
    try:
        return topic_id.to_bytes(2, "big").decode("utf-8")
    except (UnicodeDecodeError, OverflowError):
        return None


def pack_udp_address(addr: tuple[str, int]) -> bytes:
    """GwAdd of a UDP gateway: its IPv4 (4) or IPv6 (16) address octets, then the port (2).

    The specification leaves GwAdd's format to the network layer; this is the
    layout Eclipse Paho's UDP gateway and clients use.
    """
    host, port = addr
    return ipaddress.ip_address(host).packed + _u16(port, "port")


def unpack_udp_address(gw_add: bytes) -> tuple[str, int] | None:
    """(host, port) from a GwAdd made by pack_udp_address(), or None if it is not one."""
    if len(gw_add) not in (6, 18):
        return None
    host = str(ipaddress.ip_address(gw_add[:-2]))
    return host, int.from_bytes(gw_add[-2:], "big")


# ---- encoding --------------------------------------------------------------------------


def _u8(n: int, what: str) -> bytes:
    if not 0 <= n <= 0xFF:
        raise ValueError(f"{what} must be 0..255, got {n}")
    return ONE_BYTE[n]


def _u16(n: int, what: str) -> bytes:
    if not 0 <= n <= 0xFFFF:
        raise ValueError(f"{what} must be 0..65535, got {n}")
    return n.to_bytes(2, "big")


def _qos_bits(qos: int) -> int:
    if qos == QOS_MINUS_ONE:
        return 0b11 << _QOS_SHIFT
    if qos not in (0, 1, 2):
        raise ValueError(f"QoS must be -1, 0, 1 or 2, got {qos}")
    return qos << _QOS_SHIFT


def _flags(
    *,
    dup: bool = False,
    qos: int = 0,
    retain: bool = False,
    will: bool = False,
    clean_session: bool = False,
    topic_id_type: int = 0,
) -> bytes:
    if topic_id_type not in (0, 1, 2):
        raise ValueError(f"TopicIdType must be 0, 1 or 2, got {topic_id_type}")
    value = _qos_bits(qos) | topic_id_type
    if dup:
        value |= _DUP
    if retain:
        value |= _RETAIN
    if will:
        value |= _WILL
    if clean_session:
        value |= _CLEAN_SESSION
    return ONE_BYTE[value]


def _text(s: str) -> bytes:
    # "surrogatepass" is never used: a lone surrogate is not UTF-8 and must fail.
    return s.encode("utf-8")


def _will_topic(topic: str | None, qos: int, retain: bool) -> bytes:
    if topic is None:
        # 5.4.7: the empty WILLTOPIC has no Flags octet to carry a QoS or retain.
        if qos or retain:
            raise ValueError("an empty WILLTOPIC (no topic) carries no QoS or retain flag")
        return b""
    if qos == QOS_MINUS_ONE:
        raise ValueError("a will cannot have QoS -1")
    return _flags(qos=qos, retain=retain) + _text(topic)


def _topic_field(topic_id_type: int, topic_name: str, topic_id: int) -> bytes:
    # 5.4.15, 5.4.17: the field holds a TopicName (NORMAL) or a TopicId, never both.
    if topic_id_type == TopicIdType.NORMAL:
        if topic_id:
            raise ValueError("a NORMAL topic is sent by name: topic_id must be 0")
        return _text(topic_name)
    if topic_name:
        raise ValueError("a PREDEFINED or SHORT topic is sent as topic_id: topic_name must be ''")
    return _u16(topic_id, "topic id")


def _body(m: Message) -> bytes:
    if type(m) is Publish:
        return (
            _flags(dup=m.dup, qos=m.qos, retain=m.retain, topic_id_type=m.topic_id_type)
            + _u16(m.topic_id, "topic id")
            + _u16(m.msg_id, "msg id")
            + m.data
        )
    if type(m) is PubAck or type(m) is RegAck:
        return _u16(m.topic_id, "topic id") + _u16(m.msg_id, "msg id") + _u8(m.return_code, "rc")
    if type(m) is PubRec or type(m) is PubRel or type(m) is PubComp or type(m) is UnsubAck:
        return _u16(m.msg_id, "msg id")
    if type(m) is PingReq:
        if m.client_id == "":
            # 5.4.19: no ClientId and an empty one are the same octets (decoded as None).
            raise ValueError("a PINGREQ client id is None or not empty")
        return b"" if m.client_id is None else _text(m.client_id)
    if type(m) is PingResp or type(m) is WillTopicReq or type(m) is WillMsgReq:
        return b""
    if type(m) is Connect:
        return (
            _flags(will=m.will, clean_session=m.clean_session)
            + _u8(m.protocol_id, "protocol id")
            + _u16(m.duration_s, "duration")
            + _text(m.client_id)
        )
    if type(m) is ConnAck or type(m) is WillTopicResp or type(m) is WillMsgResp:
        return _u8(m.return_code, "return code")
    if type(m) is Register:
        return _u16(m.topic_id, "topic id") + _u16(m.msg_id, "msg id") + _text(m.topic_name)
    if type(m) is Subscribe:
        return (
            _flags(dup=m.dup, qos=m.qos, topic_id_type=m.topic_id_type)
            + _u16(m.msg_id, "msg id")
            + _topic_field(m.topic_id_type, m.topic_name, m.topic_id)
        )
    if type(m) is SubAck:
        return (
            _flags(qos=m.qos)
            + _u16(m.topic_id, "topic id")
            + _u16(m.msg_id, "msg id")
            + _u8(m.return_code, "return code")
        )
    if type(m) is Unsubscribe:
        return (
            _flags(topic_id_type=m.topic_id_type)
            + _u16(m.msg_id, "msg id")
            + _topic_field(m.topic_id_type, m.topic_name, m.topic_id)
        )
    if type(m) is Disconnect:
        return b"" if m.duration_s is None else _u16(m.duration_s, "duration")
    if type(m) is WillTopic or type(m) is WillTopicUpd:
        return _will_topic(m.topic, m.qos, m.retain)
    if type(m) is WillMsg or type(m) is WillMsgUpd:
        return m.message
    if type(m) is Advertise:
        return _u8(m.gw_id, "gw id") + _u16(m.duration_s, "duration")
    if type(m) is SearchGw:
        return _u8(m.radius, "radius")
    if type(m) is GwInfo:
        return _u8(m.gw_id, "gw id") + m.gw_add
    raise TypeError(f"not an MQTT-SN message: {m!r}")


def encode(message: Message) -> bytes:
    """The wire bytes of one message; the 1-octet Length whenever it fits (5.2.1)."""
    if type(message) is Encapsulated:
        return _encode_encapsulated(message)
    body = _body(message)
    total = len(body) + 2
    if total <= 0xFF:
        return ONE_BYTE[total] + ONE_BYTE[MSG_TYPES[type(message)]] + body
    total = len(body) + 4
    if total > MAX_MESSAGE_BYTES:
        raise ValueError(f"message of {total} octets exceeds {MAX_MESSAGE_BYTES} (5.2.1)")
    return (
        ONE_BYTE[_LONG_LENGTH]
        + total.to_bytes(2, "big")
        + ONE_BYTE[MSG_TYPES[type(message)]]
        + body
    )


def _encode_encapsulated(m: Encapsulated) -> bytes:
    # 5.5: Length is one octet counting up to the end of the Wireless Node Id.
    head = 3 + len(m.node_id)
    if head > 0xFF:
        raise ValueError(f"wireless node id of {len(m.node_id)} octets is too long (5.5)")
    if len(m.message) < 2:
        raise ValueError("an encapsulation carries a whole MQTT-SN message")
    return (
        ONE_BYTE[head]
        + ONE_BYTE[MsgType.ENCAPSULATED]
        + _u8(m.ctrl, "ctrl")
        + m.node_id
        + m.message
    )


# ---- decoding --------------------------------------------------------------------------


def _frame(data: bytes) -> tuple[int, int]:
    """(MsgType, offset of the variable part) after checking the Length field."""
    n = len(data)
    if n < 2:
        raise MqttSnDecodeError(f"{n} octets cannot hold a Length and a MsgType")
    first = data[0]
    if first == _LONG_LENGTH:
        if n < 4:
            raise MqttSnDecodeError("datagram ends inside the 3-octet Length form")
        length = (data[1] << 8) | data[2]
        start = 4
    else:
        length = first
        start = 2
    if data[start - 1] == MsgType.ENCAPSULATED and first != _LONG_LENGTH:
        return MsgType.ENCAPSULATED, start  # its Length covers only its own header (5.5)
    if length != n:
        raise MqttSnDecodeError(f"Length says {length} octets, the datagram has {n}")
    if length < start:
        raise MqttSnDecodeError(f"Length {length} is shorter than the header")
    return data[start - 1], start


def _str(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MqttSnDecodeError(f"{what} is not UTF-8: {exc.reason}") from None


def _fixed(name: str, body: bytes, size: int) -> None:
    if len(body) != size:
        raise MqttSnDecodeError(f"{name} has {len(body)} octets of variable part, not {size}")


def _at_least(name: str, body: bytes, size: int) -> None:
    if len(body) < size:
        raise MqttSnDecodeError(f"{name} needs at least {size} octets of variable part")


def _qos(flags: int) -> int:
    bits = (flags >> _QOS_SHIFT) & 0b11
    return QOS_MINUS_ONE if bits == 0b11 else bits


# By their bits: compiled, an enum's lookup by value is a call into Python's enum.
_TOPIC_ID_TYPES: Final = (TopicIdType.NORMAL, TopicIdType.PREDEFINED, TopicIdType.SHORT)


def _topic_id_type(flags: int, name: str) -> TopicIdType:
    bits = flags & _TOPIC_ID_TYPE
    if bits == 0b11:
        raise MqttSnDecodeError(f"{name} has the reserved TopicIdType 0b11")
    return _TOPIC_ID_TYPES[bits]


def _u16_at(body: bytes, pos: int) -> int:
    return (body[pos] << 8) | body[pos + 1]


def _decode_will_topic(
    cls: type[WillTopic | WillTopicUpd], body: bytes
) -> WillTopic | WillTopicUpd:
    if not body:
        return cls(None)
    flags = body[0]
    qos = _qos(flags)
    if qos == QOS_MINUS_ONE:
        raise MqttSnDecodeError("a will topic with QoS -1")
    return cls(_str(body[1:], "will topic"), qos, bool(flags & _RETAIN))


def _decode_topic(name: str, flags: int, body: bytes) -> tuple[TopicIdType, str, int]:
    kind = _topic_id_type(flags, name)
    rest = body[3:]
    if kind == TopicIdType.NORMAL:
        return kind, _str(rest, "topic name"), 0
    _fixed(name, body, 5)
    return kind, "", _u16_at(body, 3)


def _decode_body(mtype: int, body: bytes) -> Message:
    if mtype == MsgType.PUBLISH:
        _at_least("PUBLISH", body, 5)
        flags = body[0]
        return Publish(
            _u16_at(body, 1),
            _u16_at(body, 3),
            body[5:],
            _qos(flags),
            bool(flags & _RETAIN),
            bool(flags & _DUP),
            _topic_id_type(flags, "PUBLISH"),
        )
    if mtype == MsgType.PUBACK or mtype == MsgType.REGACK:
        ack = PubAck if mtype == MsgType.PUBACK else RegAck
        _fixed(ack.__name__.upper(), body, 5)
        return ack(_u16_at(body, 0), _u16_at(body, 2), body[4])
    if mtype in _MSG_ID_ONLY:
        with_msg_id = _MSG_ID_ONLY[mtype]
        _fixed(with_msg_id.__name__.upper(), body, 2)
        return with_msg_id(_u16_at(body, 0))
    if mtype == MsgType.PINGREQ:
        return PingReq(_str(body, "client id") if body else None)
    if mtype in _EMPTY:
        empty = _EMPTY[mtype]
        _fixed(empty.__name__.upper(), body, 0)
        return empty()
    if mtype == MsgType.CONNECT:
        _at_least("CONNECT", body, 4)
        flags = body[0]
        return Connect(
            _str(body[4:], "client id"),
            _u16_at(body, 2),
            bool(flags & _CLEAN_SESSION),
            bool(flags & _WILL),
            body[1],
        )
    if mtype in _RETURN_CODE_ONLY:
        with_code = _RETURN_CODE_ONLY[mtype]
        _fixed(with_code.__name__.upper(), body, 1)
        return with_code(body[0])
    if mtype == MsgType.REGISTER:
        _at_least("REGISTER", body, 4)
        return Register(_u16_at(body, 0), _u16_at(body, 2), _str(body[4:], "topic name"))
    if mtype == MsgType.SUBSCRIBE:
        _at_least("SUBSCRIBE", body, 3)
        flags = body[0]
        kind, name, topic_id = _decode_topic("SUBSCRIBE", flags, body)
        return Subscribe(_u16_at(body, 1), _qos(flags), kind, name, topic_id, bool(flags & _DUP))
    if mtype == MsgType.SUBACK:
        _fixed("SUBACK", body, 6)
        return SubAck(_u16_at(body, 1), _u16_at(body, 3), body[5], _qos(body[0]))
    if mtype == MsgType.UNSUBSCRIBE:
        _at_least("UNSUBSCRIBE", body, 3)
        kind, name, topic_id = _decode_topic("UNSUBSCRIBE", body[0], body)
        return Unsubscribe(_u16_at(body, 1), kind, name, topic_id)
    if mtype == MsgType.DISCONNECT:
        if not body:
            return Disconnect()
        _fixed("DISCONNECT", body, 2)
        return Disconnect(_u16_at(body, 0))
    if mtype == MsgType.WILLTOPIC:
        return _decode_will_topic(WillTopic, body)
    if mtype == MsgType.WILLTOPICUPD:
        return _decode_will_topic(WillTopicUpd, body)
    if mtype == MsgType.WILLMSG:
        return WillMsg(body)
    if mtype == MsgType.WILLMSGUPD:
        return WillMsgUpd(body)
    if mtype == MsgType.ADVERTISE:
        _fixed("ADVERTISE", body, 3)
        return Advertise(body[0], _u16_at(body, 1))
    if mtype == MsgType.SEARCHGW:
        _fixed("SEARCHGW", body, 1)
        return SearchGw(body[0])
    if mtype == MsgType.GWINFO:
        _at_least("GWINFO", body, 1)
        return GwInfo(body[0], body[1:])
    raise MqttSnDecodeError(f"reserved MsgType 0x{mtype:02x}")


_MSG_ID_ONLY: dict[int, type[PubRec | PubRel | PubComp | UnsubAck]] = {
    MsgType.PUBREC: PubRec,
    MsgType.PUBREL: PubRel,
    MsgType.PUBCOMP: PubComp,
    MsgType.UNSUBACK: UnsubAck,
}
_EMPTY: dict[int, type[PingResp | WillTopicReq | WillMsgReq]] = {
    MsgType.PINGRESP: PingResp,
    MsgType.WILLTOPICREQ: WillTopicReq,
    MsgType.WILLMSGREQ: WillMsgReq,
}
_RETURN_CODE_ONLY: dict[int, type[ConnAck | WillTopicResp | WillMsgResp]] = {
    MsgType.CONNACK: ConnAck,
    MsgType.WILLTOPICRESP: WillTopicResp,
    MsgType.WILLMSGRESP: WillMsgResp,
}


def _decode_encapsulated(data: bytes) -> Encapsulated:
    head = data[0]
    if head < 3:
        raise MqttSnDecodeError(f"encapsulation Length {head} is shorter than its fixed part")
    if len(data) < head + 2:
        raise MqttSnDecodeError("an encapsulation carries no whole MQTT-SN message")
    return Encapsulated(data[2], data[3:head], data[head:])


def decode(data: bytes | bytearray | memoryview) -> Message:
    """One message from one datagram; MqttSnDecodeError for anything malformed."""
    data = as_bytes(data)
    mtype, start = _frame(data)
    if mtype == MsgType.ENCAPSULATED:
        if start != 2:
            raise MqttSnDecodeError("an encapsulation has a 1-octet Length (5.5)")
        return _decode_encapsulated(data)
    return _decode_body(mtype, data[start:])


def header_length(data: bytes | bytearray | memoryview) -> int:
    """Octets before the application payload: for PUBLISH, Length + MsgType + Flags +
    TopicId + MsgId (7, or 9 with the 3-octet Length); for an encapsulated message its
    encapsulation header plus the inner message's header (all of the inner bytes when
    they are not a message: decode() leaves them raw, 5.5); every other message is all
    header. Raises MqttSnDecodeError for what decode() rejects, and only for that."""
    message = decode(data)
    if type(message) is Encapsulated:
        try:
            inner = header_length(message.message)
        except MqttSnDecodeError:
            inner = len(message.message)
        return len(data) - len(message.message) + inner
    if type(message) is Publish:
        return len(data) - len(message.data)
    return len(data)
