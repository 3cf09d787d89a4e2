"""DTLS 1.2 handshake messages for pre-shared keys: encode and decode, byte for byte.

The messages a PSK handshake (RFC 4279 2) uses, in the presentation language
of RFC 5246 7.4 with DTLS's changes (RFC 6347 4.2.1-4.2.2, 4.3.2):

    Handshake         msg_type(1) length(3) message_seq(2) fragment_offset(3)
                      fragment_length(3) body
    ClientHello       client_version(2) random(32) session_id<0..32>
                      cookie<0..2^8-1> cipher_suites<2..2^16-2>
                      compression_methods<1..2^8-1> [extensions<0..2^16-1>]
    HelloVerifyRequest server_version(2) cookie<0..2^8-1>
    ServerHello       server_version(2) random(32) session_id<0..32>
                      cipher_suite(2) compression_method(1) [extensions]
    ServerKeyExchange psk_identity_hint<0..2^16-1>        (RFC 4279 2)
    ServerHelloDone   (empty)
    ClientKeyExchange psk_identity<0..2^16-1>             (RFC 4279 2)
    Finished          verify_data[12]
    Alert             level(1) description(1)             (record type 21)
    ChangeCipherSpec  1                                   (record type 20)

Extensions are kept as (type, data) pairs; the handshake reads the two it
acts on, renegotiation_info (RFC 5746) and extended_master_secret (RFC 7627),
and ignores the others, as RFC 5246 7.4.1.4 allows a server to.

Every decoder raises `DtlsDecodeError` (a DecodeError) and nothing else for
bad bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from iotbench.proto.reader import ByteReader

from .record import DtlsDecodeError

# Handshake types (RFC 5246 7.4, RFC 6347 4.3.2).
CLIENT_HELLO = 1
SERVER_HELLO = 2
HELLO_VERIFY_REQUEST = 3
SERVER_KEY_EXCHANGE = 12
SERVER_HELLO_DONE = 14
CLIENT_KEY_EXCHANGE = 16
FINISHED = 20
HANDSHAKE_TYPES = frozenset(
    {
        0,  # hello_request: never sent by this implementation, but well formed
        CLIENT_HELLO,
        SERVER_HELLO,
        HELLO_VERIFY_REQUEST,
        11,  # certificate
        SERVER_KEY_EXCHANGE,
        13,  # certificate_request
        SERVER_HELLO_DONE,
        15,  # certificate_verify
        CLIENT_KEY_EXCHANGE,
        FINISHED,
    }
)

HANDSHAKE_HEADER_LEN = 12
MAX_HANDSHAKE_LEN = (1 << 24) - 1
DTLS_1_0 = (254, 255)  # HelloVerifyRequest's version (RFC 6347 4.2.1)
DTLS_1_2 = (254, 253)

# Cipher suites and extensions this implementation knows by name.
TLS_PSK_WITH_AES_128_CCM_8 = 0xC0A8  # RFC 6655 4
TLS_EMPTY_RENEGOTIATION_INFO_SCSV = 0x00FF  # RFC 5746 3.3
EXT_EXTENDED_MASTER_SECRET = 0x0017  # RFC 7627 5.1
EXT_RENEGOTIATION_INFO = 0xFF01  # RFC 5746 3.2
NULL_COMPRESSION = 0
RANDOM_LEN = 32
VERIFY_DATA_LEN = 12  # RFC 5246 7.4.9

Extensions = tuple[tuple[int, bytes], ...]


def _reader(data: bytes) -> ByteReader:
    """A reader of one message body; every overrun is a DtlsDecodeError naming the field."""
    return ByteReader(data, DtlsDecodeError)


def _vector(length_size: int, data: bytes) -> bytes:
    return len(data).to_bytes(length_size, "big") + data


# --------------------------------------------------------------------------- framing


@dataclass(frozen=True, slots=True)
class HandshakeFragment:
    """One handshake message, or a piece of it (RFC 6347 4.2.3)."""

    msg_type: int
    length: int  # of the whole message body
    message_seq: int
    fragment_offset: int
    body: bytes  # this fragment's bytes

    def encode(self) -> bytes:
        return (
            struct.pack("!B", self.msg_type)
            + self.length.to_bytes(3, "big")
            + struct.pack("!H", self.message_seq)
            + self.fragment_offset.to_bytes(3, "big")
            + len(self.body).to_bytes(3, "big")
            + self.body
        )

    @property
    def whole(self) -> bool:
        return self.fragment_offset == 0 and len(self.body) == self.length


def decode_fragments(payload: bytes) -> list[HandshakeFragment]:
    """Every handshake fragment in one record's payload (a record may carry several)."""
    out = []
    r = _reader(payload)
    while not r.at_end():
        msg_type = r.uint(1, "handshake type")
        if msg_type not in HANDSHAKE_TYPES:
            raise DtlsDecodeError(f"unknown handshake type {msg_type}")
        length = r.uint(3, "handshake length")
        seq = r.uint(2, "message_seq")
        offset = r.uint(3, "fragment_offset")
        body = r.vector(3, "handshake fragment")
        if offset + len(body) > length:
            raise DtlsDecodeError(
                f"fragment {offset}+{len(body)} runs past the message's {length} bytes"
            )
        out.append(HandshakeFragment(msg_type, length, seq, offset, body))
    if not out:
        raise DtlsDecodeError("a handshake record with no handshake message")
    return out


