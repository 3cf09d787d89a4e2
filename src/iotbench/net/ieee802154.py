"""IEEE 802.15.4 MAC frames (IEEE 802.15.4-2006 section 7.2) on the wire.

The frames iotbench puts on 802.15.4 media: data frames with a sequence
number, the PAN ID once (PAN ID compression), 2-byte short or 8-byte
extended source and destination addresses (the 0xFFFF short broadcast
address as destination of a broadcast), the Ack Request bit for unicast over
a MAC that acknowledges, the payload and the 2-byte FCS (CRC-16, ITU-T, as the
standard computes it); and acknowledgment frames (7.2.2.3: frame control,
sequence number, FCS; 5 bytes). A data frame with extended addresses has a
21-byte header, which leaves 104 of the 127-byte frame for the payload; with
short addresses the header is 9 bytes.

`PHY_OVERHEAD_BYTES` are the synchronisation header and the PHY header
(preamble 4, SFD 1, length 1) that precede every frame on the air: they cost
air time but are not part of the frame's bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from librt.vecs import append, vec
from mypy_extensions import i64

from iotbench.proto.errors import DecodeError

MAX_FRAME_BYTES: Final = 127  # aMaxPHYPacketSize
PHY_OVERHEAD_BYTES: Final = 6
FCS_BYTES: Final = 2
# The most a data frame carries: 127 bytes less a 21-byte header (PAN ID
# compression, extended addresses) and the FCS.
MAX_PAYLOAD_BYTES: Final = MAX_FRAME_BYTES - 21 - FCS_BYTES
ACK_FRAME_BYTES: Final = 5
BROADCAST: Final = b"\xff\xff"
DEFAULT_PAN_ID: Final = 0x23

FRAME_TYPE_DATA: Final = 0x1
FRAME_TYPE_ACK: Final = 0x2
SECURITY_ENABLED: Final = 0x0008
FRAME_PENDING: Final = 0x0010
ACK_REQUEST: Final = 0x0020
PAN_ID_COMPRESSION: Final = 0x0040
ADDR_NONE: Final = 0x0
ADDR_SHORT: Final = 0x2
ADDR_EXTENDED: Final = 0x3
FRAME_VERSION_2006: Final = 0x1
_ADDR_LEN: Final = {ADDR_SHORT: 2, ADDR_EXTENDED: 8}
_ADDR_MODE: Final = {2: ADDR_SHORT, 8: ADDR_EXTENDED}

_FC: Final = struct.Struct("<HB")  # frame control, sequence number (little endian on the air)
_U16: Final = struct.Struct("<H")


def _crc_table() -> vec[i64]:
    """CRC-16/KERMIT's register after 8 bit steps from each byte value: the
    polynomial reflected (0x8408), as bits go least significant first."""
    table = vec[i64]()
    for value in range(256):
        crc = value
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8408 if crc & 1 else crc >> 1
        table = append(table, crc)
    return table


_CRC_TABLE: Final = _crc_table()


# Addresses travel least significant byte first. Compiled, [::-1] is Python's
# generic slicing (a slice object, then the bytes type's own subscript: about
# 400 instructions), and a MAC turns four addresses around for every frame it
# sends or takes. A network has few addresses: each one's other byte order is
# remembered, up to _FLIPS_KEPT of them, then all forgotten at once (a pure
# function: what it gives never depends on what is remembered).
_FLIPPED: Final[dict[bytes, bytes]] = {}
_FLIPS_KEPT: Final = 1 << 16


def flipped(address: bytes) -> bytes:
    """`address` in the other byte order: as the air carries it, or back."""
    other = _FLIPPED.get(address)
    if other is None:
        if len(_FLIPPED) >= _FLIPS_KEPT:
            _FLIPPED.clear()
        other = _FLIPPED[address] = address[::-1]
    return other


# A received frame's two addresses as they stand on the air, side by side, to both
# in our byte order: one slice and one lookup for the pair, where each address
# alone took a slice of its own and a lookup that hashed it (a MAC takes every
# frame addressed to it this way). One table per destination length: the same
# bytes split after 2 or after 8 are different pairs. Forgotten as _FLIPPED is.
_PAIRS_TO_SHORT: Final[dict[bytes, tuple[bytes, bytes]]] = {}
_PAIRS_TO_EXTENDED: Final[dict[bytes, tuple[bytes, bytes]]] = {}


def frame_addresses(data: bytes, dst_len: int, src_end: int) -> tuple[bytes, bytes]:
    """A data frame's (destination, source) addresses in our byte order: the
    destination's `dst_len` bytes (2 or 8) from offset 5, then the source's up
    to `src_end`."""
    pairs = _PAIRS_TO_SHORT if dst_len == 2 else _PAIRS_TO_EXTENDED
    air = data[5:src_end]
    pair = pairs.get(air)
    if pair is None:
        if len(pairs) >= _FLIPS_KEPT:
            pairs.clear()
        pair = pairs[air] = (flipped(air[:dst_len]), flipped(air[dst_len:]))
    return pair


class MacDecodeError(DecodeError):
    """Bytes that are not a well-formed 802.15.4 frame of the kinds iotbench uses."""


def crc16(data: bytes) -> int:
    """The FCS: CRC-16 with polynomial x^16 + x^12 + x^5 + 1, zero initial value,
    bits processed least significant first (IEEE 802.15.4-2006 7.2.1.9)."""
    # A byte at a time from a table, compiled: about 15 instructions a byte, where
    # binascii's CRC-CCITT on the bit-reversed bytes (its unreflected twin) took
    # twice that with its two calls through Python and a copy of the frame.
    table = _CRC_TABLE
    crc: i64 = 0
    i: i64
    for i in range(len(data)):
        crc = (crc >> 8) ^ table[(crc ^ data[i]) & 0xFF]
    return crc


def header_length(dst: bytes, src_len: int = 8) -> int:
    """MAC header bytes of a data frame to `dst` (2 or 8 bytes) from a `src_len` address."""
    return 3 + 2 + len(dst) + src_len


@dataclass(frozen=True, slots=True)
class Frame:
    """A data frame. `dst` and `src` are 2-byte short or 8-byte extended addresses."""

    seq: int
    pan_id: int
    dst: bytes
    src: bytes
    payload: bytes
    ack_request: bool = False

    def __init__(
        self,
        seq: int,
        pan_id: int,
        dst: bytes,
        src: bytes,
        payload: bytes,
        ack_request: bool = False,
    ) -> None:
        object.__setattr__(self, "seq", seq)
        object.__setattr__(self, "pan_id", pan_id)
        object.__setattr__(self, "dst", dst)
        object.__setattr__(self, "src", src)
        object.__setattr__(self, "payload", payload)
        object.__setattr__(self, "ack_request", ack_request)


@dataclass(frozen=True, slots=True)
class Ack:
    """An acknowledgment frame."""

    seq: int
    frame_pending: bool = False

    def __init__(self, seq: int, frame_pending: bool = False) -> None:
        object.__setattr__(self, "seq", seq)
        object.__setattr__(self, "frame_pending", frame_pending)


def encode(frame: Frame) -> bytes:
    """The frame's bytes, FCS included. ValueError for a frame longer than 127 bytes
    (aMaxPHYPacketSize, 6.4.1), which decode() and every receiver refuse."""
    return encode_data(
        frame.seq, frame.pan_id, frame.dst, frame.src, frame.payload, frame.ack_request
    )


def encode_data(
    seq: int, pan_id: int, dst: bytes, src: bytes, payload: bytes, ack_request: bool
) -> bytes:
    """`encode` of a data frame given by its fields: what a MAC sends for every
    frame, without building a (frozen, so slow to build) Frame first.
    ValueError for a PAN identifier that is not a 16-bit value."""
    if not 0 <= pan_id <= 0xFFFF:
        raise ValueError(f"PAN identifier {pan_id} is not a 16-bit value")
    fc = (
        FRAME_TYPE_DATA
        | PAN_ID_COMPRESSION
        | (_ADDR_MODE[len(dst)] << 10)
        | (FRAME_VERSION_2006 << 12)
        | (_ADDR_MODE[len(src)] << 14)
    )
    if ack_request:
        fc |= ACK_REQUEST
    # Frame control, sequence number and PAN identifier, little endian as on the
    # air, made as one integer's bytes: compiled, int.to_bytes is a direct call,
    # struct's pack a method call through Python (about 575 instructions each,
    # three per frame). Addresses travel least significant byte first.
    head = (fc | (seq & 0xFF) << 16 | pan_id << 24).to_bytes(5, "little")
    body = head + flipped(dst) + flipped(src) + payload
    if len(body) + FCS_BYTES > MAX_FRAME_BYTES:
        raise ValueError(
            f"802.15.4 frame of {len(body) + FCS_BYTES} bytes exceeds {MAX_FRAME_BYTES}"
        )
    return body + crc16(body).to_bytes(2, "little")


def encode_ack(seq: int, frame_pending: bool = False) -> bytes:
    """An acknowledgment frame (7.2.2.3); version 0, as 2006 devices send them."""
    if not frame_pending:
        return _ACKS[seq & 0xFF]
    return _encode_ack(seq, frame_pending)


def _encode_ack(seq: int, frame_pending: bool) -> bytes:
    fc = FRAME_TYPE_ACK | (FRAME_PENDING if frame_pending else 0)
    body = _FC.pack(fc, seq & 0xFF)
    return body + _U16.pack(crc16(body))


# Every unicast frame is acknowledged, and there are only 256 plain ACKs.
_ACKS: Final = [_encode_ack(seq, False) for seq in range(256)]


def decode(data: bytes) -> Frame | Ack:
    """Parse a data or acknowledgment frame and check its FCS.

    A data frame must use PAN ID compression, short or extended addresses, no
    security and frame version 0 (2003) or 1 (2006); the Frame Pending and
    reserved frame control bits are ignored (7.2.1.1: reserved bits are ignored on
    receipt), so encode() of the result differs from `data` at most in those bits
    and the version.
    """
    fc, seq, dst_len, end = _layout(data)
    if end < 0:
        return Ack(seq, bool(fc & FRAME_PENDING))
    pan_id = data[3] | data[4] << 8
    dst, src = frame_addresses(data, dst_len, end)
    return Frame(seq, pan_id, dst, src, data[end:-FCS_BYTES], bool(fc & ACK_REQUEST))


def payload_of(data: bytes) -> bytes | None:
    """What decode(data).payload is for a data frame, None for an acknowledgment,
    MacDecodeError for what decode rejects: the same checks, without building
    the Frame (a metric looks at every frame's payload)."""
    _fc, _seq, _dst_len, end = _layout(data)
    return data[end:-FCS_BYTES] if end >= 0 else None


def _layout(data: bytes) -> tuple[int, int, int, int]:
    """decode's checks: (frame control, sequence number, destination address
    length, where the payload starts: -1 for an acknowledgment)."""
    if len(data) < 3 + FCS_BYTES:
        raise MacDecodeError(f"802.15.4 frame of {len(data)} bytes is too short")
    if len(data) > MAX_FRAME_BYTES:
        raise MacDecodeError(f"802.15.4 frame of {len(data)} bytes exceeds {MAX_FRAME_BYTES}")
    # Fields read byte by byte (little endian), not through struct's unpack_from:
    # compiled, each is a method call through Python and a tuple.
    if data[-2] | data[-1] << 8 != crc16(data[:-FCS_BYTES]):
        raise MacDecodeError("802.15.4 FCS mismatch")
    fc, seq = data[0] | data[1] << 8, data[2]
    frame_type = fc & 0x7
    if frame_type == FRAME_TYPE_ACK:
        if len(data) != ACK_FRAME_BYTES:
            raise MacDecodeError(f"802.15.4 acknowledgment of {len(data)} bytes, not 5")
        return fc, seq, 0, -1
    if frame_type != FRAME_TYPE_DATA:
        raise MacDecodeError(f"802.15.4 frame type {frame_type} is not data or acknowledgment")
    # 7.2.1.1.2: with Security Enabled an Auxiliary Security Header follows the
    # addresses (7.2.1.7); iotbench does no MAC security, and reading that header as
    # payload would hand garbage up. 7.2.1.1.7: frame versions 0x02-0x03 are reserved
    # (802.15.4-2015 gave 0x02 other layouts: IEs, suppressed sequence numbers).
    if fc & SECURITY_ENABLED:
        raise MacDecodeError("802.15.4 frames with Security Enabled are not supported")
    if (fc >> 12) & 0x3 > FRAME_VERSION_2006:
        raise MacDecodeError(f"802.15.4 frame version {(fc >> 12) & 0x3} is reserved")
    if not fc & PAN_ID_COMPRESSION:
        raise MacDecodeError("802.15.4 frames without PAN ID compression are not supported")
    dst_len = _ADDR_LEN.get((fc >> 10) & 0x3)
    src_len = _ADDR_LEN.get((fc >> 14) & 0x3)
    if dst_len is None or src_len is None:
        raise MacDecodeError("802.15.4 frame without source or destination address")
    end = 5 + dst_len + src_len
    if end > len(data) - FCS_BYTES:
        raise MacDecodeError("802.15.4 addresses run past the frame")
    return fc, seq, dst_len, end


def extended_address(index: int, network: int = 0) -> bytes:
    """A node's EUI-64, locally administered (so it names no real vendor):
    02:00:HH:ff:fe:NN:LL:LL, the node's `index` in HH and LLLL and `network` in NN,
    which tells the radio networks of one run apart (their nodes' addresses never
    repeat). HH is 0 below 65,536 nodes; it takes networks of up to 2**24 nodes."""
    if not 0 <= index < 1 << 24:
        raise ValueError(f"no extended address for node index {index}")
    if not 0 <= network < 256:
        raise ValueError(f"no extended address for radio network {network}")
    return bytes((0x02, 0x00, index >> 16, 0xFF, 0xFE, network)) + (index & 0xFFFF).to_bytes(
        2, "big"
    )


def short_address(index: int) -> bytes:
    """A node's 16-bit short address (0xFFFE and 0xFFFF are reserved)."""
    if not 0 <= index < 0xFFFE:
        raise ValueError(f"no short address for node index {index}")
    return index.to_bytes(2, "big")
