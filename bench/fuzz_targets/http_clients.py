"""HTTP clients: the simulator's HTTP/1.1 and HTTP/2 clients (apps/http/http1.py,
http2.py) fed response byte streams, valid, mutated and random, in random pieces,
their connections ending at random (`http1-client`, `http2-client`). Every item
must end once, and none may wait on a connection that has ended."""

from __future__ import annotations

import random

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h11

from fuzz_targets.common import StackCase, mutate, pieces, randbytes
from fuzz_targets.http import FakeSocket, _raw_frame, _settings
from iotbench.apps.http.http1 import Http1Client
from iotbench.apps.http.http2 import Http2Client
from iotbench.metrics.items import Item
from iotbench.net.tcp.events import Closed, DataReceived, PeerClosed


class _Items:
    """The items started, which socket each went on, and how each ended."""

    def __init__(self) -> None:
        self.on: dict[int, FakeSocket] = {}
        self.ended: dict[int, bool] = {}
        self.next = 0

    def start(self, client, sockets: list[FakeSocket]) -> int:
        index = self.next
        self.next += 1
        before = len(sockets)
        client.start(Item(index, 0.0), self.done)
        self.on[index] = sockets[-1] if len(sockets) > before else self._shared(client)
        return index

    @staticmethod
    def _shared(client) -> FakeSocket:
        return client._shared.sock

    def done(self, item: Item, ok: bool, payload: int) -> None:
        assert item.index not in self.ended, f"item {item.index} ended twice"
        assert payload >= 0
        self.ended[item.index] = ok

    def check(self, dead: set[int]) -> None:
        """No item waits on a socket whose connection has ended."""
        for index, sock in self.on.items():
            if id(sock) in dead:
                assert index in self.ended, f"item {index} waits on an ended connection"


def _connector(sockets: list[FakeSocket]):
    def connect(on_event, data: bytes, header_len: int) -> FakeSocket:
        sock = FakeSocket()
        sock.on_event = on_event
        sock.send(data, header_len)
        sockets.append(sock)
        return sock

    return connect


def http1_response(rng: random.Random) -> bytes:
    status = rng.choice((200, 200, 200, 404, 100, 204, 304, 500, 999))
    body = randbytes(rng, rng.choice((0, 5, 100)))
    headers = []
    r = rng.random()
    if status in (100, 204, 304):
        body = b""
    elif r < 0.6:
        headers.append(("Content-Length", str(rng.choice((len(body),) * 5 + (0, 1 << 40, -3)))))
    elif r < 0.85:
        headers.append(("Transfer-Encoding", "chunked"))
        body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
    else:
        headers.append(("Connection", "close"))  # the body runs to the end of the stream
    if rng.random() < 0.1:
        headers.append(("Connection", "close"))
    version = rng.choice(("1.1",) * 8 + ("1.0", "2"))
    head = f"HTTP/{version} {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    return head.encode() + b"\r\n" + body


def _ending(rng: random.Random, sock: FakeSocket, case: StackCase, i: int) -> bool:
    """Maybe end the socket's connection (FIN, reset, time-out); True if it ended."""
    r = rng.random()
    if r < 0.04:
        case.note(f"fin{i}", b"")
        sock.deliver(PeerClosed())
        if not sock.aborted:
            sock.deliver(Closed("closed"))
        return True
    if r < 0.07:
        case.note(f"end{i}", b"")
        sock.deliver(Closed(rng.choice(("reset", "timeout", "refused"))))
        return True
    return False


