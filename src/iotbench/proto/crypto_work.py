"""The cryptography a security layer does, counted in the primitives a device prices.

A constrained device's cost of a security operation is mostly its block
cipher and hash calls, so the layers (DTLS, OSCORE) count what they do in
two primitives, each where it is called, from the actual lengths:

- AES-CCM over n plaintext bytes with a bytes of AAD (RFC 3610): the
  CBC-MAC runs over B0, the AAD with its 2-byte length (padded to blocks)
  and the plaintext's blocks; the counter mode over the plaintext's blocks
  and the tag's block S0. That is 2 + ceil((a + 2) / 16) + 2 ceil(n / 16)
  AES calls (sealing and opening alike; a failed opening did the same work).
- SHA-256 of m bytes: ceil((m + 9) / 64) compressions of a 64-byte block
  (the 0x80 byte and the 8-byte length pad it).
- HMAC-SHA256 of m bytes (RFC 2104): the inner hash over the 64-byte padded
  key and the message, the outer over the padded key and the 32-byte inner
  hash; a key longer than 64 bytes is hashed first.

A device profile (proto/ndn/profiles.py) prices the two primitives
(`DeviceProfile.crypto_s`), and the simulator charges a node's CPU for the
work its layer did (apps/driver.py). Key derivations done once when a
security context is provisioned (OSCORE's HKDF) are not counted: they
happen before a run starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

SHA256_LEN = 32
HMAC_BLOCK = 64


@dataclass(frozen=True, slots=True)
class Work:
    """Primitive operations: AES block calls and SHA-256 block compressions."""

    aes: int = 0
    sha256_blocks: int = 0

    def __add__(self, other: Work) -> Work:
        return Work(self.aes + other.aes, self.sha256_blocks + other.sha256_blocks)

    def __sub__(self, other: Work) -> Work:
        return Work(self.aes - other.aes, self.sha256_blocks - other.sha256_blocks)

    def __bool__(self) -> bool:
        return bool(self.aes or self.sha256_blocks)


def ccm(plaintext: int, aad: int) -> Work:
    """AES-CCM sealing or opening `plaintext` bytes with `aad` bytes of AAD."""
    aad_blocks = ceil((aad + 2) / 16) if aad else 0
    return Work(aes=2 + aad_blocks + 2 * ceil(plaintext / 16))


def sha256(message: int) -> Work:
    return Work(sha256_blocks=ceil((message + 9) / 64))


def hmac_sha256(message: int, key: int = SHA256_LEN) -> Work:
    work = sha256(HMAC_BLOCK + message) + sha256(HMAC_BLOCK + SHA256_LEN)
    return work + sha256(key) if key > HMAC_BLOCK else work


class WorkMeter:
    """The running total of a layer's work; its parts add to it as they work."""

    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total = Work()

    def add(self, work: Work) -> None:
        self.total = self.total + work


__all__ = ["Work", "WorkMeter", "ccm", "hmac_sha256", "sha256"]
