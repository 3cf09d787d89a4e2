"""MQTT-SN codec: hand-written byte vectors from the MQTT-SN 1.2 specification.

Expected bytes are written out by hand from the message formats of sections
5.2 to 5.5, never produced by the encoder under test.
"""

import pytest

from iotbench.proto.errors import DecodeError
from iotbench.proto.mqttsn.codec import (
    Advertise,
    ConnAck,
    Connect,
    Disconnect,
    Encapsulated,
    GwInfo,
    MqttSnDecodeError,
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
    decode,
    encode,
    header_length,
    pack_udp_address,
    short_topic_id,
    short_topic_name,
    unpack_udp_address,
)


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


def roundtrip(message, wire: bytes) -> None:
    assert encode(message) == wire
    assert decode(wire) == message


# ---- 5.4: every message, short Length form ---------------------------------------------

VECTORS = [
    # ADVERTISE: Length 5, MsgType 0x00, GwId, Duration (900 s = 0x0384)
    (Advertise(7, 900), "05 00 07 0384"),
    # SEARCHGW: Length 3, 0x01, Radius
    (SearchGw(1), "03 01 01"),
    # GWINFO from a gateway: GwId only; from a client: GwId and GwAdd
    (GwInfo(7), "03 02 07"),
    (GwInfo(7, h("7f000001 0b5b")), "09 02 07 7f000001 0b5b"),
    # CONNECT: Flags (Will 0x08, CleanSession 0x04), ProtocolId 0x01, Duration, ClientId
    (Connect("dev1", 60, True, False), "0a 04 04 01 003c 64657631"),
    (Connect("dev1", 60, False, True), "0a 04 08 01 003c 64657631"),
    (Connect("d", 0, True, True), "07 04 0c 01 0000 64"),
    # CONNACK with each return code of 5.3.10
    (ConnAck(ReturnCode.ACCEPTED), "03 05 00"),
    (ConnAck(ReturnCode.CONGESTION), "03 05 01"),
    (ConnAck(ReturnCode.INVALID_TOPIC_ID), "03 05 02"),
    (ConnAck(ReturnCode.NOT_SUPPORTED), "03 05 03"),
    (WillTopicReq(), "02 06"),
    # WILLTOPIC: Flags (QoS 1 = 0x20, Retain 0x10), WillTopic; empty form: no Flags
    (WillTopic("w/d", 1, True), "06 07 30 772f64"),
    (WillTopic("w", 2, False), "04 07 40 77"),
    (WillTopic(None), "02 07"),
    (WillMsgReq(), "02 08"),
    (WillMsg(b"gone"), "06 09 676f6e65"),
    # REGISTER from a client carries TopicId 0x0000
    (Register(0, 0x1234, "a/b"), "09 0a 0000 1234 612f62"),
    (Register(5, 1, "x"), "07 0a 0005 0001 78"),
    (RegAck(5, 0x1234, 0), "07 0b 0005 1234 00"),
    (RegAck(0, 1, ReturnCode.CONGESTION), "07 0b 0000 0001 01"),
    # PUBLISH: Flags, TopicId, MsgId, Data
    (Publish(5, 0, b"21.5", 0), "0b 0c 00 0005 0000 32312e35"),
    (Publish(5, 9, b"x", 1, True, True), "08 0c b0 0005 0009 78"),
    (Publish(5, 9, b"", 2), "07 0c 40 0005 0009"),
    # QoS -1 (0b11 = 0x60) with a predefined topic id (0b01)
    (Publish(3, 0, b"v", -1, topic_id_type=TopicIdType.PREDEFINED), "08 0c 61 0003 0000 76"),
    # a short topic name "ab" (0b10) in the TopicId field
    (Publish(0x6162, 0, b"v", 0, topic_id_type=TopicIdType.SHORT), "08 0c 02 6162 0000 76"),
    (PubAck(5, 9, 0), "07 0d 0005 0009 00"),
    (PubAck(5, 0, ReturnCode.INVALID_TOPIC_ID), "07 0d 0005 0000 02"),
    (PubComp(9), "04 0e 0009"),
    (PubRec(9), "04 0f 0009"),
    (PubRel(9), "04 10 0009"),
    # SUBSCRIBE: Flags (QoS, TopicIdType, DUP), MsgId, topic name or id
    (Subscribe(2, 1, TopicIdType.NORMAL, "s/#"), "08 12 20 0002 732f23"),
    (Subscribe(2, 2, TopicIdType.PREDEFINED, topic_id=3, dup=True), "07 12 c1 0002 0003"),
    (Subscribe(3, 0, TopicIdType.SHORT, topic_id=0x6162), "07 12 02 0003 6162"),
    # SUBACK: Flags (granted QoS), TopicId, MsgId, ReturnCode
    (SubAck(0, 2, 0, 1), "08 13 20 0000 0002 00"),
    (SubAck(7, 2, 0, 2), "08 13 40 0007 0002 00"),
    (Unsubscribe(4, TopicIdType.NORMAL, "s/#"), "08 14 00 0004 732f23"),
    (Unsubscribe(4, TopicIdType.PREDEFINED, topic_id=3), "07 14 01 0004 0003"),
    (UnsubAck(4), "04 15 0004"),
    # PINGREQ with and without a ClientId (6.14)
    (PingReq(), "02 16"),
    (PingReq("dev1"), "06 16 64657631"),
    (PingResp(), "02 17"),
    # DISCONNECT with and without a Duration (6.14)
    (Disconnect(), "02 18"),
    (Disconnect(600), "04 18 0258"),
    (WillTopicUpd("w", 1, False), "04 1a 20 77"),
    (WillTopicUpd(None), "02 1a"),
    (WillTopicResp(0), "03 1b 00"),
    (WillMsgUpd(b"bye"), "05 1c 627965"),
    (WillMsgResp(3), "03 1d 03"),
]


