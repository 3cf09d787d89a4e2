"""Packets decoded once for every copy of the same bytes (proto/ndn/recent.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iotbench.proto.ndn.data import Data, make_data, received_data
from iotbench.proto.ndn.interest import Interest, make_interest, received_interest
from iotbench.proto.ndn.recent import RecentDecodes
from iotbench.proto.ndn.tlv import NdnDecodeError


class CountingDecode:
    def __init__(self) -> None:
        self.calls: list[bytes] = []

    def __call__(self, wire: bytes) -> tuple[bytes, int]:
        self.calls.append(wire)
        if wire.startswith(b"bad"):
            raise NdnDecodeError("bad bytes")
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
        with pytest.raises(NdnDecodeError):
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


def test_a_received_interest_is_the_decoding_of_its_bytes_shared_by_every_copy():
    made = make_interest("/recent/interest/1", nonce=7, lifetime_ms=1000)
    # The node that made it decodes its bytes next: the made object.
    assert received_interest(bytes(bytearray(made.wire))) is made
    other = make_interest("/recent/interest/2", nonce=8)
    copy = bytes(bytearray(other.wire))
    fresh = Interest(copy)
    assert received_interest(copy) is received_interest(bytes(bytearray(copy)))
    got = received_interest(copy)
    assert (got.wire, got.name, got.nonce, got.lifetime_ms) == (
        fresh.wire,
        fresh.name,
        fresh.nonce,
        fresh.lifetime_ms,
    )


def test_a_received_data_is_the_decoding_of_its_bytes_shared_by_every_copy():
    made = make_data("/recent/data/1", b"reading", freshness_period_ms=5)
    assert received_data(bytes(bytearray(made.wire))) is made
    fresh = Data(made.wire)
    got = received_data(made.wire)
    assert (got.name, got.content, got.meta_info, got.signature_info) == (
        fresh.name,
        fresh.content,
        fresh.meta_info,
        fresh.signature_info,
    )


def test_a_received_interest_whose_field_does_not_decode_fails_at_every_reading():
    good = make_interest("/recent/bad-nonce", nonce=1).wire
    # The Nonce's 4 bytes cut to 3 (the outer length shortened to match).
    at = good.index(b"\x0a\x04")
    wire = bytes([good[0], good[1] - 1]) + good[2:at] + b"\x0a\x03" + good[at + 2 : at + 5]
    wire += good[at + 6 :]
    for _ in range(2):
        interest = received_interest(wire)
        with pytest.raises(NdnDecodeError, match="Nonce of 3 bytes"):
            _ = interest.nonce


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
