"""MqttSnClient <-> MqttSnGateway <-> MqttBroker end to end, over in-memory pipes
with a fake clock: connect, register, publish at every QoS, subscribe (with
wildcards, predefined ids and short names), wills, refusals."""

from __future__ import annotations

import random

import pytest
from mqttsn_harness import GATEWAY, GW, Net

from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.codec import Will
from iotbench.proto.mqtt.events import MessageReceived as MqttMessage
from iotbench.proto.mqtt.params import MqttBrokerParams
from iotbench.proto.mqttsn.client import ClientState, QueueFull
from iotbench.proto.mqttsn.codec import (
    ConnAck,
    Connect,
    Disconnect,
    PubAck,
    Publish,
    RegAck,
    Register,
    ReturnCode,
    SubAck,
    TopicIdType,
    WillTopic,
    WillTopicReq,
    encode,
    short_topic_id,
)
from iotbench.proto.mqttsn.events import (
    ClientConnected,
    ClientDisconnected,
    Connected,
    ConnectionRefused,
    Disconnected,
    MessageReceived,
    Published,
    Registered,
    RequestFailed,
    Subscribed,
    Unsubscribed,
    WillUpdated,
)

PREDEFINED = {7: "p/seven", 8: "p/eight"}


def subscriber(net: Net, topic_filter: str = "#", name: str = "sub") -> None:
    net.add_mqtt(name).subscribe(net.now, [(topic_filter, 2)])
    net.step(0.1)
    net.take(name)


def received(net: Net, name: str = "sub") -> list[tuple[str, bytes, int]]:
    return [(m.topic, m.payload, m.qos) for m in net.take(name, MqttMessage)]


def connected(net: Net, name: str = "dev", will: Will | None = None, **params):
    c = net.add(name, **params)
    c.connect(net.now, GW, will)
    net.step()
    assert net.take(name, Connected) == [Connected(GW)]
    return c


def registered(net: Net, name: str, topic: str) -> int:
    net.clients[name].register(net.now, topic)
    net.step()
    [event] = net.take(name, Registered)
    return event.topic_id


# ---- publishing ------------------------------------------------------------------------


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_connect_register_publish_disconnect(qos):
    """The S3 exchange: CONNECT, REGISTER, PUBLISH (+ acks), DISCONNECT."""
    net = Net()
    subscriber(net)
    start = len(net.log)
    c = connected(net)
    topic_id = registered(net, "dev", "s/t")
    assert topic_id == 1  # the gateway hands out 1, 2, 3... per client
    mid = c.publish(net.now, topic_id, b"21.5", qos)
    net.step()
    assert net.take("dev", Published) == [Published(mid, 1)]
    assert (mid is None) == (qos == 0)
    c.disconnect(net.now)
    net.step()
    assert net.take("dev") == [Disconnected("disconnect")]
    assert received(net) == [("s/t", b"21.5", qos)]
    acks = {0: [], 1: ["PubAck"], 2: ["PubRec", "PubRel", "PubComp"]}[qos]
    kinds = [type(m).__name__ for _, _, _, m in net.log[start:]]
    assert kinds == ["Connect", "ConnAck", "Register", "RegAck", "Publish", *acks] + [
        "Disconnect",
        "Disconnect",
    ]
    assert [type(e) for e in net.gw_events] == [ClientConnected, ClientDisconnected]
    assert net.gateway.clients == 0


def test_publish_with_predefined_and_short_topics():
    net = Net(predefined_topics=PREDEFINED)
    subscriber(net)
    c = connected(net)
    c.publish(net.now, 7, b"a", 1, topic_id_type=TopicIdType.PREDEFINED)
    c.publish(net.now, "ab", b"b", 1, topic_id_type=TopicIdType.SHORT)
    net.step()
    assert received(net) == [("p/seven", b"a", 1), ("ab", b"b", 1)]
    assert "Register" not in net.kinds()


def test_qos_minus_one_needs_no_connection():
    net = Net(predefined_topics=PREDEFINED)
    subscriber(net)
    c = net.add("tiny")
    assert c.publish(net.now, 8, b"x", -1, topic_id_type=TopicIdType.PREDEFINED, addr=GW) is None
    c.publish(net.now, "zz", b"y", -1, retain=True, topic_id_type=TopicIdType.SHORT, addr=GW)
    net.step()
    assert received(net) == [("p/eight", b"x", 0), ("zz", b"y", 0)]
    assert net.kinds("tiny") == ["Publish", "Publish"]
    assert net.kinds(GATEWAY) == []  # nothing answers QoS -1
    assert net.broker.retained == {"zz": b"y"}
    # An unknown predefined id and a normal id are dropped silently (6.8).
    c._send(encode(Publish(9, 0, b"v", -1, topic_id_type=TopicIdType.PREDEFINED)), GW)
    c._send(encode(Publish(1, 0, b"v", -1)), GW)
    net.step()
    assert received(net) == [] and net.gateway.stats.dropped_qos_minus_one == 2
    with pytest.raises(ValueError):
        c.publish(net.now, 1, b"x", -1, addr=GW)  # normal topic ids need a connection


