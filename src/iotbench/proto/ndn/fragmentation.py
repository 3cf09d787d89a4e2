"""Hop-by-hop layer-2 fragmentation with a 3-byte header (the RIOT NDN stack's scheme, S5).

A packet that fits the link MTU goes out unchanged. A larger one is cut into
at most 32 frames, each a 3-byte header plus a slice of the packet:

     0                   1                   2
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3
    +-+-+-+---------+-------------------------------+
    |1|R|M|   SEQ   |        Identification         |
    +-+-+-+---------+-------------------------------+

- bit 0 is 1: a fragment. An unfragmented Interest (0x05), Data (0x06) or
  LpPacket (0x64) starts with a 0 bit, so one look at the first byte tells
  them apart;
- R is reserved: sent as 0, a frame with R = 1 is rejected;
- M (More Fragments) is 1 on every fragment but the last;
- SEQ (5 bits) is the fragment's index, 0..31;
- Identification (16 bits, network order) is the same on every fragment of
  one packet and differs between packets in flight from one sender.

`Reassembler` puts packets back together per (source, identification), so
fragments of different packets may interleave. A partial packet is dropped
when its reassembly timeout passes, and the reassembler never holds more
than `max_packets` partial packets or `max_buffer_bytes` of fragment payload:
the partial packets that started longest ago are dropped first to make
room. Bad headers and
inconsistent fragments raise `FragmentError`.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Final, NoReturn

from .tlv import NdnDecodeError

__all__ = [
    "HEADER_SIZE",
    "MAX_FRAGMENTS",
    "FragmentError",
    "FragmentHeader",
    "Reassembler",
    "ReassemblyStats",
    "fragment",
    "is_fragment",
]

HEADER_SIZE: Final = 3
MAX_FRAGMENTS: Final = 32
_FRAG_BIT: Final = 0x80
_RESERVED_BIT = 0x40
_MORE_BIT = 0x20
_SEQ_MASK = 0x1F


class FragmentError(NdnDecodeError):
    """A frame that is not a valid fragment, or that contradicts earlier fragments."""


@dataclass(frozen=True, slots=True)
class FragmentHeader:
    more: bool
    seq: int
    identification: int

    def encode(self) -> bytes:
        if not 0 <= self.seq < MAX_FRAGMENTS:
            raise ValueError(f"fragment sequence number must be 0..31, got {self.seq}")
        if not 0 <= self.identification <= 0xFFFF:
            raise ValueError(f"identification must be 0..65535, got {self.identification}")
        first = _FRAG_BIT | (_MORE_BIT if self.more else 0) | self.seq
        return bytes((first, self.identification >> 8, self.identification & 0xFF))

    @classmethod
    def decode(cls, frame: bytes) -> FragmentHeader:
        if len(frame) < HEADER_SIZE + 1:
            raise FragmentError(f"a fragment needs a 3-byte header and payload, got {len(frame)}")
        first = frame[0]
        if not first & _FRAG_BIT:
            raise FragmentError("first bit is 0: not a fragment")
        if first & _RESERVED_BIT:
            raise FragmentError("reserved bit is set in the fragment header")
        return cls(bool(first & _MORE_BIT), first & _SEQ_MASK, (frame[1] << 8) | frame[2])


def is_fragment(frame: bytes) -> bool:
    """True when the frame carries the fragment header (its first bit is 1)."""
    return bool(frame) and bool(frame[0] & _FRAG_BIT)


def fragment(packet: bytes, mtu: int, identification: int) -> list[bytes]:
    """Frames of at most `mtu` bytes carrying `packet` (the packet itself when it fits)."""
    n = len(packet)
    if n <= mtu:
        return [bytes(packet)]
    chunk = mtu - HEADER_SIZE
    if chunk < 1:
        raise ValueError(f"MTU {mtu} leaves no room for fragment payload")
    count = -(-n // chunk)
    if count > MAX_FRAGMENTS:
        raise ValueError(
            f"a {n}-byte packet needs {count} fragments at MTU {mtu}; at most {MAX_FRAGMENTS}"
        )
    frames = []
    for seq in range(count):
        header = FragmentHeader(seq < count - 1, seq, identification).encode()
        frames.append(header + packet[seq * chunk : (seq + 1) * chunk])
    return frames


@dataclass(slots=True)
class ReassemblyStats:
    fragments: int = 0
    packets: int = 0
    duplicates: int = 0
    timeouts: int = 0
    evicted: int = 0
    errors: int = 0


class _Partial:
    __slots__ = ("deadline", "last", "pieces", "size")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.pieces: dict[int, bytes] = {}
        self.last: int | None = None  # SEQ of the fragment with M = 0, once seen
        self.size = 0


class Reassembler:
    """Puts fragmented packets back together (sans-I/O: time is passed in)."""

    def __init__(
        self,
        timeout_s: float = 3.0,
        max_packets: int = 8,
        max_buffer_bytes: int = 4096,
    ) -> None:
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if max_packets < 1 or max_buffer_bytes < 1:
            raise ValueError("max_packets and max_buffer_bytes must be >= 1")
        self.timeout_s = timeout_s
        self.max_packets = max_packets
        self.max_buffer_bytes = max_buffer_bytes
        self.stats = ReassemblyStats()
        # Insertion order is arrival order of the first fragment: oldest first.
        self._partials: dict[tuple[Hashable, int], _Partial] = {}
        self._buffered = 0

    @property
    def buffered_bytes(self) -> int:
        return self._buffered

    @property
    def pending(self) -> int:
        return len(self._partials)

    def next_timer(self) -> float | None:
        # Asked after every packet a forwarder handles; nothing is partial most of the time.
        if not self._partials:
            return None
        return min(p.deadline for p in self._partials.values())

    def expire(self, now: float) -> int:
        """Drop partial packets whose timeout has passed; returns how many."""
        dead = [key for key, p in self._partials.items() if p.deadline <= now]
        for key in dead:
            self._drop(key)
        self.stats.timeouts += len(dead)
        return len(dead)

    def _drop(self, key: tuple[Hashable, int]) -> None:
        p = self._partials.pop(key)
        self._buffered -= p.size

    def feed(self, now: float, source: Hashable, frame: bytes) -> bytes | None:
        """Take one fragment from `source`; returns the whole packet when it is complete."""
        try:
            header = FragmentHeader.decode(frame)
        except FragmentError:
            self.stats.errors += 1
            raise
        self.stats.fragments += 1
        if self._partials:  # (nothing to expire otherwise)
            self.expire(now)
        key = (source, header.identification)
        payload = bytes(frame[HEADER_SIZE:])
        p = self._partials.get(key)
        if p is None:
            p = self._partials[key] = _Partial(now + self.timeout_s)
        seq = header.seq
        old = p.pieces.get(seq)
        if old is not None:
            if old == payload:
                self.stats.duplicates += 1
                return None
            return self._fail(key, f"fragment {seq} of packet {header.identification} changed")
        if header.more:
            if p.last is not None and seq >= p.last:
                return self._fail(key, f"fragment {seq} comes after the last fragment {p.last}")
        else:
            if p.last is not None:
                return self._fail(key, f"two last fragments ({p.last} and {seq})")
            if p.pieces and max(p.pieces) > seq:
                return self._fail(key, f"last fragment {seq} precedes fragment {max(p.pieces)}")
            p.last = seq
        p.pieces[seq] = payload
        p.size += len(payload)
        self._buffered += len(payload)
        if p.last is not None and len(p.pieces) == p.last + 1:
            self._drop(key)
            self.stats.packets += 1
            return b"".join(p.pieces[i] for i in range(p.last + 1))
        self._make_room(key)
        return None

    def _fail(self, key: tuple[Hashable, int], why: str) -> NoReturn:
        self._drop(key)
        self.stats.errors += 1
        raise FragmentError(why)

    def _make_room(self, keep: tuple[Hashable, int]) -> None:
        """Evict the oldest other partial packets until both limits hold, then `keep` itself."""
        parts = self._partials
        while len(parts) > self.max_packets or self._buffered > self.max_buffer_bytes:
            victim = next((k for k in parts if k != keep), keep)
            self._drop(victim)
            self.stats.evicted += 1
            if victim == keep:
                break
