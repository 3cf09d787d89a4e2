"""DTLS 1.2 records (RFC 6347 4.1) and their protection with AES-128-CCM-8 (RFC 6655).

The record layer of proto/dtls: a datagram holds one or more records
(RFC 6347 4.1.1), each a header and a payload; epoch 0's payloads are in the
clear, later epochs' are protected with the keys the handshake derived
(TLS_PSK_WITH_AES_128_CCM_8, the cipher suite RFC 7252 9.1.3.1 makes
mandatory for CoAP with pre-shared keys).

    record = header (13) | nonce_explicit (8) | ciphertext (n) | tag (8)
    header = type (1) | version 254.253 (2) | epoch (2) | sequence_number (6) | length (2)

- nonce (RFC 6655 3): the 4-byte salt (client_write_IV or server_write_IV
  from the key block) then nonce_explicit; nonce_explicit is the 8-byte
  epoch and sequence number, as RFC 6655 3 recommends for DTLS.
- additional data (RFC 5246 6.2.3.3 with RFC 6347 4.1.2.1's seq_num):
  epoch | sequence number | type | version | plaintext length.

So protection adds 13 + 8 + 8 = 29 bytes to each datagram.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESCCM

from iotbench.proto import crypto_work
from iotbench.proto.crypto_work import WorkMeter
from iotbench.proto.errors import DecodeError

HEADER_LEN = 13
EXPLICIT_NONCE_LEN = 8
TAG_LEN = 8  # CCM-8
AAD_LEN = 13  # seq_num (8), type, version, length (RFC 5246 6.2.3.3)
OVERHEAD = HEADER_LEN + EXPLICIT_NONCE_LEN + TAG_LEN
DTLS_1_2 = (254, 253)
#: RFC 6347 4.1: before the version is settled, a peer may send records
#: stamped DTLS 1.0 (OpenSSL's HelloVerifyRequest is); both are read.
RECORD_VERSIONS = frozenset({DTLS_1_2, (254, 255)})
APPLICATION_DATA = 23
CONTENT_TYPES = (20, 21, 22, 23)  # change_cipher_spec, alert, handshake, application_data
MAX_SEQUENCE = (1 << 48) - 1
MAX_PLAINTEXT = 1 << 14  # RFC 5246 6.2.1

_HEADER = struct.Struct("!BBBH6sH")


class DtlsDecodeError(DecodeError):
    """Not a DTLS 1.2 record we can open (malformed, or it fails authentication)."""


@dataclass(frozen=True, slots=True)
class RecordHeader:
    content_type: int
    epoch: int
    sequence: int
    length: int
    version: tuple[int, int] = DTLS_1_2

    def encode(self) -> bytes:
        return _HEADER.pack(
            self.content_type,
            *self.version,
            self.epoch,
            self.sequence.to_bytes(6, "big"),
            self.length,
        )

    @property
    def seq_num(self) -> bytes:
        """The 64-bit epoch and sequence number (RFC 6347 4.1.2.1)."""
        return struct.pack("!H", self.epoch) + self.sequence.to_bytes(6, "big")


def plain_record(content_type: int, epoch: int, sequence: int, payload: bytes) -> bytes:
    """A record whose payload travels in the clear (epoch 0, before ChangeCipherSpec)."""
    return RecordHeader(content_type, epoch, sequence, len(payload)).encode() + payload


def split_records(datagram: bytes) -> list[tuple[RecordHeader, bytes]]:
    """Every record in a datagram, as (header, the whole record's bytes).

    A record that does not parse ends the datagram: RFC 6347 4.1.2.7 lets a
    receiver discard what it cannot read, and what came before stays valid.
    Raises DtlsDecodeError only when not even the first record parses.
    """
    out: list[tuple[RecordHeader, bytes]] = []
    pos = 0
    while pos < len(datagram):
        if len(datagram) - pos < HEADER_LEN:
            break
        length = int.from_bytes(datagram[pos + 11 : pos + 13], "big")
        record = datagram[pos : pos + HEADER_LEN + length]
        try:
            header = decode_header(record)
        except DtlsDecodeError:
            if not out:
                raise
            break
        out.append((header, record))
        pos += len(record)
    if not out:
        raise DtlsDecodeError(f"a DTLS record header is {HEADER_LEN} bytes, got {len(datagram)}")
    return out


def decode_header(record: bytes) -> RecordHeader:
    if len(record) < HEADER_LEN:
        raise DtlsDecodeError(f"a DTLS record header is {HEADER_LEN} bytes, got {len(record)}")
    ctype, major, minor, epoch, seq, length = _HEADER.unpack_from(record)
    if ctype not in CONTENT_TYPES:
        raise DtlsDecodeError(f"unknown record content type {ctype}")
    if (major, minor) not in RECORD_VERSIONS:
        raise DtlsDecodeError(f"record version {major}.{minor} is not DTLS 1.2 or 1.0")
    if len(record) - HEADER_LEN != length:
        raise DtlsDecodeError(
            f"record length field {length}, {len(record) - HEADER_LEN} bytes follow"
        )
    return RecordHeader(ctype, epoch, int.from_bytes(seq, "big"), length, (major, minor))


class Ccm8Protection:
    """One direction's record protection: a 16-byte write key and its 4-byte salt."""

    def __init__(self, key: bytes, salt: bytes, meter: WorkMeter | None = None) -> None:
        """`meter` counts the AES work of each record sealed or opened."""
        if len(key) != 16 or len(salt) != 4:
            raise ValueError("AES-128-CCM-8 takes a 16-byte key and a 4-byte salt (write IV)")
        self._aead = AESCCM(bytes(key), tag_length=TAG_LEN)
        self._salt = bytes(salt)
        self._meter = meter

    def protect(
        self, plaintext: bytes, epoch: int, sequence: int, content_type: int = APPLICATION_DATA
    ) -> bytes:
        if not 0 <= epoch <= 0xFFFF or not 0 <= sequence <= MAX_SEQUENCE:
            raise ValueError("epoch is 16 bits and the sequence number 48 bits")
        if len(plaintext) > MAX_PLAINTEXT:
            raise ValueError(f"a record holds at most {MAX_PLAINTEXT} bytes of plaintext")
        length = EXPLICIT_NONCE_LEN + len(plaintext) + TAG_LEN
        header = RecordHeader(content_type, epoch, sequence, length)
        explicit = header.seq_num
        if self._meter is not None:
            self._meter.add(crypto_work.ccm(len(plaintext), AAD_LEN))
        sealed = self._aead.encrypt(self._salt + explicit, plaintext, _aad(header, len(plaintext)))
        return header.encode() + explicit + sealed

    def unprotect(self, record: bytes) -> tuple[RecordHeader, bytes]:
        header = decode_header(record)
        if header.length < EXPLICIT_NONCE_LEN + TAG_LEN:
            raise DtlsDecodeError(
                f"a CCM-8 record needs at least 16 bytes, this has {header.length}"
            )
        explicit = record[HEADER_LEN : HEADER_LEN + EXPLICIT_NONCE_LEN]
        sealed = record[HEADER_LEN + EXPLICIT_NONCE_LEN :]
        plain_len = len(sealed) - TAG_LEN
        if self._meter is not None:  # a record that fails authentication cost as much
            self._meter.add(crypto_work.ccm(plain_len, AAD_LEN))
        try:
            plaintext = self._aead.decrypt(self._salt + explicit, sealed, _aad(header, plain_len))
        except InvalidTag:
            raise DtlsDecodeError("the record fails authentication (CCM-8 tag)") from None
        return header, plaintext


def _aad(header: RecordHeader, plaintext_len: int) -> bytes:
    return (
        header.seq_num
        + bytes([header.content_type, *header.version])
        + struct.pack("!H", plaintext_len)
    )


def header_length(datagram: bytes) -> int:
    """The bytes of a datagram that are not the protected application data.

    What a dissector without the keys can tell apart: every record header,
    and of a protected record its explicit nonce and tag, are protocol
    overhead, and so are whole handshake, alert and ChangeCipherSpec records;
    the ciphertext of application data counts as the payload it carries.
    The simulator's per-layer byte counts use it (net/node.py app_layers).
    """
    try:
        records = split_records(datagram)
    except DtlsDecodeError:
        return len(datagram)
    payload = 0
    for header, record in records:
        if header.content_type == APPLICATION_DATA and header.epoch > 0:
            payload += max(0, len(record) - OVERHEAD)
    return len(datagram) - payload
