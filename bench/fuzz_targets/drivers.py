"""The real-socket drivers without sockets: real/driver.py's AsyncDatagramDriver around
a CoAP server (`real-datagram-driver`), real/stream.py's StreamServerDriver around an
MQTT broker (`real-stream-server`) and StreamClientDriver around an MQTT client
(`real-stream-client`). Fake transports and a fake event loop (its clock, call_at)
stand for asyncio's, so that datagrams, stream pieces, errors, ends of file, lost
connections and timers come in any order the fuzz draws."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import random

from fuzz_targets.codecs import valid_coap
from fuzz_targets.common import StackCase, canonical, datagram, mutate, randbytes
from fuzz_targets.stacks import _COAP_CORPUS, _check_mqtt_output, _mqtt_chunk
from iotbench.proto.coap import codec as coap
from iotbench.proto.mqtt import codec as mqtt
from iotbench.real.driver import AsyncDatagramDriver
from iotbench.real.stream import StreamClientDriver, StreamServerDriver, _ServerConnection

# ---- a loop, a log ------------------------------------------------------------------------


class FakeHandle:
    def __init__(self, loop: FakeLoop, when: float, callback, args) -> None:
        self.loop = loop
        self.when = when
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def __lt__(self, other: FakeHandle) -> bool:
        return self.when < other.when


class FakeLoop:
    """The part of an asyncio loop the drivers use: its clock and call_at."""

    def __init__(self) -> None:
        self.now = 1000.0
        self._heap: list[tuple[float, int, FakeHandle]] = []
        self._seq = 0

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback, *args) -> FakeHandle:
        handle = FakeHandle(self, when, callback, args)
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, handle))
        return handle

    def call_later(self, delay: float, callback, *args) -> FakeHandle:
        return self.call_at(self.now + delay, callback, *args)

    @property
    def pending(self) -> list[FakeHandle]:
        return [h for _, _, h in self._heap if not h.cancelled]

    def advance(self, until: float, limit: int = 64) -> None:
        """Run the callbacks due until `until` in time order (at most `limit`)."""
        for _ in range(limit):
            while self._heap and self._heap[0][2].cancelled:
                heapq.heappop(self._heap)
            if not self._heap or self._heap[0][0] > until:
                break
            when, _, handle = heapq.heappop(self._heap)
            self.now = max(self.now, when)
            handle.callback(*handle.args)
        self.now = max(self.now, until)


@contextlib.contextmanager
def running(loop: FakeLoop):
    """`loop` as the running loop (asyncio.get_running_loop()), for the duration."""
    asyncio.events._set_running_loop(loop)
    try:
        yield
    finally:
        asyncio.events._set_running_loop(None)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def captured_log():
    """The records of the drivers' logger, kept from the console."""
    log = logging.getLogger("iotbench.real")
    records = _Records()
    handlers, propagate = log.handlers, log.propagate
    log.handlers, log.propagate = [records], False
    try:
        yield records.records
    finally:
        log.handlers, log.propagate = handlers, propagate


class Boom(Exception):
    """What a planted failing event handler raises."""


def flaky_handler(rng: random.Random, raised: list[int]):
    """An application event handler that raises now and then."""

    def on_event(event: object) -> None:
        if rng.random() < 0.1:
            raised.append(1)
            raise Boom(f"the handler failed on {event!r}")

    return on_event


# ---- the datagram driver ------------------------------------------------------------------

CLIENTS = [("10.0.0.2", 40000), ("fd00::2", 40001, 0, 0), ("10.0.0.3", 1)]


class FakeDatagramTransport:
    """An asyncio datagram transport: sendto may fail, and then (as asyncio's does)
    calls the protocol's error_received at once."""

    def __init__(self, rng: random.Random, peer: tuple | None) -> None:
        self.rng = rng
        self.peer = peer
        self.protocol: AsyncDatagramDriver | None = None
        self.sent: list[tuple[bytes, object]] = []
        self.closing = False

    def get_extra_info(self, name: str, default=None):
        return self.peer if name == "peername" else default

    def sendto(self, data: bytes, addr=None) -> None:
        assert not self.closing, "sendto on a closed transport"
        assert (addr is None) == (self.peer is not None), f"sendto({addr}) with peer {self.peer}"
        if self.rng.random() < 0.05:
            self.protocol.error_received(OSError(101, "Network is unreachable"))
            return
        self.sent.append((data, addr))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True


