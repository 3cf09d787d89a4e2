"""ICMPv6 message framing (RFC 4443 section 2).

Only the framing every ICMPv6 user shares: the 4-byte header (type, code,
checksum) and the checksum over the IPv6 pseudo-header (RFC 4443 2.3, with the
pseudo-header of RFC 8200 8.1). What a message body means is the job of the
protocol that owns the type, such as RPL (type 155) in `iotbench.net.rpl`.
"""

from __future__ import annotations

import struct
from typing import Final

from iotbench.net.checksum import internet_checksum, ones_complement_sum
from iotbench.net.ip import pseudo_header_sum
from iotbench.proto.errors import DecodeError
from iotbench.proto.octets import as_bytes

__all__ = [
    "ICMPV6_HEADER_LEN",
    "ICMPV6_RPL",
    "IPPROTO_ICMPV6",
    "Icmpv6DecodeError",
    "build_icmpv6",
    "parse_icmpv6",
]

IPPROTO_ICMPV6: Final = 58  # the IPv6 Next Header value of ICMPv6
ICMPV6_RPL: Final = 155  # RPL Control Message (RFC 6550 section 6)
ICMPV6_HEADER_LEN: Final = 4

_HEADER: Final = struct.Struct("!BBH")


class Icmpv6DecodeError(DecodeError):
    """Bytes that are not a well-formed ICMPv6 message for the given addresses."""


def _check_addresses(src: bytes, dst: bytes) -> None:
    # A wrong address length is a caller's bug, not bad input from the network:
    # the addresses come from an IPv6 header that was already parsed.
    if len(src) != 16 or len(dst) != 16:
        raise ValueError("ICMPv6 needs 16-byte IPv6 source and destination addresses")


def build_icmpv6(src: bytes, dst: bytes, type_: int, code: int, body: bytes) -> bytes:
    """The ICMPv6 message (header + body) with its checksum over the pseudo-header."""
    _check_addresses(src, dst)
    if not (0 <= type_ <= 0xFF and 0 <= code <= 0xFF):
        raise ValueError(f"ICMPv6 type {type_} and code {code} must be 8-bit values")
    length = ICMPV6_HEADER_LEN + len(body)
    # The header is 4 bytes, so the body's 16-bit words stay aligned when it is
    # summed on its own; type and code form one word, the checksum field is zero.
    start = pseudo_header_sum(src, dst, IPPROTO_ICMPV6, length) + ((type_ << 8) | code)
    checksum = internet_checksum(as_bytes(body), start)
    return _HEADER.pack(type_, code, checksum) + body


def parse_icmpv6(message: bytes, src: bytes, dst: bytes) -> tuple[int, int, bytes]:
    """(type, code, body) of an ICMPv6 message whose checksum is verified."""
    _check_addresses(src, dst)
    if len(message) < ICMPV6_HEADER_LEN:
        raise Icmpv6DecodeError(
            f"ICMPv6 message of {len(message)} bytes is shorter than its 4-byte header"
        )
    message = as_bytes(message)
    start = pseudo_header_sum(src, dst, IPPROTO_ICMPV6, len(message))
    # A correct checksum makes the one's complement sum of pseudo-header and
    # message all ones (RFC 1071); the pseudo-header's protocol word is never
    # zero, so the all-zero special case of ones_complement_sum cannot occur.
    if ones_complement_sum(message, start) != 0xFFFF:
        raise Icmpv6DecodeError("ICMPv6 checksum mismatch")
    type_, code, _checksum = _HEADER.unpack_from(message)
    return type_, code, message[ICMPV6_HEADER_LEN:]
