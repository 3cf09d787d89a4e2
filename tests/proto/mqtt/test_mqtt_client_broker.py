"""MqttClient <-> MqttBroker over in-memory byte pipes with a fake clock.

QoS 0/1/2 delivery (with lost packets forcing re-sends), retained and will
messages, persistent sessions, keep-alive, QoS downgrade, takeover.
"""

from __future__ import annotations

import pytest
from mqtt_harness import BROKER, Net, broker, client

from iotbench.proto.mqtt.client import QueueFull
from iotbench.proto.mqtt.codec import (
    ConnAck,
    PingReq,
    PingResp,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
)
from iotbench.proto.mqtt.events import (
    ClientConnected,
    ClientDisconnected,
    Connected,
    ConnectionClosed,
    ConnectionRefused,
    MessageReceived,
    PingResponse,
    Published,
    PublishFailed,
    Subscribed,
    Unsubscribed,
)


def received(net: Net, name: str) -> list[tuple[str, bytes, int, bool, bool]]:
    return [(m.topic, m.payload, m.qos, m.retain, m.dup) for m in net.take(name, MessageReceived)]


def pub_sub(net: Net, topic_filter: str = "t/#", qos: int = 2, **sub_params) -> None:
    """Connect "pub" and "sub", subscribe "sub" to `topic_filter`."""
    if "pub" not in net.clients:
        net.add("pub")
    net.add("sub", **sub_params)
    net.open("pub")
    net.open("sub")
    net.run(net.now + 0.1)
    net.clients["sub"].subscribe(net.now, [(topic_filter, qos)])
    net.run(net.now + 0.1)
    assert [e.granted for e in net.take("sub", Subscribed)] == [(qos,)]
    assert net.take("pub", Connected) == [Connected(False, 0)]
    assert net.take("sub", Connected) == [Connected(False, 0)]


# ---- delivery --------------------------------------------------------------------------


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_delivery_at_each_qos(qos):
    net = Net(chunk=3)  # bytes arrive in pieces of 1-3 bytes
    pub_sub(net)
    pid = net.clients["pub"].publish(net.now, "t/a", b"21.5", qos)
    net.run(net.now + 1)
    assert received(net, "sub") == [("t/a", b"21.5", qos, False, False)]
    assert net.take("pub", Published) == [Published(pid, 1)]
    assert (pid is None) == (qos == 0)
    flow = {0: [], 1: [PubAck], 2: [PubRec, PubRel, PubComp]}[qos]
    acks = (PubAck, PubRec, PubRel, PubComp)
    for peer in ("pub", "sub"):  # publisher <-> broker, broker <-> subscriber
        kinds = [type(p) for _, s, d, p in net.log if peer in (s, d) and type(p) in acks]
        assert kinds == flow


def test_lost_publish_is_resent_with_dup_over_the_same_connection():
    lost = []

    def drop(now, src, dst, packet):
        if src == "pub" and isinstance(packet, Publish) and not lost:
            lost.append(now)
            return True
        return False

    net = Net(drop=drop)
    net.add("pub", retry_interval_s=5.0)
    pub_sub(net)
    pid = net.clients["pub"].publish(net.now, "t/a", b"x", 1)
    net.run(net.now + 4)
    assert received(net, "sub") == []
    net.run(net.now + 2)
    sends = net.sent("pub", Publish)
    assert [p.dup for _, p in sends] == [False, True]
    assert sends[1][0] - sends[0][0] == pytest.approx(5.0)
    assert received(net, "sub") == [("t/a", b"x", 1, False, False)]  # DUP is not forwarded
    assert net.take("pub", Published) == [Published(pid, 2)]


def test_lost_pubrec_qos2_is_delivered_exactly_once():
    dropped = []

    def drop(now, src, dst, packet):
        if src == BROKER and isinstance(packet, PubRec) and not dropped:
            dropped.append(packet)
            return True
        return False

    net = Net(drop=drop)
    net.add("pub", retry_interval_s=2.0)
    pub_sub(net)
    pid = net.clients["pub"].publish(net.now, "t/a", b"once", 2)
    net.run(net.now + 10)
    assert [p.dup for _, p in net.sent("pub", Publish)] == [False, True]
    assert len(net.sent(BROKER, PubRec)) == 2  # answered again, not delivered again
    assert received(net, "sub") == [("t/a", b"once", 2, False, False)]
    assert net.broker.stats.duplicates_received == 1
    assert net.take("pub", Published) == [Published(pid, 2)]