def run_real_datagram_driver_case(case: StackCase, count: int, stats: dict) -> None:
    """A CoAP server (lenient, as real servers are) behind the datagram driver, or a
    client on a connected socket; datagrams from several addresses (IPv6 ones as the
    socket gives them, 4-tuples), ICMP errors, a failing event handler, the socket
    closing; the loop's timer fires the stack's timers."""
    from iotbench.proto.coap.endpoint import CoapEndpoint

    rng = case.rng
    loop = FakeLoop()
    stack = CoapEndpoint(random.Random(rng.randrange(1 << 30)), strict=False)
    stack.add_resource("/t", lambda r, a: b"21.5", observable=True)
    stack.add_resource("/big", lambda r, a: b"B" * 3000)
    connected = rng.random() < 0.3
    peer = CLIENTS[0] if connected else None
    raised: list[int] = []
    unreachable: list[tuple] = []
    send_errors: list[tuple] = []
    with running(loop), captured_log() as log:
        driver = AsyncDatagramDriver(
            stack,
            flaky_handler(rng, raised),
            on_error=lambda exc: None,
            on_unreachable=unreachable.append,
            on_send_error=lambda addr, exc: send_errors.append(addr),
        )
        transport = FakeDatagramTransport(rng, peer)
        transport.protocol = driver
        driver.connection_made(transport)
        if connected:
            stack.request(loop.time(), peer[:2], coap.Code.GET, "/t", observe=True)
            driver.pump()
        lost = False
        asked: list[tuple[coap.Message, tuple]] = []  # the stack's requests, to answer
        for _ in range(count):
            r = rng.random()
            if lost:
                case.note("after-close", b"")
            elif r < 0.5 or (r < 0.75 and not asked):
                addr = rng.choice(CLIENTS)
                data = datagram(rng, valid_coap, _COAP_CORPUS)
                driver.datagram_received(case.note(f"{addr[0]}:{addr[1]}", data), addr)
            elif r < 0.75:  # an answer to one of its requests (events for the handler)
                request, addr = asked.pop(rng.randrange(len(asked)))
                mtype = coap.Type.ACK if request.type == coap.Type.CON else coap.Type.NON
                answer = coap.Message(
                    mtype, coap.Code.CONTENT, request.message_id, request.token, payload=b"1"
                )
                if request.observe is not None and rng.random() < 0.5:
                    answer.observe = rng.randrange(100)
                data = coap.encode(answer)
                if rng.random() < 0.2:
                    data = mutate(data, rng)
                driver.datagram_received(case.note(f"{addr[0]}:{addr[1]}", data), addr)
            elif r < 0.82:  # the application asks
                addr = peer if connected else rng.choice(CLIENTS)
                case.note(f"request-{addr[0]}", b"")
                stack.request(
                    loop.time(), addr[:2], coap.Code.GET, "/r", confirmable=rng.random() < 0.5
                )
                driver.pump()
            elif r < 0.88:
                case.note("icmp-error", b"")
                driver.error_received(ConnectionRefusedError(111, "Connection refused"))
            elif r < 0.92:
                case.note("close", b"")
                driver.close()
                assert transport.closing
                driver.connection_lost(None)  # as the loop reports it
                lost = True
            loop.advance(loop.now + rng.choice((0.0, 0.01, 0.5, 2.0, 30.0, 300.0)))
            for data, addr in transport.sent:
                canonical(coap.decode, coap.encode, data)
                assert addr is None or addr in [c[:2] for c in CLIENTS], f"sent to {addr}"
                message = coap.decode(data)
                if 0 < message.code < 32:  # a request of its own
                    asked.append((message, peer if addr is None else addr))
                    del asked[:-6]
            transport.sent.clear()
            timers = loop.pending
            assert len(timers) <= 1, f"{len(timers)} loop timers for one stack"
            if lost:
                assert not timers, "a timer outlives the socket"
                assert driver.closed.is_set()
            elif timers:
                assert timers[0].when == stack.next_timer(), "the loop timer is not the stack's"
            assert stack.stats.internal_errors == 0
            failed = [r for r in log if "event handler failed" in r.getMessage()]
            assert len(failed) == len(raised), "an event handler's error not logged"
            stats["inputs"] += 1
    assert not unreachable  # (no socket: nothing in an error queue)
    assert all(a is not None for a in send_errors)