@pytest.mark.parametrize(("message", "wire"), VECTORS, ids=lambda v: type(v).__name__)
def test_vectors(message, wire):
    roundtrip(message, h(wire))


# ---- 5.2.1 Length ------------------------------------------------------------------------


def test_short_form_up_to_255_octets():
    data = b"d" * (255 - 7)
    wire = encode(Publish(1, 0, data))
    assert wire[:2] == h("ff 0c") and len(wire) == 255
    assert decode(wire).data == data


def test_long_form_from_256_octets():
    data = b"d" * (256 - 7)  # would be 256 octets with a 1-octet Length
    wire = encode(Publish(1, 0, data))
    assert wire[:4] == h("01 0102 0c") and len(wire) == 258
    assert decode(wire).data == data
    assert header_length(wire) == 9


def test_long_form_accepted_for_short_messages():
    assert decode(h("01 0004 17")) == PingResp()
    assert decode(h("01 0006 18 0258")) == Disconnect(600)


def test_too_long_for_the_length_field():
    with pytest.raises(ValueError):
        encode(Publish(1, 0, b"d" * (65536 - 9)))
    assert len(encode(Publish(1, 0, b"d" * (65535 - 9)))) == 65535


@pytest.mark.parametrize(
    "wire",
    [
        "",
        "02",
        "00 17",  # Length 0
        "03 17",  # Length longer than the datagram
        "02 17 00",  # Length shorter than the datagram
        "01 0003 17",  # 3-octet form shorter than its own header
        "01 00",  # ends inside the 3-octet Length
        "01 0005 17",
    ],
)
def test_bad_length(wire):
    with pytest.raises(MqttSnDecodeError):
        decode(h(wire))


# ---- malformed variable parts --------------------------------------------------------------


