"""Lost datagrams of every kind, and the Tretry/Nretry timing that recovers from them
(MQTT-SN 1.2 section 6.13), checked against the fake clock."""

from __future__ import annotations

import pytest
from mqttsn_harness import GATEWAY, GW, Net

from iotbench.proto.mqtt.codec import Will
from iotbench.proto.mqtt.events import MessageReceived as MqttMessage
from iotbench.proto.mqttsn.codec import (
    Connect,
    Disconnect,
    PingReq,
    Publish,
    PubRel,
    Register,
    Subscribe,
    TopicIdType,
)
from iotbench.proto.mqttsn.events import (
    ClientDisconnected,
    Connected,
    Disconnected,
    MessageReceived,
    PingResponse,
    Published,
    Registered,
    RequestFailed,
    Subscribed,
    Unsubscribed,
    WillUpdated,
)

T_RETRY = 10.0


def drop_first(kind: str, src: str | None = None, count: int = 1):
    """A drop function losing the first `count` datagrams of message type `kind`."""
    left = [count]

    def drop(now, s, d, m):
        if type(m).__name__ == kind and (src is None or s == src) and left[0]:
            left[0] -= 1
            return True
        return False

    return drop


def times_sent(net: Net, src: str, kind: type) -> list[float]:
    return [round(t, 6) for t, _ in net.sent(src, kind)]


def everything(net: Net) -> list[type]:
    """Connect with a will, then every request of the client once; returns event types."""
    net.add_mqtt("sub").subscribe(net.now, [("#", 2)])
    net.step(0.1)
    c = net.add("dev")
    c.connect(net.now, GW, Will("w/dev", b"gone"))
    net.step(40)
    topic_id = c.register(net.now, "s/t")
    net.step(40)
    topic_id = c.topic_id("s/t")
    c.subscribe(net.now, "s/#", 0)
    net.step(40)
    c.publish(net.now, topic_id, b"q1", 1)
    net.step(40)
    c.publish(net.now, topic_id, b"q2", 2)
    net.step(40)
    c.update_will_topic(net.now, "w/dev2")
    c.update_will_message(net.now, b"bye")
    net.step(40)
    c.unsubscribe(net.now, "s/#")
    net.step(40)
    c.ping(net.now)
    net.step(40)
    c.disconnect(net.now)
    net.step(40)
    return [type(e) for e in net.take("dev") if not isinstance(e, MessageReceived)]


EXPECTED = [
    Connected,
    Registered,
    Subscribed,
    Published,
    Published,
    WillUpdated,
    WillUpdated,
    Unsubscribed,
    PingResponse,
    Disconnected,
]

# dropped message (first of its kind) -> the client message that is re-sent
CASES = {
    "Connect": "Connect",
    "WillTopicReq": "Connect",
    "WillTopic": "WillTopic",
    "WillMsgReq": "WillTopic",
    "WillMsg": "WillMsg",
    "ConnAck": "WillMsg",
    "Register": "Register",
    "RegAck": "Register",
    "Subscribe": "Subscribe",
    "SubAck": "Subscribe",
    "Publish": "Publish",
    "PubAck": "Publish",
    "PubRec": "Publish",
    "PubRel": "PubRel",
    "PubComp": "PubRel",
    "WillTopicUpd": "WillTopicUpd",
    "WillTopicResp": "WillTopicUpd",
    "WillMsgUpd": "WillMsgUpd",
    "WillMsgResp": "WillMsgUpd",
    "Unsubscribe": "Unsubscribe",
    "UnsubAck": "Unsubscribe",
    "PingReq": "PingReq",
    "PingResp": "PingReq",
    "Disconnect": "Disconnect",
}


@pytest.mark.parametrize(("lost", "resent"), CASES.items())
def test_each_lost_message_is_recovered_by_one_retransmission_after_tretry(lost, resent):
    net = Net()
    # The gateway's first PUBLISH is the one towards the subscriber-less client; drop
    # only the ones on the MQTT-SN link, which are the client's for "Publish".
    net.drop = drop_first(lost)
    assert everything(net) == EXPECTED
    sends = [(t, m) for t, s, _, m in net.log if s == "dev" and type(m).__name__ == resent]
    # The first message sent twice (same MsgId, or no MsgId at all):
    ids = [getattr(m, "msg_id", None) for _, m in sends]
    again = next(i for i in range(1, len(ids)) if ids[i] in ids[:i])
    first, second = sends[ids.index(ids[again])], sends[again]
    assert second[0] - first[0] == pytest.approx(T_RETRY)
    if resent in ("Publish", "Subscribe"):
        assert not first[1].dup and second[1].dup  # 5.3.4: DUP marks the re-send
    # Exactly once for QoS 2; the QoS 1 message at least once.
    payloads = [m.payload for m in net.take("sub", MqttMessage)]
    assert payloads.count(b"q2") == 1
    assert payloads.count(b"q1") == (2 if lost == "PubAck" else 1)


