"""HTTP/1.1 over the operating system's TCP: h11 behind asyncio streams.

The same message handling as the simulated server (apps/http/content.py
decides what a GET returns); the operating system does TCP. Requests on one
connection are answered in order (keep-alive and pipelining as h11 allows),
GET and HEAD only. A malformed request gets 400 and the connection closes;
an idle connection closes after `IDLE_TIMEOUT_S`; at most `MAX_CONNECTIONS`
are served at once, so a flood cannot exhaust the server. Connections come
through real/stream.py's Listener, which backs off quietly when the process
is out of file descriptors.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import h11

from iotbench.apps.http.content import REASONS, answer
from iotbench.apps.sensors import sensor_set
from iotbench.real.driver import serve_until_cancelled
from iotbench.real.stream import Listener

IDLE_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 512
READ_SIZE = 16384
SERVER_HEADERS = [("Server", "iotbench")]


class HttpServer:
    def __init__(self, object_size_bytes: int = 100) -> None:
        self.resources = sensor_set(random.SystemRandom(), object_size_bytes)
        self.connections = 0
        self.requests = 0
        self.bad_requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.connections >= MAX_CONNECTIONS:
            writer.close()
            return
        self.connections += 1
        conn = h11.Connection(h11.SERVER)
        try:
            await self._serve(conn, reader, writer)
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            self.connections -= 1
            writer.close()

    async def _serve(self, conn, reader, writer) -> None:
        request = None
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError:
                self.bad_requests += 1
                if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    await self._respond(conn, writer, 400, [("Connection", "close")], b"")
                return
            if event is h11.NEED_DATA:
                data = await asyncio.wait_for(reader.read(READ_SIZE), IDLE_TIMEOUT_S)
                conn.receive_data(data)
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.EndOfMessage):
                self.requests += 1
                assert request is not None  # h11 ends a message only after its Request
                await self._answer(conn, writer, request)
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return

    async def _answer(self, conn, writer, request: h11.Request) -> None:
        method = request.method.decode("ascii", "replace")
        target = request.target.decode("ascii", "replace")
        status, headers, body = answer(self.resources, target, SERVER_HEADERS, method)
        await self._respond(conn, writer, status, headers, body)

    @staticmethod
    async def _respond(conn, writer, status: int, headers, body: bytes) -> None:
        response = h11.Response(
            status_code=status, headers=headers, reason=REASONS.get(status, b"")
        )
        out = conn.send(response)
        if body:
            out += conn.send(h11.Data(data=body))
        out += conn.send(h11.EndOfMessage())
        writer.write(out)
        await writer.drain()


async def serve_http(
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    object_size_bytes: int = 100,
    on_ready: Callable[[Listener], None] | None = None,
) -> None:
    """Serve the sensor readings over HTTP/1.1 until cancelled."""
    server = HttpServer(object_size_bytes)

    def streams() -> asyncio.StreamReaderProtocol:  # what asyncio.start_server makes
        return asyncio.StreamReaderProtocol(asyncio.StreamReader(), server.handle)

    listener = await Listener.open(host, port, streams, open_connections=lambda: server.connections)
    await serve_until_cancelled(listener, on_ready)
