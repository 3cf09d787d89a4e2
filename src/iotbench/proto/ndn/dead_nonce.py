"""Dead Nonce List: (name, nonce) pairs of Interests that recently left a PIT.

A PIT entry only detects loops while it lives. NFD keeps the nonces of
Interests it forwarded for a while after their entry is gone, so an Interest
that comes back around a loop later is still recognized. Entries live
`lifetime_s` (NFD's default is 6 s) and at most `max_entries` are kept
(oldest forgotten first), so memory stays bounded under any traffic.
"""

from __future__ import annotations

from collections import deque

__all__ = ["DeadNonceList"]


class DeadNonceList:
    def __init__(self, lifetime_s: float = 6.0, max_entries: int = 65536) -> None:
        if not lifetime_s > 0:
            raise ValueError(f"lifetime_s must be > 0, got {lifetime_s}")
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.lifetime_s = lifetime_s
        self.max_entries = max_entries
        self._expiry: dict[tuple[bytes, int], float] = {}
        self._order: deque[tuple[float, tuple[bytes, int]]] = deque()

    def __len__(self) -> int:
        return len(self._expiry)

    def _purge(self, now: float) -> None:
        order = self._order
        expiry = self._expiry
        # The order queue may hold stale copies of re-added keys; bound it too.
        cap = self.max_entries
        while order and (order[0][0] <= now or len(expiry) > cap or len(order) > 2 * cap):
            t, key = order.popleft()
            if expiry.get(key) == t:
                del expiry[key]

    def add(self, name_value: bytes, nonce: int, now: float) -> None:
        t = now + self.lifetime_s
        key = (name_value, nonce)
        self._expiry[key] = t
        self._order.append((t, key))
        self._purge(now)

    def has(self, name_value: bytes, nonce: int, now: float) -> bool:
        self._purge(now)
        return (name_value, nonce) in self._expiry