@pytest.mark.parametrize(
    "wire",
    [
        "02 03",  # reserved MsgType 0x03
        "02 11",
        "02 19",
        "02 1e",
        "02 fd",
        "02 ff",
        "04 00 07 03",  # ADVERTISE one octet short
        "02 01",  # SEARCHGW without Radius
        "02 02",  # GWINFO without GwId
        "05 04 04 01 00",  # CONNECT without a full Duration
        "04 05 00 00",  # CONNACK with two return codes
        "03 06 00",  # WILLTOPICREQ with a body
        "04 07 60 77",  # WILLTOPIC with QoS -1
        "06 0b 0005 0009",  # REGACK without ReturnCode
        "06 0c 00 0005 00",  # PUBLISH cut inside MsgId
        "07 0c 03 0005 0000",  # PUBLISH with the reserved TopicIdType 0b11
        "05 0f 0009 00",  # PUBREC too long
        "08 12 23 0002 7321",  # SUBSCRIBE with TopicIdType 0b11
        "06 12 01 0002 00",  # SUBSCRIBE predefined id of one octet
        "08 12 01 0002 000300",  # ... of three octets
        "07 13 20 0000 0002",  # SUBACK without ReturnCode
        "03 18 02",  # DISCONNECT with a one-octet Duration
        "03 17 00",  # PINGRESP with a body
        "05 0a 0000 12",  # REGISTER without a full MsgId
        "07 0a 0000 0001 ff",  # REGISTER topic name not UTF-8
        "04 16 c3 28",  # PINGREQ client id not UTF-8
    ],
)
def test_malformed(wire):
    with pytest.raises(MqttSnDecodeError) as info:
        decode(h(wire))
    assert isinstance(info.value, DecodeError)


def test_unused_flag_bits_are_ignored():
    # CONNECT uses only Will and CleanSession; DUP, QoS, Retain and TopicIdType bits are
    # "not used" (5.4.4) and must not make the message unreadable.
    assert decode(h("0a 04 f7 01 003c 64657631")) == Connect("dev1", 60, True, False)


def test_reserved_return_codes_and_ids_are_kept():
    assert decode(h("03 05 07")) == ConnAck(7)
    assert decode(h("07 0d ffff 0000 00")) == PubAck(0xFFFF, 0, 0)


def test_encode_refuses_what_cannot_be_sent():
    for bad in [
        Publish(0x10000, 0),
        Publish(1, 0, qos=3),
        Advertise(256, 1),
        Disconnect(-1),
        WillTopic("w", -1),
        Subscribe(1, 0, TopicIdType.PREDEFINED, topic_id=0x10000),
        Encapsulated(0, b"", b"\x02"),
    ]:
        with pytest.raises(ValueError):
            encode(bad)


# ---- 5.5 Forwarder Encapsulation ---------------------------------------------------------------


def test_encapsulation():
    inner = h("02 16")  # PINGREQ
    # Length counts Length, MsgType 0xFE, Ctrl and the 2-octet Wireless Node Id: 5
    wire = h("05 fe 01 abcd") + inner
    roundtrip(Encapsulated(1, h("abcd"), inner), wire)
    assert Encapsulated(1, h("abcd"), inner).radius == 1
    assert decode(decode(wire).message) == PingReq()


def test_encapsulation_of_a_publish_splits_header_and_payload():
    inner = encode(Publish(5, 0, b"21.5"))
    wire = encode(Encapsulated(0, b"\x07", inner))
    assert wire[:4] == h("04 fe 00 07")
    assert header_length(wire) == 4 + 7
    assert len(wire) - header_length(wire) == 4


@pytest.mark.parametrize("wire", ["02 fe", "03 fe 00", "05 fe 00 ab", "01 0007 fe 00 0216"])
def test_bad_encapsulation(wire):
    with pytest.raises(MqttSnDecodeError):
        decode(h(wire))


# ---- header_length ------------------------------------------------------------------------------


def test_header_length():
    assert header_length(encode(Publish(5, 9, b"payload", 1))) == 7
    assert header_length(encode(Connect("dev1", 60))) == 10
    assert header_length(h("02 17")) == 2
    with pytest.raises(MqttSnDecodeError):
        header_length(h("02 03"))


# ---- helpers ---------------------------------------------------------------------------------------


def test_short_topic_names():
    assert short_topic_id("ab") == 0x6162
    assert short_topic_name(0x6162) == "ab"
    assert short_topic_id("é") == 0xC3A9  # one character, two octets
    assert short_topic_name(0xC328) is None  # not UTF-8
    with pytest.raises(ValueError):
        short_topic_id("abc")


def test_udp_addresses():
    assert pack_udp_address(("127.0.0.1", 2907)) == h("7f000001 0b5b")
    assert unpack_udp_address(h("7f000001 0b5b")) == ("127.0.0.1", 2907)
    assert unpack_udp_address(pack_udp_address(("::1", 1))) == ("::1", 1)
    assert unpack_udp_address(b"\x01\x02") is None
