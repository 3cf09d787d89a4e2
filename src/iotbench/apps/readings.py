"""S4's readings: a 32-byte JSON object whose id names the producer and the reading.

The id is the producer's index and the reading's number (its counter), so the
gateway knows which item arrived whatever carried it.
"""

from __future__ import annotations

import json
import re
from typing import Final

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


# A reading exactly as reading() writes it: read without a JSON parser (one per
# reading at each end of a run); anything else goes through json.loads.
_READING: Final = re.compile(rb'\{"id":"0x([0-9a-f]{10})","val":-?[0-9]+\}\Z')


def reading(producer: int, counter: int, value: int) -> bytes:
    """S4's reading: a 32-byte JSON object with a unique id and a value, as
    `json.dumps({"id": ..., "val": value}, separators=(",", ":"))` writes it."""
    return b'{"id":"0x%010x","val":%d}' % (reading_id(producer, counter), value)


def read_id(payload: bytes) -> int | None:
    """The reading id in a reading's payload; None if it is not one."""
    match = _READING.match(payload)
    if match is not None:
        return int(match.group(1), 16)
    try:
        return int(json.loads(payload)["id"], 16)
    except (ValueError, KeyError, TypeError):
        return None


def find_reading_id(data: bytes) -> int | None:
    """The id of a reading somewhere in `data` (a frame carrying one); None if none."""
    if len(data) < _ID_BYTES:
        # Too short to hold one (an ACK): this runs for every frame a link-stress
        # count sees, and bytes.find's call alone costs about a thousand
        # instructions (its arguments parsed from a tuple).
        return None
    at = data.find(_ID_PREFIX)
    if at < 0 or at + _ID_BYTES > len(data):
        return None  # none, or cut short (a fragment ends within its digits)
    start = at + len(_ID_PREFIX)
    try:
        return int(data[start : start + _ID_DIGITS], 16)
    except ValueError:
        return None


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
