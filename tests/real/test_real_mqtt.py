"""The MQTT stacks on real loopback TCP sockets: round trips, URIs, robustness."""

from __future__ import annotations

import asyncio
import random
import socket

import pytest

from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.codec import Connect, PingReq, Publish, Subscribe, encode
from iotbench.real.coap import RealModeError
from iotbench.real.mqtt import MqttTarget, mqtt_publish, mqtt_subscribe, parse_mqtt_uri, serve_mqtt
from iotbench.real.stream import start_stream_server


async def start_broker():
    ready: asyncio.Future = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve_mqtt("127.0.0.1", 0, on_ready=ready.set_result))
    driver = await asyncio.wait_for(ready, 10)
    port = driver.server.sockets[0].getsockname()[1]
    return task, driver, port


async def stop(task) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def until(condition, timeout_s: float = 10.0) -> None:
    """Wait for `condition()` (polling), failing after a generous timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_publish_and_subscribe_through_our_broker(qos):
    async def main():
        task, driver, port = await start_broker()
        try:
            base = f"mqtt://127.0.0.1:{port}"
            sub = asyncio.create_task(mqtt_subscribe(f"{base}/s/%23", qos=2, count=3, timeout_s=10))
            await until(lambda: any(driver.stack.subscriptions(c) for c in driver.stack.sessions))
            pub = await mqtt_publish(f"{base}/s/a", b"21.5", qos=qos, count=3, timeout_s=10)
            return pub, await sub
        finally:
            await stop(task)

    pub, sub = asyncio.run(main())
    assert pub.ok and pub.published == 3
    assert sub.ok and sub.granted == 2
    assert [(m.topic, m.payload, m.qos) for m in sub.messages] == [("s/a", b"21.5", qos)] * 3


def test_retained_message_reaches_a_later_subscriber():
    async def main():
        task, _, port = await start_broker()
        try:
            base = f"mqtt://127.0.0.1:{port}"
            await mqtt_publish(f"{base}/r", b"kept", qos=1, retain=True, timeout_s=10)
            return await mqtt_subscribe(f"{base}/r", count=1, timeout_s=10)
        finally:
            await stop(task)

    sub = asyncio.run(main())
    assert sub.ok and [(m.payload, m.retain) for m in sub.messages] == [(b"kept", True)]


def test_subscribe_without_count_ends_at_the_timeout_without_failure():
    async def main():
        task, _, port = await start_broker()
        try:
            return await mqtt_subscribe(f"mqtt://127.0.0.1:{port}/quiet", timeout_s=0.3)
        finally:
            await stop(task)

    sub = asyncio.run(main())
    assert sub.ok and sub.messages == []


def test_broker_survives_garbage_floods_and_slow_readers():
    async def main():
        broker = MqttBroker(random.Random(5))
        driver = await start_stream_server(broker, "127.0.0.1", 0, max_write_buffer_bytes=64 << 10)
        port = driver.server.sockets[0].getsockname()[1]
        rng = random.Random(7)
        writers = []

        async def peer(data: bytes) -> None:
            # asyncio streams: writing buffers instead of blocking the loop the broker runs on
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(data)
            writers.append(writer)

        try:
            for i in range(30):  # garbage, some of it behind a valid CONNECT
                junk = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 200)))
                await peer((encode(Connect(f"g{i}")) if i % 2 else b"") + junk)
            await peer(encode(Connect("flood")) + encode(PingReq()) * 50_000)  # never reads
            await peer(encode(Connect("slow")) + encode(Subscribe(1, (("big", 0),))))  # never reads
            await until(lambda: broker.subscriptions("slow"))
            await peer(encode(Connect("big")) + encode(Publish("big", b"x" * 100_000)) * 100)
            await until(lambda: driver.aborted_slow_readers >= 1)
            await until(lambda: broker.stats.decode_errors + broker.stats.protocol_errors >= 10)
            after = await mqtt_publish(f"mqtt://127.0.0.1:{port}/ok", b"1", qos=1, timeout_s=10)
            return after, broker.stats
        finally:
            for writer in writers:
                writer.close()
            driver.close()

    after, stats = asyncio.run(main())
    assert after.ok
    assert stats.internal_errors == 0


def test_uris():
    assert parse_mqtt_uri("mqtt://h/a/b") == MqttTarget("h", 1883, "a/b")
    assert parse_mqtt_uri("mqtt://u:p%40ss@h:1884/a/%23") == MqttTarget(
        "h", 1884, "a/#", "u", b"p@ss"
    )
    assert parse_mqtt_uri("mqtt://[::1]/x?y") == MqttTarget("::1", 1883, "x?y")
    assert parse_mqtt_uri("MQTT://h//lead").topic == "/lead"
    for bad in ("coap://h/a", "mqtt://h", "mqtt://h/", "mqtt:///a", "mqtt://h:99999/a"):
        with pytest.raises(RealModeError):
            parse_mqtt_uri(bad)


def test_client_errors():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        result = asyncio.run(mqtt_publish(f"mqtt://127.0.0.1:{port}/a", b"", timeout_s=5))
        assert result.failure == f"127.0.0.1 port {port} is unreachable: Connection refused"
    with pytest.raises(RealModeError, match="cannot resolve host"):
        asyncio.run(mqtt_publish("mqtt://no-such-host.invalid/a", b"", timeout_s=5))
    with pytest.raises(RealModeError, match="wildcards"):
        asyncio.run(mqtt_publish("mqtt://127.0.0.1/a/+", b""))
    with pytest.raises(RealModeError, match="not a valid topic filter"):
        asyncio.run(mqtt_subscribe("mqtt://127.0.0.1/a/%23/b"))
