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
from typing import Final

from .name import Name
from .tlv import NdnDecodeError, decode_nni, encode_nni, encode_tlv, read_tl, scan_elements
from .types import TT

# The TLV-TYPEs used here, as plain ints: compiled code reads a Final int
# directly, while an enum member is an attribute lookup at every use.
_TT_INTEREST_SIGNATURE_INFO: Final = int(TT.INTEREST_SIGNATURE_INFO)
_TT_KEY_DIGEST: Final = int(TT.KEY_DIGEST)
_TT_KEY_LOCATOR: Final = int(TT.KEY_LOCATOR)
_TT_NAME: Final = int(TT.NAME)
_TT_SIGNATURE_INFO: Final = int(TT.SIGNATURE_INFO)
_TT_SIGNATURE_NONCE: Final = int(TT.SIGNATURE_NONCE)
_TT_SIGNATURE_SEQ_NUM: Final = int(TT.SIGNATURE_SEQ_NUM)
_TT_SIGNATURE_TIME: Final = int(TT.SIGNATURE_TIME)
_TT_SIGNATURE_TYPE: Final = int(TT.SIGNATURE_TYPE)
_TT_VALIDITY_PERIOD: Final = int(TT.VALIDITY_PERIOD)

__all__ = ["KeyLocator", "SignatureInfo"]

_SIGINFO_ORDER: Final[dict[int, int]] = {
    _TT_SIGNATURE_TYPE: 0,
    _TT_KEY_LOCATOR: 1,
    _TT_VALIDITY_PERIOD: 2,
    _TT_SIGNATURE_NONCE: 3,
    _TT_SIGNATURE_TIME: 4,
    _TT_SIGNATURE_SEQ_NUM: 5,
}
_KEY_LOCATOR_ORDER: Final[dict[int, int]] = {_TT_NAME: 0, _TT_KEY_DIGEST: 0}


# Records below write out their __init__: compiled, it stores each field
# directly, where the one @dataclass generates is interpreted Python
# (tests/test_written_inits.py keeps it equal to the fields).


@dataclass(frozen=True, slots=True)
class KeyLocator:
    """Names the key that verifies a signature: a key Name or a KeyDigest (exactly one)."""

    name: Name | None = None
    key_digest: bytes | None = None

    def __init__(self, name: Name | None = None, key_digest: bytes | None = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "key_digest", key_digest)
        self.__post_init__()

    def __post_init__(self) -> None:
        if (self.name is None) == (self.key_digest is None):
            raise ValueError("a KeyLocator holds exactly one of name and key_digest")

    def encode(self) -> bytes:
        if self.name is not None:
            inner = self.name.wire
        else:
            inner = encode_tlv(_TT_KEY_DIGEST, bytes(self.key_digest or b""))
        return encode_tlv(_TT_KEY_LOCATOR, inner)

    @classmethod
    def decode(cls, buf: bytes, start: int, end: int) -> KeyLocator:
        """Decode a KeyLocator TLV-VALUE."""
        found = scan_elements(buf, start, end, _KEY_LOCATOR_ORDER, "KeyLocator")
        if _TT_NAME in found:
            _, vs, ve = found[_TT_NAME]
            return cls(name=Name.from_value(buf, vs, ve))
        if _TT_KEY_DIGEST in found:
            _, vs, ve = found[_TT_KEY_DIGEST]
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

    def __init__(
        self,
        signature_type: int,
        key_locator: KeyLocator | None = None,
        validity_period: bytes | None = None,
        nonce: bytes | None = None,
        time_ms: int | None = None,
        seq_num: int | None = None,
    ) -> None:
        object.__setattr__(self, "signature_type", signature_type)
        object.__setattr__(self, "key_locator", key_locator)
        object.__setattr__(self, "validity_period", validity_period)
        object.__setattr__(self, "nonce", nonce)
        object.__setattr__(self, "time_ms", time_ms)
        object.__setattr__(self, "seq_num", seq_num)

    def encode(self, tlv_type: int = _TT_SIGNATURE_INFO) -> bytes:
        parts = [encode_tlv(_TT_SIGNATURE_TYPE, encode_nni(self.signature_type))]
        if self.key_locator is not None:
            parts.append(self.key_locator.encode())
        if self.validity_period is not None:
            parts.append(encode_tlv(_TT_VALIDITY_PERIOD, self.validity_period))
        if self.nonce is not None:
            parts.append(encode_tlv(_TT_SIGNATURE_NONCE, self.nonce))
        if self.time_ms is not None:
            parts.append(encode_tlv(_TT_SIGNATURE_TIME, encode_nni(self.time_ms)))
        if self.seq_num is not None:
            parts.append(encode_tlv(_TT_SIGNATURE_SEQ_NUM, encode_nni(self.seq_num)))
        return encode_tlv(tlv_type, b"".join(parts))

    @classmethod
    def decode(cls, buf: bytes, start: int, end: int) -> SignatureInfo:
        """Decode a (Interest)SignatureInfo TLV-VALUE."""
        found = scan_elements(buf, start, end, _SIGINFO_ORDER, "SignatureInfo")
        if _TT_SIGNATURE_TYPE not in found:
            raise NdnDecodeError("SignatureInfo without SignatureType")

        def nni(t: int) -> int | None:
            el = found.get(t)
            return None if el is None else decode_nni(buf, el[1], el[2])

        def raw(t: int) -> bytes | None:
            el = found.get(t)
            return None if el is None else bytes(buf[el[1] : el[2]])

        kl = found.get(_TT_KEY_LOCATOR)
        return cls(
            signature_type=nni(_TT_SIGNATURE_TYPE) or 0,
            key_locator=None if kl is None else KeyLocator.decode(buf, kl[1], kl[2]),
            validity_period=raw(_TT_VALIDITY_PERIOD),
            nonce=raw(_TT_SIGNATURE_NONCE),
            time_ms=nni(_TT_SIGNATURE_TIME),
            seq_num=nni(_TT_SIGNATURE_SEQ_NUM),
        )

    @classmethod
    def from_wire(cls, wire: bytes) -> SignatureInfo:
        """Decode one whole (Interest)SignatureInfo TLV."""
        wire = bytes(wire)
        t, vs, ve = read_tl(wire, 0, len(wire))
        if t not in (_TT_SIGNATURE_INFO, _TT_INTEREST_SIGNATURE_INFO) or ve != len(wire):
            raise NdnDecodeError("not exactly one SignatureInfo TLV")
        return cls.decode(wire, vs, ve)