def test_lost_pubrel_is_resent():
    dropped = []

    def drop(now, src, dst, packet):
        if src == "pub" and isinstance(packet, PubRel) and not dropped:
            dropped.append(packet)
            return True
        return False

    net = Net(drop=drop)
    net.add("pub", retry_interval_s=2.0, retry_backoff_factor=2.0)
    pub_sub(net)
    pid = net.clients["pub"].publish(net.now, "t/a", b"x", 2)
    net.run(net.now + 10)
    assert len(net.sent("pub", PubRel)) == 2
    assert len(net.sent("pub", Publish)) == 1  # after PUBREC only PUBREL is re-sent
    assert received(net, "sub") == [("t/a", b"x", 2, False, False)]
    assert net.take("pub", Published) == [Published(pid, 1)]


def test_broker_resends_to_a_subscriber_that_lost_a_publish():
    dropped = []

    def drop(now, src, dst, packet):
        if src == BROKER and isinstance(packet, Publish) and not dropped:
            dropped.append(packet)
            return True
        return False

    net = Net(broker(retry_interval_s=3.0), drop=drop)
    pub_sub(net, qos=1)
    net.clients["pub"].publish(net.now, "t/a", b"x", 1)
    net.run(net.now + 10)
    assert [p.dup for _, p in net.sent(BROKER, Publish)] == [False, True]
    assert received(net, "sub") == [("t/a", b"x", 1, False, True)]
    assert net.broker.stats.retransmissions == 1


def test_retry_gives_up_after_max_retransmissions_on_one_connection():
    net = Net(drop=lambda now, src, dst, p: src == "pub" and isinstance(p, Publish))
    net.add("pub", retry_interval_s=1.0, retry_max_retransmissions=2, keep_alive_s=0)
    pub_sub(net)
    net.clients["pub"].publish(net.now, "t/a", b"x", 1)
    net.run(net.now + 100)
    assert len(net.sent("pub", Publish)) == 3
    assert net.clients["pub"].in_flight == 1 and net.clients["pub"].next_timer() is None


def test_no_resend_over_the_same_connection_by_default():
    net = Net(drop=lambda now, src, dst, p: src == "pub" and isinstance(p, Publish))
    net.add("pub", keep_alive_s=0)
    pub_sub(net)
    net.clients["pub"].publish(net.now, "t/a", b"x", 1)
    net.run(net.now + 1000)
    assert len(net.sent("pub", Publish)) == 1


# ---- persistent sessions -----------------------------------------------------------------


def test_unacknowledged_publish_is_resent_on_reconnect():
    """3.1.1 4.4: PUBLISH (DUP=1) and PUBREL are re-sent when the session resumes."""
    drop_acks = [True]
    net = Net(drop=lambda now, src, dst, p: drop_acks[0] and src == BROKER and dst == "pub"
              and isinstance(p, (PubAck, PubRec)))  # fmt: skip
    net.add("pub", clean_session=False)
    pub_sub(net)
    pub = net.clients["pub"]
    p1 = pub.publish(net.now, "t/1", b"a", 1)
    p2 = pub.publish(net.now, "t/2", b"b", 2)
    net.run(net.now + 1)
    assert received(net, "sub") == [("t/1", b"a", 1, False, False), ("t/2", b"b", 2, False, False)]
    net.cut("pub")
    drop_acks[0] = False
    net.open("pub")
    net.run(net.now + 1)
    assert net.take("pub", Connected) == [Connected(True, 0)]
    resent = [(p.topic, p.dup, p.packet_id) for _, p in net.sent("pub", Publish)[2:]]
    assert resent == [("t/1", True, p1), ("t/2", True, p2)]  # original order and ids
    # QoS 1 is at least once (a duplicate, DUP=1 from the broker's side is not set: a new
    # delivery), QoS 2 exactly once: the broker's session remembered the id.
    assert received(net, "sub") == [("t/1", b"a", 1, False, False)]
    assert net.take("pub", Published) == [Published(p1, 2), Published(p2, 2)]


