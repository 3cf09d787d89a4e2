"""MQTT codec: hand-written byte vectors from the OASIS MQTT 3.1.1 specification.

Expected bytes are written out by hand from the spec's figures and tables,
never produced by the encoder under test.
"""

import pytest

from iotbench.proto.errors import DecodeError
from iotbench.proto.mqtt.codec import (
    MAX_PACKET_SIZE_BYTES,
    ConnAck,
    Connect,
    Disconnect,
    MqttDecodeError,
    PacketFramer,
    PingReq,
    PingResp,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    SubAck,
    Subscribe,
    UnsubAck,
    Unsubscribe,
    UnsupportedProtocolLevel,
    Will,
    decode,
    decode_remaining_length,
    encode,
    encode_remaining_length,
    encode_string,
    header_length,
    split_packets,
)


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


def roundtrip(packet, wire: bytes) -> None:
    assert encode(packet) == wire
    assert decode(wire) == packet


# ---- 2.2.3 Remaining Length, table 2.4 -----------------------------------------------

TABLE_2_4 = [
    (0, "00"),
    (127, "7f"),
    (128, "80 01"),
    (16_383, "ff 7f"),
    (16_384, "80 80 01"),
    (2_097_151, "ff ff 7f"),
    (2_097_152, "80 80 80 01"),
    (268_435_455, "ff ff ff 7f"),
]


@pytest.mark.parametrize(("value", "wire"), TABLE_2_4)
def test_remaining_length_table_2_4(value, wire):
    assert encode_remaining_length(value) == h(wire)
    assert decode_remaining_length(b"\x30" + h(wire)) == (value, 1 + len(h(wire)))


def test_remaining_length_limits():
    with pytest.raises(ValueError):
        encode_remaining_length(268_435_456)
    with pytest.raises(ValueError):
        encode_remaining_length(-1)
    with pytest.raises(MqttDecodeError, match="four bytes"):
        decode_remaining_length(h("30 ff ff ff ff 01"))
    assert decode_remaining_length(h("30 ff ff")) is None  # wait for more bytes
    assert decode_remaining_length(h("30")) is None
    # 3.1.1 does not require the minimal encoding: 0x80 0x00 is 0.
    assert decode(h("c0 80 00")) == PingReq()


# ---- 1.5.3 UTF-8 strings -------------------------------------------------------------


def test_utf8_string_figure_1_3():
    # "A\U0002A6D4" (U+0041, U+2A6D4) is 00 05 41 F0 AA 9B 94.
    assert encode_string("A\U0002a6d4") == h("00 05 41 f0 aa 9b 94")
    wire = h("30 09 00 05 41 f0 aa 9b 94 78 79")
    assert decode(wire) == Publish("A\U0002a6d4", b"xy")


def test_utf8_rules():
    with pytest.raises(MqttDecodeError, match="U\\+0000"):
        decode(h("30 05 00 03 61 00 62"))  # "a\0b"
    with pytest.raises(MqttDecodeError, match="UTF-8"):
        decode(h("30 04 00 02 c3 28"))  # ill-formed sequence
    with pytest.raises(MqttDecodeError, match="UTF-8"):
        decode(h("30 05 00 03 ed a0 80"))  # a surrogate, U+D800
    # 1.5.3-3: a BOM is a character like any other, never stripped.
    assert decode(h("30 06 00 04 ef bb bf 61")).topic == "\ufeffa"
    with pytest.raises(ValueError, match="U\\+0000"):
        encode(Publish("a\x00"))
    with pytest.raises(ValueError, match="65535"):
        encode(Publish("a" * 65536))


# ---- 3.1 CONNECT -----------------------------------------------------------------------


def test_connect_variable_header_example_3_1_2_10():
    # Figure 3.8: protocol name "MQTT", level 4, flags: user name 1, password 1,
    # will retain 0, will QoS 01, will flag 1, clean session 1, reserved 0 -> 0xCE,
    # keep alive 10.
    var_header = h("00 04 4d 51 54 54 04 ce 00 0a")
    payload = (
        h("00 03") + b"cid" + h("00 04") + b"will" + h("00 03") + b"bye"
        + h("00 04") + b"user" + h("00 02") + b"pw"
    )  # fmt: skip
    wire = b"\x10" + bytes([len(var_header) + len(payload)]) + var_header + payload
    packet = Connect("cid", True, 10, Will("will", b"bye", 1, False), "user", b"pw")
    roundtrip(packet, wire)
    assert header_length(wire) == 2 + 10