def whole_message(msg_type: int, message_seq: int, body: bytes) -> HandshakeFragment:
    return HandshakeFragment(msg_type, len(body), message_seq, 0, body)


# --------------------------------------------------------------------------- bodies


def _encode_extensions(extensions: Extensions) -> bytes:
    if not extensions:
        return b""
    blob = b"".join(struct.pack("!H", t) + _vector(2, data) for t, data in extensions)
    return _vector(2, blob)


def _decode_extensions(r: ByteReader) -> Extensions:
    if r.at_end():
        return ()
    blob = _reader(r.vector(2, "extensions"))
    out = []
    while not blob.at_end():
        ext_type = blob.uint(2, "extension type")
        out.append((ext_type, blob.vector(2, "extension data")))
    if len({t for t, _ in out}) != len(out):
        raise DtlsDecodeError("an extension type appears twice (RFC 5246 7.4.1.4)")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ClientHello:
    random: bytes
    cipher_suites: tuple[int, ...]
    cookie: bytes = b""
    session_id: bytes = b""
    compression_methods: tuple[int, ...] = (NULL_COMPRESSION,)
    extensions: Extensions = ()
    version: tuple[int, int] = DTLS_1_2

    def encode(self) -> bytes:
        return (
            bytes(self.version)
            + self.random
            + _vector(1, self.session_id)
            + _vector(1, self.cookie)
            + _vector(2, b"".join(struct.pack("!H", s) for s in self.cipher_suites))
            + _vector(1, bytes(self.compression_methods))
            + _encode_extensions(self.extensions)
        )

    @classmethod
    def decode(cls, body: bytes) -> ClientHello:
        r = _reader(body)
        version = tuple(r.take(2, "client_version"))
        random = r.take(RANDOM_LEN, "random")
        session_id = r.vector(1, "session_id", 0, 32)
        cookie = r.vector(1, "cookie")
        suites = r.vector(2, "cipher_suites", 2, 0xFFFE)
        if len(suites) % 2:
            raise DtlsDecodeError("cipher_suites of an odd number of bytes")
        compression = r.vector(1, "compression_methods", 1)
        extensions = _decode_extensions(r)
        r.done("ClientHello")
        return cls(
            random,
            tuple(struct.unpack(f"!{len(suites) // 2}H", suites)),
            cookie,
            session_id,
            tuple(compression),
            extensions,
            version,  # type: ignore[arg-type]
        )


