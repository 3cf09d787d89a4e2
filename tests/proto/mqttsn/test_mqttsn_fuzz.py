"""Fuzzing the MQTT-SN stacks: random and mutated datagrams from many addresses never
raise out of the gateway or the client, never trip an internal error, never make
them send malformed bytes (the harness decodes everything), and never grow the
gateway beyond its limits."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mqttsn_harness import GW, Net, client_addr

from iotbench.proto.mqttsn.codec import (
    Advertise,
    ConnAck,
    Connect,
    Disconnect,
    Encapsulated,
    GwInfo,
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
    encode,
)

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LIMITS = dict(
    max_clients=3,
    max_buffered_messages=3,
    max_topics_per_client=3,
    max_stored_wills=2,
    predefined_topics={1: "p/1"},
    keep_alive_factor=1.5,
)
#: The bounds `serve mqttsn-gateway` adds against abuse (issue 39), small enough to be hit.
ABUSE_LIMITS = dict(
    LIMITS,
    max_new_clients=2,
    idle_timeout_s=30.0,
    max_topic_name_bytes=3,
    max_topic_bytes_per_client=5,
)

MESSAGES = [
    Advertise(1, 60),
    SearchGw(1),
    GwInfo(1),
    Connect("a", 5),
    Connect("b", 5, False, True),
    Connect("a", 0, True, False),
    ConnAck(0),
    WillTopicReq(),
    WillTopic("w/a", 1, True),
    WillTopic(None),
    WillMsgReq(),
    WillMsg(b"gone"),
    Register(0, 1, "t/a"),
    Register(0, 2, "t/#"),
    Register(3, 3, "t/b"),
    RegAck(1, 1, 0),
    RegAck(2, 7, 2),
    Publish(1, 0, b"x", 0),
    Publish(1, 4, b"y", 1),
    Publish(2, 5, b"z", 2, dup=True),
    Publish(1, 0, b"p", -1, topic_id_type=TopicIdType.PREDEFINED),
    Publish(0x6162, 0, b"s", -1, topic_id_type=TopicIdType.SHORT),
    Publish(0xC328, 6, b"?", 1, topic_id_type=TopicIdType.SHORT),
    PubAck(1, 4, 0),
    PubAck(1, 1, 2),
    PubRec(5),
    PubRel(5),
    PubComp(5),
    Subscribe(8, 1, TopicIdType.NORMAL, "t/+"),
    Subscribe(9, 2, TopicIdType.NORMAL, "t/a"),
    Subscribe(10, 0, TopicIdType.PREDEFINED, topic_id=1),
    Subscribe(11, -1, TopicIdType.SHORT, topic_id=0x6162),
    SubAck(0, 8, 0, 1),
    Unsubscribe(12, TopicIdType.NORMAL, "t/+"),
    UnsubAck(12),
    PingReq(),
    PingReq("a"),
    PingResp(),
    Disconnect(),
    Disconnect(30),
    WillTopicUpd("w/b", 0, False),
    WillTopicUpd(None),
    WillTopicResp(0),
    WillMsgUpd(b"bye"),
    WillMsgResp(0),
]
CORPUS = [encode(m) for m in MESSAGES]
CORPUS += [encode(Encapsulated(0, b"\x07", w)) for w in CORPUS[:8]]


@st.composite
def datagrams(draw):
    base = bytearray(draw(st.sampled_from(CORPUS)))
    how = draw(st.sampled_from(["keep"] * 5 + ["flip", "cut", "grow", "random"]))
    if how == "flip":
        i = draw(st.integers(0, len(base) - 1))
        base[i] ^= 1 << draw(st.integers(0, 7))
    elif how == "cut":
        del base[draw(st.integers(0, len(base) - 1)) :]
    elif how == "grow":
        base += draw(st.binary(min_size=1, max_size=6))
    elif how == "random":
        base = bytearray(draw(st.binary(max_size=24)))
    return bytes(base)


STEPS = st.lists(
    st.tuples(
        st.sampled_from(["x", "y", "z", "w"]),  # sender
        datagrams(),
        st.sampled_from([0.0, 0.01, 1.0, 12.0]),  # time to let pass afterwards
        st.booleans(),  # the broker side publishes something too
    ),
    max_size=40,
)


@pytest.mark.parametrize("limits", [LIMITS, ABUSE_LIMITS], ids=["limits", "abuse-limits"])
@FUZZ
@given(steps=STEPS)
def test_gateway_survives_anything_and_stays_bounded(limits, steps):
    net = Net(**limits)
    pub = net.add_mqtt("pub")
    for name in ("x", "y", "z", "w"):
        net.add(name)
    gw = net.gateway
    for name, keep_alive in (("x", 5), ("y", 0), ("z", 20)):  # most senders start connected
        gw.receive(net.now, encode(Connect(name, keep_alive)), client_addr(name))
        gw.receive(net.now, encode(Subscribe(1, 2, TopicIdType.NORMAL, "#")), client_addr(name))
        net.step(0.1)
    for i, (sender, data, dt, publish) in enumerate(steps):
        gw.receive(net.now, data, client_addr(sender))
        if publish:
            pub.publish(net.now, ("t/a", "t/b", "p/1", "ab")[i % 4], b"m", i % 3)
        net.run(net.now + dt)
        assert gw.stats.internal_errors == 0
        assert gw.clients <= limits["max_clients"]
        assert gw.new_clients <= limits.get("max_new_clients", limits["max_clients"])
        for c in gw.sessions():
            assert len(c.to_client.queue) <= limits["max_buffered_messages"]
            assert len(c.topics.registry) <= limits["max_topics_per_client"]
            assert c.topics.registry.size_bytes <= limits.get("max_topic_bytes_per_client", 0x10000)
        assert gw.stored_wills <= limits["max_stored_wills"]
    net.run(net.now + 1000)
    # Whoever is left is within its keep-alive or sleep duration (or has none, and
    # then within the idle timeout, if there is one).
    idle = limits.get("idle_timeout_s")
    for c in gw.sessions():
        silence = net.now - c.last_heard_s
        limit = {"active": c.keep_alive_s, "asleep": c.sleep_s, "awake": c.sleep_s}.get(c.state)
        assert limit is not None, c.state
        if limit:
            assert silence < limit * 1.5, (c.state, limit)
        else:
            assert idle is None or silence < idle, (c.state, silence)


@FUZZ
@given(st.sampled_from(["idle", "connecting", "active", "asleep", "awake"]), STEPS)
def test_client_survives_anything_from_its_gateway(state, steps):
    net = Net()
    c = net.add("dev", keep_alive_s=5, max_topics=3)
    if state != "idle":
        c.connect(net.now, GW)
        if state != "connecting":
            net.step()
            c.subscribe(net.now, "#", 2)
            net.step()
            if state in ("asleep", "awake"):
                c.sleep(net.now, 30)
                net.step()
                if state == "awake":
                    c.wake(net.now)
    for _, data, dt, _ in steps:
        c.receive(net.now, data, GW)
        c.receive(net.now, data, ("elsewhere", 1))
        net.run(net.now + dt)
        assert c.stats.internal_errors == 0
        assert len(c._topics) <= 3