def test_pubrel_is_resent_on_reconnect():
    drop = [True]
    net = Net(drop=lambda now, src, dst, p: drop[0] and src == BROKER and isinstance(p, PubComp))
    net.add("pub", clean_session=False)
    pub_sub(net)
    pid = net.clients["pub"].publish(net.now, "t/1", b"a", 2)
    net.run(net.now + 1)
    net.cut("pub")
    drop[0] = False
    net.open("pub")
    net.run(net.now + 1)
    assert len(net.sent("pub", Publish)) == 1
    assert len(net.sent("pub", PubRel)) == 2
    assert net.take("pub", Published) == [Published(pid, 1)]
    assert len(received(net, "sub")) == 1


def test_persistent_session_resumes_with_queued_messages():
    net = Net()
    pub_sub(net, "t/#", 1, clean_session=False)
    net.clients["sub"].disconnect(net.now)
    net.run(net.now + 1)
    assert net.broker.sessions == {"pub": True, "sub": False}
    pub = net.clients["pub"]
    for i in range(3):
        pub.publish(net.now, f"t/{i}", b"%d" % i, 1)
    pub.publish(net.now, "t/q0", b"zero", 0)  # QoS 0 is not kept for offline sessions
    pub.publish(net.now, "t/q2", b"two", 2)  # downgraded to the granted QoS 1
    net.run(net.now + 1)
    assert net.broker.queued("sub") == 4
    net.open("sub")
    net.run(net.now + 1)
    assert net.take("sub", Connected) == [Connected(True, 0)]
    assert received(net, "sub") == [
        ("t/0", b"0", 1, False, False),
        ("t/1", b"1", 1, False, False),
        ("t/2", b"2", 1, False, False),
        ("t/q2", b"two", 1, False, False),
    ]
    assert net.broker.stats.dropped_offline_qos0 == 1


def test_offline_queue_limit_drops_the_newest():
    net = Net(broker(max_queued_messages=2, max_inflight=1))
    pub_sub(net, "t/#", 1, clean_session=False)
    net.cut("sub")
    for i in range(5):
        net.clients["pub"].publish(net.now, "t/x", b"%d" % i, 1)
    net.run(net.now + 1)
    net.open("sub")
    net.run(net.now + 1)
    assert [m[1] for m in received(net, "sub")] == [b"0", b"1"]
    assert net.broker.stats.dropped_queue_full == 3


def test_clean_session_discards_the_stored_one():
    net = Net()
    pub_sub(net, "t/#", 1, clean_session=False)
    net.cut("sub")
    net.clients["pub"].publish(net.now, "t/x", b"old", 1)
    net.run(net.now + 1)
    sub = net.add("sub", client(seed=9, client_id="sub", clean_session=True))
    net.open("sub")
    net.run(net.now + 1)
    assert net.take("sub", Connected) == [Connected(False, 0)]
    assert received(net, "sub") == [] and net.broker.subscriptions("sub") == {}
    net.clients["pub"].publish(net.now, "t/x", b"new", 1)
    net.run(net.now + 1)
    assert received(net, "sub") == []
    assert sub.connected


def test_client_clean_connect_reports_discarded_inflight_messages():
    net = Net(drop=lambda now, src, dst, p: src == BROKER and isinstance(p, PubAck))
    net.add("pub", keep_alive_s=0)
    net.open("pub")
    net.run(1)
    pub = net.clients["pub"]
    pid = pub.publish(net.now, "t", b"x", 1)
    net.run(2)
    net.cut("pub")
    pub.publish(net.now, "t", b"queued while offline", 1)
    net.open("pub")
    net.run(3)
    failed = net.take("pub", PublishFailed)
    assert failed == [PublishFailed(pid, "session-discarded")]
    assert [p.payload for _, p in net.sent("pub", Publish)] == [b"x", b"queued while offline"]


