"""The gateway under abuse (issue 39, items 3 and 4), sans-I/O against the gateway
with our broker behind it: a flood of CONNECTs with Duration 0 from addresses that
never answer (spoofed), and topic names of 60 kB. Each attack is run first with the
sans-I/O defaults, which follow the specification and the simulator's runs, then
with the bounds set as `iotbench serve mqttsn-gateway` sets them; legitimate
clients must still be served."""

from __future__ import annotations

from mqttsn_harness import GATEWAY, GW, Net, client_addr

from iotbench.proto.mqtt.events import MessageReceived as MqttMessage
from iotbench.proto.mqttsn.codec import (
    ConnAck,
    Connect,
    PingReq,
    RegAck,
    Register,
    ReturnCode,
    SubAck,
    Subscribe,
    UnsubAck,
    Unsubscribe,
    WillTopic,
    WillTopicResp,
    WillTopicUpd,
    encode,
)
from iotbench.proto.mqttsn.events import (
    ClientDisconnected,
    ConnectionRefused,
    Disconnected,
    MessageReceived,
    Published,
    Registered,
    RequestFailed,
    Subscribed,
)
from iotbench.proto.mqttsn.registry import TopicRegistry

FLOOD = 1000  # the count
SPOOFED = "198.51.100.7"  # TEST-NET-2: nothing there answers


def spoof(net: Net, first: int, count: int, *, duration_s: int = 0, ping: bool = False) -> None:
    """`count` CONNECTs from spoofed addresses (each its own port); the gateway's
    answers go nowhere. ping: each also sends a blind PINGREQ a second later, as an
    attacker who guesses when the CONNACK went out would."""
    gw = net.gateway
    addrs = [(SPOOFED, 10000 + i) for i in range(first, first + count)]
    for i, addr in zip(range(first, first + count), addrs, strict=True):
        gw.receive(net.now, encode(Connect(f"spoof-{i}", duration_s)), addr)
    net.step(1.0)  # the broker connections open and accept
    if ping:
        for addr in addrs:
            gw.receive(net.now, encode(PingReq()), addr)
        net.step(0.1)


def connected(net: Net, name: str, **params):
    c = net.add(name, **params)
    c.connect(net.now, GW)
    net.step(0.1)
    assert c.connected, net.take(name)
    net.take(name)
    return c


def publish_qos1(net: Net, name: str, topic: str, payload: bytes) -> None:
    """REGISTER (the first time) and PUBLISH at QoS 1, acknowledged end to end."""
    c = net.clients[name]
    if c.topic_id(topic) is None:
        c.register(net.now, topic)
        net.step(0.5)
    c.publish(net.now, topic, payload, 1)
    net.step(0.5)
    assert net.take(name, Published), net.take(name)


def broker_connections(net: Net) -> int:
    """The gateway's MQTT connections open at the broker."""
    return len(net._open_streams)


# ---- item 3: CONNECT with Duration 0 ------------------------------------------------------------


def test_without_bounds_a_duration_0_flood_holds_every_slot():
    """The attack as reported, with the sans-I/O defaults (the specification's rule:
    keep-alive 0 is never supervised, and a full table refuses)."""
    net = Net()
    spoof(net, 0, FLOOD)
    assert net.gateway.clients == FLOOD and broker_connections(net) == FLOOD
    late = net.add("late")
    late.connect(net.now, GW)
    net.step(0.1)
    assert net.take("late") == [ConnectionRefused(ReturnCode.CONGESTION), Disconnected("refused")]
    net.run(net.now + 300)  # five minutes on, every one is still there
    assert net.gateway.clients == FLOOD and broker_connections(net) == FLOOD


def test_new_clients_share_keeps_clients_that_talk_served():
    """max_new_clients: a flood takes at most that many slots and broker connections;
    clients that have spoken since their CONNACK are never ended for it, and a new
    legitimate client gets in (ending the oldest spoofed one) and stays once it talks."""
    net = Net(max_new_clients=100)
    net.add_mqtt("sub").subscribe(net.now, [("t/#", 1)])
    connected(net, "old")
    publish_qos1(net, "old", "t/old", b"before")  # it has spoken: no longer new
    spoof(net, 0, FLOOD)
    gw = net.gateway
    assert gw.clients == 1 + 100 and broker_connections(net) == 1 + 100
    assert gw.stats.evicted == FLOOD - 100 and gw.stats.refused == 0
    publish_qos1(net, "old", "t/old", b"during")

    new = connected(net, "new")  # in the middle of the flood
    spoof(net, FLOOD, 50)  # fewer than the share arrive before it talks
    publish_qos1(net, "new", "t/new", b"hello")
    spoof(net, FLOOD + 50, FLOOD)  # and then any number
    assert new.connected and net.gateway.client_state("new") == "active"
    publish_qos1(net, "new", "t/new", b"still here")
    assert [m.payload for m in net.take("sub", MqttMessage)] == [
        b"before",
        b"during",
        b"hello",
        b"still here",
    ]
    assert gw.clients == 2 + 100 and broker_connections(net) == 2 + 100


