"""MQTT over real TCP sockets: the simulator's MqttBroker and MqttClient behind asyncio.

    await serve_mqtt("127.0.0.1", 1883)                          # until cancelled
    result = await mqtt_publish("mqtt://127.0.0.1/a/b", b"21.5", qos=1)
    result = await mqtt_subscribe("mqtt://127.0.0.1/a/%23", count=3, on_message=print)

URIs are mqtt://[user[:password]@]host[:port]/topic, port 1883 by default.
Everything after the first "/" of the path is the topic, percent-decoded
(write "#" as %23, since a URI ends at a literal "#"). Real mode names its
client "iotbench-" plus random hex digits from the operating system's random
source; the simulator injects a seeded stream instead.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.codec import SUBACK_FAILURE, ConnectReturnCode
from iotbench.proto.mqtt.events import (
    Connected,
    ConnectionClosed,
    ConnectionRefused,
    MessageReceived,
    ProtocolError,
    Published,
    Subscribed,
)
from iotbench.proto.mqtt.params import MqttBrokerParams, MqttClientParams
from iotbench.proto.mqtt.topics import is_valid_filter, is_valid_topic
from iotbench.real.coap import RealModeError
from iotbench.real.driver import serve_until_cancelled, unreachable
from iotbench.real.stream import (
    StreamClientDriver,
    StreamServerDriver,
    open_stream_client,
    start_stream_server,
)

DEFAULT_PORT = 1883
#: How long a client waits for the transport to close after its DISCONNECT.
CLOSE_WAIT_S = 2.0

# --------------------------------------------------------------------------- server


async def serve_mqtt(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    params: MqttBrokerParams | None = None,
    on_ready: Callable[[StreamServerDriver], None] | None = None,
) -> None:
    """Run the broker until cancelled."""
    broker = MqttBroker(random.SystemRandom(), params or MqttBrokerParams(), strict=False)
    driver = await start_stream_server(broker, host, port)
    await serve_until_cancelled(driver, on_ready)


# --------------------------------------------------------------------------- client


@dataclass(frozen=True)
class MqttTarget:
    """What an mqtt:// URI names."""

    host: str
    port: int
    topic: str
    username: str | None = None
    password: bytes | None = None


def parse_mqtt_uri(uri: str) -> MqttTarget:
    """mqtt://[user[:password]@]host[:port]/topic -> MqttTarget; RealModeError if malformed."""
    parts = urlsplit(uri, allow_fragments=False)
    if parts.scheme.lower() != "mqtt":
        raise RealModeError(f"scheme {parts.scheme or '(none)'!r} is not mqtt in {uri!r}")
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise RealModeError(f"bad port in {uri!r}") from None
    if not parts.hostname:
        raise RealModeError(f"no host in {uri!r}")
    # The topic is the whole rest of the URI: a "?" is a topic character, not a query.
    rest = uri[len(parts.scheme) + 3 :]
    slash = rest.find("/")
    topic = unquote(rest[slash + 1 :]) if slash >= 0 else ""
    if not topic:
        raise RealModeError(f"no topic in {uri!r} (mqtt://host[:port]/topic)")
    username = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password).encode() if parts.password is not None else None
    return MqttTarget(parts.hostname, port, topic, username, password)


@dataclass
class MqttResult:
    """What one client run produced."""

    published: int = 0
    messages: list[MessageReceived] | None = None
    granted: int | None = None
    failure: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


_REFUSALS: dict[int, str] = {
    ConnectReturnCode.UNACCEPTABLE_PROTOCOL_VERSION: "unacceptable protocol version",
    ConnectReturnCode.IDENTIFIER_REJECTED: "client identifier rejected",
    ConnectReturnCode.SERVER_UNAVAILABLE: "server unavailable",
    ConnectReturnCode.BAD_USERNAME_OR_PASSWORD: "bad user name or password",
    ConnectReturnCode.NOT_AUTHORIZED: "not authorized",
}


