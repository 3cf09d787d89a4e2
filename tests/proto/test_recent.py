"""Values decoded once for every copy of the same bytes (proto/recent.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iotbench.proto.coap.codec import CoapDecodeError, header_length
from iotbench.proto.recent import RecentDecodes


class CountingDecode:
    def __init__(self) -> None:
        self.calls: list[bytes] = []

    def __call__(self, wire: bytes) -> tuple[bytes, int]:
        self.calls.append(wire)
        if wire.startswith(b"bad"):
            raise ValueError("bad bytes")
        return (wire, len(self.calls))


def test_the_same_bytes_are_decoded_once_and_give_the_same_value():
    decode = CountingDecode()
    recent = RecentDecodes(decode, 4)
    first = recent.get(b"abc")
    # Equal bytes in another object: the value decoded before.
    assert recent.get(bytes(bytearray(b"abc"))) is first
    assert decode.calls == [b"abc"]
    assert recent.get(b"abd") != first
    assert len(recent) == 2


def test_bytes_that_do_not_decode_raise_every_time():
    decode = CountingDecode()
    recent = RecentDecodes(decode, 4)
    for _ in range(3):
        with pytest.raises(ValueError, match="bad bytes"):
            recent.get(b"bad packet")
    assert len(decode.calls) == 3 and len(recent) == 0


def test_the_oldest_is_forgotten_first_and_the_size_is_bounded():
    decode = CountingDecode()
    recent = RecentDecodes(decode, 3)
    for wire in (b"1", b"2", b"3", b"4"):
        recent.get(wire)
    assert len(recent) == 3
    recent.get(b"4")
    recent.get(b"2")
    assert len(decode.calls) == 4  # 2, 3 and 4 were still known
    recent.get(b"1")  # forgotten: decoded again
    assert decode.calls[-1] == b"1" and len(decode.calls) == 5
    assert len(recent) == 3
    with pytest.raises(ValueError, match="at least 1"):
        RecentDecodes(decode, 0)


def test_a_remembered_value_is_given_for_its_bytes_without_a_decode():
    decode = CountingDecode()
    recent = RecentDecodes(decode, 2)
    value = (b"made", 0)
    recent.remember(b"made", value)
    assert recent.get(b"made") is value
    assert decode.calls == []


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 5),
    steps=st.lists(st.tuples(st.booleans(), st.integers(0, 8)), max_size=60),
)
def test_what_is_kept_is_the_last_size_distinct_bytes_in_order_of_arrival(size, steps):
    # The model: a dict in insertion order, the oldest key dropped when full; a
    # key remembered again keeps its place.
    decode = CountingDecode()
    recent = RecentDecodes(decode, size)
    model: dict[bytes, object] = {}
    for remember, n in steps:
        wire = b"w%d" % n
        if remember:
            value = ("remembered", n)
            recent.remember(wire, value)
        elif wire in model:
            value = recent.get(wire)
            assert value is model[wire]
            continue
        else:
            value = recent.get(wire)
        if wire not in model and len(model) >= size:
            del model[next(iter(model))]
        model[wire] = value
        assert len(recent) == len(model)
    for wire, value in model.items():
        calls = len(decode.calls)
        assert recent.get(wire) is value and len(decode.calls) == calls


def test_a_dissectors_answers_are_its_own_and_asked_once_while_kept():
    # How the datagram driver keeps a dissector's answers (apps/driver.py).
    asked = []

    def dissect(payload: bytes) -> int:
        asked.append(payload)
        return len(payload)

    kept = RecentDecodes(dissect, 2)
    assert kept(b"ab") == 2 and kept(b"ab") == 2
    assert asked == [b"ab"]
    assert kept(b"abc") == 3
    assert kept(b"abcd") == 4  # the third: the oldest (b"ab") is forgotten
    assert kept(b"ab") == 2
    assert asked == [b"ab", b"abc", b"abcd", b"ab"]
    assert len(kept) == 2  # bounded however many payloads pass


def test_a_rejected_payload_raises_every_time_and_is_not_kept():
    kept = RecentDecodes(header_length, 8)
    for _ in range(2):
        with pytest.raises(CoapDecodeError):
            kept(b"\x00")
    assert len(kept) == 0
    assert kept(bytes([0x40, 0x01, 0x00, 0x01])) == 4
