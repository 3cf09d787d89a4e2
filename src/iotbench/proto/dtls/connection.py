"""One DTLS 1.2 association with one peer, client or server side: a sans-I/O state machine.

The PSK handshake (RFC 6347 4.2.4's flights, RFC 4279's messages):

    client                                        server
    1  ClientHello                      -->
                                        <--   2  HelloVerifyRequest (cookie; layer.py)
    3  ClientHello (cookie)             -->
                                        <--   4  ServerHello, [ServerKeyExchange],
                                                 ServerHelloDone
    5  ClientKeyExchange,
       ChangeCipherSpec, Finished       -->
                                        <--   6  ChangeCipherSpec, Finished

then application data in both directions under epoch 1. Flight 2 is sent
by the layer without any state (layer.py); a connection on the server side
starts at flight 3.

Timers and retransmission (RFC 6347 4.2.4): the side that sent a flight and
waits for an answer retransmits the whole flight when the timer fires (1 s,
doubling, capped; params.py), with new record sequence numbers; the side
that receives a retransmission of the flight before its own last one sends
its last flight again. Flight 6 is never retransmitted on a timer, only on
receiving flight 5 again. After `max_retransmissions` the handshake fails.

Reading records (RFC 6347 4.1.2.7): a record that fails to parse, fails
authentication, is a replay (4.1.2.6) or belongs to an epoch this side
cannot read yet is discarded silently; only a handshake that cannot go on
ends with a fatal alert. Handshake messages that arrive early are kept
(bounded) until their turn; fragments are reassembled (fragments.py).

Time comes in as `now`; randomness from the `random.Random` handed in.
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from dataclasses import dataclass
from enum import StrEnum

from iotbench.proto.crypto_work import WorkMeter
from iotbench.proto.replay import ReplayWindow
from iotbench.proto.retransmit import Retransmission
from iotbench.proto.sansio import DrainedQueues

from . import keys, messages
from .fragments import Reassembler, fragment
from .messages import (
    CHANGE_CIPHER_SPEC_BODY,
    EXT_EXTENDED_MASTER_SECRET,
    EXT_RENEGOTIATION_INFO,
    TLS_EMPTY_RENEGOTIATION_INFO_SCSV,
    TLS_PSK_WITH_AES_128_CCM_8,
    Alert,
    ClientHello,
    HandshakeFragment,
    HelloVerifyRequest,
    ServerHello,
)
from .params import DtlsParams, PskClientCredentials, PskServerCredentials
from .record import (
    APPLICATION_DATA,
    HEADER_LEN,
    Ccm8Protection,
    DtlsDecodeError,
    RecordHeader,
    plain_record,
    split_records,
)

CHANGE_CIPHER_SPEC, ALERT, HANDSHAKE = 20, 21, 22
PROTECTION_OVERHEAD = 8 + 8  # CCM-8's explicit nonce and tag (record.py)
MAX_EARLY_MESSAGES = 8  # handshake messages kept until their turn


class State(StrEnum):
    """Where a connection's handshake is (the values are what messages show)."""

    NEW = ""  # server: the verified ClientHello not yet read
    WAIT_HELLO = "wait-server-hello"  # client: flight 1 or 3 sent
    WAIT_HELLO_DONE = "wait-server-hello-done"  # client: ServerHello read
    WAIT_CLIENT_KEY = "wait-client-key-exchange"  # server: flight 4 sent
    WAIT_FINISHED = "wait-finished"  # either side: keys derived, peer's Finished due
    ESTABLISHED = "established"
    CLOSED = "closed"
    FAILED = "failed"


WAIT_HELLO, WAIT_HELLO_DONE = State.WAIT_HELLO, State.WAIT_HELLO_DONE
WAIT_CLIENT_KEY, WAIT_FINISHED = State.WAIT_CLIENT_KEY, State.WAIT_FINISHED
ESTABLISHED, CLOSED, FAILED = State.ESTABLISHED, State.CLOSED, State.FAILED

