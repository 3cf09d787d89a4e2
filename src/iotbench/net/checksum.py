"""The Internet checksum (RFC 1071), used by IPv4, UDP and TCP."""

from __future__ import annotations

from typing import Final

# Bound once: looking the method up on `int` costs more than converting a header.
_from_bytes: Final = int.from_bytes


def ones_complement_sum(data: bytes, start: int = 0) -> int:
    """16-bit one's complement sum of `data` (zero-padded to even length) plus `start`.

    Because 2**16 == 1 (mod 0xFFFF), a run of big-endian 16-bit words read as one
    big integer is congruent to the plain sum of those words, and end-around
    carry folding is reduction modulo 0xFFFF. So the sum is one `int.from_bytes`
    and one `%`, both done in C, instead of a Python-level loop over words.
    The one subtlety is the representation of zero: folding a non-zero total
    never gives 0 but 0xFFFF (one's complement "negative zero"), while an
    all-zero input (and zero start) sums to 0.
    """
    if len(data) & 1:
        data += b"\x00"
    total = _from_bytes(data, "big") + start
    return total % 0xFFFF or (0xFFFF if total else 0)


def internet_checksum(data: bytes, start: int = 0) -> int:
    """The checksum field value: one's complement of the one's complement sum."""
    # The body of ones_complement_sum, repeated: every packet sent computes two
    # checksums, and the extra call would cost as much as the sum itself.
    if len(data) & 1:
        data += b"\x00"
    total = _from_bytes(data, "big") + start
    return 0xFFFF - (total % 0xFFFF or (0xFFFF if total else 0))
