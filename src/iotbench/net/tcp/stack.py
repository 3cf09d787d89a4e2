"""A simulated node's TCP: ports, listening, demultiplexing, Fast Open cookies.

`TcpStack` sits on a `Node` (it registers for IP protocol 6) and owns the
node's connections. Each connection is a sans-I/O `TcpConnection`; a
`TcpSocket` drives one in the simulator: it encodes what the connection sends
into real TCP segments (checksums included) and hands them to the node's IP
layer with the split of their bytes into TCP header and application header,
runs the connection's timer, and passes its events to the application.

    stack = TcpStack(sim, node, TcpParams())
    stack.listen(80, on_accept)                  # on_accept(sock): set sock.on_event
    sock = stack.connect(server_address, 80, on_event)
    sock.send(b"GET / HTTP/1.1\\r\\n...", header_len=...)
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from iotbench.net import ip
from iotbench.net.node import Node
from iotbench.net.tcp import segment as wire
from iotbench.net.tcp.connection import TcpConnection
from iotbench.net.tcp.events import Connected, FastOpenCookie, TcpEvent
from iotbench.net.tcp.params import TcpParams
from iotbench.net.tcp.segment import ACK, RST, SYN, Segment, TcpDecodeError
from iotbench.sim import Simulator
from iotbench.sim.deadline import DeadlineTimer

EventHandler = Callable[[TcpEvent], None]
EPHEMERAL_PORTS = (32768, 60999)  # Linux ip_local_port_range
COOKIE_LEN = 8  # RFC 7413 4.1.2 recommends 8 bytes


class TcpSocket:
    """One connection in the simulator, as an application sees it."""

    def __init__(
        self, stack: TcpStack, conn: TcpConnection, key: tuple, on_event: EventHandler | None
    ) -> None:
        self.stack = stack
        self.conn = conn
        self.key = key  # (local address, local port, remote address, remote port)
        self.on_event: EventHandler = on_event or (lambda event: None)
        self._timer = DeadlineTimer(stack.sim, self._on_timer)
        self._pumping = False
        # Writes before the handshake completed, without Fast Open: they go out
        # once connected, as an application writes after connect() returns.
        self.after_connect: list[tuple[bytes, int]] | None = None
        self._close_when_written = False

    @property
    def remote(self) -> tuple[bytes, int]:
        return self.key[2], self.key[3]

    @property
    def state(self) -> str:
        return self.conn.state

    # ---- application calls --------------------------------------------------------

    def send(self, data: bytes, header_len: int = 0) -> None:
        """Send `data`; its first `header_len` bytes count as application header."""
        if self.after_connect is not None:
            self.after_connect.append((data, header_len))
            return
        self.conn.send(self.stack.sim.now, data, header_len)
        self.pump()

    def close(self) -> None:
        if self.after_connect is not None:
            self._close_when_written = True  # after the data connect() was given
            return
        self.conn.close(self.stack.sim.now)
        self.pump()

    def abort(self) -> None:
        self.conn.abort(self.stack.sim.now)
        self.pump()

    # ---- driving the connection ---------------------------------------------------

    def pump(self) -> None:
        """Transmit what the connection produced, deliver its events, re-arm its timer."""
        if self._pumping:
            return  # an event handler called us; the loop below picks its output up
        self._pumping = True
        try:
            conn = self.conn
            while True:
                for seg, header_bytes in conn.segments_to_send():
                    self.stack.transmit(self.key, seg, header_bytes)
                events = conn.events()
                if not events:
                    break
                for event in events:
                    if isinstance(event, FastOpenCookie):
                        self.stack.remember_cookie(self.key[2], event)
                    elif isinstance(event, Connected) and self.after_connect is not None:
                        writes, self.after_connect = self.after_connect, None
                        for data, header_len in writes:
                            conn.send(self.stack.sim.now, data, header_len)
                        if self._close_when_written:
                            conn.close(self.stack.sim.now)
                    self.on_event(event)
        finally:
            self._pumping = False
        self._timer.set(conn.next_timer())
        if conn.finished:
            self.stack.forget(self)

    def _on_timer(self) -> None:
        self.conn.handle_timer(self.stack.sim.now)
        self.pump()


class TcpStack:
    """The TCP of one simulated node."""

    def __init__(self, sim: Simulator, node: Node, params: TcpParams | None = None) -> None:
        self.sim = sim
        self.node = node
        self.params = params or TcpParams()
        self.rng = sim.rng(f"node/{node.name}/tcp")
        self._sockets: dict[tuple, TcpSocket] = {}
        self._listeners: dict[int, tuple[Callable[[TcpSocket], None], TcpParams]] = {}
        lo, hi = EPHEMERAL_PORTS
        self._next_port = self.rng.randrange(lo, hi + 1)
        # Fast Open: the server's secret for cookies; the client's cookie cache.
        self._cookie_secret = self.rng.getrandbits(128).to_bytes(16, "big")
        self._cookies: dict[bytes, FastOpenCookie] = {}
        self.decode_errors = 0
        self.resets_sent = 0
        node.protocols[ip.IPPROTO_TCP] = self._receive

    # ---- application calls --------------------------------------------------------

    def listen(
        self,
        port: int,
        on_accept: Callable[[TcpSocket], None],
        params: TcpParams | None = None,
    ) -> None:
        """Accept connections on `port`; `on_accept(sock)` must set `sock.on_event`."""
        if port in self._listeners:
            raise ValueError(f"{self.node.name}: TCP port {port} is already listening")
        self._listeners[port] = (on_accept, params or self.params)

    def connect(
        self,
        dst: bytes,
        dst_port: int,
        on_event: EventHandler,
        *,
        data: bytes = b"",
        header_len: int = 0,
        params: TcpParams | None = None,
    ) -> TcpSocket:
        """Open a connection and send `data` on it.

        With Fast Open, `data` is queued before the SYN (sendto with
        MSG_FASTOPEN): with a cached cookie it travels in the SYN. Without, it
        is written when the handshake completes, after the handshake's ACK.
        """
        params = params or self.params
        iface = self._interface(dst)
        local_port = self._ephemeral_port(iface.address, dst, dst_port)
        key = (iface.address, local_port, dst, dst_port)
        conn = TcpConnection(params, self.rng, local_port, dst_port, self._mss(iface, params))
        sock = TcpSocket(self, conn, key, on_event)
        self._sockets[key] = sock
        now = self.sim.now
        if data and params.fast_open:
            conn.send(now, data, header_len)
        elif not params.fast_open:
            sock.after_connect = [(data, header_len)] if data else []
        cached = self._cookies.get(dst) if params.fast_open else None
        if cached is not None:
            conn.set_syn_data_mss(cached.mss)
        conn.connect(now, cached.cookie if cached else None)
        sock.pump()
        return sock

    # ---- used by sockets ----------------------------------------------------------

    def transmit(self, key: tuple, seg: Segment, header_bytes: int) -> None:
        local, _, remote, _ = key
        data = wire.encode(seg, local, remote)
        self.node.send_ip(
            self._interface(remote), remote, ip.IPPROTO_TCP, data, seg.header_len, header_bytes
        )

    def forget(self, sock: TcpSocket) -> None:
        if self._sockets.get(sock.key) is sock:
            del self._sockets[sock.key]

    def remember_cookie(self, server: bytes, cookie: FastOpenCookie) -> None:
        self._cookies[server] = cookie

    def cookie_for(self, client: bytes) -> bytes:
        """The Fast Open cookie this server grants `client` (RFC 7413 4.1.2: a MAC
        of the client's address under a server secret)."""
        return hashlib.blake2s(client, key=self._cookie_secret, digest_size=COOKIE_LEN).digest()

    @property
    def connections(self) -> int:
        return len(self._sockets)

    # ---- receiving ----------------------------------------------------------------

    def _receive(self, segment: bytes, src: bytes, dst: bytes) -> None:
        try:
            seg = wire.decode(segment, src, dst)
        except TcpDecodeError:
            self.decode_errors += 1
            return
        key = (dst, seg.dst_port, src, seg.src_port)
        sock = self._sockets.get(key)
        if sock is not None:
            sock.conn.receive(self.sim.now, seg)
            sock.pump()
            return
        listener = self._listeners.get(seg.dst_port)
        if listener is not None and seg.flags & (SYN | ACK | RST) == SYN:
            self._accept(key, seg, *listener)
            return
        self._reset(key, seg)

    def _accept(
        self,
        key: tuple,
        syn: Segment,
        on_accept: Callable[[TcpSocket], None],
        params: TcpParams,
    ) -> None:
        _local, local_port, remote, remote_port = key
        iface = self._interface(remote)
        conn = TcpConnection(params, self.rng, local_port, remote_port, self._mss(iface, params))
        if params.fast_open:
            good = self.cookie_for(remote)
            conn.tfo_grant = good
            conn.tfo_valid = lambda cookie: cookie == good
        sock = TcpSocket(self, conn, key, None)
        self._sockets[key] = sock
        on_accept(sock)  # the application hooks its events before the first one
        conn.listen_accept(self.sim.now, syn)
        sock.pump()

    def _reset(self, key: tuple, seg: Segment) -> None:
        """RFC 9293 3.10.7.1: answer a segment for no connection with RST."""
        if seg.flags & RST:
            return
        _local, local_port, _remote, remote_port = key
        if seg.flags & ACK:
            rst = Segment(local_port, remote_port, seg.ack, 0, RST, 0)
        else:
            ack = (seg.seq + seg.seq_len) % (1 << 32)
            rst = Segment(local_port, remote_port, 0, ack, RST | ACK, 0)
        self.resets_sent += 1
        self.transmit(key, rst, 0)

    # ---- helpers ------------------------------------------------------------------

    def _interface(self, dst: bytes):
        iface = self.node.interface_for(dst)
        if iface is None:
            raise ValueError(f"{self.node.name}: no route to {ip.address_text(dst)}")
        return iface

    @staticmethod
    def _mss(iface, params: TcpParams) -> int:
        if params.mss_bytes is not None:
            return params.mss_bytes
        overhead = (ip.IPV4_HEADER_LEN if len(iface.address) == 4 else ip.IPV6_HEADER_LEN) + 20
        return iface.mtu - overhead

    def _ephemeral_port(self, local: bytes, remote: bytes, remote_port: int) -> int:
        lo, hi = EPHEMERAL_PORTS
        for _ in range(hi - lo + 1):
            port = self._next_port
            self._next_port = lo if port >= hi else port + 1
            if (local, port, remote, remote_port) not in self._sockets:
                return port
        raise RuntimeError(f"{self.node.name}: no free TCP port")
