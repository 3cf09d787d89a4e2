"""The 6LoWPAN dispatch byte (RFC 4944 section 5.1, RFC 6282 sections 3.1 and 6).

The first byte of every 6LoWPAN frame payload says what follows. An 802.15.4
frame may also carry something that is not 6LoWPAN at all (NDN, in iotbench):
RFC 4944 reserves the pattern 00xxxxxx, NALP ("not a LoWPAN frame"), for such
payloads, so a receiver can tell the two apart from the first byte alone.

The table follows the IANA registry, in which RFC 6282 took 011xxxxx for
LOWPAN_IPHC and moved ESC from 0x7F (inside that range now) to 0x40.
"""

from __future__ import annotations

import enum
from typing import Final


class Dispatch(enum.Enum):
    NALP = "not a LoWPAN frame"
    ESC = "escape: an extra dispatch byte follows"
    IPV6 = "uncompressed IPv6"
    HC1 = "LOWPAN_HC1 compressed IPv6 (deprecated by RFC 6282)"
    BC0 = "LOWPAN_BC0 broadcast header"
    IPHC = "LOWPAN_IPHC compressed IPv6"
    MESH = "mesh addressing header"
    FRAG1 = "first fragment header"
    FRAGN = "subsequent fragment header"
    RESERVED = "reserved dispatch value"


# (mask, value, kind): a first byte b is of `kind` when b & mask == value.
# The patterns do not overlap, so the order only matters for reading.
DISPATCH_TABLE: tuple[tuple[int, int, Dispatch], ...] = (
    (0b1100_0000, 0b0000_0000, Dispatch.NALP),  # 00xxxxxx
    (0b1111_1111, 0b0100_0000, Dispatch.ESC),  # 01000000
    (0b1111_1111, 0b0100_0001, Dispatch.IPV6),  # 01000001
    (0b1111_1111, 0b0100_0010, Dispatch.HC1),  # 01000010
    (0b1111_1111, 0b0101_0000, Dispatch.BC0),  # 01010000
    (0b1110_0000, 0b0110_0000, Dispatch.IPHC),  # 011xxxxx
    (0b1100_0000, 0b1000_0000, Dispatch.MESH),  # 10xxxxxx
    (0b1111_1000, 0b1100_0000, Dispatch.FRAG1),  # 11000xxx
    (0b1111_1000, 0b1110_0000, Dispatch.FRAGN),  # 11100xxx
)

DISPATCH_IPV6: Final = 0x41
DISPATCH_IPHC: Final = 0x60  # the three pattern bits 011, before the IPHC flags are or-ed in
DISPATCH_FRAG1 = 0xC0
DISPATCH_FRAGN = 0xE0


def classify(first_byte: int) -> Dispatch:
    """What a 6LoWPAN frame payload starting with `first_byte` carries."""
    if 0 <= first_byte < 256:
        return _BY_FIRST_BYTE[first_byte]  # every frame, twice: looked up, not scanned
    return _scan(first_byte)


def _scan(first_byte: int) -> Dispatch:
    for mask, value, kind in DISPATCH_TABLE:
        if first_byte & mask == value:
            return kind
    return Dispatch.RESERVED


_BY_FIRST_BYTE: Final = tuple(_scan(b) for b in range(256))


def is_lowpan(first_byte: int) -> bool:
    """False for NALP payloads (not 6LoWPAN, e.g. NDN straight on 802.15.4)."""
    return classify(first_byte) is not Dispatch.NALP


def is_lowpan_ipv6(first_byte: int) -> bool:
    """True when an IPv6 header follows directly (uncompressed or LOWPAN_IPHC)."""
    return classify(first_byte) in (Dispatch.IPV6, Dispatch.IPHC)


def is_fragment(first_byte: int) -> bool:
    """True for a FRAG1 or FRAGN fragment header."""
    return classify(first_byte) in (Dispatch.FRAG1, Dispatch.FRAGN)
