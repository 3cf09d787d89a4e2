"""S4's readings: the JSON object every producer sends, and its id."""

from __future__ import annotations

import json

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
# openings before a reading, prefixes cut short, two readings, none.
_PIECES = st.sampled_from(
    [b"{", b'{"', b'{"id', b'{"id":"0x', b'{"id":"0', b"0123456789", b"abcdef", b"\x00\xff", b"}"]
)


@given(st.lists(st.one_of(_PIECES, st.binary(max_size=8)), max_size=12).map(b"".join))
def test_the_id_is_found_where_the_whole_prefix_first_begins(data):
    assert find_reading_id(data) == _find_by_whole_prefix(data)


def test_an_id_cut_short_is_none_and_a_whole_one_is_found_however_short_the_frame():
    """A fragment may end within a reading's digits: what it holds is no id (read
    as one, it could name another item)."""
    rid = reading_id(3, 7)
    whole = reading(3, 7, 1234)[:19]  # the prefix and the ten digits, no more
    assert find_reading_id(whole) == find_reading_id(b"header" * 9 + whole) == rid
    assert find_reading_id(whole[:-1]) is None
    assert find_reading_id(b"header" * 9 + whole[:-1]) is None
    assert find_reading_id(b'{"id":"0xnothex!!!' + reading(3, 7, 1234)) is None  # the first
