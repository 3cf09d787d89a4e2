"""Runs sans-I/O byte-stream stacks behind real asyncio TCP connections.

The counterpart of real/driver.py for stream protocols. Two shapes of stack
(proto/mqtt has one of each):

- one connection (MqttClient): `receive_data(now, data)`,
  `connection_lost(now)`, `handle_timer(now)`; output `data_to_send() ->
  bytes`, `close_requested`, `events()`, `next_timer()`.
  `StreamClientDriver` / `open_stream_client()`.
- many connections (MqttBroker): `connection_made(now, conn)`,
  `receive_data(now, conn, data)`, `connection_lost(now, conn)`,
  `handle_timer(now)`; output `data_to_send() -> [(conn, bytes)]`,
  `connections_to_close()`, `events()`, `next_timer()`. Connections are
  numbered 1, 2, 3... `StreamServerDriver` / `start_stream_server()`.

`now` is the event loop's monotonic clock (loop.time()), there is one loop
timer per stack (real/timer.py), and after every call into the stack the
driver empties it with the shared loop of proto/sansio.py: write the bytes,
close what it asks to close (after writing what was queued for it), hand on
the events, re-arm the timer. Application code that calls the stack directly
(publish, subscribe...) calls `pump()` afterwards.

A peer can never stop the server: the stack never raises for any bytes, an
event handler that raises is logged, and a peer that does not read what it
is sent is cut off once `max_write_buffer_bytes` are waiting for it, so a
slow or hostile reader cannot make the server's memory grow without bound.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from iotbench.proto.sansio import drain_with
from iotbench.real.timer import LoopTimer

log = logging.getLogger("iotbench.real")

#: Unread bytes one server connection may have waiting before it is aborted.
DEFAULT_MAX_WRITE_BUFFER_BYTES = 16 << 20

EventHandler = Callable[[object], None]


def _deliver(on_event: EventHandler, event: object) -> None:
    try:
        on_event(event)
    except Exception:
        log.exception("event handler failed for %r", event)


class StreamClientDriver(asyncio.Protocol):
    """Feeds one single-connection stream stack from one TCP connection."""

    def __init__(self, stack, on_event: EventHandler | None = None) -> None:
        self.stack = stack
        self.on_event = on_event or (lambda event: None)
        self.transport: asyncio.Transport | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._timer: LoopTimer | None = None
        self.closed = asyncio.Event()

    # ---- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport = transport
        self.loop = asyncio.get_running_loop()
        self._timer = LoopTimer(self.loop, self._on_timer)

    def data_received(self, data: bytes) -> None:
        self.stack.receive_data(self.loop.time(), data)
        self.pump()

    def eof_received(self) -> bool:
        return False  # the peer closed its side: close ours too, connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self._timer.cancel()
        self.stack.connection_lost(self.loop.time())
        self.pump()  # deliver the stack's last events; nothing can be written now
        self.closed.set()

    # ---- driving the stack --------------------------------------------------------------

    def now(self) -> float:
        return self.loop.time()

    def pump(self) -> None:
        """Write and close what the stack asks, hand its events on, re-arm its timer."""
        if self.transport is None:
            return
        deadline = drain_with(self.stack, self._flush, lambda e: _deliver(self.on_event, e))
        if self.closed.is_set() or self.transport.is_closing():
            self._timer.cancel()
        else:
            self._timer.arm(deadline)

    def _flush(self) -> None:
        data = self.stack.data_to_send()
        transport = self.transport
        if transport.is_closing():
            return
        if data:
            transport.write(data)
        if self.stack.close_requested:
            transport.close()  # after the buffered bytes are written

    def _on_timer(self) -> None:
        self.stack.handle_timer(self.loop.time())
        self.pump()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def open_stream_client(
    stack, host: str, port: int, on_event: EventHandler | None = None
) -> StreamClientDriver:
    """Connect to host:port and attach `stack`; the caller starts its protocol (connect())."""
    loop = asyncio.get_running_loop()
    _, driver = await loop.create_connection(
        lambda: StreamClientDriver(stack, on_event), host, port
    )
    return driver


class _ServerConnection(asyncio.Protocol):
    """One accepted TCP connection of a StreamServerDriver."""

    def __init__(self, server: StreamServerDriver) -> None:
        self.server = server
        self.conn = 0

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.conn = self.server._connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.server._data_received(self.conn, data)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.server._connection_lost(self.conn)


class StreamServerDriver:
    """Feeds one multi-connection stream stack from every accepted TCP connection."""

    def __init__(
        self,
        stack,
        on_event: EventHandler | None = None,
        *,
        max_write_buffer_bytes: int = DEFAULT_MAX_WRITE_BUFFER_BYTES,
    ) -> None:
        self.stack = stack
        self.on_event = on_event or (lambda event: None)
        self.max_write_buffer_bytes = max_write_buffer_bytes
        self.server: asyncio.Server | None = None
        self.loop = asyncio.get_running_loop()
        self._timer = LoopTimer(self.loop, self._on_timer)
        self._transports: dict[int, asyncio.Transport] = {}
        self._next_conn = 1
        self.aborted_slow_readers = 0

    def now(self) -> float:
        return self.loop.time()

    @property
    def connections(self) -> int:
        return len(self._transports)

    # ---- from the connections ------------------------------------------------------------

    def _connection_made(self, transport: asyncio.Transport) -> int:
        conn = self._next_conn
        self._next_conn += 1
        self._transports[conn] = transport
        self.stack.connection_made(self.loop.time(), conn)
        self.pump()
        return conn

    def _data_received(self, conn: int, data: bytes) -> None:
        if conn in self._transports:
            self.stack.receive_data(self.loop.time(), conn, data)
            self.pump()

    def _connection_lost(self, conn: int) -> None:
        if self._transports.pop(conn, None) is not None:
            self.stack.connection_lost(self.loop.time(), conn)
            self.pump()

    # ---- driving the stack ----------------------------------------------------------------

    def pump(self) -> None:
        """Write and close what the stack asks, hand its events on, re-arm its timer."""
        deadline = drain_with(self.stack, self._flush, lambda e: _deliver(self.on_event, e))
        self._timer.arm(deadline)

    def _flush(self) -> None:
        transports = self._transports
        for conn, data in self.stack.data_to_send():
            transport = transports.get(conn)
            if transport is None or transport.is_closing():
                continue
            transport.write(data)
            if transport.get_write_buffer_size() > self.max_write_buffer_bytes:
                # A reader this slow is gone or hostile: drop it rather than buffer more.
                log.warning("connection %s does not read; aborting it", conn)
                self.aborted_slow_readers += 1
                transport.abort()  # connection_lost follows from the loop
        for conn in self.stack.connections_to_close():
            transport = transports.get(conn)
            if transport is not None:
                transport.close()  # after the buffered bytes are written

    def _on_timer(self) -> None:
        self.stack.handle_timer(self.loop.time())
        self.pump()

    def close(self) -> None:
        """Stop listening and close every connection."""
        if self.server is not None:
            self.server.close()
        for transport in list(self._transports.values()):
            transport.close()
        self._timer.cancel()


async def start_stream_server(
    stack,
    host: str,
    port: int,
    on_event: EventHandler | None = None,
    *,
    max_write_buffer_bytes: int = DEFAULT_MAX_WRITE_BUFFER_BYTES,
) -> StreamServerDriver:
    """Listen on host:port (port 0: any free port); every connection feeds `stack`."""
    driver = StreamServerDriver(stack, on_event, max_write_buffer_bytes=max_write_buffer_bytes)
    loop = asyncio.get_running_loop()
    driver.server = await loop.create_server(lambda: _ServerConnection(driver), host, port)
    return driver
