"""MQTT-SN over real sockets: the simulator's MqttSnGateway and MqttSnClient behind asyncio.

    await serve_mqttsn_gateway("127.0.0.1", 1883, "127.0.0.1", 1883)   # until cancelled
    result = await mqttsn_publish("127.0.0.1", 1883, "sensors/t", b"21.5", qos=1)
    result = await mqttsn_subscribe("127.0.0.1", 1883, "sensors/#", count=3)
    target = parse_mqttsn_uri("mqttsn://127.0.0.1:1883/sensors/t")  # for a command line

The gateway listens on UDP (MQTT-SN clients) and opens one TCP connection per
client to an MQTT 3.1.1 broker. Port 1883 is the MQTT-SN default of RSMB and
mqtt-sn-tools (UDP; the broker's TCP 1883 does not collide with it). Real mode
names its client "iotbench-" plus random hex digits from the operating
system's random source (19 characters, within MQTT-SN's 23); the simulator
injects a seeded stream instead.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from iotbench.proto.mqttsn.client import MqttSnClient
from iotbench.proto.mqttsn.codec import ReturnCode, TopicIdType
from iotbench.proto.mqttsn.events import (
    Connected,
    ConnectionRefused,
    Disconnected,
    MessageReceived,
    Published,
    Registered,
    RequestFailed,
    Subscribed,
)
from iotbench.proto.mqttsn.gateway import MqttSnGateway
from iotbench.proto.mqttsn.params import MqttSnClientParams, MqttSnGatewayParams
from iotbench.proto.sansio import drain_with
from iotbench.real.coap import RealModeError
from iotbench.real.driver import (
    AsyncDatagramDriver,
    open_datagram_driver,
    serve_until_cancelled,
    unreachable,
)
from iotbench.real.stream import DEFAULT_MAX_WRITE_BUFFER_BYTES

log = logging.getLogger("iotbench.real")

DEFAULT_PORT = 1883
#: How long a client waits for the gateway's answer to its DISCONNECT.
CLOSE_WAIT_S = 2.0

# --------------------------------------------------------------------------- gateway


class _BrokerConnection(asyncio.Protocol):
    """One TCP connection from the gateway to the broker, carrying one gateway stream."""

    def __init__(self, driver: GatewayDriver, stream: int) -> None:
        self.driver = driver
        self.stream = stream
        self.transport: asyncio.Transport | None = None
        self.closing = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # a TCP connection's
        self.transport = transport
        if self.closing:
            transport.close()  # the gateway gave up on it while it was opening
        else:
            self.driver._stream_connected(self.stream)

    def data_received(self, data: bytes) -> None:
        self.driver._stream_data(self.stream, data)

    def eof_received(self) -> bool:
        return False  # the broker closed its side: close ours too, connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.driver._stream_lost(self.stream)

    def write(self, data: bytes) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        transport.write(data)
        if transport.get_write_buffer_size() > self.driver.max_write_buffer_bytes:
            log.warning("broker connection %s does not read; aborting it", self.stream)
            transport.abort()

    def close(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.close()  # after the buffered bytes are written


class GatewayDriver(AsyncDatagramDriver):
    """Feeds an MqttSnGateway from a UDP socket, and its broker streams from TCP connections.

    The datagram side is real/driver.py's; on top, every stream the gateway asks
    for becomes a TCP connection to the broker, opened in the background
    (stream_connected once open, stream_lost if it fails or breaks), written
    in order and closed after its queued bytes when the gateway says so.
    """

    def __init__(
        self,
        gateway: MqttSnGateway,
        broker_host: str,
        broker_port: int,
        on_event: Callable[[object], None] | None = None,
        *,
        max_write_buffer_bytes: int = DEFAULT_MAX_WRITE_BUFFER_BYTES,
    ) -> None:
        super().__init__(gateway, on_event)
        self.broker_host = broker_host
        self.broker_port = broker_port
        self.max_write_buffer_bytes = max_write_buffer_bytes
        self._streams: dict[int, _BrokerConnection] = {}
        self._opening: set[asyncio.Task] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.stack.start(self.now())
        self.pump()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for conn in list(self._streams.values()):
            conn.close()
        for task in self._opening:
            task.cancel()

    @property
    def sockname(self) -> tuple[str, int]:
        assert self.transport is not None  # bound before anyone asks
        name = self.transport.get_extra_info("sockname")
        return (str(name[0]), int(name[1]))

    def pump(self) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        assert self._timer is not None  # set with the transport
        self._timer.arm(drain_with(self.stack, self._flush, self._deliver))

    def _flush(self) -> None:
        gw = self.stack
        for data, addr in gw.datagrams_to_send():
            self._send(data, addr)
        for stream in gw.streams_to_open():
            self._open(stream)
        for stream, data in gw.stream_data_to_send():
            conn = self._streams.get(stream)
            if conn is not None:
                conn.write(data)
        for stream in gw.streams_to_close():
            conn = self._streams.get(stream)
            if conn is not None:
                conn.close()

    # ---- broker streams -------------------------------------------------------------------

    def _open(self, stream: int) -> None:
        conn = _BrokerConnection(self, stream)
        self._streams[stream] = conn
        loop = self.loop
        assert loop is not None  # streams open once the gateway's socket is
        task = loop.create_task(
            loop.create_connection(lambda: conn, self.broker_host, self.broker_port)
        )
        self._opening.add(task)
        task.add_done_callback(lambda t: self._opened(t, stream))

    def _opened(self, task: asyncio.Task, stream: int) -> None:
        self._opening.discard(task)
        if task.cancelled() or task.exception() is not None:
            if not task.cancelled():
                log.warning("cannot connect to the broker: %s", task.exception())
            self._stream_lost(stream)

    def _stream_connected(self, stream: int) -> None:
        self.stack.stream_connected(self.now(), stream)
        self.pump()

    def _stream_data(self, stream: int, data: bytes) -> None:
        self.stack.stream_receive(self.now(), stream, data)
        self.pump()

    def _stream_lost(self, stream: int) -> None:
        if self._streams.pop(stream, None) is not None:
            self.stack.stream_lost(self.now(), stream)
            self.pump()


async def serve_mqttsn_gateway(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    broker_host: str = "127.0.0.1",
    broker_port: int = 1883,
    *,
    params: MqttSnGatewayParams | None = None,
    on_ready: Callable[[GatewayDriver], None] | None = None,
    on_event: Callable[[object], None] | None = None,
) -> None:
    """Run an MQTT-SN gateway on UDP host:port for the broker at broker_host:broker_port,
    until cancelled. Broadcasting (ADVERTISE) is allowed on the socket when
    params.broadcast_addr is set."""
    params = params or MqttSnGatewayParams()
    gateway = MqttSnGateway(
        random.SystemRandom(), params, strict=False
    )  # real sockets: our own errors logged, not raised
    loop = asyncio.get_running_loop()
    try:
        _, driver = await loop.create_datagram_endpoint(
            lambda: GatewayDriver(gateway, broker_host, broker_port, on_event),
            local_addr=(host, port),
            allow_broadcast=params.broadcast_addr is not None,
        )
    except OSError as exc:
        raise RealModeError(f"cannot listen on UDP {host} port {port}: {exc.strerror}") from None
    await serve_until_cancelled(driver, on_ready)


# --------------------------------------------------------------------------- client


@dataclass(frozen=True)
class MqttSnTarget:
    """What an mqttsn:// URI names: the gateway and a topic (name, filter or "")."""

    host: str
    port: int
    topic: str