def test_retransmission_timing_and_giving_up():
    """Nretry re-sends, Tretry apart, then the gateway is given up (6.13)."""
    net = Net()
    c = net.add("dev", retry_interval_s=2.0, max_retries=4)  # the S4 settings
    c.connect(net.now, GW)
    net.step()
    net.take("dev")
    net.drop = lambda now, s, d, m: s == "dev" and type(m) is Publish
    t0 = net.now
    mid = c.publish(net.now, "ab", b"x", 1, topic_id_type=TopicIdType.SHORT)
    net.run(t0 + 60)
    assert times_sent(net, "dev", Publish) == [round(t0 + 2 * k, 6) for k in range(5)]
    assert [m.dup for _, m in net.sent("dev", Publish)] == [False] + [True] * 4
    events = net.take("dev")
    assert events == [RequestFailed("publish", mid, "gateway-lost"), Disconnected("gateway-lost")]
    assert c.state == "disconnected"


def test_give_up_time_is_nretry_plus_one_tretry():
    net = Net()
    c = net.add("dev")  # defaults: Tretry 10 s, Nretry 3
    net.drop = lambda now, s, d, m: s == GATEWAY
    c.connect(net.now, GW)
    net.run(39.9)
    assert net.take("dev") == []
    net.run(40.0)
    assert net.take("dev") == [Disconnected("gateway-lost")]
    assert times_sent(net, "dev", Connect) == [0.0, 10.0, 20.0, 30.0]


def test_keep_alive_pings_and_detects_a_dead_gateway():
    net = Net()
    c = net.add("dev", keep_alive_s=30)
    c.connect(net.now, GW)
    net.run(100)
    assert times_sent(net, "dev", PingReq) == [30.0, 60.0, 90.0]  # 30 s after each send
    assert [type(e) for e in net.take("dev")] == [Connected] + [PingResponse] * 3
    net.drop = lambda now, s, d, m: s == GATEWAY
    net.run(200)
    pings = times_sent(net, "dev", PingReq)
    assert pings[3:] == [120.0, 130.0, 140.0, 150.0]
    assert net.take("dev") == [Disconnected("gateway-lost")]
    # The gateway heard the last PINGREQ at 150.01 and gave the client up 45 s later.
    assert net.gw_events[-1].reason == "keep-alive-timeout"


def test_gateway_resends_to_the_client_and_gives_it_up():
    net = Net()
    pub = net.add_mqtt("pub")
    c = net.add("dev")
    c.connect(net.now, GW)
    net.step()
    c.subscribe(net.now, "s/t", 1)
    net.step()
    net.drop = drop_first("PubAck", src="dev")
    pub.publish(net.now, "s/t", b"v", 1)
    net.step(20)
    sends = [(round(t, 6), m.dup) for t, m in net.sent(GATEWAY, Publish)]
    assert sends[1][0] - sends[0][0] == pytest.approx(T_RETRY) and sends[1][1]
    got = [(m.payload, m.dup) for m in net.take("dev", MessageReceived)]
    assert got == [(b"v", False), (b"v", True)]  # QoS 1: at least once
    # Now the client dies: Nretry re-sends of the next PUBLISH, then it is lost.
    net.drop = lambda now, s, d, m: s == "dev"
    t0 = net.now
    pub.publish(net.now, "s/t", b"w", 1)
    net.run(t0 + 100)
    late = [round(t - t0, 2) for t, m in net.sent(GATEWAY, Publish) if m.data == b"w"]
    assert late == [0.0, 10.0, 20.0, 30.0]
    assert net.gw_events[-1] == ClientDisconnected(("sn-dev", 1000), "dev", "retries-exhausted")


@pytest.mark.parametrize("lost", ["Publish", "PubRec", "PubRel", "PubComp"])
def test_gateway_to_client_qos2_is_exactly_once(lost):
    net = Net()
    pub = net.add_mqtt("pub")
    c = net.add("dev")
    c.connect(net.now, GW)
    net.step()
    c.subscribe(net.now, "s/t", 2)
    net.step()
    net.drop = drop_first(lost)
    pub.publish(net.now, "s/t", b"v", 2)
    net.step(60)
    assert [m.payload for m in net.take("dev", MessageReceived)] == [b"v"]
    assert net.gateway.session("dev").to_client.out is None  # the flow completed
    assert len(net.sent(GATEWAY, Publish)) + len(net.sent(GATEWAY, PubRel)) == 3


