"""Interest packets (packet format v0.3 "Interest Packet"), kept in wire format.

    Interest = INTEREST-TYPE TLV-LENGTH
                 Name [CanBePrefix] [MustBeFresh] [ForwardingHint] [Nonce]
                 [InterestLifetime] [HopLimit]
                 [ApplicationParameters [InterestSignatureInfo InterestSignatureValue]]

`Interest(wire)` checks the element structure once (outer TLV, order,
evolvability, the zero-length flags) and nothing more; each field is parsed
the first time it is read, so a forwarder that only needs the name and the
nonce never decodes the rest. A malformed field raises `NdnDecodeError` when
it is read.

Parameters digest: when ApplicationParameters is present the name must hold
exactly one ParametersSha256DigestComponent, the SHA-256 of everything from
ApplicationParameters to the end of the Interest; without
ApplicationParameters it must hold none. Reading `name` enforces the
presence rule; `parameters_digest_valid()` checks the value (a producer's
job, not a forwarder's). Signed Interests cover the name components other
than that digest component, then ApplicationParameters through
InterestSignatureInfo.
"""

from __future__ import annotations

from collections.abc import Iterable
from hashlib import sha256
from typing import TYPE_CHECKING, Final

from iotbench.proto.octets import as_bytes
from iotbench.proto.recent import RecentDecodes

from .name import Component, Name, NameLike, component_tl
from .siginfo import SignatureInfo
from .tlv import NdnDecodeError, decode_nni, encode_nni, encode_tl, encode_tlv, read_tl, uint_be
from .tlv import scan_elements as _scan
from .types import TT, ComponentType

# The TLV-TYPEs used here, as plain ints: compiled code reads a Final int
# directly, while an enum member is an attribute lookup at every use.
_TT_APPLICATION_PARAMETERS: Final = int(TT.APPLICATION_PARAMETERS)
_TT_CAN_BE_PREFIX: Final = int(TT.CAN_BE_PREFIX)
_TT_FORWARDING_HINT: Final = int(TT.FORWARDING_HINT)
_TT_HOP_LIMIT: Final = int(TT.HOP_LIMIT)
_TT_INTEREST: Final = int(TT.INTEREST)
_TT_INTEREST_LIFETIME: Final = int(TT.INTEREST_LIFETIME)
_TT_INTEREST_SIGNATURE_INFO: Final = int(TT.INTEREST_SIGNATURE_INFO)
_TT_INTEREST_SIGNATURE_VALUE: Final = int(TT.INTEREST_SIGNATURE_VALUE)
_TT_MUST_BE_FRESH: Final = int(TT.MUST_BE_FRESH)
_TT_NAME: Final = int(TT.NAME)
_TT_NONCE: Final = int(TT.NONCE)

if TYPE_CHECKING:
    from .signing import Signer

__all__ = ["DEFAULT_INTEREST_LIFETIME_MS", "Interest", "make_interest", "received_interest"]

#: Spec: an Interest without InterestLifetime lives 4 s.
DEFAULT_INTEREST_LIFETIME_MS: Final = 4000

_ORDER: Final[dict[int, int]] = {
    _TT_NAME: 0,
    _TT_CAN_BE_PREFIX: 1,
    _TT_MUST_BE_FRESH: 2,
    _TT_FORWARDING_HINT: 3,
    _TT_NONCE: 4,
    _TT_INTEREST_LIFETIME: 5,
    _TT_HOP_LIMIT: 6,
    _TT_APPLICATION_PARAMETERS: 7,
    _TT_INTEREST_SIGNATURE_INFO: 8,
    _TT_INTEREST_SIGNATURE_VALUE: 9,
}
_FH_ORDER: Final[dict[int, int]] = {_TT_NAME: 0}
_PARAMS: Final = int(ComponentType.PARAMETERS_SHA256_DIGEST)  # a plain int
_MISSING: Final = object()


def _params_digest_indexes(name: Name) -> list[int]:
    return [i for i, c in enumerate(name) if c.type == _PARAMS]


def _params_digest_count(name: Name) -> int:
    """How many ParametersSha256DigestComponents `name` holds, read off its wire.

    Every Interest made, and every one received at every hop, asks. Walking the
    components' TLVs costs compiled code a few instructions each. The test it
    replaces, `b"\x02\x20" in name.value`, cost about 2,300, because CPython
    3.11's bytes first tries the needle as an integer, raising and clearing a
    TypeError; where it matched, an object was built for every component."""
    value = name.value
    end = len(value)
    pos = 0
    count = 0
    while pos < end:
        t, _start, pos = component_tl(value, pos, end)
        if t == _PARAMS:
            count += 1
    return count


