"""The MQTT-SN client and gateway on real loopback sockets, with our own MQTT broker
behind the gateway: publish and subscribe at every QoS, QoS -1, refusals."""

from __future__ import annotations

import asyncio
import socket

import pytest

from iotbench.proto.mqttsn.codec import TopicIdType
from iotbench.proto.mqttsn.params import MqttSnGatewayParams
from iotbench.real.coap import RealModeError
from iotbench.real.mqtt import mqtt_subscribe, serve_mqtt
from iotbench.real.mqttsn import (
    MqttSnTarget,
    gateway_address,
    mqttsn_publish,
    mqttsn_subscribe,
    parse_mqttsn_uri,
    serve_mqttsn_gateway,
)

WAIT_S = 10
PREDEFINED = {5: "pre/five"}


async def start(coroutine_fn, **kwargs):
    ready: asyncio.Future = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(coroutine_fn(on_ready=ready.set_result, **kwargs))
    driver = await asyncio.wait_for(ready, WAIT_S)
    return task, driver


async def stop(task) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def broker_and_gateway(broker_port: int | None = None):
    """Our broker on a free port (unless one is given) and our gateway in front of it."""
    tasks = []
    if broker_port is None:
        task, broker = await start(serve_mqtt, host="127.0.0.1", port=0)
        tasks.append(task)
        broker_port = broker.server.sockets[0].getsockname()[1]
    task, gw = await start(
        serve_mqttsn_gateway,
        host="127.0.0.1",
        port=0,
        broker_host="127.0.0.1",
        broker_port=broker_port,
        params=MqttSnGatewayParams(predefined_topics=PREDEFINED),
    )
    tasks.append(task)
    return tasks, gateway_address(gw)[1], broker_port


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_publish_through_the_gateway_to_an_mqtt_subscriber(qos):
    async def main():
        tasks, port, broker_port = await broker_and_gateway()
        try:
            sub = asyncio.create_task(
                mqtt_subscribe(
                    f"mqtt://127.0.0.1:{broker_port}/s/%23", qos=2, count=2, timeout_s=WAIT_S
                )
            )
            await asyncio.sleep(0.3)  # the SUBSCRIBE reaches the broker first
            pub = await mqttsn_publish(
                "127.0.0.1", port, "s/t", b"21.5", qos=qos, count=2, timeout_s=WAIT_S
            )
            return pub, await sub
        finally:
            for task in tasks:
                await stop(task)

    pub, sub = asyncio.run(main())
    assert pub.ok and pub.published == 2 and pub.topic_id == 1
    assert (
        sub.ok
        and [(m.topic, m.payload, m.qos) for m in sub.messages] == [("s/t", b"21.5", qos)] * 2
    )


def test_qos_minus_one_and_predefined_topics():
    async def main():
        tasks, port, broker_port = await broker_and_gateway()
        try:
            sub = asyncio.create_task(
                mqtt_subscribe(f"mqtt://127.0.0.1:{broker_port}/%23", count=2, timeout_s=WAIT_S)
            )
            await asyncio.sleep(0.3)
            a = await mqttsn_publish("127.0.0.1", port, 5, b"no connection", qos=-1)
            b = await mqttsn_publish(
                "127.0.0.1", port, "zz", b"short", qos=1, topic_id_type=TopicIdType.SHORT,
                timeout_s=WAIT_S,
            )  # fmt: skip
            return a, b, await sub
        finally:
            for task in tasks:
                await stop(task)

    a, b, sub = asyncio.run(main())
    assert a.ok and b.ok
    assert sorted((m.topic, m.payload) for m in sub.messages) == [
        ("pre/five", b"no connection"),
        ("zz", b"short"),
    ]


def test_mqttsn_subscriber_through_the_gateway():
    async def main():
        tasks, port, _ = await broker_and_gateway()
        try:
            sub = asyncio.create_task(
                mqttsn_subscribe("127.0.0.1", port, "s/#", qos=1, count=2, timeout_s=WAIT_S)
            )
            await asyncio.sleep(0.5)
            for payload in (b"one", b"two"):
                await mqttsn_publish("127.0.0.1", port, "s/x", payload, qos=1, timeout_s=WAIT_S)
            return await sub
        finally:
            for task in tasks:
                await stop(task)

    sub = asyncio.run(main())
    assert sub.ok and sub.granted == 1
    assert [(m.topic, m.payload, m.qos) for m in sub.messages] == [
        ("s/x", b"one", 1),
        ("s/x", b"two", 1),
    ]


def test_unreachable_broker_is_refused_with_congestion():
    async def main():
        tasks, port, _ = await broker_and_gateway(broker_port=free_tcp_port())
        try:
            return await mqttsn_publish("127.0.0.1", port, "s/t", b"x", qos=1, timeout_s=WAIT_S)
        finally:
            for task in tasks:
                await stop(task)

    result = asyncio.run(main())
    assert result.failure == "connection rejected: congestion"


def test_no_gateway_times_out():
    async def main():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))  # bound, never answers
            port = s.getsockname()[1]
            return await mqttsn_publish("127.0.0.1", port, "s/t", b"x", timeout_s=0.5)

    assert asyncio.run(main()).failure.startswith(
        "timeout: no CONNACK from the gateway at 127.0.0.1:"
    )


def test_nothing_listening_fails_at_once():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for work in (
        mqttsn_publish("127.0.0.1", port, "s/t", b"x", qos=1),
        mqttsn_subscribe("127.0.0.1", port, "s/#", count=1),
    ):
        result = asyncio.run(work)  # no timeout: only the ICMP error can end it
        assert result.failure == f"127.0.0.1 port {port} is unreachable: Connection refused"


def test_user_errors():
    with pytest.raises(RealModeError):
        asyncio.run(mqttsn_publish("127.0.0.1", 1, "s/t", b"x", qos=-1))  # needs an id
    with pytest.raises(RealModeError):
        asyncio.run(mqttsn_publish("127.0.0.1", 1, "s/t", b"x", qos=3))


def test_mqttsn_uris():
    assert parse_mqttsn_uri("mqttsn://127.0.0.1/s/%23") == MqttSnTarget("127.0.0.1", 1883, "s/#")
    assert parse_mqttsn_uri("MQTTSN://[::1]:2000") == MqttSnTarget("::1", 2000, "")
    assert parse_mqttsn_uri("mqttsn://h/a?b") == MqttSnTarget("h", 1883, "a?b")
    for bad in ("mqtt://h/t", "mqttsn:///t", "mqttsn://h:x/t"):
        with pytest.raises(RealModeError):
            parse_mqttsn_uri(bad)
