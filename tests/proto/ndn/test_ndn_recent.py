"""NDN packets decoded once for every copy of the same bytes (proto/recent.py)."""

from __future__ import annotations

import pytest

from iotbench.proto.ndn.data import Data, make_data, received_data
from iotbench.proto.ndn.interest import Interest, make_interest, received_interest
from iotbench.proto.ndn.tlv import NdnDecodeError


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
