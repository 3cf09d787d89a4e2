"""HTTP: the simulator's HTTP/1.1 and HTTP/2 servers over TCP (apps/http/http1.py,
http2.py, h11 and h2 underneath) and the real-socket HTTP/1.1 server (real/http.py,
h11 behind asyncio streams): request byte streams, valid, mutated and random, fed
in random pieces (`http1-server`, `http2-server`, `http-real`)."""

from __future__ import annotations

import asyncio
import random
import re

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
import h11

from fuzz_targets.common import StackCase, mutate, pieces, randbytes
from iotbench.apps.http.http1 import Http1Server
from iotbench.apps.http.http2 import PREFACE, Http2Server, header_bytes
from iotbench.apps.sensors import sensor_set
from iotbench.net.tcp.events import Closed, Connected, DataReceived, PeerClosed
from iotbench.real.http import HttpServer

PATHS = ("/o", "/json", "/voltage", "/", "/missing", "/o?x=1", "*", "/%00", "/" + "a" * 300)

# ---- request streams -------------------------------------------------------------------


def http1_request(rng: random.Random) -> bytes:
    """One HTTP/1.1 (or 1.0) request, mostly valid."""
    method = rng.choice(("GET",) * 6 + ("HEAD", "POST", "PUT", "DELETE", "OPTIONS", "G\x7fT", ""))
    version = rng.choice(("1.1",) * 6 + ("1.0", "2.0", "1.1 ", "x"))
    headers = []
    if rng.random() < 0.9:
        headers.append(("Host", rng.choice(("x", "[fd00::1]:8080", "", "a b"))))
    if rng.random() < 0.2:
        headers.append(("Connection", rng.choice(("close", "keep-alive", "upgrade"))))
    body = b""
    if method in ("POST", "PUT") or rng.random() < 0.05:
        body = randbytes(rng, rng.choice((0, 1, 10, 100)))
        if rng.random() < 0.6:
            headers.append(("Content-Length", str(rng.choice((len(body),) * 4 + (0, 5, -1)))))
        else:
            headers.append(("Transfer-Encoding", "chunked"))
            pieces = [body[i : i + 7] for i in range(0, len(body), 7)]
            body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    for _ in range(rng.choice((0, 0, 1, 3))):
        headers.append(
            (rng.choice(("Accept", "X-A", "Expect", "Upgrade", "Te")), rng.choice(("*/*", "")))
        )
    head = f"{method} {rng.choice(PATHS)} HTTP/{version}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return head.encode("latin-1") + body


def http1_stream(rng: random.Random, clean: bool) -> bytes:
    """Requests back to back (pipelined), maybe mutated, or random bytes."""
    if not clean and rng.random() < 0.1:
        return randbytes(rng, rng.randrange(1, 200))
    stream = b"".join(http1_request(rng) for _ in range(rng.randint(1, 3)))
    if not clean and rng.random() < 0.5:
        stream = mutate(stream, rng)
    return stream or b"\r\n"


# ---- a TCP socket as the simulated servers see it -----------------------------------------


class FakeSocket:
    """What Http1Server and Http2Server call on a TcpSocket, with TcpConnection's rules:
    send() after close() or abort() raises RuntimeError; an abort reports Closed
    ("aborted") once the handler returns, and then nothing more arrives."""

    def __init__(self) -> None:
        self.on_event = lambda event: None
        self.sent: list[tuple[bytes, int]] = []
        self.fin = False
        self.aborted = False
        self.pending: list[object] = []

    def send(self, data: bytes, header_len: int = 0) -> None:
        if self.fin or self.aborted:
            raise RuntimeError("send() after close")
        assert 0 <= header_len <= len(data), f"header_len {header_len} of {len(data)} bytes"
        if data:
            self.sent.append((data, header_len))

    def close(self) -> None:
        self.fin = True

    def abort(self) -> None:
        if not self.aborted:
            self.aborted = True
            self.pending.append(Closed("aborted"))

    def deliver(self, event: object) -> None:
        self.on_event(event)
        while self.pending:
            self.on_event(self.pending.pop(0))


class FakeStack:
    """A TcpStack that only listens: the servers register their accept callback."""

    def __init__(self) -> None:
        self.accept = None

    def listen(self, port: int, on_accept) -> None:
        self.accept = on_accept


_STATUS = re.compile(rb"HTTP/1\.1 (\d{3}) [^\r\n]*\r\n")
_HEADER = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+): ?([^\r\n]*)\r\n")


