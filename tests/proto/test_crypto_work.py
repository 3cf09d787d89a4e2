"""Counting the security layers' cryptography in primitives (proto/crypto_work.py)."""

from __future__ import annotations

import random

import pytest

from iotbench.proto import crypto_work
from iotbench.proto.coap import codec
from iotbench.proto.crypto_work import Work, WorkMeter
from iotbench.proto.dtls import keys
from iotbench.proto.dtls.layer import DtlsLayer
from iotbench.proto.dtls.params import PskClientCredentials, PskServerCredentials
from iotbench.proto.dtls.record import AAD_LEN, Ccm8Protection, DtlsDecodeError
from iotbench.proto.ndn.profiles import PROFILES
from iotbench.proto.oscore.context import SecurityContext
from iotbench.proto.oscore.layer import OscoreLayer
from iotbench.proto.oscore.message import RequestId
from iotbench.proto.oscore.message import aad as _aad

CLIENT, SERVER = ("client", 1), ("server", 2)


def oscore_aad(kid: bytes, piv: bytes) -> bytes:
    return _aad(RequestId(kid, piv))


@pytest.mark.parametrize(("length", "blocks"), [(0, 1), (55, 1), (56, 2), (119, 2), (120, 3)])
def test_sha256_pads_with_nine_bytes(length, blocks):
    assert crypto_work.sha256(length).sha256_blocks == blocks


def test_hmac_is_an_inner_and_an_outer_hash():
    # 64-byte key block + 32 bytes -> 2 blocks; outer: key block + hash -> 2.
    assert crypto_work.hmac_sha256(32).sha256_blocks == 4
    assert crypto_work.hmac_sha256(100).sha256_blocks == 3 + 2
    # A key longer than a block is hashed first (RFC 2104 2): 68 bytes, 2 blocks.
    assert crypto_work.hmac_sha256(32, key=68).sha256_blocks == 4 + 2


def test_ccm_counts_the_mac_and_the_counter_mode():
    # B0, one AAD block (13 + 2 bytes), one plaintext block twice, S0.
    assert crypto_work.ccm(16, 13).aes == 2 + 1 + 2
    assert crypto_work.ccm(17, 13).aes == 2 + 1 + 4
    assert crypto_work.ccm(0, 15).aes == 2 + 2
    assert crypto_work.ccm(16, 0).aes == 2 + 2  # no AAD, no length field


def test_work_adds_and_subtracts():
    a, b = Work(3, 4), Work(1, 1)
    assert a + b == Work(4, 5) and a - b == Work(2, 3)
    assert not Work() and Work(0, 1)


def test_a_record_counts_its_sealing_and_its_opening_even_a_failed_one():
    meter = WorkMeter()
    protection = Ccm8Protection(bytes(16), bytes(4), meter)
    record = protection.protect(bytes(20), epoch=1, sequence=1)
    assert meter.total == crypto_work.ccm(20, AAD_LEN)
    protection.unprotect(record)
    assert meter.total == Work(aes=2 * crypto_work.ccm(20, AAD_LEN).aes)
    with pytest.raises(DtlsDecodeError):
        Ccm8Protection(bytes(range(16)), bytes(4), meter).unprotect(record)
    assert meter.total.aes == 3 * crypto_work.ccm(20, AAD_LEN).aes


def test_the_prf_counts_its_hmacs_from_their_inputs():
    meter = WorkMeter()
    label, seed = b"key expansion", bytes(64)
    keys.prf(bytes(48), label, seed, 40, meter)
    # Two rounds: A(1) = HMAC(label + seed), A(2) = HMAC(A(1)); each round also
    # HMAC(A(i) + label + seed).
    n = len(label + seed)
    expected = crypto_work.hmac_sha256(n, 48) + crypto_work.hmac_sha256(32, 48)
    expected += crypto_work.hmac_sha256(32 + n, 48) + crypto_work.hmac_sha256(32 + n, 48)
    assert meter.total == expected


