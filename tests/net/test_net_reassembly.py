"""Fragment reassembly: order, interleaving, timeouts, limits, bad fragments."""

from __future__ import annotations

import random

import pytest

from iotbench.net.reassembly import Reassembler

KEY_A = (b"\x0a\x00\x00\x01", b"\x0a\x00\x00\x02", 17, 1)
KEY_B = (b"\x0a\x00\x00\x01", b"\x0a\x00\x00\x02", 17, 2)


def pieces(payload: bytes, size: int) -> list[tuple[int, bool, bytes]]:
    """(offset, more, data) fragments of `size` bytes (a multiple of 8)."""
    out = []
    for start in range(0, len(payload), size):
        out.append((start, start + size < len(payload), payload[start : start + size]))
    return out


PAYLOAD = bytes(range(256)) + bytes(range(44))  # 300 bytes
FRAGS = pieces(PAYLOAD, 64)  # 5 fragments: 4 x 64 + 44


def held(r: Reassembler) -> int:
    return sum(len(d) for p in r._partials.values() for d in p.parts.values())


def test_in_order_completes_on_the_last_fragment_only():
    r = Reassembler()
    results = [r.add(0.0, KEY_A, off, more, data) for off, more, data in FRAGS]
    assert results[:-1] == [None] * 4
    assert results[-1] == PAYLOAD
    assert len(r) == 0 and r._held == 0


@pytest.mark.parametrize("seed", range(5))
def test_out_of_order(seed):
    order = list(FRAGS)
    random.Random(seed).shuffle(order)
    r = Reassembler()
    results = [r.add(1.0, KEY_A, off, more, data) for off, more, data in order]
    assert [x for x in results if x is not None] == [PAYLOAD]
    assert results[-1] == PAYLOAD  # completes exactly when the last missing piece arrives
    assert len(r) == 0 and r._held == 0


def test_last_fragment_first_then_rest_reversed():
    r = Reassembler()
    results = [r.add(0.0, KEY_A, off, more, data) for off, more, data in reversed(FRAGS)]
    assert results == [None] * 4 + [PAYLOAD]


def test_interleaved_datagrams_are_kept_apart():
    other = bytes(reversed(PAYLOAD))[:200]
    frags_b = pieces(other, 48)
    r = Reassembler()
    got = []
    for i in range(max(len(FRAGS), len(frags_b))):
        for key, frags in ((KEY_A, FRAGS), (KEY_B, frags_b)):
            if i < len(frags):
                off, more, data = frags[i]
                whole = r.add(0.0, key, off, more, data)
                if whole is not None:
                    got.append((key, whole))
        assert len(r) <= 2
    assert sorted(got) == sorted([(KEY_A, PAYLOAD), (KEY_B, other)])
    assert len(r) == 0


def test_same_ident_different_protocol_or_address_is_a_different_datagram():
    r = Reassembler()
    first, last = FRAGS[0], FRAGS[-1]
    r.add(0.0, KEY_A, *first)
    other_proto = KEY_A[:2] + (6,) + KEY_A[3:]
    assert r.add(0.0, other_proto, *last) is None
    assert len(r) == 2


def test_duplicates_do_not_double_count_bytes():
    r = Reassembler()
    for _ in range(3):
        assert r.add(0.0, KEY_A, *FRAGS[0]) is None
    assert r._held == 64 == held(r)
    for frag in FRAGS[1:]:
        result = r.add(0.0, KEY_A, *frag)
    assert result == PAYLOAD
    assert r._held == 0


def test_overlapping_fragments_reassemble_the_union():
    data = bytes(range(40))
    r = Reassembler()
    assert r.add(0.0, KEY_A, 8, True, data[8:24]) is None
    assert r.add(0.0, KEY_A, 32, False, data[32:40]) is None
    assert r.add(0.0, KEY_A, 16, True, data[16:32]) is None  # overlaps the first
    assert r.add(0.0, KEY_A, 0, True, data[0:16]) == data


def test_default_timeout_is_30_seconds():
    assert Reassembler().timeout_s == 30.0


def test_datagram_completed_just_before_the_timeout():
    r = Reassembler()
    for frag in FRAGS[:-1]:
        r.add(0.0, KEY_A, *frag)
    assert r.add(29.999, KEY_A, *FRAGS[-1]) == PAYLOAD
    assert r.timed_out == 0