# ---- the stream drivers -------------------------------------------------------------------


class FakeStreamTransport:
    """An asyncio stream transport whose peer reads when the fuzz says so."""

    def __init__(self) -> None:
        self.unread = bytearray()
        self.written = bytearray()
        self.closing = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        assert not self.closing, "write on a closing transport"
        self.unread += data
        self.written += data

    def get_write_buffer_size(self) -> int:
        return len(self.unread)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = self.aborted = True
        self.unread.clear()

    def get_extra_info(self, name: str, default=None):
        return default


def _check_mqtt_stream(written: bytearray) -> None:
    """What was written to one connection: whole MQTT packets back to back, each
    canonical (split_packets raises if the bytes end inside one)."""
    _check_mqtt_output(bytes(written))


def run_real_stream_server_case(case: StackCase, count: int, stats: dict) -> None:
    """An MQTT broker behind the stream server driver: connections made, their
    pieces of MQTT, ends of file, losses and peers that do not read (cut off at the
    write buffer limit) in any order; the loop's timer fires the broker's timers."""
    from iotbench.proto.mqtt.broker import MqttBroker
    from iotbench.proto.mqtt.params import MqttBrokerParams

    rng = case.rng
    loop = FakeLoop()
    params = MqttBrokerParams(
        max_packet_size_bytes=256,
        max_inflight=2,
        max_queued_messages=3,
        max_sessions=3,
        max_retained_messages=5,
        retry_interval_s=1.0,
        connect_timeout_s=5.0,
    )
    stack = MqttBroker(random.Random(rng.randrange(1 << 30)), params)
    raised: list[int] = []
    limit = rng.choice((16, 64, 1024, 1 << 20))
    with running(loop), captured_log() as log:
        driver = StreamServerDriver(stack, flaky_handler(rng, raised), max_write_buffer_bytes=limit)
        conns: list[tuple[_ServerConnection, FakeStreamTransport]] = []
        open_conns: list[tuple[_ServerConnection, FakeStreamTransport]] = []

        def lose(i: int) -> None:
            protocol, transport = open_conns.pop(i)
            transport.closing = True
            protocol.connection_lost(None)

        for _ in range(count):
            r = rng.random()
            if not open_conns or r < 0.1:
                case.note("connect", b"")
                protocol, transport = _ServerConnection(driver), FakeStreamTransport()
                protocol.connection_made(transport)
                conns.append((protocol, transport))
                open_conns.append((protocol, transport))
            elif r < 0.8:
                i = rng.randrange(len(open_conns))
                protocol, transport = open_conns[i]
                data = _mqtt_chunk(rng)
                r = rng.random()
                if r < 0.3:  # connected, and subscribed to everything: others' news comes
                    data = (
                        mqtt.encode(mqtt.Connect(f"c{i}", rng.random() < 0.5, 5))
                        + (
                            mqtt.encode(mqtt.Subscribe(1, (("#", rng.randrange(3)),)))
                            if rng.random() < 0.5
                            else b""
                        )
                        + data
                    )
                elif r < 0.6:
                    data = mqtt.encode(mqtt.Publish("t", randbytes(rng, 40), 0)) + data
                protocol.data_received(case.note(f"data{i}", data))
            elif r < 0.85:
                i = rng.randrange(len(open_conns))
                case.note(f"eof{i}", b"")
                assert open_conns[i][0].eof_received() is False
                lose(i)  # eof_received() False: asyncio closes the transport
            elif r < 0.9:
                i = rng.randrange(len(open_conns))
                case.note(f"lost{i}", b"")
                lose(i)
            else:
                for _, transport in open_conns:  # the peers read what waits for them
                    if rng.random() < 0.5:
                        transport.unread.clear()
            loop.advance(loop.now + rng.choice((0.0, 0.01, 0.5, 2.0, 8.0)))
            for i in reversed(range(len(open_conns))):  # what the driver closed ends
                if open_conns[i][1].closing and (
                    open_conns[i][1].aborted or not open_conns[i][1].unread or rng.random() < 0.3
                ):
                    lose(i)
            for _, transport in open_conns:
                assert transport.closing or len(transport.unread) <= limit, (
                    f"{len(transport.unread)} bytes wait for a peer, limit {limit}"
                )
            assert driver.connections == len(open_conns), (
                f"the driver counts {driver.connections} connections, {len(open_conns)} open"
            )
            assert len(loop.pending) <= 1, "more than one loop timer"
            assert stack.stats.internal_errors == 0
            assert len(stack.sessions) <= params.max_sessions
            failed = [r for r in log if "event handler failed" in r.getMessage()]
            assert len(failed) == len(raised), "an event handler's error not logged"
            stats["inputs"] += 1
        for _, transport in conns:
            if not transport.aborted:
                _check_mqtt_stream(transport.written)
        driver.close()
        assert all(t.closing for _, t in open_conns) and not loop.pending


