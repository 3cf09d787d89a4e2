"""The gateway on its own terms: forwarders (5.5), limits, timeouts, and the stream
interface a driver sees."""

from __future__ import annotations

import random

from mqttsn_harness import GATEWAY, GW, Net

from iotbench.proto.mqtt.events import MessageReceived as MqttMessage
from iotbench.proto.mqttsn.codec import (
    ConnAck,
    Connect,
    Encapsulated,
    GwInfo,
    PubAck,
    Publish,
    RegAck,
    Register,
    ReturnCode,
    SearchGw,
    TopicIdType,
    WillTopicReq,
    decode,
    encode,
)
from iotbench.proto.mqttsn.events import ClientDisconnected, Registered, RequestFailed
from iotbench.proto.mqttsn.gateway import Forwarded, MqttSnGateway
from iotbench.proto.mqttsn.params import MqttSnGatewayParams

NODE = b"\x00\x2a"


def from_gateway(net: Net, start: int, to: str) -> list:
    return [m for _, s, d, m in net.log[start:] if s == GATEWAY and d == to]


def test_forwarder_encapsulation_both_ways():
    net = Net()
    net.add_mqtt("sub").subscribe(net.now, [("f/#", 1)])
    net.step(0.1)
    fwd = net.add("fwd")  # a forwarder: sends hand-made encapsulations

    def relay(message) -> None:
        fwd._send(encode(Encapsulated(0, NODE, encode(message))), GW)
        net.step()

    start = len(net.log)
    relay(SearchGw(3))
    relay(Connect("node42", 60))
    relay(Register(0, 1, "f/t"))
    relay(Publish(1, 2, b"via forwarder", 1))
    replies = from_gateway(net, start, "fwd")
    assert all(type(r) is Encapsulated and r.node_id == NODE for r in replies)
    assert [decode(r.message) for r in replies] == [
        GwInfo(1),
        ConnAck(ReturnCode.ACCEPTED),
        RegAck(1, 1, ReturnCode.ACCEPTED),
        PubAck(1, 2, ReturnCode.ACCEPTED),
    ]
    assert replies[0].radius == 3  # the GWINFO goes out with the searcher's radius
    assert [m.payload for m in net.take("sub", MqttMessage)] == [b"via forwarder"]
    assert net.gw_events[0].addr == Forwarded(("sn-fwd", 1000), NODE)


def test_nested_or_broken_encapsulations_are_dropped():
    net = Net()
    fwd = net.add("fwd")
    inner = encode(Encapsulated(0, b"\x01", encode(Connect("x", 1))))
    fwd._send(encode(Encapsulated(0, NODE, inner)), GW)
    net.step()
    broken = bytes([4, 0xFE, 0, 1, 9, 9])  # carries two octets that are no message
    net.gateway.receive(net.now, broken, ("sn-fwd", 1000))
    net.step()
    assert net.kinds(GATEWAY) == []
    assert net.gateway.stats.unexpected == 1 and net.gateway.stats.decode_errors == 1


def test_a_client_that_stops_in_the_will_exchange_is_forgotten():
    net = Net(connect_timeout_s=30)
    raw = net.add("raw")
    raw._send(encode(Connect("raw", 60, True, True)), GW)
    net.step()
    assert [type(m) for m in from_gateway(net, 0, "raw")] == [WillTopicReq]
    assert net.gateway.client_state("raw") == "will-topic"
    net.run(31)
    assert net.gateway.client_state("raw") is None
    assert net.gw_events == [ClientDisconnected(("sn-raw", 1000), "raw", "connect-timeout")]


def test_topic_registrations_are_bounded_per_client():
    net = Net(max_topics_per_client=2)
    c = net.add("dev")
    c.connect(net.now, GW)
    net.step()
    mids = [c.register(net.now, f"t/{i}") for i in range(3)]
    net.step()
    assert [e.topic_id for e in net.take("dev", Registered)] == [1, 2]
    assert net.take("dev", RequestFailed) == [
        RequestFailed("register", mids[2], "rejected", ReturnCode.CONGESTION)
    ]


def test_bad_connects_are_refused():
    net = Net()
    raw = net.add("raw")
    raw._send(encode(Connect("", 60)), GW)  # no client id
    raw._send(encode(Connect("x", 60, protocol_id=2)), GW)  # another protocol
    raw._send(encode(Connect("nul\0", 60)), GW)  # not an MQTT string
    net.step()
    assert from_gateway(net, 0, "raw") == [ConnAck(ReturnCode.NOT_SUPPORTED)] * 3
    assert net.gateway.clients == 0


def test_stream_interface_on_its_own():
    """The exact calls a driver makes, without a broker: open, connect, lose."""
    gw = MqttSnGateway(random.Random(1), MqttSnGatewayParams())
    gw.receive(0.0, encode(Connect("dev", 60)), ("dev", 1))
    assert gw.streams_to_open() == [1]
    assert gw.stream_data_to_send() == [] and gw.datagrams_to_send() == []
    gw.stream_connected(0.1, 1)
    [(stream, data)] = gw.stream_data_to_send()
    assert stream == 1 and data[0] == 0x10  # an MQTT CONNECT
    gw.stream_receive(0.2, 1, b"\x20\x02\x00\x00")  # CONNACK accepted
    assert gw.datagrams_to_send() == [(encode(ConnAck(0)), ("dev", 1))]
    gw.stream_lost(5.0, 1)  # the broker went away
    assert gw.datagrams_to_send() == [(b"\x02\x18", ("dev", 1))]  # DISCONNECT (6.12)
    assert gw.streams_to_close() == [1]
    assert gw.clients == 0
    gw.stream_receive(6.0, 1, b"\x30\x00")  # late bytes of a closed stream: ignored
    gw.stream_lost(6.0, 1)
    assert gw.datagrams_to_send() == [] and gw.events()[-1].reason == "broker-closed"


def test_qos_minus_one_connection_is_opened_once_and_reopened_after_loss():
    gw = MqttSnGateway(random.Random(1), MqttSnGatewayParams(predefined_topics={1: "a"}))
    message = encode(Publish(1, 0, b"x", -1, topic_id_type=TopicIdType.PREDEFINED))
    gw.receive(0.0, message, ("dev", 1))
    gw.receive(0.0, message, ("dev", 2))
    assert gw.streams_to_open() == [1]
    gw.stream_connected(0.1, 1)
    gw.stream_receive(0.2, 1, b"\x20\x02\x00\x00")
    [(_, data)] = gw.stream_data_to_send()
    assert data.count(b"\x30\x04\x00\x01ax") == 2  # two QoS 0 PUBLISHes to "a"
    gw.stream_lost(1.0, 1)
    gw.receive(2.0, message, ("dev", 1))
    assert gw.streams_to_open() == [2]