def test_unknown_topic_id_is_rejected_and_forgotten():
    net = Net()
    c = connected(net)
    topic_id = registered(net, "dev", "s/t")
    mid = c.publish(net.now, 99, b"x", 1)
    c.publish(net.now, 98, b"y", 0)
    net.step()
    assert net.take("dev", RequestFailed) == [
        RequestFailed("publish", mid, "rejected", ReturnCode.INVALID_TOPIC_ID),
        RequestFailed("publish", None, "rejected", ReturnCode.INVALID_TOPIC_ID),
    ]
    assert c.topic_id("s/t") == topic_id
    with pytest.raises(ValueError):
        c.publish(net.now, "not/registered", b"x")


def test_register_is_idempotent_and_refuses_wildcards():
    net = Net()
    c = connected(net)
    first = registered(net, "dev", "a/b")
    assert registered(net, "dev", "a/b") == first
    assert registered(net, "dev", "a/c") == first + 1
    # The client refuses wildcards itself; the gateway refuses them from anyone else.
    with pytest.raises(ValueError):
        c.register(net.now, "a/#")
    c._send(encode(Register(0, 5, "a/#")), GW)
    net.step()
    assert net.sent(GATEWAY, RegAck)[-1][1] == RegAck(0, 5, ReturnCode.NOT_SUPPORTED)


def test_requests_wait_for_connack_and_go_one_at_a_time():
    net = Net()
    subscriber(net)
    c = net.add("dev")
    c.connect(net.now, GW)
    c.register(net.now, "s/x")
    c.publish(net.now, "ab", b"1", 1, topic_id_type=TopicIdType.SHORT)
    c.publish(net.now, "ab", b"2", 0, topic_id_type=TopicIdType.SHORT)
    c.publish(net.now, "ab", b"3", 1, topic_id_type=TopicIdType.SHORT)
    assert c.queued == 4
    net.step()
    assert net.kinds("dev") == ["Connect", "Register", "Publish", "Publish", "Publish"]
    assert received(net) == [("ab", b"1", 1), ("ab", b"2", 0), ("ab", b"3", 1)]
    # Each request left only after the previous one's reply arrived.
    times = [t for t, s, _, _ in net.log if s == "dev"]
    assert times == sorted(times) and len(set(times)) == 4  # QoS 0 goes out with its successor


def test_queue_limit():
    net = Net()
    c = connected(net, max_queued=2)
    for _ in range(3):
        c.publish(net.now, "ab", b"x", 1, topic_id_type=TopicIdType.SHORT)  # 1 out, 2 queued
    with pytest.raises(QueueFull):
        c.publish(net.now, "ab", b"x", 1, topic_id_type=TopicIdType.SHORT)


def test_calls_need_a_connection():
    net = Net()
    c = net.add("dev")
    with pytest.raises(RuntimeError):
        c.register(net.now, "a")
    with pytest.raises(RuntimeError):
        c.publish(net.now, "ab", b"x", 0, topic_id_type=TopicIdType.SHORT)


# ---- subscribing -------------------------------------------------------------------------


def publisher(net: Net):
    pub = net.add_mqtt("pub")
    net.step(0.1)
    return pub


def test_wildcard_subscription_registers_each_topic_before_its_first_publish():
    net = Net()
    pub = publisher(net)
    c = connected(net)
    mid = c.subscribe(net.now, "s/+", 1)
    net.step()
    assert net.take("dev", Subscribed) == [Subscribed(mid, 0, 1)]  # no id for wildcards
    for topic, payload in [("s/a", b"1"), ("s/b", b"2"), ("s/a", b"3"), ("x/y", b"-")]:
        pub.publish(net.now, topic, payload, 1)
    net.step()
    got = [(m.topic, m.payload, m.qos) for m in net.take("dev", MessageReceived)]
    assert got == [("s/a", b"1", 1), ("s/b", b"2", 1), ("s/a", b"3", 1)]
    to_dev = [type(m).__name__ for _, s, d, m in net.log if s == GATEWAY and d == "dev"]
    assert to_dev[-5:] == ["Register", "Publish", "Register", "Publish", "Publish"]
    assert c.topic_name(1) == "s/a" and c.topic_name(2) == "s/b"


