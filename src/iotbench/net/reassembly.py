"""Reassembly of IP fragments (RFC 791 section 3.2, RFC 8200 section 4.5).

Fragments of different datagrams may interleave; each datagram is keyed by
(source, destination, protocol, identification). A datagram that is not
complete within `timeout_s` of its first fragment is discarded (Linux's
ipfrag_time is 30 s), and the buffer is bounded both in datagrams and in bytes
so a flood of partial datagrams cannot grow memory without limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_DATAGRAM = 65535


@dataclass
class _Partial:
    first_seen: float
    parts: dict[int, bytes] = field(default_factory=dict)
    total: int | None = None  # known once the last fragment (MF=0) arrived
    held: int = 0


class Reassembler:
    def __init__(
        self, timeout_s: float = 30.0, max_datagrams: int = 64, max_bytes: int = 256 * 1024
    ) -> None:
        self.timeout_s = timeout_s
        self.max_datagrams = max_datagrams
        self.max_bytes = max_bytes
        self._partials: dict[tuple, _Partial] = {}
        self._held = 0
        self.timed_out = 0
        self.overflowed = 0
        self.invalid = 0

    def add(self, now: float, key: tuple, offset: int, more: bool, data: bytes) -> bytes | None:
        """Store one fragment; return the whole payload once every byte is there."""
        self._expire(now)
        end = offset + len(data)
        if end > MAX_DATAGRAM or (more and (not data or len(data) % 8)):
            self.invalid += 1
            return None
        partial = self._partials.get(key)
        if partial is None:
            if len(self._partials) >= self.max_datagrams:
                self.overflowed += 1
                return None
            partial = self._partials[key] = _Partial(now)
        if not more:
            if partial.total is not None and partial.total != end:
                self.invalid += 1
                self._drop(key)
                return None
            partial.total = end
        if self._held + len(data) > self.max_bytes:
            self.overflowed += 1
            self._drop(key)
            return None
        old = partial.parts.get(offset)
        if old is not None:
            partial.held -= len(old)
            self._held -= len(old)
        partial.parts[offset] = data
        partial.held += len(data)
        self._held += len(data)
        if partial.total is None:
            return None
        whole = self._assemble(partial)
        if whole is not None:
            self._drop(key)
        return whole

    @staticmethod
    def _assemble(partial: _Partial) -> bytes | None:
        covered = 0
        pieces = []
        for offset in sorted(partial.parts):
            if offset > covered:
                return None  # a hole
            data = partial.parts[offset]
            end = offset + len(data)
            if end > covered:
                pieces.append(data[covered - offset :])
                covered = end
        if covered != partial.total:
            return None
        return b"".join(pieces)

    def _drop(self, key: tuple) -> None:
        partial = self._partials.pop(key)
        self._held -= partial.held

    def _expire(self, now: float) -> None:
        if not self._partials:
            return
        limit = now - self.timeout_s
        for key in [k for k, p in self._partials.items() if p.first_seen <= limit]:
            self.timed_out += 1
            self._drop(key)

    def __len__(self) -> int:
        return len(self._partials)
