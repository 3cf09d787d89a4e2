"""MqttBroker fed with hand-made bytes: what closes a connection, what is answered."""

from __future__ import annotations

import pytest
from mqtt_harness import broker

from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.codec import (
    ConnAck,
    Connect,
    PingReq,
    PingResp,
    Publish,
    SubAck,
    Subscribe,
    Unsubscribe,
    Will,
    decode,
    encode,
    split_packets,
)
from iotbench.proto.mqtt.events import ClientConnected, ClientDisconnected

C = "conn-1"


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


def replies(b: MqttBroker, conn=C) -> list:
    return [decode(p) for c, data in b.data_to_send() if c == conn for p in split_packets(data)]


def closed(b: MqttBroker) -> list[tuple[str, str]]:
    return [(e.reason, e.detail) for e in b.events() if isinstance(e, ClientDisconnected)]


def connected(b: MqttBroker | None = None, conn=C, now=0.0, **connect) -> MqttBroker:
    b = b or broker()
    b.connection_made(now, conn)
    b.receive_data(now, conn, encode(Connect(connect.pop("client_id", "c1"), **connect)))
    assert replies(b, conn) == [ConnAck(False, 0)]
    b.events()
    return b


def test_connect_then_ping_one_byte_at_a_time():
    b = broker()
    b.connection_made(0.0, C)
    for byte in encode(Connect("c1", keep_alive_s=30)) + encode(PingReq()):
        b.receive_data(0.0, C, bytes([byte]))
    assert replies(b) == [ConnAck(False, 0), PingResp()]
    assert b.events() == [ClientConnected(C, "c1", False)]


@pytest.mark.parametrize(
    ("wire", "detail"),
    [
        (encode(PingReq()), "PingReq before CONNECT"),
        (encode(Publish("a", b"x")), "Publish before CONNECT"),
        (h("10 0c 00 04 4d 51 54 54 04 03 00 00 00 00"), "reserved connect flag"),
        (h("ff ff ff ff ff"), "malformed packet"),
    ],
)
def test_first_packet_must_be_a_valid_connect(wire, detail):
    b = broker()
    b.connection_made(0.0, C)
    b.receive_data(0.0, C, wire)
    assert replies(b) == []
    assert b.connections_to_close() == [C]
    ((reason, text),) = closed(b)
    assert reason == "protocol-error" and detail in text
    assert b.stats.protocol_errors == 1


@pytest.mark.parametrize(
    "wire",
    [
        h("10 0c 00 04 4d 51 54 54 05 02 00 00 00 00"),  # MQTT 5
        h("10 0e 00 06") + b"MQIsdp" + h("03 02 00 00 00 00"),  # MQTT 3.1
    ],
)
def test_other_protocol_versions_get_0x01_then_close(wire):
    b = broker()
    b.connection_made(0.0, C)
    b.receive_data(0.0, C, wire)
    assert replies(b) == [ConnAck(False, 1)]  # 3.1.2.2
    assert b.connections_to_close() == [C]
    assert [r for r, _ in closed(b)] == ["refused"]


@pytest.mark.parametrize(
    ("packet_bytes", "detail"),
    [
        (encode(Connect("again")), "second CONNECT"),
        (h("60 02 00 01"), "reserved flags"),  # PUBREL without 0b0010
        (encode(Publish("a/+", b"x")), "invalid topic name"),
        (encode(Subscribe(1, (("a/#/b", 0),))), "invalid topic filter"),
        (encode(Unsubscribe(1, ("a+",))), "invalid topic filter"),
        (encode(SubAck(1, (0,))), "a client does not send SubAck"),
        (encode(PingResp()), "a client does not send PingResp"),
        (encode(ConnAck(False, 0)), "a client does not send ConnAck"),
    ],
)
def test_violations_close_and_publish_the_will(packet_bytes, detail):
    b = connected(client_id="dev", will=Will("w", b"gone"))
    b = connected(b, "watcher", client_id="watcher")
    b.receive_data(0.0, "watcher", encode(Subscribe(1, (("w", 0),))))
    replies(b, "watcher")
    b.receive_data(1.0, C, packet_bytes)
    assert b.connections_to_close() == [C]
    ((reason, text),) = closed(b)
    assert reason == "protocol-error" and detail in text
    assert replies(b, "watcher") == [Publish("w", b"gone")]
    b.receive_data(2.0, C, encode(PingReq()))  # late bytes of a closed connection
    assert replies(b) == []


def test_packets_before_a_violation_in_the_same_chunk_are_processed():
    b = connected()
    b.receive_data(0.0, C, encode(PingReq()) + encode(PingReq()) + h("00 00"))
    assert replies(b) == [PingResp(), PingResp()]
    assert b.connections_to_close() == [C]


def test_oversized_packet_closes_from_its_header():
    b = connected(broker(max_packet_size_bytes=64))
    b.receive_data(0.0, C, h("30 c0 84 3d"))  # announces 1,000,000 bytes
    assert b.connections_to_close() == [C]
    assert "exceeds" in closed(b)[0][1]


