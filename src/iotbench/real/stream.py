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

Nor can too many peers: a server out of file descriptors (or kernel memory)
stops accepting for `ACCEPT_BACKOFF_S` at a time, logs one line per
`ACCEPT_LOG_INTERVAL_S`, and serves the connections it has (`Listener`).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from iotbench.proto.sansio import drain_with
from iotbench.real.timer import LoopTimer

log = logging.getLogger("iotbench.real")

#: Unread bytes one server connection may have waiting before it is aborted.
DEFAULT_MAX_WRITE_BUFFER_BYTES = 16 << 20
#: How long a listener stops accepting after accept() failed for want of a
#: resource. Connections that arrive meanwhile wait in the kernel's listen
#: queue; short, so that they are taken soon after descriptors are free again,
#: and each retry costs one failing system call.
ACCEPT_BACKOFF_S = 0.5
#: While accept() keeps failing, at most one log line per this many seconds.
ACCEPT_LOG_INTERVAL_S = 10.0
#: Connections taken per wake-up of a listener, and its listen queue (asyncio's 100).
ACCEPT_BATCH = BACKLOG = 100
#: accept() errors that belong to one connection, not to the listener: accept(2) on
#: Linux passes a pending network error of the new connection on, to be treated
#: as "try again". Any other error means no connection can be taken just now
#: (EMFILE, ENFILE, ENOBUFS, ENOMEM above all) and the listener backs off.
_PER_CONNECTION_ERRORS = {
    getattr(errno, name)
    for name in (
        "ECONNABORTED",
        "ENETDOWN",
        "EPROTO",
        "ENOPROTOOPT",
        "EHOSTDOWN",
        "ENONET",
        "EHOSTUNREACH",
        "EOPNOTSUPP",
        "ENETUNREACH",
    )
    if hasattr(errno, name)
}

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

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a TCP connection's
        self.loop = asyncio.get_running_loop()
        self._timer = LoopTimer(self.loop, self._on_timer)

    def data_received(self, data: bytes) -> None:
        self.stack.receive_data(self.now(), data)
        self.pump()

    def eof_received(self) -> bool:
        return False  # the peer closed its side: close ours too, connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        assert self._timer is not None  # set in connection_made
        self._timer.cancel()
        self.stack.connection_lost(self.now())
        self.pump()  # deliver the stack's last events; nothing can be written now
        self.closed.set()

    # ---- driving the stack --------------------------------------------------------------

    def now(self) -> float:
        assert self.loop is not None  # set in connection_made
        return self.loop.time()

    def pump(self) -> None:
        """Write and close what the stack asks, hand its events on, re-arm its timer."""
        if self.transport is None:
            return
        deadline = drain_with(self.stack, self._flush, lambda e: _deliver(self.on_event, e))
        assert self._timer is not None  # set with the transport
        if self.closed.is_set() or self.transport.is_closing():
            self._timer.cancel()
        else:
            self._timer.arm(deadline)

    def _flush(self) -> None:
        data = self.stack.data_to_send()
        transport = self.transport
        assert transport is not None  # only flushed from pump() with a transport
        if transport.is_closing():
            return
        if data:
            transport.write(data)
        if self.stack.close_requested:
            transport.close()  # after the buffered bytes are written

    def _on_timer(self) -> None:
        self.stack.handle_timer(self.now())
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


