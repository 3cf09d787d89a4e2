"""NDN TLV primitives (packet format v0.3, "TLV Encoding").

- VAR-NUMBER: 1, 3, 5 or 9 bytes (first octet < 253, 253 + 2 bytes, 254 + 4
  bytes, 255 + 8 bytes). The spec says a number MUST be encoded in the
  shortest format, so the decoder rejects longer encodings: every accepted
  packet then has exactly one encoding, which is what lets PIT, FIB and CS key
  names by their wire bytes.
- TLV-TYPE is 1..2^32-1 (never the 9-byte form, never 0); TLV-LENGTH may use
  all four forms.
- NonNegativeInteger: a TLV-VALUE of exactly 1, 2, 4 or 8 bytes, big-endian.
- Evolvability: an unrecognized or out-of-order element is an error when its
  TLV-TYPE is critical (0..31, or odd) and is skipped otherwise.

Every decoding function here works on ``bytes`` between explicit `start` and
`end` offsets (no copies while walking), checks each length against the bytes
that are really there before using it, and raises `NdnDecodeError` and nothing
else for bad input.
"""

from __future__ import annotations

from typing import Final

from mypy_extensions import mypyc_attr

from iotbench.proto.errors import DecodeError
from iotbench.proto.octets import ONE_BYTE

__all__ = [
    "MAX_TLV_TYPE",
    "NdnDecodeError",
    "decode_nni",
    "encode_nni",
    "encode_tl",
    "encode_tlv",
    "encode_var_number",
    "is_critical",
    "read_tl",
    "read_var_number",
    "scan_elements",
    "var_number_size",
]

MAX_TLV_TYPE: Final = 0xFFFFFFFF
_MAX_U64: Final = 0xFFFFFFFFFFFFFFFF


# Refined by the decoders of fragments, HoPP and encrypted content.
@mypyc_attr(allow_interpreted_subclasses=True)
class NdnDecodeError(DecodeError):
    """The bytes are not a well-formed NDN (or NDNLPv2, or fragment) packet."""


# ---- VAR-NUMBER ---------------------------------------------------------------------


def var_number_size(n: int) -> int:
    """Bytes of the shortest VAR-NUMBER encoding of `n`."""
    if n < 253:
        return 1
    if n <= 0xFFFF:
        return 3
    if n <= 0xFFFFFFFF:
        return 5
    return 9


def encode_var_number(n: int) -> bytes:
    """Shortest VAR-NUMBER encoding of 0 <= n < 2**64."""
    if n < 0 or n > _MAX_U64:
        raise ValueError(f"VAR-NUMBER must be in 0..2**64-1, got {n}")
    if n < 253:
        return ONE_BYTE[n]
    if n <= 0xFFFF:
        return b"\xfd" + n.to_bytes(2, "big")
    if n <= 0xFFFFFFFF:
        return b"\xfe" + n.to_bytes(4, "big")
    return b"\xff" + n.to_bytes(8, "big")


def read_var_number(buf: bytes | bytearray, pos: int, end: int) -> tuple[int, int]:
    """Decode the VAR-NUMBER at `pos` (not beyond `end`); returns (number, next position).
    (A stream's framer reads its bytearray buffer with it.)"""
    if pos >= end:
        raise NdnDecodeError("truncated VAR-NUMBER")
    first = buf[pos]
    if first < 253:
        return first, pos + 1
    if first == 253:
        size, low = 2, 253
    elif first == 254:
        size, low = 4, 0x10000
    else:
        size, low = 8, 0x100000000
    stop = pos + 1 + size
    if stop > end:
        raise NdnDecodeError("truncated VAR-NUMBER")
    n = int.from_bytes(buf[pos + 1 : stop], "big")
    if n < low:
        raise NdnDecodeError(f"VAR-NUMBER {n} is not in its shortest encoding")
    return n, stop