def test_max_subscriptions_gives_suback_failure():
    b = connected(broker(max_subscriptions_per_session=2))
    b.receive_data(0.0, C, encode(Subscribe(7, (("a", 0), ("b", 1), ("c", 2), ("a", 2)))))
    assert replies(b) == [SubAck(7, (0, 1, 0x80, 2))]  # replacing "a" is not a new one
    assert b.subscriptions("c1") == {"a": 2, "b": 1}


def test_connect_timeout():
    b = broker(connect_timeout_s=10.0)
    b.connection_made(5.0, C)
    assert b.next_timer() == 15.0
    b.handle_timer(14.9)
    assert b.connections_to_close() == []
    b.handle_timer(15.0)
    assert b.connections_to_close() == [C]
    assert closed(b) == [("connect-timeout", "")]
    assert b.next_timer() is None


def test_keep_alive_deadline_moves_with_each_packet():
    b = connected(keep_alive_s=10)
    assert b.next_timer() == 15.0
    b.receive_data(12.0, C, encode(PingReq()))
    b.handle_timer(15.0)  # the early wake-up finds the connection alive and re-arms
    assert b.connections_to_close() == [] and b.next_timer() == 27.0
    b.handle_timer(27.0)
    assert b.connections_to_close() == [C]
    assert closed(b) == [("keep-alive-timeout", "")]


def test_keep_alive_zero_never_times_out():
    b = connected(keep_alive_s=0)
    assert b.next_timer() is None


def test_connection_lost_and_unknown_connections():
    b = connected()
    b.connection_lost(1.0, C)
    assert closed(b) == [("connection-lost", "")]
    assert b.connections_to_close() == []  # the driver already knows
    b.connection_lost(1.0, C)
    b.receive_data(1.0, "never-made", b"\x10")
    assert b.events() == [] and b.data_to_send() == []
    assert b.sessions == {}


def test_reused_connection_id_starts_afresh():
    b = connected()
    b.connection_made(1.0, C)  # the driver reuses the id without reporting the loss
    assert closed(b) == [("connection-lost", "")]
    b.receive_data(1.0, C, encode(Connect("c2")))
    assert replies(b) == [ConnAck(False, 0)]


def test_will_with_invalid_topic_is_a_violation():
    b = broker()
    b.connection_made(0.0, C)
    b.receive_data(0.0, C, encode(Connect("c", will=Will("a/#", b"x"))))
    assert replies(b) == [] and b.connections_to_close() == [C]


def test_unknown_acknowledgements_are_counted_and_ignored():
    b = connected()
    for wire in ("40 02 00 09", "50 02 00 09", "70 02 00 09"):
        b.receive_data(0.0, C, h(wire))
    assert replies(b) == [] and b.stats.unknown_acks == 3
    b.receive_data(0.0, C, h("62 02 00 09"))  # an unknown PUBREL still gets PUBCOMP
    assert [type(p).__name__ for p in replies(b)] == ["PubComp"]


def test_a_message_reaches_each_matching_session_once_in_the_order_sessions_were_made():
    """The broker finds subscribers through its index of filters (exact ones by
    topic, wildcards one by one); what reaches whom, at which QoS and in which
    order must be what a walk over every session's filters gives (3.3.5)."""
    b = broker()
    for n in (1, 2, 3, 4, 5):
        connected(b, conn=f"k{n}", client_id=f"c{n}")
    subscriptions = {
        "k3": [("a/b", 1)],  # the first to subscribe, made after c1 and c2
        "k1": [("a/+", 0), ("a/b", 2)],
        "k2": [("x", 2)],
        "k4": [("#", 1)],
    }
    for conn, topics in subscriptions.items():
        b.receive_data(0.0, conn, encode(Subscribe(1, tuple(topics))))
    b.receive_data(0.0, "k4", encode(Unsubscribe(2, ("#", "never-subscribed"))))
    b.data_to_send()
    b.receive_data(0.0, "k5", encode(Publish("a/b", b"v", 1, packet_id=9)))
    out = [(c, decode(p)) for c, data in b.data_to_send() for p in split_packets(data)]
    deliveries = [(c, p.qos) for c, p in out if isinstance(p, Publish)]
    assert deliveries == [("k1", 1), ("k3", 1)]  # min(publish 1, best granted), c1 first
    assert b.stats.messages_routed == 2

    # c1 comes back with a clean session: its filters went with the old one, and
    # the new session is the newest.
    connected(b, conn="k6", client_id="c1", clean_session=True)
    b.receive_data(0.0, "k6", encode(Subscribe(3, (("a/#", 0),))))
    b.data_to_send()
    b.receive_data(0.0, "k5", encode(Publish("a/b", b"w")))
    out = [(c, decode(p)) for c, data in b.data_to_send() for p in split_packets(data)]
    assert [c for c, p in out if isinstance(p, Publish)] == ["k3", "k6"]
