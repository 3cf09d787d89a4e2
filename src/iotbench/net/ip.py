"""IPv4 (RFC 791), IPv6 (RFC 8200) and UDP (RFC 768) headers on the wire.

Builders produce the exact bytes a host would send, checksums included;
parsers raise `IpDecodeError` (a `DecodeError`) for anything malformed. IPv4
fragments in the network (RFC 791 section 2.3); IPv6 only at the source, with
the Fragment extension header (RFC 8200 section 4.5).
"""

from __future__ import annotations

import ipaddress
import struct
from typing import Final, NamedTuple

from iotbench.net.checksum import internet_checksum, ones_complement_sum
from iotbench.proto.errors import DecodeError

IPPROTO_TCP: Final = 6
IPPROTO_UDP: Final = 17
IPPROTO_ICMPV6: Final = 58
IPPROTO_IPV6_FRAGMENT: Final = 44

IPV4_HEADER_LEN: Final = 20
IPV6_HEADER_LEN: Final = 40
IPV6_FRAGMENT_HEADER_LEN: Final = 8
UDP_HEADER_LEN: Final = 8

# Packers bound once, so that compiled callers call them without a method
# lookup; headers are parsed byte by byte instead (see ipv4_fields).
_pack_ipv4: Final = struct.Struct("!BBHHHBBH4s4s").pack
_pack_ipv6: Final = struct.Struct("!IHBB16s16s").pack
_pack_ipv6_frag: Final = struct.Struct("!BBHI").pack
_pack_udp: Final = struct.Struct("!HHHH").pack
_new_tuple: Final = tuple.__new__


class IpDecodeError(DecodeError):
    """Bytes that are not a well-formed IPv4/IPv6/UDP packet."""


def address_bytes(text: str) -> bytes:
    """'10.0.0.1' or 'fd00::1' -> 4 or 16 bytes."""
    return ipaddress.ip_address(text).packed


def address_text(raw: bytes) -> str:
    return str(ipaddress.ip_address(raw))


# --------------------------------------------------------------------------- IPv4


class IPv4Header(NamedTuple):
    header_len: int
    total_len: int
    ident: int
    dont_fragment: bool
    more_fragments: bool
    frag_offset: int  # in bytes
    ttl: int
    proto: int
    src: bytes
    dst: bytes


def build_ipv4(
    src: bytes,
    dst: bytes,
    proto: int,
    payload: bytes,
    ident: int,
    *,
    ttl: int = 64,
    tos: int = 0,
    dont_fragment: bool = False,
    more_fragments: bool = False,
    frag_offset: int = 0,
) -> bytes:
    """An IPv4 packet with a 20-byte header (no options) and a valid checksum."""
    if frag_offset % 8:
        raise ValueError("IPv4 fragment offsets are multiples of 8 bytes")
    total = IPV4_HEADER_LEN + len(payload)
    if total > 0xFFFF:
        raise ValueError(f"IPv4 datagram of {total} bytes exceeds 65535")
    ident &= 0xFFFF
    flags_offset = (
        (0x4000 if dont_fragment else 0) | (0x2000 if more_fragments else 0) | (frag_offset >> 3)
    )
    # The header checksum covers the header's 16-bit words with the checksum
    # field zero. The words other than the addresses are added here as numbers,
    # so the header is packed once, with its checksum, instead of twice.
    words = (0x4500 | tos) + total + ident + flags_offset + ((ttl << 8) | proto)
    checksum = internet_checksum(src + dst, words)
    header = _pack_ipv4(0x45, tos, total, ident, flags_offset, ttl, proto, checksum, src, dst)
    return header + payload


def parse_ipv4(data: bytes, *, verify: bool = False) -> IPv4Header:
    """Parse and sanity-check an IPv4 header; `verify` also checks the checksum."""
    fields = ipv4_fields(data)
    if verify and internet_checksum(data[: fields[0]]) != 0:
        raise IpDecodeError("IPv4 header checksum mismatch")
    # tuple.__new__ directly: the named tuple's own __new__ is a Python-level
    # call that costs as much as the parsing, and this runs per packet.
    return _new_tuple(IPv4Header, fields)