def test_connect_minimal_and_flag_combinations():
    roundtrip(Connect("", True, 0), h("10 0c 00 04 4d 51 54 54 04 02 00 00 00 00"))
    roundtrip(Connect("a", False, 60), h("10 0d 00 04 4d 51 54 54 04 00 00 3c 00 01 61"))
    # will retain + QoS 2 + will flag = 0x34; user name alone 0x80.
    wire = h("10 15 00 04 4d 51 54 54 04 b4 ff ff 00 00 00 01 74 00 00 00 02 75 31")
    roundtrip(Connect("", False, 65535, Will("t", b"", 2, True), "u1"), wire)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("03", "reserved connect flag"),
        ("0a", "without the will flag"),  # will QoS 1, no will flag
        ("22", "without the will flag"),  # will retain, no will flag
        ("1e", "will QoS 3"),
        ("42", "password flag without user name"),
    ],
)
def test_connect_flag_rules(flags, message):
    wire = h(f"10 0c 00 04 4d 51 54 54 04 {flags} 00 00 00 00")
    with pytest.raises(MqttDecodeError, match=message):
        decode(wire)


def test_connect_other_protocol_versions():
    with pytest.raises(UnsupportedProtocolLevel) as info:
        decode(h("10 0c 00 04 4d 51 54 54 05 02 00 00 00 00"))
    assert info.value.level == 5
    with pytest.raises(UnsupportedProtocolLevel):  # MQTT 3.1
        decode(h("10 0e 00 06") + b"MQIsdp" + h("03 02 00 00 00 00"))
    with pytest.raises(MqttDecodeError, match="not MQTT"):
        decode(h("10 0c 00 04") + b"HTTP" + h("04 02 00 00 00 00"))


# ---- 3.2 - 3.14 ------------------------------------------------------------------------


def test_connack():
    roundtrip(ConnAck(False, 0), h("20 02 00 00"))
    roundtrip(ConnAck(True, 0), h("20 02 01 00"))
    roundtrip(ConnAck(False, 5), h("20 02 00 05"))
    with pytest.raises(MqttDecodeError, match="reserved connect acknowledge"):
        decode(h("20 02 02 00"))
    with pytest.raises(ValueError):
        encode(ConnAck(True, 1))  # 3.2.2.2: session present 0 on refusal
    with pytest.raises(MqttDecodeError, match="3.2.2.2"):
        decode(h("20 02 01 01"))  # ... and a received one that breaks the rule is malformed


def test_publish_variable_header_example_3_3_2_3():
    # Figure 3.11: topic "a/b", packet identifier 10.
    wire = h("32 07 00 03 61 2f 62 00 0a")
    roundtrip(Publish("a/b", b"", qos=1, packet_id=10), wire)
    assert header_length(wire) == 9


def test_publish_flags_and_payload():
    roundtrip(Publish("a/b", b"hello"), h("30 0a 00 03 61 2f 62") + b"hello")
    roundtrip(Publish("a/b", b"x", 0, True), h("31 06 00 03 61 2f 62 78"))
    roundtrip(Publish("a", b"x", 2, True, True, 0x1234), h("3d 06 00 01 61 12 34 78"))
    assert header_length(h("30 0a 00 03 61 2f 62") + b"hello") == 7
    with pytest.raises(MqttDecodeError, match="QoS 3"):
        decode(h("36 05 00 01 61 00 01"))
    with pytest.raises(MqttDecodeError, match="DUP"):
        decode(h("38 03 00 01 61"))
    with pytest.raises(MqttDecodeError, match="identifier 0"):
        decode(h("32 05 00 01 61 00 00"))
    with pytest.raises(ValueError):
        encode(Publish("a", qos=1))  # no packet id
    with pytest.raises(ValueError):
        encode(Publish("a", qos=0, packet_id=3))
    with pytest.raises(ValueError):
        encode(Publish("a", qos=0, dup=True))


@pytest.mark.parametrize(
    ("packet", "wire"),
    [
        (PubAck(10), "40 02 00 0a"),
        (PubRec(10), "50 02 00 0a"),
        (PubRel(10), "62 02 00 0a"),  # 3.6.1: flags 0010
        (PubComp(10), "70 02 00 0a"),
        (UnsubAck(0xFFFF), "b0 02 ff ff"),
        (PingReq(), "c0 00"),
        (PingResp(), "d0 00"),
        (Disconnect(), "e0 00"),
    ],
)
def test_fixed_size_packets(packet, wire):
    roundtrip(packet, h(wire))
    assert header_length(h(wire)) == len(h(wire))


def test_subscribe_payload_example_3_8_3():
    # Figure 3.22: "a/b" QoS 1 and "c/d" QoS 2; packet identifier 10 (figure 3.21).
    wire = h("82 0e 00 0a 00 03 61 2f 62 01 00 03 63 2f 64 02")
    roundtrip(Subscribe(10, (("a/b", 1), ("c/d", 2))), wire)
    assert header_length(wire) == 4
    with pytest.raises(MqttDecodeError, match="requested QoS"):
        decode(h("82 08 00 0a 00 03 61 2f 62 04"))
    with pytest.raises(MqttDecodeError, match="without topic filters"):
        decode(h("82 02 00 0a"))


