"""NDN names and name components (packet format v0.3 "Name"), and their URIs.

A `Name` keeps only its TLV-VALUE (the concatenated component TLVs) and,
once asked, the offsets where components start. Equality, hashing, prefix
tests and canonical order all work on those bytes directly:

- the spec defines canonical order as a memcmp of the Name TLV-VALUEs
  followed by the shorter-first rule, which is Python's bytes ordering;
- `a` is a prefix of `b` exactly when b's TLV-VALUE starts with a's: TLV
  parsing is prefix-deterministic, so a byte prefix made of whole component
  TLVs always ends on a component boundary of `b`.

So the forwarder's tables can key names by their TLV-VALUE without building
component objects.

URI form ("ndn:" scheme optional): components separated by "/", each
``<type-number>=<escaped-value>``, with GenericNameComponent written without
a prefix, ``sha256digest=<hex>`` and ``params-sha256=<hex>`` for the two
digest components, and ``seg=``, ``off=``, ``v=``, ``t=``, ``seq=`` (decimal)
for the numeric conventions. Only A-Z a-z 0-9 - . _ ~ stay unescaped; a value
made only of periods (including the empty value) gets three more periods.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Final, NamedTuple, SupportsIndex, cast, final, overload

from .tlv import NdnDecodeError, decode_nni, encode_nni, encode_tl, read_tl, var_number_size
from .types import ComponentType

__all__ = ["Component", "Name", "NameLike"]

_NAME_TYPE: Final = 0x07
_DIGEST_TYPES: Final = (
    ComponentType.IMPLICIT_SHA256_DIGEST,
    ComponentType.PARAMETERS_SHA256_DIGEST,
)
_MAX_COMPONENT_TYPE: Final = 0xFFFF

_UNRESERVED: Final = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)
# Byte -> its URI text, computed once.
_ESCAPE: Final = tuple(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in range(256))
_HEX: Final = frozenset("0123456789abcdefABCDEF")

# Alternate URI forms of the numeric naming conventions (rev. 3).
_NUMBER_PREFIX: Final[dict[int, str]] = {
    ComponentType.SEGMENT: "seg",
    ComponentType.BYTE_OFFSET: "off",
    ComponentType.VERSION: "v",
    ComponentType.TIMESTAMP: "t",
    ComponentType.SEQUENCE_NUM: "seq",
}
_PREFIX_NUMBER: Final = {v: k for k, v in _NUMBER_PREFIX.items()}
# Plain ints, which compiled code reads without the enum class's attribute lookup
# (about 900 instructions).
_GENERIC: Final = int(ComponentType.GENERIC)
_IMPLICIT_DIGEST: Final = int(ComponentType.IMPLICIT_SHA256_DIGEST)
_DIGEST_PREFIX: Final[dict[int, str]] = {
    ComponentType.IMPLICIT_SHA256_DIGEST: "sha256digest",
    ComponentType.PARAMETERS_SHA256_DIGEST: "params-sha256",
}
_PREFIX_DIGEST: Final = {v: k for k, v in _DIGEST_PREFIX.items()}


def _tlv(typ: int, value: bytes) -> bytes:
    """One TLV: `typ`, the length of `value`, and `value` (a component or a Name)."""
    return encode_tl(typ, len(value)) + value


def _escape(value: bytes) -> str:
    if value.strip(b".") == b"":
        # Empty or only periods: would read as "", "." or ".." (relative paths).
        return "..." + "." * len(value)
    return "".join([_ESCAPE[b] for b in value])


def _utf8(text: str) -> bytes:
    # A URI is text whose characters are written as UTF-8 (RFC 3986 2.5, RFC 3987 3.1);
    # a lone surrogate (U+D800..U+DFFF) has no UTF-8 encoding (RFC 3629 section 3), so a
    # str holding one (e.g. from bytes decoded with "surrogateescape") is not a name URI.
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise NdnDecodeError(
            f"name URI component {text!r} holds a lone surrogate, which is not UTF-8"
        ) from None


def _unescape(text: str) -> bytes:
    if "%" not in text:
        return _utf8(text)
    out = bytearray()
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "%":
            pair = text[i + 1 : i + 3]
            if len(pair) != 2 or not set(pair) <= _HEX:
                raise NdnDecodeError(f"bad percent-escape in name URI component {text!r}")
            out.append(int(pair, 16))
            i += 3
        else:
            j = text.find("%", i)
            j = n if j < 0 else j
            out += _utf8(text[i:j])
            i = j
    return bytes(out)


def _unescape_value(text: str) -> bytes:
    """A component value from its URI text, applying the "..." rule."""
    if text and text.strip(".") == "":
        if len(text) < 3:
            raise NdnDecodeError(f"name URI component {text!r} is a relative path, not a value")
        return b"." * (len(text) - 3)
    if not text:
        raise NdnDecodeError("empty name URI component (write an empty value as '...')")
    return _unescape(text)


def _parse_decimal(text: str, what: str, max_digits: int = 20) -> int:
    """A decimal number of at most `max_digits` significant digits (20 hold any 64-bit
    value). Longer ones are refused before int() sees them: int() raises ValueError,
    not NdnDecodeError, beyond 4300 digits, and no such number fits a TLV field."""
    if not text.isascii() or not text.isdigit():
        raise NdnDecodeError(f"{what} {text!r} is not a decimal number")
    if len(text.lstrip("0")) > max_digits:
        raise NdnDecodeError(f"{what} {text[:24]!r}... has more than {max_digits} digits")
    return int(text)


class Component(NamedTuple):
    """One name component: a TLV-TYPE (1..65535) and a TLV-VALUE."""

    type: int
    value: bytes

    # ---- construction -----------------------------------------------------------

    @classmethod
    def generic(cls, value: bytes | str) -> Component:
        """A GenericNameComponent; str values are UTF-8 encoded (not URI-unescaped)."""
        if isinstance(value, str):
            value = value.encode("utf-8")
        return cls(ComponentType.GENERIC, bytes(value))

    @classmethod
    def from_number(cls, number: int, typ: int) -> Component:
        """A component whose value is a NonNegativeInteger (naming conventions)."""
        return cls(typ, encode_nni(number))

    @classmethod
    def segment(cls, n: int) -> Component:
        return cls(ComponentType.SEGMENT, encode_nni(n))

    @classmethod
    def byte_offset(cls, n: int) -> Component:
        return cls(ComponentType.BYTE_OFFSET, encode_nni(n))

    @classmethod
    def version(cls, n: int) -> Component:
        return cls(ComponentType.VERSION, encode_nni(n))

    @classmethod
    def timestamp(cls, microseconds: int) -> Component:
        """Microseconds since the Unix epoch (naming conventions rev. 3)."""
        return cls(ComponentType.TIMESTAMP, encode_nni(microseconds))

    @classmethod
    def sequence_num(cls, n: int) -> Component:
        return cls(ComponentType.SEQUENCE_NUM, encode_nni(n))

    @classmethod
    def keyword(cls, value: bytes) -> Component:
        return cls(ComponentType.KEYWORD, bytes(value))

    @classmethod
    def implicit_digest(cls, digest: bytes) -> Component:
        if len(digest) != 32:
            raise ValueError(f"an implicit SHA-256 digest is 32 bytes, got {len(digest)}")
        return cls(ComponentType.IMPLICIT_SHA256_DIGEST, bytes(digest))

    @classmethod
    def params_digest(cls, digest: bytes) -> Component:
        if len(digest) != 32:
            raise ValueError(f"a parameters SHA-256 digest is 32 bytes, got {len(digest)}")
        return cls(ComponentType.PARAMETERS_SHA256_DIGEST, bytes(digest))

    @classmethod
    def from_wire(cls, wire: bytes) -> Component:
        """Decode exactly one component TLV."""
        wire = bytes(wire)
        t, vs, ve = read_tl(wire, 0, len(wire))
        if ve != len(wire):
            raise NdnDecodeError("trailing bytes after the name component")
        _check_component(t, ve - vs)
        return cls(t, wire[vs:ve])

    @classmethod
    def from_uri(cls, text: str) -> Component:
        """Parse one URI component (already split at "/")."""
        typ, value = _component_from_uri(text)
        return cls(typ, value)

    # ---- views --------------------------------------------------------------------

    @property
    def wire(self) -> bytes:
        return _tlv(self.type, self.value)

    def to_number(self) -> int:
        """The NonNegativeInteger value (segment, version, ...)."""
        return decode_nni(self.value)

    def is_number(self) -> bool:
        return len(self.value) in (1, 2, 4, 8)

    def to_uri(self) -> str:
        t = self.type
        if t == _GENERIC:
            return _escape(self.value)
        prefix = _NUMBER_PREFIX.get(t)
        if prefix is not None and len(self.value) in (1, 2, 4, 8):
            n = int.from_bytes(self.value, "big")
            # Only the shortest encoding gets the decimal form, which parses back to it.
            if encode_nni(n) == self.value:
                return f"{prefix}={n}"
        prefix = _DIGEST_PREFIX.get(t)
        if prefix is not None and len(self.value) == 32:
            return f"{prefix}={self.value.hex()}"
        return f"{t}={_escape(self.value)}"

    def __str__(self) -> str:
        return self.to_uri()


def _component_from_uri(text: str) -> tuple[int, bytes]:
    """One URI component's TLV-TYPE and TLV-VALUE (`Component.from_uri`), both
    valid: its type in 1..65535, a digest's value 32 bytes."""
    eq = text.find("=")
    if eq < 0:
        return (_GENERIC, _unescape_value(text))
    prefix, rest = text[:eq], text[eq + 1 :]
    if prefix.isascii() and prefix.isdigit():
        # Packet format v0.3 "NDN URI Scheme": <type-number>=<value>, 1..65535.
        typ = _parse_decimal(prefix, "name component type", max_digits=5)
        if not 1 <= typ <= _MAX_COMPONENT_TYPE:
            raise NdnDecodeError(f"name component type {typ} is outside 1..65535")
        value = _unescape_value(rest)
        _check_component(typ, len(value))
        return (typ, value)
    numbered = _PREFIX_NUMBER.get(prefix)
    if numbered is not None:
        n = _parse_decimal(rest, f"{prefix}= value")
        if n > 0xFFFFFFFFFFFFFFFF:
            raise NdnDecodeError(f"{prefix}= value {n} does not fit in 64 bits")
        return (numbered, encode_nni(n))
    digest = _PREFIX_DIGEST.get(prefix)
    if digest is not None:
        if len(rest) != 64 or not set(rest) <= _HEX:
            raise NdnDecodeError(f"{prefix}= needs 64 hexadecimal digits, got {rest!r}")
        return (digest, bytes.fromhex(rest))
    raise NdnDecodeError(f"unknown name component URI prefix {prefix!r} in {text!r}")