class Interest:
    """One Interest, wrapping its wire bytes; fields are decoded on first access."""

    __slots__ = ("_el", "_end", "_fields", "_name", "wire")

    def __init__(self, wire: bytes) -> None:
        wire = as_bytes(wire)
        t, vs, ve = read_tl(wire, 0, len(wire))
        if t != _TT_INTEREST:
            raise NdnDecodeError(f"expected an Interest (type 5), got type {t}")
        if ve != len(wire):
            raise NdnDecodeError("trailing bytes after the Interest")
        el = _scan(wire, vs, ve, _ORDER, "Interest")
        if _TT_NAME not in el:
            raise NdnDecodeError("Interest without Name")
        for flag in (_TT_CAN_BE_PREFIX, _TT_MUST_BE_FRESH):
            f = el.get(flag)
            if f is not None and f[1] != f[2]:
                raise NdnDecodeError(f"{TT(flag).name} must be empty")
        has_sig_info = _TT_INTEREST_SIGNATURE_INFO in el
        if has_sig_info and _TT_APPLICATION_PARAMETERS not in el:
            raise NdnDecodeError("InterestSignatureInfo without ApplicationParameters")
        if has_sig_info != (_TT_INTEREST_SIGNATURE_VALUE in el):
            raise NdnDecodeError("InterestSignatureInfo and InterestSignatureValue go together")
        self.wire = wire
        self._el = el
        self._end = ve
        self._name: Name | None = None
        self._fields: dict[int, object] = {}

    def __repr__(self) -> str:
        try:
            return f"Interest({self.name.to_uri()!r}, nonce={self.nonce})"
        except NdnDecodeError:
            return f"Interest(<malformed> {self.wire.hex()})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Interest) and other.wire == self.wire

    def __hash__(self) -> int:
        return hash(self.wire)

    # ---- fields ---------------------------------------------------------------------

    @property
    def name(self) -> Name:
        name = self._name
        if name is None:
            _, vs, ve = self._el[_TT_NAME]
            name = Name.from_value(self.wire, vs, ve)
            count = _params_digest_count(name)
            if _TT_APPLICATION_PARAMETERS in self._el:
                if count != 1:
                    raise NdnDecodeError(
                        f"Interest with ApplicationParameters has {count} parameters digest"
                        " components (must be exactly 1)"
                    )
            elif count:
                raise NdnDecodeError("parameters digest component without ApplicationParameters")
            self._name = name
        return name

    @property
    def can_be_prefix(self) -> bool:
        return _TT_CAN_BE_PREFIX in self._el

    @property
    def must_be_fresh(self) -> bool:
        return _TT_MUST_BE_FRESH in self._el

    @property
    def nonce(self) -> int | None:
        """The 4-byte Nonce as an unsigned integer, or None."""
        v = self._fields.get(_TT_NONCE, _MISSING)
        if v is _MISSING:
            el = self._el.get(_TT_NONCE)
            if el is None:
                v = None
            else:
                if el[2] - el[1] != 4:
                    raise NdnDecodeError(f"Nonce of {el[2] - el[1]} bytes (must be 4)")
                v = uint_be(self.wire, el[1], el[2])
            self._fields[_TT_NONCE] = v
        return v  # type: ignore[return-value]

    @property
    def lifetime_ms(self) -> int:
        """InterestLifetime in milliseconds (4000 when absent)."""
        el = self._el.get(_TT_INTEREST_LIFETIME)
        if el is None:
            return DEFAULT_INTEREST_LIFETIME_MS
        return decode_nni(self.wire, el[1], el[2])

    @property
    def has_lifetime(self) -> bool:
        return _TT_INTEREST_LIFETIME in self._el

    @property
    def hop_limit(self) -> int | None:
        el = self._el.get(_TT_HOP_LIMIT)
        if el is None:
            return None
        if el[2] - el[1] != 1:
            raise NdnDecodeError(f"HopLimit of {el[2] - el[1]} bytes (must be 1)")
        return self.wire[el[1]]

    @property
    def has_forwarding_hint(self) -> bool:
        return _TT_FORWARDING_HINT in self._el

    @property
    def forwarding_hint(self) -> tuple[Name, ...]:
        el = self._el.get(_TT_FORWARDING_HINT)
        if el is None:
            return ()
        names = []
        pos, end = el[1], el[2]
        while pos < end:
            t, vs, ve = read_tl(self.wire, pos, end)
            if t == _TT_NAME:
                names.append(Name.from_value(self.wire, vs, ve))
            elif t <= 31 or t & 1:
                raise NdnDecodeError(f"unrecognized critical element {t} in ForwardingHint")
            pos = ve
        if not names:
            raise NdnDecodeError("ForwardingHint without any Name")
        return tuple(names)

    @property
    def app_parameters(self) -> bytes | None:
        """The ApplicationParameters TLV-VALUE, or None when absent."""
        el = self._el.get(_TT_APPLICATION_PARAMETERS)
        return None if el is None else self.wire[el[1] : el[2]]

    @property
    def signature_info(self) -> SignatureInfo | None:
        v = self._fields.get(_TT_INTEREST_SIGNATURE_INFO, _MISSING)
        if v is _MISSING:
            el = self._el.get(_TT_INTEREST_SIGNATURE_INFO)
            v = None if el is None else SignatureInfo.decode(self.wire, el[1], el[2])
            self._fields[_TT_INTEREST_SIGNATURE_INFO] = v
        return v  # type: ignore[return-value]

    @property
    def signature_value(self) -> bytes | None:
        el = self._el.get(_TT_INTEREST_SIGNATURE_VALUE)
        return None if el is None else self.wire[el[1] : el[2]]

    @property
    def signed_portion(self) -> bytes | None:
        """The bytes an Interest signature covers, or None for an unsigned Interest."""
        el = self._el.get(_TT_INTEREST_SIGNATURE_INFO)
        if el is None:
            return None
        start = self._el[_TT_APPLICATION_PARAMETERS][0]
        end = el[2]
        return _name_without_params_digest(self.name) + self.wire[start:end]

    # ---- parameters digest ------------------------------------------------------------

    def parameters_digest(self) -> bytes | None:
        """SHA-256 of ApplicationParameters through the end of the Interest, or None."""
        el = self._el.get(_TT_APPLICATION_PARAMETERS)
        if el is None:
            return None
        return sha256(self.wire[el[0] : self._end]).digest()

    def parameters_digest_valid(self) -> bool:
        """True when the name's parameters digest matches (or neither is present)."""
        digest = self.parameters_digest()
        name = self.name
        if digest is None:
            return True
        return any(c.type == _PARAMS and c.value == digest for c in name)

    # ---- matching ---------------------------------------------------------------------

    def matches_data(self, data) -> bool:
        """Can `data` (a Data) satisfy this Interest? Name rules only (no freshness)."""
        iname = self.name
        dname = data.name
        if len(iname.value) <= len(dname.value):
            if iname == dname:
                return True
            return self.can_be_prefix and iname.is_prefix_of(dname)
        # Longer than the Data name: only the full name (with the implicit digest) can match.
        if len(iname) == len(dname) + 1 and iname[-1].type == ComponentType.IMPLICIT_SHA256_DIGEST:
            return iname == data.full_name
        return False

    # ---- modified copies (forwarder use) -------------------------------------------------

    def _replace(self, t: int, tlv: bytes | None) -> Interest:
        """A copy with element `t` replaced by (or set to) the given TLV, or removed."""
        wire = self.wire
        _, vs, ve = read_tl(wire, 0, len(wire))
        el = self._el.get(t)
        if el is not None:
            value = wire[vs : el[0]] + (tlv or b"") + wire[el[2] : ve]
        else:
            if tlv is None:
                return self
            rank = _ORDER[t]
            at = ve
            for other, (start, _, _) in self._el.items():
                if _ORDER[other] > rank:
                    at = min(at, start)
            value = wire[vs:at] + tlv + wire[at:ve]
        copy = Interest(encode_tl(_TT_INTEREST, len(value)) + value)
        copy._name = self._name
        return copy

    def with_nonce(self, nonce: int) -> Interest:
        return self._replace(_TT_NONCE, encode_tlv(_TT_NONCE, nonce.to_bytes(4, "big")))

    def with_hop_limit(self, hop_limit: int | None) -> Interest:
        tlv = None if hop_limit is None else encode_tlv(_TT_HOP_LIMIT, bytes((hop_limit,)))
        return self._replace(_TT_HOP_LIMIT, tlv)

    def with_lifetime_ms(self, lifetime_ms: int | None) -> Interest:
        tlv = (
            None
            if lifetime_ms is None
            else encode_tlv(_TT_INTEREST_LIFETIME, encode_nni(lifetime_ms))
        )
        return self._replace(_TT_INTEREST_LIFETIME, tlv)

    def validate(self) -> Interest:
        """Decode every field now (raises NdnDecodeError on the first bad one)."""
        _ = (self.name, self.nonce, self.lifetime_ms, self.hop_limit, self.forwarding_hint)
        _ = self.signature_info
        return self


