"""CoAP option numbers and the option registry.

The registry records what the RFCs say about each option (format, allowed
value lengths, whether it may repeat), so that the endpoint can apply the
rules of RFC 7252 5.4.3 / 5.4.5 (a value of the wrong length or format, or a
repetition of a non-repeatable option, is treated like an unrecognized option)
without every stack re-typing the tables.

The critical / unsafe / no-cache-key properties are not stored: RFC 7252
5.4.6 encodes them in the option number itself, so they are derived from it
and are therefore also available for options this registry does not know.

Sources: RFC 7252 (core), 7641 (Observe), 7959 (Block1/Block2/Size1/Size2),
8613 (OSCORE), 8768 (Hop-Limit), 9177 (Q-Block1/Q-Block2), 9668 (EDHOC),
9175 (Echo, Request-Tag), 7967 (No-Response).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Final


class Opt(IntEnum):
    """Registered CoAP option numbers (IANA "CoAP Option Numbers")."""

    IF_MATCH = 1
    URI_HOST = 3
    ETAG = 4
    IF_NONE_MATCH = 5
    OBSERVE = 6
    URI_PORT = 7
    LOCATION_PATH = 8
    OSCORE = 9
    URI_PATH = 11
    CONTENT_FORMAT = 12
    MAX_AGE = 14
    URI_QUERY = 15
    HOP_LIMIT = 16
    ACCEPT = 17
    Q_BLOCK1 = 19
    LOCATION_QUERY = 20
    EDHOC = 21
    BLOCK2 = 23
    BLOCK1 = 27
    SIZE2 = 28
    Q_BLOCK2 = 31
    PROXY_URI = 35
    PROXY_SCHEME = 39
    SIZE1 = 60
    ECHO = 252
    NO_RESPONSE = 258
    REQUEST_TAG = 292


class OptFormat(Enum):
    """Option value formats of RFC 7252 3.2."""

    EMPTY = "empty"
    OPAQUE = "opaque"
    UINT = "uint"
    STRING = "string"


MAX_OPTION_NUMBER: Final = 0xFFFF


def is_critical(number: int) -> bool:
    """Critical options have an odd number (RFC 7252 5.4.6)."""
    return bool(number & 0x01)


def is_unsafe(number: int) -> bool:
    """Unsafe-to-forward options have bit 1 set (RFC 7252 5.4.6)."""
    return bool(number & 0x02)


def is_no_cache_key(number: int) -> bool:
    """NoCacheKey options have bits 2-4 set and bit 1 clear (RFC 7252 5.4.6).

    Only safe-to-forward options can be NoCacheKey, which the mask enforces.
    """
    return (number & 0x1E) == 0x1C


@dataclass(frozen=True, slots=True)
class OptionDef:
    """What the registry says about one option number."""

    number: int
    name: str
    format: OptFormat
    min_length: int
    max_length: int
    repeatable: bool

    @property
    def critical(self) -> bool:
        return is_critical(self.number)

    @property
    def unsafe(self) -> bool:
        return is_unsafe(self.number)

    @property
    def no_cache_key(self) -> bool:
        return is_no_cache_key(self.number)

    def value_ok(self, value: bytes) -> bool:
        """True when `value` has an allowed length and format for this option."""
        if not self.min_length <= len(value) <= self.max_length:
            return False
        if self.format is OptFormat.STRING:
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                return False
        return True


_E, _O, _U, _S = OptFormat.EMPTY, OptFormat.OPAQUE, OptFormat.UINT, OptFormat.STRING

#: number -> definition; lengths and repeatability as in the defining RFC's table.
OPTIONS: dict[int, OptionDef] = {
    d.number: d
    for d in (
        OptionDef(Opt.IF_MATCH, "If-Match", _O, 0, 8, True),
        OptionDef(Opt.URI_HOST, "Uri-Host", _S, 1, 255, False),
        OptionDef(Opt.ETAG, "ETag", _O, 1, 8, True),
        OptionDef(Opt.IF_NONE_MATCH, "If-None-Match", _E, 0, 0, False),
        OptionDef(Opt.OBSERVE, "Observe", _U, 0, 3, False),
        OptionDef(Opt.URI_PORT, "Uri-Port", _U, 0, 2, False),
        OptionDef(Opt.LOCATION_PATH, "Location-Path", _S, 0, 255, True),
        OptionDef(Opt.OSCORE, "OSCORE", _O, 0, 255, False),
        OptionDef(Opt.URI_PATH, "Uri-Path", _S, 0, 255, True),
        OptionDef(Opt.CONTENT_FORMAT, "Content-Format", _U, 0, 2, False),
        OptionDef(Opt.MAX_AGE, "Max-Age", _U, 0, 4, False),
        OptionDef(Opt.URI_QUERY, "Uri-Query", _S, 0, 255, True),
        OptionDef(Opt.HOP_LIMIT, "Hop-Limit", _U, 1, 1, False),
        OptionDef(Opt.ACCEPT, "Accept", _U, 0, 2, False),
        OptionDef(Opt.Q_BLOCK1, "Q-Block1", _U, 0, 3, False),
        OptionDef(Opt.LOCATION_QUERY, "Location-Query", _S, 0, 255, True),
        OptionDef(Opt.EDHOC, "EDHOC", _E, 0, 0, False),
        OptionDef(Opt.BLOCK2, "Block2", _U, 0, 3, False),
        OptionDef(Opt.BLOCK1, "Block1", _U, 0, 3, False),
        OptionDef(Opt.SIZE2, "Size2", _U, 0, 4, False),
        OptionDef(Opt.Q_BLOCK2, "Q-Block2", _U, 0, 3, True),
        OptionDef(Opt.PROXY_URI, "Proxy-Uri", _S, 1, 1034, False),
        OptionDef(Opt.PROXY_SCHEME, "Proxy-Scheme", _S, 1, 255, False),
        OptionDef(Opt.SIZE1, "Size1", _U, 0, 4, False),
        OptionDef(Opt.ECHO, "Echo", _O, 1, 40, False),
        OptionDef(Opt.NO_RESPONSE, "No-Response", _U, 0, 1, False),
        OptionDef(Opt.REQUEST_TAG, "Request-Tag", _O, 0, 8, True),
    )
}


def option_def(number: int) -> OptionDef | None:
    """The registry entry for `number`, or None for an option we do not know."""
    return OPTIONS.get(number)


def option_name(number: int) -> str:
    """Human-readable name ("Uri-Path"); unknown numbers read "Option-<n>"."""
    d = OPTIONS.get(number)
    return d.name if d is not None else f"Option-{number}"


def invalid_options(options: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """Options that RFC 7252 says must be treated like unrecognized ones.

    That is: known options whose value has a length or format outside the
    registry's range (5.4.3), and every occurrence after the first of a known
    non-repeatable option (5.4.5). Unknown options are not listed here; use
    `unrecognized_critical` for those. The endpoint decides what to do (4.02
    Bad Option or Reset for critical ones, silently ignore elective ones).
    """
    bad: list[tuple[int, bytes]] = []
    seen: set[int] = set()
    for number, value in options:
        d = OPTIONS.get(number)
        if d is None:
            continue
        if not d.repeatable:
            if number in seen:
                bad.append((number, value))
                continue
            seen.add(number)
        if not d.value_ok(value):
            bad.append((number, value))
    return bad


def unrecognized_critical(
    options: list[tuple[int, bytes]], known: frozenset[int] | set[int] | None = None
) -> list[int]:
    """Critical option numbers in `options` that are not in `known`.

    `known` defaults to every option in the registry; an endpoint that does not
    implement, say, OSCORE should pass its own set so that it rejects it.
    """
    known_set = OPTIONS.keys() if known is None else known
    return [n for n, _ in options if n & 1 and n not in known_set]
