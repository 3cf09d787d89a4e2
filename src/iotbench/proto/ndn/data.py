"""Data packets (packet format v0.3 "Data Packet"), kept in wire format.

    Data     = DATA-TYPE TLV-LENGTH Name [MetaInfo] [Content] SignatureInfo SignatureValue
    MetaInfo = [ContentType] [FreshnessPeriod] [FinalBlockId]

`Data(wire)` checks the element structure once; `name`, `content`,
`meta_info` and the signature fields are decoded on first access. The
signed portion (Name through SignatureInfo) and the implicit digest (SHA-256
of the whole Data TLV) are byte slices of the wire, so verifying or
computing a full name never re-encodes anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from hashlib import sha256
from typing import TYPE_CHECKING, Final

from iotbench.proto.octets import as_bytes
from iotbench.proto.recent import RecentDecodes

from .name import Component, Name, NameLike
from .siginfo import SignatureInfo
from .signing import DigestSha256Signer
from .tlv import NdnDecodeError, decode_nni, encode_nni, encode_tl, encode_tlv, read_tl
from .tlv import scan_elements as _scan
from .types import TT, ComponentType, ContentType

# The TLV-TYPEs used here, as plain ints: compiled code reads a Final int
# directly, while an enum member is an attribute lookup at every use.
_TT_CONTENT: Final = int(TT.CONTENT)
_TT_CONTENT_TYPE: Final = int(TT.CONTENT_TYPE)
_TT_DATA: Final = int(TT.DATA)
_TT_FINAL_BLOCK_ID: Final = int(TT.FINAL_BLOCK_ID)
_TT_FRESHNESS_PERIOD: Final = int(TT.FRESHNESS_PERIOD)
_TT_META_INFO: Final = int(TT.META_INFO)
_TT_NAME: Final = int(TT.NAME)
_TT_SIGNATURE_INFO: Final = int(TT.SIGNATURE_INFO)
_TT_SIGNATURE_VALUE: Final = int(TT.SIGNATURE_VALUE)

if TYPE_CHECKING:
    from .signing import Signer

__all__ = ["Data", "MetaInfo", "make_data", "received_data"]

_ORDER: Final[dict[int, int]] = {
    _TT_NAME: 0,
    _TT_META_INFO: 1,
    _TT_CONTENT: 2,
    _TT_SIGNATURE_INFO: 3,
    _TT_SIGNATURE_VALUE: 4,
}
_META_ORDER: Final[dict[int, int]] = {
    _TT_CONTENT_TYPE: 0,
    _TT_FRESHNESS_PERIOD: 1,
    _TT_FINAL_BLOCK_ID: 2,
}
_MISSING: Final = object()


def _decode_signature_info(value: bytes) -> SignatureInfo:
    return SignatureInfo.decode(value, 0, len(value))


# A forwarder decodes every Data's SignatureInfo at every hop (NFD's wireDecode;
# forwarder.py), and a producer's Data all carry the same one (recent.py).
_SIGNATURE_INFOS: Final = RecentDecodes(_decode_signature_info, 16)


# Records below write out their __init__: compiled, it stores each field
# directly, where the one @dataclass generates is interpreted Python
# (tests/test_written_inits.py keeps it equal to the fields).


@dataclass(frozen=True, slots=True)
class MetaInfo:
    """ContentType (BLOB when absent), FreshnessPeriod in ms (0 when absent), FinalBlockId."""

    content_type: int = ContentType.BLOB
    freshness_period_ms: int = 0
    final_block_id: Component | None = None

    def __init__(
        self,
        content_type: int = ContentType.BLOB,
        freshness_period_ms: int = 0,
        final_block_id: Component | None = None,
    ) -> None:
        object.__setattr__(self, "content_type", content_type)
        object.__setattr__(self, "freshness_period_ms", freshness_period_ms)
        object.__setattr__(self, "final_block_id", final_block_id)

    @classmethod
    def decode(cls, buf: bytes, start: int, end: int) -> MetaInfo:
        found = _scan(buf, start, end, _META_ORDER, "MetaInfo")
        ct = found.get(_TT_CONTENT_TYPE)
        fp = found.get(_TT_FRESHNESS_PERIOD)
        fb = found.get(_TT_FINAL_BLOCK_ID)
        final = None
        if fb is not None:
            final = Component.from_wire(buf[fb[1] : fb[2]])
        return cls(
            ContentType.BLOB if ct is None else decode_nni(buf, ct[1], ct[2]),
            0 if fp is None else decode_nni(buf, fp[1], fp[2]),
            final,
        )


class Data:
    """One Data packet, wrapping its wire bytes; fields are decoded on first access."""

    __slots__ = ("_digest", "_el", "_fields", "_name", "wire")

    def __init__(self, wire: bytes) -> None:
        wire = as_bytes(wire)
        t, vs, ve = read_tl(wire, 0, len(wire))
        if t != _TT_DATA:
            raise NdnDecodeError(f"expected a Data (type 6), got type {t}")
        if ve != len(wire):
            raise NdnDecodeError("trailing bytes after the Data")
        el = _scan(wire, vs, ve, _ORDER, "Data")
        for required in (_TT_NAME, _TT_SIGNATURE_INFO, _TT_SIGNATURE_VALUE):
            if required not in el:
                raise NdnDecodeError(f"Data without {TT(required).name}")
        self.wire = wire
        self._el = el
        self._name: Name | None = None
        self._digest: bytes | None = None
        self._fields: dict[int, object] = {}

    def __repr__(self) -> str:
        try:
            return f"Data({self.name.to_uri()!r}, {len(self.content)} content bytes)"
        except NdnDecodeError:
            return f"Data(<malformed> {self.wire.hex()})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Data) and other.wire == self.wire

    def __hash__(self) -> int:
        return hash(self.wire)

    @property
    def name(self) -> Name:
        name = self._name
        if name is None:
            _, vs, ve = self._el[_TT_NAME]
            name = self._name = Name.from_value(self.wire, vs, ve)
        return name

    @property
    def content(self) -> bytes:
        """The Content TLV-VALUE (empty when absent)."""
        el = self._el.get(_TT_CONTENT)
        return b"" if el is None else self.wire[el[1] : el[2]]

    @property
    def content_span(self) -> tuple[int, int]:
        """Where the Content TLV-VALUE lies in `wire`: (start, end), empty when absent.

        The simulator uses it to count a Data's content as payload and the rest
        of the packet as protocol header.
        """
        el = self._el.get(_TT_CONTENT)
        return (len(self.wire), len(self.wire)) if el is None else (el[1], el[2])

    @property
    def meta_info(self) -> MetaInfo:
        v = self._fields.get(_TT_META_INFO, _MISSING)
        if v is _MISSING:
            el = self._el.get(_TT_META_INFO)
            v = MetaInfo() if el is None else MetaInfo.decode(self.wire, el[1], el[2])
            self._fields[_TT_META_INFO] = v
        return v  # type: ignore[return-value]

    @property
    def content_type(self) -> int:
        return self.meta_info.content_type

    @property
    def freshness_period_ms(self) -> int:
        return self.meta_info.freshness_period_ms

    @property
    def final_block_id(self) -> Component | None:
        return self.meta_info.final_block_id

    @property
    def signature_info(self) -> SignatureInfo:
        v = self._fields.get(_TT_SIGNATURE_INFO, _MISSING)
        if v is _MISSING:
            _, vs, ve = self._el[_TT_SIGNATURE_INFO]
            v = self._fields[_TT_SIGNATURE_INFO] = _SIGNATURE_INFOS.get(self.wire[vs:ve])
        return v  # type: ignore[return-value]

    @property
    def signature_value(self) -> bytes:
        _, vs, ve = self._el[_TT_SIGNATURE_VALUE]
        return self.wire[vs:ve]

    @property
    def signed_portion(self) -> bytes:
        """Name through SignatureInfo: the bytes the signature covers."""
        return self.wire[self._el[_TT_NAME][0] : self._el[_TT_SIGNATURE_INFO][2]]

    @property
    def implicit_digest(self) -> bytes:
        """SHA-256 of the whole Data TLV."""
        d = self._digest
        if d is None:
            d = self._digest = sha256(self.wire).digest()
        return d

    @property
    def full_name(self) -> Name:
        """The name plus its ImplicitSha256DigestComponent."""
        return self.name.append(
            Component(ComponentType.IMPLICIT_SHA256_DIGEST, self.implicit_digest)
        )

    def validate(self) -> Data:
        """Decode every field now (raises NdnDecodeError on the first bad one)."""
        _ = (self.name, self.meta_info, self.signature_info)
        return self


# Every hop, every neighbour that hears it and the app at its end decode the same
# Data's bytes (recent.py).
_RECENT: Final = RecentDecodes(Data, 64)


def received_data(wire: bytes) -> Data:
    """`Data(wire)` for a packet that arrived: one object for every copy of bytes
    recently received or made (`make_data`)."""
    return _RECENT.get(as_bytes(wire))


def make_data(
    name: NameLike,
    content: bytes = b"",
    *,
    signer: Signer | None = None,
    content_type: int | None = None,
    freshness_period_ms: int | None = None,
    final_block_id: Component | None = None,
    meta_info: bool = False,
) -> Data:
    """Encode and sign a Data packet (DigestSha256 when no signer is given).

    Content is always written (an empty Content TLV when `content` is empty),
    MetaInfo when one of its fields is set, or empty with `meta_info` (as
    CCN-lite writes every Data).
    """
    name = name if isinstance(name, Name) else Name(name)
    if signer is None:
        signer = DigestSha256Signer()
    meta = []
    if content_type is not None:
        meta.append(encode_tlv(_TT_CONTENT_TYPE, encode_nni(content_type)))
    if freshness_period_ms is not None:
        meta.append(encode_tlv(_TT_FRESHNESS_PERIOD, encode_nni(freshness_period_ms)))
    if final_block_id is not None:
        meta.append(encode_tlv(_TT_FINAL_BLOCK_ID, final_block_id.wire))
    covered = name.wire
    if meta or meta_info:
        covered += encode_tlv(_TT_META_INFO, b"".join(meta))
    covered += encode_tlv(_TT_CONTENT, bytes(content))
    covered += SignatureInfo(signer.signature_type, signer.key_locator).encode(_TT_SIGNATURE_INFO)
    body = covered + encode_tlv(_TT_SIGNATURE_VALUE, signer.sign(covered))
    data = Data(encode_tl(_TT_DATA, len(body)) + body)
    data._name = name
    _RECENT.remember(data.wire, data)
    return data
