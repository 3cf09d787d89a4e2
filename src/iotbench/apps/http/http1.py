"""HTTP/1.1 over the simulator's TCP, with h11 (sans-I/O) doing the messages.

The server answers pipelined requests in order and closes when a request asks
for it (`Connection: close`). The client sends each request as soon as it is
issued, on one persistent connection (pipelining, as S2 asks) or on a new
connection per request. h11's client side does one request at a time, so the
client formats each request with an h11 connection of its own and parses the
responses, in order, with those same connections, handing the bytes one
response leaves over to the next.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

import h11

from iotbench.apps.http.content import REASONS, Exchange, Header, answer
from iotbench.apps.requesters import Done
from iotbench.metrics.items import Item
from iotbench.net.tcp import Closed, DataReceived, PeerClosed, TcpSocket, TcpStack
from iotbench.net.tcp.events import TcpEvent


class Http1Server:
    """Serves `resources` (path -> sensor) on `port` of `stack`."""

    def __init__(
        self,
        stack: TcpStack,
        port: int,
        resources: Mapping[str, object],
        response_headers: Sequence[Header] = (),
    ) -> None:
        self.resources = resources
        self.response_headers = list(response_headers)
        self.protocol_errors = 0
        stack.listen(port, self._accept)

    def _accept(self, sock: TcpSocket) -> None:
        conn = h11.Connection(h11.SERVER)
        sock.on_event = lambda event: self._on_event(sock, conn, event)

    def _on_event(self, sock: TcpSocket, conn: h11.Connection, event: TcpEvent) -> None:
        if isinstance(event, DataReceived):
            conn.receive_data(event.data)
        elif isinstance(event, PeerClosed):
            conn.receive_data(b"")
        else:
            return
        try:
            self._serve(sock, conn)
        except h11.ProtocolError:
            self.protocol_errors += 1
            sock.abort()

    def _serve(self, sock: TcpSocket, conn: h11.Connection) -> None:
        target, method = "/", "GET"
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Request):
                target = event.target.decode("ascii", "replace")
                method = event.method.decode("ascii", "replace")
            elif isinstance(event, h11.EndOfMessage):
                status, headers, body = answer(
                    self.resources, target, self.response_headers, method
                )
                head = conn.send(
                    h11.Response(
                        status_code=status, headers=headers, reason=REASONS.get(status, b"")
                    )
                )
                # (A HEAD's or a 405's response has no content to send.)
                content = conn.send(h11.Data(data=body)) if body else b""
                message = head + content + conn.send(h11.EndOfMessage())
                sock.send(message, header_len=len(head))
                if conn.our_state is h11.MUST_CLOSE:
                    sock.close()
                    return
                conn.start_next_cycle()
            elif isinstance(event, h11.ConnectionClosed):
                sock.close()
                return
            else:  # NEED_DATA, or PAUSED until the peer's next request arrives
                return


class _Exchange(Exchange):
    """One request; the h11 connection that formatted it parses its response."""

    __slots__ = ("conn",)

    def __init__(self, item: Item, done: Done) -> None:
        super().__init__(item, done)
        self.conn = h11.Connection(h11.CLIENT)


class _ClientConnection:
    """One TCP connection of the client and the exchanges waiting on it, in order."""

    #: Set by the client as soon as connect() returns (before any of its events).
    sock: TcpSocket

    def __init__(self, client: Http1Client, close_when_idle: bool) -> None:
        self.client = client
        self.close_when_idle = close_when_idle
        self.queue: deque[_Exchange] = deque()

    def on_event(self, event: TcpEvent) -> None:
        if isinstance(event, DataReceived):
            self._parse(event.data)
            if self.close_when_idle and not self.queue:
                self.sock.close()
        elif isinstance(event, PeerClosed):
            self._parse(b"")
            self._fail_all()
            self.sock.close()
            self.client.lost(self)
        elif isinstance(event, Closed):
            self._fail_all()
            self.client.lost(self)

    def _parse(self, data: bytes) -> None:
        queue = self.queue
        try:
            while queue:
                exchange = queue[0]
                exchange.conn.receive_data(data)
                if not self._read_response(exchange):
                    return
                queue.popleft()
                exchange.finish(True)
                data, closed = exchange.conn.trailing_data
                data = bytes(data)
                if not data and not closed:
                    return
        except h11.ProtocolError:
            self._fail_all()
            self.sock.abort()

    @staticmethod
    def _read_response(exchange: _Exchange) -> bool:
        """Consume events; True once the whole response is in."""
        while True:
            event = exchange.conn.next_event()
            if isinstance(event, h11.Response):
                exchange.status = event.status_code
            elif isinstance(event, h11.Data):
                exchange.payload += len(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return True
            elif event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
                return False

    def _fail_all(self) -> None:
        while self.queue:
            self.queue.popleft().finish(False)


class Http1Client:
    """Carries out items as HTTP/1.1 GETs of `path` (an ItemClient).

    `connect(on_event, data, header_len)` opens a TCP connection with `data`
    queued (so Fast Open can put it in the SYN) and returns its socket.
    """

    def __init__(
        self,
        connect,
        host: str,
        path: str,
        request_headers: Sequence[Header] = (),
        per_request: bool = False,
    ) -> None:
        self._connect = connect
        self.path = path
        self.headers = [("Host", host), *request_headers]
        self.per_request = per_request
        self._shared: _ClientConnection | None = None

    def start(self, item: Item, done: Done, handed_over: object = None) -> None:
        # (Request-response: the response ends the item; nothing is handed over.)
        exchange = _Exchange(item, done)
        conn = exchange.conn
        request = conn.send(h11.Request(method="GET", target=self.path, headers=self.headers))
        request += conn.send(h11.EndOfMessage())
        target = None if self.per_request else self._shared
        if target is not None:
            target.queue.append(exchange)
            target.sock.send(request, header_len=len(request))
            return
        target = _ClientConnection(self, close_when_idle=self.per_request)
        target.queue.append(exchange)
        if not self.per_request:
            self._shared = target
        target.sock = self._connect(target.on_event, request, len(request))

    def lost(self, conn: _ClientConnection) -> None:
        """A connection ended; the next item opens a new one."""
        if self._shared is conn:
            self._shared = None