def parse_mqttsn_uri(uri: str) -> MqttSnTarget:
    """mqttsn://host[:port][/topic] -> MqttSnTarget; RealModeError if malformed.

    As for mqtt:// URIs, the topic is everything after the first "/",
    percent-decoded (write "#" as %23); it may be empty when the topic is
    given otherwise (a predefined topic id).
    """
    parts = urlsplit(uri, allow_fragments=False)
    if parts.scheme.lower() != "mqttsn":
        raise RealModeError(f"scheme {parts.scheme or '(none)'!r} is not mqttsn in {uri!r}")
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise RealModeError(f"bad port in {uri!r}") from None
    if not parts.hostname:
        raise RealModeError(f"no host in {uri!r}")
    rest = uri[len(parts.scheme) + 3 :]
    slash = rest.find("/")
    topic = unquote(rest[slash + 1 :]) if slash >= 0 else ""
    return MqttSnTarget(parts.hostname, port, topic)


@dataclass
class MqttSnResult:
    """What one client run produced."""

    published: int = 0
    topic_id: int | None = None
    messages: list[MessageReceived] = field(default_factory=list)
    granted: int | None = None
    failure: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


_RETURN_CODES: dict[int, str] = {
    ReturnCode.CONGESTION: "rejected: congestion",
    ReturnCode.INVALID_TOPIC_ID: "rejected: invalid topic ID",
    ReturnCode.NOT_SUPPORTED: "rejected: not supported",
}


def _return_code(code: int | None) -> str:
    if code is None:
        return "rejected"
    return _RETURN_CODES.get(code, f"rejected: return code {code}")


@dataclass
class Unreachable:
    """The operating system reported an ICMP error for the gateway's address."""

    message: str