def _name_without_params_digest(name: Name) -> bytes:
    value = name.value
    if not _params_digest_count(name):
        return value
    parts = []
    offsets = name.offsets
    for i, start in enumerate(offsets):
        end = offsets[i + 1] if i + 1 < len(offsets) else len(value)
        if value[start] != _PARAMS or value[start + 1] != 32:
            parts.append(value[start:end])
    return b"".join(parts)


# Every hop, every neighbour that hears it and the app at its end decode the same
# Interest's bytes (recent.py).
_RECENT: Final = RecentDecodes(Interest, 64)


def received_interest(wire: bytes) -> Interest:
    """`Interest(wire)` for a packet that arrived: one object for every copy of bytes
    recently received or made (`make_interest`)."""
    return _RECENT.get(bytes(wire))


def make_interest(
    name: NameLike,
    *,
    can_be_prefix: bool = False,
    must_be_fresh: bool = False,
    forwarding_hint: Iterable[NameLike] = (),
    nonce: int | None = None,
    lifetime_ms: int | None = None,
    hop_limit: int | None = None,
    app_parameters: bytes | None = None,
    signer: Signer | None = None,
    signature_nonce: bytes | None = None,
    signature_time_ms: int | None = None,
    signature_seq_num: int | None = None,
) -> Interest:
    """Encode an Interest.

    With `app_parameters` (or a `signer`, which implies empty parameters) the
    ParametersSha256DigestComponent is computed and put where the name already
    has one (any value is a placeholder), or appended; without them the name must
    hold none (ValueError), as the decoder would refuse it. A `signer` signs it as a
    signed Interest; the signature_* arguments go into InterestSignatureInfo.
    """
    name = name if isinstance(name, Name) else Name(name)
    if nonce is not None and not 0 <= nonce <= 0xFFFFFFFF:
        raise ValueError(f"Nonce must be a 32-bit unsigned integer, got {nonce}")
    if hop_limit is not None and not 0 <= hop_limit <= 255:
        raise ValueError(f"HopLimit must be 0..255, got {hop_limit}")
    parts = []
    if can_be_prefix:
        parts.append(b"\x21\x00")
    if must_be_fresh:
        parts.append(b"\x12\x00")
    hints = [h if isinstance(h, Name) else Name(h) for h in forwarding_hint]
    if hints:
        parts.append(encode_tlv(_TT_FORWARDING_HINT, b"".join(h.wire for h in hints)))
    if nonce is not None:
        parts.append(b"\x0a\x04" + nonce.to_bytes(4, "big"))
    if lifetime_ms is not None:
        parts.append(encode_tlv(_TT_INTEREST_LIFETIME, encode_nni(lifetime_ms)))
    if hop_limit is not None:
        parts.append(bytes((_TT_HOP_LIMIT, 1, hop_limit)))
    if signer is not None and app_parameters is None:
        app_parameters = b""
    if app_parameters is None and _params_digest_count(name):
        # Packet format v0.3, Interest: a ParametersSha256DigestComponent goes with
        # ApplicationParameters only; Interest.name refuses one without them.
        raise ValueError("a parameters digest component needs app_parameters")
    if app_parameters is not None:
        digest_at = _params_digest_indexes(name)
        if len(digest_at) > 1:
            raise ValueError("the name holds more than one parameters digest component")
        if digest_at:
            base = name[: digest_at[0]] + name[digest_at[0] + 1 :]
        else:
            base = name
        tail = encode_tlv(_TT_APPLICATION_PARAMETERS, app_parameters)
        if signer is not None:
            info = SignatureInfo(
                signer.signature_type,
                signer.key_locator,
                nonce=signature_nonce,
                time_ms=signature_time_ms,
                seq_num=signature_seq_num,
            ).encode(_TT_INTEREST_SIGNATURE_INFO)
            tail += info
            value = signer.sign(base.value + tail)
            tail += encode_tlv(_TT_INTEREST_SIGNATURE_VALUE, value)
        component = Component.params_digest(sha256(tail).digest())
        if digest_at:
            i = digest_at[0]
            name = name[:i].append(component) + name[i + 1 :]
        else:
            name = name.append(component)
        parts.append(tail)
    # The Name TLV written here, not read as `name.wire`: a property of the name's
    # (non-native) class, which compiled code reaches through Python's lookup.
    name_value = name.value
    body = encode_tl(_TT_NAME, len(name_value)) + name_value + b"".join(parts)
    interest = Interest(encode_tl(_TT_INTEREST, len(body)) + body)
    interest._name = name
    _RECENT.remember(interest.wire, interest)
    return interest