@dataclass(frozen=True, slots=True)
class HelloVerifyRequest:
    cookie: bytes
    version: tuple[int, int] = DTLS_1_0

    def encode(self) -> bytes:
        return bytes(self.version) + _vector(1, self.cookie)

    @classmethod
    def decode(cls, body: bytes) -> HelloVerifyRequest:
        r = _reader(body)
        version = tuple(r.take(2, "server_version"))
        cookie = r.vector(1, "cookie", 0, 255)
        r.done("HelloVerifyRequest")
        return cls(cookie, version)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ServerHello:
    random: bytes
    cipher_suite: int
    session_id: bytes = b""
    compression_method: int = NULL_COMPRESSION
    extensions: Extensions = ()
    version: tuple[int, int] = DTLS_1_2

    def encode(self) -> bytes:
        return (
            bytes(self.version)
            + self.random
            + _vector(1, self.session_id)
            + struct.pack("!HB", self.cipher_suite, self.compression_method)
            + _encode_extensions(self.extensions)
        )

    @classmethod
    def decode(cls, body: bytes) -> ServerHello:
        r = _reader(body)
        version = tuple(r.take(2, "server_version"))
        random = r.take(RANDOM_LEN, "random")
        session_id = r.vector(1, "session_id", 0, 32)
        suite = r.uint(2, "cipher_suite")
        compression = r.uint(1, "compression_method")
        extensions = _decode_extensions(r)
        r.done("ServerHello")
        return cls(random, suite, session_id, compression, extensions, version)  # type: ignore[arg-type]


def encode_psk_identity(identity: bytes) -> bytes:
    """ServerKeyExchange's psk_identity_hint and ClientKeyExchange's psk_identity."""
    return _vector(2, identity)


def decode_psk_identity(body: bytes, what: str) -> bytes:
    r = _reader(body)
    identity = r.vector(2, what)
    r.done(what)
    return identity


def decode_finished(body: bytes) -> bytes:
    if len(body) != VERIFY_DATA_LEN:
        raise DtlsDecodeError(f"Finished carries {len(body)} bytes, not {VERIFY_DATA_LEN}")
    return body


def decode_empty(body: bytes, what: str) -> None:
    if body:
        raise DtlsDecodeError(f"{what} must be empty, has {len(body)} bytes")


# --------------------------------------------------------------------------- alerts

WARNING, FATAL = 1, 2
CLOSE_NOTIFY = 0
UNEXPECTED_MESSAGE = 10
BAD_RECORD_MAC = 20
HANDSHAKE_FAILURE = 40
ILLEGAL_PARAMETER = 47
DECODE_ERROR = 50
DECRYPT_ERROR = 51
PROTOCOL_VERSION = 70
INTERNAL_ERROR = 80
UNSUPPORTED_EXTENSION = 110
UNKNOWN_PSK_IDENTITY = 115  # RFC 4279 2

ALERT_NAMES = {
    CLOSE_NOTIFY: "close_notify",
    UNEXPECTED_MESSAGE: "unexpected_message",
    BAD_RECORD_MAC: "bad_record_mac",
    HANDSHAKE_FAILURE: "handshake_failure",
    ILLEGAL_PARAMETER: "illegal_parameter",
    DECODE_ERROR: "decode_error",
    DECRYPT_ERROR: "decrypt_error",
    PROTOCOL_VERSION: "protocol_version",
    INTERNAL_ERROR: "internal_error",
    UNSUPPORTED_EXTENSION: "unsupported_extension",
    UNKNOWN_PSK_IDENTITY: "unknown_psk_identity",
}


@dataclass(frozen=True, slots=True)
class Alert:
    level: int
    description: int

    def encode(self) -> bytes:
        return bytes((self.level, self.description))

    @classmethod
    def decode(cls, payload: bytes) -> Alert:
        if len(payload) != 2:
            raise DtlsDecodeError(f"an alert is 2 bytes, got {len(payload)}")
        if payload[0] not in (WARNING, FATAL):
            raise DtlsDecodeError(f"alert level {payload[0]} is neither warning nor fatal")
        return cls(payload[0], payload[1])

    @property
    def name(self) -> str:
        return ALERT_NAMES.get(self.description, f"alert {self.description}")


CHANGE_CIPHER_SPEC_BODY = b"\x01"