def _failure(event: object) -> str | None:
    if isinstance(event, Unreachable):
        return event.message
    if isinstance(event, ConnectionRefused):
        return f"connection {_return_code(event.return_code)}"
    if isinstance(event, RequestFailed):
        if event.reason == "rejected":
            return f"{event.kind} {_return_code(event.return_code)}"
        return f"{event.kind} failed: {event.reason}"
    if isinstance(event, Disconnected):
        return f"disconnected ({event.reason})"
    return None


#: what a client waits for, by the event that says it came (for timeout messages)
WAITING_FOR = {
    Connected: "CONNACK",
    Registered: "REGACK",
    Published: "acknowledgement of the PUBLISH (PUBACK or PUBCOMP)",
}


def _shown(addr: tuple[str, int]) -> str:
    host, port = addr[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Session:
    """One MqttSnClient on a UDP socket whose events the caller awaits in order."""

    def __init__(self, client: MqttSnClient) -> None:
        self.client = client
        self.queue: asyncio.Queue[object] = asyncio.Queue()
        self.driver: AsyncDatagramDriver | None = None
        self.gateway: tuple[str, int] | None = None
        self.gone = False  # the OS said the gateway is unreachable

    async def open(self, host: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
        except OSError as exc:
            raise RealModeError(f"cannot resolve {host}: {exc.strerror or exc}") from None
        family, _, _, _, sockaddr = infos[0]
        self.gateway = (str(sockaddr[0]), int(sockaddr[1]))
        self.driver = await open_datagram_driver(
            self.client,
            self.queue.put_nowait,
            remote_addr=self.gateway,
            family=family,
            on_error=self._unreachable,
        )

    @property
    def opened(self) -> tuple[AsyncDatagramDriver, tuple[str, int]]:
        """The driver and the gateway's address, once open() has run."""
        if self.driver is None or self.gateway is None:
            raise RealModeError("the MQTT-SN session is not open")
        return self.driver, self.gateway

    def _unreachable(self, exc: OSError) -> None:
        self.gone = True
        _, gateway = self.opened
        self.queue.put_nowait(Unreachable(unreachable(gateway, exc)))

    async def next(self, deadline: float | None) -> object | None:
        """The next event, or None at the deadline."""
        try:
            return await asyncio.wait_for(self.queue.get(), _left(deadline))
        except TimeoutError:
            return None

    async def expect(self, kind: type, deadline: float | None) -> tuple[object | None, str | None]:
        """(event, None) for the next `kind` event, or (None, why not)."""
        while True:
            event = await self.next(deadline)
            if event is None:
                waited = WAITING_FOR.get(kind, kind.__name__)
                _, gateway = self.opened
                return None, f"timeout: no {waited} from the gateway at {_shown(gateway)}"
            if isinstance(event, kind):
                return event, None
            failure = _failure(event)
            if failure is not None:
                return None, failure

    async def connect(self, deadline: float | None) -> str | None:
        driver, gateway = self.opened
        self.client.connect(driver.now(), gateway)
        driver.pump()
        _, failure = await self.expect(Connected, deadline)
        return failure

    async def close(self) -> None:
        """DISCONNECT (if connected) and wait briefly for the answer; close the socket."""
        driver = self.driver
        if driver is None:
            return
        if not self.gone and self.client.state not in ("disconnected", "disconnecting"):
            self.client.disconnect(driver.now())
            driver.pump()
            try:
                await asyncio.wait_for(self._disconnected(), CLOSE_WAIT_S)
            except TimeoutError:
                pass
        driver.close()

    async def _disconnected(self) -> None:
        while not isinstance(await self.queue.get(), Disconnected):
            pass


def _left(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    return max(0.0, deadline - asyncio.get_running_loop().time())


def _deadline(timeout_s: float | None) -> float | None:
    return None if timeout_s is None else asyncio.get_running_loop().time() + timeout_s


def _client(params: MqttSnClientParams | None) -> MqttSnClient:
    rng = random.SystemRandom()
    if params is None:
        params = MqttSnClientParams(client_id=f"iotbench-{rng.getrandbits(40):010x}")
    return MqttSnClient(rng, params, strict=False)


def _topic_kind(topic: str | int, topic_id_type: TopicIdType | None) -> TopicIdType:
    """NORMAL for a topic name, PREDEFINED for a number, unless told otherwise."""
    if topic_id_type is not None:
        return topic_id_type
    return TopicIdType.PREDEFINED if isinstance(topic, int) else TopicIdType.NORMAL


async def mqttsn_publish(
    host: str,
    port: int,
    topic: str | int,
    payload: bytes,
    *,
    qos: int = 0,
    retain: bool = False,
    count: int = 1,
    topic_id_type: TopicIdType | None = None,
    timeout_s: float | None = None,
    params: MqttSnClientParams | None = None,
) -> MqttSnResult:
    """Publish `payload` `count` times through the gateway at host:port.

    topic: a topic name (registered with REGISTER first), a predefined topic id
    (int), or with topic_id_type=SHORT a two-character short topic name. QoS 0,
    1, 2: CONNECT, (REGISTER,) PUBLISH and its acknowledgements, DISCONNECT; each
    message is done when Published says so. QoS -1: PUBLISH only, without a
    connection (predefined or short topics, 6.8).
    """
    kind = _topic_kind(topic, topic_id_type)
    if qos not in (-1, 0, 1, 2):
        raise RealModeError(f"QoS must be -1, 0, 1 or 2, not {qos}")
    if qos == -1 and kind == TopicIdType.NORMAL:
        raise RealModeError("QoS -1 needs a predefined topic id or a short topic name")
    if count < 1:
        raise RealModeError(f"count must be at least 1, not {count}")
    deadline = _deadline(timeout_s)
    session = _Session(_client(params))
    result = MqttSnResult()
    await session.open(host, port)
    driver, _ = session.opened
    client = session.client
    try:
        if qos == -1:
            for _ in range(count):
                _publish(client, session, topic, payload, qos, retain, kind)
                result.published += 1
            driver.pump()
            return result
        result.failure = await session.connect(deadline)
        if result.failure is None and kind == TopicIdType.NORMAL:
            if not isinstance(topic, str):
                raise RealModeError(f"topic {topic}: a topic name for a normal topic id")
            client.register(driver.now(), topic)
            driver.pump()
            event, result.failure = await session.expect(Registered, deadline)
            if isinstance(event, Registered):
                result.topic_id = topic = event.topic_id
        pending = count
        while result.failure is None and result.published < count:
            # Hand over what the client's queue takes; wait for completions.
            while pending and client.queued < client.params.max_queued:
                _publish(client, session, topic, payload, qos, retain, kind)
                pending -= 1
            driver.pump()
            _, result.failure = await session.expect(Published, deadline)
            if result.failure is None:
                result.published += 1
    finally:
        await session.close()
    return result


def _publish(
    client: MqttSnClient,
    session: _Session,
    topic: str | int,
    payload: bytes,
    qos: int,
    retain: bool,
    kind: TopicIdType,
) -> None:
    driver, gateway = session.opened
    try:
        now = driver.now()
        client.publish(now, topic, payload, qos, retain, topic_id_type=kind, addr=gateway)
    except ValueError as exc:
        raise RealModeError(str(exc)) from None


async def mqttsn_subscribe(
    host: str,
    port: int,
    topic: str | int,
    *,
    qos: int = 0,
    count: int = 0,
    topic_id_type: TopicIdType | None = None,
    timeout_s: float | None = None,
    on_message: Callable[[MessageReceived], None] | None = None,
    params: MqttSnClientParams | None = None,
) -> MqttSnResult:
    """Connect through the gateway, subscribe to a topic filter (or a predefined id, or
    a short name), receive `count` messages (0: until the timeout or cancellation),
    disconnect. Reaching the timeout is a failure only when a count was asked for."""
    kind = _topic_kind(topic, topic_id_type)
    if qos not in (0, 1, 2):
        raise RealModeError(f"QoS must be 0, 1 or 2, not {qos}")
    deadline = _deadline(timeout_s)
    session = _Session(_client(params))
    result = MqttSnResult()
    await session.open(host, port)
    driver, _ = session.opened
    try:
        result.failure = await session.connect(deadline)
        if result.failure is None:
            try:
                session.client.subscribe(driver.now(), topic, qos, topic_id_type=kind)
            except ValueError as exc:
                raise RealModeError(str(exc)) from None
            driver.pump()
        while result.failure is None and not (count and len(result.messages) >= count):
            event = await session.next(deadline)
            if event is None:
                if count:
                    got = len(result.messages)
                    result.failure = f"timeout: {got} of {count} message(s) received"
                break
            if isinstance(event, Subscribed):
                result.granted, result.topic_id = event.qos, event.topic_id
            elif isinstance(event, MessageReceived):
                result.messages.append(event)
                if on_message is not None:
                    on_message(event)
            else:
                result.failure = _failure(event)
    finally:
        await session.close()
    return result


def gateway_address(driver: GatewayDriver) -> tuple[str, int]:
    """(host, port) the gateway's UDP socket is bound to (port 0 picks a free one)."""
    return driver.sockname
