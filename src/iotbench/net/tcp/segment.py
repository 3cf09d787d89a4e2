"""TCP segments on the wire (RFC 9293 section 3.1) with their options.

Options are laid out as Linux lays them out, because S1 counts their bytes:
a SYN carries MSS, SACK-permitted + timestamps (10 + 2 bytes, no padding),
NOP + window scale, and a TCP Fast Open option (RFC 7413) padded with NOPs;
later segments carry NOP NOP timestamps and NOP NOP SACK blocks. Every option
can be absent. `decode` accepts any valid layout and raises `TcpDecodeError`
(a `DecodeError`) for anything malformed, checksum included.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from iotbench.net.checksum import internet_checksum
from iotbench.net.ip import IPPROTO_TCP, pseudo_header_sum
from iotbench.proto.errors import DecodeError

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80
FLAG_NAMES = ((SYN, "S"), (FIN, "F"), (RST, "R"), (PSH, "P"), (ACK, "."), (URG, "U"))

HEADER_LEN = 20
MAX_OPTIONS_LEN = 40

OPT_EOL, OPT_NOP, OPT_MSS, OPT_WSCALE, OPT_SACK_PERMITTED, OPT_SACK = 0, 1, 2, 3, 4, 5
OPT_TIMESTAMPS, OPT_FAST_OPEN = 8, 34
MAX_WSCALE = 14  # RFC 7323 2.3

_HEADER = struct.Struct("!HHIIBBHHH")
_TS = struct.Struct("!BBII")


class TcpDecodeError(DecodeError):
    """Bytes that are not a well-formed TCP segment."""


@dataclass(slots=True)
class Segment:
    """One TCP segment. Sequence and acknowledgment numbers are 32-bit wire values."""

    src_port: int
    dst_port: int
    seq: int
    ack: int
    flags: int
    window: int
    payload: bytes = b""
    mss: int | None = None
    wscale: int | None = None
    sack_permitted: bool = False
    sack_blocks: tuple[tuple[int, int], ...] = ()  # (left, right) wire values
    timestamps: tuple[int, int] | None = None  # (TSval, TSecr)
    # None: no Fast Open option; b"": a cookie request; otherwise the cookie.
    fast_open: bytes | None = None
    urgent: int = 0
    header_len: int = field(default=0, compare=False)

    @property
    def seq_len(self) -> int:
        """Sequence space the segment occupies: payload, plus one each for SYN and FIN."""
        return len(self.payload) + (self.flags & SYN != 0) + (self.flags & FIN != 0)

    def summary(self) -> str:
        flags = "".join(name for bit, name in FLAG_NAMES if self.flags & bit) or "none"
        return (
            f"{self.src_port} > {self.dst_port} [{flags}] seq={self.seq} ack={self.ack} "
            f"win={self.window} len={len(self.payload)}"
        )


def options_bytes(seg: Segment) -> bytes:
    """The option bytes of `seg`, Linux layout, padded to a multiple of 4."""
    out = bytearray()
    if seg.mss is not None:
        out += struct.pack("!BBH", OPT_MSS, 4, seg.mss)
    if seg.sack_permitted and seg.timestamps is not None:
        out += bytes((OPT_SACK_PERMITTED, 2)) + _TS.pack(OPT_TIMESTAMPS, 10, *seg.timestamps)
    elif seg.timestamps is not None:
        out += bytes((OPT_NOP, OPT_NOP)) + _TS.pack(OPT_TIMESTAMPS, 10, *seg.timestamps)
    elif seg.sack_permitted:
        out += bytes((OPT_NOP, OPT_NOP, OPT_SACK_PERMITTED, 2))
    if seg.wscale is not None:
        out += bytes((OPT_NOP, OPT_WSCALE, 3, seg.wscale))
    if seg.sack_blocks:
        out += bytes((OPT_NOP, OPT_NOP, OPT_SACK, 2 + 8 * len(seg.sack_blocks)))
        for left, right in seg.sack_blocks:
            out += struct.pack("!II", left, right)
    if seg.fast_open is not None:
        out += bytes((OPT_FAST_OPEN, 2 + len(seg.fast_open))) + seg.fast_open
        out += bytes((OPT_NOP,)) * (-len(out) % 4)  # trailing NOPs, as Linux pads it
    if len(out) > MAX_OPTIONS_LEN:
        raise ValueError(f"TCP options of {len(out)} bytes exceed {MAX_OPTIONS_LEN}")
    return bytes(out)


def encode(seg: Segment, src: bytes, dst: bytes) -> bytes:
    """The segment's bytes with its checksum over the IPv4/IPv6 pseudo-header."""
    options = options_bytes(seg)
    header_len = HEADER_LEN + len(options)
    seg.header_len = header_len
    offset_flags = ((header_len // 4) << 12) | seg.flags
    header = _HEADER.pack(
        seg.src_port,
        seg.dst_port,
        seg.seq,
        seg.ack,
        offset_flags >> 8,
        offset_flags & 0xFF,
        seg.window,
        0,
        seg.urgent,
    )
    body = header + options + seg.payload
    checksum = internet_checksum(body, pseudo_header_sum(src, dst, IPPROTO_TCP, len(body)))
    return body[:16] + checksum.to_bytes(2, "big") + body[18:]


def decode(data: bytes, src: bytes, dst: bytes, *, verify: bool = True) -> Segment:
    """Parse a segment; `verify` checks the checksum against the pseudo-header."""
    size = len(data)
    if size < HEADER_LEN:
        raise TcpDecodeError(f"TCP segment of {size} bytes is shorter than a header")
    sport, dport, seq, ack, offset, flags, window, _checksum, urgent = _HEADER.unpack_from(data)
    header_len = (offset >> 4) * 4
    if header_len < HEADER_LEN or header_len > size:
        raise TcpDecodeError(f"TCP data offset {header_len} does not fit the {size} bytes")
    if offset & 0x0F:
        raise TcpDecodeError("TCP reserved bits set")
    if verify and internet_checksum(data, pseudo_header_sum(src, dst, IPPROTO_TCP, size)) != 0:
        raise TcpDecodeError("TCP checksum mismatch")
    seg = Segment(sport, dport, seq, ack, flags, window, bytes(data[header_len:]), urgent=urgent)
    seg.header_len = header_len
    _parse_options(seg, data[HEADER_LEN:header_len])
    return seg


def _parse_options(seg: Segment, raw: bytes) -> None:
    i, end = 0, len(raw)
    while i < end:
        kind = raw[i]
        if kind == OPT_EOL:
            return
        if kind == OPT_NOP:
            i += 1
            continue
        if i + 1 >= end:
            raise TcpDecodeError(f"TCP option {kind} has no length byte")
        length = raw[i + 1]
        if length < 2 or i + length > end:
            raise TcpDecodeError(f"TCP option {kind} has a bad length {length}")
        value = raw[i + 2 : i + length]
        if kind == OPT_MSS:
            _expect(kind, length, 4)
            seg.mss = int.from_bytes(value, "big")
        elif kind == OPT_WSCALE:
            _expect(kind, length, 3)
            # RFC 7323 2.3: a shift above 14 is used as 14.
            seg.wscale = min(value[0], MAX_WSCALE)
        elif kind == OPT_SACK_PERMITTED:
            _expect(kind, length, 2)
            seg.sack_permitted = True
        elif kind == OPT_SACK:
            if (length - 2) % 8 or length == 2:
                raise TcpDecodeError(f"TCP SACK option length {length} is not 2 + 8n")
            seg.sack_blocks = tuple(
                struct.unpack_from("!II", value, j) for j in range(0, length - 2, 8)
            )
        elif kind == OPT_TIMESTAMPS:
            _expect(kind, length, 10)
            seg.timestamps = struct.unpack("!II", value)
        elif kind == OPT_FAST_OPEN:
            cookie = bytes(value)
            # RFC 7413 4.1.1: a cookie is 4 to 16 bytes, or absent in a request.
            if cookie and not 4 <= len(cookie) <= 16:
                raise TcpDecodeError(f"TCP Fast Open cookie of {len(cookie)} bytes")
            seg.fast_open = cookie
        # Unknown options are skipped by their length, as RFC 9293 3.2 requires.
        i += length


def _expect(kind: int, length: int, wanted: int) -> None:
    if length != wanted:
        raise TcpDecodeError(f"TCP option {kind} has length {length}, expected {wanted}")
