"""TLV primitives against the packet specification's own numbers."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotbench.proto.ndn.tlv import (
    NdnDecodeError,
    decode_nni,
    encode_nni,
    encode_tl,
    encode_tlv,
    encode_var_number,
    is_critical,
    read_tl,
    read_var_number,
    scan_elements,
    uint_be,
)

# (number, shortest VAR-NUMBER) at every boundary of the four forms.
VAR_NUMBERS = [
    (0, "00"),
    (1, "01"),
    (252, "fc"),
    (253, "fd00fd"),
    (1024, "fd0400"),  # the spec's own example
    (65535, "fdffff"),
    (65536, "fe00010000"),
    (0xFFFFFFFF, "feffffffff"),
    (0x100000000, "ff0000000100000000"),
    (2**64 - 1, "ffffffffffffffffff"),
]


@pytest.mark.parametrize(("n", "hexed"), VAR_NUMBERS)
def test_var_number_boundaries(n, hexed):
    wire = bytes.fromhex(hexed)
    assert encode_var_number(n) == wire
    assert read_var_number(wire, 0, len(wire)) == (n, len(wire))


@pytest.mark.parametrize(
    "hexed",
    [
        "fd00fc",  # 252 in 3 bytes
        "fd0000",
        "fe0000ffff",  # 65535 in 5 bytes
        "fe00000400",  # the spec's "not %xFE00000400" for 1024
        "ff00000000ffffffff",  # 2**32-1 in 9 bytes
    ],
)
def test_var_number_must_be_shortest(hexed):
    wire = bytes.fromhex(hexed)
    with pytest.raises(NdnDecodeError, match="shortest"):
        read_var_number(wire, 0, len(wire))


@pytest.mark.parametrize("hexed", ["", "fd", "fd01", "fe000100", "ff00000001000000"])
def test_var_number_truncated(hexed):
    wire = bytes.fromhex(hexed)
    with pytest.raises(NdnDecodeError, match="truncated"):
        read_var_number(wire, 0, len(wire))


def test_var_number_out_of_range_on_encode():
    with pytest.raises(ValueError):
        encode_var_number(-1)
    with pytest.raises(ValueError):
        encode_var_number(2**64)


def test_tl_encodes_both_forms_and_refuses_negative_numbers():
    # One-byte type and length come from a table (octets.ONE_BYTE): a negative
    # number must not index it from the end.
    assert encode_tl(7, 252).hex() == "07fc"
    assert encode_tl(7, 253).hex() == "07fd00fd"
    assert encode_tlv(0x08, b"ab").hex() == "08026162"
    assert encode_tlv(253, b"").hex() == "fd00fd00"
    for t, length in ((-1, 0), (0, -1)):
        with pytest.raises(ValueError):
            encode_tl(t, length)
    with pytest.raises(ValueError):
        encode_tlv(-1, b"")


# The spec's NonNegativeInteger examples: 0 => TT0100 ... 65536 => TT0400010000.
NNI = [(0, "00"), (1, "01"), (255, "ff"), (256, "0100"), (65535, "ffff"), (65536, "00010000")]


@pytest.mark.parametrize(("n", "value"), NNI)
def test_nni_spec_examples(n, value):
    assert encode_nni(n).hex() == value
    assert encode_tlv(0x19, encode_nni(n)).hex() == f"19{len(value) // 2:02x}{value}"
    assert decode_nni(bytes.fromhex(value)) == n


def test_nni_eight_bytes_and_lengths():
    assert encode_nni(2**32) == bytes.fromhex("0000000100000000")
    assert decode_nni(bytes.fromhex("0000000000000001")) == 1  # non-minimal lengths are fine
    for bad in ("", "000000", "0000000000", "000000000000000000"):
        with pytest.raises(NdnDecodeError):
            decode_nni(bytes.fromhex(bad))


@given(st.binary(max_size=12), st.data())
def test_uint_be_reads_as_int_from_bytes(buf, data):
    # Every slice, the 64-bit values beyond a machine word's small ints included.
    start = data.draw(st.integers(0, len(buf)))
    end = data.draw(st.integers(start, len(buf)))
    assert uint_be(buf, start, end) == int.from_bytes(buf[start:end], "big")
    assert uint_be(b"\xff" * 8, 0, 8) == 2**64 - 1


def test_read_tl_checks_type_and_length():
    assert read_tl(bytes.fromhex("0703080141"), 0, 5) == (7, 2, 5)
    assert read_tl(bytes.fromhex("fd0320" + "00"), 0, 4) == (800, 4, 4)
    with pytest.raises(NdnDecodeError, match="reserved"):
        read_tl(b"\x00\x00", 0, 2)
    with pytest.raises(NdnDecodeError, match="claims"):
        read_tl(b"\x07\x05abc", 0, 5)
    # TLV-TYPE may not use the 9-byte form (it is at most 2**32-1).
    with pytest.raises(NdnDecodeError, match="outside"):
        read_tl(bytes.fromhex("ff000000010000000000"), 0, 10)
    # A huge claimed length is rejected without allocating anything.
    with pytest.raises(NdnDecodeError, match="claims"):
        read_tl(bytes.fromhex("06ffffffffffffffffff"), 0, 10)


def test_critical_rule():
    assert all(is_critical(t) for t in range(32))  # grandfathered
    assert is_critical(33) and is_critical(0xFD) and is_critical(801)
    assert not is_critical(32) and not is_critical(128) and not is_critical(800)


ORDER = {10: 0, 20: 1, 30: 2}


def test_scan_elements_evolvability():
    ok = bytes.fromhex("0a00" + "8000" + "1400" + "1e00")  # 128 is unknown, non-critical
    found = scan_elements(ok, 0, len(ok), ORDER, "test")
    assert sorted(found) == [10, 20, 30]
    for bad, why in [
        ("0a00" + "8100", "unrecognized"),  # 129: unknown, odd
        ("0a00" + "0500", "unrecognized"),  # 5: unknown, grandfathered critical
        ("1400" + "0a00", "out-of-order"),  # 10 after 20 (critical)
        ("0a00" + "0a00", "out-of-order"),  # a repeat is out of order
    ]:
        wire = bytes.fromhex(bad)
        with pytest.raises(NdnDecodeError, match=why):
            scan_elements(wire, 0, len(wire), ORDER, "test")


def test_scan_elements_skips_non_critical_out_of_order():
    order = {40: 0, 42: 1}
    wire = bytes.fromhex("2a00" + "2800")  # 42 then 40: 40 is even and > 31: skipped
    assert list(scan_elements(wire, 0, len(wire), order, "t")) == [42]