class Listener:
    """Listening TCP sockets whose connections become `protocol_factory()`'s protocols.

    In place of asyncio's loop.create_server, whose accept loop, out of file
    descriptors, logs a traceback for each of up to 100 failing accept()
    calls per wake-up and arms a retry timer for each, and those timers wake
    it again: a broker at `ulimit -n 1024` given 1,100 connections spent 12 s
    of CPU in 25 s writing 55,000 tracebacks, and its clients timed out
    (issue 39). Here a failed accept() stops accepting on that socket for
    `backoff_s`; the log gets one line when that starts, at most one per
    `log_interval_s` while it lasts (with the count of failed accept()
    calls) and one when accepting works again; open connections are served
    throughout.

    `sockets` are the listening sockets (getsockname() gives the port
    chosen for port 0), as asyncio.Server's; `close()` stops listening.
    """

    def __init__(
        self,
        sockets: list[socket.socket],
        protocol_factory: Callable[[], asyncio.Protocol],
        *,
        backoff_s: float = ACCEPT_BACKOFF_S,
        log_interval_s: float = ACCEPT_LOG_INTERVAL_S,
        open_connections: Callable[[], int] | None = None,
    ) -> None:
        self.sockets = tuple(sockets)
        self.protocol_factory = protocol_factory
        self.backoff_s = backoff_s
        self.log_interval_s = log_interval_s
        self.open_connections = open_connections
        self.loop = asyncio.get_running_loop()
        self.failed_accepts = 0  # in all, for tests and curious callers
        self._failing: dict[socket.socket, _Failing] = {}
        self._resumes: dict[socket.socket, asyncio.TimerHandle] = {}
        self._attaching: set[asyncio.Task] = set()
        self._closed = False
        for sock in self.sockets:
            self.loop.add_reader(sock.fileno(), self._accept, sock)

    @classmethod
    async def open(
        cls, host: str, port: int, protocol_factory: Callable[[], asyncio.Protocol], **options
    ) -> Listener:
        """Listen on every address `host` resolves to (as loop.create_server does)."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        sockets: list[socket.socket] = []
        try:
            for family, address in dict.fromkeys((info[0], info[4]) for info in infos):
                sock = socket.create_server(address, family=family, backlog=BACKLOG)
                sock.setblocking(False)
                sockets.append(sock)
        except BaseException:
            for sock in sockets:
                sock.close()
            raise
        return cls(sockets, protocol_factory, **options)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for sock in self.sockets:
            self.loop.remove_reader(sock.fileno())
            sock.close()
        for handle in self._resumes.values():
            handle.cancel()
        self._resumes.clear()

    # ---- accepting -------------------------------------------------------------------------

    def _accept(self, sock: socket.socket) -> None:
        for _ in range(ACCEPT_BATCH):  # then let the loop serve the open connections
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError):
                return  # none waiting
            except OSError as exc:
                if exc.errno in _PER_CONNECTION_ERRORS:
                    continue
                self._back_off(sock, exc)
                return
            if sock in self._failing:
                self._recovered(sock)
            task = self.loop.create_task(self._attach(conn))
            self._attaching.add(task)
            task.add_done_callback(self._attaching.discard)

    async def _attach(self, conn: socket.socket) -> None:
        try:
            await self.loop.connect_accepted_socket(self.protocol_factory, conn)
        except OSError as exc:  # the peer went away meanwhile
            log.debug("an accepted connection failed: %s", exc)
            conn.close()

    def _back_off(self, sock: socket.socket, exc: OSError) -> None:
        self.failed_accepts += 1
        self.loop.remove_reader(sock.fileno())
        if not self._closed:
            self._resumes[sock] = self.loop.call_later(self.backoff_s, self._resume, sock)
        now = self.loop.time()
        failing = self._failing.get(sock)
        if failing is None:
            self._failing[sock] = _Failing(since_s=now, logged_s=now)
            log.warning(
                "cannot accept connections on %s: %s; trying again every %g s, serving the %s",
                _address(sock),
                _reason(exc),
                self.backoff_s,
                self._open_ones(),
            )
            return
        failing.failures += 1
        failing.total += 1
        if now - failing.logged_s >= self.log_interval_s:
            log.warning(
                "still cannot accept connections on %s: %s; %d accept() calls failed"
                " in the last %.0f s, serving the %s",
                _address(sock),
                _reason(exc),
                failing.failures,
                now - failing.logged_s,
                self._open_ones(),
            )
            failing.failures, failing.logged_s = 0, now

    def _resume(self, sock: socket.socket) -> None:
        del self._resumes[sock]
        self.loop.add_reader(sock.fileno(), self._accept, sock)

    def _recovered(self, sock: socket.socket) -> None:
        failing = self._failing.pop(sock)
        log.warning(
            "accepting connections on %s again, after %.1f s and %d failed accept() calls",
            _address(sock),
            self.loop.time() - failing.since_s,
            failing.total,
        )

    def _open_ones(self) -> str:
        if self.open_connections is None:
            return "open connections"
        # Those accepted but not yet handed to their protocol hold descriptors too.
        return f"{self.open_connections() + len(self._attaching)} open connections"


@dataclass(slots=True)
class _Failing:
    """A listening socket's run of failed accept() calls."""

    since_s: float
    logged_s: float  # when the last line about it was logged
    failures: int = 0  # since then
    total: int = 1


def _address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _reason(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno, "") if exc.errno else ""
    return f"{exc.strerror or exc} ({name})" if name else str(exc)


class _ServerConnection(asyncio.Protocol):
    """One accepted TCP connection of a StreamServerDriver."""

    def __init__(self, server: StreamServerDriver) -> None:
        self.server = server
        self.conn = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.conn = self.server._connection_made(cast(asyncio.Transport, transport))

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
        self.server: Listener | None = None
        self.loop = asyncio.get_running_loop()
        self._timer = LoopTimer(self.loop, self._on_timer)
        self._transports: dict[int, asyncio.Transport] = {}
        self._next_conn = 1
        self._closed = False
        self.aborted_slow_readers = 0

    def now(self) -> float:
        return self.loop.time()

    @property
    def connections(self) -> int:
        return len(self._transports)

    # ---- from the connections ------------------------------------------------------------

    def _connection_made(self, transport: asyncio.Transport) -> int:
        if self._closed:  # accepted just before close(): not served
            transport.close()
            return 0
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
        self._closed = True
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
    driver.server = await Listener.open(
        host,
        port,
        lambda: _ServerConnection(driver),
        open_connections=lambda: driver.connections,
    )
    return driver
