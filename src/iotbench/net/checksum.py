"""The Internet checksum (RFC 1071), used by IPv4, UDP and TCP."""

from __future__ import annotations

import sys
from array import array

_SWAP = sys.byteorder == "little"


def ones_complement_sum(data: bytes, start: int = 0) -> int:
    """16-bit one's complement sum of `data` (zero-padded to even length) plus `start`.

    Summing native-order 16-bit words and swapping once at the end gives the same
    result as summing network-order words (RFC 1071 section 2(B), byte order
    independence), and lets `array` do the loop in C.
    """
    if len(data) & 1:
        data += b"\x00"
    total = sum(array("H", data))
    if _SWAP:
        # Fold first, then swap the two bytes of the folded 16-bit value.
        while total >> 16:
            total = (total & 0xFFFF) + (total >> 16)
        total = ((total & 0xFF) << 8) | (total >> 8)
    total += start
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def internet_checksum(data: bytes, start: int = 0) -> int:
    """The checksum field value: one's complement of the one's complement sum."""
    return ~ones_complement_sum(data, start) & 0xFFFF
