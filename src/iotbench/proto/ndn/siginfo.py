"""SignatureInfo and KeyLocator (packet format v0.3 "Signature").

One model serves Data (SignatureInfo, type 22) and signed Interests
(InterestSignatureInfo, type 44); only the outer TLV-TYPE differs:

    SignatureInfo = SignatureType [KeyLocator] [ValidityPeriod]
                    [SignatureNonce] [SignatureTime] [SignatureSeqNum]
    KeyLocator    = Name / KeyDigest

ValidityPeriod is kept as its raw TLV-VALUE (certificates are out of scope);
the Interest-only fields are NonNegativeIntegers except SignatureNonce
(bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from .name import Name
from .tlv import NdnDecodeError, decode_nni, encode_nni, encode_tlv, read_tl, scan_elements
from .types import TT

__all__ = ["KeyLocator", "SignatureInfo"]

_SIGINFO_ORDER: dict[int, int] = {
    TT.SIGNATURE_TYPE: 0,
    TT.KEY_LOCATOR: 1,
    TT.VALIDITY_PERIOD: 2,
    TT.SIGNATURE_NONCE: 3,
    TT.SIGNATURE_TIME: 4,
    TT.SIGNATURE_SEQ_NUM: 5,
}
_KEY_LOCATOR_ORDER: dict[int, int] = {TT.NAME: 0, TT.KEY_DIGEST: 0}


@dataclass(frozen=True, slots=True)
class KeyLocator:
    """Names the key that verifies a signature: a key Name or a KeyDigest (exactly one)."""

    name: Name | None = None
    key_digest: bytes | None = None

    def __post_init__(self) -> None:
        if (self.name is None) == (self.key_digest is None):
            raise ValueError("a KeyLocator holds exactly one of name and key_digest")

    def encode(self) -> bytes:
        if self.name is not None:
            inner = self.name.wire
        else:
            inner = encode_tlv(TT.KEY_DIGEST, bytes(self.key_digest or b""))
        return encode_tlv(TT.KEY_LOCATOR, inner)

    @classmethod
    def decode(cls, buf: bytes, start: int, end: int) -> KeyLocator:
        """Decode a KeyLocator TLV-VALUE."""
        found = scan_elements(buf, start, end, _KEY_LOCATOR_ORDER, "KeyLocator")
        if TT.NAME in found:
            _, vs, ve = found[TT.NAME]
            return cls(name=Name.from_value(buf, vs, ve))
        if TT.KEY_DIGEST in found:
            _, vs, ve = found[TT.KEY_DIGEST]
            return cls(key_digest=bytes(buf[vs:ve]))
        raise NdnDecodeError("KeyLocator holds neither a Name nor a KeyDigest")


@dataclass(frozen=True, slots=True)
class SignatureInfo:
    signature_type: int
    key_locator: KeyLocator | None = None
    validity_period: bytes | None = None
    nonce: bytes | None = None
    time_ms: int | None = None
    seq_num: int | None = None

    def encode(self, tlv_type: int = TT.SIGNATURE_INFO) -> bytes:
        parts = [encode_tlv(TT.SIGNATURE_TYPE, encode_nni(self.signature_type))]
        if self.key_locator is not None:
            parts.append(self.key_locator.encode())
        if self.validity_period is not None:
            parts.append(encode_tlv(TT.VALIDITY_PERIOD, self.validity_period))
        if self.nonce is not None:
            parts.append(encode_tlv(TT.SIGNATURE_NONCE, self.nonce))
        if self.time_ms is not None:
            parts.append(encode_tlv(TT.SIGNATURE_TIME, encode_nni(self.time_ms)))
        if self.seq_num is not None:
            parts.append(encode_tlv(TT.SIGNATURE_SEQ_NUM, encode_nni(self.seq_num)))
        return encode_tlv(tlv_type, b"".join(parts))

    @classmethod
    def decode(cls, buf: bytes, start: int, end: int) -> SignatureInfo:
        """Decode a (Interest)SignatureInfo TLV-VALUE."""
        found = scan_elements(buf, start, end, _SIGINFO_ORDER, "SignatureInfo")
        if TT.SIGNATURE_TYPE not in found:
            raise NdnDecodeError("SignatureInfo without SignatureType")

        def nni(t: int) -> int | None:
            el = found.get(t)
            return None if el is None else decode_nni(buf, el[1], el[2])

        def raw(t: int) -> bytes | None:
            el = found.get(t)
            return None if el is None else bytes(buf[el[1] : el[2]])

        kl = found.get(TT.KEY_LOCATOR)
        return cls(
            signature_type=nni(TT.SIGNATURE_TYPE) or 0,
            key_locator=None if kl is None else KeyLocator.decode(buf, kl[1], kl[2]),
            validity_period=raw(TT.VALIDITY_PERIOD),
            nonce=raw(TT.SIGNATURE_NONCE),
            time_ms=nni(TT.SIGNATURE_TIME),
            seq_num=nni(TT.SIGNATURE_SEQ_NUM),
        )

    @classmethod
    def from_wire(cls, wire: bytes) -> SignatureInfo:
        """Decode one whole (Interest)SignatureInfo TLV."""
        wire = bytes(wire)
        t, vs, ve = read_tl(wire, 0, len(wire))
        if t not in (TT.SIGNATURE_INFO, TT.INTEREST_SIGNATURE_INFO) or ve != len(wire):
            raise NdnDecodeError("not exactly one SignatureInfo TLV")
        return cls.decode(wire, vs, ve)