def _check_component(t: int, length: int) -> None:
    if t > _MAX_COMPONENT_TYPE:
        raise NdnDecodeError(f"name component type {t} is outside 1..65535")
    if length != 32 and (t == 1 or t == 2):
        raise NdnDecodeError(f"SHA-256 digest component of {length} bytes (must be 32)")


def _component_offsets(buf: bytes, start: int, end: int) -> tuple[int, ...]:
    """Validate the component TLVs in buf[start:end]; returns their starts relative to `start`."""
    offsets: list[int] = []
    pos = start
    try:
        while pos < end:
            offsets.append(pos - start)  # (compiled: a primitive; a bound `append` is not)
            # Nearly every component has a one-byte TLV-TYPE (3..252: no digest rule
            # applies) and a one-byte TLV-LENGTH; walking those inline, without a call,
            # is what makes decoding a name cheap. A length that runs past `end` ends
            # the loop and is caught below.
            if 2 < buf[pos] < 253 and (n := buf[pos + 1]) < 253:
                pos += 2 + n
                continue
            t, vs, ve = read_tl(buf, pos, end)
            if t > _MAX_COMPONENT_TYPE or ((t == 1 or t == 2) and ve - vs != 32):
                _check_component(t, ve - vs)
            pos = ve
    except IndexError:  # a one-byte type at the very end of the buffer
        raise NdnDecodeError("truncated name component") from None
    if pos > end:
        raise NdnDecodeError(f"name component claims {pos - end} bytes more than are left")
    return tuple(offsets)


