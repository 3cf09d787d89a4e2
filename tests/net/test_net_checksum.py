"""The Internet checksum (RFC 1071) against a plain reference and known vectors."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from iotbench.net.checksum import internet_checksum, ones_complement_sum

# RFC 1071 / Wikipedia example: an IPv4 header whose checksum field is 0xb861.
IPV4_HEADER = bytes.fromhex("45000073000040004011b861c0a80001c0a800c7")


def ref_sum(data: bytes, start: int = 0) -> int:
    """Straightforward RFC 1071 sum: big-endian 16-bit words, end-around carry."""
    if len(data) % 2:
        data += b"\x00"
    total = start
    for i in range(0, len(data), 2):
        total += (data[i] << 8) | data[i + 1]
        total = (total & 0xFFFF) + (total >> 16)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def ref_checksum(data: bytes, start: int = 0) -> int:
    return ~ref_sum(data, start) & 0xFFFF


def test_known_ipv4_header_vector():
    zeroed = IPV4_HEADER[:10] + b"\x00\x00" + IPV4_HEADER[12:]
    assert internet_checksum(zeroed) == 0xB861
    # A header with its correct checksum sums to all ones, so it checks to zero.
    assert ones_complement_sum(IPV4_HEADER) == 0xFFFF
    assert internet_checksum(IPV4_HEADER) == 0


def test_rfc1071_worked_example():
    # RFC 1071 section 3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2.
    data = bytes.fromhex("0001f203f4f5f6f7")
    assert ones_complement_sum(data) == 0xDDF2
    assert internet_checksum(data) == 0x220D


def test_small_and_odd_length_vectors():
    assert ones_complement_sum(b"") == 0
    assert internet_checksum(b"") == 0xFFFF
    # An odd trailing byte is the high byte of a zero-padded word.
    assert ones_complement_sum(b"\x01") == 0x0100
    assert ones_complement_sum(b"\x12\x34\x56") == 0x1234 + 0x5600
    assert internet_checksum(b"\x12\x34\x56") == ~(0x1234 + 0x5600) & 0xFFFF
    # End-around carry: 0xffff + 0x0001 = 0x10000 -> 0x0001.
    assert ones_complement_sum(b"\xff\xff\x00\x01") == 0x0001
    assert ones_complement_sum(b"\x80\x00\x80\x00") == 0x0001


def test_start_value_is_added_with_carry():
    assert ones_complement_sum(b"\x00\x01", 0xFFFF) == 0x0001
    assert ones_complement_sum(b"", 0x12345) == 0x2346  # unfolded start gets folded
    assert internet_checksum(b"\x12\x34", 0x0100) == ~0x1334 & 0xFFFF


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 0x3FFFF))
def test_matches_reference(data, start):
    assert ones_complement_sum(data, start) == ref_sum(data, start)
    assert internet_checksum(data, start) == ref_checksum(data, start)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200).map(lambda b: b + b"\x00" if len(b) % 2 else b))
def test_appending_the_checksum_verifies(data):
    # The defining property: data plus its checksum sums to 0xffff (checks to 0).
    ck = internet_checksum(data)
    assert ones_complement_sum(data + ck.to_bytes(2, "big")) == 0xFFFF
    assert internet_checksum(data + ck.to_bytes(2, "big")) == 0


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=100), st.binary(max_size=100))
def test_incremental_sum_over_even_split(a, b):
    # RFC 1071 2(C): the sum of parts equals the sum of the whole (even split point).
    if len(a) % 2:
        a += b"\x00"
    assert ones_complement_sum(b, ones_complement_sum(a)) == ones_complement_sum(a + b)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=2, max_size=2), max_size=50), st.randoms())
def test_word_order_does_not_matter(words, rnd):
    # RFC 1071 2(A): commutative and associative over 16-bit words.
    shuffled = list(words)
    rnd.shuffle(shuffled)
    assert ones_complement_sum(b"".join(words)) == ones_complement_sum(b"".join(shuffled))