def test_lost_register_from_gateway_is_resent():
    net = Net()
    pub = net.add_mqtt("pub")
    c = net.add("dev")
    c.connect(net.now, GW)
    net.step()
    c.subscribe(net.now, "s/#", 0)
    net.step()
    net.drop = drop_first("Register", src=GATEWAY)
    pub.publish(net.now, "s/x", b"v", 0)
    net.step(20)
    registers = times_sent(net, GATEWAY, Register)
    assert len(registers) == 2 and registers[1] - registers[0] == pytest.approx(T_RETRY)
    assert [m.topic for m in net.take("dev", MessageReceived)] == ["s/x"]


def test_lost_suback_repeats_the_subscribe_with_its_msg_id():
    net = Net()
    c = net.add("dev")
    c.connect(net.now, GW)
    net.step()
    net.drop = drop_first("SubAck")
    mid = c.subscribe(net.now, "x/#", 1)
    net.step(20)
    assert [m.msg_id for _, m in net.sent("dev", Subscribe)] == [mid, mid]
    assert net.take("dev", Subscribed) == [Subscribed(mid, 0, 1)]
    assert net.broker.subscriptions("dev") == {"x/#": 1}


def test_unanswered_disconnect_still_disconnects():
    net = Net()
    c = net.add("dev")
    c.connect(net.now, GW)
    net.step()
    net.take("dev")
    net.drop = lambda now, s, d, m: s == GATEWAY
    t0 = net.now
    c.disconnect(net.now)
    net.run(t0 + 50)
    assert net.take("dev") == [Disconnected("disconnect")]
    assert len(net.sent("dev", Disconnect)) == 4


def test_one_lost_gateway_ends_every_exchange_once():
    """A PINGREQ and a PUBLISH time out together: one Disconnected, no stray re-send."""
    net = Net()
    c = net.add("dev", keep_alive_s=10)
    c.connect(net.now, GW)
    net.step()
    net.take("dev")
    net.drop = lambda now, s, d, m: s == GATEWAY
    net.run(10.0)  # the keep-alive PINGREQ goes out at 10.0 ...
    mid = c.publish(net.now, "ab", b"x", 1, topic_id_type=TopicIdType.SHORT)  # ... so does this
    net.run(100)
    assert net.take("dev") == [
        RequestFailed("publish", mid, "gateway-lost"),
        Disconnected("gateway-lost"),
    ]
    assert max(t for t, s, _, _ in net.log if s == "dev") == 40.0  # the last re-sends


def test_asymcute_gives_up_the_request_alone_and_stays_connected():
    """give_up = "request" (RIOT's asymcute, S4's client): after Nretry re-sends only
    that PUBLISH fails, with "timeout"; the connection and the next PUBLISH go on."""
    net = Net()
    c = net.add("dev", retry_interval_s=2.0, max_retries=4, give_up="request")
    c.connect(net.now, GW)
    net.step()
    net.take("dev")
    net.drop = drop_first("Publish", "dev", count=5)
    t0 = net.now
    mid = c.publish(net.now, "ab", b"x", 1, topic_id_type=TopicIdType.SHORT)
    net.run(t0 + 12)
    assert times_sent(net, "dev", Publish) == [round(t0 + 2 * k, 6) for k in range(5)]
    assert net.take("dev") == [RequestFailed("publish", mid, "timeout")]
    assert c.state == "active"
    second = c.publish(net.now, "ab", b"y", 1, topic_id_type=TopicIdType.SHORT)
    net.step()
    assert net.take("dev") == [Published(second, 1)]


def test_max_inflight_sends_publishes_without_waiting_for_each_puback():
    """max_inflight > 1 (asymcute's request contexts): QoS 1 PUBLISHes leave at once,
    each acknowledged on its own; with the default of 1 the second waits."""
    for inflight, expected in ((1, 1), (4, 3)):
        net = Net(delay_s=0.05)
        c = net.add("dev", max_inflight=inflight)
        c.connect(net.now, GW)
        net.step()
        net.take("dev")
        t0 = net.now
        mids = [
            c.publish(net.now, "ab", bytes([k]), 1, topic_id_type=TopicIdType.SHORT)
            for k in range(3)
        ]
        net.step(0.01)  # the datagrams leave; no PUBACK is back yet
        assert len([t for t, _ in net.sent("dev", Publish) if t == t0]) == expected
        net.step(1.0)
        assert net.take("dev") == [Published(mid, 1) for mid in mids]
