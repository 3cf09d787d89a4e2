"""Sleeping clients (MQTT-SN 1.2 section 6.14): DISCONNECT with a duration, messages
buffered at the gateway, PINGREQ with the client id to wake up, PINGRESP to end
the delivery, supervision of the sleep duration."""

from __future__ import annotations

import pytest
from mqttsn_harness import GATEWAY, GW, Net, client_addr

from iotbench.proto.mqtt.codec import Will
from iotbench.proto.mqtt.events import MessageReceived as MqttMessage
from iotbench.proto.mqttsn.client import ClientState
from iotbench.proto.mqttsn.codec import (
    Disconnect,
    PingReq,
    PingResp,
    Publish,
    TopicIdType,
    encode,
    short_topic_id,
)
from iotbench.proto.mqttsn.events import (
    Asleep,
    ClientAsleep,
    ClientAwake,
    ClientDisconnected,
    Connected,
    MessageReceived,
)


def sleeper(net: Net, topic_filter: str = "s/#", duration: int = 60, **params):
    pub = net.add_mqtt("pub")
    c = net.add("dev", **params)
    step = max(1.0, 4 * net.delay_s)  # a few round trips
    c.connect(net.now, GW)
    net.step(step)
    c.subscribe(net.now, topic_filter, 1)
    net.step(step)
    c.sleep(net.now, duration)
    net.step(step)
    assert net.take("dev")[-1] == Asleep(duration)
    assert c.state == "asleep"
    return c, pub


def test_messages_wait_while_asleep_and_arrive_on_wake_up():
    net = Net()
    c, pub = sleeper(net)
    for i in range(3):
        pub.publish(net.now, f"s/{i % 2}", b"%d" % i, 1)
    pub.publish(net.now, "s/0", b"q0", 0)  # QoS 0 waits too
    net.step(10)
    assert net.take("dev", MessageReceived) == []
    assert net.gateway.buffered("dev") == 4
    assert net.gateway.client_state("dev") == "asleep"
    start = len(net.log)
    c.wake(net.now)
    net.step()
    got = [(m.topic, m.payload) for m in net.take("dev", MessageReceived)]
    assert got == [("s/0", b"0"), ("s/1", b"1"), ("s/0", b"2"), ("s/0", b"q0")]
    assert net.take("dev") == [Asleep(60)]
    kinds = [type(m).__name__ for _, _, _, m in net.log[start:]]
    # REGISTER before the first PUBLISH of each topic, the QoS 1 ones one at a time,
    # and PINGRESP last (6.14).
    assert kinds == [
        "PingReq",
        "Register",
        "RegAck",
        "Publish",
        "PubAck",
        "Register",
        "RegAck",
        "Publish",
        "PubAck",
        "Publish",
        "PubAck",
        "Publish",
        "PingResp",
    ]
    assert net.sent("dev", PingReq)[-1][1] == PingReq("dev")
    events = [type(e) for e in net.gw_events]
    assert events[-2:] == [ClientAwake, ClientAsleep]
    assert net.gateway.client_state("dev") == "asleep"


def test_wake_up_with_nothing_buffered_is_just_pingreq_and_pingresp():
    net = Net()
    c, _ = sleeper(net)
    start = len(net.log)
    c.wake(net.now)
    net.step()
    assert [type(m) for _, _, _, m in net.log[start:]] == [PingReq, PingResp]
    assert net.take("dev") == [Asleep(60)]


def test_repeated_sleep_cycles_keep_the_client():
    net = Net()
    c, pub = sleeper(net, duration=20)
    for cycle in range(5):
        net.step(15)  # within the sleep duration
        pub.publish(net.now, "s/x", b"%d" % cycle, 1)
        net.step(0.1)
        c.wake(net.now)
        net.step()
        assert [m.payload for m in net.take("dev", MessageReceived)] == [b"%d" % cycle]
    assert net.gateway.client_state("dev") == "asleep"
    assert not any(isinstance(e, ClientDisconnected) for e in net.gw_events)


def test_sleeping_too_long_loses_the_client_and_publishes_its_will():
    net = Net()
    watcher = net.add_mqtt("watcher")
    watcher.subscribe(net.now, [("w/#", 1)])
    net.step(0.1)
    c = net.add("dev")
    c.connect(net.now, GW, Will("w/dev", b"gone"))
    net.step()
    t0 = net.now
    c.sleep(net.now, 100)
    net.run(t0 + 149)
    assert net.gateway.client_state("dev") == "asleep"
    net.run(t0 + 151)  # 1.5 x the sleep duration without a sign of life
    assert net.gw_events[-1] == ClientDisconnected(client_addr("dev"), "dev", "sleep-timeout")
    assert [m.payload for m in net.take("watcher", MqttMessage)] == [b"gone"]


