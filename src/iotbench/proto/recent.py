"""What was decoded last, by the bytes it was decoded from.

In a simulated network the same bytes are decoded over and over: every hop
decodes the NDN Interest or Data it forwards, every neighbour that hears a
broadcast decodes it, the app at the end decodes it again, and a
producer's Data all carry the same SignatureInfo; every router on a
datagram's path dissects its payload into header and application bytes
(net/node.py's app_layers, apps/driver.py). Decoding is a function of the
bytes alone, and the decoded packets and fields never change (their lazily
decoded fields come from the same bytes, whoever reads them first), so one
decoded value serves every copy of the bytes while it is recent. What does
not decode raises every time, as it would without this.

Only the cost of a run changes, never a result: the values come back equal
to a fresh decode's, and nothing in a stack keys anything by an object's
identity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from mypy_extensions import i64

__all__ = ["RecentDecodes"]

T = TypeVar("T")


class RecentDecodes(Generic[T]):
    """`decode(bytes)`, remembered for the last `size` distinct byte strings
    (the oldest is forgotten first)."""

    def __init__(self, decode: Callable[[bytes], T], size: int) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self._decode = decode
        self._size = size
        self._values: dict[bytes, T] = {}
        # The keys in the order they came, a ring once full: the oldest is
        # found by its index, where `next(iter(values))` called the builtin
        # through Python and walked the dict's deleted entries (about 900
        # instructions a packet made, compiled).
        self._order: list[bytes] = []
        self._oldest: i64 = 0

    def get(self, wire: bytes) -> T:
        known = self._values.get(wire)
        if known is None:
            known = self._decode(wire)
            self.remember(wire, known)
        return known

    def __call__(self, wire: bytes) -> T:
        """`get`: so that it stands in for the decoder it remembers."""
        return self.get(wire)

    def remember(self, wire: bytes, value: T) -> None:
        """Take `value` as the decoding of `wire`: a packet just encoded from its
        fields, equal to what decoding its bytes gives, which its own node's
        forwarder decodes next."""
        values = self._values
        if wire in values:
            values[wire] = value
            return
        order = self._order
        if len(order) < self._size:
            order.append(wire)
        else:
            oldest = self._oldest
            del values[order[oldest]]
            order[oldest] = wire
            self._oldest = oldest + 1 if oldest + 1 < self._size else 0
        values[wire] = value

    def __len__(self) -> int:
        return len(self._values)