def test_subscription_to_a_topic_name_gets_its_id_in_suback():
    net = Net()
    pub = publisher(net)
    c = connected(net)
    c.subscribe(net.now, "s/t", 2)
    net.step()
    [sub] = net.take("dev", Subscribed)
    assert sub.topic_id == 1 and sub.qos == 2
    pub.publish(net.now, "s/t", b"v", 2)
    net.step()
    [m] = net.take("dev", MessageReceived)
    assert (m.topic, m.topic_id, m.qos) == ("s/t", 1, 2)
    assert "Register" not in net.kinds(GATEWAY)
    # QoS 2 towards the client: PUBLISH, PUBREC, PUBREL, PUBCOMP
    assert net.kinds()[-4:] == ["Publish", "PubRec", "PubRel", "PubComp"]


def test_predefined_and_short_subscriptions():
    net = Net(predefined_topics=PREDEFINED)
    pub = publisher(net)
    c = connected(net, predefined_topics=PREDEFINED)
    c.subscribe(net.now, 7, 0, topic_id_type=TopicIdType.PREDEFINED)
    c.subscribe(net.now, "zz", 0, topic_id_type=TopicIdType.SHORT)
    net.step()
    assert [s.topic_id for s in net.take("dev", Subscribed)] == [7, 0]
    pub.publish(net.now, "p/seven", b"7", 0)
    pub.publish(net.now, "zz", b"z", 0)
    net.step()
    got = [(m.topic, m.topic_id_type, m.topic_id) for m in net.take("dev", MessageReceived)]
    assert got == [
        ("p/seven", TopicIdType.PREDEFINED, 7),
        ("zz", TopicIdType.SHORT, short_topic_id("zz")),
    ]
    mid = c.subscribe(net.now, 9, 0, topic_id_type=TopicIdType.PREDEFINED)
    net.step()
    assert net.take("dev", RequestFailed) == [
        RequestFailed("subscribe", mid, "rejected", ReturnCode.INVALID_TOPIC_ID)
    ]


def test_unsubscribe():
    net = Net()
    pub = publisher(net)
    c = connected(net)
    c.subscribe(net.now, "u/#", 0)
    net.step()
    mid = c.unsubscribe(net.now, "u/#")
    net.step()
    assert net.take("dev", Unsubscribed) == [Unsubscribed(mid)]
    pub.publish(net.now, "u/x", b"-", 0)
    net.step()
    assert net.take("dev", MessageReceived) == []


def test_client_answers_unknown_topic_ids_with_invalid_topic_id():
    net = Net()
    c = connected(net)
    c.receive(net.now, encode(Publish(42, 5, b"?", 1)), GW)  # as if from the gateway
    net.step()
    assert net.take("dev", MessageReceived) == []
    assert net.sent("dev", PubAck)[-1][1] == PubAck(42, 5, ReturnCode.INVALID_TOPIC_ID)
    assert c.stats.unknown_topic_ids == 1


# ---- wills ----------------------------------------------------------------------------------


def test_will_exchange_and_will_on_keep_alive_timeout():
    net = Net()
    subscriber(net, "w/#")
    start = len(net.log)
    silent = False
    net.drop = lambda now, src, dst, m: silent and src == "dev"
    connected(net, will=Will("w/dev", b"gone", 1, False), keep_alive_s=10)
    kinds = [type(m).__name__ for _, _, _, m in net.log[start:]]
    assert kinds == ["Connect", "WillTopicReq", "WillTopic", "WillMsgReq", "WillMsg", "ConnAck"]
    silent = True  # the device dies
    net.run(net.now + 20)
    assert net.gw_events[-1] == ClientDisconnected(("sn-dev", 1000), "dev", "keep-alive-timeout")
    assert received(net) == [("w/dev", b"gone", 1)]


def test_no_will_after_disconnect():
    net = Net()
    subscriber(net, "w/#")
    c = connected(net, will=Will("w/dev", b"gone"))
    c.disconnect(net.now)
    net.step(100)
    assert received(net) == []


def test_updated_will_replaces_the_old_one():
    net = Net()
    subscriber(net, "w/#")
    silent = False
    net.drop = lambda now, src, dst, m: silent and src == "dev"
    c = connected(net, will=Will("w/old", b"old"), keep_alive_s=10)
    c.update_will_topic(net.now, "w/new", qos=1, retain=False)
    c.update_will_message(net.now, b"new")
    net.step()
    assert net.take("dev", WillUpdated) == [WillUpdated("topic"), WillUpdated("message")]
    silent = True
    net.run(net.now + 20)
    assert received(net) == [("w/new", b"new", 1)]


def test_deleted_will_is_not_published():
    net = Net()
    subscriber(net, "w/#")
    silent = False
    net.drop = lambda now, src, dst, m: silent and src == "dev"
    c = connected(net, will=Will("w/old", b"old"), keep_alive_s=10)
    c.update_will_topic(net.now, None)
    net.step()
    silent = True
    net.run(net.now + 20)
    assert received(net) == []


