"""A serial line (UART) between a border router's radio node and its host.

The studies' gateways were a host running the application (Linux) beside a
radio node that routes for it, joined by a serial line: S4's FIT IoT-LAB A8
node talks to its A8-M3 border router with RIOT's ethos, S6's Linux host to
Contiki's rpl-border-router with SLIP. On the line a packet costs its framed
bytes at the UART's byte time: 8N1 sends a start bit, 8 data bits and a stop
bit, 10 bit times per byte, so a 115,200 baud line carries 11,520 bytes/s.

Framing, byte for byte:

- SLIP (RFC 1055), as Contiki's slip.c sends it: the IP packet with END
  (0xC0) escaped as ESC ESC_END (0xDB 0xDC) and ESC (0xDB) as ESC ESC_ESC
  (0xDB 0xDD), then END; Contiki sends no END before the packet.
- ethos (RIOT's drivers/ethos): an Ethernet frame (14-byte header: two MAC
  addresses and the EtherType, no FCS) between two frame delimiters 0x7E,
  0x7E and 0x7D escaped as 0x7D and the byte XOR 0x20.

`line_bytes(framing, packet)` gives a packet's bytes on the line; the link
(net/link.py) turns them into time with the line's rate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

BITS_PER_BYTE: Final = 10  # 8N1: start bit, 8 data bits, stop bit

SLIP_END: Final = 0xC0
SLIP_ESC: Final = 0xDB
ETHOS_DELIMITER: Final = 0x7E
ETHOS_ESC: Final = 0x7D
ETHERNET_HEADER_BYTES: Final = 14
FRAMINGS: Final = ("slip", "ethos")


def slip_line_bytes(packet: bytes) -> int:
    """Bytes SLIP puts on the line for `packet`: one more per END or ESC in it, and END."""
    return len(packet) + packet.count(SLIP_END) + packet.count(SLIP_ESC) + 1


def ethos_line_bytes(packet: bytes) -> int:
    """Bytes ethos puts on the line for an IPv6 `packet`: the Ethernet header (whose
    EtherType 0x86DD and locally administered addresses need no escape), the packet
    with its delimiters and escape characters escaped, two delimiters."""
    escapes = packet.count(ETHOS_DELIMITER) + packet.count(ETHOS_ESC)
    return ETHERNET_HEADER_BYTES + len(packet) + escapes + 2


LINE_BYTES: Final[dict[str, Callable[[bytes], int]]] = {
    "slip": slip_line_bytes,
    "ethos": ethos_line_bytes,
}


def line_bytes(framing: str, packet: bytes) -> int:
    try:
        return LINE_BYTES[framing](packet)
    except KeyError:
        raise ValueError(f"unknown serial framing {framing!r}; known: {FRAMINGS}") from None


def line_rate_bps(baud: int) -> float:
    """The rate of data bits a UART at `baud` carries (8 of every 10 bit times)."""
    return baud * 8 / BITS_PER_BYTE
