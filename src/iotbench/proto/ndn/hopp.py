"""HoPP's control messages (HoP-and-Pull, Gündoğan et al.): SOL, PAM and NAM.

HoPP builds a tree towards a content proxy with prefix advertisements and
moves published names up it hop by hop; each hop pulls the Data with an
ordinary NDN Interest. Its three messages are not NDN packets: they go
straight into link-layer frames behind a two-byte dispatch, 0x80 0x08,
which the reference implementation (RIOT's `sys/net/routing/hopp` with the
COMPAS library) uses to tell them from NDN packets. Their layouts follow
that implementation's packed structs, multi-byte fields little-endian (the
host order of the nodes it ran on; it defines no network order):

    SOL  80 08 | C2 | flags(1)                      flags bit 0: reset Trickle
    PAM  80 08 | C0 | flags(1) | freshness(1) | rank(2) | prefix_len(2) | prefix
                flags bit 0: floating (no grounded root above)
    NAM  80 08 | C1 | len(1) | TLVs (type(1) | length(2) | value)...
                TLV type 0: a name in ASCII, as CCN-lite prints it (nam_text)

A prefix is at most 32 bytes and a name at most 64 (COMPAS_PREFIX_LEN and
COMPAS_NAME_LEN); `decode` refuses longer ones, anything truncated, an
unknown type, flags the messages do not define (the reference ignores them;
refusing them keeps decoding and encoding in agreement) and trailing bytes,
with a `HoppDecodeError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from iotbench.proto.octets import ONE_BYTE

from .name import Component, Name, component_tl
from .tlv import NdnDecodeError
from .types import ComponentType

__all__ = [
    "DISPATCH",
    "MAX_NAME_BYTES",
    "MAX_PREFIX_BYTES",
    "RANK_UNDEFINED",
    "HoppDecodeError",
    "Nam",
    "Pam",
    "Sol",
    "decode",
    "is_hopp",
    "nam_text",
]

DISPATCH: Final = b"\x80\x08"
SOL_TYPE: Final = 0xC2
PAM_TYPE: Final = 0xC0
NAM_TYPE: Final = 0xC1
TLV_NAME: Final = 0x00
FLAG_TRICKLE: Final = 0x01  # SOL: reset the receiver's Trickle timer
FLAG_FLOATING: Final = 0x01  # PAM
RANK_UNDEFINED: Final = 0
MAX_PREFIX_BYTES: Final = 32
MAX_NAME_BYTES: Final = 64

_PAM_HEAD: Final = struct.Struct("<BBHH")  # flags, freshness, rank, prefix_len
_GENERIC: Final = int(ComponentType.GENERIC)
_NAM_HEAD: Final = DISPATCH + ONE_BYTE[NAM_TYPE]
_NAME_TLV_TYPE: Final = ONE_BYTE[TLV_NAME]
# Bytes a NAM's name keeps as they are: printable ASCII but those that would read
# back as another name (a slash, an escape, a typed component's "=").
_SLASH: Final = ord("/")
_PERCENT: Final = ord("%")
_EQUALS: Final = ord("=")
_PERIOD: Final = ord(".")
# A NAM's TLV head: its type (one byte), then its length (two, little endian),
# written and read byte by byte (a Struct's pack, unpack_from and even its `size`
# go through Python's calls and attribute lookups, compiled).
_TLV_HEAD_BYTES: Final = 3


class HoppDecodeError(NdnDecodeError):
    """The bytes are not a well-formed HoPP message."""


def is_hopp(frame: bytes) -> bool:
    """Does the frame carry a HoPP message (rather than an NDN packet)?"""
    return frame[:2] == DISPATCH


# Records below write out their __init__: compiled, it stores each field
# directly, where the one @dataclass generates is interpreted Python
# (tests/test_written_inits.py keeps it equal to the fields).


@dataclass(frozen=True, slots=True)
class Sol:
    """Solicitation: asks neighbours (or the parent) for a PAM."""

    reset_trickle: bool = False

    def __init__(self, reset_trickle: bool = False) -> None:
        object.__setattr__(self, "reset_trickle", reset_trickle)

    def encode(self) -> bytes:
        return DISPATCH + bytes((SOL_TYPE, FLAG_TRICKLE if self.reset_trickle else 0))


@dataclass(frozen=True, slots=True)
class Pam:
    """Prefix advertisement: the sender's rank (hops to the root, the root is 1) and
    the prefix its tree leads to."""

    rank: int
    prefix: str
    floating: bool = False
    freshness: int = 0

    def __init__(self, rank: int, prefix: str, floating: bool = False, freshness: int = 0) -> None:
        object.__setattr__(self, "rank", rank)
        object.__setattr__(self, "prefix", prefix)
        object.__setattr__(self, "floating", floating)
        object.__setattr__(self, "freshness", freshness)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not 0 <= self.rank <= 0xFFFF or not 0 <= self.freshness <= 0xFF:
            raise ValueError(f"PAM rank {self.rank} or freshness {self.freshness} out of range")
        if len(self.prefix.encode()) > MAX_PREFIX_BYTES:
            raise ValueError(f"a PAM prefix is at most {MAX_PREFIX_BYTES} bytes")

    def encode(self) -> bytes:
        prefix = self.prefix.encode()
        flags = FLAG_FLOATING if self.floating else 0
        return (
            DISPATCH
            + bytes((PAM_TYPE,))
            + _PAM_HEAD.pack(flags, self.freshness, self.rank, len(prefix))
            + prefix
        )


@dataclass(frozen=True, slots=True)
class Nam:
    """Name advertisement: the sender holds these names' Data; pull them."""

    names: tuple[str, ...]

    def __init__(self, names: tuple[str, ...]) -> None:
        object.__setattr__(self, "names", names)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not self.names:
            raise ValueError("a NAM advertises at least one name")
        size = 0
        for name in self.names:
            length = len(name.encode())
            if length > MAX_NAME_BYTES:
                raise ValueError(f"a NAM name is at most {MAX_NAME_BYTES} bytes")
            size += _TLV_HEAD_BYTES + length
        if size > 0xFF:
            raise ValueError("a NAM's TLVs take at most 255 bytes")

    def encode(self) -> bytes:
        parts = [_NAM_HEAD, b""]
        size = 0
        for name in self.names:
            text = name.encode()
            parts.append(_NAME_TLV_TYPE + len(text).to_bytes(2, "little") + text)
            size += _TLV_HEAD_BYTES + len(text)
        parts[1] = ONE_BYTE[size]  # (at most 255: __post_init__)
        return b"".join(parts)