# ---- retained messages -------------------------------------------------------------------


def test_retained_set_replace_delete_and_delivery_on_subscribe():
    net = Net()
    net.add("pub")
    net.open("pub")
    net.run(1)
    pub = net.clients["pub"]
    pub.publish(net.now, "r/a", b"first", 1, retain=True)
    pub.publish(net.now, "r/a", b"second", 2, retain=True)  # replaces
    pub.publish(net.now, "r/b", b"bee", 0, retain=True)
    pub.publish(net.now, "r/c", b"sea", 1, retain=True)
    pub.publish(net.now, "r/c", b"", 0, retain=True)  # deletes
    net.run(2)
    assert net.broker.retained == {"r/a": b"second", "r/b": b"bee"}
    net.add("sub")
    net.open("sub")
    net.run(3)
    net.clients["sub"].subscribe(net.now, [("r/+", 1)])
    net.run(4)
    got = sorted(received(net, "sub"))
    assert got == [("r/a", b"second", 1, True, False), ("r/b", b"bee", 0, True, False)]
    # Live messages to an existing subscription carry RETAIN 0, retained or not.
    pub.publish(net.now, "r/a", b"third", 1, retain=True)
    pub.publish(net.now, "r/a", b"", 1, retain=True)
    net.run(5)
    assert received(net, "sub") == [
        ("r/a", b"third", 1, False, False),
        ("r/a", b"", 1, False, False),
    ]
    assert net.broker.retained == {"r/b": b"bee"}


def test_retained_message_limit():
    net = Net(broker(max_retained_messages=1))
    net.add("pub")
    net.open("pub")
    pub = net.clients["pub"]
    net.run(1)
    pub.publish(net.now, "a", b"1", retain=True)
    pub.publish(net.now, "b", b"2", retain=True)
    pub.publish(net.now, "a", b"3", retain=True)
    net.run(2)
    assert net.broker.retained == {"a": b"3"}
    assert net.broker.stats.retained_refused == 1


# ---- wills ------------------------------------------------------------------------------


def _will_net(**params):
    from iotbench.proto.mqtt.codec import Will

    net = Net()
    net.add("dev", will=Will("status/dev", b"offline", 1, True), **params)
    pub_sub(net, "status/#", 1)
    net.open("dev")
    net.run(net.now + 1)
    return net


def test_will_is_published_on_abnormal_loss():
    net = _will_net()
    net.cut("dev")
    net.run(net.now + 1)
    assert received(net, "sub") == [("status/dev", b"offline", 1, False, False)]
    assert net.broker.retained == {"status/dev": b"offline"}  # will retain
    assert net.broker.stats.wills_published == 1


def test_will_is_not_published_after_disconnect():
    net = _will_net()
    net.clients["dev"].disconnect(net.now)
    net.run(net.now + 1)
    assert received(net, "sub") == [] and net.broker.stats.wills_published == 0
    assert net.take("dev", ConnectionClosed) == [ConnectionClosed("disconnect")]


def test_will_is_published_after_keep_alive_timeout():
    """A client that falls silent is cut after 1.5 x keep-alive (3.1.2.10)."""
    net = _will_net(keep_alive_s=10)
    # The device goes silent: nothing it sends (its PINGREQs) arrives any more.
    net.drop = lambda now, src, dst, p: src == "dev"
    (connect_at,) = [t for t, s, _, p in net.log if s == "dev"]  # arrives delay_s later
    net.run(connect_at + net.delay_s + 14.99)
    assert received(net, "sub") == []
    net.run(connect_at + net.delay_s + 15.01)
    closes = [e for e in net.broker_events if isinstance(e, ClientDisconnected)]
    assert [(e.client_id, e.reason) for e in closes] == [("dev", "keep-alive-timeout")]
    assert received(net, "sub") == [("status/dev", b"offline", 1, False, False)]


