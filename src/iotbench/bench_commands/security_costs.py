"""What the security operations cost on a device profile, counted from their primitives.

The profiles (proto/ndn/profiles.py) price two primitives: one SHA-256
compression of a 64-byte block (`sha256_block`) and AES-CCM per 16-byte
block of plaintext, two AES calls (`aes_ccm_block`). An operation's cost on
a device is the number of each it does, times that price:

- AES-CCM of n plaintext bytes with a AAD bytes (RFC 3610): the CBC-MAC runs
  over B0, the AAD with its 2-byte length (padded to blocks) and the
  plaintext's blocks; the counter mode over the plaintext's blocks and the
  tag's block S0. That is 2 + ceil((a + 2) / 16) + 2 ceil(n / 16) AES calls.
- SHA-256 of m bytes: ceil((m + 9) / 64) blocks (the 0x80 byte and the
  8-byte length pad it).
- HMAC-SHA256 of m bytes: the inner hash over the 64-byte padded key and the
  message, the outer over the key and the 32-byte inner hash.
- TLS 1.2's PRF making L bytes from a seed of s bytes (label included):
  ceil(L / 32) rounds, each an HMAC of the 32-byte A(i) and one of A(i)
  followed by the seed.

The counts are exact for this implementation's messages; the prices are the
profiles' (estimates for the M3 and the others, see profiles.py). No
published per-operation measurement of tinydtls or of an OSCORE library on
these devices went into them, so they show how the work scales between
devices, not measured times.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from iotbench.proto.ndn.profiles import PROFILES, DeviceProfile

SHA256_LEN = 32
FINISHED_LABEL_LEN = len(b"client finished")  # and "server finished"
MASTER_LABEL_LEN = len(b"extended master secret")
KEY_EXPANSION_LABEL_LEN = len(b"key expansion")
RECORD_AAD_LEN = 13  # seq_num (8), type, version, length (RFC 5246 6.2.3.3)
FINISHED_MESSAGE_LEN = 12 + 12  # handshake header and verify_data


@dataclass(frozen=True)
class Work:
    """Primitive operations: AES calls and SHA-256 blocks."""

    aes: int = 0
    sha256_blocks: int = 0

    def __add__(self, other: Work) -> Work:
        return Work(self.aes + other.aes, self.sha256_blocks + other.sha256_blocks)

    def seconds_on(self, profile: DeviceProfile) -> float:
        aes_s = profile.cost_s("aes_ccm_block") / 2  # the profiles price two AES per block
        return self.aes * aes_s + self.sha256_blocks * profile.cost_s("sha256_block")


def ccm(plaintext: int, aad: int) -> Work:
    return Work(aes=2 + ceil((aad + 2) / 16) + 2 * ceil(plaintext / 16))


def sha256(message: int) -> Work:
    return Work(sha256_blocks=ceil((message + 9) / 64))


def hmac_sha256(message: int) -> Work:
    return sha256(64 + message) + sha256(64 + SHA256_LEN)


def prf(seed: int, length: int) -> Work:
    rounds = ceil(length / SHA256_LEN)
    one = hmac_sha256(SHA256_LEN) + hmac_sha256(SHA256_LEN + seed)
    return Work(one.aes * rounds, one.sha256_blocks * rounds)


def dtls_handshake_side(transcript_to_key_exchange: int, server: bool, cookie_input: int) -> Work:
    """One side's cryptography in a PSK handshake with the extended master secret.

    `transcript_to_key_exchange`: the handshake messages' bytes up to and
    including ClientKeyExchange (the session hash's input). `cookie_input`:
    what the server's cookie HMAC covers (it computes one for the
    HelloVerifyRequest and one to check the returned cookie)."""
    work = sha256(transcript_to_key_exchange)  # session hash (RFC 7627)
    work += prf(MASTER_LABEL_LEN + SHA256_LEN, 48)  # master secret
    work += prf(KEY_EXPANSION_LABEL_LEN + 64, 40)  # key block
    # Both Finished messages: each a transcript hash and a 12-byte PRF output,
    # one sealed in a record and one opened.
    for extra in (0, FINISHED_MESSAGE_LEN):
        work += sha256(transcript_to_key_exchange + extra)
        work += prf(FINISHED_LABEL_LEN + SHA256_LEN, 12)
        work += ccm(FINISHED_MESSAGE_LEN, RECORD_AAD_LEN)
    if server:
        work += hmac_sha256(cookie_input) + hmac_sha256(cookie_input)
    return work


def dtls_record(plaintext: int) -> Work:
    return ccm(plaintext, RECORD_AAD_LEN)


def oscore_message(plaintext: int, aad: int) -> Work:
    return ccm(plaintext, aad)


def on_profiles(work: Work) -> dict[str, float]:
    """Seconds of `work` on each device profile."""
    return {name: work.seconds_on(profile) for name, profile in PROFILES.items()}
