"""QUIC client and server endpoints as datagram stacks, around aioquic.

aioquic's `QuicConnection` is already sans-I/O and takes `now` in every call;
these classes give a whole endpoint (many connections, found by connection
ID) the interface every datagram stack in iotbench has, so the simulator's
DatagramDriver and the real-socket driver run it unchanged:

    receive(now, data, addr)  handle_timer(now)  next_timer()
    datagrams_to_send()       events()

The application protocol on top is the smallest one S3 needs: the client
opens a bidirectional stream, writes a request (the resource path) and ends
the stream; the server answers with the reading and ends its side.

`datagrams_to_send()` takes no time, as the other stacks' do: aioquic needs
one (for pacing and ACK delays), and it is the time of the input that just
happened, which the endpoint keeps.

Randomness: aioquic draws connection IDs, TLS randoms and key shares from
the operating system, not from an injected generator. The sizes of all of
them are fixed, and with the run's Ed25519 certificate (certs.py) the
handshake has the same size every time, so packet sizes, times, losses and
all metrics are reproducible; the encrypted bytes in a pcap are not.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from aioquic.buffer import Buffer
from aioquic.quic import events as qe
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.packet import QuicPacketType, pull_quic_header
from aioquic.tls import SessionTicket

from ..errors import own_error
from .params import ALPN, QuicParams

# RFC 9000 14.1: a server only creates state for an Initial of at least 1200 bytes.
SMALLEST_INITIAL = 1200
# Session tickets a server remembers for resumption: a bounded cache, as real
# servers keep, so that a server handing a ticket to every connection does not
# grow without end. The oldest ticket goes first.
MAX_TICKETS = 64
#: Connections a server holds at once; an Initial beyond them is dropped, so a
#: flood of Initials takes bounded memory (far above any scenario's needs).
MAX_SERVER_CONNECTIONS = 1024
#: Most bytes of one request a server keeps while its stream is open; a longer
#: request closes its connection.
MAX_REQUEST_BYTES = 16 * 1024
#: The application error code of that close.
REQUEST_TOO_LARGE = 0x1


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    request_id: int
    data: bytes
    rtt_s: float


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """reason: why the connection carrying the request ended (idle timeout...)."""

    request_id: int
    reason: str


def _configuration(params: QuicParams, is_client: bool) -> QuicConfiguration:
    return QuicConfiguration(
        is_client=is_client,
        alpn_protocols=[ALPN],
        idle_timeout=params.idle_timeout_s,
        initial_rtt=params.initial_rtt_s,
        congestion_control_algorithm=params.congestion_control,
        max_datagram_size=params.max_datagram_size,
    )


class _Endpoint:
    """Connections, their timers and their datagrams.

    A campaign keeps dozens of connections open at once (a closed one drains
    for three PTOs), and asking each of them for datagrams and its timer after
    every event cost a fifth of a QUIC run. So only a connection that was
    touched (a datagram, a timer, a request, a new connection) is asked for
    datagrams, and its timer is read again only then; the others' are cached.
    """

    connection_id_length = 8  # aioquic's default; both ends use it

    def __init__(self, strict: bool = True) -> None:
        self.strict = strict  # an exception inside a connection: raised, or logged (_failed)
        self._now = 0.0
        self._connections: list[QuicConnection] = []
        self._by_cid: dict[bytes, QuicConnection] = {}
        self._touched: set[QuicConnection] = set()  # may have datagrams to send
        # timer to read again; a dict for a stable order (not memory addresses)
        self._stale: dict[QuicConnection, None] = {}
        self._timers: dict[QuicConnection, float | None] = {}
        self._events: list[object] = []
        self.dropped_datagrams = 0
        self.internal_errors = 0

    def receive(self, now: float, data: bytes, addr: Hashable) -> None:
        """One datagram: hand it to the connection its destination connection ID names."""
        self._now = now
        try:
            header = pull_quic_header(Buffer(data=data), host_cid_length=self.connection_id_length)
        except ValueError:
            self.dropped_datagrams += 1
            return
        conn = self._by_cid.get(header.destination_cid) or self._accept(header, data)
        if conn is None:
            self.dropped_datagrams += 1
            return
        self._touch(conn)
        try:
            conn.receive_datagram(data, addr, now=now)
        except Exception as exc:  # noqa: BLE001 - see _failed
            self._failed(conn, exc)
            return
        self._poll(conn)

    def _touch(self, conn: QuicConnection) -> None:
        self._touched.add(conn)
        self._stale[conn] = None

    def _failed(self, conn: QuicConnection, exc: Exception) -> None:
        """aioquic raised inside one connection (e.g. a server connection whose first
        datagram it rejected before it had a network path). In a simulation that is
        a bug, here or in aioquic, and the run fails (proto/errors.py); on real
        sockets a peer's bytes must never crash the node, so that connection is
        dropped, counted and logged."""
        self.internal_errors += 1
        own_error(self.strict, exc, "QUIC endpoint")
        self._on_event(conn, qe.ConnectionTerminated(0x1, None, "internal error"))
        self._forget(conn)

    def _accept(self, header, data: bytes) -> QuicConnection | None:
        """A server's new connection for an Initial; a client accepts none."""
        return None

    def _add(self, conn: QuicConnection, *cids: bytes) -> None:
        self._connections.append(conn)
        self._touch(conn)
        for cid in (*cids, conn.host_cid):
            self._by_cid[cid] = conn

    def datagrams_to_send(self, now: float | None = None) -> list[tuple[bytes, Hashable]]:
        if now is not None:
            self._now = now
        out: list[tuple[bytes, Hashable]] = []
        if not self._touched:
            return out
        # in the order the connections were made, so the datagrams' order is too
        for conn in [c for c in self._connections if c in self._touched]:
            try:
                out.extend(conn.datagrams_to_send(now=self._now))
            except Exception as exc:  # noqa: BLE001 - see _failed
                self._failed(conn, exc)
        self._touched.clear()
        return out

    def events(self) -> list[object]:
        events, self._events = self._events, []
        return events

    def _read_timers(self) -> dict[QuicConnection, float | None]:
        for conn in self._stale:
            self._timers[conn] = conn.get_timer()
        self._stale.clear()
        return self._timers

    def next_timer(self) -> float | None:
        times = [t for t in self._read_timers().values() if t is not None]
        return min(times) if times else None

    def handle_timer(self, now: float) -> None:
        self._now = now
        timers = self._read_timers()
        due = [c for c in self._connections if (at := timers[c]) is not None and at <= now]
        for conn in due:
            if conn not in timers:  # forgotten while an earlier one's timer ran
                continue
            self._touch(conn)
            t = conn.get_timer()  # reads aioquic's deadlines again before handle_timer
            if t is not None and t <= now:
                try:
                    conn.handle_timer(now=now)
                except Exception as exc:  # noqa: BLE001 - see _failed
                    self._failed(conn, exc)
                    continue
                self._poll(conn)

    def _poll(self, conn: QuicConnection) -> None:
        while (event := conn.next_event()) is not None:
            if isinstance(event, qe.ConnectionIdIssued):
                self._by_cid[event.connection_id] = conn
            elif isinstance(event, qe.ConnectionIdRetired):
                self._by_cid.pop(event.connection_id, None)
            self._on_event(conn, event)
            if isinstance(event, qe.ConnectionTerminated):
                self._forget(conn)

    def _on_event(self, conn: QuicConnection, event: object) -> None:
        raise NotImplementedError

    def _forget(self, conn: QuicConnection) -> None:
        if conn in self._connections:
            self._connections.remove(conn)
        self._touched.discard(conn)
        self._stale.pop(conn, None)
        self._timers.pop(conn, None)
        for cid, owner in list(self._by_cid.items()):
            if owner is conn:
                del self._by_cid[cid]


