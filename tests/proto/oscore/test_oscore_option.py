"""The OSCORE option value (RFC 8613 6.1), its 6.3 examples, and the CBOR
items OSCORE serialises (checked against cbor2)."""

from __future__ import annotations

import cbor2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotbench.proto.errors import DecodeError
from iotbench.proto.oscore import cbor
from iotbench.proto.oscore.option import OscoreOption, OscoreOptionError

EXAMPLES = [  # RFC 8613 6.3: (kid, Partial IV, kid context) -> option value
    (b"\x25", b"\x05", None, "090525"),
    (b"", b"\x00", None, "0900"),
    (b"", b"\x05", b"\x44\x61\x6c\x65\x6b", "19050544616c656b"),
    (None, None, None, ""),
    (None, b"\x07", None, "0107"),
]


@pytest.mark.parametrize("kid, piv, kid_context, value", EXAMPLES)
def test_rfc_examples(kid, piv, kid_context, value):
    option = OscoreOption(piv, kid, kid_context)
    assert option.encode().hex() == value
    assert OscoreOption.decode(bytes.fromhex(value)) == option


@pytest.mark.parametrize(
    "value, why",
    [
        ("20", "reserved flag bits"),
        ("80", "reserved flag bits"),
        ("06000000000000", "length 6 is reserved"),
        ("07", "length 7 is reserved"),
        ("0301", "ends inside the Partial IV"),
        ("11", "ends before the kid context length"),
        ("1003aabb", "ends inside the kid context"),
        ("0105ff", "bytes after the last field"),
    ],
)
def test_malformed_values_raise_the_typed_error(value, why):
    with pytest.raises(OscoreOptionError, match=why.split()[0]):
        OscoreOption.decode(bytes.fromhex(value))
    assert issubclass(OscoreOptionError, DecodeError)


def test_a_lone_zero_flag_byte_reads_as_empty():
    assert OscoreOption.decode(b"\x00") == OscoreOption()


def test_fields_that_cannot_be_encoded():
    for bad in (OscoreOption(b""), OscoreOption(b"123456"), OscoreOption(kid_context=bytes(256))):
        with pytest.raises(ValueError):
            bad.encode()


fields = st.builds(
    OscoreOption,
    st.none() | st.binary(min_size=1, max_size=5),
    st.none() | st.binary(max_size=10),
    st.none() | st.binary(max_size=255),
)


@given(fields)
def test_every_encodable_header_round_trips(option):
    value = option.encode()
    assert OscoreOption.decode(value) == option
    assert OscoreOption.decode(value).encode() == value


# Arbitrary bytes: tests/test_codec_agreement.py (check_oscore_option).


cbor_items = st.recursive(
    st.none() | st.integers(0, 2**64 - 1) | st.binary(max_size=300) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=30),
    max_leaves=40,
)


@given(cbor_items)
def test_cbor_matches_cbor2(item):
    assert cbor.dumps(item) == cbor2.dumps(item)


def test_cbor_refuses_what_oscore_never_encodes():
    for bad in (-1, True, 1.5, {1: 2}):
        with pytest.raises((TypeError, ValueError)):
            cbor.dumps(bad)
