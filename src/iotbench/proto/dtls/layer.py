"""DTLS under a CoAP endpoint: one association per peer address (coap/secured.py's layer).

As a client (given PskClientCredentials), the first datagram the endpoint
sends to a peer starts a handshake; datagrams wait (bounded, params.py)
until it is done, and then travel as application data records. A failed
handshake drops them; the next datagram to that peer starts a new one, so
CoAP's own retransmission paces the attempts.

As a server (given PskServerCredentials), a ClientHello is answered without
keeping any state, by a HelloVerifyRequest carrying a cookie (RFC 6347
4.2.1):

    cookie = HMAC-SHA256(secret, peer address | client_version | random |
                         session_id | cipher_suites | compression_methods)[0:16]

and only a ClientHello that returns that cookie, proving the peer receives
at its address, creates an association. So a spoofed flood gets one small
HelloVerifyRequest per ClientHello (shorter than the ClientHello: no
amplification) and costs no memory.

The cookie proves an address, not the key: anyone with addresses to receive
at (an IPv6 /64 has plenty) can open half-open handshakes. So handshakes in
progress and established sessions are kept apart, each with its own limit
(params.py), and nothing unauthenticated ever ends a session:

- at most `max_handshakes` handshakes in progress; a new one when they are
  all taken ends the oldest *started* (not the least recently active: a
  flood could keep its own fresh by sending, while an honest client waiting
  for flight 4 sends nothing). To push out an honest handshake, a flood must
  start `max_handshakes` new ones within the client's round trip;
- at most `max_sessions` established sessions, ordered by activity (a
  datagram received or sent: a session carrying an observer's
  notifications is in use); only a handshake that completes, its peer
  having proved the key, makes room, by closing the least recently active
  one with close_notify.

A verified ClientHello with a new random from an address that has a session
(a client that rebooted, RFC 6347 4.2.8) starts a handshake beside it; the
session is replaced when that handshake completes and stays if it fails.
While it runs, the address's datagrams go to the handshake (a rebooted
client has no keys for the old session) and the endpoint's wait for it.

Datagrams from a peer without an association, other than a ClientHello, are
dropped; so is the endpoint's datagram to a peer a server-only layer has no
session with (a server never initiates a handshake).
"""

from __future__ import annotations

import hmac as std_hmac
import random
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes, hmac

from iotbench.proto import crypto_work
from iotbench.proto.crypto_work import Work, WorkMeter
from iotbench.proto.sansio import DrainedQueues
from iotbench.proto.timers import earliest

from . import messages
from .connection import (
    HANDSHAKE,
    DtlsConnection,
    HandshakeDone,
    HandshakeFailed,
    SessionClosed,
)
from .fragments import Reassembler
from .messages import ClientHello, HandshakeFragment, HelloVerifyRequest
from .params import DtlsParams, PskClientCredentials, PskServerCredentials
from .record import HEADER_LEN, DtlsDecodeError, RecordHeader, plain_record, split_records

COOKIE_LEN = 16
MAX_HELLO_ASSEMBLIES = 16  # addresses whose fragmented ClientHello is being assembled
MAX_HELLO_BYTES = 1024  # a PSK ClientHello is ~100 bytes; room for many extensions
MAX_CLEAR_PEERS = 1024  # peers asked in the clear whose answers are let through


@dataclass(slots=True)
class DtlsStats:
    hello_verify_requests: int = 0  # stateless cookie answers sent
    handshakes_started: int = 0
    handshakes_done: int = 0
    handshakes_failed: int = 0
    handshakes_evicted: int = 0  # the oldest, for a new one (max_handshakes)
    sessions_evicted: int = 0  # the least recently active, for a completed handshake
    datagrams_dropped: int = 0  # from or to a peer without a usable association