def test_empty_will_topic_at_connect_means_no_will():
    net = Net()
    subscriber(net, "w/#")
    raw = net.add("raw")  # sends hand-made messages; ignores what comes back
    raw._send(encode(Connect("raw", 10, True, True)), GW)
    net.step()
    assert type(net.log[-1][3]) is WillTopicReq
    raw._send(encode(WillTopic(None)), GW)  # 5.4.7: the empty WILLTOPIC
    net.step()
    assert net.sent(GATEWAY, ConnAck) == [(net.log[-1][0], ConnAck(0))]
    net.run(net.now + 30)  # silent: lost after 15 s, without a will
    assert net.gw_events[-1].reason == "keep-alive-timeout"
    assert received(net) == []


def test_persistent_session_keeps_subscriptions_and_will():
    net = Net()
    subscriber(net, "w/#", name="watcher")
    pub = publisher(net)
    c = connected(net, will=Will("w/dev", b"gone"), clean_session=False, keep_alive_s=10)
    c.subscribe(net.now, "keep/#", 1)
    net.step()
    c.disconnect(net.now)
    net.step()
    pub.publish(net.now, "keep/x", b"while away", 1)
    net.step()
    c.connect(net.now, GW)  # CleanSession=0, Will=0: the stored will stays (6.3)
    net.step()
    assert [m.payload for m in net.take("dev", MessageReceived)] == [b"while away"]
    net.drop = lambda now, src, dst, m: src == "dev"
    net.run(net.now + 20)
    assert received(net, "watcher") == [("w/dev", b"gone", 0)]


# ---- refusals -----------------------------------------------------------------------------------


def test_too_many_clients_is_congestion():
    net = Net(max_clients=1)
    connected(net, "a")
    b = net.add("b")
    b.connect(net.now, GW)
    net.step()
    assert net.take("b") == [
        ConnectionRefused(ReturnCode.CONGESTION),
        Disconnected("refused"),
    ]


def test_unreachable_broker_is_congestion():
    net = Net(broker_reachable=False)
    c = net.add("dev")
    c.connect(net.now, GW)
    net.step()
    assert net.take("dev") == [ConnectionRefused(ReturnCode.CONGESTION), Disconnected("refused")]
    assert net.gw_events == [ClientDisconnected(("sn-dev", 1000), "dev", "broker-unreachable")]


def test_broker_refusal_is_passed_on():
    net = Net(broker=MqttBroker(random.Random(1), MqttBrokerParams(users={"u": b"p"})))
    c = net.add("dev")
    c.connect(net.now, GW)
    net.step()
    assert net.take("dev", ConnectionRefused) == [ConnectionRefused(ReturnCode.NOT_SUPPORTED)]


def test_broker_closing_the_connection_disconnects_the_client():
    net = Net()
    connected(net)
    [stream] = net.gateway.broker_streams
    net.broker.connection_lost(net.now, ("gw", stream))  # e.g. a broker restart
    net._broker_closed(("gw", stream))
    net.step()
    assert net.take("dev") == [Disconnected("gateway-disconnect")]
    assert net.gw_events[-1].reason == "broker-closed"


def test_unknown_clients_are_told_to_connect():
    net = Net()
    c = net.add("dev")
    c.gateway = GW
    c.state = ClientState.ACTIVE  # pretend: the gateway restarted and forgot us
    c.register(net.now, "a/b")
    net.step()
    assert [m for _, m in net.sent(GATEWAY, Disconnect)] == [Disconnect()]
    assert [type(e) for e in net.take("dev")] == [RequestFailed, Disconnected]


def test_reconnecting_active_client_gets_a_new_connection():
    net = Net()
    c = connected(net)
    c.state = ClientState.DISCONNECTED  # the device rebooted without telling anyone
    c.connect(net.now, GW)
    net.step()
    assert net.take("dev", Connected) == [Connected(GW)]
    reasons = [e.reason for e in net.gw_events if isinstance(e, ClientDisconnected)]
    assert reasons == ["replaced"] and net.gateway.clients == 1


def test_gateway_acks_carry_the_right_ids():
    net = Net()
    connected(net)
    net.clients["dev"].register(net.now, "a")
    net.clients["dev"].subscribe(net.now, "a", 1)
    net.step()
    assert net.sent(GATEWAY, Register) == []  # the client registered the topic itself
    [(_, suback)] = net.sent(GATEWAY, SubAck)
    assert suback.topic_id == 1 and suback.return_code == 0 and suback.qos == 1
    assert net.sent(GATEWAY, ConnAck)[0][1] == ConnAck(0)