def test_a_full_table_ends_the_oldest_new_client_and_tells_it():
    """The table full of clients that talk and one new one: the next CONNECT takes the
    new one's place, and the client ended is told (it may be a real one)."""
    net = Net(max_clients=3, max_new_clients=2)
    for name in ("a", "b"):
        connected(net, name)
        publish_qos1(net, name, "t/x", b"1")
    quiet = connected(net, "quiet")  # connected, silent since: new
    spoof(net, 0, 1)
    assert net.take("quiet") == [Disconnected("gateway-disconnect")]
    assert not quiet.connected and net.gateway.client_state("spoof-0") == "active"
    assert net.gateway.stats.evicted == 1
    # A client still connecting when it is ended gets CONNACK "congestion".
    net.broker_delay_s = 1.0  # the broker is slow: "late" stays connecting
    late = net.add("late")
    late.connect(net.now, GW)
    net.step(0.05)
    spoof(net, 1, 1)
    assert net.take("late") == [ConnectionRefused(ReturnCode.CONGESTION), Disconnected("refused")]
    assert net.gateway.clients == 3 and net.gateway.stats.refused == 0


def test_clients_that_talk_are_not_ended_and_a_full_table_of_them_refuses():
    net = Net(max_clients=2, max_new_clients=1)
    for name in ("a", "b"):
        connected(net, name)
        publish_qos1(net, name, "t/x", b"1")
    c = net.add("c")
    c.connect(net.now, GW)
    net.step(0.1)
    assert net.take("c") == [ConnectionRefused(ReturnCode.CONGESTION), Disconnected("refused")]
    assert net.gateway.stats.evicted == 0 and net.gateway.clients == 2


def test_idle_timeout_ends_silent_duration_0_clients_and_keeps_talking_ones():
    """idle_timeout_s: a client with Duration 0 silent that long is lost, even one that
    sent a blind PINGREQ after its CONNECT (no longer new); one that talks stays."""
    net = Net(idle_timeout_s=600)
    net.add_mqtt("sub").subscribe(net.now, [("t/#", 1)])
    talker = connected(net, "talker", keep_alive_s=0)
    spoof(net, 0, 100, ping=True)
    assert net.gateway.clients == 101
    for _ in range(6):
        net.run(net.now + 200)
        publish_qos1(net, "talker", "t/a", b"x")  # every 200 s: never idle for 600
    assert net.gateway.clients == 1 and broker_connections(net) == 1
    gone = [e for e in net.gw_events if isinstance(e, ClientDisconnected)]
    assert len(gone) == 100 and {e.reason for e in gone} == {"idle-timeout"}
    assert talker.connected
    net.run(net.now + 601)  # now the talker is silent for longer too
    assert net.gateway.clients == 0 and broker_connections(net) == 0
    assert net.gw_events[-1].reason == "idle-timeout"
    talker.publish(net.now, "t/a", b"after", 1)  # the gateway has forgotten it: 6.12
    net.step(0.5)
    assert Disconnected("gateway-disconnect") in net.take("talker")


def test_keep_alive_clients_are_supervised_as_before():
    net = Net(idle_timeout_s=10)
    connected(net, "dev", keep_alive_s=60)
    net.drop = lambda now, src, dst, m: src == "dev"  # it goes silent
    net.run(net.now + 89)
    assert net.gateway.client_state("dev") == "active"  # 60 x 1.5, not 10
    net.run(net.now + 2)
    assert net.gateway.client_state("dev") is None
    assert net.gw_events[-1] == ClientDisconnected(client_addr("dev"), "dev", "keep-alive-timeout")


# ---- item 4: topic names -----------------------------------------------------------------------


def raw_connected(net: Net, name: str):
    """A client driven by hand (its REGISTERs are not what MqttSnClient would send)."""
    c = net.add(name)
    c._send(encode(Connect(name, 60)), GW)
    net.step(0.1)
    assert net.gateway.client_state(name) == "active"
    return c


def replies(net: Net, start: int, to: str) -> list:
    return [m for _, s, d, m in net.log[start:] if s == GATEWAY and d == to]


def test_without_a_byte_bound_60kB_names_grow_the_gateway_without_end():
    """What the report measured, with the gateway's topic tables of old (a count
    of 1,000 per client, no bound on octets), at a tenth of its size to keep the
    test small: 5 clients x 100 names of 60 kB, all accepted, 30 MB held (the
    report's 1,000 each: 300 MB)."""
    net = Net(max_topic_bytes_per_client=2**40)
    name = "a/" + "x" * 60_000
    for k in range(5):
        c = raw_connected(net, f"c{k}")
        for i in range(100):
            c._send(encode(Register(0, i + 1, f"{name}/{i}")), GW)
        net.step(0.1)
    assert all(len(net.gateway.session(f"c{k}").topics.registry) == 100 for k in range(5))
    held = sum(net.gateway.session(f"c{k}").topics.registry.size_bytes for k in range(5))
    assert held > 5 * 100 * 60_000


