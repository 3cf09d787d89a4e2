"""Our MQTT client, in real mode, against Eclipse mosquitto (a broker we did not write),
which each test starts on a free loopback port with a config file of its own."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys

import pytest
from paho_client import Paho

from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.codec import Will
from iotbench.proto.mqtt.events import (
    Connected,
    ConnectionClosed,
    MessageReceived,
    PingResponse,
    Published,
    Subscribed,
)
from iotbench.proto.mqtt.params import MqttClientParams
from iotbench.real.mqtt import mqtt_publish, mqtt_subscribe
from iotbench.real.stream import open_stream_client

pytestmark = pytest.mark.interop

WAIT_S = 20


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_our_publisher_and_subscriber_through_mosquitto(mosquitto_broker, qos):
    base = f"mqtt://127.0.0.1:{mosquitto_broker}"

    async def main():
        sub = asyncio.create_task(mqtt_subscribe(f"{base}/s/%23", qos=2, count=3, timeout_s=WAIT_S))
        await asyncio.sleep(0.5)  # let the SUBSCRIBE reach mosquitto first
        pub = await mqtt_publish(f"{base}/s/t", b"21.5", qos=qos, count=3, timeout_s=WAIT_S)
        return pub, await sub

    pub, sub = asyncio.run(main())
    assert pub.ok and pub.published == 3
    assert sub.ok and sub.granted == 2
    assert [(m.topic, m.payload, m.qos) for m in sub.messages] == [("s/t", b"21.5", qos)] * 3


def test_our_cli_publishes_to_a_paho_subscriber(mosquitto_broker):
    paho = Paho(mosquitto_broker, "paho-sub")
    try:
        paho.subscribe("cli/#", 2)
        done = subprocess.run(
            [sys.executable, "-m", "iotbench", "client", "mqtt", "pub",
             f"mqtt://127.0.0.1:{mosquitto_broker}/cli/x", "--payload", "hello", "--qos", "2",
             "--count", "2", "--timeout", str(WAIT_S)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert [(m.payload, m.qos) for m in paho.receive(2)] == [(b"hello", 2)] * 2
    finally:
        paho.close()


def test_our_cli_subscriber_gets_retained_and_live_messages(mosquitto_broker):
    paho = Paho(mosquitto_broker, "paho-pub")
    try:
        paho.publish("ret/a", b"kept", 1, retain=True)
        sub = subprocess.Popen(
            [sys.executable, "-m", "iotbench", "client", "mqtt", "sub",
             f"mqtt://127.0.0.1:{mosquitto_broker}/ret/%23", "--qos", "1", "--count", "2",
             "--timeout", str(WAIT_S)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        for _ in range(200):  # live messages until the subscriber has its two
            if sub.poll() is not None:
                break
            paho.publish("ret/b", b"live", 1)
            try:
                sub.wait(0.1)
            except subprocess.TimeoutExpired:
                pass
        out, err = sub.communicate(timeout=WAIT_S)
    finally:
        paho.close()
    assert sub.returncode == 0, err
    assert out.splitlines() == ["kept", "live"]
    assert "ret/a: QoS 1, retained, 4 bytes" in err


class Session:
    """Our MqttClient on a real TCP connection, with its events in a queue."""

    def __init__(self, client: MqttClient, port: int) -> None:
        self.client = client
        self.port = port
        self.events: asyncio.Queue = asyncio.Queue()
        self.driver = None

    async def connect(self) -> Connected:
        self.driver = await open_stream_client(
            self.client, "127.0.0.1", self.port, self.events.put_nowait
        )
        self.client.connect(self.driver.now())
        self.driver.pump()
        return await self.expect(Connected)

    async def expect(self, kind: type):
        while True:
            event = await asyncio.wait_for(self.events.get(), WAIT_S)
            if isinstance(event, kind):
                return event
            assert not isinstance(event, ConnectionClosed), event

    async def disconnect(self) -> None:
        self.client.disconnect(self.driver.now())
        self.driver.pump()
        await asyncio.wait_for(self.driver.closed.wait(), WAIT_S)


def test_our_persistent_session_resumes_on_mosquitto(mosquitto_broker):
    """Clean session 0: mosquitto keeps the subscription and queues QoS 1 messages."""
    params = MqttClientParams(client_id="iotbench-keeper", clean_session=False)
    client = MqttClient(random.Random(1), params)

    async def main():
        first = Session(client, mosquitto_broker)
        await first.connect()
        client.subscribe(first.driver.now(), [("keep/#", 1)])
        first.driver.pump()
        await first.expect(Subscribed)
        await first.disconnect()
        for i in range(3):
            await mqtt_publish(
                f"mqtt://127.0.0.1:{mosquitto_broker}/keep/x", b"%d" % i, qos=1, timeout_s=WAIT_S
            )
        second = Session(client, mosquitto_broker)
        connected = await second.connect()
        messages = [await second.expect(MessageReceived) for _ in range(3)]
        await second.disconnect()
        return connected, messages

    connected, messages = asyncio.run(main())
    assert connected.session_present
    assert [(m.payload, m.qos) for m in messages] == [(b"0", 1), (b"1", 1), (b"2", 1)]


def test_our_keep_alive_and_will_with_mosquitto(mosquitto_broker):
    """PINGREQ/PINGRESP when idle; the will arrives when our connection breaks."""
    params = MqttClientParams(
        client_id="iotbench-dev", keep_alive_s=1, will=Will("status/dev", b"offline", 1)
    )
    client = MqttClient(random.Random(2), params)

    async def main():
        watcher = asyncio.create_task(
            mqtt_subscribe(
                f"mqtt://127.0.0.1:{mosquitto_broker}/status/dev", qos=1, count=1, timeout_s=WAIT_S
            )
        )
        dev = Session(client, mosquitto_broker)
        await dev.connect()
        pong = await dev.expect(PingResponse)
        await asyncio.sleep(0.5)  # the watcher has subscribed by now
        dev.driver.transport.abort()  # no DISCONNECT: mosquitto publishes the will
        closed = await dev.expect(ConnectionClosed)
        return pong, closed, await watcher

    pong, closed, watcher = asyncio.run(main())
    assert pong.rtt_s >= 0 and closed.reason == "connection-lost"
    assert watcher.ok and [m.payload for m in watcher.messages] == [b"offline"]


def test_our_qos2_publish_completes_with_pubcomp(mosquitto_broker):
    client = MqttClient(random.Random(3), MqttClientParams(client_id="iotbench-q2"))

    async def main():
        s = Session(client, mosquitto_broker)
        await s.connect()
        pid = client.publish(s.driver.now(), "q2/x", b"exactly once", 2)
        s.driver.pump()
        done = await s.expect(Published)
        await s.disconnect()
        return pid, done

    pid, done = asyncio.run(main())
    assert done == Published(pid, 1)
