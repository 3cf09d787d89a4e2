"""Addresses and packets the 6LoWPAN tests share."""

from __future__ import annotations

from iotbench.net import ip
from iotbench.net.checksum import internet_checksum
from iotbench.net.ieee802154 import extended_address
from iotbench.net.lowpan.codec import interface_identifier

IPPROTO_ICMPV6 = 58

MAC_A = extended_address(1)  # 02:00:00:ff:fe:00:00:01
MAC_B = extended_address(2)
SHORT_A = b"\x12\x34"
SHORT_B = b"\xab\xcd"
BROADCAST = b"\xff\xff"

PREFIX_DB8 = bytes.fromhex("20010db800000000")  # 2001:db8::/64
PREFIX_DB8_1 = bytes.fromhex("20010db800000001")  # 2001:db8:0:1::/64
CONTEXTS = {0: PREFIX_DB8, 3: PREFIX_DB8_1}


def addr(text: str) -> bytes:
    return ip.address_bytes(text)


def link_local(mac: bytes) -> bytes:
    """fe80::/64 with the IID derived from `mac`: what IPHC elides entirely."""
    return bytes.fromhex("fe80000000000000") + interface_identifier(mac)


def udp_packet(
    src: bytes,
    dst: bytes,
    sport: int,
    dport: int,
    data: bytes = b"payload",
    **ipv6: int,
) -> bytes:
    """An IPv6/UDP packet with a valid checksum."""
    return ip.build_ipv6(
        src, dst, ip.IPPROTO_UDP, ip.build_udp(src, dst, sport, dport, data), **ipv6
    )


def icmpv6_echo(src: bytes, dst: bytes, ident: int, seq: int, data: bytes, **ipv6: int) -> bytes:
    """An ICMPv6 Echo Request (RFC 4443 4.1) with a valid checksum."""
    body = bytes((128, 0, 0, 0)) + ident.to_bytes(2, "big") + seq.to_bytes(2, "big") + data
    checksum = internet_checksum(src + dst + body, IPPROTO_ICMPV6 + len(body))
    body = body[:2] + checksum.to_bytes(2, "big") + body[4:]
    return ip.build_ipv6(src, dst, IPPROTO_ICMPV6, body, **ipv6)


def tcp_segment(
    src: bytes, dst: bytes, sport: int, dport: int, data: bytes = b"", **ipv6: int
) -> bytes:
    """A TCP SYN (with `data`, as TCP Fast Open sends) and a valid checksum (RFC 9293)."""
    header = bytearray(
        sport.to_bytes(2, "big")
        + dport.to_bytes(2, "big")
        + (1000).to_bytes(4, "big")
        + bytes(4)
        + bytes((5 << 4, 0x02))
        + (8192).to_bytes(2, "big")
        + bytes(4)
    )
    segment = bytes(header) + data
    checksum = internet_checksum(src + dst + segment, ip.IPPROTO_TCP + len(segment))
    header[16:18] = checksum.to_bytes(2, "big")
    return ip.build_ipv6(src, dst, ip.IPPROTO_TCP, bytes(header) + data, **ipv6)
