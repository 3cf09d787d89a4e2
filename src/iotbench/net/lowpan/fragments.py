"""6LoWPAN fragmentation and reassembly (RFC 4944 section 5.3, RFC 6282 section 2).

An IPv6 packet that does not fit one 802.15.4 frame travels as link
fragments. The first carries a FRAG1 header and the compressed headers, the
others a FRAGN header with their offset:

    FRAG1:  1 1 0 0 0 | datagram_size (11) | datagram_tag (16)
    FRAGN:  1 1 1 0 0 | datagram_size (11) | datagram_tag (16) | datagram_offset (8)

datagram_size and datagram_offset count bytes of the UNCOMPRESSED IPv6
datagram (RFC 6282 section 2), the offset in units of 8 bytes: a receiver
can place every fragment without decompressing the first.

`Reassembler` takes every 6LoWPAN frame payload a node receives, fragmented
or not, and hands back whole IPv6 packets. Fragments belong together when
their link source, link destination, datagram_size and datagram_tag match
(RFC 4944 5.3). A fragment that matches a datagram in progress in all but its
size means the size changed: that datagram is discarded and the fragment
starts a new one, so at most one size per (source, destination, tag) is ever
in progress.

Its memory is bounded whatever arrives: a datagram is admitted only while at
most `max_datagrams` are in progress and the sizes of those admitted fit in
`max_bytes`, and a datagram's fragments never overlap and never pass its
size, so it never holds more than its size.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from iotbench.net.lowpan.codec import (
    Compressed,
    LowpanDecodeError,
    check_contexts,
    decode_header_checked,
    decompress_checked,
)
from iotbench.net.lowpan.dispatch import DISPATCH_FRAG1, DISPATCH_FRAGN, Dispatch, classify
from iotbench.net.pktbuf import PacketBuffer

FRAG1_HEADER_LEN: Final = 4
FRAGN_HEADER_LEN: Final = 5
MAX_DATAGRAM_SIZE: Final = 0x7FF  # 11 bits
MAX_TAG: Final = 0xFFFF
OFFSET_UNIT: Final = 8
MIN_DATAGRAM_SIZE: Final = 40  # an IPv6 header
DEFAULT_TIMEOUT_S: Final = 60.0  # RFC 4944 5.3: at most 60 seconds
_FRAG1: Final = struct.Struct("!HH")
_FRAGN: Final = struct.Struct("!HHB")


def frag1_header(size: int, tag: int) -> bytes:
    """The 4-byte FRAG1 header of a datagram of `size` uncompressed bytes."""
    _check_size_and_tag(size, tag)
    return _FRAG1.pack((DISPATCH_FRAG1 << 8) | size, tag)


def fragn_header(size: int, tag: int, offset: int) -> bytes:
    """The 5-byte FRAGN header; `offset` in bytes of the uncompressed datagram."""
    _check_size_and_tag(size, tag)
    if offset % OFFSET_UNIT or not 0 <= offset // OFFSET_UNIT <= 0xFF:
        raise ValueError(f"fragment offset {offset} is not a multiple of 8 below 2048")
    return _FRAGN.pack((DISPATCH_FRAGN << 8) | size, tag, offset // OFFSET_UNIT)


def _check_size_and_tag(size: int, tag: int) -> None:
    if not 0 <= size <= MAX_DATAGRAM_SIZE:
        raise ValueError(f"datagram of {size} bytes: 6LoWPAN fragments at most 2047")
    if not 0 <= tag <= MAX_TAG:
        raise ValueError(f"datagram tag {tag} is not 16 bits")


# Records below write out their __init__: compiled, it stores each field
# directly, where the one @dataclass generates is interpreted Python
# (tests/test_written_inits.py keeps it equal to the fields).


@dataclass(frozen=True, slots=True)
class FragmentHeader:
    first: bool  # FRAG1 (True) or FRAGN
    size: int  # datagram_size: bytes of the uncompressed datagram
    tag: int
    offset: int  # in bytes of the uncompressed datagram (0 for FRAG1)
    length: int  # bytes of this header: 4 or 5

    def __init__(self, first: bool, size: int, tag: int, offset: int, length: int) -> None:
        object.__setattr__(self, "first", first)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "tag", tag)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "length", length)


def parse_fragment_header(data: bytes) -> FragmentHeader:
    """The FRAG1 or FRAGN header at the start of `data` (LowpanDecodeError otherwise)."""
    kind = classify(data[0]) if data else None
    if kind is Dispatch.FRAG1:
        if len(data) < FRAG1_HEADER_LEN:
            raise LowpanDecodeError("truncated FRAG1 header")
        size_field, tag = _FRAG1.unpack_from(data)
        return FragmentHeader(True, size_field & MAX_DATAGRAM_SIZE, tag, 0, FRAG1_HEADER_LEN)
    if kind is Dispatch.FRAGN:
        if len(data) < FRAGN_HEADER_LEN:
            raise LowpanDecodeError("truncated FRAGN header")
        size_field, tag, units = _FRAGN.unpack_from(data)
        size = size_field & MAX_DATAGRAM_SIZE
        return FragmentHeader(False, size, tag, units * OFFSET_UNIT, FRAGN_HEADER_LEN)
    raise LowpanDecodeError("not a 6LoWPAN fragment header")


def fragment(compressed: Compressed, tag: int, room: int) -> list[bytes]:
    """The frame payloads that carry `compressed`, each at most `room` bytes.

    If `header + payload` fits in `room`, that is the one piece, with no
    fragment header. Otherwise:

    - piece 0 is the FRAG1 header (4 bytes), then `compressed.header` whole
      (its `ip_header_len` bytes of IPv6 header, then its
      `transport_header_len` bytes of UDP header), then the first bytes of
      `compressed.payload`: as many as fit while keeping the next fragment's
      offset in the uncompressed datagram a multiple of 8;
    - every later piece is a FRAGN header (5 bytes), then the next bytes of
      `compressed.payload`: a multiple of 8 of them, except in the last piece.

    So a piece's bytes split into layers as: fragment header (0, 4 or 5
    bytes), compressed IP header, compressed transport header (these two in
    the first piece only), payload. Raises ValueError when the datagram is
    too large for the 11-bit datagram_size, or `room` cannot hold the
    compressed header in the first fragment or 8 bytes in the others (RFC 6282
    section 2: the headers must fit in the first fragment).
    """
    whole = compressed.header + compressed.payload
    if len(whole) <= room:
        return [whole]
    size = compressed.datagram_size
    _check_size_and_tag(size, tag)
    start = compressed.uncompressed_header_len  # uncompressed offset of payload[0]
    # The first fragment ends where the uncompressed offset is a multiple of 8.
    first_end = (start + room - FRAG1_HEADER_LEN - len(compressed.header)) // OFFSET_UNIT
    first_len = first_end * OFFSET_UNIT - start
    if first_len < 0:
        raise ValueError(f"{room} bytes cannot hold the {len(compressed.header)}-byte header")
    chunk = (room - FRAGN_HEADER_LEN) // OFFSET_UNIT * OFFSET_UNIT
    if chunk <= 0:
        raise ValueError(f"{room} bytes leave no room for fragment data")
    payload = compressed.payload
    pieces = [frag1_header(size, tag) + compressed.header + payload[:first_len]]
    for begin in range(first_len, len(payload), chunk):
        offset = start + begin
        pieces.append(fragn_header(size, tag, offset) + payload[begin : begin + chunk])
    return pieces


@dataclass
class _Datagram:
    size: int
    deadline: float
    pieces: dict[int, bytes] = field(default_factory=dict)  # offset -> uncompressed bytes
    held: int = 0


class Reassembler:
    """Puts 6LoWPAN fragments back together; never raises on bad input.

    Counters:
    - `decode_errors`: frame payloads that are not 6LoWPAN this module can
      decode (bad dispatch, truncated or malformed headers, a fragment that
      lies beyond its datagram size, an empty fragment);
    - `not_lowpan`: NALP payloads (RFC 4944's "not a LoWPAN frame");
    - `timeouts`: datagrams not complete within `timeout_s` of their first
      fragment;
    - `discarded`: datagrams given up for conflicting fragments (an overlap
      that is not an exact duplicate), a datagram_size that changed or a
      fragment beyond the size, or not admitted for lack of room;
    - `completed`: datagrams reassembled from fragments (unfragmented packets
      are returned without counting here).

    On a conflicting fragment or a changed size, RFC 4944 5.3 has the
    fragments already received discarded and lets a fresh reassembly start
    with the newest fragment; this one does.
    """

    def __init__(
        self,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_datagrams: int = 8,
        max_bytes: int = 8 * 1280,
        contexts: Mapping[int, bytes] | None = None,
        pktbuf: PacketBuffer | None = None,
    ) -> None:
        if timeout_s <= 0 or max_datagrams < 1 or max_bytes < 0:
            raise ValueError("timeout_s and max_datagrams must be positive, max_bytes not negative")
        self.timeout_s = timeout_s
        self.max_datagrams = max_datagrams
        self.max_bytes = max_bytes
        self.contexts = check_contexts(contexts)
        self._datagrams: dict[tuple[bytes, bytes, int], _Datagram] = {}
        self._reserved = 0  # sum of the sizes of the datagrams in progress
        # The node's packet memory (net/pktbuf.py): a datagram in progress holds
        # its full size there too.
        self.pktbuf = pktbuf
        self.decode_errors = 0
        self.not_lowpan = 0
        self.timeouts = 0
        self.discarded = 0
        self.completed = 0

    def add(self, now: float, src_mac: bytes, dst_mac: bytes, frame_payload: bytes) -> bytes | None:
        """Take one frame's 6LoWPAN payload; the whole IPv6 packet once there is one."""
        if self._datagrams:  # (on every frame's path: nothing to expire, no call)
            self.expire(now)
        kind = classify(frame_payload[0]) if frame_payload else None
        if kind is Dispatch.NALP:
            self.not_lowpan += 1
            return None
        try:
            if kind is Dispatch.FRAG1 or kind is Dispatch.FRAGN:
                return self._add_fragment(now, src_mac, dst_mac, frame_payload)
            return decompress_checked(frame_payload, src_mac, dst_mac, self.contexts)
        except LowpanDecodeError:
            self.decode_errors += 1
            return None

    def _add_fragment(
        self, now: float, src_mac: bytes, dst_mac: bytes, frame_payload: bytes
    ) -> bytes | None:
        header = parse_fragment_header(frame_payload)
        body = frame_payload[header.length :]
        if header.size < MIN_DATAGRAM_SIZE:
            raise LowpanDecodeError(f"datagram size {header.size} is below an IPv6 header")
        if header.first:
            decoded = decode_header_checked(body, src_mac, dst_mac, self.contexts)
            # Lengths come from datagram_size; complete() rejects a size too
            # small for the headers, so the piece starts with valid headers.
            piece = decoded.complete(header.size) + bytes(body[decoded.consumed :])
        else:
            if header.offset == 0:
                raise LowpanDecodeError("FRAGN at offset 0: the first fragment is a FRAG1")
            piece = bytes(body)
            if not piece:
                raise LowpanDecodeError("FRAGN without data")
        key = (bytes(src_mac), bytes(dst_mac), header.tag)
        datagram = self._datagrams.get(key)
        if datagram is not None and datagram.size != header.size:
            self._discard(key)  # a new datagram reusing the tag, or a corrupt one
            datagram = None
        if header.offset + len(piece) > header.size:
            if datagram is not None:
                self._discard(key)
            raise LowpanDecodeError(
                f"fragment ends at {header.offset + len(piece)}, beyond the size {header.size}"
            )
        if datagram is not None:
            conflict = self._conflict(datagram, header.offset, piece)
            if conflict is None:
                return None  # an exact duplicate: nothing new
            if conflict:
                self._discard(key)
                datagram = None
        if datagram is None:
            datagram = self._admit(key, header.size, now)
            if datagram is None:
                return None
        datagram.pieces[header.offset] = piece
        datagram.held += len(piece)
        if datagram.held < datagram.size:
            return None
        # Pieces never overlap and all lie within the size, so holding `size`
        # bytes means every byte is there.
        del self._datagrams[key]
        self._release(datagram.size)
        self.completed += 1
        return b"".join(datagram.pieces[offset] for offset in sorted(datagram.pieces))

    @staticmethod
    def _conflict(datagram: _Datagram, offset: int, piece: bytes) -> bool | None:
        """None for an exact duplicate, True if `piece` overlaps any other way, else False."""
        end = offset + len(piece)
        for other_offset, other in datagram.pieces.items():
            if other_offset < end and offset < other_offset + len(other):
                if other_offset == offset and other == piece:
                    return None
                return True
        return False

    @property
    def reserved_bytes(self) -> int:
        """The sizes of the datagrams in progress, which their packet memory holds."""
        return self._reserved

    def _admit(self, key: tuple[bytes, bytes, int], size: int, now: float) -> _Datagram | None:
        if (
            len(self._datagrams) >= self.max_datagrams
            or self._reserved + size > self.max_bytes
            or (self.pktbuf is not None and not self.pktbuf.take(size))
        ):
            self.discarded += 1
            return None
        datagram = self._datagrams[key] = _Datagram(size, now + self.timeout_s)
        self._reserved += size
        return datagram

    def _release(self, size: int) -> None:
        self._reserved -= size
        if self.pktbuf is not None:
            self.pktbuf.give(size)

    def _discard(self, key: tuple[bytes, bytes, int]) -> None:
        self._drop(key)
        self.discarded += 1

    def _drop(self, key: tuple[bytes, bytes, int]) -> None:
        datagram = self._datagrams.pop(key)
        self._release(datagram.size)

    def expire(self, now: float) -> None:
        """Drop the datagrams whose reassembly time ran out by `now`."""
        for key in [k for k, d in self._datagrams.items() if d.deadline <= now]:
            self._drop(key)
            self.timeouts += 1

    def next_expiry(self) -> float | None:
        """The earliest deadline of a datagram in progress, or None."""
        return min((d.deadline for d in self._datagrams.values()), default=None)

    @property
    def held_bytes(self) -> int:
        """Bytes of fragments held, at most `max_bytes`."""
        return sum(d.held for d in self._datagrams.values())

    def __len__(self) -> int:
        return len(self._datagrams)
