"""Ready-made one-byte `bytes` objects, for codecs that write a byte of a header.

`bytes((n,))` builds a tuple and calls the `bytes` type through Python's
generic call protocol: about 500 instructions in compiled code, for every
header byte of every frame. `ONE_BYTE[n]` is the same object, made once.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ONE_BYTE"]

ONE_BYTE: Final[tuple[bytes, ...]] = tuple(bytes((n,)) for n in range(256))
