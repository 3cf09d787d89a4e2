"""Whole NDN packets out of a byte stream (a TCP or Unix-socket face).

A stream face carries TLV elements back to back, each an Interest, a Data
or an NDNLPv2 LpPacket, with nothing between them. `TlvFramer` cuts the
stream, in whatever pieces it arrives, into those elements, as NFD's
StreamTransport does:

- an element larger than `max_packet_bytes` (NFD's MAX_NDN_PACKET_SIZE,
  8800 bytes, by default) is an error, so a peer cannot make the framer
  buffer more than that;
- so is a TLV-TYPE of 0 or above 2^32-1, or a VAR-NUMBER not in its
  shortest form (after either, the stream cannot be resynchronised).

On an error NFD closes the face; the caller is expected to do the same (the
framer keeps failing). What an element holds is not checked here: a
malformed Interest inside a well-framed element is the forwarder's to count
and drop, and the stream goes on.
"""

from __future__ import annotations

from .tlv import MAX_TLV_TYPE, NdnDecodeError, read_var_number

__all__ = ["MAX_PACKET_BYTES", "TlvFramer"]

#: NFD's MAX_NDN_PACKET_SIZE: the largest packet a face accepts.
MAX_PACKET_BYTES = 8800


def _var_number_bytes(first: int) -> int:
    """Bytes of a VAR-NUMBER whose first octet is `first`."""
    return 1 if first < 253 else 3 if first == 253 else 5 if first == 254 else 9


class TlvFramer:
    """Feed stream bytes in, get whole TLV elements out (bounded buffering)."""

    __slots__ = ("_buffer", "_failed", "max_packet_bytes")

    def __init__(self, max_packet_bytes: int = MAX_PACKET_BYTES) -> None:
        self.max_packet_bytes = max_packet_bytes
        self._buffer = bytearray()
        self._failed = False

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete element waiting for the rest."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """The elements `data` completes, in order; NdnDecodeError when the stream is bad."""
        if self._failed:
            raise NdnDecodeError("the stream already failed framing")
        buf = self._buffer
        buf += data
        packets = []
        pos = 0
        try:
            while (size := self._element_size(buf, pos)) is not None and pos + size <= len(buf):
                packets.append(bytes(buf[pos : pos + size]))
                pos += size
        except NdnDecodeError:
            self._failed = True
            buf.clear()
            raise
        del buf[:pos]
        return packets

    def _element_size(self, buf: bytearray, pos: int) -> int | None:
        """Size of the element starting at `pos`, or None while its header is incomplete."""
        end = len(buf)
        if pos >= end or pos + _var_number_bytes(buf[pos]) >= end:
            return None  # TLV-TYPE not complete, or nothing after it yet
        t, at = read_var_number(buf, pos, end)
        if t == 0 or t > MAX_TLV_TYPE:
            raise NdnDecodeError(f"TLV-TYPE {t} is outside 1..2**32-1")
        if at + _var_number_bytes(buf[at]) > end:
            return None
        length, start = read_var_number(buf, at, end)
        size = start - pos + length
        if size > self.max_packet_bytes:
            raise NdnDecodeError(
                f"a packet of {size} bytes exceeds the {self.max_packet_bytes}-byte limit"
            )
        return size
