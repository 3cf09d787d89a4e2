"""The client's QoS 2 publish flow against a gateway that repeats itself or answers
out of turn (5.4.14, 6.7): once PUBREL is out, a PUBREC again is answered with
PUBREL again, and a PUBACK is unexpected; neither is an error of the client's own."""

from __future__ import annotations

import random

from iotbench.proto.mqttsn.client import MqttSnClient
from iotbench.proto.mqttsn.codec import (
    ConnAck,
    Message,
    PubAck,
    PubComp,
    PubRec,
    PubRel,
    ReturnCode,
    TopicIdType,
    decode,
    encode,
)
from iotbench.proto.mqttsn.events import Published
from iotbench.proto.mqttsn.params import MqttSnClientParams

GW = ("10.0.0.1", 1884)


def sent(c: MqttSnClient) -> list[Message]:
    return [decode(data) for data, _ in c.datagrams_to_send()]


def awaiting_pubcomp() -> tuple[MqttSnClient, int]:
    """A client whose QoS 2 PUBLISH got its PUBREC: its PUBREL is out."""
    c = MqttSnClient(random.Random(1), MqttSnClientParams(client_id="dev"))
    c.connect(0.0, GW)
    c.receive(0.0, encode(ConnAck(ReturnCode.ACCEPTED)), GW)
    msg_id = c.publish(0.0, 5, b"x", 2, topic_id_type=TopicIdType.PREDEFINED)
    assert msg_id is not None
    sent(c)
    c.receive(0.1, encode(PubRec(msg_id)), GW)
    assert sent(c) == [PubRel(msg_id)]
    return c, msg_id


def test_a_repeated_pubrec_is_answered_with_pubrel_again():
    c, msg_id = awaiting_pubcomp()
    c.receive(0.2, encode(PubRec(msg_id)), GW)  # e.g. for a PUBLISH the gateway got twice
    assert sent(c) == [PubRel(msg_id)]
    c.receive(0.3, encode(PubComp(msg_id)), GW)
    assert [e for e in c.events() if type(e) is Published] == [Published(msg_id, 1)]
    assert c.stats.internal_errors == 0


def test_a_puback_while_pubrel_is_out_is_unexpected():
    c, msg_id = awaiting_pubcomp()
    c.receive(0.2, encode(PubAck(5, msg_id, ReturnCode.ACCEPTED)), GW)
    assert c.stats.unexpected == 1
    assert c.stats.internal_errors == 0
    assert c.busy  # the flow goes on: PUBCOMP still ends it