def test_datagram_expires_at_the_timeout():
    r = Reassembler()
    for frag in FRAGS[:-1]:
        r.add(0.0, KEY_A, *frag)
    assert r._held == 256
    # 30 s after the first fragment the partial is discarded; the late last fragment
    # starts a new (incomplete) datagram.
    assert r.add(30.0, KEY_A, *FRAGS[-1]) is None
    assert r.timed_out == 1
    assert len(r) == 1 and r._held == 44 == held(r)
    # The new partial has its own clock: it is gone 30 s later, on the next add.
    r.add(59.9, KEY_B, *FRAGS[0])
    assert r.timed_out == 1
    r.add(60.0, KEY_B, *FRAGS[1])
    assert r.timed_out == 2
    assert len(r) == 1  # only KEY_B remains


def test_timeout_counts_from_the_first_fragment_not_the_latest():
    r = Reassembler(timeout_s=10.0)
    r.add(0.0, KEY_A, *FRAGS[0])
    r.add(9.0, KEY_A, *FRAGS[1])
    assert r.add(10.0, KEY_A, *FRAGS[2]) is None
    assert r.timed_out == 1


def test_datagram_count_limit():
    r = Reassembler(max_datagrams=3)
    keys = [KEY_A[:3] + (i,) for i in range(5)]
    for key in keys[:3]:
        assert r.add(0.0, key, *FRAGS[0]) is None
    assert r.add(0.0, keys[3], *FRAGS[0]) is None
    assert r.overflowed == 1
    assert len(r) == 3
    # Datagrams already being reassembled still complete.
    for frag in FRAGS[1:]:
        result = r.add(0.0, keys[0], *frag)
    assert result == PAYLOAD
    assert len(r) == 2
    # ... which frees a slot for a new one.
    assert r.add(0.0, keys[4], *FRAGS[0]) is None
    assert len(r) == 3 and r.overflowed == 1


def test_byte_limit_drops_the_datagram_that_would_exceed_it():
    r = Reassembler(max_bytes=150)
    r.add(0.0, KEY_A, *FRAGS[0])  # 64
    r.add(0.0, KEY_B, *FRAGS[0])  # 128
    assert r._held == 128
    assert r.add(0.0, KEY_B, *FRAGS[1]) is None  # 192 > 150
    assert r.overflowed == 1
    assert len(r) == 1 and r._held == 64 == held(r)  # KEY_B's partial is dropped whole
    # A single datagram larger than the buffer can never be reassembled.
    for frag in FRAGS[1:]:
        assert r.add(0.0, KEY_A, *frag) is None
    assert r._held <= 150


def test_bytes_are_released_on_completion_and_expiry():
    r = Reassembler(max_bytes=300)
    for frag in FRAGS:
        r.add(0.0, KEY_A, *frag)
    assert r._held == 0
    for frag in FRAGS:  # the whole 300-byte buffer can be used again
        result = r.add(1.0, KEY_B, *frag)
    assert result == PAYLOAD
    assert r.overflowed == 0


@pytest.mark.parametrize(
    "offset,more,data",
    [
        (0, True, b""),  # empty non-last fragment
        (0, True, bytes(12)),  # non-last fragment not a multiple of 8 bytes
        (65528, False, bytes(8)),  # ends beyond 65535
    ],
)
def test_invalid_fragments_are_counted_and_ignored(offset, more, data):
    r = Reassembler()
    assert r.add(0.0, KEY_A, offset, more, data) is None
    assert r.invalid == 1
    assert len(r) == 0 and r._held == 0


def test_conflicting_last_fragments_drop_the_datagram():
    r = Reassembler()
    r.add(0.0, KEY_A, *FRAGS[0])
    r.add(0.0, KEY_A, 256, False, PAYLOAD[256:])
    assert r.add(0.0, KEY_A, 192, False, PAYLOAD[192:256]) is None  # a second, different end
    assert r.invalid == 1
    assert len(r) == 0 and r._held == 0


def test_single_unfragmented_piece_is_returned_at_once():
    r = Reassembler()
    assert r.add(0.0, KEY_A, 0, False, b"abc") == b"abc"
    assert len(r) == 0
