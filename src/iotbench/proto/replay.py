"""The sliding anti-replay window shared by DTLS and OSCORE.

DTLS 1.2 (RFC 6347 4.1.2.6, after IPsec's RFC 4303 3.4.3) and OSCORE
(RFC 8613 7.4) protect against replay the same way: the receiver remembers
the highest sequence number it accepted and a bitmap of which of the
`size` numbers below it it has seen. A number above the highest moves the
window; one inside it is accepted once; one below it is too old.

Checking and recording are two steps because a number must be recorded
only after the message it came with passes authentication (RFC 6347
4.1.2.6: "the receive window is updated only if the MAC verification
succeeds"), or a forged packet could move the window.
"""

from __future__ import annotations


class ReplayWindow:
    """Which sequence numbers were already accepted, within the last `size`."""

    __slots__ = ("size", "highest", "_seen")

    def __init__(self, size: int = 64) -> None:
        if size < 1:
            raise ValueError(f"a replay window holds at least 1 number, got {size}")
        self.size = size
        self.highest = -1  # nothing accepted yet
        self._seen = 0  # bit i: highest - i was accepted

    def is_fresh(self, number: int) -> bool:
        """True when `number` was not accepted before and is not older than the window."""
        if number > self.highest:
            return True
        offset = self.highest - number
        return offset < self.size and not (self._seen >> offset) & 1

    def record(self, number: int) -> None:
        """Remember `number` as accepted (call after authentication, and after is_fresh)."""
        if number > self.highest:
            shift = number - self.highest
            # A jump past the whole window forgets it (and keeps the shift bounded).
            seen = self._seen << shift if shift < self.size else 0
            self._seen = (seen | 1) & ((1 << self.size) - 1)
            self.highest = number
        else:
            self._seen |= 1 << (self.highest - number)

    def check_and_record(self, number: int) -> bool:
        """is_fresh and then record, for callers whose message is already authenticated."""
        if not self.is_fresh(number):
            return False
        self.record(number)
        return True