# Component(t, v) without the named tuple's Python-level __new__ (decoded values are valid).
_new_component: Final = tuple.__new__
# TLV-TYPE and TLV-LENGTH of a generic component with a value of 0..252 bytes.
_GENERIC_TL: Final = tuple(bytes((ComponentType.GENERIC, n)) for n in range(253))


def _to_component(c: Component | bytes | str) -> Component:
    if isinstance(c, Component):
        return c
    if isinstance(c, str):
        return Component.from_uri(c)
    if isinstance(c, (bytes, bytearray, memoryview)):
        return Component(_GENERIC, bytes(c))
    raise TypeError(f"a name component must be Component, bytes or str, not {type(c).__name__}")


def _valid_component(c: Component | bytes | str) -> Component:
    comp = _to_component(c)
    if not 1 <= comp.type <= _MAX_COMPONENT_TYPE:
        raise ValueError(f"name component type {comp.type} is outside 1..65535")
    if comp.type in _DIGEST_TYPES and len(comp.value) != 32:
        raise ValueError("a SHA-256 digest component must be 32 bytes")
    return comp


# A native class when compiled: its fields are read in place. (It was a tuple
# subclass of its components' offsets, which mypyc compiles as a regular
# Python class: every read of `value` by compiled code went through Python's
# generic attribute lookup, about 190 instructions, 553,183 times in five
# simulated minutes of S4's `hopp`; docs/performance.md.)
@final
class Name:
    """An immutable NDN name.

    ``Name("/a/seg=3")`` parses a URI; ``Name([b"a", Component.segment(3)])``
    takes components (bytes are generic values, str are URI components).

    The wire form (`value`) is the name: equality, hashing and order are its
    bytes'. The components' start offsets within it are found while a decoded
    name is validated. Each `Component` object is built on first indexing and
    kept, so looking at the same component twice decodes it once, and a name
    that is only compared, hashed or prefix-tested never builds any.
    """

    # __setattr__ refuses every assignment, so the name stays immutable; the
    # class writes its own fields with object.__setattr__ (compiled: a store).
    value: bytes = b""
    """The Name's TLV-VALUE: concatenated component TLVs (the key of every table)."""
    _offsets: tuple[int, ...] = ()
    _components: list[Component | None] | None = None  # once a component was looked at
    _uri: str | None = None  # the URI, once asked for (a Name never changes)

    def __init__(
        self,
        components: NameLike | bytes = (),
        _offsets: tuple[int, ...] | None = None,
    ) -> None:
        if _offsets is not None:
            # (This module's own:) `components` is a valid Name TLV-VALUE, decoded
            # or built here, and `_offsets` its components' starts.
            value = cast(bytes, components)
            offsets = _offsets
        elif isinstance(components, Name):
            value, offsets = components.value, components._offsets
        elif isinstance(components, str):
            parsed = Name.from_uri(components)
            value, offsets = parsed.value, parsed._offsets
        else:
            parts = []
            starts = []
            size = 0
            for c in cast("Iterable[Component | bytes | str]", components):
                w = _valid_component(c).wire
                starts.append(size)
                size += len(w)
                parts.append(w)
            value, offsets = b"".join(parts), tuple(starts)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "_offsets", offsets)

    def __reduce__(self) -> tuple[type[Name], tuple[tuple[Component, ...]]]:
        return (Name, (self.components,))  # pickling rebuilds the name from its components

    # ---- alternative constructors --------------------------------------------------

    @classmethod
    def from_value(cls, buf: bytes, start: int = 0, end: int | None = None) -> Name:
        """Decode a Name TLV-VALUE (the component TLVs) in buf[start:end]."""
        if end is None:
            end = len(buf)
        offsets = _component_offsets(buf, start, end)
        return Name(bytes(buf[start:end]), offsets)

    @classmethod
    def from_wire(cls, wire: bytes) -> Name:
        """Decode exactly one Name TLV."""
        wire = bytes(wire)
        size = len(wire)
        if size > 1 and wire[0] == _NAME_TYPE and wire[1] < 253 and wire[1] + 2 == size:
            return cls.from_value(wire, 2, size)  # a Name of up to 252 bytes, the usual case
        t, vs, ve = read_tl(wire, 0, size)
        if t != _NAME_TYPE:
            raise NdnDecodeError(f"expected a Name (type 7), got type {t}")
        if ve != size:
            raise NdnDecodeError("trailing bytes after the Name")
        return cls.from_value(wire, vs, ve)

    @classmethod
    def from_uri(cls, uri: str) -> Name:
        """Parse an NDN URI: "/a/b", "ndn:/a/b", "ndn://authority/a/b" (authority ignored)."""
        return _parse_uri(uri)  # the same URI gives the same (immutable) Name

    @classmethod
    def _parse(cls, uri: str) -> Name:
        text = uri.strip()
        if text[:4].lower() == "ndn:":
            text = text[4:]
        # Query and fragment parts mean nothing to NDN; drop them as URIs allow.
        for sep in ("?", "#"):
            cut = text.find(sep)
            if cut >= 0:
                text = text[:cut]
        if text.startswith("//"):
            slash = text.find("/", 2)
            text = "" if slash < 0 else text[slash:]
        text = text.removeprefix("/")
        # One trailing slash ends the name; "a//b" and "a//" still hold an empty component.
        text = text.removesuffix("/")
        if not text:
            return Name(b"", ())
        # The components' TLVs written straight from the text, without a
        # Component object each (from_uri's are valid, as the constructor would check).
        parts: list[bytes] = []
        offsets: list[int] = []
        size = 0
        for part in text.split("/"):
            typ, value = _component_from_uri(part)
            wire = _tlv(typ, value)
            offsets.append(size)
            size += len(wire)
            parts.append(wire)
        return Name(b"".join(parts), tuple(offsets))

    # ---- wire views ------------------------------------------------------------------

    @property
    def wire(self) -> bytes:
        """The Name TLV."""
        return _tlv(_NAME_TYPE, self.value)

    @property
    def wire_size(self) -> int:
        n = len(self.value)
        return 1 + var_number_size(n) + n

    @property
    def offsets(self) -> tuple[int, ...]:
        """Start offsets of the components within `value`."""
        return self._offsets

    def prefix_values(self) -> Iterator[bytes]:
        """TLV-VALUEs of every prefix, longest first (the name itself, ..., the empty name)."""
        value = self.value
        yield value
        for off in reversed(self._offsets):
            yield value[:off]

    # ---- sequence protocol -------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._offsets)

    def __bool__(self) -> bool:
        return len(self._offsets) > 0  # (the empty name, "/", is false, as a tuple would be)

    @overload
    def __getitem__(self, index: SupportsIndex) -> Component: ...
    @overload
    def __getitem__(self, index: slice) -> Name: ...

    def __getitem__(self, index: SupportsIndex | slice) -> Component | Name:
        if isinstance(index, slice):
            return self._slice(index)
        components = self._kept_components()
        component = components[index]
        if component is None:
            start = self._offsets[index]
            component = components[index] = _component_at(self.value, start)
        return component

    def _kept_components(self) -> list[Component | None]:
        components = self._components
        if components is None:
            components = [None] * len(self._offsets)
            object.__setattr__(self, "_components", components)
        return components

    def _slice(self, index: slice) -> Name:
        offsets = self._offsets
        first, stop, step = index.indices(len(offsets))
        if step != 1:
            return Name(self.components[index])
        if stop <= first:
            return Name(b"", ())
        begin = offsets[first]
        end = offsets[stop] if stop < len(offsets) else len(self.value)
        return Name(self.value[begin:end], tuple(o - begin for o in offsets[first:stop]))

    def __iter__(self) -> Iterator[Component]:
        # Every component decoded (once, and kept) before the first is handed out:
        # iterating a list is C.
        components = self._kept_components()
        value = self.value
        for i, start in enumerate(self._offsets):
            if components[i] is None:
                components[i] = _component_at(value, start)
        return iter(components)  # type: ignore[arg-type]  # (no None is left)

    def __contains__(self, component: object) -> bool:
        return any(c == component for c in self)

    def index(self, component: object, *args: SupportsIndex) -> int:
        return self.components.index(component, *args)

    def count(self, component: object) -> int:
        return self.components.count(component)

    def __mul__(self, n: SupportsIndex) -> Name:
        return Name(self.components * n)

    def __rmul__(self, n: SupportsIndex) -> Name:
        return self.__mul__(n)

    @property
    def components(self) -> tuple[Component, ...]:
        return tuple(self)

    def prefix(self, n: int) -> Name:
        """The first `n` components (negative: all but the last -n)."""
        return self[:n]

    def append(self, component: Component | bytes | str) -> Name:
        """A new name with one more component (bytes: a generic component's value).

        Built on the wire form: the new name is this name's bytes plus the
        component's TLV, and its offsets one more than this name's.
        """
        value = self.value
        offsets = self._offsets + (len(value),)
        if type(component) is bytes and (size := len(component)) < 253:
            # The common case, a short generic value: no Component object at all.
            return Name(value + _GENERIC_TL[size] + component, offsets)
        if type(component) is str:
            # A URI component, its TLV written from the text (valid, as from_uri's):
            # the named tuple's Python-level constructor was most of the cost.
            typ, text_value = _component_from_uri(component)
            return Name(value + _tlv(typ, text_value), offsets)
        return Name(value + _valid_component(component).wire, offsets)

    def __add__(self, other: Name | Iterable[Component | bytes | str]) -> Name:
        other = other if isinstance(other, Name) else Name(other)
        shift = len(self.value)
        offsets = (*self._offsets, *(o + shift for o in other._offsets))
        return Name(self.value + other.value, offsets)

    # ---- relations -------------------------------------------------------------------

    def is_prefix_of(self, other: Name) -> bool:
        """True when every component of self starts `other` (a name is a prefix of itself)."""
        return other.value.startswith(self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Name):
            return self.value == other.value
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, Name):
            return self.value != other.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)  # bytes cache their hash

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Name is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a Name is immutable: cannot delete {name!r}")

    # Canonical order (spec "Canonical Order"): memcmp of TLV-VALUEs, shorter first.
    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Name):
            return NotImplemented
        return self.value < other.value

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Name):
            return NotImplemented
        return self.value <= other.value

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Name):
            return NotImplemented
        return self.value > other.value

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Name):
            return NotImplemented
        return self.value >= other.value

    # ---- text ---------------------------------------------------------------------------

    def to_uri(self) -> str:
        uri = self._uri
        if uri is None:
            uri = _uri_of(self)
            object.__setattr__(self, "_uri", uri)
        return uri

    def __str__(self) -> str:
        return self.to_uri()

    def __repr__(self) -> str:
        return f"Name({self.to_uri()!r})"


