"""MqttClient fed with hand-made bytes: what it sends, when, and what it refuses."""

from __future__ import annotations

import pytest
from mqtt_harness import client

from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.codec import (
    ConnAck,
    Connect,
    Disconnect,
    PingReq,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    SubAck,
    Subscribe,
    UnsubAck,
    Unsubscribe,
    Will,
    decode,
    encode,
    split_packets,
)
from iotbench.proto.mqtt.events import (
    Connected,
    ConnectionClosed,
    ConnectionRefused,
    MessageReceived,
    ProtocolError,
    Published,
    Subscribed,
    Unsubscribed,
)

CONNACK = encode(ConnAck(False, 0))


def sent(c: MqttClient) -> list:
    return [decode(p) for p in split_packets(c.data_to_send())]


def connected(**params) -> MqttClient:
    c = client(client_id="c", **params)
    c.connect(0.0)
    sent(c)
    c.receive_data(0.0, CONNACK)
    assert c.events() == [Connected(False, 0)]
    return c


def test_connect_packet_carries_every_parameter():
    will = Will("w/t", b"bye", 1, True)
    c = client(
        client_id="dev-1",
        clean_session=False,
        keep_alive_s=45,
        will=will,
        username="u",
        password=b"p",
    )
    c.connect(0.0)
    assert sent(c) == [Connect("dev-1", False, 45, will, "u", b"p")]
    assert not c.connected and c.next_timer() == 45.0  # CONNACK timeout = keep-alive


def test_calls_before_connack_wait_for_it():
    c = client(client_id="c")
    c.connect(0.0)
    sid = c.subscribe(0.0, [("a/#", 1)])
    pid = c.publish(0.0, "a/b", b"x", 1)
    assert sent(c) == [Connect("c", True, 60)]
    c.receive_data(0.5, CONNACK)
    assert sent(c) == [Subscribe(sid, (("a/#", 1),)), Publish("a/b", b"x", 1, packet_id=pid)]


def test_refused_connection():
    c = client()
    c.connect(0.0)
    c.receive_data(0.1, encode(ConnAck(False, 5)))
    assert c.events() == [ConnectionRefused(5), ConnectionClosed("refused")]
    assert c.close_requested and not c.connected
    c.connect(1.0)  # a new transport, a new attempt
    assert not c.close_requested


def test_connack_timeout():
    c = client(connack_timeout_s=3.0)
    c.connect(10.0)
    assert c.next_timer() == 13.0
    c.handle_timer(13.0)
    assert c.events() == [ConnectionClosed("connack-timeout")] and c.close_requested


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (encode(Publish("a", b"x")), "before CONNACK"),
        (encode(PingReq()), "before CONNACK"),
        (b"\x00\x00", "malformed"),
        (encode(ConnAck(True, 0)), "Session Present 1 after a clean-session"),
    ],
)
def test_protocol_errors_before_connack(wire, message):
    c = client()
    c.connect(0.0)
    c.receive_data(0.1, wire)
    (error, closed) = c.events()
    assert isinstance(error, ProtocolError) and message in error.message
    assert closed == ConnectionClosed("protocol-error") and c.close_requested


@pytest.mark.parametrize(
    ("packet", "message"),
    [
        (Connect("x"), "does not send Connect"),
        (Subscribe(1, (("a", 0),)), "does not send Subscribe"),
        (Unsubscribe(1, ("a",)), "does not send Unsubscribe"),
        (PingReq(), "does not send PingReq"),
        (Disconnect(), "does not send Disconnect"),
        (ConnAck(False, 0), "does not send ConnAck"),
        (Publish("a/#", b""), "invalid topic name"),
    ],
)
def test_protocol_errors_after_connack(packet, message):
    c = connected()
    c.receive_data(1.0, encode(packet))
    (error, closed) = c.events()
    assert isinstance(error, ProtocolError) and message in error.message
    assert closed == ConnectionClosed("protocol-error")
    c.receive_data(1.0, encode(Publish("a", b"late")))  # ignored once closed
    assert c.events() == []


def test_suback_must_answer_every_filter():
    c = connected()
    pid = c.subscribe(0.0, [("a", 0), ("b", 1)])
    c.receive_data(0.1, encode(SubAck(pid, (0,))))
    assert isinstance(c.events()[0], ProtocolError)