class _Session:
    """One client connection whose events the caller awaits in order."""

    def __init__(self, client: MqttClient) -> None:
        self.client = client
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self.driver: StreamClientDriver | None = None

    async def open(self, target: MqttTarget, deadline: float | None) -> str | None:
        """Connect; None when CONNACK accepted, else why not."""
        try:
            self.driver = await asyncio.wait_for(
                open_stream_client(self.client, target.host, target.port, self.queue.put_nowait),
                _left(deadline),
            )
        except socket.gaierror as exc:  # a host name that does not resolve: the user's
            raise RealModeError(f"cannot resolve host {target.host!r}: {exc.strerror}") from None
        except TimeoutError:
            return f"cannot connect to {target.host} port {target.port}: timeout"
        except OSError as exc:  # refused, host or network unreachable: a failure, at once
            errno = exc.errno if exc.errno and exc.errno > 0 else None
            # asyncio's text repeats the address; the errno's name is clearer
            exc = OSError(errno, os.strerror(errno)) if errno else exc
            return unreachable((target.host, target.port), exc)
        self.client.connect(self.driver.now())
        self.driver.pump()
        while True:
            event = await self.next(deadline)
            if event is None:
                return "timeout"
            if isinstance(event, Connected):
                return None
            if isinstance(event, ConnectionRefused):
                code = event.return_code
                return f"connection refused: {_REFUSALS.get(code, f'return code {code}')}"
            failure = _failure(event)
            if failure is not None:
                return failure

    async def next(self, deadline: float | None) -> object | None:
        """The next event, or None at the deadline."""
        try:
            return await asyncio.wait_for(self.queue.get(), _left(deadline))
        except TimeoutError:
            return None

    async def close(self) -> None:
        """DISCONNECT (if still connected) and wait briefly for the transport to close."""
        driver = self.driver
        if driver is None:
            return
        self.client.disconnect(driver.now())
        driver.pump()
        try:
            await asyncio.wait_for(driver.closed.wait(), CLOSE_WAIT_S)
        except TimeoutError:
            driver.close()


def _left(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    return max(0.0, deadline - asyncio.get_running_loop().time())


def _failure(event: object) -> str | None:
    if isinstance(event, ProtocolError):
        return f"protocol error: {event.message}"
    if isinstance(event, ConnectionClosed):
        return f"connection closed ({event.reason})"
    return None


def _client(target: MqttTarget, params: MqttClientParams | None) -> MqttClient:
    rng = random.SystemRandom()
    if params is None:
        params = MqttClientParams(
            client_id=f"iotbench-{rng.getrandbits(40):010x}",
            username=target.username,
            password=target.password,
        )
    return MqttClient(rng, params)


def _deadline(timeout_s: float | None) -> float | None:
    return None if timeout_s is None else asyncio.get_running_loop().time() + timeout_s


async def mqtt_publish(
    uri: str,
    payload: bytes,
    *,
    qos: int = 0,
    retain: bool = False,
    count: int = 1,
    timeout_s: float | None = None,
    params: MqttClientParams | None = None,
) -> MqttResult:
    """Connect, publish `payload` `count` times to the URI's topic, wait until each is done
    (QoS 0: written; QoS 1: PUBACK; QoS 2: PUBCOMP), disconnect."""
    target = parse_mqtt_uri(uri)
    if not is_valid_topic(target.topic):
        raise RealModeError(f"cannot publish to {target.topic!r}: wildcards are for subscribing")
    if qos not in (0, 1, 2):
        raise RealModeError(f"QoS must be 0, 1 or 2, not {qos}")
    deadline = _deadline(timeout_s)
    session = _Session(_client(target, params))
    result = MqttResult()
    try:
        result.failure = await session.open(target, deadline)
        client, driver = session.client, session.driver
        pending = count
        while result.failure is None and result.published < count:
            assert driver is not None  # open() connected it
            # Hand over as many as the window and queue take; wait for completions.
            while pending and client.in_flight + client.queued < client.params.max_inflight:
                client.publish(driver.now(), target.topic, payload, qos, retain)
                pending -= 1
            driver.pump()
            event = await session.next(deadline)
            if event is None:
                result.failure = "timeout"
            elif isinstance(event, Published):
                result.published += 1
            else:
                result.failure = _failure(event)
    finally:
        await session.close()
    return result


async def mqtt_subscribe(
    uri: str,
    *,
    qos: int = 0,
    count: int = 0,
    timeout_s: float | None = None,
    on_message: Callable[[MessageReceived], None] | None = None,
    params: MqttClientParams | None = None,
) -> MqttResult:
    """Connect, subscribe to the URI's topic filter, receive `count` messages (0: until
    the timeout or cancellation), disconnect. Reaching the timeout is a failure only
    when a count was asked for."""
    target = parse_mqtt_uri(uri)
    if not is_valid_filter(target.topic):
        raise RealModeError(f"{target.topic!r} is not a valid topic filter")
    if qos not in (0, 1, 2):
        raise RealModeError(f"QoS must be 0, 1 or 2, not {qos}")
    deadline = _deadline(timeout_s)
    session = _Session(_client(target, params))
    messages: list[MessageReceived] = []
    result = MqttResult(messages=messages)
    try:
        result.failure = await session.open(target, deadline)
        if result.failure is None:
            assert session.driver is not None  # open() connected it
            session.client.subscribe(session.driver.now(), [(target.topic, qos)])
            session.driver.pump()
        while result.failure is None and not (count and len(messages) >= count):
            event = await session.next(deadline)
            if event is None:
                result.failure = "timeout" if count else None
                break
            if isinstance(event, Subscribed):
                result.granted = event.granted[0]
                if result.granted == SUBACK_FAILURE:
                    result.failure = "subscription refused by the broker"
            elif isinstance(event, MessageReceived):
                messages.append(event)
                if on_message is not None:
                    on_message(event)
            else:
                result.failure = _failure(event)
    finally:
        await session.close()
    return result