def test_a_client_topic_table_holds_at_most_its_bytes():
    """The same attack with the default bound (64 KiB per client): one 60 kB name each,
    "congestion" for the rest, and the attackers' tables do not touch anyone else's."""
    net = Net()
    name = "a/" + "x" * 60_000
    start = len(net.log)
    for k in range(5):
        c = raw_connected(net, f"c{k}")
        for i in range(1000):
            c._send(encode(Register(0, i + 1, f"{name}/{i}")), GW)
        net.step(0.1)
    for k in range(5):
        acks = [m for m in replies(net, start, f"c{k}") if type(m) is RegAck]
        assert [m.return_code for m in acks] == [0] + [ReturnCode.CONGESTION] * 999
        assert net.gateway.session(f"c{k}").topics.registry.size_bytes <= 0x10000
    dev = connected(net, "dev")
    ids = [dev.register(net.now, f"sensors/t{i}") for i in range(100)]
    net.step(5.0)  # one at a time
    assert [e.msg_id for e in net.take("dev", Registered)] == ids


def test_topic_table_bytes_refuse_with_congestion_and_count_every_name():
    """A name that does not fit is "congestion", as a table full by count is; the names
    of SUBSCRIBEs and of the gateway's own REGISTERs share the same octets."""
    net = Net(max_topic_bytes_per_client=10)
    pub = net.add_mqtt("pub")
    dev = connected(net, "dev")
    a = dev.register(net.now, "t/12345")  # 7 octets
    b = dev.register(net.now, "t/1234")  # 6 more: 13 > 10
    net.step(0.5)
    assert [e.msg_id for e in net.take("dev", Registered)] == [a]
    assert net.take("dev", RequestFailed) == [
        RequestFailed("register", b, "rejected", ReturnCode.CONGESTION)
    ]
    assert dev.register(net.now, "t/12345") is not None  # the same name again is free
    net.step(0.5)
    assert [e.topic_id for e in net.take("dev", Registered)] == [1]
    # Subscribed, but its name does not fit: no topic id in the SUBACK, and what is
    # published to it cannot be registered with the client (dropped and counted).
    dev.subscribe(net.now, "s/ab", 1)
    net.step(0.5)
    assert [e.topic_id for e in net.take("dev", Subscribed)] == [0]
    pub.publish(net.now, "s/ab", b"no room", 1)
    net.step(0.5)
    assert net.take("dev", MessageReceived) == []
    assert net.gateway.stats.dropped_buffer_full == 1


def test_long_topic_names_are_not_supported():
    """max_topic_name_bytes: REGISTER, SUBSCRIBE, UNSUBSCRIBE, WILLTOPIC and
    WILLTOPICUPD with a longer name or filter; a name of exactly that length is fine."""
    net = Net(max_topic_name_bytes=256)
    ok, long = "a/" + "x" * 254, "a/" + "x" * 255
    c = raw_connected(net, "raw")
    start = len(net.log)
    c._send(encode(Register(0, 1, long)), GW)
    c._send(encode(Register(0, 2, ok)), GW)
    c._send(encode(Register(0, 3, "é" * 129)), GW)  # 258 octets in 129 characters
    c._send(encode(Subscribe(4, 0, topic_name=long[:-1] + "#")), GW)
    c._send(encode(Unsubscribe(5, topic_name=long)), GW)
    c._send(encode(WillTopicUpd(long)), GW)
    net.step(0.5)
    assert replies(net, start, "raw") == [
        RegAck(0, 1, ReturnCode.NOT_SUPPORTED),
        RegAck(1, 2, ReturnCode.ACCEPTED),
        RegAck(0, 3, ReturnCode.NOT_SUPPORTED),
        SubAck(0, 4, ReturnCode.NOT_SUPPORTED),
        UnsubAck(5),
        WillTopicResp(ReturnCode.NOT_SUPPORTED),
    ]
    assert net.gateway.stats.long_topics == 5

    w = net.add("w")
    w._send(encode(Connect("w", 60, will=True)), GW)
    net.step(0.1)
    start = len(net.log)
    w._send(encode(WillTopic(long)), GW)
    net.step(0.1)
    assert replies(net, start, "w") == [ConnAck(ReturnCode.NOT_SUPPORTED)]
    assert net.gateway.client_state("w") is None


def test_the_defaults_take_every_name_MQTT_can_carry():
    """The sans-I/O default is MQTT's own limit, so no simulated run changes."""
    net = Net()
    c = raw_connected(net, "raw")
    start = len(net.log)
    c._send(encode(Register(0, 1, "a/" + "x" * 60_000)), GW)
    net.step(0.1)
    assert replies(net, start, "raw") == [RegAck(1, 1, ReturnCode.ACCEPTED)]


def test_registry_counts_octets_through_forget_learn_and_clear():
    r = TopicRegistry(10, max_bytes=8)
    assert r.assign("ab") == 1 and r.assign("cdé") == 2 and r.size_bytes == 6
    assert r.assign("xyz") is None  # 9 > 8
    r.forget(1)
    assert r.size_bytes == 4 and r.assign("xyz") == 3 and r.size_bytes == 7
    assert r.learn(7, "cdé") and r.size_bytes == 7  # moved to a new id, counted once
    assert not r.learn(8, "ab")  # 9 > 8
    r.clear()
    assert r.size_bytes == 0 and r.learn(1, "12345678")