#: The handshake's moves (RFC 6347 4.2.4's flights): from each state, where it
#: may go next (_enter); closing and failing are possible from any state.
_NEXT: dict[State, tuple[State, ...]] = {
    State.NEW: (WAIT_HELLO, WAIT_CLIENT_KEY),
    WAIT_HELLO: (WAIT_HELLO_DONE,),
    WAIT_HELLO_DONE: (WAIT_FINISHED,),
    WAIT_CLIENT_KEY: (WAIT_FINISHED,),
    WAIT_FINISHED: (ESTABLISHED,),
    ESTABLISHED: (),
    CLOSED: (),
    FAILED: (),
}


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class HandshakeDone:
    """The session is up: application data may flow."""

    peer: Hashable
    role: str  # "client" or "server"
    psk_identity: bytes
    duration_s: float
    #: what the handshake cost this side: datagrams and bytes sent and
    #: received (HelloVerifyRequest included on the client side; on the
    #: server side the stateless flight 2 is counted by the layer), and
    #: flights sent again on timeout or on the peer's retransmission
    datagrams_sent: int
    bytes_sent: int
    datagrams_received: int
    bytes_received: int
    retransmissions: int


@dataclass(frozen=True, slots=True)
class HandshakeFailed:
    peer: Hashable
    reason: str  # "timeout", an alert's name (sent or received), or "closed"


@dataclass(frozen=True, slots=True)
class SessionClosed:
    peer: Hashable
    by_peer: bool


#: Which method takes the next handshake message, by role and state.


class _Fatal(Exception):
    """Ends the handshake with a fatal alert of this description."""

    def __init__(self, description: int, detail: str) -> None:
        super().__init__(detail)
        self.description = description


# --------------------------------------------------------------------------- the connection