def nam_text(name: Name) -> str:
    """A name as a NAM carries it: as CCN-lite's `ccnl_prefix_to_path` prints it, each
    component's bytes after a slash, unescaped (S4's /i3/aa:bb:cc:dd:ee:ff:00:11/gasval/0001
    is 39 bytes, where the NDN URI escapes each colon as %3A). A component that would
    not read back as itself (with a slash, %, = or a byte outside printable ASCII in
    it, only periods, or a type other than generic) is written as the URI writes it;
    `Name(nam_text(name)) == name` always."""
    # The component TLVs read off the name's value: compiled, iterating the Name
    # made a Component of each through the class's Python-level __iter__
    # (about 9,000 instructions a name).
    value = name.value
    if not value:
        return "/"
    parts: list[str] = []
    end = len(value)
    pos = 0
    while pos < end:
        t, start, stop = component_tl(value, pos, end)
        part = value[start:stop]
        if t == _GENERIC and _plain(part):
            parts.append("/" + part.decode("ascii"))
        else:
            parts.append("/" + Component(t, part).to_uri())
        pos = stop
    return "".join(parts)


def _plain(value: bytes) -> bool:
    """Whether a component's value reads back as itself unescaped: every byte
    printable ASCII but a slash, % or =, and not only periods (nor none).
    A loop over the bytes, which compiled code reads natively: the calls of
    bytes' methods it replaces cost about a thousand instructions each, for
    each component of every NAM."""
    only_periods = True
    for b in value:
        if b < 0x21 or b > 0x7E or b == _SLASH or b == _PERCENT or b == _EQUALS:
            return False
        if b != _PERIOD:
            only_periods = False
    return not only_periods


def decode(frame: bytes) -> Sol | Pam | Nam:
    """The HoPP message in a frame's payload (HoppDecodeError if it is not one)."""
    if len(frame) < 4 or frame[:2] != DISPATCH:
        raise HoppDecodeError("not a HoPP message (no 0x80 0x08 dispatch)")
    kind = frame[2]
    if kind == SOL_TYPE:
        if len(frame) != 4:
            raise HoppDecodeError(f"a SOL is 4 bytes, got {len(frame)}")
        if frame[3] & ~FLAG_TRICKLE:
            raise HoppDecodeError(f"a SOL with undefined flags 0x{frame[3]:02x}")
        return Sol(bool(frame[3] & FLAG_TRICKLE))
    if kind == PAM_TYPE:
        return _decode_pam(frame)
    if kind == NAM_TYPE:
        return _decode_nam(frame)
    raise HoppDecodeError(f"unknown HoPP message type 0x{kind:02x}")


def _decode_pam(frame: bytes) -> Pam:
    head_end = 3 + _PAM_HEAD.size
    if len(frame) < head_end:
        raise HoppDecodeError("a PAM is cut short")
    flags, freshness, rank, size = _PAM_HEAD.unpack_from(frame, 3)
    if flags & ~FLAG_FLOATING:
        raise HoppDecodeError(f"a PAM with undefined flags 0x{flags:02x}")
    if size > MAX_PREFIX_BYTES:
        raise HoppDecodeError(f"a PAM prefix of {size} bytes (at most {MAX_PREFIX_BYTES})")
    if len(frame) != head_end + size:
        raise HoppDecodeError(f"a PAM with a {size}-byte prefix is {head_end + size} bytes")
    prefix = _ascii(frame[head_end:], "PAM prefix")
    return Pam(rank, prefix, bool(flags & FLAG_FLOATING), freshness)


def _decode_nam(frame: bytes) -> Nam:
    size = frame[3]
    if len(frame) != 4 + size:
        raise HoppDecodeError(f"a NAM whose TLVs take {size} bytes is {4 + size} bytes")
    names = []
    at = 4
    while at < len(frame):
        if at + _TLV_HEAD_BYTES > len(frame):
            raise HoppDecodeError("a NAM TLV is cut short")
        kind = frame[at]
        length = frame[at + 1] | frame[at + 2] << 8
        at += _TLV_HEAD_BYTES
        if at + length > len(frame):
            raise HoppDecodeError("a NAM TLV's value runs past the message")
        value = frame[at : at + length]
        at += length
        if kind != TLV_NAME:
            continue  # other TLV types are defined but not used: skipped
        if length > MAX_NAME_BYTES:
            raise HoppDecodeError(f"a NAM name of {length} bytes (at most {MAX_NAME_BYTES})")
        names.append(_ascii(value, "NAM name"))
    if not names:
        raise HoppDecodeError("a NAM without a name")
    return Nam(tuple(names))


def _ascii(value: bytes, what: str) -> str:
    try:
        return value.decode("ascii")
    except UnicodeDecodeError:
        raise HoppDecodeError(f"a {what} that is not ASCII") from None