def run_real_stream_client_case(case: StackCase, count: int, stats: dict) -> None:
    """An MQTT client behind the stream client driver: pieces of MQTT from its broker,
    the application publishing, end of file or loss at any time; after the connection
    is lost nothing is written and no timer stays."""
    from iotbench.proto.mqtt.client import MqttClient
    from iotbench.proto.mqtt.params import MqttClientParams

    rng = case.rng
    loop = FakeLoop()
    params = MqttClientParams(
        client_id="c",
        keep_alive_s=5,
        max_packet_size_bytes=256,
        max_inflight=2,
        max_queued_messages=3,
        retry_interval_s=1.0,
    )
    stack = MqttClient(random.Random(rng.randrange(1 << 30)), params)
    raised: list[int] = []
    with running(loop), captured_log() as log:
        driver = StreamClientDriver(stack, flaky_handler(rng, raised))
        transport = FakeStreamTransport()
        driver.connection_made(transport)
        stack.connect(loop.time())
        driver.pump()
        lost = False
        for i in range(count):
            r = rng.random()
            if lost:
                case.note("after-loss", b"")
            elif r < 0.75:
                data = _mqtt_chunk(rng)
                if i == 0 or rng.random() < 0.1:
                    data = mqtt.encode(mqtt.ConnAck(False, 0)) + data
                driver.data_received(case.note("data", data))
            elif r < 0.85:
                if stack.queued < params.max_queued_messages:
                    case.note("publish", b"")
                    stack.publish(loop.time(), "t/x", randbytes(rng, 4), rng.randrange(3))
                    driver.pump()
            elif r < 0.9:
                case.note("eof", b"")
                assert driver.eof_received() is False
                transport.closing = True
                driver.connection_lost(None)
                lost = True
            elif r < 0.93:
                case.note("lost", b"")
                transport.closing = True
                driver.connection_lost(ConnectionResetError())
                lost = True
            loop.advance(loop.now + rng.choice((0.0, 0.01, 0.5, 2.0, 8.0)))
            if transport.closing and not lost and rng.random() < 0.5:
                driver.connection_lost(None)  # what the client closed ends
                lost = True
            if lost:
                assert not loop.pending, "a timer outlives the connection"
                assert driver.closed.is_set()
            assert len(loop.pending) <= 1, "more than one loop timer"
            assert stack.in_flight <= params.max_inflight
            failed = [r for r in log if "event handler failed" in r.getMessage()]
            assert len(failed) == len(raised), "an event handler's error not logged"
            stats["inputs"] += 1
        _check_mqtt_stream(transport.written)


STACKS = {
    "real-datagram-driver": run_real_datagram_driver_case,
    "real-stream-server": run_real_stream_server_case,
    "real-stream-client": run_real_stream_client_case,
}