def test_takeover_closes_the_old_connection_and_publishes_its_will():
    net = _will_net()
    old = net.connection("dev")
    twin = net.add("dev", client(seed=11, client_id="dev"))
    net.open("dev")
    net.run(net.now + 1)
    assert twin.connected
    closes = [e for e in net.broker_events if isinstance(e, ClientDisconnected)]
    assert [(e.conn, e.reason) for e in closes] == [(old, "takeover")]
    assert received(net, "sub") == [("status/dev", b"offline", 1, False, False)]
    assert net.broker.stats.takeovers == 1


# ---- keep-alive on the client ---------------------------------------------------------------


def test_client_pings_when_idle_and_closes_without_pingresp():
    net = Net()
    net.add("c", keep_alive_s=30)
    net.open("c")
    net.run(100)
    pings = [t for t, _ in net.sent("c", PingReq)]
    assert pings == pytest.approx([30.0, 60.0, 90.0])  # counted from the last packet sent
    assert len(net.take("c", PingResponse)) == 3
    net.drop = lambda now, src, dst, p: isinstance(p, PingResp)
    net.run(200)
    assert net.take("c", ConnectionClosed) == [ConnectionClosed("keep-alive-timeout")]
    last_ping = net.sent("c", PingReq)[-1][0]
    assert net.clients["c"].close_requested and not net.clients["c"].connected
    assert last_ping == pytest.approx(120.0)


def test_activity_postpones_the_ping():
    net = Net()
    net.add("c", keep_alive_s=30)
    net.open("c")
    net.run(20)
    net.clients["c"].publish(net.now, "x", b"1")
    net.run(45)
    assert net.sent("c", PingReq) == []
    net.run(51)
    assert [t for t, _ in net.sent("c", PingReq)] == [50.0]


# ---- subscriptions, QoS downgrade -------------------------------------------------------------


@pytest.mark.parametrize(
    ("pub_qos", "granted", "expected"), [(2, 1, 1), (2, 0, 0), (0, 2, 0), (1, 2, 1)]
)
def test_qos_downgrade_to_the_granted_qos(pub_qos, granted, expected):
    net = Net()
    pub_sub(net, "t/#", granted)
    net.clients["pub"].publish(net.now, "t/x", b"m", pub_qos)
    net.run(net.now + 1)
    assert received(net, "sub") == [("t/x", b"m", expected, False, False)]


def test_broker_max_qos_caps_grants():
    net = Net(broker(max_qos=1))
    net.add("pub")
    net.add("sub")
    net.open("sub")
    net.run(1)
    net.clients["sub"].subscribe(net.now, [("a", 2), ("b", 0)])
    net.run(2)
    assert [e.granted for e in net.take("sub", Subscribed)] == [(1, 0)]


def test_overlapping_subscriptions_deliver_once_at_the_highest_qos():
    net = Net()
    pub_sub(net, "t/#", 0)
    net.clients["sub"].subscribe(net.now, [("t/+", 2)])
    net.run(net.now + 1)
    net.clients["pub"].publish(net.now, "t/x", b"m", 2)
    net.run(net.now + 1)
    assert received(net, "sub") == [("t/x", b"m", 2, False, False)]


def test_unsubscribe_stops_delivery():
    net = Net()
    pub_sub(net, "t/#", 1)
    pid = net.clients["sub"].unsubscribe(net.now, ["t/#", "never/subscribed"])
    net.run(net.now + 1)
    assert net.take("sub", Unsubscribed) == [Unsubscribed(pid)]
    net.clients["pub"].publish(net.now, "t/x", b"m", 1)
    net.run(net.now + 1)
    assert received(net, "sub") == []


def test_dollar_topics_are_not_matched_by_leading_wildcards():
    net = Net()
    pub_sub(net, "#", 0)
    net.clients["sub"].subscribe(net.now, [("$SYS/#", 0)])
    net.run(net.now + 1)
    net.clients["pub"].publish(net.now, "$SYS/x", b"s")
    net.clients["pub"].publish(net.now, "plain", b"p")
    net.run(net.now + 1)
    assert sorted(m[0] for m in received(net, "sub")) == ["$SYS/x", "plain"]
    net.clients["sub"].unsubscribe(net.now, ["$SYS/#"])
    net.run(net.now + 1)
    net.clients["pub"].publish(net.now, "$SYS/y", b"s")
    net.run(net.now + 1)
    assert received(net, "sub") == []