def test_acks_for_subscribe_and_unsubscribe():
    c = connected()
    sid = c.subscribe(0.0, [("a", 2), ("b", 1)])
    uid = c.unsubscribe(0.0, ["a"])
    assert sent(c) == [Subscribe(sid, (("a", 2), ("b", 1))), Unsubscribe(uid, ("a",))]
    c.receive_data(0.1, encode(SubAck(sid, (2, 0x80))) + encode(UnsubAck(uid)))
    c.receive_data(0.1, encode(UnsubAck(uid)))  # a second one matches nothing
    assert c.events() == [Subscribed(sid, (2, 0x80)), Unsubscribed(uid)]
    assert c.stats.unknown_acks == 1


def test_qos2_receive_flow_method_b():
    c = connected()
    c.receive_data(1.0, encode(Publish("t", b"m", 2, packet_id=5)))
    c.receive_data(1.1, encode(Publish("t", b"m", 2, dup=True, packet_id=5)))  # PUBREC lost
    assert sent(c) == [PubRec(5), PubRec(5)]
    assert c.events() == [MessageReceived("t", b"m", 2, False, False)]  # once
    c.receive_data(1.2, encode(PubRel(5)))
    c.receive_data(1.3, encode(PubRel(5)))  # a repeated PUBREL is answered again
    assert sent(c) == [PubComp(5), PubComp(5)]
    c.receive_data(1.4, encode(Publish("t", b"again", 2, packet_id=5)))  # id free again
    assert c.events() == [MessageReceived("t", b"again", 2, False, False)]


def test_qos1_receive_is_at_least_once():
    c = connected()
    c.receive_data(1.0, encode(Publish("t", b"m", 1, packet_id=9)) * 2)
    assert sent(c) == [PubAck(9), PubAck(9)]
    assert len(c.events()) == 2


def test_qos2_send_flow_and_stray_acks():
    c = connected()
    pid = c.publish(1.0, "t", b"m", 2)
    assert sent(c) == [Publish("t", b"m", 2, packet_id=pid)]
    c.receive_data(1.1, encode(PubComp(pid)))  # before PUBREC: ignored
    c.receive_data(1.1, encode(PubAck(pid)))  # wrong kind: ignored
    assert c.events() == [] and c.stats.unknown_acks == 2
    c.receive_data(1.2, encode(PubRec(pid)))
    assert sent(c) == [PubRel(pid)]
    c.receive_data(1.3, encode(PubComp(pid)))
    assert c.events() == [Published(pid, 1)] and c.in_flight == 0


def test_keep_alive_zero_sends_no_pings():
    c = connected(keep_alive_s=0)
    assert c.next_timer() is None
    c.ping(5.0)
    assert sent(c) == [PingReq()] and c.next_timer() is None  # no timeout without keep-alive


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda c: c.publish(0.0, "a/+", b""), ValueError),
        (lambda c: c.publish(0.0, "", b""), ValueError),
        (lambda c: c.publish(0.0, "a\x00", b""), ValueError),
        (lambda c: c.publish(0.0, "a", b"", qos=3), ValueError),
        (lambda c: c.subscribe(0.0, [("a/#/b", 0)]), ValueError),
        (lambda c: c.subscribe(0.0, [("a", 3)]), ValueError),
        (lambda c: c.subscribe(0.0, []), ValueError),
        (lambda c: c.unsubscribe(0.0, []), ValueError),
        (lambda c: c.ping(0.0), RuntimeError),
    ],
)
def test_application_errors(call, error):
    c = client()
    with pytest.raises(error):
        call(c)


def test_connect_twice_is_an_error_and_disconnect_when_idle_is_not():
    c = client()
    c.disconnect(0.0)
    assert c.events() == [] and c.data_to_send() == b""
    c.connect(0.0)
    with pytest.raises(RuntimeError):
        c.connect(0.0)


def test_data_before_connect_is_ignored():
    c = client()
    c.receive_data(0.0, b"\xff\xff")
    c.connection_lost(0.0)
    assert c.events() == [] and c.data_to_send() == b""
