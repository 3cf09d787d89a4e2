"""HTTP/2 over the simulator's TCP, with h2 (sans-I/O) doing the frames and HPACK.

Both ends speak HTTP/2 with prior knowledge (RFC 9113 3.3; S1's SPDY is
modelled by its standardised successor): the client sends the connection
preface and its SETTINGS, the server its SETTINGS, each acknowledges the
other's, and every request is one stream.

`minimal_settings` is the IoT profile: the client's SETTINGS frame is empty
(RFC 9113 3.4 requires the frame, not any setting) and the server announces
only SETTINGS_MAX_CONCURRENT_STREAMS. h2 always lists all its settings, so
the first frame it produces is replaced by the smaller one. The values it
leaves out equal the protocol defaults, except the two limits h2 announces
for itself (concurrent streams, header list size), which only restrict what
the peer may send and are never reached here.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Mapping, Sequence
from typing import cast

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

from iotbench.apps.http.content import Exchange, Header, answer
from iotbench.apps.requesters import Done
from iotbench.metrics.items import Item
from iotbench.net.tcp import Closed, Connected, DataReceived, PeerClosed, TcpSocket, TcpStack
from iotbench.net.tcp.events import TcpEvent

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
FRAME_HEADER_LEN = 9
DATA_FRAME, SETTINGS_FRAME = 0x0, 0x4
PADDED = 0x8
MAX_CONCURRENT_STREAMS = 100
# What h2 raises for a peer's bad bytes: its ProtocolError, and UnicodeDecodeError
# for a header value that is not UTF-8 (header_encoding below).
_MALFORMED = (h2.exceptions.ProtocolError, UnicodeDecodeError)


def header_bytes(blob: bytes) -> int:
    """How many bytes of a run of whole HTTP/2 frames are not DATA payload."""
    total = 0
    i = 0
    if blob.startswith(PREFACE):
        total = i = len(PREFACE)
    while i + FRAME_HEADER_LEN <= len(blob):
        length = int.from_bytes(blob[i : i + 3], "big")
        kind, flags = blob[i + 3], blob[i + 4]
        if kind == DATA_FRAME:
            padding = 1 + blob[i + FRAME_HEADER_LEN] if flags & PADDED else 0
            total += FRAME_HEADER_LEN + padding
        else:
            total += FRAME_HEADER_LEN + length
        i += FRAME_HEADER_LEN + length
    return total


def _settings_frame(settings: Mapping[int, int]) -> bytes:
    payload = b"".join(struct.pack("!HI", code, value) for code, value in settings.items())
    return len(payload).to_bytes(3, "big") + bytes((SETTINGS_FRAME, 0)) + bytes(4) + payload


def _start(conn: h2.connection.H2Connection, minimal_settings: bool, client: bool) -> bytes:
    """The connection's first bytes: preface (client) and SETTINGS."""
    conn.initiate_connection()
    first = conn.data_to_send()
    if not minimal_settings:
        return first
    if client:
        return PREFACE + _settings_frame({})
    codes = h2.settings.SettingCodes
    return _settings_frame({codes.MAX_CONCURRENT_STREAMS: MAX_CONCURRENT_STREAMS})


def _send(sock: TcpSocket, conn: h2.connection.H2Connection, prefix: bytes = b"") -> None:
    blob = prefix + conn.data_to_send()
    if blob:
        sock.send(blob, header_len=header_bytes(blob))


def _lower(headers: Sequence[Header]) -> list[tuple[str, str]]:
    return [(name.lower(), value) for name, value in headers]


def _headers(headers: object) -> dict[str, str]:
    """A received header block by name. Both ends are configured with
    header_encoding="utf-8", so h2 hands out names and values as str (its
    annotations say bytes, the type without that setting)."""
    return dict(cast("list[tuple[str, str]]", headers))


