"""The key schedule of a DTLS 1.2 PSK handshake (RFC 5246 5, 6.3, 7.4.9, 8.1; RFC 4279 2).

    premaster  = uint16(N) | N zero bytes | uint16(N) | psk          (RFC 4279 2, plain PSK)
    master     = PRF(premaster, "master secret", client_random | server_random)[0:48]
               or, with RFC 7627's extended master secret,
                 PRF(premaster, "extended master secret", session_hash)[0:48]
    key block  = PRF(master, "key expansion", server_random | client_random)
               = client_write_key(16) | server_write_key(16)
                 | client_write_IV(4) | server_write_IV(4)
                 (no MAC keys: CCM is an AEAD, RFC 6655 3)
    verify_data = PRF(master, "client finished" | "server finished",
                      SHA-256(handshake_messages))[0:12]

PRF is RFC 5246 5's P_SHA256. HMAC and SHA-256 come from `cryptography`; a
`meter` given to a function counts its hash work (proto/crypto_work.py).
"""

from __future__ import annotations

from cryptography.hazmat.primitives import hashes, hmac

from iotbench.proto import crypto_work
from iotbench.proto.crypto_work import WorkMeter

MASTER_SECRET_LEN = 48
KEY_LEN = 16  # AES-128
FIXED_IV_LEN = 4  # RFC 6655 3: the salt part of the CCM nonce


def _hmac_sha256(key: bytes, data: bytes, meter: WorkMeter | None) -> bytes:
    if meter is not None:
        meter.add(crypto_work.hmac_sha256(len(data), len(key)))
    h = hmac.HMAC(key, hashes.SHA256())
    h.update(data)
    return h.finalize()


def prf(
    secret: bytes, label: bytes, seed: bytes, length: int, meter: WorkMeter | None = None
) -> bytes:
    """RFC 5246 5: P_SHA256(secret, label + seed), cut to `length` bytes."""
    seed = label + seed
    out = b""
    a = seed
    while len(out) < length:
        a = _hmac_sha256(secret, a, meter)
        out += _hmac_sha256(secret, a + seed, meter)
    return out[:length]


def sha256(data: bytes, meter: WorkMeter | None = None) -> bytes:
    if meter is not None:
        meter.add(crypto_work.sha256(len(data)))
    h = hashes.Hash(hashes.SHA256())
    h.update(data)
    return h.finalize()


def psk_premaster(psk: bytes) -> bytes:
    """RFC 4279 2: the premaster secret of the plain PSK key exchange."""
    n = len(psk).to_bytes(2, "big")
    return n + bytes(len(psk)) + n + psk


def master_secret(
    premaster: bytes,
    client_random: bytes,
    server_random: bytes,
    session_hash: bytes | None = None,
    meter: WorkMeter | None = None,
) -> bytes:
    """RFC 5246 8.1, or RFC 7627 4 when `session_hash` is given."""
    if session_hash is not None:
        return prf(premaster, b"extended master secret", session_hash, MASTER_SECRET_LEN, meter)
    seed = client_random + server_random
    return prf(premaster, b"master secret", seed, MASTER_SECRET_LEN, meter)


def key_block(
    master: bytes, client_random: bytes, server_random: bytes, meter: WorkMeter | None = None
) -> dict[str, bytes]:
    """RFC 5246 6.3 for an AEAD suite with 16-byte keys and 4-byte fixed IVs."""
    seed = server_random + client_random
    block = prf(master, b"key expansion", seed, 2 * (KEY_LEN + FIXED_IV_LEN), meter)
    return {
        "client_write_key": block[0:16],
        "server_write_key": block[16:32],
        "client_write_iv": block[32:36],
        "server_write_iv": block[36:40],
    }


def verify_data(
    master: bytes, client: bool, transcript_hash: bytes, meter: WorkMeter | None = None
) -> bytes:
    """RFC 5246 7.4.9: what the client's or the server's Finished carries."""
    label = b"client finished" if client else b"server finished"
    return prf(master, label, transcript_hash, 12, meter)