def run_http1_client_case(case: StackCase, count: int, stats: dict) -> None:
    """Http1Client on one persistent connection (or one per request): items started,
    responses in random pieces, connections ending; each item ends once, never
    waits on an ended connection, and what the client sends is HTTP/1.1 requests."""
    rng = case.rng
    sockets: list[FakeSocket] = []
    client = Http1Client(
        _connector(sockets), "x", "/o", [("Accept", "*/*")], per_request=rng.random() < 0.3
    )
    items = _Items()
    dead: set[int] = set()
    queues: dict[int, list[bytes]] = {}
    for _ in range(count):
        live = [s for s in sockets if id(s) not in dead]
        if not live or rng.random() < 0.2:
            case.note("start", b"")
            items.start(client, sockets)
        else:
            i = rng.randrange(len(live))
            sock = live[i]
            if _ending(rng, sock, case, i):
                dead.add(id(sock))
            else:
                queue = queues.setdefault(id(sock), [])
                if not queue:
                    stream = b"".join(http1_response(rng) for _ in range(rng.randint(1, 3)))
                    if rng.random() < 0.3:
                        stream = mutate(stream, rng)
                    queue.extend(pieces(rng, stream) or [b"x"])
                sock.deliver(DataReceived(case.note(f"data{i}", queue.pop(0))))
        for sock in sockets:
            if sock.aborted:
                dead.add(id(sock))
            for data, header_len in sock.sent:  # each a whole GET request
                assert header_len == len(data)
                parser = h11.Connection(h11.SERVER)
                parser.receive_data(data)
                request = parser.next_event()
                assert isinstance(request, h11.Request) and request.method == b"GET"
                assert isinstance(parser.next_event(), h11.EndOfMessage)
                assert parser.next_event() is h11.NEED_DATA and not parser.trailing_data[0]
            sock.sent.clear()
        items.check(dead)
        stats["inputs"] += 1


def run_http2_client_case(case: StackCase, count: int, stats: dict) -> None:
    """Http2Client on one connection (or one per request): an h2 server answering its
    streams (or not), its frames mutated and random ones among them, in random
    pieces, connections ending; each item ends once and never waits on an ended
    connection."""
    rng = case.rng
    sockets: list[FakeSocket] = []
    client = Http2Client(
        _connector(sockets),
        "x",
        "/o",
        per_request=rng.random() < 0.3,
        minimal_settings=rng.random() < 0.5,
    )
    items = _Items()
    dead: set[int] = set()
    servers: dict[int, h2.connection.H2Connection] = {}
    queues: dict[int, list[bytes]] = {}
    for _ in range(count):
        live = [s for s in sockets if id(s) not in dead]
        if not live or rng.random() < 0.2:
            case.note("start", b"")
            items.start(client, sockets)
        else:
            i = rng.randrange(len(live))
            sock = live[i]
            if _ending(rng, sock, case, i):
                dead.add(id(sock))
            else:
                queue = queues.setdefault(id(sock), [])
                if not queue:
                    data = servers[id(sock)].data_to_send()
                    r = rng.random()
                    if r < 0.25:
                        data = mutate(data, rng)
                    elif r < 0.35:
                        data += _raw_frame(rng)
                    elif r < 0.4:
                        data += _settings(rng)
                    queue.extend(pieces(rng, data) or [_raw_frame(rng)])
                sock.deliver(DataReceived(case.note(f"data{i}", queue.pop(0))))
        for sock in sockets:  # the server reads what the client sent, and answers
            if sock.aborted:
                dead.add(id(sock))
            server = servers.get(id(sock))
            if server is None:
                server = servers[id(sock)] = h2.connection.H2Connection(
                    h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
                )
                server.initiate_connection()
            for data, _ in sock.sent:
                try:
                    events = server.receive_data(data)
                except h2.exceptions.ProtocolError:
                    continue  # (the server is the generator; it may be out of step)
                for ev in events:
                    if isinstance(ev, h2.events.RequestReceived) and rng.random() < 0.9:
                        try:
                            server.send_headers(ev.stream_id, [(":status", "200")])
                            server.send_data(ev.stream_id, b"21.5", end_stream=True)
                        except h2.exceptions.ProtocolError:
                            pass
            sock.sent.clear()
        items.check(dead)
        stats["inputs"] += 1


STACKS = {"http1-client": run_http1_client_case, "http2-client": run_http2_client_case}
