"""DTLS 1.2 AES-128-CCM-8 records: the layout byte by byte, round trips, tampering, fuzz."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESCCM
from hypothesis import given
from hypothesis import strategies as st

from iotbench.proto.dtls.record import (
    OVERHEAD,
    Ccm8Protection,
    DtlsDecodeError,
    RecordHeader,
    decode_header,
)

KEY = bytes.fromhex("404142434445464748494a4b4c4d4e4f")
SALT = bytes.fromhex("10111213")


def test_the_aead_is_nist_sp800_38c_example_3():
    # 96-bit nonce, 64-bit tag: the nonce and tag sizes of CCM-8 in (D)TLS.
    aead = AESCCM(KEY, tag_length=8)
    nonce = bytes.fromhex("101112131415161718191a1b")
    aad = bytes.fromhex("000102030405060708090a0b0c0d0e0f10111213")
    plain = bytes.fromhex("202122232425262728292a2b2c2d2e2f3031323334353637")
    expected = "e3b201a9f5b71a7a9b1ceaeccd97e70b6176aad9a4428aa5484392fbc1b09951"
    assert aead.encrypt(nonce, plain, aad).hex() == expected


def test_record_layout_by_hand():
    record = Ccm8Protection(KEY, SALT).protect(b"\x40\x01\x12\x34", epoch=1, sequence=5)
    # header: application_data, DTLS 1.2, epoch 1, sequence 5, length 8 + 4 + 8
    assert record[:13].hex() == "17fefd00010000000000050014"
    assert record[13:21].hex() == "0001000000000005"  # nonce_explicit = epoch | sequence
    assert len(record) == 4 + OVERHEAD == 33
    # Opened independently: nonce = salt | explicit; AAD = seq_num | type | version | length.
    nonce = bytes.fromhex("101112130001000000000005")
    aad = bytes.fromhex("000100000000000517fefd0004")
    assert AESCCM(KEY, tag_length=8).decrypt(nonce, record[21:], aad) == b"\x40\x01\x12\x34"


def test_round_trip_and_header():
    p = Ccm8Protection(KEY, SALT)
    record = p.protect(b"hello", epoch=3, sequence=(1 << 48) - 1, content_type=21)
    header, plain = p.unprotect(record)
    assert plain == b"hello"
    assert header == RecordHeader(21, 3, (1 << 48) - 1, 8 + 5 + 8)
    assert decode_header(header.encode() + bytes(header.length)) == header


@pytest.mark.parametrize("index", [0, 3, 11, 13, 20, 21, 30])
def test_any_changed_byte_is_refused(index):
    p = Ccm8Protection(KEY, SALT)
    record = bytearray(p.protect(b"reading 21.5", epoch=1, sequence=9))
    record[index] ^= 0x01
    with pytest.raises(DtlsDecodeError):
        p.unprotect(bytes(record))


def test_wrong_key_and_bad_arguments():
    record = Ccm8Protection(KEY, SALT).protect(b"x", 1, 1)
    with pytest.raises(DtlsDecodeError, match="authentication"):
        Ccm8Protection(bytes(16), SALT).unprotect(record)
    with pytest.raises(ValueError, match="16-byte key"):
        Ccm8Protection(bytes(15), SALT)
    with pytest.raises(ValueError, match="48 bits"):
        Ccm8Protection(KEY, SALT).protect(b"x", 1, 1 << 48)
    with pytest.raises(ValueError, match="at most 16384"):
        Ccm8Protection(KEY, SALT).protect(bytes(16385), 1, 1)


@pytest.mark.parametrize(
    ("record", "words"),
    [
        (b"\x17\xfe\xfd", "header is 13 bytes"),
        (bytes.fromhex("18fefd000100000000000500"), "header is 13 bytes"),
        (bytes.fromhex("18fefd00010000000000050000"), "content type 24"),
        (bytes.fromhex("17fefc00010000000000050000"), "not DTLS 1.2"),
        (bytes.fromhex("17fefd00010000000000050005") + b"abc", "length field 5, 3 bytes follow"),
        (bytes.fromhex("17fefd00010000000000050003") + b"abc", "at least 16 bytes"),
    ],
)
def test_malformed_records(record, words):
    with pytest.raises(DtlsDecodeError, match=words):
        Ccm8Protection(KEY, SALT).unprotect(record)


@given(st.binary(max_size=64))
def test_any_bytes_open_or_raise_the_typed_error(data):
    p = Ccm8Protection(KEY, SALT)
    for candidate in (data, p.protect(data, 1, 2)[: len(data)], bytes.fromhex("17fefd") + data):
        try:
            p.unprotect(candidate)
        except DtlsDecodeError:
            pass


@given(st.binary(max_size=300), st.integers(0, 0xFFFF), st.integers(0, (1 << 48) - 1))
def test_round_trips(plain, epoch, sequence):
    p = Ccm8Protection(KEY, SALT)
    record = p.protect(plain, epoch, sequence)
    assert len(record) == len(plain) + OVERHEAD
    assert p.unprotect(record)[1] == plain