def test_suback_payload_example_3_9_3():
    # Figure 3.26: success QoS 0, success QoS 2, failure.
    wire = h("90 05 00 0a 00 02 80")
    roundtrip(SubAck(10, (0, 2, 0x80)), wire)
    assert header_length(wire) == 4
    with pytest.raises(MqttDecodeError, match="reserved SUBACK"):
        decode(h("90 03 00 0a 03"))
    with pytest.raises(MqttDecodeError, match="without return codes"):
        decode(h("90 02 00 0a"))


def test_unsubscribe_payload_example_3_10_3():
    # Figure 3.30: "a/b" and "c/d".
    wire = h("a2 0c 00 0a 00 03 61 2f 62 00 03 63 2f 64")
    roundtrip(Unsubscribe(10, ("a/b", "c/d")), wire)
    with pytest.raises(MqttDecodeError, match="without topic filters"):
        decode(h("a2 02 00 0a"))


@pytest.mark.parametrize(
    "wire",
    [
        "60 02 00 0a",  # PUBREL without 0010
        "80 08 00 0a 00 03 61 2f 62 01",  # SUBSCRIBE without 0010
        "a0 07 00 0a 00 03 61 2f 62",  # UNSUBSCRIBE without 0010
        "41 02 00 0a",  # PUBACK with a flag
        "c2 00",  # PINGREQ with a flag
        "e1 00",  # DISCONNECT with a flag
        "21 02 00 00",  # CONNACK with a flag
        "11 0c 00 04 4d 51 54 54 04 02 00 00 00 00",  # CONNECT with a flag
    ],
)
def test_reserved_flags_are_malformed(wire):
    with pytest.raises(MqttDecodeError, match="reserved flags"):
        decode(h(wire))


@pytest.mark.parametrize(
    "wire",
    [
        "00 00",  # reserved type 0
        "f0 00",  # reserved type 15
        "40 03 00 0a 00",  # PUBACK one byte too long
        "40 01 00",  # PUBACK too short
        "c0 01 00",  # PINGREQ with a body
        "40 02 00 00",  # packet identifier 0
        "20 03 00 00 00",
        "32 04 00 01 61 00",  # packet id cut short
        "30 05 00 09 61 62 63",  # topic longer than the packet
        "30",  # no remaining length
        "30 05 00 01",  # shorter than its remaining length
    ],
)
def test_malformed_packets(wire):
    with pytest.raises(MqttDecodeError):
        decode(h(wire))


def test_decode_error_is_the_shared_type():
    assert issubclass(MqttDecodeError, DecodeError)
    assert issubclass(UnsupportedProtocolLevel, MqttDecodeError)


# ---- framing ---------------------------------------------------------------------------


STREAM = [
    Connect("c", True, 60),
    Publish("a/b", b"x" * 200, 1, packet_id=1),
    Subscribe(2, (("a/#", 2),)),
    PingReq(),
    Disconnect(),
]


def test_framer_any_split_gives_the_same_packets():
    wire = b"".join(encode(p) for p in STREAM)
    for size in (1, 2, 3, 7, 64, len(wire)):
        framer = PacketFramer()
        got = []
        for i in range(0, len(wire), size):
            framer.feed(wire[i : i + size])
            while (raw := framer.next_packet()) is not None:
                got.append(decode(raw))
        assert got == STREAM
        assert framer.buffered_bytes == 0


def test_framer_rejects_oversized_packet_from_its_header():
    framer = PacketFramer(max_packet_size_bytes=100)
    framer.feed(h("30 e4 00"))  # remaining length 100: 103 bytes in all
    with pytest.raises(MqttDecodeError, match="exceeds"):
        framer.next_packet()
    assert framer.buffered_bytes == 0
    with pytest.raises(MqttDecodeError):  # stays broken: the stream cannot resynchronise
        framer.next_packet()


def test_framer_rejects_long_length_and_reserved_type_early():
    framer = PacketFramer()
    framer.feed(h("30 ff ff ff ff"))
    with pytest.raises(MqttDecodeError, match="four bytes"):
        framer.next_packet()
    framer = PacketFramer()
    framer.feed(h("f0"))
    with pytest.raises(MqttDecodeError, match="reserved packet type"):
        framer.next_packet()


def test_framer_holds_at_most_one_partial_packet():
    framer = PacketFramer(max_packet_size_bytes=1000)
    one = encode(Publish("t", b"y" * 50))
    framer.feed(one * 20 + one[:10])
    count = 0
    while framer.next_packet() is not None:
        count += 1
    assert count == 20 and framer.buffered_bytes == 10
    assert MAX_PACKET_SIZE_BYTES == 268_435_460


def test_split_packets_and_header_length():
    wire = b"".join(encode(p) for p in STREAM)
    parts = split_packets(wire)
    assert [decode(p) for p in parts] == STREAM
    assert (
        sum(header_length(p) for p in parts) == 12 + 10 + 4 + 2 + 2
    )  # PUBLISH: 3-byte fixed header
    with pytest.raises(MqttDecodeError):
        split_packets(wire[:-1])
    with pytest.raises(MqttDecodeError):
        header_length(h("32 03 00 01 61"))  # PUBLISH QoS 1 without its packet id
