"""IEEE 802.15.4 MAC data frames (IEEE 802.15.4-2006 section 7.2) on the wire.

The frames iotbench puts on an 802.15.4-like link: a data frame with a
sequence number, the PAN ID once (PAN ID compression), 8-byte extended
source and destination addresses (or the 0xFFFF short broadcast address as
destination), the payload and the 2-byte FCS (CRC-16, ITU-T, as the standard
computes it). Such a header is 21 bytes and the FCS 2, which leaves 104 of the
127-byte frame for the payload.

`PHY_OVERHEAD_BYTES` are the synchronisation header and the PHY header
(preamble 4, SFD 1, length 1) that precede every frame on the air: they cost
air time but are not part of the frame's bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from iotbench.proto.errors import DecodeError

MAX_FRAME_BYTES = 127  # aMaxPHYPacketSize
PHY_OVERHEAD_BYTES = 6
FCS_BYTES = 2
BROADCAST = b"\xff\xff"
DEFAULT_PAN_ID = 0x23

FRAME_TYPE_DATA = 0x1
ADDR_SHORT, ADDR_EXTENDED = 0x2, 0x3
PAN_ID_COMPRESSION = 0x0040
FRAME_VERSION_2006 = 0x1

_FC = struct.Struct("<HB")  # frame control, sequence number (little endian on the air)


class MacDecodeError(DecodeError):
    """Bytes that are not a well-formed 802.15.4 data frame."""


def crc16(data: bytes) -> int:
    """The FCS: CRC-16 with polynomial x^16 + x^12 + x^5 + 1, zero initial value,
    bits processed least significant first (IEEE 802.15.4-2006 7.2.1.9)."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8408 if crc & 1 else crc >> 1
    return crc


def header_length(dst: bytes) -> int:
    """MAC header bytes of a data frame to `dst` (an 8-byte address or BROADCAST)."""
    return 3 + 2 + len(dst) + 8


@dataclass(frozen=True, slots=True)
class Frame:
    seq: int
    pan_id: int
    dst: bytes  # 8-byte extended address, or the 2-byte short broadcast address
    src: bytes  # 8-byte extended address
    payload: bytes


def encode(frame: Frame) -> bytes:
    """The frame's bytes, FCS included."""
    dst_mode = ADDR_SHORT if len(frame.dst) == 2 else ADDR_EXTENDED
    fc = (
        FRAME_TYPE_DATA
        | PAN_ID_COMPRESSION
        | (dst_mode << 10)
        | (FRAME_VERSION_2006 << 12)
        | (ADDR_EXTENDED << 14)
    )
    # Addresses travel least significant byte first.
    body = (
        _FC.pack(fc, frame.seq & 0xFF)
        + struct.pack("<H", frame.pan_id)
        + frame.dst[::-1]
        + frame.src[::-1]
        + frame.payload
    )
    return body + struct.pack("<H", crc16(body))


def decode(data: bytes) -> Frame:
    """Parse a data frame and check its FCS."""
    if len(data) < 3 + FCS_BYTES:
        raise MacDecodeError(f"802.15.4 frame of {len(data)} bytes is too short")
    if len(data) > MAX_FRAME_BYTES:
        raise MacDecodeError(f"802.15.4 frame of {len(data)} bytes exceeds {MAX_FRAME_BYTES}")
    if struct.unpack_from("<H", data, len(data) - FCS_BYTES)[0] != crc16(data[:-FCS_BYTES]):
        raise MacDecodeError("802.15.4 FCS mismatch")
    fc, seq = _FC.unpack_from(data)
    if fc & 0x7 != FRAME_TYPE_DATA:
        raise MacDecodeError(f"802.15.4 frame type {fc & 0x7} is not data")
    if not fc & PAN_ID_COMPRESSION:
        raise MacDecodeError("802.15.4 frames without PAN ID compression are not supported")
    dst_len = {ADDR_SHORT: 2, ADDR_EXTENDED: 8}.get((fc >> 10) & 0x3)
    src_len = {ADDR_SHORT: 2, ADDR_EXTENDED: 8}.get((fc >> 14) & 0x3)
    if dst_len is None or src_len is None:
        raise MacDecodeError("802.15.4 frame without source or destination address")
    end = 5 + dst_len + src_len
    if end > len(data) - FCS_BYTES:
        raise MacDecodeError("802.15.4 addresses run past the frame")
    (pan_id,) = struct.unpack_from("<H", data, 3)
    dst = data[5 : 5 + dst_len][::-1]
    src = data[5 + dst_len : end][::-1]
    return Frame(seq, pan_id, dst, src, data[end:-FCS_BYTES])


def extended_address(index: int) -> bytes:
    """A node's EUI-64, locally administered (so it names no real vendor)."""
    return bytes((0x02, 0x00, 0x00, 0xFF, 0xFE, 0x00)) + index.to_bytes(2, "big")