class QuicServer(_Endpoint):
    """Answers every request stream with `handler(request bytes) -> response bytes`."""

    def __init__(
        self,
        params: QuicParams,
        certificate,
        private_key,
        handler: Callable[[bytes], bytes],
        strict: bool = True,
        max_connections: int = MAX_SERVER_CONNECTIONS,
        max_request_bytes: int = MAX_REQUEST_BYTES,
    ) -> None:
        super().__init__(strict)
        self.configuration = _configuration(params, is_client=False)
        self.configuration.certificate = certificate
        self.configuration.private_key = private_key
        self.handler = handler
        self.max_connections = max_connections
        self.max_request_bytes = max_request_bytes
        self._requests: dict[tuple[int, int], bytearray] = {}
        self._tickets: dict[bytes, SessionTicket] = {}  # for resumption and 0-RTT
        self.requests_served = 0
        self.refused_connections = 0  # Initials dropped at max_connections
        self.oversize_requests = 0  # connections closed for a request too long

    def _accept(self, header, data: bytes) -> QuicConnection | None:
        if header.packet_type != QuicPacketType.INITIAL or len(data) < SMALLEST_INITIAL:
            return None
        if header.version not in self.configuration.supported_versions:
            # aioquic drops the packet, and a connection without a network path
            # cannot even be asked for datagrams (it raises).
            return None
        if len(self._connections) >= self.max_connections:
            self.refused_connections += 1
            return None
        conn = QuicConnection(
            configuration=self.configuration,
            original_destination_connection_id=header.destination_cid,
            session_ticket_fetcher=self._tickets.get,
            session_ticket_handler=self._store_ticket,
        )
        self._add(conn, header.destination_cid)
        return conn

    def _store_ticket(self, ticket: SessionTicket) -> None:
        self._tickets[ticket.ticket] = ticket
        if len(self._tickets) > MAX_TICKETS:
            del self._tickets[next(iter(self._tickets))]

    def _on_event(self, conn: QuicConnection, event: object) -> None:
        if isinstance(event, qe.StreamDataReceived):
            key = (id(conn), event.stream_id)
            buf = self._requests.setdefault(key, bytearray())
            buf += event.data
            if len(buf) > self.max_request_bytes:
                del self._requests[key]
                self.oversize_requests += 1
                conn.close(error_code=REQUEST_TOO_LARGE, reason_phrase="request too large")
                return
            if event.end_stream:
                request = bytes(self._requests.pop(key))
                conn.send_stream_data(event.stream_id, self.handler(request), end_stream=True)
                self.requests_served += 1
        elif isinstance(event, qe.ConnectionTerminated):
            self._requests = {k: v for k, v in self._requests.items() if k[0] != id(conn)}