# ---- windows and queues -----------------------------------------------------------------------


def _max_outstanding(log, src, dst) -> int:
    """Most QoS 1 PUBLISHes from src to dst sent but not yet PUBACKed at any time."""
    outstanding: set[int] = set()
    most = 0
    for _, s, d, p in log:
        if s == src and d == dst and isinstance(p, Publish) and p.qos == 1:
            outstanding.add(p.packet_id)
            most = max(most, len(outstanding))
        elif s == dst and d == src and isinstance(p, PubAck):
            outstanding.discard(p.packet_id)
    return most


def test_inflight_windows_on_both_sides():
    net = Net(broker(max_inflight=3))
    net.add("pub", max_inflight=5)
    pub_sub(net, "t/#", 1)
    for i in range(10):
        net.clients["pub"].publish(net.now, "t/x", b"%d" % i, 1)
    assert net.clients["pub"].in_flight == 5 and net.clients["pub"].queued == 5
    net.run(net.now + 5)
    assert [m[1] for m in received(net, "sub")] == [b"%d" % i for i in range(10)]
    assert _max_outstanding(net.log, "pub", BROKER) == 5
    assert _max_outstanding(net.log, BROKER, "sub") == 3


def test_publish_before_connack_waits_and_queue_full_raises():
    c = client(max_inflight=1, max_queued_messages=2)
    c.publish(0.0, "t", b"1", 1)
    c.publish(0.0, "t", b"2", 0)
    with pytest.raises(QueueFull):
        c.publish(0.0, "t", b"3", 1)
    net = Net()
    net.add("c", c)
    net.open("c")
    net.run(1)
    assert [p.payload for _, p in net.sent("c", Publish)] == [b"1", b"2"]
    assert len(net.take("c", Published)) == 2


# ---- CONNECT handling -------------------------------------------------------------------------


def test_empty_client_id():
    net = Net()
    net.add("anon", client(client_id="", clean_session=True))
    net.add("bad", client(client_id="", clean_session=False))
    net.open("anon")
    net.open("bad")
    net.run(1)
    assert net.take("anon", Connected) == [Connected(False, 0)]
    assert net.take("bad", ConnectionRefused) == [ConnectionRefused(2)]
    assert net.take("bad", ConnectionClosed) == [ConnectionClosed("refused")]
    (connected,) = [e for e in net.broker_events if isinstance(e, ClientConnected)]
    assert connected.client_id.startswith("auto-") and len(connected.client_id) == 21


def test_user_names_and_passwords():
    net = Net(broker(users={"alice": b"secret"}))
    net.add("ok", username="alice", password=b"secret")
    net.add("wrong", username="alice", password=b"guess")
    net.add("none")
    for name in ("ok", "wrong", "none"):
        net.open(name)
    net.run(1)
    assert net.take("ok", Connected) == [Connected(False, 0)]
    assert net.take("wrong", ConnectionRefused) == [ConnectionRefused(4)]
    assert net.take("none", ConnectionRefused) == [ConnectionRefused(5)]
    refusals = [p for _, s, d, p in net.log if isinstance(p, ConnAck) and p.return_code]
    assert len(refusals) == 2


def test_max_sessions_refuses_with_server_unavailable():
    net = Net(broker(max_sessions=1))
    net.add("a")
    net.add("b")
    net.open("a")
    net.open("b")
    net.run(1)
    assert net.take("b", ConnectionRefused) == [ConnectionRefused(3)]


def test_connection_lost_of_a_clean_session_forgets_it():
    net = Net()
    pub_sub(net, "t/#", 1)
    net.cut("sub")
    assert net.broker.sessions == {"pub": True}
    net.clients["pub"].publish(net.now, "t/x", b"m", 1)
    net.run(net.now + 1)
    assert net.broker.stats.messages_routed == 0
