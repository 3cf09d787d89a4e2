"""HoPP's SOL, PAM and NAM: hand-written vectors from the reference layouts, round
trips, and malformed input that only ever raises HoppDecodeError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotbench.proto.errors import DecodeError
from iotbench.proto.ndn.hopp import (
    HoppDecodeError,
    Nam,
    Pam,
    Sol,
    decode,
    is_hopp,
    nam_text,
)
from iotbench.proto.ndn.name import Component, Name

# COMPAS's packed structs, little-endian: dispatch 80 08, then the message.
VECTORS = [
    (Sol(), "80 08 c2 00"),
    (Sol(reset_trickle=True), "80 08 c2 01"),
    (Pam(rank=1, prefix="/gw"), "80 08 c0 00 00 0100 0300 2f6777"),
    (Pam(rank=0x0203, prefix="/p", floating=True, freshness=7), "80 08 c0 01 07 0302 0200 2f70"),
    (Nam(("/p/1",)), "80 08 c1 07 00 0400 2f702f31"),
    (Nam(("/a", "/bc")), "80 08 c1 0b 00 0200 2f61 00 0300 2f6263"),
]


@pytest.mark.parametrize(("message", "hex_"), VECTORS)
def test_messages_have_the_reference_layout(message, hex_):
    wire = bytes.fromhex(hex_.replace(" ", ""))
    assert message.encode() == wire
    assert decode(wire) == message
    assert is_hopp(wire)


def test_an_ndn_packet_or_fragment_is_not_a_hopp_message():
    assert not is_hopp(b"\x05\x10")  # an Interest
    assert not is_hopp(b"\xa0\x00\x01")  # an S5 first fragment (M set)


@pytest.mark.parametrize(
    ("wire", "error"),
    [
        ("80 08 c2", "not a HoPP message"),
        ("80 08 c2 00 00", "a SOL is 4 bytes"),
        ("80 08 c2 02", "a SOL with undefined flags 0x02"),
        ("80 08 c0 80 00 0100 0000", "a PAM with undefined flags 0x80"),
        ("80 08 c9 00", "unknown HoPP message type 0xc9"),
        ("80 08 c0 00 00 01", "a PAM is cut short"),
        ("80 08 c0 00 00 0100 2100" + "41" * 33, "a PAM prefix of 33 bytes"),
        ("80 08 c0 00 00 0100 0300 2f67", "a PAM with a 3-byte prefix is 12 bytes"),
        ("80 08 c1 06 00 0400 2f70", "a NAM whose TLVs take 6 bytes"),
        ("80 08 c1 02 00 04", "a NAM TLV is cut short"),
        ("80 08 c1 04 00 0400 2f", "runs past the message"),
        ("80 08 c1 04 01 0100 41", "a NAM without a name"),
        ("80 08 c1 04 00 0100 ff", "a NAM name that is not ASCII"),
    ],
)
def test_malformed_messages_are_refused_with_the_reason(wire, error):
    with pytest.raises(HoppDecodeError, match=error):
        decode(bytes.fromhex(wire.replace(" ", "")))


def test_the_encoder_refuses_what_the_decoder_would():
    with pytest.raises(ValueError, match="at most 32 bytes"):
        Pam(1, "/" + "x" * 32)
    with pytest.raises(ValueError, match="at most 64 bytes"):
        Nam(("/" + "x" * 64,))
    with pytest.raises(ValueError, match="at least one name"):
        Nam(())
    with pytest.raises(ValueError, match="out of range"):
        Pam(0x10000, "/p")


ascii_text = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E))


@given(
    st.one_of(
        st.builds(Sol, st.booleans()),
        st.builds(
            Pam,
            st.integers(0, 0xFFFF),
            ascii_text.filter(lambda s: len(s) <= 32),
            st.booleans(),
            st.integers(0, 255),
        ),
        st.builds(
            Nam,
            st.lists(ascii_text.filter(lambda s: len(s) <= 64), min_size=1, max_size=3).map(tuple),
        ),
    )
)
def test_round_trip(message):
    assert decode(message.encode()) == message


def _decodes_or_refuses(data: bytes) -> None:
    """A DecodeError, or a message that re-encodes to bytes decoding to it again."""
    try:
        message = decode(data)
    except DecodeError:
        return
    assert decode(message.encode()) == message


@given(st.binary(max_size=120))
def test_random_bytes_raise_only_decode_errors(data):
    _decodes_or_refuses(data)


@given(st.sampled_from([bytes.fromhex(h.replace(" ", "")) for _, h in VECTORS]), st.data())
def test_mutated_messages_raise_only_decode_errors(wire, data):
    mutated = bytearray(wire)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(mutated) - 1))
        mutated[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(mutated)))
    _decodes_or_refuses(bytes(mutated[:cut]))


def test_a_nam_names_its_data_as_ccn_lite_prints_it():
    """S4's names as the apps write them (`"/i3/%s/gasval/%04d"`), unescaped: 39 bytes,
    a 46-byte NAM (the NDN URI would escape each colon as %3A: 53 bytes)."""
    name = Name("/i3/aa:bb:cc:dd:ee:ff:00:11/gasval/0001")
    assert nam_text(name) == "/i3/aa:bb:cc:dd:ee:ff:00:11/gasval/0001"
    assert len(Nam((nam_text(name),)).encode()) == 4 + 3 + 39


@given(
    st.one_of(
        st.binary(max_size=12),
        st.lists(st.sampled_from(b"./%=az09:~!\x20\x7f\x80"), max_size=8).map(bytes),
    )
)
def test_a_component_is_written_unescaped_exactly_when_it_reads_back_as_itself(value):
    """The definition: printable ASCII but a slash, % or =, and not only periods."""
    plain = bytes(range(0x21, 0x7F)).translate(None, b"/%=")
    unescaped = bool(value.strip(b".")) and all(b in plain for b in value)
    text = nam_text(Name([Component.generic(value)]))
    assert (text == "/" + value.decode("latin-1")) == unescaped


@given(
    st.lists(
        st.one_of(
            st.builds(Component.generic, st.binary(max_size=12)),
            st.builds(Component.sequence_num, st.integers(0, 2**32)),
            st.builds(
                Component,
                st.integers(1, 0xFFFF).filter(lambda t: t not in (1, 2)),
                st.binary(max_size=6),
            ),
        ),
        max_size=5,
    )
)
def test_a_nams_name_reads_back_as_the_same_name(components):
    name = Name(components)
    assert Name(nam_text(name)) == name
    # Component by component, as the name's own iteration gives them (nam_text
    # reads the TLVs itself): the plain ones unescaped, the others as URI.
    plain = bytes(range(0x21, 0x7F)).translate(None, b"/%=")
    parts = [
        c.value.decode("ascii")
        if c.type == 8 and c.value.strip(b".") and all(b in plain for b in c.value)
        else c.to_uri()
        for c in name
    ]
    assert nam_text(name) == ("".join("/" + part for part in parts) if parts else "/")


@given(st.lists(st.text(alphabet="abc/:=%.0189", min_size=1, max_size=20), min_size=1, max_size=5))
def test_a_nam_encodes_each_name_as_a_type_and_little_endian_length(texts):
    """HoPP's NAM: dispatch, type, the TLVs' length, then per name type 0, a 16-bit
    little-endian length and the text (hopp.c's struct layout, `<BH`)."""
    tlvs = b"".join(struct.pack("<BH", 0, len(t.encode())) + t.encode() for t in texts)
    if len(tlvs) > 255:  # the NAM's one-byte length cannot say it
        with pytest.raises(ValueError):
            Nam(tuple(texts))
        return
    assert Nam(tuple(texts)).encode() == b"\x80\x08\xc1" + bytes((len(tlvs),)) + tlvs