class _Pending:
    __slots__ = ("conn", "data", "request_id", "sent_at")

    def __init__(self, request_id: int, conn: QuicConnection, sent_at: float) -> None:
        self.request_id = request_id
        self.conn = conn
        self.sent_at = sent_at
        self.data = bytearray()


class QuicClient(_Endpoint):
    """Sends requests, each on a stream of its own, on a connection per request
    or on one reused connection (QuicParams.connection)."""

    def __init__(
        self, params: QuicParams, cadata: bytes, server_name: str, strict: bool = True
    ) -> None:
        super().__init__(strict)
        self.params = params
        self.cadata = cadata
        self.server_name = server_name
        self._next_id = 1
        self._pending: dict[tuple[int, int], _Pending] = {}
        self._reused: dict[Hashable, QuicConnection] = {}
        self._ticket: SessionTicket | None = None
        self.handshakes = 0

    def request(self, now: float, addr: Hashable, data: bytes) -> int:
        """Send `data` on a new stream to `addr`; returns the request id events carry."""
        self._now = now
        conn = self._reused.get(addr) if self.params.connection == "reuse" else None
        if conn is None:
            conn = self._connect(now, addr)
            if self.params.connection == "reuse":
                self._reused[addr] = conn
        self._touch(conn)
        stream_id = conn.get_next_available_stream_id()
        conn.send_stream_data(stream_id, data, end_stream=True)
        request_id = self._next_id
        self._next_id += 1
        self._pending[(id(conn), stream_id)] = _Pending(request_id, conn, now)
        return request_id

    def _connect(self, now: float, addr: Hashable) -> QuicConnection:
        config = _configuration(self.params, is_client=True)
        config.server_name = self.server_name
        config.cadata = self.cadata
        config.verify_mode = ssl.CERT_REQUIRED
        if self.params.zero_rtt and self._ticket is not None:
            config.session_ticket = self._ticket  # resumption; the request goes as 0-RTT
        conn = QuicConnection(configuration=config, session_ticket_handler=self._keep_ticket)
        conn.connect(addr, now=now)
        self._add(conn)
        self.handshakes += 1
        return conn

    def _keep_ticket(self, ticket: SessionTicket) -> None:
        self._ticket = ticket

    def _on_event(self, conn: QuicConnection, event: object) -> None:
        if isinstance(event, qe.StreamDataReceived):
            pending = self._pending.get((id(conn), event.stream_id))
            if pending is None:
                return
            pending.data += event.data
            if event.end_stream:
                del self._pending[(id(conn), event.stream_id)]
                rtt = self._now - pending.sent_at
                self._events.append(ResponseReceived(pending.request_id, bytes(pending.data), rtt))
                if self.params.connection == "per-request":
                    conn.close()  # CONNECTION_CLOSE; the connection then drains
        elif isinstance(event, qe.ConnectionTerminated):
            reason = event.reason_phrase or f"error 0x{event.error_code:x}"
            for key, pending in list(self._pending.items()):
                if pending.conn is conn:
                    del self._pending[key]
                    self._events.append(RequestFailed(pending.request_id, reason))
            for addr, reused in list(self._reused.items()):
                if reused is conn:
                    del self._reused[addr]
