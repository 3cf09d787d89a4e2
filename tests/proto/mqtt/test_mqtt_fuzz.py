"""Fuzzing the MQTT stacks: random and mutated byte streams never raise out of the
broker or the client, never make them emit malformed bytes, and never grow their
memory beyond the configured limits."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.codec import (
    ConnAck,
    Connect,
    Disconnect,
    PingReq,
    PingResp,
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
from iotbench.proto.mqtt.params import MqttBrokerParams, MqttClientParams

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

BROKER_PARAMS = MqttBrokerParams(
    max_packet_size_bytes=256,
    max_inflight=2,
    max_queued_messages=3,
    max_sessions=3,
    max_subscriptions_per_session=4,
    max_retained_messages=5,
    retry_interval_s=1.0,
    connect_timeout_s=20.0,
)
CLIENT_PARAMS = MqttClientParams(
    client_id="c",
    keep_alive_s=5,
    max_packet_size_bytes=256,
    max_inflight=2,
    max_queued_messages=3,
    retry_interval_s=1.0,
)

# Valid packets of every kind, as either end might see them.
CORPUS = [
    encode(p)
    for p in [
        Connect("a", True, 10),
        Connect("b", False, 0, Will("w/b", b"gone", 1, True)),
        Connect("", True, 5, None, "user", b"pw"),
        Connect("a", False, 3),
        ConnAck(False, 0),
        ConnAck(True, 0),
        ConnAck(False, 2),
        Publish("t/a", b"v", 0, True),
        Publish("t/b", b"w" * 30, 1, False, False, 1),
        Publish("t/c", b"", 2, True, True, 2),
        Publish("$SYS/x", b"s", 1, packet_id=3),
        PubAck(1),
        PubRec(2),
        PubRel(2),
        PubComp(2),
        Subscribe(4, (("t/#", 2), ("+/b", 1))),
        Subscribe(5, (("#", 0),)),
        SubAck(4, (2, 1)),
        Unsubscribe(6, ("t/#",)),
        UnsubAck(6),
        PingReq(),
        PingResp(),
        Disconnect(),
    ]
]

_OPS = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 300), st.integers(0, 255)), max_size=4)


def _mutate(data: bytes, ops) -> bytes:
    b = bytearray(data)
    for kind, pos, val in ops:
        i = pos % (len(b) + 1)
        if kind == 0 and i < len(b):
            b[i] ^= val or 1
        elif kind == 1:
            b.insert(i, val)
        elif kind == 2 and i < len(b):
            del b[i]
        elif kind == 3:
            del b[i:]
        elif kind == 4 and i < len(b):
            b[i] = val
    return bytes(b)


def _check_output(data: bytes) -> None:
    for raw in split_packets(data):  # whole packets only
        assert encode(decode(raw)) == raw  # well-formed and canonical


def _check_broker(b: MqttBroker) -> None:
    for _, data in b.data_to_send():
        _check_output(data)
    b.connections_to_close()
    b.events()
    p = b.params
    assert b.stats.internal_errors == 0
    assert len(b._sessions) <= p.max_sessions
    assert len(b._retained) <= p.max_retained_messages
    for s in b._sessions.values():
        assert len(s.subscriptions) <= p.max_subscriptions_per_session
        assert len(s.outbox.inflight) <= p.max_inflight
        assert len(s.outbox.queue) <= p.max_queued_messages
        assert len(s.inbox.awaiting_release) <= 0xFFFF
    for c in b._conns.values():
        assert c.framer.buffered_bytes < p.max_packet_size_bytes + 5
    assert len(b._timers) <= 4 * len(b._conns) + 64


# Broker steps: (connection 0-2, action, bytes); action 0 data, 1 lost, 2 made, 3 timer.
STEP = st.tuples(st.integers(0, 2), st.integers(0, 3), st.floats(0.0, 8.0))


def _run_broker(steps, chunks: list[bytes]) -> None:
    b = MqttBroker(random.Random(3), BROKER_PARAMS)
    for conn in range(3):
        b.connection_made(0.0, conn)
    now = 0.0
    for (conn, action, dt), data in zip(steps, chunks):
        now += dt
        if action == 0:
            b.receive_data(now, conn, data)
        elif action == 1:
            b.connection_lost(now, conn)
        elif action == 2:
            b.connection_made(now, conn)
        t = b.next_timer()
        if t is not None and t <= now:
            b.handle_timer(now)
        _check_broker(b)


@FUZZ
@given(st.lists(STEP, min_size=1, max_size=30), st.lists(st.binary(max_size=60), min_size=30))
def test_broker_random_bytes(steps, chunks):
    _run_broker(steps, chunks)


@FUZZ
@given(
    st.lists(STEP, min_size=1, max_size=30),
    st.lists(
        st.tuples(st.lists(st.sampled_from(CORPUS), min_size=1, max_size=3), _OPS),
        min_size=30,
        max_size=30,
    ),
)
def test_broker_mutated_streams(steps, items):
    _run_broker(steps, [_mutate(b"".join(packets), ops) for packets, ops in items])


@FUZZ
@given(st.lists(st.sampled_from(CORPUS), min_size=1, max_size=40), st.integers(1, 7))
def test_broker_valid_packets_in_any_order_and_split(packets, chunk):
    """Well-formed packets in any order (many of them protocol violations)."""
    wire = b"".join(packets)
    _run_broker(
        [(i % 3, 0, 0.3) for i in range(0, len(wire), chunk)],
        [wire[i : i + chunk] for i in range(0, len(wire), chunk)],
    )


def _check_client(c: MqttClient) -> None:
    _check_output(c.data_to_send())
    c.events()
    assert c.stats.protocol_errors >= 0
    assert c._framer.buffered_bytes < CLIENT_PARAMS.max_packet_size_bytes + 5
    assert c.in_flight <= CLIENT_PARAMS.max_inflight
    assert c.queued <= CLIENT_PARAMS.max_queued_messages
    assert len(c._inbox.awaiting_release) <= 0xFFFF


def _run_client(chunks: list[bytes], times: list[float]) -> None:
    c = MqttClient(random.Random(4), CLIENT_PARAMS)
    c.publish(0.0, "t/q", b"queued", 1)
    c.connect(0.0)
    c.subscribe(0.0, [("t/#", 2)])
    now = 0.0
    for i, (data, dt) in enumerate(zip(chunks, times)):
        now += dt
        c.receive_data(now, data)
        if i % 4 == 3 and c.queued < CLIENT_PARAMS.max_queued_messages:
            c.publish(now, "t/x", b"%d" % i, i % 3)
        t = c.next_timer()
        if t is not None and t <= now:
            c.handle_timer(now)
        if c.close_requested and not c.connected:
            c.connection_lost(now)
            c.connect(now)  # reconnect, as an application would
        _check_client(c)


@FUZZ
@given(
    st.lists(st.binary(max_size=60), min_size=1, max_size=20),
    st.lists(st.floats(0, 4), min_size=20),
)
def test_client_random_bytes(chunks, times):
    _run_client([encode(ConnAck(False, 0)) + chunks[0], *chunks[1:]], times)


@FUZZ
@given(
    st.lists(
        st.tuples(st.lists(st.sampled_from(CORPUS), min_size=1, max_size=3), _OPS),
        min_size=1,
        max_size=20,
    ),
    st.lists(st.floats(0, 4), min_size=20),
)
def test_client_mutated_streams(items, times):
    chunks = [_mutate(b"".join(packets), ops) for packets, ops in items]
    _run_client([encode(ConnAck(False, 0)), *chunks], [0.0, *times])