def ipv4_fields(data: bytes) -> tuple[int, int, int, bool, bool, int, int, int, bytes, bytes]:
    """parse_ipv4's fields (checksum not verified) as a plain tuple, in IPv4Header's order.

    The node's receive path unpacks it at once: compiled, a fixed tuple of
    typed fields is returned without creating an object, and the header's
    bytes are read one by one instead of through `struct`, whose call costs
    more than the reading.
    """
    size = len(data)
    if size < IPV4_HEADER_LEN:
        raise IpDecodeError(f"IPv4 packet of {size} bytes is shorter than a header")
    vihl = data[0]
    if vihl >> 4 != 4:
        raise IpDecodeError(f"IP version {vihl >> 4} is not 4")
    header_len = (vihl & 0x0F) * 4
    if header_len < IPV4_HEADER_LEN:
        raise IpDecodeError(f"IPv4 IHL {header_len} bytes is below 20")
    total = data[2] << 8 | data[3]
    if total < header_len or total > size:
        raise IpDecodeError(f"IPv4 total length {total} does not fit the {size} bytes")
    flags_off = data[6] << 8 | data[7]
    if flags_off & 0x8000:
        raise IpDecodeError("IPv4 reserved flag set")
    return (
        header_len,
        total,
        data[4] << 8 | data[5],
        flags_off & 0x4000 != 0,
        flags_off & 0x2000 != 0,
        (flags_off & 0x1FFF) << 3,
        data[8],
        data[9],
        data[12:16],
        data[16:20],
    )


def fragment_ipv4(packet: bytes, mtu: int) -> list[bytes]:
    """Split an IPv4 datagram into fragments of at most `mtu` bytes (RFC 791 2.3).

    Each fragment repeats the header with its own offset, MF flag and checksum;
    all but the last carry a multiple of 8 payload bytes.
    """
    if len(packet) <= mtu:
        return [packet]
    h = parse_ipv4(packet)
    if h.dont_fragment:
        raise ValueError("datagram exceeds the MTU and has DF set")
    chunk = (mtu - h.header_len) // 8 * 8
    if chunk <= 0:
        raise ValueError(f"MTU {mtu} leaves no room for fragment data")
    body = packet[h.header_len : h.total_len]
    fragments = []
    for start in range(0, len(body), chunk):
        part = body[start : start + chunk]
        last = start + chunk >= len(body)
        fragments.append(
            build_ipv4(
                h.src,
                h.dst,
                h.proto,
                part,
                h.ident,
                ttl=h.ttl,
                more_fragments=h.more_fragments or not last,
                frag_offset=h.frag_offset + start,
            )
        )
    return fragments


# --------------------------------------------------------------------------- IPv6


class IPv6Header(NamedTuple):
    header_len: int  # fixed header plus a Fragment header when present
    payload_len: int  # after header_len
    next_header: int  # upper-layer protocol
    hop_limit: int
    src: bytes
    dst: bytes
    fragmented: bool
    ident: int
    more_fragments: bool
    frag_offset: int  # in bytes


def build_ipv6(
    src: bytes,
    dst: bytes,
    proto: int,
    payload: bytes,
    *,
    hop_limit: int = 64,
    traffic_class: int = 0,
    flow_label: int = 0,
) -> bytes:
    if len(payload) > 0xFFFF:
        raise ValueError("IPv6 payload above 65535 bytes needs a jumbogram")
    first = (6 << 28) | (traffic_class << 20) | (flow_label & 0xFFFFF)
    return _pack_ipv6(first, len(payload), proto, hop_limit, src, dst) + payload


def parse_ipv6(data: bytes) -> IPv6Header:
    """Parse and sanity-check an IPv6 header (and a Fragment header after it)."""
    return _new_tuple(IPv6Header, ipv6_fields(data))


def ipv6_fields(data: bytes) -> tuple[int, int, int, int, bytes, bytes, bool, int, bool, int]:
    """parse_ipv6's fields as a plain tuple, in IPv6Header's order: what every
    radio hop's receive path unpacks at once (see ipv4_fields). Building the
    named tuple took a generic call of tuple.__new__ (about 900 instructions)."""
    size = len(data)
    if size < IPV6_HEADER_LEN:
        raise IpDecodeError(f"IPv6 packet of {size} bytes is shorter than a header")
    version = data[0] >> 4
    if version != 6:
        raise IpDecodeError(f"IP version {version} is not 6")
    plen = data[4] << 8 | data[5]
    if IPV6_HEADER_LEN + plen > size:
        raise IpDecodeError(f"IPv6 payload length {plen} exceeds the {size} bytes")
    nxt = data[6]
    if nxt != IPPROTO_IPV6_FRAGMENT:
        return IPV6_HEADER_LEN, plen, nxt, data[7], data[8:24], data[24:40], False, 0, False, 0
    if plen < IPV6_FRAGMENT_HEADER_LEN:
        raise IpDecodeError("IPv6 Fragment header truncated")
    off_m = data[42] << 8 | data[43]
    return (
        IPV6_HEADER_LEN + IPV6_FRAGMENT_HEADER_LEN,
        plen - IPV6_FRAGMENT_HEADER_LEN,
        data[40],
        data[7],
        data[8:24],
        data[24:40],
        True,
        int.from_bytes(data[44:48], "big"),
        bool(off_m & 1),
        off_m & 0xFFF8,
    )


