"""Our MQTT-SN client and gateway (real mode, in process) in front of Eclipse mosquitto,
which each test starts on a free loopback port, with a paho-mqtt client (neither
of which we wrote) on the broker's side."""

from __future__ import annotations

import asyncio
import random

import pytest
from paho_client import Paho

from iotbench.proto.mqtt.codec import Will
from iotbench.proto.mqttsn.client import MqttSnClient
from iotbench.proto.mqttsn.codec import TopicIdType
from iotbench.proto.mqttsn.events import Connected
from iotbench.proto.mqttsn.params import MqttSnClientParams, MqttSnGatewayParams
from iotbench.real.driver import open_datagram_driver
from iotbench.real.mqttsn import (
    gateway_address,
    mqttsn_publish,
    mqttsn_subscribe,
    serve_mqttsn_gateway,
)

pytestmark = pytest.mark.interop

WAIT_S = 20
PREDEFINED = {7: "sn/predefined"}


async def gateway(broker_port: int, **params):
    """Our gateway on a free UDP port in front of the broker; (task, UDP port)."""
    ready: asyncio.Future = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(
        serve_mqttsn_gateway(
            "127.0.0.1",
            0,
            "127.0.0.1",
            broker_port,
            params=MqttSnGatewayParams(predefined_topics=PREDEFINED, **params),
            on_ready=ready.set_result,
        )
    )
    driver = await asyncio.wait_for(ready, WAIT_S)
    return task, gateway_address(driver)[1]


async def stop(task) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("qos", [0, 1, 2])
@pytest.mark.parametrize("kind", ["registered", "predefined", "short"])
def test_paho_receives_what_our_mqttsn_client_publishes(mosquitto_broker, qos, kind):
    paho = Paho(mosquitto_broker, "paho-sub")
    topic, expected, topic_id_type = {
        "registered": ("sn/registered", "sn/registered", None),
        "predefined": (7, "sn/predefined", TopicIdType.PREDEFINED),
        "short": ("sn", "sn", TopicIdType.SHORT),
    }[kind]

    async def main():
        task, port = await gateway(mosquitto_broker)
        try:
            return await mqttsn_publish(
                "127.0.0.1", port, topic, b"21.5", qos=qos, count=3,
                topic_id_type=topic_id_type, timeout_s=WAIT_S,
            )  # fmt: skip
        finally:
            await stop(task)

    try:
        paho.subscribe("sn/#" if kind != "short" else "sn", 2)
        result = asyncio.run(main())
        assert result.ok and result.published == 3, result.failure
        got = [(m.topic, m.payload, m.qos) for m in paho.receive(3)]
        assert got == [(expected, b"21.5", qos)] * 3
        assert paho.nothing_more()
    finally:
        paho.close()


def test_qos_minus_one_reaches_paho_without_a_connection(mosquitto_broker):
    paho = Paho(mosquitto_broker, "paho-sub")

    async def main():
        task, port = await gateway(mosquitto_broker)
        try:
            result = await mqttsn_publish("127.0.0.1", port, 7, b"fire and forget", qos=-1)
            await asyncio.sleep(1.0)  # nothing to wait for: give the gateway time to pass it on
            return result
        finally:
            await stop(task)

    try:
        paho.subscribe("sn/#", 1)
        assert asyncio.run(main()).ok
        [message] = paho.receive(1)
        assert (message.topic, message.payload, message.qos) == (
            "sn/predefined",
            b"fire and forget",
            0,
        )
    finally:
        paho.close()


def test_our_mqttsn_subscriber_receives_what_paho_publishes(mosquitto_broker):
    paho = Paho(mosquitto_broker, "paho-pub")

    async def main():
        task, port = await gateway(mosquitto_broker)
        try:
            sub = asyncio.create_task(
                mqttsn_subscribe("127.0.0.1", port, "up/#", qos=1, count=3, timeout_s=WAIT_S)
            )
            await asyncio.sleep(1.0)  # the subscription is in place at mosquitto
            for topic in ("up/a", "up/b", "up/a"):
                await asyncio.to_thread(paho.publish, topic, topic.encode(), 1)
            return await sub
        finally:
            await stop(task)

    try:
        result = asyncio.run(main())
    finally:
        paho.close()
    assert result.ok, result.failure
    assert [(m.topic, m.payload, m.qos) for m in result.messages] == [
        ("up/a", b"up/a", 1),
        ("up/b", b"up/b", 1),
        ("up/a", b"up/a", 1),
    ]


def test_mosquitto_publishes_the_will_of_a_lost_mqttsn_client(mosquitto_broker):
    """Keep-alive 1 s: the gateway gives the silent client up after 1.5 s and cuts its
    MQTT connection without DISCONNECT, so mosquitto publishes the will."""
    paho = Paho(mosquitto_broker, "paho-watch")
    params = MqttSnClientParams(client_id="iotbench-dying", keep_alive_s=1)
    client = MqttSnClient(random.Random(7), params)

    async def main():
        task, port = await gateway(mosquitto_broker)
        try:
            events: asyncio.Queue = asyncio.Queue()
            driver = await open_datagram_driver(
                client, events.put_nowait, local_addr=("127.0.0.1", 0)
            )
            client.connect(driver.now(), ("127.0.0.1", port), Will("sn/will", b"gone", 1))
            driver.pump()
            while not isinstance(await asyncio.wait_for(events.get(), WAIT_S), Connected):
                pass
            driver.close()  # the device dies: no PINGREQ, no DISCONNECT
            return await asyncio.to_thread(paho.receive, 1)
        finally:
            await stop(task)

    try:
        paho.subscribe("sn/will", 1)
        [will] = asyncio.run(main())
    finally:
        paho.close()
    assert (will.topic, will.payload, will.qos) == ("sn/will", b"gone", 1)
