"""Property tests of the MQTT-SN codec: every message round trips, header_length splits
header from payload, and random or mutated datagrams raise only MqttSnDecodeError."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
)

PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
u8 = st.integers(0, 0xFF)
u16 = st.integers(0, 0xFFFF)
qos = st.integers(-1, 2)
qos012 = st.integers(0, 2)
blob = st.binary(max_size=40)
# Sometimes beyond 255 octets, so the 3-octet Length form is exercised too.
data = st.one_of(blob, st.binary(min_size=250, max_size=400))
kinds = st.sampled_from(list(TopicIdType))


@st.composite
def topic_fields(draw):
    kind = draw(kinds)
    if kind == TopicIdType.NORMAL:
        return kind, draw(text), 0
    return kind, "", draw(u16)


@st.composite
def subscribes(draw):
    kind, name, topic_id = draw(topic_fields())
    return Subscribe(draw(u16), draw(qos), kind, name, topic_id, draw(st.booleans()))


@st.composite
def unsubscribes(draw):
    kind, name, topic_id = draw(topic_fields())
    return Unsubscribe(draw(u16), kind, name, topic_id)


def will_topics(cls):
    return st.builds(cls, st.none(), st.just(0), st.just(False)) | st.builds(
        cls, text, qos012, st.booleans()
    )


MESSAGES = st.one_of(
    st.builds(Advertise, u8, u16),
    st.builds(SearchGw, u8),
    st.builds(GwInfo, u8, blob),
    st.builds(Connect, text, u16, st.booleans(), st.booleans(), u8),
    st.builds(ConnAck, u8),
    st.just(WillTopicReq()),
    will_topics(WillTopic),
    st.just(WillMsgReq()),
    st.builds(WillMsg, blob),
    st.builds(Register, u16, u16, text),
    st.builds(RegAck, u16, u16, u8),
    st.builds(Publish, u16, u16, data, qos, st.booleans(), st.booleans(), kinds),
    st.builds(PubAck, u16, u16, u8),
    st.builds(PubRec, u16),
    st.builds(PubRel, u16),
    st.builds(PubComp, u16),
    subscribes(),
    st.builds(SubAck, u16, u16, u8, qos),
    unsubscribes(),
    st.builds(UnsubAck, u16),
    st.builds(PingReq, st.none() | text.filter(bool)),
    st.just(PingResp()),
    st.builds(Disconnect, st.none() | u16),
    will_topics(WillTopicUpd),
    st.builds(WillTopicResp, u8),
    st.builds(WillMsgUpd, blob),
    st.builds(WillMsgResp, u8),
)


@PROPS
@given(MESSAGES)
def test_every_message_round_trips(message):
    wire = encode(message)
    assert decode(wire) == message
    # The short Length form whenever the message fits in 255 octets (5.2.1).
    assert (wire[0] == 0x01) == (len(wire) > 255)
    payload = len(message.data) if isinstance(message, Publish) else 0
    assert header_length(wire) == len(wire) - payload


@PROPS
@given(MESSAGES, u8, st.binary(max_size=8))
def test_encapsulated_messages_round_trip(message, ctrl, node_id):
    inner = encode(message)
    wire = encode(Encapsulated(ctrl, node_id, inner))
    outer = decode(wire)
    assert outer == Encapsulated(ctrl, node_id, inner)
    assert decode(outer.message) == message
    assert header_length(wire) == 3 + len(node_id) + header_length(inner)


def _decodes_or_raises_typed(datagram: bytes) -> None:
    try:
        message = decode(datagram)
    except MqttSnDecodeError:
        return
    # Whatever decodes is a message the encoder can write again.
    assert decode(encode(message)) == message
    header_length(datagram)


@PROPS
@given(st.binary(max_size=64))
def test_random_datagrams_raise_only_decode_errors(datagram):
    _decodes_or_raises_typed(datagram)


@PROPS
@given(MESSAGES, st.data())
def test_mutated_datagrams_raise_only_decode_errors(message, draw):
    wire = bytearray(encode(message))
    for _ in range(draw.draw(st.integers(1, 4))):
        op = draw.draw(st.sampled_from(["flip", "cut", "grow", "length"]))
        if op == "flip" and wire:
            i = draw.draw(st.integers(0, len(wire) - 1))
            wire[i] ^= 1 << draw.draw(st.integers(0, 7))
        elif op == "cut" and wire:
            del wire[draw.draw(st.integers(0, len(wire) - 1)) :]
        elif op == "grow":
            wire += draw.draw(st.binary(min_size=1, max_size=4))
        elif op == "length" and wire:
            wire[0] = draw.draw(u8)
    _decodes_or_raises_typed(bytes(wire))
