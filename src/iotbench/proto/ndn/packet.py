"""Tell packet kinds apart by their first TLV-TYPE."""

from __future__ import annotations

from .data import Data
from .interest import Interest
from .lp import LpPacket
from .tlv import NdnDecodeError
from .types import TT, LpType

__all__ = ["decode_packet"]


def decode_packet(wire: bytes) -> Interest | Data | LpPacket:
    """An Interest, Data or LpPacket from its wire bytes (structure checked, fields lazy)."""
    first = wire[0] if wire else -1
    if first == TT.INTEREST:
        return Interest(wire)
    if first == TT.DATA:
        return Data(wire)
    if first == LpType.LP_PACKET:
        return LpPacket.decode(wire)
    raise NdnDecodeError(f"not an Interest, Data or LpPacket (first byte {first})")