class DtlsLayer(DrainedQueues):
    """A DatagramSecurity (coap/secured.py) that speaks DTLS 1.2 with pre-shared keys."""

    def __init__(
        self,
        rng: random.Random,
        params: DtlsParams | None = None,
        *,
        client: PskClientCredentials | None = None,
        server: PskServerCredentials | None = None,
        clear_to: Callable[[Hashable], bool] | None = None,
    ) -> None:
        if client is None and server is None:
            raise ValueError("a DTLS layer needs client credentials, server credentials or both")
        self.rng = rng
        self.params = params or DtlsParams()
        self.client_credentials = client
        self.server_credentials = server
        # A server that is also a plain CoAP client (the Entity Manager asking
        # its members): datagrams to peers `clear_to` accepts, with no session,
        # go in the clear, and only those peers may answer in the clear.
        self.clear_to = clear_to
        self._clear_peers: OrderedDict[Hashable, None] = OrderedDict()
        self.stats = DtlsStats()
        self.meter = WorkMeter()  # every association's cryptography and the cookies'
        #: Told (plaintext, record) for every application datagram sealed: an
        #: observer's way to recognise a protected datagram (the simulator's metrics).
        self.on_sealed: Callable[[bytes, bytes], None] | None = None
        self._cookie_secret = rng.getrandbits(256).to_bytes(32, "big")
        # Established sessions, least recently active first, and handshakes in
        # progress, oldest started first: an address may be in both while it
        # renews its session.
        self._sessions: OrderedDict[Hashable, DtlsConnection] = OrderedDict()
        self._handshakes: OrderedDict[Hashable, DtlsConnection] = OrderedDict()
        self._queued: dict[Hashable, deque[bytes]] = {}
        self._hello_parts: OrderedDict[Hashable, Reassembler] = OrderedDict()
        self._out: list[tuple[bytes, Hashable]] = []
        self._plain: list[tuple[bytes, Hashable]] = []
        self._events: list[object] = []

    # -- DatagramSecurity

    @property
    def work(self) -> Work:
        """The cryptography done so far (proto/crypto_work.py)."""
        return self.meter.total

    def outgoing(self, now: float, data: bytes, addr: Hashable) -> None:
        conn = self._handshakes.get(addr)
        session = self._sessions.get(addr)
        if conn is None and session is not None:
            self._sessions.move_to_end(addr)
            self._seal(session, data)
            self._collect(session)
            return
        if conn is None:
            if self.clear_to is not None and self.clear_to(addr):
                self._clear_peers[addr] = None
                self._clear_peers.move_to_end(addr)
                while len(self._clear_peers) > MAX_CLEAR_PEERS:
                    self._clear_peers.popitem(last=False)
                self._out.append((data, addr))
                return
            if self.client_credentials is None:
                self.stats.datagrams_dropped += 1
                return
            conn = DtlsConnection.client(
                now, addr, self.rng, self.params, self.client_credentials, self.meter
            )
            self._start(addr, conn)
        queue = self._queued.setdefault(addr, deque(maxlen=self.params.max_queued))
        queue.append(data)
        self._collect(conn)

    def incoming(self, now: float, data: bytes, addr: Hashable) -> None:
        credentials = self.server_credentials
        if credentials is not None and _starts_with_client_hello(data):
            if self._on_client_hello(now, data, addr, credentials):
                return
        conn = self._handshakes.get(addr)
        if conn is None and (conn := self._sessions.get(addr)) is not None:
            self._sessions.move_to_end(addr)
        if conn is None:
            if addr in self._clear_peers and data and data[0] >> 6 == 1:
                # CoAP (version 1 in the first two bits) from a peer asked in
                # the clear; DTLS records start with 20-23 (RFC 7983's demux).
                self._plain.append((data, addr))
            else:
                self.stats.datagrams_dropped += 1
            return
        conn.receive(now, data)
        self._collect(conn)

    def next_timer(self) -> float | None:
        deadlines = [t for c in self._connections() if (t := c.next_timer()) is not None]
        return earliest(deadlines)

    def handle_timer(self, now: float) -> None:
        for conn in self._connections():
            deadline = conn.next_timer()
            if deadline is not None and deadline <= now:
                conn.handle_timer(now)
                self._collect(conn)

    # -- sessions

    def session(self, addr: Hashable) -> DtlsConnection | None:
        """The established session with `addr`, else its handshake in progress, or None."""
        conn = self._sessions.get(addr)
        return conn if conn is not None else self._handshakes.get(addr)

    def peer_identity(self, addr: Hashable) -> str | None:
        """The PSK identity `addr` proved in an established session, or None."""
        conn = self._sessions.get(addr)
        if conn is None or not conn.established:
            return None
        return conn.psk_identity.decode("utf-8", errors="replace")

    def close(self, addr: Hashable) -> None:
        """End the session and the handshake with `addr` (close_notify when established)."""
        for table in (self._handshakes, self._sessions):
            conn = table.get(addr)
            if conn is not None:
                conn.close()
                self._collect(conn)

    def close_all(self) -> None:
        for addr in {**self._handshakes, **self._sessions}:
            self.close(addr)

    # -- internals

    def _on_client_hello(
        self, now: float, data: bytes, addr: Hashable, credentials: PskServerCredentials
    ) -> bool:
        """Answer or accept a ClientHello; False when it belongs to the address's
        handshake or to the handshake of its session (a retransmission)."""
        try:
            found = self._whole_client_hello(data, addr)
            if found is None:
                return True  # a fragment of a ClientHello, kept until the rest comes
            header, piece = found
            hello = ClientHello.decode(piece.body)
        except DtlsDecodeError:
            self.stats.datagrams_dropped += 1
            return True
        for conn in (self._handshakes.get(addr), self._sessions.get(addr)):
            if conn is not None and not conn.finished and hello.random == conn.client_random:
                return False  # the same handshake's hello again: the association answers
        expected = self._cookie(addr, hello)
        if not std_hmac.compare_digest(hello.cookie, expected):
            verify = messages.whole_message(
                messages.HELLO_VERIFY_REQUEST,
                piece.message_seq,
                HelloVerifyRequest(expected).encode(),
            )
            # RFC 6347 4.2.1: the ClientHello's record sequence number, echoed.
            self._out.append((plain_record(HANDSHAKE, 0, header.sequence, verify.encode()), addr))
            self.stats.hello_verify_requests += 1
            return True
        conn = DtlsConnection.server(
            now,
            addr,
            self.rng,
            self.params,
            credentials,
            piece,
            header.sequence,
            len(data),
            self.meter,
        )
        self._start(addr, conn)
        self._collect(conn)
        return True

    def _whole_client_hello(
        self, data: bytes, addr: Hashable
    ) -> tuple[RecordHeader, HandshakeFragment] | None:
        """The ClientHello a datagram holds or completes, with its record's header.

        A ClientHello larger than the path allows comes in fragments (RFC 6347
        4.2.3); they are the one thing a server keeps before the cookie
        returns, in a table of at most MAX_HELLO_ASSEMBLIES addresses (the
        oldest goes), so a flood of fragments costs bounded memory.
        """
        for header, record in split_records(data):
            if header.content_type != HANDSHAKE or header.epoch != 0:
                continue
            for piece in messages.decode_fragments(record[HEADER_LEN:]):
                if piece.msg_type != messages.CLIENT_HELLO:
                    continue
                if piece.whole:
                    self._hello_parts.pop(addr, None)
                    return header, piece
                assembly = self._hello_parts.pop(addr, None) or Reassembler(
                    max_message_bytes=MAX_HELLO_BYTES, max_messages=1
                )
                whole = assembly.add(piece)
                if whole is not None:
                    return header, whole
                self._hello_parts[addr] = assembly
                while len(self._hello_parts) > MAX_HELLO_ASSEMBLIES:
                    self._hello_parts.popitem(last=False)
        return None

    def _cookie(self, addr: Hashable, hello: ClientHello) -> bytes:
        covered = (
            repr(addr).encode()
            + bytes(hello.version)
            + hello.random
            + hello.session_id
            + b"".join(s.to_bytes(2, "big") for s in hello.cipher_suites)
            + bytes(hello.compression_methods)
        )
        self.meter.add(crypto_work.hmac_sha256(len(covered), len(self._cookie_secret)))
        h = hmac.HMAC(self._cookie_secret, hashes.SHA256())
        h.update(covered)
        return h.finalize()[:COOKIE_LEN]

    def _seal(self, conn: DtlsConnection, data: bytes) -> None:
        record = conn.send(data)
        if self.on_sealed is not None:
            self.on_sealed(data, record)

    def _connections(self) -> list[DtlsConnection]:
        return [*self._handshakes.values(), *self._sessions.values()]

    def _start(self, addr: Hashable, conn: DtlsConnection) -> None:
        """Keep a new handshake, in place of the address's earlier one; when
        max_handshakes are in progress, the oldest started gives way (never a
        session: see the module's docstring)."""
        self.stats.handshakes_started += 1
        if self._handshakes.pop(addr, None) is not None:
            self._queued.pop(addr, None)  # the same address again: its last hello wins
        while len(self._handshakes) >= self.params.max_handshakes:
            oldest_addr, oldest = self._handshakes.popitem(last=False)
            self.stats.handshakes_evicted += 1
            self._queued.pop(oldest_addr, None)
            oldest.close()  # no alert: there is nothing to protect it with
            self._collect(oldest)
        self._handshakes[addr] = conn

    def _established(self, addr: Hashable, conn: DtlsConnection) -> None:
        """Move a completed handshake to the sessions: it replaces the address's
        old session, if any, or takes the least recently active one's place
        when max_sessions are up (that one gets close_notify)."""
        if self._handshakes.get(addr) is conn:
            del self._handshakes[addr]
        self._sessions.pop(addr, None)  # a rebooted client's: it has no keys for it
        while len(self._sessions) >= self.params.max_sessions:
            _, oldest = self._sessions.popitem(last=False)
            self.stats.sessions_evicted += 1
            oldest.close()  # its address's handshake, if one runs, goes on
            self._collect(oldest)
        self._sessions[addr] = conn

    def _collect(self, conn: DtlsConnection) -> None:
        addr = conn.peer
        for event in conn.events():
            if isinstance(event, HandshakeDone):
                self.stats.handshakes_done += 1
                self._established(addr, conn)
                for data in self._queued.pop(addr, ()):
                    self._seal(conn, data)
            elif isinstance(event, HandshakeFailed):
                self.stats.handshakes_failed += 1
            self._events.append(event)
        self._out.extend((d, addr) for d in conn.datagrams_to_send())
        self._plain.extend((p, addr) for p in conn.plaintexts())
        if conn.finished:
            if self._handshakes.get(addr) is conn:
                del self._handshakes[addr]
                self._queued.pop(addr, None)
            if self._sessions.get(addr) is conn:
                del self._sessions[addr]


def _starts_with_client_hello(data: bytes) -> bool:
    """Cheap look at the first record: an epoch-0 handshake record with (part of) a ClientHello."""
    return (
        len(data) > 25
        and data[0] == HANDSHAKE
        and data[3:5] == b"\x00\x00"
        and data[13] == messages.CLIENT_HELLO
    )


__all__ = [
    "DtlsLayer",
    "DtlsStats",
    "HandshakeDone",
    "HandshakeFailed",
    "SessionClosed",
]