def fragment_ipv6(packet: bytes, mtu: int, ident: int) -> list[bytes]:
    """Source fragmentation of an IPv6 packet without extension headers (RFC 8200 4.5)."""
    if len(packet) <= mtu:
        return [packet]
    h = parse_ipv6(packet)
    body = packet[IPV6_HEADER_LEN : IPV6_HEADER_LEN + h.payload_len]
    chunk = (mtu - IPV6_HEADER_LEN - IPV6_FRAGMENT_HEADER_LEN) // 8 * 8
    if chunk <= 0:
        raise ValueError(f"MTU {mtu} leaves no room for fragment data")
    fixed = packet[:4]
    fragments = []
    for start in range(0, len(body), chunk):
        part = body[start : start + chunk]
        more = 1 if start + chunk < len(body) else 0
        frag_header = _pack_ipv6_frag(h.next_header, 0, start | more, ident & 0xFFFFFFFF)
        plen = IPV6_FRAGMENT_HEADER_LEN + len(part)
        fragments.append(
            fixed
            + struct.pack("!HBB", plen, IPPROTO_IPV6_FRAGMENT, h.hop_limit)
            + h.src
            + h.dst
            + frag_header
            + part
        )
    return fragments


# --------------------------------------------------------------------------- UDP


def pseudo_header_sum(src: bytes, dst: bytes, proto: int, length: int) -> int:
    """Partial (unfolded) sum of the IPv4 or IPv6 pseudo-header for UDP/TCP checksums."""
    return ones_complement_sum(src + dst) + proto + (length >> 16) + (length & 0xFFFF)


def build_udp(src: bytes, dst: bytes, sport: int, dport: int, payload: bytes) -> bytes:
    """A UDP datagram (header + payload) with its checksum over the pseudo-header."""
    length = UDP_HEADER_LEN + len(payload)
    # One sum covers the pseudo-header and the datagram: the addresses (an even
    # number of bytes, so the payload's words stay aligned) are summed together
    # with the payload, and the other words are added as numbers (protocol and
    # length from the pseudo-header; ports and length from the UDP header, whose
    # checksum field is zero while summing).
    start = IPPROTO_UDP + length + sport + dport + length
    checksum = internet_checksum(src + dst + payload, start)
    if checksum == 0:
        checksum = 0xFFFF  # RFC 768: a computed zero is sent as all ones
    return _pack_udp(sport, dport, length, checksum) + payload


def parse_udp(
    segment: bytes, src: bytes = b"", dst: bytes = b"", *, verify: bool = False
) -> tuple[int, int, bytes]:
    """(source port, destination port, payload) of a UDP datagram."""
    size = len(segment)
    if size < UDP_HEADER_LEN:
        raise IpDecodeError(f"UDP datagram of {size} bytes is shorter than a header")
    # Read byte by byte, not through `struct`: see ipv4_fields.
    length = segment[4] << 8 | segment[5]
    if length < UDP_HEADER_LEN or length > size:
        raise IpDecodeError(f"UDP length {length} does not fit the {size} bytes")
    checksum = segment[6] << 8 | segment[7]
    if verify:
        if checksum == 0 and len(src) == 16:
            raise IpDecodeError("UDP over IPv6 requires a checksum")
        if (
            checksum
            and ones_complement_sum(
                segment[:length], pseudo_header_sum(src, dst, IPPROTO_UDP, length)
            )
            != 0xFFFF
        ):
            raise IpDecodeError("UDP checksum mismatch")
    return (
        segment[0] << 8 | segment[1],
        segment[2] << 8 | segment[3],
        segment[UDP_HEADER_LEN:length],
    )
