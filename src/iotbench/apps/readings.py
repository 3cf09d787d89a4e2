"""S4's readings: a 32-byte JSON object whose id names the producer and the reading.

The id is the producer's index and the reading's number (its counter), so the
gateway knows which item arrived whatever carried it.
"""

from __future__ import annotations

import json
from typing import Final

from mypy_extensions import i64

from iotbench.net import ieee802154 as mac
from iotbench.proto.ndn.types import TT

_COUNTER_BITS: Final = 24
_COUNTER_MASK: Final = (1 << _COUNTER_BITS) - 1
#: The counter of a reading that is no item: a resource's state before its first.
IDLE_COUNTER: Final = _COUNTER_MASK
READING_BYTES: Final = 32  # S4's JSON object (with a four-digit value)
_ID_PREFIX: Final = b'{"id":"0x'  # how every reading begins; ten hex digits follow
_ID_DIGITS: Final = 10
_ID_BYTES: Final = len(_ID_PREFIX) + _ID_DIGITS


def reading_id(producer: int, counter: int) -> int:
    return (producer << _COUNTER_BITS) | counter


def reading_counter(rid: int) -> int:
    """The reading's number at its producer."""
    return rid & _COUNTER_MASK


def reading_producer(rid: int) -> int:
    """The index of the producer that took the reading."""
    return rid >> _COUNTER_BITS


def reading(producer: int, counter: int, value: int) -> bytes:
    """S4's reading: a 32-byte JSON object with a unique id and a value, as
    `json.dumps({"id": ..., "val": value}, separators=(",", ":"))` writes it."""
    return b'{"id":"0x%010x","val":%d}' % (reading_id(producer, counter), value)


def read_id(payload: bytes) -> int | None:
    """The reading id in a reading's payload; None if it is not one."""
    rid = _written_id(payload)
    if rid is not None:
        return rid
    try:
        return int(json.loads(payload)["id"], 16)
    except (ValueError, KeyError, TypeError):
        return None


_VAL_KEY: Final = b'","val":'
_VAL_AT: Final = _ID_BYTES + len(_VAL_KEY)


def _written_id(payload: bytes) -> int | None:
    """The id of a reading exactly as reading() writes it,
    `{"id":"0x<ten digits 0-9a-f>","val":<-?[0-9]+>}` and nothing after; None for
    anything else (which goes to the JSON parser). Read byte by byte: one per
    reading at each end of a run, where a regular expression's match cost about
    5,000 instructions."""
    n = len(payload)
    if n < _VAL_AT + 2 or not payload.startswith(_ID_PREFIX) or payload[n - 1] != 0x7D:  # }
        return None
    if payload[_ID_BYTES:_VAL_AT] != _VAL_KEY:
        return None
    k = _VAL_AT + 1 if payload[_VAL_AT] == 0x2D else _VAL_AT  # -
    if k >= n - 1:
        return None  # no digits
    for i in range(k, n - 1):
        if not 0x30 <= payload[i] <= 0x39:
            return None
    value = 0
    for i in range(len(_ID_PREFIX), _ID_BYTES):
        c = payload[i]
        if 0x30 <= c <= 0x39:  # 0-9
            value = 16 * value + c - 0x30
        elif 0x61 <= c <= 0x66:  # a-f
            value = 16 * value + c - 0x57
        else:
            return None
    return value


def find_reading_id(data: bytes) -> int | None:
    """The id of a reading somewhere in `data` (a frame carrying one); None if none."""
    if len(data) < _ID_BYTES:
        # Too short to hold one (an ACK): this runs for every frame a link-stress
        # count sees.
        return None
    # partition, not find: it takes its argument as it is, where find's are parsed
    # from a tuple (about 1,000 instructions a call, compiled, against 400; most
    # frames hold no reading). Both split at the prefix's first occurrence. Not
    # `in` first either: bytes' `in` tries its argument as an integer before it
    # searches, and that raises and clears a TypeError (about 1,850 instructions).
    _, prefix, rest = data.partition(_ID_PREFIX)
    if not prefix or len(rest) < _ID_DIGITS:
        return None  # none, or cut short (a fragment ends within its digits)
    return _hex_id(rest)


def _hex_id(rest: bytes) -> int | None:
    """The number that `rest`'s first ten bytes write in hex, as int(..., 16) reads
    them; None if it reads none. Ten plain hex digits (every reading's) are read
    here, anything else (a sign, spaces, underscores, 0x) by int()."""
    # Machine integers: ten digits are 40 bits.
    value: i64 = 0
    k: i64
    for k in range(_ID_DIGITS):
        c: i64 = rest[k]
        if 0x30 <= c <= 0x39:  # 0-9
            value = 16 * value + c - 0x30
        elif 0x61 <= c <= 0x66:  # a-f
            value = 16 * value + c - 0x57
        elif 0x41 <= c <= 0x46:  # A-F
            value = 16 * value + c - 0x37
        else:
            try:
                return int(rest[:_ID_DIGITS], 16)
            except ValueError:
                return None
    return value


_NDN_DATA: Final = bytes((TT.DATA,))


def notification_id(frame: bytes) -> int | None:
    """The reading a frame carries up to the gateway in NDN's I-Not (its link
    stress): the one in an I-Not Interest, not the one its acknowledgement's name
    repeats (a Data). Here, compiled, because it runs for every frame sent."""
    rid = find_reading_id(frame)
    if rid is None:
        return None
    try:
        payload = mac.payload_of(frame)
    except mac.MacDecodeError:
        return None
    if payload is not None and payload[:1] == _NDN_DATA:
        return None
    return rid
