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