def read_tl(buf: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """Read a TLV-TYPE and TLV-LENGTH at `pos`; returns (type, value start, value end).

    The value end is checked against `end`, so callers may slice without further checks.
    """
    # The 1-byte forms of both numbers are by far the most common: handle them inline.
    if pos + 1 < end and buf[pos] < 253 and buf[pos + 1] < 253:
        t = buf[pos]
        if t == 0:
            raise NdnDecodeError("TLV-TYPE 0 is reserved as invalid")
        vstart = pos + 2
        vend = vstart + buf[pos + 1]
    else:
        t, pos = read_var_number(buf, pos, end)
        if t == 0 or t > MAX_TLV_TYPE:
            raise NdnDecodeError(f"TLV-TYPE {t} is outside 1..2**32-1")
        length, vstart = read_var_number(buf, pos, end)
        vend = vstart + length
    if vend > end:
        raise NdnDecodeError(
            f"TLV of type {t} claims {vend - vstart} bytes, only {end - vstart} left"
        )
    return t, vstart, vend


def encode_tl(t: int, length: int) -> bytes:
    # (A negative value goes on to encode_var_number's ValueError, and octets.py
    # says why not bytes((t, length)).)
    if 0 <= t < 253 and 0 <= length < 253:
        return ONE_BYTE[t] + ONE_BYTE[length]
    return encode_var_number(t) + encode_var_number(length)


def encode_tlv(t: int, value: bytes = b"") -> bytes:
    """One TLV element."""
    n = len(value)
    if 0 <= t < 253 and n < 253:
        return ONE_BYTE[t] + ONE_BYTE[n] + value
    return encode_var_number(t) + encode_var_number(n) + value


# ---- NonNegativeInteger -----------------------------------------------------------


def encode_nni(n: int) -> bytes:
    """Shortest NonNegativeInteger value (1, 2, 4 or 8 bytes)."""
    if n < 0 or n > _MAX_U64:
        raise ValueError(f"NonNegativeInteger must be in 0..2**64-1, got {n}")
    if n <= 0xFF:
        return ONE_BYTE[n]
    if n <= 0xFFFF:
        return n.to_bytes(2, "big")
    if n <= 0xFFFFFFFF:
        return n.to_bytes(4, "big")
    return n.to_bytes(8, "big")


def decode_nni(buf: bytes, start: int = 0, end: int | None = None) -> int:
    """A NonNegativeInteger TLV-VALUE; its length must be 1, 2, 4 or 8."""
    if end is None:
        end = len(buf)
    n = end - start
    if n == 1:
        return buf[start]
    if n not in (2, 4, 8):
        raise NdnDecodeError(f"NonNegativeInteger of {n} bytes (must be 1, 2, 4 or 8)")
    return uint_be(buf, start, end)


def uint_be(buf: bytes, start: int, end: int) -> int:
    """The big-endian unsigned integer in buf[start:end] (the caller checks the
    bounds). Read byte by byte, without a slice: compiled, a few instructions a
    byte, where int.from_bytes on a slice cost about 1,300 in all (an Interest's
    lifetime and nonce are read at every hop)."""
    value = 0
    for i in range(start, end):
        value = (value << 8) | buf[i]
    return value


# ---- evolvability -----------------------------------------------------------------


def is_critical(t: int) -> bool:
    """TLV-TYPE 0..31 ("grandfathered") or odd: an unknown one must fail decoding."""
    return t <= 31 or (t & 1) == 1


def scan_elements(
    buf: bytes, start: int, end: int, order: dict[int, int], what: str
) -> dict[int, tuple[int, int, int]]:
    """Walk the sub-elements of one TLV-VALUE applying the evolvability rule.

    `order` maps each recognized TLV-TYPE to its rank in the specification's
    sequence. A recognized element whose rank is not above the last accepted
    one is out of order (a repeat is out of order too). Unrecognized and
    out-of-order elements fail decoding when critical and are skipped
    otherwise. Returns {type: (element start, value start, value end)}.
    """
    found: dict[int, tuple[int, int, int]] = {}
    last = -1
    pos = start
    while pos < end:
        t, vs, ve = read_tl(buf, pos, end)
        rank = order.get(t)
        if rank is not None and rank > last:
            found[t] = (pos, vs, ve)
            last = rank
        elif is_critical(t):
            kind = "out-of-order" if rank is not None else "unrecognized"
            raise NdnDecodeError(f"{kind} critical element {t} in {what}")
        pos = ve
    return found