class RequestMethods:
    """The methods of the requests a server reads from a byte stream, in order: h11
    parses the same bytes as the server's (answering each with an empty response,
    discarded, to go on to the next); after a protocol error nothing more is read."""

    def __init__(self) -> None:
        self.conn = h11.Connection(h11.SERVER)
        self.methods: list[bytes] = []
        self.broken = False

    def feed(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            self.conn.receive_data(data)
            while True:
                event = self.conn.next_event()
                if isinstance(event, h11.Request):
                    self.methods.append(event.method)
                elif isinstance(event, h11.EndOfMessage):
                    self.conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
                    self.conn.send(h11.EndOfMessage())
                    if self.conn.our_state is not h11.DONE or self.conn.their_state is not h11.DONE:
                        self.broken = True  # (closing: the server reads no more either)
                        return
                    self.conn.start_next_cycle()
                elif (
                    event is h11.NEED_DATA
                    or event is h11.PAUSED
                    or isinstance(event, h11.ConnectionClosed)
                ):
                    return
        except h11.ProtocolError:
            self.broken = True


def check_http1_message(data: bytes, header_len: int, method: bytes = b"GET") -> None:
    """One sock.send of Http1Server: a whole response, its head counted as header;
    its content as long as its Content-Length says, or none if it answers a HEAD
    (RFC 9110 9.3.2: the length is the one a GET's content would have)."""
    head, body = data[:header_len], data[header_len:]
    m = _STATUS.match(head)
    assert m, f"not a status line: {head[:40]!r}"
    pos = m.end()
    length = None
    while head[pos:] != b"\r\n":
        h = _HEADER.match(head, pos)
        assert h, f"not a header line: {head[pos : pos + 40]!r}"
        if h.group(1).lower() == b"content-length":
            length = int(h.group(2))
        pos = h.end()
    if method == b"HEAD":
        assert body == b"" and length is not None, f"{len(body)} bytes after a HEAD"
    else:
        assert length == len(body), f"Content-Length {length} for {len(body)} bytes"


# ---- http1-server -----------------------------------------------------------------------


def run_http1_server_case(case: StackCase, count: int, stats: dict) -> None:
    """Http1Server on one connection: request streams in random pieces, the peer closing
    (FIN) or resetting at random; each response is whole, with its Content-Length."""
    rng = case.rng
    stack = FakeStack()
    server = Http1Server(stack, 80, sensor_set(random.Random(1), 100), [("Server", "f")])
    sock = FakeSocket()
    stack.accept(sock)
    sock.deliver(Connected())
    queue: list[bytes] = []
    ended = False
    requests = RequestMethods()  # what each response answers, in order
    answered = 0
    for _ in range(count):
        if not queue:
            queue = pieces(rng, http1_stream(rng, False))
        chunk = queue.pop(0)
        r = rng.random()
        if ended or sock.aborted:
            case.note("ignored", chunk)
        elif r < 0.04:
            case.note("fin", b"")
            ended = True
            sock.deliver(PeerClosed())
        elif r < 0.06:
            case.note("reset", b"")
            ended = True
            sock.deliver(Closed("reset"))
        else:
            requests.feed(chunk)
            sock.deliver(DataReceived(case.note("data", chunk)))
        for data, header_len in sock.sent:
            assert answered < len(requests.methods), "a response to no request"
            check_http1_message(data, header_len, requests.methods[answered])
            answered += 1
        sock.sent.clear()
        assert server.protocol_errors <= 1, "errors counted after the connection was aborted"
        stats["inputs"] += 1


# ---- http2-server -----------------------------------------------------------------------


def _h2_client() -> h2.connection.H2Connection:
    client = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
    )
    client.initiate_connection()
    return client


def _settings(rng: random.Random) -> bytes:
    """A SETTINGS frame of random settings (as a peer may send: any value)."""
    codes = (1, 2, 3, 4, 5, 6, 8, rng.randrange(0x10000))
    values = (0, 1, 100, 16383, 16384, 65535, 1 << 20, (1 << 31) - 1, 1 << 31)
    payload = b"".join(
        rng.choice(codes).to_bytes(2, "big") + rng.choice(values).to_bytes(4, "big")
        for _ in range(rng.randint(1, 3))
    )
    return len(payload).to_bytes(3, "big") + b"\x04\x00" + bytes(4) + payload


def _raw_frame(rng: random.Random) -> bytes:
    kind = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, rng.randrange(256)))
    payload = randbytes(rng, rng.choice((0, 1, 4, 5, 8, 9, 20)))
    stream = rng.choice((0, 1, 2, 3, 5, 0x7FFFFFFF, rng.randrange(1 << 32)))
    length = len(payload) if rng.random() < 0.9 else rng.randrange(1 << 24)
    head = length.to_bytes(3, "big") + bytes((kind, rng.randrange(256)))
    return head + stream.to_bytes(4, "big") + payload


