"""Bytes as the codecs need them, without Python-level calls on every frame.

`bytes((n,))` builds a tuple and calls the `bytes` type through Python's
generic call protocol: about 500 instructions in compiled code, for every
header byte of every frame. `ONE_BYTE[n]` is the same object, made once.
`as_bytes` converts what a decoder was given (bytes, bytearray, memoryview)
only when it is not bytes already, as a frame's payload nearly always is.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ONE_BYTE", "as_bytes"]

ONE_BYTE: Final[tuple[bytes, ...]] = tuple(bytes((n,)) for n in range(256))


def as_bytes(data: bytes | bytearray | memoryview) -> bytes:
    """`data` itself when it is `bytes`, else a `bytes` copy of it."""
    return data if type(data) is bytes else bytes(data)