def component_tl(value: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """The component TLV at `pos` of a valid Name TLV-VALUE ending at `end`: its
    TLV-TYPE and where its TLV-VALUE starts and ends. A one-byte type and length,
    as almost always, are read directly (a valid name's TLVs are whole)."""
    t = value[pos]
    n = value[pos + 1]
    if t < 253 and n < 253:
        return t, pos + 2, pos + 2 + n
    return read_tl(value, pos, end)


def _component_at(value: bytes, start: int) -> Component:
    """The component whose TLV starts at `start` of a valid Name TLV-VALUE."""
    t, vs, ve = component_tl(value, start, len(value))
    return _new_component(Component, (t, value[vs:ve]))


def ends_with_digest(name: Name) -> bool:
    """Whether `name`'s last component is an ImplicitSha256DigestComponent (a
    Data's full name): the PIT, the CS and the app ask it of every packet's
    name. Read off the name's TLVs, component by component: `name[-1]` would
    make a Component (a tuple and a bytes object) only to read its type."""
    value = name.value
    end = len(value)
    pos = 0
    last = -1
    while pos < end:
        last, _start, pos = component_tl(value, pos, end)
    return last == _IMPLICIT_DIGEST


NameLike = Name | str | Iterable[Component | bytes | str]


@functools.lru_cache(maxsize=4096)
def _uri_of(name: Name) -> str:
    """Name.to_uri, remembered for the names seen last (names are equal, and hash
    alike, by their TLV-VALUE): every hop decodes a new Name from the same bytes,
    and a HoPP agent keys its names by URI. The reverse of `_parse_uri`."""
    return "".join("/" + c.to_uri() for c in name) if name.value else "/"


@functools.lru_cache(maxsize=4096)
def _parse_uri(uri: str) -> Name:
    """Name.from_uri, remembered for the URIs seen last: a name often comes back (a
    forwarder, an application and a HoPP agent each parse the same one)."""
    return Name._parse(uri)