def _h2_actions(rng: random.Random, client: h2.connection.H2Connection, clean: bool) -> int | None:
    """Something the client does: requests mostly (their stream), and the rest of
    HTTP/2's frames."""
    r = rng.random()
    try:
        if r < 0.6 or clean:
            sid = client.get_next_available_stream_id()
            post = rng.random() < 0.2
            client.send_headers(
                sid,
                [
                    (":method", "POST" if post else "GET"),
                    (":scheme", "http"),
                    (":authority", "x"),
                    (":path", rng.choice(PATHS[:5])),
                ],
                end_stream=not post,
            )
            if post:
                client.send_data(sid, randbytes(rng, rng.randrange(50)), end_stream=True)
            return sid
        elif r < 0.65:
            client.ping(randbytes(rng, 8))
        elif r < 0.7:
            client.increment_flow_control_window(rng.randint(1, 1 << 20))
        elif r < 0.75 and client.open_outbound_streams:
            sid = max(client.streams)
            client.reset_stream(sid, rng.randrange(14))
        elif r < 0.8:
            client.prioritize(rng.choice((1, 3, 5)), weight=rng.randint(1, 256))
        elif r < 0.83:
            client.close_connection(rng.randrange(14))
        else:
            client.update_settings(
                {h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: rng.choice((0, 100, 65535))}
            )
    except h2.exceptions.ProtocolError:
        pass  # the generator's own client refused (a closed stream, too many streams...)
    return None


def check_h2_frames(blob: bytes, header_len: int) -> None:
    """A sock.send of Http2Server: whole frames (no preface), header bytes as counted."""
    assert not blob.startswith(PREFACE)
    i = 0
    while i < len(blob):
        assert i + 9 <= len(blob), "a frame header cut off"
        i += 9 + int.from_bytes(blob[i : i + 3], "big")
    assert i == len(blob), "a frame cut off"
    assert header_len == header_bytes(blob)


def run_http2_server_case(case: StackCase, count: int, stats: dict) -> None:
    """Http2Server on one connection: an h2 client's frames, valid, mutated and random,
    in random pieces, the peer closing or resetting at random. In a fifth of the cases
    nothing is mutated and the client reads what the server sends: then every request
    must be answered whole."""
    rng = case.rng
    clean = rng.random() < 0.2
    stack = FakeStack()
    server = Http2Server(
        stack, 80, sensor_set(random.Random(1), rng.choice((10, 100, 70000))), [("Server", "f")]
    )
    server.minimal_settings = rng.random() < 0.5
    sock = FakeSocket()
    stack.accept(sock)
    sock.deliver(Connected())
    queue: list[bytes] = []
    client = _h2_client()
    if not clean and rng.random() < 0.3:
        client.data_to_send()  # (the preface, settings, then more settings)
        queue = pieces(rng, PREFACE + _settings(rng))
    ended = False
    requests = set()
    answered = set()

    def client_reads() -> None:
        for blob, header_len in sock.sent:
            check_h2_frames(blob, header_len)
            if clean:
                for ev in client.receive_data(blob):
                    if isinstance(ev, h2.events.StreamEnded):
                        answered.add(ev.stream_id)
                    elif isinstance(ev, h2.events.DataReceived):
                        client.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        sock.sent.clear()

    def refill() -> None:
        sid = _h2_actions(rng, client, clean)
        if sid is not None:
            requests.add(sid)
        data = client.data_to_send()
        if not clean:
            r = rng.random()
            if r < 0.3:
                data = mutate(data, rng)
            elif r < 0.4:
                data += _raw_frame(rng)
            elif r < 0.45:
                data += _settings(rng)
        queue.extend(pieces(rng, data))

    client_reads()
    for _ in range(count):
        if not queue:
            refill()
        if not queue:
            stats["inputs"] += 1
            continue
        chunk = queue.pop(0)
        r = rng.random()
        if ended or sock.aborted:
            case.note("ignored", chunk)
        elif r < 0.03 and not clean:
            case.note("fin", b"")
            ended = True
            sock.deliver(PeerClosed())
        elif r < 0.05 and not clean:
            case.note("reset", b"")
            ended = True
            sock.deliver(Closed("reset"))
        else:
            sock.deliver(DataReceived(case.note("data", chunk)))
        client_reads()
        assert server.protocol_errors <= 1, "errors counted after the connection was aborted"
        stats["inputs"] += 1
    if clean:
        for _ in range(50):  # the rest of the exchange, until it is quiet
            data = b"".join(queue) + client.data_to_send()
            queue.clear()
            if not data:
                break
            sock.deliver(DataReceived(data))
            client_reads()
        assert not sock.aborted, "the server aborted a clean exchange"
        assert requests <= answered, f"requests {sorted(requests - answered)} not answered"