class Http2Server:
    """Serves `resources` (path -> sensor) over HTTP/2 on `port` of `stack`."""

    def __init__(
        self,
        stack: TcpStack,
        port: int,
        resources: Mapping[str, object],
        response_headers: Sequence[Header] = (),
        minimal_settings: bool = False,
    ) -> None:
        self.resources = resources
        self.response_headers = _lower(response_headers)
        self.minimal_settings = minimal_settings
        self.protocol_errors = 0
        stack.listen(port, self._accept)

    def _accept(self, sock: TcpSocket) -> None:
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        conn = h2.connection.H2Connection(config)
        bodies: dict[int, bytes] = {}  # stream -> what its flow control holds back
        sock.on_event = lambda event: self._on_event(sock, conn, event, bodies)

    def _on_event(self, sock: TcpSocket, conn, event: TcpEvent, bodies: dict[int, bytes]) -> None:
        if isinstance(event, Connected):
            # A server sends its SETTINGS as soon as it has the connection.
            _send(sock, conn, _start(conn, self.minimal_settings, client=False))
            return
        if isinstance(event, PeerClosed):
            sock.close()
            return
        if not isinstance(event, DataReceived):
            return
        try:
            events = conn.receive_data(event.data)
        except _MALFORMED:
            self.protocol_errors += 1
            sock.abort()
            return
        for ev in events:
            if isinstance(ev, h2.events.RequestReceived):
                request = _headers(ev.headers)
                path, method = request.get(":path", "/"), request.get(":method", "GET")
                status, headers, body = answer(self.resources, path, self.response_headers, method)
                try:
                    conn.send_headers(ev.stream_id, [(":status", str(status)), *_lower(headers)])
                except h2.exceptions.ProtocolError:
                    continue  # the client reset the stream, or ended the connection
                bodies[ev.stream_id] = body
                _send_body(conn, ev.stream_id, bodies)
            elif isinstance(ev, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
                for stream_id in list(bodies):  # flow control may let more go now
                    _send_body(conn, stream_id, bodies)
            elif isinstance(ev, h2.events.StreamReset):
                bodies.pop(ev.stream_id, None)
        _send(sock, conn)


def _send_body(conn, stream_id: int, bodies: dict[int, bytes]) -> None:
    """Send what flow control allows of a response body, in frames of the largest size,
    the last one ending the stream (an empty body: one empty DATA frame); keep the rest
    in `bodies` until the client opens its window."""
    body = bodies.pop(stream_id)
    try:
        while True:
            window = max(conn.local_flow_control_window(stream_id), 0)
            size = min(conn.max_outbound_frame_size, len(body), window)
            if body and not size:
                bodies[stream_id] = body
                return
            conn.send_data(stream_id, body[:size], end_stream=size == len(body))
            body = body[size:]
            if not body:
                return
    except h2.exceptions.ProtocolError:
        return  # the stream or the connection is closed: nothing more to send on it


class _ClientConnection:
    #: Set by the client as soon as connect() returns (before any of its events).
    sock: TcpSocket

    def __init__(self, client: Http2Client, close_when_idle: bool) -> None:
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config)
        self.client = client
        self.close_when_idle = close_when_idle
        self.streams: dict[int, Exchange] = {}
        # Requests beyond the server's SETTINGS_MAX_CONCURRENT_STREAMS, until one ends.
        self.waiting: deque[Exchange] = deque()
        self.closed = False  # this end has closed: what the server sends is not answered

    def on_event(self, event: TcpEvent) -> None:
        if isinstance(event, DataReceived):
            try:
                events = self.conn.receive_data(event.data)
            except _MALFORMED:
                self._fail_all()
                self.sock.abort()
                return
            for ev in events:
                self._on_h2_event(ev)
            if not self.closed:  # (a socket takes no data after close)
                _send(self.sock, self.conn)
            if self.close_when_idle and not self.streams and not self.waiting:
                self.closed = True
                self.sock.close()
        elif isinstance(event, (PeerClosed, Closed)):
            self._fail_all()
            if isinstance(event, PeerClosed):
                self.closed = True
                self.sock.close()
            self.client.lost(self)

    def _on_h2_event(self, ev: object) -> None:
        stream = self.streams.get(getattr(ev, "stream_id", -1))
        if isinstance(ev, h2.events.ResponseReceived) and stream:
            status = _headers(ev.headers).get(":status", "0")
            stream.status = int(status) if status.isdigit() else 0  # (h2 does not check it)
        elif isinstance(ev, h2.events.DataReceived):
            self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            if stream:
                stream.payload += len(ev.data)
        elif isinstance(ev, h2.events.StreamEnded) and stream:
            del self.streams[ev.stream_id]
            stream.finish(True)
            self.open_waiting()
        elif isinstance(ev, h2.events.StreamReset) and stream:
            del self.streams[ev.stream_id]
            stream.finish(False)
            self.open_waiting()
        elif isinstance(ev, h2.events.RemoteSettingsChanged):
            self.open_waiting()
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self._fail_all()
            # No new stream may go on it (RFC 9113 6.8): the next item opens another.
            self.client.lost(self)

    def open(self, exchange: Exchange) -> None:
        """The request on a stream of its own, or waiting while the server's limit of
        concurrent streams is reached (send_headers would raise)."""
        if not self._room():
            self.waiting.append(exchange)
            return
        stream_id = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream_id, self.client.headers, end_stream=True)
        self.streams[stream_id] = exchange

    def open_waiting(self) -> None:
        while self.waiting and not self.closed and self._room():
            self.open(self.waiting.popleft())

    def _room(self) -> bool:
        conn = self.conn
        return conn.open_outbound_streams < conn.remote_settings.max_concurrent_streams

    def _fail_all(self) -> None:
        streams, self.streams = self.streams, {}
        waiting, self.waiting = self.waiting, deque()
        for stream in [*streams.values(), *waiting]:
            stream.finish(False)


class Http2Client:
    """Carries out items as HTTP/2 GETs of `path` (an ItemClient).

    `connect(on_event, data, header_len)` opens a TCP connection with `data`
    queued (so Fast Open can put its start in the SYN) and returns its socket.
    """

    def __init__(
        self,
        connect,
        authority: str,
        path: str,
        request_headers: Sequence[Header] = (),
        per_request: bool = False,
        minimal_settings: bool = False,
    ) -> None:
        self._connect = connect
        self.path = path
        self.headers = [
            (":method", "GET"),
            (":scheme", "http"),
            (":authority", authority),
            (":path", path),
            *_lower(request_headers),
        ]
        self.per_request = per_request
        self.minimal_settings = minimal_settings
        self._shared: _ClientConnection | None = None

    def start(self, item: Item, done: Done, handed_over: object = None) -> None:
        # (Request-response: the response ends the item; nothing is handed over.)
        target = None if self.per_request else self._shared
        if target is not None:
            target.open(Exchange(item, done))
            _send(target.sock, target.conn)
            return
        target = _ClientConnection(self, close_when_idle=self.per_request)
        if not self.per_request:
            self._shared = target
        conn = target.conn
        first = _start(conn, self.minimal_settings, client=True)
        target.open(Exchange(item, done))
        blob = first + conn.data_to_send()
        target.sock = self._connect(target.on_event, blob, header_bytes(blob))

    def lost(self, conn: _ClientConnection) -> None:
        if self._shared is conn:
            self._shared = None
