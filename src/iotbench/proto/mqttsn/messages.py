"""MQTT-SN 1.2's messages (MQTT For Sensor Networks Protocol Specification
Version 1.2, Stanford-Clark and Truong, 5.2 to 5.5): one frozen dataclass per
message type, their type numbers and field enums. codec.py turns them into
bytes and back, and is where they are imported from.

Each class writes out its `__init__`: compiled, it stores the fields directly,
where the one `@dataclass` generates is interpreted Python that costs 10 to 25
times as much, and S4's and S6's runs build a message for every datagram
(tests/test_written_inits.py checks every such `__init__` against its fields).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final

__all__ = [
    "MSG_TYPES",
    "PROTOCOL_ID",
    "Advertise",
    "ConnAck",
    "Connect",
    "Disconnect",
    "Encapsulated",
    "GwInfo",
    "Message",
    "MsgType",
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
]

#: 5.3.8: the only ProtocolId MQTT-SN 1.2 defines.
PROTOCOL_ID = 0x01


class MsgType(IntEnum):
    """MsgType values (5.2.2); the other values are reserved."""

    ADVERTISE = 0x00
    SEARCHGW = 0x01
    GWINFO = 0x02
    CONNECT = 0x04
    CONNACK = 0x05
    WILLTOPICREQ = 0x06
    WILLTOPIC = 0x07
    WILLMSGREQ = 0x08
    WILLMSG = 0x09
    REGISTER = 0x0A
    REGACK = 0x0B
    PUBLISH = 0x0C
    PUBACK = 0x0D
    PUBCOMP = 0x0E
    PUBREC = 0x0F
    PUBREL = 0x10
    SUBSCRIBE = 0x12
    SUBACK = 0x13
    UNSUBSCRIBE = 0x14
    UNSUBACK = 0x15
    PINGREQ = 0x16
    PINGRESP = 0x17
    DISCONNECT = 0x18
    WILLTOPICUPD = 0x1A
    WILLTOPICRESP = 0x1B
    WILLMSGUPD = 0x1C
    WILLMSGRESP = 0x1D
    ENCAPSULATED = 0xFE


class TopicIdType(IntEnum):
    """5.3.4 Flags bits 1-0: what the TopicId (or TopicName) field holds; 0b11 is reserved."""

    NORMAL = 0b00  # a topic id from REGISTER/REGACK/SUBACK (or, in SUBSCRIBE, a topic name)
    PREDEFINED = 0b01  # a topic id both sides know in advance
    SHORT = 0b10  # a two-octet topic name carried in the TopicId field


class ReturnCode(IntEnum):
    """ReturnCode values (5.3.10); 0x04-0xFF are reserved."""

    ACCEPTED = 0x00
    CONGESTION = 0x01
    INVALID_TOPIC_ID = 0x02
    NOT_SUPPORTED = 0x03


# ---- messages ------------------------------------------------------------------------
#
# Field names follow the specification; integer fields are the raw octets
# (TopicId and MsgId 0..65535, GwId and Radius 0..255, Duration 0..65535 s).


@dataclass(frozen=True, slots=True)
class Advertise:
    """ADVERTISE (5.4.1): broadcast by a gateway; duration_s until its next one."""

    gw_id: int
    duration_s: int

    def __init__(self, gw_id: int, duration_s: int) -> None:
        object.__setattr__(self, "gw_id", gw_id)
        object.__setattr__(self, "duration_s", duration_s)


@dataclass(frozen=True, slots=True)
class SearchGw:
    """SEARCHGW (5.4.2): broadcast by a client looking for a gateway."""

    radius: int

    def __init__(self, radius: int) -> None:
        object.__setattr__(self, "radius", radius)


@dataclass(frozen=True, slots=True)
class GwInfo:
    """GWINFO (5.4.3): gw_add is empty when a gateway answers, set when a client does."""

    gw_id: int
    gw_add: bytes = b""

    def __init__(self, gw_id: int, gw_add: bytes = b"") -> None:
        object.__setattr__(self, "gw_id", gw_id)
        object.__setattr__(self, "gw_add", gw_add)


@dataclass(frozen=True, slots=True)
class Connect:
    """CONNECT (5.4.4). duration_s is the keep-alive; will asks to be prompted for a will."""

    client_id: str
    duration_s: int
    clean_session: bool = True
    will: bool = False
    protocol_id: int = PROTOCOL_ID

    def __init__(
        self,
        client_id: str,
        duration_s: int,
        clean_session: bool = True,
        will: bool = False,
        protocol_id: int = PROTOCOL_ID,
    ) -> None:
        object.__setattr__(self, "client_id", client_id)
        object.__setattr__(self, "duration_s", duration_s)
        object.__setattr__(self, "clean_session", clean_session)
        object.__setattr__(self, "will", will)
        object.__setattr__(self, "protocol_id", protocol_id)


@dataclass(frozen=True, slots=True)
class ConnAck:
    """CONNACK (5.4.5)."""

    return_code: int

    def __init__(self, return_code: int) -> None:
        object.__setattr__(self, "return_code", return_code)


@dataclass(frozen=True, slots=True)
class WillTopicReq:
    """WILLTOPICREQ (5.4.6)."""


@dataclass(frozen=True, slots=True)
class WillTopic:
    """WILLTOPIC (5.4.7). topic None is the empty WILLTOPIC (no Flags, no topic),
    which deletes the will (6.3)."""

    topic: str | None
    qos: int = 0
    retain: bool = False

    def __init__(self, topic: str | None, qos: int = 0, retain: bool = False) -> None:
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "qos", qos)
        object.__setattr__(self, "retain", retain)


@dataclass(frozen=True, slots=True)
class WillMsgReq:
    """WILLMSGREQ (5.4.8)."""


@dataclass(frozen=True, slots=True)
class WillMsg:
    """WILLMSG (5.4.9)."""

    message: bytes

    def __init__(self, message: bytes) -> None:
        object.__setattr__(self, "message", message)


@dataclass(frozen=True, slots=True)
class Register:
    """REGISTER (5.4.10): topic_id is 0x0000 from a client, the assigned id from a gateway."""

    topic_id: int
    msg_id: int
    topic_name: str

    def __init__(self, topic_id: int, msg_id: int, topic_name: str) -> None:
        object.__setattr__(self, "topic_id", topic_id)
        object.__setattr__(self, "msg_id", msg_id)
        object.__setattr__(self, "topic_name", topic_name)


@dataclass(frozen=True, slots=True)
class RegAck:
    """REGACK (5.4.11)."""

    topic_id: int
    msg_id: int
    return_code: int

    def __init__(self, topic_id: int, msg_id: int, return_code: int) -> None:
        object.__setattr__(self, "topic_id", topic_id)
        object.__setattr__(self, "msg_id", msg_id)
        object.__setattr__(self, "return_code", return_code)


@dataclass(frozen=True, slots=True)
class Publish:
    """PUBLISH (5.4.12). qos is -1, 0, 1 or 2; msg_id is 0x0000 for QoS 0 and -1.

    topic_id holds the two octets of the TopicId field: a normal or predefined
    topic id, or a short topic name (see short_topic_id()).
    """

    topic_id: int
    msg_id: int
    data: bytes = b""
    qos: int = 0
    retain: bool = False
    dup: bool = False
    topic_id_type: TopicIdType = TopicIdType.NORMAL

    def __init__(
        self,
        topic_id: int,
        msg_id: int,
        data: bytes = b"",
        qos: int = 0,
        retain: bool = False,
        dup: bool = False,
        topic_id_type: TopicIdType = TopicIdType.NORMAL,
    ) -> None:
        object.__setattr__(self, "topic_id", topic_id)
        object.__setattr__(self, "msg_id", msg_id)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "qos", qos)
        object.__setattr__(self, "retain", retain)
        object.__setattr__(self, "dup", dup)
        object.__setattr__(self, "topic_id_type", topic_id_type)


@dataclass(frozen=True, slots=True)
class PubAck:
    """PUBACK (5.4.13): QoS 1 acknowledgement, or a rejection of any PUBLISH."""

    topic_id: int
    msg_id: int
    return_code: int

    def __init__(self, topic_id: int, msg_id: int, return_code: int) -> None:
        object.__setattr__(self, "topic_id", topic_id)
        object.__setattr__(self, "msg_id", msg_id)
        object.__setattr__(self, "return_code", return_code)


@dataclass(frozen=True, slots=True)
class PubRec:
    """PUBREC (5.4.14)."""

    msg_id: int

    def __init__(self, msg_id: int) -> None:
        object.__setattr__(self, "msg_id", msg_id)


@dataclass(frozen=True, slots=True)
class PubRel:
    """PUBREL (5.4.14)."""

    msg_id: int

    def __init__(self, msg_id: int) -> None:
        object.__setattr__(self, "msg_id", msg_id)


@dataclass(frozen=True, slots=True)
class PubComp:
    """PUBCOMP (5.4.14)."""

    msg_id: int

    def __init__(self, msg_id: int) -> None:
        object.__setattr__(self, "msg_id", msg_id)


@dataclass(frozen=True, slots=True)
class Subscribe:
    """SUBSCRIBE (5.4.15). NORMAL: topic_name (may hold wildcards); PREDEFINED and
    SHORT: the two octets in topic_id."""

    msg_id: int
    qos: int = 0
    topic_id_type: TopicIdType = TopicIdType.NORMAL
    topic_name: str = ""
    topic_id: int = 0
    dup: bool = False

    def __init__(
        self,
        msg_id: int,
        qos: int = 0,
        topic_id_type: TopicIdType = TopicIdType.NORMAL,
        topic_name: str = "",
        topic_id: int = 0,
        dup: bool = False,
    ) -> None:
        object.__setattr__(self, "msg_id", msg_id)
        object.__setattr__(self, "qos", qos)
        object.__setattr__(self, "topic_id_type", topic_id_type)
        object.__setattr__(self, "topic_name", topic_name)
        object.__setattr__(self, "topic_id", topic_id)
        object.__setattr__(self, "dup", dup)


@dataclass(frozen=True, slots=True)
class SubAck:
    """SUBACK (5.4.16): qos is the granted QoS; topic_id 0x0000 for wildcard filters."""

    topic_id: int
    msg_id: int
    return_code: int
    qos: int = 0

    def __init__(self, topic_id: int, msg_id: int, return_code: int, qos: int = 0) -> None:
        object.__setattr__(self, "topic_id", topic_id)
        object.__setattr__(self, "msg_id", msg_id)
        object.__setattr__(self, "return_code", return_code)
        object.__setattr__(self, "qos", qos)


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    """UNSUBSCRIBE (5.4.17), topic fields as in Subscribe."""

    msg_id: int
    topic_id_type: TopicIdType = TopicIdType.NORMAL
    topic_name: str = ""
    topic_id: int = 0

    def __init__(
        self,
        msg_id: int,
        topic_id_type: TopicIdType = TopicIdType.NORMAL,
        topic_name: str = "",
        topic_id: int = 0,
    ) -> None:
        object.__setattr__(self, "msg_id", msg_id)
        object.__setattr__(self, "topic_id_type", topic_id_type)
        object.__setattr__(self, "topic_name", topic_name)
        object.__setattr__(self, "topic_id", topic_id)


@dataclass(frozen=True, slots=True)
class UnsubAck:
    """UNSUBACK (5.4.18)."""

    msg_id: int

    def __init__(self, msg_id: int) -> None:
        object.__setattr__(self, "msg_id", msg_id)


@dataclass(frozen=True, slots=True)
class PingReq:
    """PINGREQ (5.4.19). client_id is set only by a sleeping client that wakes up (6.14)."""

    client_id: str | None = None

    def __init__(self, client_id: str | None = None) -> None:
        object.__setattr__(self, "client_id", client_id)


@dataclass(frozen=True, slots=True)
class PingResp:
    """PINGRESP (5.4.20)."""


@dataclass(frozen=True, slots=True)
class Disconnect:
    """DISCONNECT (5.4.21). duration_s is set only by a client going to sleep (6.14)."""

    duration_s: int | None = None

    def __init__(self, duration_s: int | None = None) -> None:
        object.__setattr__(self, "duration_s", duration_s)


@dataclass(frozen=True, slots=True)
class WillTopicUpd:
    """WILLTOPICUPD (5.4.22). topic None (no Flags, no topic) deletes the will."""

    topic: str | None
    qos: int = 0
    retain: bool = False

    def __init__(self, topic: str | None, qos: int = 0, retain: bool = False) -> None:
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "qos", qos)
        object.__setattr__(self, "retain", retain)


@dataclass(frozen=True, slots=True)
class WillTopicResp:
    """WILLTOPICRESP (5.4.24)."""

    return_code: int

    def __init__(self, return_code: int) -> None:
        object.__setattr__(self, "return_code", return_code)


@dataclass(frozen=True, slots=True)
class WillMsgUpd:
    """WILLMSGUPD (5.4.23)."""

    message: bytes

    def __init__(self, message: bytes) -> None:
        object.__setattr__(self, "message", message)


@dataclass(frozen=True, slots=True)
class WillMsgResp:
    """WILLMSGRESP (5.4.24)."""

    return_code: int

    def __init__(self, return_code: int) -> None:
        object.__setattr__(self, "return_code", return_code)


@dataclass(frozen=True, slots=True)
class Encapsulated:
    """Forwarder Encapsulation (5.5): ctrl (bits 1-0: broadcast radius, GW to
    forwarder only), the Wireless Node Id, and the whole MQTT-SN message it carries."""

    ctrl: int
    node_id: bytes
    message: bytes

    def __init__(self, ctrl: int, node_id: bytes, message: bytes) -> None:
        object.__setattr__(self, "ctrl", ctrl)
        object.__setattr__(self, "node_id", node_id)
        object.__setattr__(self, "message", message)

    @property
    def radius(self) -> int:
        return self.ctrl & 0x03


Message = (
    Advertise
    | SearchGw
    | GwInfo
    | Connect
    | ConnAck
    | WillTopicReq
    | WillTopic
    | WillMsgReq
    | WillMsg
    | Register
    | RegAck
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
    | WillTopicUpd
    | WillTopicResp
    | WillMsgUpd
    | WillMsgResp
    | Encapsulated
)

# Each class's type, in a table rather than as a class attribute: compiled, every
# class attribute of a dataclass becomes one of its fields (in its repr, its
# equality and the arguments `dataclasses.replace` passes to `__init__`).
MSG_TYPES: Final[dict[type, MsgType]] = {
    Advertise: MsgType.ADVERTISE,
    SearchGw: MsgType.SEARCHGW,
    GwInfo: MsgType.GWINFO,
    Connect: MsgType.CONNECT,
    ConnAck: MsgType.CONNACK,
    WillTopicReq: MsgType.WILLTOPICREQ,
    WillTopic: MsgType.WILLTOPIC,
    WillMsgReq: MsgType.WILLMSGREQ,
    WillMsg: MsgType.WILLMSG,
    Register: MsgType.REGISTER,
    RegAck: MsgType.REGACK,
    Publish: MsgType.PUBLISH,
    PubAck: MsgType.PUBACK,
    PubRec: MsgType.PUBREC,
    PubRel: MsgType.PUBREL,
    PubComp: MsgType.PUBCOMP,
    Subscribe: MsgType.SUBSCRIBE,
    SubAck: MsgType.SUBACK,
    Unsubscribe: MsgType.UNSUBSCRIBE,
    UnsubAck: MsgType.UNSUBACK,
    PingReq: MsgType.PINGREQ,
    PingResp: MsgType.PINGRESP,
    Disconnect: MsgType.DISCONNECT,
    WillTopicUpd: MsgType.WILLTOPICUPD,
    WillTopicResp: MsgType.WILLTOPICRESP,
    WillMsgUpd: MsgType.WILLMSGUPD,
    WillMsgResp: MsgType.WILLMSGRESP,
    Encapsulated: MsgType.ENCAPSULATED,
}
