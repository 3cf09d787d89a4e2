"""The OSCORE option value (RFC 8613 6.1): the compressed COSE header.

    0 1 2 3 4 5 6 7
   +-+-+-+-+-+-+-+-+---------------------+------------+--------------+-----+
   |0 0 0|h|k|  n  | Partial IV (n bytes) | s (if h)  | kid context  | kid |
   +-+-+-+-+-+-+-+-+---------------------+------------+--------------+-----+

n = 6 and 7 and the three high bits are reserved: a value using them is
malformed (6.1, "decompression fails"). The kid takes the rest of the value,
so with k = 0 nothing may follow the kid context. A value whose flag byte
would be zero is sent empty (6.3, example 4); a lone 0x00 is read as empty
too. `decode` raises `OscoreOptionError` (a `DecodeError`) and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

from iotbench.proto.errors import DecodeError

_N = 0x07
_K = 0x08
_H = 0x10
_RESERVED = 0xE0
MAX_PARTIAL_IV = 5


class OscoreOptionError(DecodeError):
    """The OSCORE option value cannot be decompressed (RFC 8613 8.2 step 2)."""


@dataclass(frozen=True, slots=True)
class OscoreOption:
    """The COSE header fields an OSCORE option carries; None when absent."""

    partial_iv: bytes | None = None
    kid: bytes | None = None
    kid_context: bytes | None = None

    def encode(self) -> bytes:
        """The option value; raises ValueError for fields that cannot be encoded."""
        piv = self.partial_iv or b""
        if self.partial_iv is not None and not 1 <= len(piv) <= MAX_PARTIAL_IV:
            raise ValueError(f"a Partial IV is 1 to 5 bytes, got {len(piv)}")
        flags = len(piv)
        parts = [piv]
        if self.kid_context is not None:
            if len(self.kid_context) > 255:
                raise ValueError("a kid context is at most 255 bytes")
            flags |= _H
            parts += [bytes((len(self.kid_context),)), self.kid_context]
        if self.kid is not None:
            flags |= _K
            parts.append(self.kid)
        if not flags:
            return b""
        return bytes((flags,)) + b"".join(parts)

    @classmethod
    def decode(cls, value: bytes) -> OscoreOption:
        if not value:
            return cls()
        flags = value[0]
        if flags & _RESERVED:
            raise OscoreOptionError(f"reserved flag bits set in 0x{flags:02x}")
        n = flags & _N
        if n > MAX_PARTIAL_IV:
            raise OscoreOptionError(f"Partial IV length {n} is reserved")
        pos = 1 + n
        if pos > len(value):
            raise OscoreOptionError("the value ends inside the Partial IV")
        piv = value[1:pos] if n else None
        kid_context = None
        if flags & _H:
            if pos >= len(value):
                raise OscoreOptionError("the value ends before the kid context length")
            end = pos + 1 + value[pos]
            if end > len(value):
                raise OscoreOptionError("the value ends inside the kid context")
            kid_context = value[pos + 1 : end]
            pos = end
        if flags & _K:
            kid = value[pos:]
        elif pos != len(value):
            raise OscoreOptionError("bytes after the last field without the kid flag")
        else:
            kid = None
        return cls(piv, kid, kid_context)