def _handshake() -> tuple[DtlsLayer, DtlsLayer]:
    client = DtlsLayer(random.Random(1), client=PskClientCredentials(b"id", bytes(16)))
    server = DtlsLayer(random.Random(2), server=PskServerCredentials({b"id": bytes(16)}))
    client.outgoing(0.0, b"x" * 10, SERVER)
    for _ in range(4):
        for data, _ in client.datagrams_to_send():
            server.incoming(0.0, data, CLIENT)
        for data, _ in server.datagrams_to_send():
            client.incoming(0.0, data, SERVER)
    assert server.plaintexts() == [(b"x" * 10, CLIENT)]
    return client, server


def test_a_handshake_is_counted_on_both_sides():
    client, server = _handshake()
    finished = crypto_work.ccm(24, AAD_LEN)  # 12-byte handshake header + verify_data
    data = crypto_work.ccm(10, AAD_LEN)  # the datagram that waited for the handshake
    # AES: each side seals its Finished and opens the other's; and the data record.
    assert client.work.aes == server.work.aes == 2 * finished.aes + data.aes
    # The same key schedule on both sides; the server also made two cookies
    # (one for the HelloVerifyRequest, one to check the returned hello).
    cookie_blocks = server.work.sha256_blocks - client.work.sha256_blocks
    assert cookie_blocks > 0 and cookie_blocks % 2 == 0
    assert client.work.sha256_blocks > 30  # session hash, two PRFs of keys, two Finished


def test_an_oscore_layer_counts_what_its_contexts_seal_and_open():
    secret = bytes(16)
    client = OscoreLayer(random.Random(1), any_peer=SecurityContext(secret, b"\x01", b"\x02"))
    server = OscoreLayer(random.Random(2))
    server.add_context(SecurityContext(secret, b"\x02", b"\x01"))
    msg = codec.Message(codec.Type.CON, codec.Code.GET, 0x1234, b"\x12\x34")
    msg.uri_path = "/test"
    request = codec.encode(msg)
    client.outgoing(0.0, request, SERVER)
    ((sealed, _),) = client.datagrams_to_send()
    server.incoming(0.0, sealed, CLIENT)
    assert server.plaintexts() == [(request, CLIENT)]
    # One sealing and one opening of the same plaintext (code, Uri-Path) and AAD.
    assert client.work == server.work == crypto_work.ccm(1 + 5, len(oscore_aad(b"\x01", b"\x00")))


def test_a_profile_prices_the_primitives():
    m3 = PROFILES["m3"]
    work = Work(aes=10, sha256_blocks=3)
    expected = 10 * m3.cost_s("aes_ccm_block") / 2 + 3 * m3.cost_s("sha256_block")
    assert m3.crypto_s(work) == pytest.approx(expected)
    assert m3.crypto_s(Work()) == 0.0


def test_both_layers_tell_what_they_sealed_into_what():
    client, server = _handshake()  # the first datagram was sealed as the handshake ended
    told: list[tuple[bytes, bytes]] = []
    client.on_sealed = lambda plain, wire: told.append((plain, wire))
    client.outgoing(1.0, b"reading", SERVER)
    ((wire, _),) = client.datagrams_to_send()
    assert told == [(b"reading", wire)]
    server.incoming(1.0, wire, CLIENT)
    assert server.plaintexts() == [(b"reading", CLIENT)]

    secret = bytes(16)
    oscore = OscoreLayer(random.Random(1), any_peer=SecurityContext(secret, b"\x01", b"\x02"))
    oscore.on_sealed = lambda plain, wire: told.append((plain, wire))
    msg = codec.Message(codec.Type.CON, codec.Code.GET, 7, b"\x01")
    oscore.outgoing(0.0, codec.encode(msg), SERVER)
    ((wire, _),) = oscore.datagrams_to_send()
    assert told[-1] == (codec.encode(msg), wire)
