"""Runs a sans-I/O datagram stack behind a real asyncio UDP socket.

The counterpart of apps/driver.py for real mode: the same stack object gets
`receive(now, data, addr)` and `handle_timer(now)` with `now` taken from the
event loop's monotonic clock, and what it produces goes out on the socket.
Addresses cross the boundary as (host, port) tuples, exactly as in the
simulator, so a stack cannot tell the two worlds apart.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import struct
import sys
from collections.abc import Callable, Hashable
from typing import cast

from iotbench.proto.sansio import drain_with
from iotbench.real.timer import LoopTimer

log = logging.getLogger("iotbench.real")

#: Most datagrams a server's driver reads from its socket per wake-up of the loop.
READ_BATCH = 32
#: The largest datagram read, as asyncio's datagram transport reads (256 KiB).
MAX_DATAGRAM = 256 * 1024


async def serve_until_cancelled(server, on_ready: Callable | None) -> None:
    """Tell `on_ready` the server is up, then wait until cancelled; close the server
    (anything with close()) however it ends. The tail of every `serve_*` function."""
    try:
        if on_ready is not None:
            on_ready(server)
        await asyncio.Event().wait()
    finally:
        server.close()


class AsyncDatagramDriver(asyncio.DatagramProtocol):
    """Feeds one sans-I/O stack from a UDP socket and its timers from the event loop.

    A peer's datagram can never stop the driver: the stack itself never raises
    for any bytes (its codec errors are typed and counted), and anything an
    event handler raises is logged and dropped.
    """

    def __init__(
        self,
        stack,
        on_event: Callable[[object], None] | None = None,
        on_error: Callable[[OSError], None] | None = None,
        on_unreachable: Callable[[tuple[str, int]], None] | None = None,
        on_send_error: Callable[[Hashable, OSError], None] | None = None,
    ) -> None:
        self.stack = stack
        self.on_send_error = on_send_error
        self._sending: Hashable | None = None  # the address of the sendto in progress
        self.on_event = on_event or (lambda event: None)
        self.on_error = on_error
        self.on_unreachable = on_unreachable
        self.sock: socket.socket | None = None  # ours, when we made it (a server's)
        self.transport: asyncio.DatagramTransport | None = None
        self.peer: tuple | None = None  # the one peer of a connected socket
        self.loop: asyncio.AbstractEventLoop | None = None
        self._timer: LoopTimer | None = None
        self.closed = asyncio.Event()

    # ---- asyncio.DatagramProtocol -------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)  # a UDP endpoint's
        self.peer = transport.get_extra_info("peername")
        self.loop = asyncio.get_running_loop()
        self._timer = LoopTimer(self.loop, self._on_timer)

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        # IPv6 sockets report (host, port, flowinfo, scope_id); the stack sees (host, port).
        assert self.loop is not None  # set in connection_made
        self.stack.receive(self.loop.time(), data, (addr[0], addr[1]))
        self.pump()
        if self.sock is not None:
            self._read_queued(self.sock)

    def _read_queued(self, sock: socket.socket) -> None:
        """Take the datagrams already queued on a server's socket, each as the event
        loop would hand it over, without going back to the loop between them.

        Under load several are waiting, and a trip through the loop for each
        (its epoll_wait, its callback machinery) is work that answers nobody.
        Each is answered before the next is read, as before; at most
        READ_BATCH, so that timers and other sockets still get their turn.
        """
        assert self.loop is not None  # set in connection_made
        stack, time = self.stack, self.loop.time
        for _ in range(READ_BATCH):
            if self.transport is None or self.transport.is_closing():
                return
            try:
                data, addr = sock.recvfrom(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # an ICMP error queued for us (IP_RECVERR), as asyncio does
                self.error_received(exc)
                return
            stack.receive(time(), data, (addr[0], addr[1]))
            self.pump()

    def error_received(self, exc: Exception) -> None:
        # An ICMP error (port or host unreachable) for what we sent. The kernel
        # reports it only on a connected socket: a client's (open_datagram_driver
        # with remote_addr), whose `on_error` ends the exchange at once. A server
        # leaves it to the stack's own timers.
        log.debug("socket error: %s", exc)
        if self._sending is not None and isinstance(exc, OSError):
            # sendto itself failed (no route, an address of the other family):
            # the OS refused this datagram, nothing will come back.
            if self.on_send_error is not None:
                self.on_send_error(self._sending, exc)
            return
        if self.on_error is not None and isinstance(exc, OSError):
            self.on_error(exc)
        if self.sock is not None:
            for addr in read_unreachable(self.sock):
                log.debug("%s is unreachable", addr)
                if self.on_unreachable is not None:
                    self.on_unreachable(addr)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.closed.set()

    # ---- driving the stack --------------------------------------------------------

    def now(self) -> float:
        assert self.loop is not None  # set in connection_made
        return self.loop.time()

    def pump(self) -> None:
        """Send what the stack wants sent, hand its events on, re-arm its timer.

        Call after every application call into the stack.
        """
        if self.transport is None or self.transport.is_closing():
            return
        assert self._timer is not None  # set with the transport
        self._timer.arm(drain_with(self.stack, self._flush, self._deliver))

    def _flush(self) -> None:
        # drain()'s flush, made once here rather than on every pump (every datagram).
        for data, addr in self.stack.datagrams_to_send():
            self._send(data, addr)

    def _send(self, data: bytes, addr: Hashable) -> None:
        # A connected socket (a client's) has one peer, whatever spelling of its
        # address the stack uses, and takes no address.
        assert self.transport is not None  # only sent from pump() with a transport
        # A UDP stack's addresses are (host, port) tuples (the module docstring).
        to = None if self.peer is not None else cast("tuple[str, int]", addr)
        self._sending = addr
        try:
            self.transport.sendto(data, to)
        finally:
            self._sending = None

    def _deliver(self, event: object) -> None:
        try:
            self.on_event(event)
        except Exception:
            log.exception("event handler failed for %r", event)

    def _on_timer(self) -> None:
        self.stack.handle_timer(self.now())
        self.pump()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def open_datagram_driver(
    stack,
    on_event: Callable[[object], None] | None = None,
    *,
    local_addr: tuple[str, int] | None = None,
    remote_addr: tuple[str, int] | None = None,
    family: int = 0,
    on_error: Callable[[OSError], None] | None = None,
) -> AsyncDatagramDriver:
    """Bind a UDP socket (port 0: any free port) and attach `stack` to it.

    A client gives `remote_addr`, its one peer: the socket is connected, so the
    kernel reports ICMP errors for it (connection refused, host unreachable),
    which reach `on_error`; an unconnected socket never learns of them."""
    loop = asyncio.get_running_loop()
    _, driver = await loop.create_datagram_endpoint(
        lambda: AsyncDatagramDriver(stack, on_event, on_error),
        local_addr=local_addr,
        remote_addr=remote_addr,
        family=family,
    )
    return driver


async def open_server_driver(
    stack,
    host: str,
    port: int,
    on_event: Callable[[object], None] | None = None,
    on_unreachable: Callable[[tuple[str, int]], None] | None = None,
    on_send_error: Callable[[Hashable, OSError], None] | None = None,
) -> AsyncDatagramDriver:
    """Bind a server's UDP socket at host:port and attach `stack` to it.

    A server's socket is not connected, so the kernel keeps ICMP errors from
    it unless asked (Linux: IP_RECVERR); then each error names the address
    that was unreachable, which goes to `on_unreachable` (e.g. to end the
    observations of a client that is gone, RFC 7641 4.5). Elsewhere the
    server works as before, without that news.
    """
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, sockaddr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        _ask_for_icmp_errors(sock, family)
        sock.bind(sockaddr)
        _, driver = await loop.create_datagram_endpoint(
            lambda: AsyncDatagramDriver(
                stack, on_event, on_unreachable=on_unreachable, on_send_error=on_send_error
            ),
            sock=sock,
        )
    except BaseException:
        sock.close()
        raise
    driver.sock = sock
    return driver


# Linux's <linux/in.h>, <linux/in6.h> and <linux/errqueue.h>.
_IP_RECVERR, _IPV6_RECVERR = 11, 25
_SO_EE_ORIGIN_ICMP, _SO_EE_ORIGIN_ICMP6 = 2, 3
_EXTENDED_ERR = struct.Struct("=IBBBBII")  # ee_errno, ee_origin, ee_type, ee_code, pad, info, data
_UNREACHABLE = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH}


def _ask_for_icmp_errors(sock: socket.socket, family: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, _IPV6_RECVERR, 1)
    else:
        sock.setsockopt(socket.IPPROTO_IP, _IP_RECVERR, 1)


def read_unreachable(sock: socket.socket) -> list[tuple[str, int]]:
    """Empty the socket's error queue; the destinations it says are unreachable.

    Each entry is an ICMP error for a datagram we sent: its address is where
    that datagram went, its extended error says what happened."""
    flags = getattr(socket, "MSG_ERRQUEUE", 0)
    gone: list[tuple[str, int]] = []
    if not flags:
        return gone
    while True:
        try:
            _, ancillary, _, addr = sock.recvmsg(64, 512, flags | socket.MSG_DONTWAIT)
        except OSError:  # EAGAIN: the queue is empty
            return gone
        for level, kind, data in ancillary:
            if (level, kind) not in (
                (socket.IPPROTO_IP, _IP_RECVERR),
                (socket.IPPROTO_IPV6, _IPV6_RECVERR),
            ) or len(data) < _EXTENDED_ERR.size:
                continue
            code, origin = _EXTENDED_ERR.unpack_from(data)[:2]
            if origin in (_SO_EE_ORIGIN_ICMP, _SO_EE_ORIGIN_ICMP6) and code in _UNREACHABLE:
                gone.append((addr[0], addr[1]))


def unreachable(peer: tuple, exc: OSError) -> str:
    """ "127.0.0.1 port 1 is unreachable: Connection refused" for a client's failure."""
    return f"{peer[0]} port {peer[1]} is unreachable: {exc.strerror or exc}"
