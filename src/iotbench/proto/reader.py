"""Reading a message field by field, for the codecs that walk bytes in order.

Every read names its field, so that a message that ends too early raises the
codec's own DecodeError saying where (docs: every malformed input is a typed
decode error, never an IndexError).
"""

from __future__ import annotations

from iotbench.proto.errors import DecodeError


class ByteReader:
    """Walks `data` from the start; running past its end raises `error`."""

    __slots__ = ("data", "error", "name", "pos")

    def __init__(
        self, data: bytes, error: type[DecodeError] = DecodeError, name: str = "the message"
    ) -> None:
        self.data = data
        self.pos = 0
        self.error = error
        self.name = name  # what the data is, for the messages: "6LoWPAN packet"

    def take(self, n: int, what: str) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise self.error(f"{self.name} ends inside the {what}")
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def byte(self, what: str) -> int:
        return self.take(1, what)[0]

    def uint(self, size: int, what: str) -> int:
        """A big-endian unsigned integer of `size` bytes."""
        return int.from_bytes(self.take(size, what), "big")

    def vector(self, length_size: int, what: str, low: int = 0, high: int | None = None) -> bytes:
        """Bytes preceded by their length in `length_size` bytes, within [low, high]."""
        n = self.uint(length_size, f"{what} length")
        if n < low or (high is not None and n > high):
            raise self.error(f"{what} of {n} bytes, allowed {low}..{high}")
        return self.take(n, what)

    def at_end(self) -> bool:
        return self.pos == len(self.data)

    def done(self, what: str) -> None:
        """Nothing may follow `what`."""
        if self.pos != len(self.data):
            raise self.error(f"{len(self.data) - self.pos} bytes after the {what}")


__all__ = ["ByteReader"]