class DtlsConnection(DrainedQueues):
    """One peer's association. Create with `client()` or, from a verified ClientHello, `server()`."""

    def __init__(
        self,
        peer: Hashable,
        role: str,
        rng: random.Random,
        params: DtlsParams,
        meter: WorkMeter | None = None,
    ) -> None:
        self.peer = peer
        self.role = role
        self.rng = rng
        self.params = params
        self.state = State.NEW
        self.psk_identity = b""
        self.last_activity_s = 0.0
        self.meter = meter or WorkMeter()  # its cryptography (proto/crypto_work.py)
        # handshake
        self._started_s = 0.0
        self._client_random = b""
        self._server_random = b""
        self._ems = False
        self._transcript: list[bytes] = []
        self._master = b""
        self._send_seq = 0  # next handshake message_seq to send
        self._receive_seq = 0  # next handshake message_seq expected
        self._early: dict[int, HandshakeFragment] = {}
        self._reassembler = Reassembler()
        self._flight: list[tuple[int, int, bytes]] = []  # (content type, epoch, payload)
        self._retx: Retransmission | None = None
        self._hint: bytes | None = None
        self._credentials: PskClientCredentials | None = None  # set by client()
        self._server_credentials: PskServerCredentials | None = None  # set by server()
        # records
        self._write_epoch = 0
        self._write_seq = {0: 0, 1: 0}
        self._read_epoch = 0
        self._write_protection: Ccm8Protection | None = None
        self._read_protection: Ccm8Protection | None = None
        self._pending_write: Ccm8Protection | None = None
        self._pending_read: Ccm8Protection | None = None
        self._replay = ReplayWindow(params.replay_window)
        # outputs
        self._out: list[bytes] = []
        self._plain: list[bytes] = []
        self._events: list[object] = []
        # the handshake's own cost
        self._hs = [0, 0, 0, 0, 0]  # sent dgrams, sent bytes, received dgrams, bytes, retx

    # -- creation

    @classmethod
    def client(
        cls,
        now: float,
        peer: Hashable,
        rng: random.Random,
        params: DtlsParams,
        credentials: PskClientCredentials,
        meter: WorkMeter | None = None,
    ) -> DtlsConnection:
        """Start a handshake towards `peer`: flight 1 is queued."""
        conn = cls(peer, "client", rng, params, meter)
        conn._credentials = credentials
        conn._started_s = conn.last_activity_s = now
        conn._client_random = _random_bytes(rng, 32)
        conn._enter(WAIT_HELLO)
        conn._send_client_hello(now, cookie=b"")
        return conn

    @classmethod
    def server(
        cls,
        now: float,
        peer: Hashable,
        rng: random.Random,
        params: DtlsParams,
        credentials: PskServerCredentials,
        hello: HandshakeFragment,
        hello_record_sequence: int,
        received_bytes: int,
        meter: WorkMeter | None = None,
    ) -> DtlsConnection:
        """Answer a ClientHello whose cookie the layer has verified: flight 4 is queued."""
        conn = cls(peer, "server", rng, params, meter)
        # Numbered on from the ClientHello's record, as the stateless
        # HelloVerifyRequest echoed the earlier one's (RFC 6347 4.2.1): a
        # client's replay window would discard a ServerHello numbered again
        # from 0 after a HelloVerifyRequest numbered 0.
        conn._write_seq[0] = hello_record_sequence
        conn._server_credentials = credentials
        conn._started_s = conn.last_activity_s = now
        conn._receive_seq = hello.message_seq
        conn._send_seq = hello.message_seq  # RFC 6347 4.2.2, as after a stateless cookie
        conn._hs[2:4] = [1, received_bytes]
        conn._run(lambda: conn._on_handshake(now, hello))
        return conn

    # -- outputs

    def next_timer(self) -> float | None:
        return self._retx.deadline_s if self._retx is not None else None

    @property
    def client_random(self) -> bytes:
        return self._client_random

    @property
    def established(self) -> bool:
        return self.state == ESTABLISHED

    @property
    def finished(self) -> bool:
        return self.state in (CLOSED, FAILED)

    # -- inputs

    def handle_timer(self, now: float) -> None:
        retx = self._retx
        if retx is None or now < retx.deadline_s:
            return
        if retx.on_timeout(now):
            self._hs[4] += 1
            self._send_flight()
        else:
            self._retx = None
            self._fail("timeout")

    def receive(self, now: float, datagram: bytes) -> None:
        """One datagram from the peer. Never raises for any bytes."""
        if self.finished:
            return
        self.last_activity_s = now
        if not self.established:
            self._hs[2] += 1
            self._hs[3] += len(datagram)
        try:
            records = split_records(datagram)
        except DtlsDecodeError:
            return
        self._run(lambda: self._receive_records(now, records))

    def send(self, data: bytes) -> bytes:
        """Application data for the peer, in one record (needs an established
        session); returns the record, also queued for the wire."""
        if not self.established:
            raise RuntimeError("application data before the handshake has finished")
        record = self._record(APPLICATION_DATA, 1, data)
        self._out.append(record)
        return record

    def close(self) -> None:
        """Send close_notify (RFC 5246 7.2.1) and forget the session."""
        if self.established:
            alert = Alert(messages.WARNING, messages.CLOSE_NOTIFY).encode()
            self._out.append(self._record(ALERT, 1, alert))
        if not self.finished:
            if self.established:
                self._events.append(SessionClosed(self.peer, by_peer=False))
            else:
                self._events.append(HandshakeFailed(self.peer, "closed"))
        self._enter(CLOSED)
        self._retx = None

    # -- records in

    def _receive_records(self, now: float, records: list[tuple[RecordHeader, bytes]]) -> None:
        answer_retransmission = False
        for header, record in records:
            payload = self._open(header, record)
            if payload is None:
                continue
            if header.content_type == HANDSHAKE:
                answer_retransmission |= self._on_handshake_record(now, payload)
            elif header.content_type == CHANGE_CIPHER_SPEC:
                self._on_change_cipher_spec(payload)
            elif header.content_type == ALERT:
                self._on_alert(payload)
            elif header.content_type == APPLICATION_DATA and self.established:
                self._plain.append(payload)
            if self.finished:
                return
        if answer_retransmission and self._flight and self._retx is None:
            # The peer did not get our last flight (RFC 6347 4.2.4): send it again.
            self._hs[4] += 1
            self._send_flight()

    def _open(self, header: RecordHeader, record: bytes) -> bytes | None:
        """The record's payload, or None when it is to be discarded."""
        if header.epoch == 0:
            # Epoch 0 stays readable for handshake records (a peer that lost
            # our last flight retransmits its own), never for application
            # data, and after the handshake for nothing else: an alert in the
            # clear could be anyone's.
            if header.content_type == APPLICATION_DATA or (
                self.established and header.content_type != HANDSHAKE
            ):
                return None
            return record[HEADER_LEN:]
        if header.epoch != self._read_epoch:
            return None
        if not self._replay.is_fresh(header.sequence):
            return None
        try:
            assert self._read_protection is not None  # set with _read_epoch = 1
            _, payload = self._read_protection.unprotect(record)
        except DtlsDecodeError:
            if self.state == WAIT_FINISHED:
                # The first record under the new keys fails: the two sides
                # derived different keys, i.e. hold different PSKs. RFC 6347
                # 4.1.2.7 allows a fatal bad_record_mac here; it tells a user
                # at once what silence would only show after every retry.
                raise _Fatal(messages.BAD_RECORD_MAC, "record under the new keys fails") from None
            return None
        self._replay.record(header.sequence)
        return payload

    def _on_handshake_record(self, now: float, payload: bytes) -> bool:
        """Take a record's handshake fragments; True when the peer retransmitted."""
        try:
            pieces = messages.decode_fragments(payload)
        except DtlsDecodeError:
            return False
        retransmitted = False
        for piece in pieces:
            if piece.message_seq < self._receive_seq:
                retransmitted = True
                continue
            if self.established or piece.message_seq - self._receive_seq >= MAX_EARLY_MESSAGES:
                # After the handshake a new handshake message (a renegotiation,
                # never done here, or an unauthenticated epoch-0 forgery) must
                # not end the session; only a retransmission is answered.
                continue
            try:
                whole = self._reassembler.add(piece)
            except DtlsDecodeError:
                continue
            if whole is not None:
                self._early[whole.message_seq] = whole
        while self._receive_seq in self._early and not self.finished:
            self._on_handshake(now, self._early.pop(self._receive_seq))
        return retransmitted

    def _on_change_cipher_spec(self, payload: bytes) -> None:
        if payload != CHANGE_CIPHER_SPEC_BODY or self._pending_read is None:
            return  # early, duplicate or malformed: the peer's retransmission repairs it
        self._read_protection, self._pending_read = self._pending_read, None
        self._read_epoch = 1

    def _on_alert(self, payload: bytes) -> None:
        try:
            alert = Alert.decode(payload)
        except DtlsDecodeError:
            return
        if alert.description == messages.CLOSE_NOTIFY:
            if self.established:
                reply = Alert(messages.WARNING, messages.CLOSE_NOTIFY).encode()
                self._out.append(self._record(ALERT, 1, reply))
                self._events.append(SessionClosed(self.peer, by_peer=True))
            else:
                self._events.append(HandshakeFailed(self.peer, "close_notify"))
            self._enter(CLOSED)
            self._retx = None
        elif alert.level == messages.FATAL:
            self._fail(alert.name)

    # -- the handshake

    def _run(self, step) -> None:
        try:
            step()
        except _Fatal as fatal:
            self._send_alert(fatal.description)
            self._fail(messages.ALERT_NAMES.get(fatal.description, str(fatal.description)))

    def _on_handshake(self, now: float, msg: HandshakeFragment) -> None:
        self._receive_seq = msg.message_seq + 1
        self._reassembler.forget_before(self._receive_seq)
        handler = _HANDLERS[self.role].get(self.state)
        if handler is None:
            raise _Fatal(messages.UNEXPECTED_MESSAGE, f"handshake message in state {self.state}")
        try:
            handler(self, now, msg)
        except DtlsDecodeError as exc:
            raise _Fatal(messages.DECODE_ERROR, str(exc)) from None

    # client side

    def _send_client_hello(self, now: float, cookie: bytes) -> None:
        extensions: list[tuple[int, bytes]] = []
        if self.params.extended_master_secret:
            extensions.append((EXT_EXTENDED_MASTER_SECRET, b""))
        hello = ClientHello(
            random=self._client_random,
            cipher_suites=(TLS_PSK_WITH_AES_128_CCM_8, TLS_EMPTY_RENEGOTIATION_INFO_SCSV),
            cookie=cookie,
            extensions=tuple(extensions),
        )
        self._transcript = []  # RFC 6347 4.2.1: the hash starts with the hello that counts
        self._new_flight(now, [self._handshake_message(messages.CLIENT_HELLO, hello.encode())])

    def _client_on_hello(self, now: float, msg: HandshakeFragment) -> None:
        if msg.msg_type == messages.HELLO_VERIFY_REQUEST:
            verify = HelloVerifyRequest.decode(msg.body)
            self._send_client_hello(now, verify.cookie)
            return
        if msg.msg_type != messages.SERVER_HELLO:
            raise _Fatal(messages.UNEXPECTED_MESSAGE, f"handshake type {msg.msg_type}")
        hello = ServerHello.decode(msg.body)
        if hello.version != messages.DTLS_1_2:
            raise _Fatal(messages.PROTOCOL_VERSION, f"server chose version {hello.version}")
        if hello.cipher_suite != TLS_PSK_WITH_AES_128_CCM_8 or hello.compression_method:
            raise _Fatal(messages.ILLEGAL_PARAMETER, "server chose a suite we did not offer")
        extensions = dict(hello.extensions)
        if extensions.get(EXT_RENEGOTIATION_INFO, b"\x00") != b"\x00":
            raise _Fatal(messages.HANDSHAKE_FAILURE, "renegotiation_info not empty (RFC 5746)")
        if EXT_EXTENDED_MASTER_SECRET in extensions and not self.params.extended_master_secret:
            raise _Fatal(messages.UNSUPPORTED_EXTENSION, "extended_master_secret not offered")
        self._ems = EXT_EXTENDED_MASTER_SECRET in extensions
        self._server_random = hello.random
        self._transcript.append(msg.encode())
        self._enter(WAIT_HELLO_DONE)

    def _client_on_server_flight(self, now: float, msg: HandshakeFragment) -> None:
        if msg.msg_type == messages.SERVER_KEY_EXCHANGE and self._hint is None:
            self._hint = messages.decode_psk_identity(msg.body, "psk_identity_hint")
            self._transcript.append(msg.encode())
            return
        if msg.msg_type != messages.SERVER_HELLO_DONE:
            raise _Fatal(messages.UNEXPECTED_MESSAGE, f"handshake type {msg.msg_type}")
        messages.decode_empty(msg.body, "ServerHelloDone")
        self._transcript.append(msg.encode())
        credentials = self._credentials
        assert credentials is not None  # a client's handshake
        self.psk_identity = credentials.identity
        key_exchange = self._handshake_message(
            messages.CLIENT_KEY_EXCHANGE, messages.encode_psk_identity(credentials.identity)
        )
        self._derive_keys(credentials.key)
        finished = self._handshake_message(messages.FINISHED, self._verify_data(client=True))
        self._new_flight(
            now,
            [key_exchange, (CHANGE_CIPHER_SPEC, 0, CHANGE_CIPHER_SPEC_BODY), finished],
        )
        self._enter(WAIT_FINISHED)

    # server side

    def _server_on_client_hello(self, now: float, msg: HandshakeFragment) -> None:
        if msg.msg_type != messages.CLIENT_HELLO:
            raise _Fatal(messages.UNEXPECTED_MESSAGE, f"handshake type {msg.msg_type}")
        hello = ClientHello.decode(msg.body)
        if hello.version[0] != 254 or hello.version[1] > 253:
            raise _Fatal(messages.PROTOCOL_VERSION, f"client offers version {hello.version}")
        if TLS_PSK_WITH_AES_128_CCM_8 not in hello.cipher_suites:
            raise _Fatal(messages.HANDSHAKE_FAILURE, "no cipher suite in common")
        if messages.NULL_COMPRESSION not in hello.compression_methods:
            raise _Fatal(messages.HANDSHAKE_FAILURE, "null compression not offered")
        offered = dict(hello.extensions)
        if offered.get(EXT_RENEGOTIATION_INFO, b"\x00") != b"\x00":
            raise _Fatal(messages.HANDSHAKE_FAILURE, "renegotiation_info not empty (RFC 5746)")
        self._client_random = hello.random
        self._server_random = _random_bytes(self.rng, 32)
        self._transcript = [msg.encode()]
        extensions: list[tuple[int, bytes]] = []
        if (
            EXT_RENEGOTIATION_INFO in offered
            or TLS_EMPTY_RENEGOTIATION_INFO_SCSV in hello.cipher_suites
        ):
            extensions.append((EXT_RENEGOTIATION_INFO, b"\x00"))  # RFC 5746 3.6
        if EXT_EXTENDED_MASTER_SECRET in offered and self.params.extended_master_secret:
            extensions.append((EXT_EXTENDED_MASTER_SECRET, b""))
            self._ems = True
        server_hello = ServerHello(
            random=self._server_random,
            cipher_suite=TLS_PSK_WITH_AES_128_CCM_8,
            session_id=b"",  # no session resumption: nothing to cache
            extensions=tuple(extensions),
        )
        flight = [self._handshake_message(messages.SERVER_HELLO, server_hello.encode())]
        assert self._server_credentials is not None  # a server's handshake
        hint = self._server_credentials.hint
        if hint:
            flight.append(
                self._handshake_message(
                    messages.SERVER_KEY_EXCHANGE, messages.encode_psk_identity(hint)
                )
            )
        flight.append(self._handshake_message(messages.SERVER_HELLO_DONE, b""))
        self._new_flight(now, flight)
        self._enter(WAIT_CLIENT_KEY)

    def _server_on_client_key_exchange(self, now: float, msg: HandshakeFragment) -> None:
        if msg.msg_type != messages.CLIENT_KEY_EXCHANGE:
            raise _Fatal(messages.UNEXPECTED_MESSAGE, f"handshake type {msg.msg_type}")
        identity = messages.decode_psk_identity(msg.body, "psk_identity")
        assert self._server_credentials is not None  # a server's handshake
        key = self._server_credentials.key_for(identity)
        if key is None:
            raise _Fatal(messages.UNKNOWN_PSK_IDENTITY, "unknown PSK identity")  # RFC 4279 2
        self.psk_identity = identity
        self._transcript.append(msg.encode())
        self._derive_keys(key)
        self._enter(WAIT_FINISHED)

    # both sides

    def _on_finished(self, now: float, msg: HandshakeFragment) -> None:
        if msg.msg_type != messages.FINISHED or self._read_epoch != 1:
            raise _Fatal(messages.UNEXPECTED_MESSAGE, "Finished expected under the new keys")
        expected = self._verify_data(client=self.role == "server")
        if messages.decode_finished(msg.body) != expected:
            raise _Fatal(messages.DECRYPT_ERROR, "Finished does not verify (wrong key?)")
        self._transcript.append(msg.encode())
        if self.role == "server":
            finished = self._handshake_message(messages.FINISHED, self._verify_data(client=False))
            # Flight 6 is the last: sent once, again only if flight 5 comes again.
            self._new_flight(now, [(CHANGE_CIPHER_SPEC, 0, CHANGE_CIPHER_SPEC_BODY), finished])
            self._retx = None
        else:
            # The client's flight 5 is never sent again once flight 6 is in: a
            # late copy of flight 6 answers a retransmission, and answering it
            # in turn would make the two sides echo each other for ever.
            self._retx = None
            self._flight = []
        self._enter(ESTABLISHED)
        self._transcript = []
        self._events.append(
            HandshakeDone(
                self.peer,
                self.role,
                self.psk_identity,
                now - self._started_s,
                *self._hs,
            )
        )

    def _derive_keys(self, psk: bytes) -> None:
        premaster = keys.psk_premaster(psk)
        meter = self.meter
        session_hash = keys.sha256(b"".join(self._transcript), meter) if self._ems else None
        self._master = keys.master_secret(
            premaster, self._client_random, self._server_random, session_hash, meter
        )
        block = keys.key_block(self._master, self._client_random, self._server_random, meter)
        client = Ccm8Protection(block["client_write_key"], block["client_write_iv"], meter)
        server = Ccm8Protection(block["server_write_key"], block["server_write_iv"], meter)
        mine, theirs = (client, server) if self.role == "client" else (server, client)
        self._write_protection = mine
        self._pending_read = theirs

    def _verify_data(self, client: bool) -> bytes:
        transcript_hash = keys.sha256(b"".join(self._transcript), self.meter)
        return keys.verify_data(self._master, client, transcript_hash, self.meter)

    def _handshake_message(self, msg_type: int, body: bytes) -> tuple[int, int, bytes]:
        """A whole handshake message for the flight, added to the transcript."""
        msg = messages.whole_message(msg_type, self._send_seq, body)
        self._send_seq += 1
        encoded = msg.encode()
        self._transcript.append(encoded)
        # A Finished is sent under the new keys, in epoch 1.
        epoch = 1 if msg_type == messages.FINISHED else 0
        return (HANDSHAKE, epoch, encoded)

    # -- flights and records out

    def _new_flight(self, now: float, flight: list[tuple[int, int, bytes]]) -> None:
        self._flight = flight
        self._retx = Retransmission(self.params.schedule, self.rng)
        self._retx.start(now)
        self._send_flight()

    def _send_flight(self) -> None:
        """The current flight in as few datagrams as fit (new record numbers each time)."""
        limit = self.params.max_datagram_bytes
        records: list[bytes] = []
        for content_type, epoch, payload in self._flight:
            if content_type != HANDSHAKE:
                records.append(self._record(content_type, epoch, payload))
                continue
            room = limit - HEADER_LEN - messages.HANDSHAKE_HEADER_LEN
            room -= PROTECTION_OVERHEAD if epoch else 0
            whole = messages.decode_fragments(payload)[0]
            for piece in fragment(whole, room):
                records.append(self._record(HANDSHAKE, epoch, piece.encode()))
        datagram = b""
        for record in records:
            if datagram and len(datagram) + len(record) > limit:
                self._emit(datagram)
                datagram = b""
            datagram += record
        if datagram:
            self._emit(datagram)

    def _emit(self, datagram: bytes) -> None:
        self._hs[0] += 1
        self._hs[1] += len(datagram)
        self._out.append(datagram)

    def _record(self, content_type: int, epoch: int, payload: bytes) -> bytes:
        sequence = self._write_seq[epoch]
        self._write_seq[epoch] = sequence + 1
        if epoch == 0:
            return plain_record(content_type, 0, sequence, payload)
        assert self._write_protection is not None  # epoch 1 is written once keys exist
        return self._write_protection.protect(payload, epoch, sequence, content_type)

    def _send_alert(self, description: int) -> None:
        alert = Alert(messages.FATAL, description).encode()
        epoch = 1 if self._write_protection is not None and self.established else 0
        self._out.append(self._record(ALERT, epoch, alert))

    def _enter(self, state: State) -> None:
        """The one place the handshake moves: to `state`, if _NEXT allows it from
        here (closing and failing always are); anything else is a bug of ours."""
        if state not in _NEXT[self.state] and state not in (CLOSED, FAILED):
            raise RuntimeError(
                f"DTLS handshake cannot go from {self.state.value!r} to {state.value!r}"
            )
        self.state = state

    def _fail(self, reason: str) -> None:
        if self.finished:
            return
        self._enter(FAILED)
        self._retx = None
        self._events.append(HandshakeFailed(self.peer, reason))


#: Which method reads a handshake message, by role and state (others: unexpected_message).
_HANDLERS = {
    "client": {
        WAIT_HELLO: DtlsConnection._client_on_hello,
        WAIT_HELLO_DONE: DtlsConnection._client_on_server_flight,
        WAIT_FINISHED: DtlsConnection._on_finished,
    },
    "server": {
        State.NEW: DtlsConnection._server_on_client_hello,  # the verified ClientHello
        WAIT_CLIENT_KEY: DtlsConnection._server_on_client_key_exchange,
        WAIT_FINISHED: DtlsConnection._on_finished,
    },
}


def _random_bytes(rng: random.Random, n: int) -> bytes:
    return rng.getrandbits(8 * n).to_bytes(n, "big")