def test_connect_while_asleep_returns_to_active_and_delivers():
    net = Net()
    c, pub = sleeper(net)
    pub.publish(net.now, "s/a", b"1", 1)
    net.step()
    streams = set(net.gateway.broker_streams)
    c.connect(net.now)
    net.step()
    assert net.take("dev", Connected) == [Connected(GW)]
    assert [m.payload for m in net.take("dev", MessageReceived)] == [b"1"]
    assert set(net.gateway.broker_streams) == streams  # the same MQTT connection
    assert net.gateway.client_state("dev") == "active"
    c.sleep(net.now, 30)  # and to sleep again
    net.step()
    assert net.take("dev") == [Asleep(30)]


def test_sleeping_client_keeps_its_mqtt_connection_and_may_publish():
    net = Net()
    c, pub = sleeper(net)
    sub = net.add_mqtt("sub")
    sub.subscribe(net.now, [("up", 1)])
    net.step()
    assert net.broker.sessions["dev"]  # online at the broker while asleep
    message = Publish(short_topic_id("up"), 0, b"x", 0, topic_id_type=TopicIdType.SHORT)
    c._send(encode(message), GW)  # no need to wake up to publish
    net.step()
    assert [m.payload for m in net.take("sub", MqttMessage)] == [b"x"]
    assert net.gateway.client_state("dev") == "asleep"


def test_lost_pingresp_repeats_the_wake_up():
    net = Net()
    c, pub = sleeper(net)
    pub.publish(net.now, "s/a", b"1", 1)
    net.step()
    lost = [1]

    def drop(now, s, d, m):
        if type(m) is PingResp and lost[0]:
            lost[0] = 0
            return True
        return False

    net.drop = drop
    c.wake(net.now)
    net.step(30)
    assert [m.payload for m in net.take("dev", MessageReceived)] == [b"1"]
    assert net.take("dev") == [Asleep(60)]
    pings = [t for t, _ in net.sent("dev", PingReq)]
    assert pings[1] - pings[0] == pytest.approx(10.0 + 0.02, abs=0.05)  # Tretry after the PUBACK


def test_messages_from_the_gateway_restart_the_wake_up_timer():
    net = Net(delay_s=4.0)  # slow: ten buffered QoS 1 messages take 80 s
    c, pub = sleeper(net, duration=600)
    for i in range(10):
        pub.publish(net.now, "s/a", b"%d" % i, 1)
    net.step(10)
    c.wake(net.now)
    net.step(200)
    assert len(net.take("dev", MessageReceived)) == 10
    assert len(net.sent("dev", PingReq)) == 1  # no re-send while the gateway was busy
    assert net.take("dev") == [Asleep(600)]


def test_messages_for_a_sleeping_client_are_bounded():
    net = Net(max_buffered_messages=3)
    c, pub = sleeper(net)
    for i in range(5):
        pub.publish(net.now, "s/a", b"%d" % i, 0)
    net.step()
    assert net.gateway.buffered("dev") == 3
    assert net.gateway.stats.dropped_buffer_full == 2
    c.wake(net.now)
    net.step()
    assert [m.payload for m in net.take("dev", MessageReceived)] == [b"0", b"1", b"2"]


def test_sleep_while_the_gateway_waits_for_an_ack_requeues_the_message():
    net = Net()
    pub = net.add_mqtt("pub")
    c = net.add("dev")
    c.connect(net.now, GW)
    net.step()
    c.subscribe(net.now, "s/a", 1)
    net.step()
    # The client's PUBACK is lost and it goes to sleep before the gateway re-sends.
    net.drop = lambda now, s, d, m: s == "dev" and type(m).__name__ == "PubAck"
    pub.publish(net.now, "s/a", b"1", 1)
    net.step()
    net.drop = lambda *a: False
    c.sleep(net.now, 60)
    net.step(30)
    assert net.gateway.buffered("dev") == 1  # not re-sent to a sleeping client
    c.wake(net.now)
    net.step()
    assert [m.payload for m in net.take("dev", MessageReceived)] == [b"1", b"1"]  # QoS 1


def test_sleep_needs_an_idle_client():
    net = Net()
    c = net.add("dev")
    c.connect(net.now, GW)
    net.step()
    c.register(net.now, "x")
    with pytest.raises(RuntimeError):
        c.sleep(net.now, 10)
    with pytest.raises(RuntimeError):
        c.wake(net.now)


def test_a_sleeping_client_may_wake_up_at_another_address():
    net = Net()
    c, pub = sleeper(net)
    pub.publish(net.now, "s/a", b"1", 1)
    net.step()
    moved = net.add("moved", client_id="dev")  # the same client at a new address
    moved.state, moved.gateway = ClientState.ASLEEP, GW
    start = len(net.log)
    moved.wake(net.now)
    net.step()
    assert [m.payload for m in net.take("moved", MessageReceived)] == [b"1"]
    assert net.gateway.session("dev").addr == client_addr("moved")
    to = {d for _, s, d, _ in net.log[start:] if s == GATEWAY}
    assert to == {"moved"}
    assert not any(type(m) is Disconnect for _, _, _, m in net.log[start:])
