"""Transient multicast group addresses for multicast entities: ff1e::89:<n>.

EXPERIMENTS.md (S6): global scope, transient (flags T=1: ff1e::/16 is
"transient, global scope", RFC 4291 2.7), handed out in sequence and not
reused until the pool is exhausted, so a late reply to a deleted entity's
group cannot be mistaken for one to a new entity.
"""

from __future__ import annotations

import ipaddress

PREFIX = "ff1e::89:"
DEFAULT_POOL_SIZE = 0xFFFF


class PoolExhausted(RuntimeError):
    """Every address of the pool is in use."""


class GroupPool:
    """Addresses ff1e::89:1 .. ff1e::89:<size>, handed out round robin."""

    def __init__(self, size: int = DEFAULT_POOL_SIZE) -> None:
        if not 1 <= size <= 0xFFFF:
            raise ValueError(f"a group pool holds 1 to 65535 addresses, not {size}")
        self.size = size
        self._last = 0
        self._used: set[int] = set()

    def allocate(self) -> str:
        """The next free address after the last one handed out (wrapping)."""
        if len(self._used) >= self.size:
            raise PoolExhausted(f"all {self.size} multicast addresses {PREFIX}<n> are in use")
        n = self._last
        while True:
            n = n % self.size + 1
            if n not in self._used:
                break
        self._used.add(n)
        self._last = n
        return address(n)

    def release(self, addr: str) -> None:
        self._used.discard(number(addr))

    @property
    def in_use(self) -> int:
        return len(self._used)


def address(n: int) -> str:
    return f"{PREFIX}{n:x}"


def number(addr: str) -> int:
    """n of ff1e::89:<n>; ValueError for anything else."""
    packed = ipaddress.IPv6Address(addr).packed
    if (
        packed[:12] != ipaddress.IPv6Address(PREFIX + "0").packed[:12]
        or packed[12:14] != b"\x00\x89"
    ):
        raise ValueError(f"{addr} is not in {PREFIX}<n>")
    return int.from_bytes(packed[14:], "big")
