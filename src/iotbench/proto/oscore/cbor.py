"""The few CBOR items (RFC 8949) that OSCORE's structures are made of.

OSCORE serialises three small CBOR arrays: the HKDF `info` (RFC 8613 3.2.1),
the `aad_array` and the COSE `Enc_structure` (5.4). Their items are unsigned
integers, byte strings, text strings, nested arrays and null, always in
definite length, so a twenty-line encoder covers them and the project needs
no CBOR library at run time (the tests check it against `cbor2`). Nothing is
ever decoded: both ends build the same bytes and feed them to the AEAD.
"""

from __future__ import annotations

_UINT, _BYTES, _TEXT, _ARRAY = 0, 2, 3, 4
_NULL = b"\xf6"

CborItem = int | bytes | str | list | tuple | None


def _head(major: int, n: int) -> bytes:
    """The initial byte (and argument bytes) of an item: the shortest form (RFC 8949 3)."""
    if n < 24:
        return bytes(((major << 5) | n,))
    for extra, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * size):
            return bytes(((major << 5) | extra,)) + n.to_bytes(size, "big")
    raise ValueError(f"CBOR argument {n} does not fit in 64 bits")


def dumps(item: CborItem) -> bytes:
    """Deterministic CBOR of `item` (uint, bytes, str, list/tuple of those, None)."""
    if item is None:
        return _NULL
    if isinstance(item, bool):
        raise TypeError("booleans are not used by OSCORE")
    if isinstance(item, int):
        if item < 0:
            raise ValueError(f"negative integers are not used by OSCORE, got {item}")
        return _head(_UINT, item)
    if isinstance(item, bytes):
        return _head(_BYTES, len(item)) + item
    if isinstance(item, str):
        data = item.encode("utf-8")
        return _head(_TEXT, len(data)) + data
    if isinstance(item, (list, tuple)):
        return _head(_ARRAY, len(item)) + b"".join(dumps(x) for x in item)
    raise TypeError(f"cannot encode {type(item).__name__} as CBOR here")
