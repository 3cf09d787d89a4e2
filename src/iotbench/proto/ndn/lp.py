"""NDNLPv2 link-layer packets: the LpPacket framing, Nack and a few header fields.

    LpPacket = LP-PACKET-TYPE TLV-LENGTH *LpHeaderField [Fragment]

Header fields understood here: Sequence (81), FragIndex (82), FragCount (83),
PitToken (98), Nack (800, with an optional NackReason 801), IncomingFaceId
(812), NextHopFaceId (816), CongestionMark (832), Ack (836, repeatable),
TxSequence (840). Sequence, Ack and TxSequence are fixed-width unsigned
integers (sent as 8 bytes, accepted as 1..8); the others are
NonNegativeIntegers.

Rules from the NDNLPv2 specification:
- recognized header fields come in increasing TLV-TYPE order, each at most
  once except Ack, and all before the Fragment, which ends the packet;
- an unknown header field is skipped when its TLV-TYPE is in 800..959 with
  the two low bits zero, and fails the packet otherwise;
- a packet without Fragment is an IDLE packet (acks, keep-alive).

A Nack is an LpPacket with a Nack header whose Fragment is the Interest it
rejects; a missing NackReason means reason NONE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .tlv import NdnDecodeError, decode_nni, encode_nni, encode_tl, encode_tlv, read_tl, uint_be
from .tlv import scan_elements as _scan
from .types import LpType, NackReason

__all__ = ["LpPacket", "is_ignorable_lp_field"]

_NNI_FIELDS: Final[dict[int, str]] = {
    LpType.FRAG_INDEX: "frag_index",
    LpType.FRAG_COUNT: "frag_count",
    LpType.INCOMING_FACE_ID: "incoming_face_id",
    LpType.NEXT_HOP_FACE_ID: "next_hop_face_id",
    LpType.CONGESTION_MARK: "congestion_mark",
}
_FIXED_FIELDS: Final[dict[int, str]] = {
    LpType.SEQUENCE: "sequence",
    LpType.TX_SEQUENCE: "tx_sequence",
}
_KNOWN: Final[set[int]] = {
    LpType.SEQUENCE,
    LpType.FRAG_INDEX,
    LpType.FRAG_COUNT,
    LpType.PIT_TOKEN,
    LpType.NACK,
    LpType.INCOMING_FACE_ID,
    LpType.NEXT_HOP_FACE_ID,
    LpType.CONGESTION_MARK,
    LpType.ACK,
    LpType.TX_SEQUENCE,
}
_NACK_ORDER: Final[dict[int, int]] = {LpType.NACK_REASON: 0}


def is_ignorable_lp_field(t: int) -> bool:
    """NDNLPv2: an unknown header field may be skipped only in 800..959 with low bits 00."""
    return 800 <= t <= 959 and (t & 0x03) == 0


def _fixed(buf: bytes, vs: int, ve: int, t: int) -> int:
    if not 1 <= ve - vs <= 8:
        raise NdnDecodeError(f"LpPacket field {t} of {ve - vs} bytes (must be 1..8)")
    return uint_be(buf, vs, ve)


@dataclass(slots=True)
class LpPacket:
    fragment: bytes | None = None
    sequence: int | None = None
    frag_index: int | None = None
    frag_count: int | None = None
    pit_token: bytes | None = None
    #: None: not a Nack; otherwise the NackReason (NackReason.NONE when absent on the wire).
    nack: int | None = None
    incoming_face_id: int | None = None
    next_hop_face_id: int | None = None
    congestion_mark: int | None = None
    acks: tuple[int, ...] = ()
    tx_sequence: int | None = None

    @classmethod
    def make_nack(cls, interest_wire: bytes, reason: int = NackReason.NO_ROUTE) -> LpPacket:
        return cls(fragment=bytes(interest_wire), nack=int(reason))

    def encode(self) -> bytes:
        parts = []
        if self.sequence is not None:
            parts.append(encode_tlv(LpType.SEQUENCE, self.sequence.to_bytes(8, "big")))
        if self.frag_index is not None:
            parts.append(encode_tlv(LpType.FRAG_INDEX, encode_nni(self.frag_index)))
        if self.frag_count is not None:
            parts.append(encode_tlv(LpType.FRAG_COUNT, encode_nni(self.frag_count)))
        if self.pit_token is not None:
            parts.append(encode_tlv(LpType.PIT_TOKEN, self.pit_token))
        if self.nack is not None:
            inner = b""
            if self.nack != NackReason.NONE:
                inner = encode_tlv(LpType.NACK_REASON, encode_nni(self.nack))
            parts.append(encode_tlv(LpType.NACK, inner))
        if self.incoming_face_id is not None:
            parts.append(encode_tlv(LpType.INCOMING_FACE_ID, encode_nni(self.incoming_face_id)))
        if self.next_hop_face_id is not None:
            parts.append(encode_tlv(LpType.NEXT_HOP_FACE_ID, encode_nni(self.next_hop_face_id)))
        if self.congestion_mark is not None:
            parts.append(encode_tlv(LpType.CONGESTION_MARK, encode_nni(self.congestion_mark)))
        for ack in self.acks:
            parts.append(encode_tlv(LpType.ACK, ack.to_bytes(8, "big")))
        if self.tx_sequence is not None:
            parts.append(encode_tlv(LpType.TX_SEQUENCE, self.tx_sequence.to_bytes(8, "big")))
        if self.fragment is not None:
            parts.append(encode_tlv(LpType.FRAGMENT, self.fragment))
        body = b"".join(parts)
        return encode_tl(LpType.LP_PACKET, len(body)) + body

    @classmethod
    def decode(cls, wire: bytes) -> LpPacket:
        wire = bytes(wire)
        t, vs, ve = read_tl(wire, 0, len(wire))
        if t != LpType.LP_PACKET:
            raise NdnDecodeError(f"expected an LpPacket (type 100), got type {t}")
        if ve != len(wire):
            raise NdnDecodeError("trailing bytes after the LpPacket")
        pkt = cls()
        acks = []
        last = 0
        pos = vs
        while pos < ve:
            t, fs, fe = read_tl(wire, pos, ve)
            pos = fe
            if t == LpType.FRAGMENT:
                if pos != ve:
                    raise NdnDecodeError("LpPacket has elements after its Fragment")
                pkt.fragment = wire[fs:fe]
                break
            if t not in _KNOWN:
                if is_ignorable_lp_field(t):
                    continue
                raise NdnDecodeError(f"unknown LpPacket header field {t}")
            if t < last or (t == last and t != LpType.ACK):
                raise NdnDecodeError(f"LpPacket header field {t} out of order or repeated")
            last = t
            if t in _NNI_FIELDS:
                setattr(pkt, _NNI_FIELDS[t], decode_nni(wire, fs, fe))
            elif t in _FIXED_FIELDS:
                setattr(pkt, _FIXED_FIELDS[t], _fixed(wire, fs, fe, t))
            elif t == LpType.ACK:
                acks.append(_fixed(wire, fs, fe, t))
            elif t == LpType.PIT_TOKEN:
                pkt.pit_token = wire[fs:fe]
            else:  # Nack
                found = _scan(wire, fs, fe, _NACK_ORDER, "Nack")
                reason = found.get(LpType.NACK_REASON)
                pkt.nack = (
                    NackReason.NONE if reason is None else decode_nni(wire, reason[1], reason[2])
                )
        pkt.acks = tuple(acks)
        return pkt

    @property
    def is_idle(self) -> bool:
        """No Fragment: the packet only carries link-layer information."""
        return self.fragment is None
