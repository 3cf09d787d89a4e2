"""6LoWPAN header compression: RFC 4944 section 5.1 and RFC 6282 (LOWPAN_IPHC, UDP NHC).

`compress` turns an IPv6 packet into what a 6LoWPAN frame carries, either the
uncompressed IPv6 dispatch (0x41 and the 40-byte header as is) or LOWPAN_IPHC
with UDP next-header compression; `decompress` turns that back into the
packet. Both are pure functions of their arguments.

IPHC elides what the receiver can rebuild without being told:
- the link-local prefix fe80::/64, and interface identifiers derived from the
  802.15.4 addresses of the frame (RFC 4944 section 6, RFC 6282 section 3.2.2);
- prefixes of the shared contexts (4-bit context identifier -> /64 prefix);
- common traffic class, flow label and hop limit values, and UDP ports in
  0xF0xx / 0xF0Bx;
- the IPv6 payload length and the UDP length, always: the receiver recomputes
  them from the frame, or from the fragment header's datagram_size.

Where RFC 6282 offers several encodings of the same header, `compress` takes
the shortest; ties are settled as documented at each choice. Whatever it
chooses, `decompress` accepts every encoding of the RFC except those this
module does not implement (LOWPAN_NHC for extension headers and UDP checksum
elision, C=1), which raise `LowpanDecodeError` like any malformed input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from iotbench.net.ip import IPPROTO_UDP, IPV6_HEADER_LEN, UDP_HEADER_LEN
from iotbench.net.lowpan.dispatch import DISPATCH_IPHC, DISPATCH_IPV6, Dispatch, classify
from iotbench.proto.errors import DecodeError
from iotbench.proto.octets import ONE_BYTE, as_bytes
from iotbench.proto.reader import ByteReader

LINK_LOCAL_PREFIX: Final = bytes.fromhex("fe80000000000000")  # fe80::/64
_SHORT_IID_PREFIX: Final = bytes.fromhex("000000fffe00")  # IID 0000:00ff:fe00:XXXX
_UNSPECIFIED: Final = bytes(16)  # ::
# The zero runs that multicast compression elides (RFC 6282 3.1.1, DAM).
_ZEROS_9: Final = bytes(9)
_ZEROS_11: Final = bytes(11)
_ZEROS_13: Final = bytes(13)
MAX_CONTEXTS: Final = 16  # the context identifier is 4 bits
CONTEXT_PREFIX_LEN: Final = 8  # contexts are /64 prefixes

# Hop limit values IPHC encodes in the 2-bit HLIM field (00 means carried inline).
_HLIM_CODE: Final = {1: 0b01, 64: 0b10, 255: 0b11}
_HLIM_VALUE: Final = {code: value for value, code in _HLIM_CODE.items()}

# UDP LOWPAN_NHC (RFC 6282 4.3.3): 11110CPP. C: checksum elided; PP: port forms.
NHC_UDP: Final = 0b1111_0000
_NHC_UDP_MASK: Final = 0b1111_1000
_NHC_UDP_CHECKSUM_ELIDED: Final = 0b0000_0100
_PORTS_4BIT: Final = 0xF0B0  # both ports 0xF0B0..0xF0BF: 4 bits each inline
_PORTS_8BIT: Final = 0xF000  # one port 0xF000..0xF0FF: 8 bits inline

MODES: Final = ("none", "iphc")


class LowpanDecodeError(DecodeError):
    """Bytes that are not a well-formed 6LoWPAN packet this module can decode."""


# Records below write out their __init__: compiled, it stores each field
# directly, where the one @dataclass generates is interpreted Python
# (tests/test_written_inits.py keeps it equal to the fields).


@dataclass(frozen=True, slots=True)
class Compressed:
    """An IPv6 packet as 6LoWPAN carries it: `header + payload`.

    `header` stands for the IPv6 header and, when the packet is UDP, its UDP
    header too; its first `ip_header_len` bytes (dispatch included) stand for
    the IPv6 header, the next `transport_header_len` for the UDP header. It
    replaces the first `uncompressed_header_len` bytes of the packet (40, or
    48 with the UDP header), and `payload` is the rest of the packet unchanged.
    Other upper-layer headers (TCP, ICMPv6, extension headers) stay in
    `payload`.
    """

    header: bytes
    ip_header_len: int
    transport_header_len: int
    uncompressed_header_len: int
    payload: bytes

    def __init__(
        self,
        header: bytes,
        ip_header_len: int,
        transport_header_len: int,
        uncompressed_header_len: int,
        payload: bytes,
    ) -> None:
        object.__setattr__(self, "header", header)
        object.__setattr__(self, "ip_header_len", ip_header_len)
        object.__setattr__(self, "transport_header_len", transport_header_len)
        object.__setattr__(self, "uncompressed_header_len", uncompressed_header_len)
        object.__setattr__(self, "payload", payload)

    @property
    def datagram_size(self) -> int:
        """Bytes of the uncompressed IPv6 packet: what fragment headers count in."""
        return self.uncompressed_header_len + len(self.payload)


def interface_identifier(mac: bytes) -> bytes:
    """The 8-byte IID an 802.15.4 address stands for.

    An EUI-64 with its universal/local bit inverted (RFC 4944 section 6); a
    16-bit short address as 0000:00ff:fe00:XXXX (RFC 6282 section 3.2.2, which
    drops RFC 4944's PAN ID from it).
    """
    if len(mac) == 8:
        return ONE_BYTE[mac[0] ^ 0x02] + mac[1:]
    if len(mac) == 2:
        return _SHORT_IID_PREFIX + mac
    raise ValueError(f"an 802.15.4 address has 2 or 8 bytes, not {len(mac)}")


# What "no contexts" is after checking: never changed.
_NO_CONTEXTS: Final[dict[int, bytes]] = {}


def check_contexts(contexts: Mapping[int, bytes] | None) -> dict[int, bytes]:
    """The contexts as a dict, after checking them (ValueError: a configuration error)."""
    if contexts is None:
        return {}
    checked = {}
    for cid, prefix in contexts.items():
        if not 0 <= cid < MAX_CONTEXTS:
            raise ValueError(f"context identifier {cid} is outside 0..15")
        if len(prefix) != CONTEXT_PREFIX_LEN:
            raise ValueError(f"context {cid} must be an 8-byte /64 prefix, not {len(prefix)} bytes")
        checked[cid] = bytes(prefix)
    return checked


# --------------------------------------------------------------------------- compression


def compress(
    packet: bytes,
    src_mac: bytes,
    dst_mac: bytes,
    *,
    mode: str = "iphc",
    contexts: Mapping[int, bytes] | None = None,
) -> Compressed:
    """Compress a whole IPv6 packet for a frame from `src_mac` to `dst_mac`.

    mode "none" is RFC 4944's uncompressed IPv6 (dispatch 0x41 and the header
    as is); "iphc" is RFC 6282. The packet must be well formed (version 6, its
    payload length matching its size): IPHC elides the payload length, so a
    packet that contradicts it could not come back out the same. ValueError
    for such a packet, an unknown mode, MAC addresses of neither 2 nor 8
    bytes, or contexts that are not 4-bit identifiers of 8-byte prefixes.
    """
    ctx = check_contexts(contexts) if mode == "iphc" else _NO_CONTEXTS
    return compress_checked(packet, src_mac, dst_mac, mode, ctx)


def compress_checked(
    packet: bytes, src_mac: bytes, dst_mac: bytes, mode: str, contexts: dict[int, bytes]
) -> Compressed:
    """`compress` with contexts `check_contexts` gave: what an interface, which
    checks its contexts once, calls for every packet."""
    packet = as_bytes(packet)  # slices of it become the Compressed fields
    first, payload_len, next_header, hop_limit, src, dst = _check_packet(packet)
    has_udp = next_header == IPPROTO_UDP and len(packet) >= IPV6_HEADER_LEN + UDP_HEADER_LEN
    end = IPV6_HEADER_LEN + (UDP_HEADER_LEN if has_udp else 0)
    if mode == "none":
        header = ONE_BYTE[DISPATCH_IPV6] + packet[:end]
        return Compressed(header, 1 + IPV6_HEADER_LEN, end - IPV6_HEADER_LEN, end, packet[end:])
    if mode != "iphc":
        raise ValueError(f"6LoWPAN mode {mode!r} is not one of {MODES}")
    src_iid, dst_iid = interface_identifier(src_mac), interface_identifier(dst_mac)

    tf, traffic_inline = _encode_traffic(first)
    # UDP NHC elides the UDP length, which the receiver takes to be the IPv6
    # payload length: a UDP header that says otherwise stays inline (NH=0).
    udp_length = packet[IPV6_HEADER_LEN + 4] << 8 | packet[IPV6_HEADER_LEN + 5] if has_udp else -1
    udp_nhc = udp_length == payload_len
    hlim = _HLIM_CODE.get(hop_limit, 0b00)
    sac, sam, sci, src_inline = _encode_unicast(src, src_iid, contexts, source=True)
    if dst[0] == 0xFF:
        m = 1
        dac, dam, dci, dst_inline = _encode_multicast(dst, contexts)
    else:
        m = 0
        dac, dam, dci, dst_inline = _encode_unicast(dst, dst_iid, contexts, source=False)
    # The CID byte is needed only for a context other than the default context 0.
    cid = 1 if sci or dci else 0

    # LOWPAN_IPHC base, RFC 6282 3.1.1:
    #   0 1 1 TF(2) NH HLIM(2) | CID SAC SAM(2) M DAC DAM(2)
    base = (
        (DISPATCH_IPHC << 8)
        | (tf << 11)
        | ((1 if udp_nhc else 0) << 10)
        | (hlim << 8)
        | (cid << 7)
        | (sac << 6)
        | (sam << 4)
        | (m << 3)
        | (dac << 2)
        | dam
    )
    # Inline fields follow in the order of RFC 6282 3.2: CID byte, traffic class
    # and flow label, next header, hop limit, source, destination.
    parts = [base.to_bytes(2, "big")]
    if cid:
        parts.append(ONE_BYTE[sci << 4 | dci])
    parts.append(traffic_inline)
    if not udp_nhc:
        parts.append(ONE_BYTE[next_header])
    if hlim == 0b00:
        parts.append(ONE_BYTE[hop_limit])
    parts += [src_inline, dst_inline]
    ip_header = b"".join(parts)

    if udp_nhc:
        transport = _encode_udp_nhc(packet[IPV6_HEADER_LEN:end])
    else:
        transport = packet[IPV6_HEADER_LEN:end]  # the UDP header inline, or nothing
    return Compressed(ip_header + transport, len(ip_header), len(transport), end, packet[end:])


def _check_packet(packet: bytes) -> tuple[int, int, int, int, bytes, bytes]:
    if len(packet) < IPV6_HEADER_LEN:
        raise ValueError(f"an IPv6 packet of {len(packet)} bytes is shorter than its header")
    # Read byte by byte, not through struct's unpack_from: compiled, that is a
    # method call through Python and a tuple (about 1,000 instructions a packet).
    first = packet[0] << 24 | packet[1] << 16 | packet[2] << 8 | packet[3]
    payload_len = packet[4] << 8 | packet[5]
    next_header, hop_limit = packet[6], packet[7]
    src, dst = packet[8:24], packet[24:40]
    if first >> 28 != 6:
        raise ValueError(f"IP version {first >> 28} is not 6")
    if payload_len != len(packet) - IPV6_HEADER_LEN:
        raise ValueError(
            f"IPv6 payload length {payload_len} does not match the packet's "
            f"{len(packet) - IPV6_HEADER_LEN} payload bytes"
        )
    return first, payload_len, next_header, hop_limit, src, dst


def _encode_traffic(first: int) -> tuple[int, bytes]:
    """(TF, inline bytes) for the traffic class and flow label (RFC 6282 3.1.1).

    IPv6 orders the traffic class DSCP then ECN; IPHC carries ECN first, so
    that TF=01 can keep ECN and drop DSCP.
    """
    traffic_class = (first >> 20) & 0xFF
    flow = first & 0xFFFFF
    ecn, dscp = traffic_class & 0b11, traffic_class >> 2
    if flow == 0 and traffic_class == 0:
        return 0b11, b""
    if flow == 0:
        return 0b10, ONE_BYTE[ecn << 6 | dscp]  # ECN(2) DSCP(6)
    if dscp == 0:
        return 0b01, ((ecn << 22) | flow).to_bytes(3, "big")  # ECN(2) pad(2) flow(20)
    return 0b00, ((ecn << 30) | (dscp << 24) | flow).to_bytes(4, "big")  # + pad(4)


def _find_context(prefix: bytes, ctx: Mapping[int, bytes]) -> int | None:
    """The context holding `prefix`: the lowest identifier, so 0 (no CID byte) wins."""
    for cid in sorted(ctx):
        if ctx[cid] == prefix:
            return cid
    return None


def _encode_unicast(
    address: bytes, mac_iid: bytes, ctx: Mapping[int, bytes], *, source: bool
) -> tuple[int, int, int, bytes]:
    """(SAC/DAC, SAM/DAM, context identifier, inline bytes) for a unicast address."""
    if source and address == _UNSPECIFIED:
        return 1, 0b00, 0, b""  # SAC=1 SAM=00 is the unspecified address
    prefix, iid = address[:8], address[8:]
    if prefix == LINK_LOCAL_PREFIX:
        stateful, cid = 0, 0
    else:
        found = _find_context(prefix, ctx)
        if found is None:
            return 0, 0b00, 0, address  # no way to elide the prefix: all 16 bytes
        stateful, cid = 1, found
    if iid == mac_iid:
        return stateful, 0b11, cid, b""
    if iid[:6] == _SHORT_IID_PREFIX:
        return stateful, 0b10, cid, iid[6:]
    return stateful, 0b01, cid, iid


def _encode_multicast(address: bytes, ctx: Mapping[int, bytes]) -> tuple[int, int, int, bytes]:
    """(DAC, DAM, context identifier, inline bytes) for a multicast address (RFC 6282 3.1.1).

    The stateless forms are tried shortest first; the context form (RFC 3306
    unicast-prefix-based, ffXX:XX40:<the context's /64>:XXXX:XXXX) only when
    none of them fits, as it is no shorter than DAM=01.
    """
    if address[1] == 0x02 and address[2:15] == _ZEROS_13:
        return 0, 0b11, 0, address[15:]  # ff02::00XX
    if address[2:13] == _ZEROS_11:
        return 0, 0b10, 0, address[1:2] + address[13:]  # ffXX::00XX:XXXX
    if address[2:11] == _ZEROS_9:
        return 0, 0b01, 0, address[1:2] + address[11:]  # ffXX::00XX:XXXX:XXXX
    if address[3] == CONTEXT_PREFIX_LEN * 8:
        cid = _find_context(address[4:12], ctx)
        if cid is not None:
            return 1, 0b00, cid, address[1:3] + address[12:]
    return 0, 0b00, 0, address


def _encode_udp_nhc(udp: bytes) -> bytes:
    """The UDP LOWPAN_NHC header (RFC 6282 4.3.3) with the checksum inline (C=0).

    When both the 8-bit forms fit (both ports in 0xF0xx but not both in
    0xF0Bx), the destination port is the one compressed (P=01).
    """
    # The header read and written byte by byte and through int.to_bytes: compiled,
    # struct's functions are calls through Python (two or three per datagram).
    sport, dport, checksum = udp[0] << 8 | udp[1], udp[2] << 8 | udp[3], udp[6:8]
    if sport & 0xFFF0 == _PORTS_4BIT and dport & 0xFFF0 == _PORTS_4BIT:
        ports, p = ONE_BYTE[(sport & 0xF) << 4 | (dport & 0xF)], 0b11
    elif dport & 0xFF00 == _PORTS_8BIT:
        ports, p = (sport << 8 | dport & 0xFF).to_bytes(3, "big"), 0b01
    elif sport & 0xFF00 == _PORTS_8BIT:
        ports, p = ((sport & 0xFF) << 16 | dport).to_bytes(3, "big"), 0b10
    else:
        ports, p = (sport << 16 | dport).to_bytes(4, "big"), 0b00
    return ONE_BYTE[NHC_UDP | p] + ports + checksum


# --------------------------------------------------------------------------- decompression


@dataclass(frozen=True, slots=True)
class DecodedHeader:
    """The headers a 6LoWPAN packet starts with, before the lengths are known.

    `headers` is the uncompressed IPv6 header, followed by the UDP header when
    it was NHC-compressed; `consumed` is how many bytes of the 6LoWPAN packet
    they took. IPHC elides the IPv6 payload length and the UDP length, which
    stay zero here until `complete` fills them in from the datagram's size:
    the frame's, or a fragment header's datagram_size.
    """

    headers: bytes
    consumed: int
    lengths_elided: bool

    def __init__(self, headers: bytes, consumed: int, lengths_elided: bool) -> None:
        object.__setattr__(self, "headers", headers)
        object.__setattr__(self, "consumed", consumed)
        object.__setattr__(self, "lengths_elided", lengths_elided)

    def complete(self, datagram_size: int) -> bytes:
        """`headers` with the length fields of a datagram of `datagram_size` bytes."""
        if datagram_size < len(self.headers):
            raise LowpanDecodeError(
                f"datagram size {datagram_size} is smaller than its {len(self.headers)} "
                "bytes of headers"
            )
        payload_len = datagram_size - IPV6_HEADER_LEN
        headers = self.headers
        # The length fields read and written as bytes, not through struct (compiled,
        # its functions are calls through Python; this runs for every datagram).
        if not self.lengths_elided:
            if headers[4] << 8 | headers[5] != payload_len:
                raise LowpanDecodeError(
                    f"the IPv6 payload length does not match the datagram's {payload_len} bytes"
                )
            return headers
        if payload_len > 0xFFFF:
            raise LowpanDecodeError(f"datagram of {datagram_size} bytes exceeds IPv6's limit")
        length = payload_len.to_bytes(2, "big")
        if len(headers) == IPV6_HEADER_LEN:
            return headers[:4] + length + headers[6:]
        # UDP follows the IPv6 header directly (its 8 bytes are the rest), so its
        # length is the payload length.
        udp_length_at = IPV6_HEADER_LEN + 4
        return (
            headers[:4] + length + headers[6:udp_length_at] + length + headers[udp_length_at + 2 :]
        )


def decompress(
    data: bytes,
    src_mac: bytes,
    dst_mac: bytes,
    *,
    contexts: Mapping[int, bytes] | None = None,
    datagram_size: int | None = None,
) -> bytes:
    """The IPv6 packet a whole (unfragmented, or reassembled) 6LoWPAN packet stands for.

    The lengths come from the size of what `data` decompresses to; when the
    packet came in fragments, that size must be the `datagram_size` their
    headers announced. Raises LowpanDecodeError, and only that, for bad bytes
    (or MAC addresses an elided address cannot be derived from); ValueError
    only for contexts that are not valid configuration.
    """
    return decompress_checked(data, src_mac, dst_mac, check_contexts(contexts), datagram_size)


def decompress_checked(
    data: bytes,
    src_mac: bytes,
    dst_mac: bytes,
    contexts: dict[int, bytes],
    datagram_size: int | None = None,
) -> bytes:
    """`decompress` with contexts `check_contexts` gave (a reassembler's)."""
    decoded = decode_header_checked(data, src_mac, dst_mac, contexts)
    rest = as_bytes(data[decoded.consumed :])
    size = len(decoded.headers) + len(rest)
    if datagram_size is not None and datagram_size != size:
        raise LowpanDecodeError(
            f"the packet decompresses to {size} bytes, not the datagram size {datagram_size}"
        )
    return decoded.complete(size) + rest


def decode_header(
    data: bytes,
    src_mac: bytes,
    dst_mac: bytes,
    *,
    contexts: Mapping[int, bytes] | None = None,
) -> DecodedHeader:
    """Decode the dispatch and compressed headers at the start of `data`.

    This is the part of `decompress` that a first fragment needs: its headers
    decompress on their own, while the rest of the datagram is still to come.
    """
    return decode_header_checked(data, src_mac, dst_mac, check_contexts(contexts))


def decode_header_checked(
    data: bytes, src_mac: bytes, dst_mac: bytes, contexts: dict[int, bytes]
) -> DecodedHeader:
    """`decode_header` with contexts `check_contexts` gave (a reassembler's)."""
    data = as_bytes(data)
    if not data:
        raise LowpanDecodeError("empty 6LoWPAN packet")
    kind = classify(data[0])
    if kind is Dispatch.IPV6:
        return _decode_uncompressed(data)
    if kind is Dispatch.IPHC:
        return _decode_iphc(
            ByteReader(data, LowpanDecodeError, "6LoWPAN packet"), src_mac, dst_mac, contexts
        )
    if kind is Dispatch.NALP:
        raise LowpanDecodeError(f"first byte 0x{data[0]:02x} says this is not a 6LoWPAN packet")
    raise LowpanDecodeError(f"6LoWPAN dispatch 0x{data[0]:02x} ({kind.value}) is not supported")


def _decode_uncompressed(data: bytes) -> DecodedHeader:
    header = data[1 : 1 + IPV6_HEADER_LEN]
    if len(header) < IPV6_HEADER_LEN:
        raise LowpanDecodeError(f"uncompressed IPv6 header of {len(header)} bytes, not 40")
    if header[0] >> 4 != 6:
        raise LowpanDecodeError(f"IP version {header[0] >> 4} after the IPv6 dispatch")
    return DecodedHeader(header, 1 + IPV6_HEADER_LEN, False)


def _decode_iphc(
    r: ByteReader, src_mac: bytes, dst_mac: bytes, ctx: Mapping[int, bytes]
) -> DecodedHeader:
    base_bytes = r.take(2, "LOWPAN_IPHC base")
    base = base_bytes[0] << 8 | base_bytes[1]
    tf = (base >> 11) & 0b11
    nh = (base >> 10) & 0b1
    hlim = (base >> 8) & 0b11
    cid = (base >> 7) & 0b1
    sac = (base >> 6) & 0b1
    sam = (base >> 4) & 0b11
    m = (base >> 3) & 0b1
    dac = (base >> 2) & 0b1
    dam = base & 0b11

    sci = dci = 0
    if cid:
        contexts_byte = r.byte("context identifier extension")
        sci, dci = contexts_byte >> 4, contexts_byte & 0x0F
    traffic_class, flow = _decode_traffic(r, tf)
    next_header = IPPROTO_UDP if nh else r.byte("next header")
    hop_limit = _HLIM_VALUE[hlim] if hlim else r.byte("hop limit")
    src = _decode_unicast(r, sac, sam, sci, src_mac, ctx, source=True)
    if m:
        dst = _decode_multicast(r, dac, dam, dci, ctx)
    else:
        dst = _decode_unicast(r, dac, dam, dci, dst_mac, ctx, source=False)
    udp = _decode_udp_nhc(r) if nh else b""
    first = (6 << 28) | (traffic_class << 20) | flow
    # The fixed header's first 8 bytes as one integer's (payload length 0, filled
    # in later): compiled, a direct call, where struct's pack is a method call
    # through Python. Every field is in range by construction, and both
    # addresses are 16 bytes (checked contexts are 8-byte prefixes).
    fixed = (first << 32 | next_header << 8 | hop_limit).to_bytes(8, "big")
    return DecodedHeader(fixed + src + dst + udp, r.pos, True)


def _decode_traffic(r: ByteReader, tf: int) -> tuple[int, int]:
    """(traffic class, flow label); the pad bits are ignored, as the RFC's padding."""
    if tf == 0b00:
        value = int.from_bytes(r.take(4, "traffic class and flow label"), "big")
        ecn, dscp, flow = value >> 30, (value >> 24) & 0x3F, value & 0xFFFFF
    elif tf == 0b01:
        value = int.from_bytes(r.take(3, "ECN and flow label"), "big")
        ecn, dscp, flow = value >> 22, 0, value & 0xFFFFF
    elif tf == 0b10:
        value = r.byte("traffic class")
        ecn, dscp, flow = value >> 6, value & 0x3F, 0
    else:
        ecn = dscp = flow = 0
    return dscp << 2 | ecn, flow


def _mac_iid(mac: bytes) -> bytes:
    if len(mac) not in (2, 8):
        raise LowpanDecodeError(f"cannot derive an address from a {len(mac)}-byte MAC address")
    return interface_identifier(mac)


def _context_prefix(ctx: Mapping[int, bytes], cid: int) -> bytes:
    prefix = ctx.get(cid)
    if prefix is None:
        raise LowpanDecodeError(f"6LoWPAN context {cid} is not configured")
    return prefix


def _decode_unicast(
    r: ByteReader,
    stateful: int,
    mode: int,
    cid: int,
    mac: bytes,
    ctx: Mapping[int, bytes],
    *,
    source: bool,
) -> bytes:
    which = "source address" if source else "destination address"
    if not stateful:
        if mode == 0b00:
            return r.take(16, which)
        prefix = LINK_LOCAL_PREFIX
    else:
        if mode == 0b00:
            if source:
                return _UNSPECIFIED
            raise LowpanDecodeError("IPHC M=0 DAC=1 DAM=00 is reserved")
        prefix = _context_prefix(ctx, cid)
    if mode == 0b01:
        iid = r.take(8, which)
    elif mode == 0b10:
        iid = _SHORT_IID_PREFIX + r.take(2, which)
    else:
        iid = _mac_iid(mac)
    return prefix + iid


def _decode_multicast(
    r: ByteReader, stateful: int, mode: int, cid: int, ctx: Mapping[int, bytes]
) -> bytes:
    which = "multicast destination address"
    if stateful:
        if mode != 0b00:
            raise LowpanDecodeError(f"IPHC M=1 DAC=1 DAM={mode:02b} is reserved")
        inline = r.take(6, which)
        # ffXX:XXLL:PPPP:PPPP:PPPP:PPPP:XXXX:XXXX, L and P from the /64 context.
        prefix = _context_prefix(ctx, cid)
        return b"\xff" + inline[:2] + ONE_BYTE[CONTEXT_PREFIX_LEN * 8] + prefix + inline[2:]
    if mode == 0b00:
        return r.take(16, which)
    if mode == 0b01:
        inline = r.take(6, which)  # ffXX::00XX:XXXX:XXXX
        return b"\xff" + inline[:1] + _ZEROS_9 + inline[1:]
    if mode == 0b10:
        inline = r.take(4, which)  # ffXX::00XX:XXXX
        return b"\xff" + inline[:1] + _ZEROS_11 + inline[1:]
    return b"\xff\x02" + _ZEROS_13 + r.take(1, which)  # ff02::00XX


def _decode_udp_nhc(r: ByteReader) -> bytes:
    """The UDP header, length zero until the datagram's size is known."""
    nhc = r.byte("LOWPAN_NHC header")
    if nhc & _NHC_UDP_MASK != NHC_UDP:
        raise LowpanDecodeError(f"LOWPAN_NHC 0x{nhc:02x} is not UDP (not supported)")
    if nhc & _NHC_UDP_CHECKSUM_ELIDED:
        raise LowpanDecodeError("UDP NHC with an elided checksum (C=1) is not accepted")
    # Read byte by byte and written through int.to_bytes, not struct's functions
    # (calls through Python, compiled): this runs for every datagram received.
    p = nhc & 0b11
    if p == 0b00:
        ports = r.take(4, "UDP ports")
        sport, dport = ports[0] << 8 | ports[1], ports[2] << 8 | ports[3]
    elif p == 0b01:
        ports = r.take(3, "UDP ports")
        sport, dport = ports[0] << 8 | ports[1], _PORTS_8BIT | ports[2]
    elif p == 0b10:
        ports = r.take(3, "UDP ports")
        sport, dport = _PORTS_8BIT | ports[0], ports[1] << 8 | ports[2]
    else:
        nibbles = r.byte("UDP ports")
        sport, dport = _PORTS_4BIT | nibbles >> 4, _PORTS_4BIT | nibbles & 0x0F
    checksum = r.take(2, "UDP checksum")
    return (sport << 48 | dport << 32 | checksum[0] << 8 | checksum[1]).to_bytes(8, "big")