# ---- http-real ---------------------------------------------------------------------------

_LOOP: asyncio.AbstractEventLoop | None = None


def _loop() -> asyncio.AbstractEventLoop:
    global _LOOP
    if _LOOP is None:
        _LOOP = asyncio.new_event_loop()
    return _LOOP


class _Writer:
    """The StreamWriter half of a connection: keeps what is written."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed, "write after close"
        self.data += data

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True


class _RecordingServer(HttpServer):
    """The real server, noting for each response the request method it answers."""

    def __init__(self) -> None:
        super().__init__(100)
        self.methods: dict[int, list[bytes | None]] = {}
        self._method: bytes | None = None

    async def _answer(self, conn, writer, request) -> None:
        self._method = request.method
        await super()._answer(conn, writer, request)

    async def _respond(self, conn, writer, status, headers, body) -> None:
        # (h11 keeps the method of a request it read the head of, e.g. before a bad body)
        method = self._method or getattr(conn, "_request_method", None)
        self._method = None
        self.methods.setdefault(id(writer), []).append(method)
        await HttpServer._respond(conn, writer, status, headers, body)


def check_http1_responses(data: bytes, methods: list[bytes | None], closed: bool) -> None:
    """`data` is exactly the responses to requests of these methods (None: an error
    answer to no request), as an HTTP/1.1 client parses them."""
    for method in methods:
        client = h11.Connection(h11.CLIENT)
        client.send(h11.Request(method=method or b"GET", target="/", headers=[("Host", "x")]))
        client.send(h11.EndOfMessage())
        client.receive_data(bytes(data))
        while True:
            event = client.next_event()
            if event is h11.NEED_DATA:
                assert closed, "a response cut off"
                client.receive_data(b"")  # the server closed: a body read to the end
                continue
            assert not isinstance(event, h11.ConnectionClosed), "a response cut off"
            if isinstance(event, h11.EndOfMessage):
                break
        data, _ = client.trailing_data
    assert not data, f"{len(data)} bytes after the last response"


def run_http_real_case(case: StackCase, count: int, stats: dict) -> None:
    """The real-socket HTTP/1.1 server (h11 behind asyncio streams) on 1-3 connections
    at once: request streams in random pieces, a connection's end of file at random.
    Every handler must end once its input ends, and what it wrote must be exactly the
    responses to the requests it answered."""
    rng = case.rng
    loop = _loop()
    server = _RecordingServer()
    conns = []
    for _ in range(rng.randint(1, 3)):
        reader = asyncio.StreamReader(loop=loop)
        writer = _Writer()
        task = loop.create_task(server.handle(reader, writer))
        conns.append([reader, writer, task, pieces(rng, http1_stream(rng, False)), False])

    def settle() -> None:
        loop.run_until_complete(asyncio.sleep(0))
        loop.run_until_complete(asyncio.sleep(0))

    settle()
    try:
        for _ in range(count):
            i = rng.randrange(len(conns))
            reader, writer, task, queue, eof = conns[i]
            if not queue:
                queue.extend(pieces(rng, http1_stream(rng, False)))
            chunk = queue.pop(0)
            if eof or task.done():
                case.note(f"ignored{i}", chunk)
            elif rng.random() < 0.05:
                case.note(f"eof{i}", b"")
                reader.feed_eof()
                conns[i][4] = True
            else:
                reader.feed_data(case.note(f"data{i}", chunk))
            settle()
            assert 0 <= server.connections <= len(conns)
            stats["inputs"] += 1
        for conn in conns:
            if not conn[4]:
                conn[0].feed_eof()
        for _ in range(20):
            settle()
            if all(conn[2].done() for conn in conns):
                break
        for _, writer, task, _, _ in conns:
            assert task.done(), "a handler still waits after its input ended"
            task.result()  # what it raised, if anything
            assert writer.closed, "a connection left open"
            check_http1_responses(writer.data, server.methods.get(id(writer), []), True)
        assert server.connections == 0, f"{server.connections} connections counted after all ended"
    finally:
        for conn in conns:
            if not conn[2].done():
                conn[2].cancel()
                try:
                    loop.run_until_complete(conn[2])
                except (asyncio.CancelledError, Exception):
                    pass


STACKS = {
    "http1-server": run_http1_server_case,
    "http2-server": run_http2_server_case,
    "http-real": run_http_real_case,
}
