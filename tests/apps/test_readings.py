"""S4's readings: the JSON object every producer sends, and its id."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from iotbench.apps.readings import (
    READING_BYTES,
    find_reading_id,
    read_id,
    reading,
    reading_counter,
    reading_id,
    reading_producer,
)


@given(st.integers(0, 255), st.integers(0, 2**24 - 1), st.integers(1000, 9999))
def test_a_reading_is_the_json_object_and_its_id_reads_back(producer, counter, value):
    payload = reading(producer, counter, value)
    rid = reading_id(producer, counter)
    assert (
        payload == json.dumps({"id": f"0x{rid:010x}", "val": value}, separators=(",", ":")).encode()
    )
    assert len(payload) == READING_BYTES
    assert read_id(payload) == find_reading_id(b"frame" + payload) == rid
    assert (reading_producer(rid), reading_counter(rid)) == (producer, counter)


def test_other_json_is_read_by_the_json_parser_and_anything_else_has_no_id():
    assert read_id(b'{"val": 5, "id": "0x10"}') == 16  # not as reading() writes it
    assert read_id(b'{"id":"0x0000000001","val":12') is None  # cut short
    assert read_id(b'{"id":"0x0000000001","val":12}x') is None
    assert read_id(b"\xff\x00") is None
    assert read_id(b'{"id": 3}') is None


def _read_by_definition(payload: bytes) -> int | None:
    """read_id's definition: a reading exactly as reading() writes it is matched by
    this expression; anything else is read as JSON."""
    match = re.match(rb'\{"id":"0x([0-9a-f]{10})","val":-?[0-9]+\}\Z', payload)
    if match is not None:
        return int(match.group(1), 16)
    try:
        return int(json.loads(payload)["id"], 16)
    except (ValueError, KeyError, TypeError):
        return None


# Readings and what is nearly one: a piece left out, doubled or swapped for another.
_READING_PIECES = st.sampled_from(
    [b'{"id":"0x', b"0123456789", b"abcdef", b"ABCDEF", b'","val":', b"-", b"42", b"}", b"\n", b" "]
)


@given(
    st.one_of(
        st.builds(reading, st.integers(0, 255), st.integers(0, 2**24 - 1), st.integers(-99, 99999)),
        st.lists(_READING_PIECES, max_size=8).map(b"".join),
    )
)
def test_a_payload_reads_as_the_definition_says(payload):
    assert read_id(payload) == _read_by_definition(payload)


def _find_by_whole_prefix(data: bytes) -> int | None:
    """find_reading_id's definition: the ten hex digits after the first place the
    whole prefix begins; None if there are fewer, or none."""
    at = data.find(b'{"id":"0x')
    digits = data[at + 9 : at + 19]
    if at < 0 or len(digits) < 10:
        return None
    try:
        return int(digits, 16)
    except ValueError:
        return None


# Frames made of the prefix's pieces, braces, hex digits and other bytes: decoy
# openings before a reading, prefixes cut short, two readings, none; and what
# int(..., 16) reads besides plain digits (a sign, spaces, underscores, 0x).
_PIECES = st.sampled_from(
    [
        b"{",
        b'{"',
        b'{"id',
        b'{"id":"0x',
        b'{"id":"0',
        b"0123456789",
        b"abcdef",
        b"ABCDEF",
        b"0x",
        b"+",
        b"-",
        b"_",
        b" ",
        b"\x00\xff",
        b"}",
    ]
)


@given(st.lists(st.one_of(_PIECES, st.binary(max_size=8)), max_size=12).map(b"".join))
def test_the_id_is_found_where_the_whole_prefix_first_begins(data):
    assert find_reading_id(data) == _find_by_whole_prefix(data)


_ID_BYTE = st.sampled_from(list(b"0123456789abcdefABCDEFgxX+-_ \x00\xff"))


@given(st.lists(_ID_BYTE, min_size=10, max_size=10).map(bytes), st.binary(max_size=4))
def test_the_ten_bytes_after_the_prefix_read_as_int_reads_them_in_hex(digits, after):
    try:
        expected: int | None = int(digits, 16)
    except ValueError:
        expected = None
    assert find_reading_id(b'{"id":"0x' + digits + after) == expected


def test_an_id_cut_short_is_none_and_a_whole_one_is_found_however_short_the_frame():
    """A fragment may end within a reading's digits: what it holds is no id (read
    as one, it could name another item)."""
    rid = reading_id(3, 7)
    whole = reading(3, 7, 1234)[:19]  # the prefix and the ten digits, no more
    assert find_reading_id(whole) == find_reading_id(b"header" * 9 + whole) == rid
    assert find_reading_id(whole[:-1]) is None
    assert find_reading_id(b"header" * 9 + whole[:-1]) is None
    assert find_reading_id(b'{"id":"0xnothex!!!' + reading(3, 7, 1234)) is None  # the first
