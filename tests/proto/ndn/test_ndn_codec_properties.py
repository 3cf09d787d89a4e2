"""Property tests for the NDN codec: round trips, and hostile bytes raise only NdnDecodeError."""

import hashlib

from hypothesis import given
from hypothesis import strategies as st
from ndn_strategies import FAST, components, datas, exercise, interests, mutated_packets, names

from iotbench.proto.ndn.data import Data
from iotbench.proto.ndn.interest import Interest
from iotbench.proto.ndn.lp import LpPacket
from iotbench.proto.ndn.name import Component, Name
from iotbench.proto.ndn.packet import decode_packet
from iotbench.proto.ndn.tlv import NdnDecodeError, encode_var_number, read_var_number


@FAST
@given(st.integers(0, 2**64 - 1))
def test_var_number_round_trip(n):
    wire = encode_var_number(n)
    assert read_var_number(wire, 0, len(wire)) == (n, len(wire))


@FAST
@given(names)
def test_name_round_trips_through_wire_and_uri(name):
    assert Name.from_wire(name.wire) == name
    assert Name(name.to_uri()) == name
    assert Name.from_uri("ndn:" + name.to_uri()) == name
    assert list(Name.from_wire(name.wire)) == list(name)


@FAST
@given(names, st.binary(max_size=300))
def test_append_builds_on_the_wire_form(name, value):
    grown = name.append(value)
    assert grown == Name([*name, Component.generic(value)])
    assert grown.value == name.value + Component.generic(value).wire
    assert len(grown) == len(name) + 1 and grown[-1] == Component.generic(value)


@FAST
@given(names)
def test_components_decoded_on_first_access_stay_equal(name):
    decoded = Name.from_wire(name.wire)
    first = [decoded[i] for i in range(-len(decoded), len(decoded))]
    again = [decoded[i] for i in range(-len(decoded), len(decoded))]
    assert first == again == [*name, *name]
    assert all(a is b for a, b in zip(first, again))  # kept, not decoded twice


@FAST
@given(components())
def test_component_round_trips(c):
    assert Component.from_uri(c.to_uri()) == c
    assert Component.from_wire(c.wire) == c


@FAST
@given(names, names)
def test_prefix_and_order_agree_with_components(a, b):
    by_components = list(a) == list(b)[: len(a)]
    assert a.is_prefix_of(b) == by_components
    assert (a < b) == (a.value < b.value)


@FAST
@given(interests())
def test_interest_round_trip(i):
    back = Interest(i.wire).validate()
    assert back.wire == i.wire
    assert back.name == i.name and back.nonce == i.nonce and back.lifetime_ms == i.lifetime_ms
    assert back.parameters_digest_valid()


@FAST
@given(datas())
def test_data_round_trip(d):
    back = Data(d.wire).validate()
    assert back.name == d.name and back.content == d.content and back.meta_info == d.meta_info
    assert back.implicit_digest == hashlib.sha256(d.wire).digest()


def _decode_is_total(wire: bytes) -> None:
    try:
        packet = decode_packet(wire)
        exercise(packet)
    except NdnDecodeError:
        pass


@FAST
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_decode_errors(wire):
    _decode_is_total(wire)


@FAST
@given(st.sampled_from([5, 6, 0x64]), st.binary(max_size=120))
def test_random_bodies_behind_a_valid_type(t, body):
    _decode_is_total(bytes([t]) + encode_var_number(len(body)) + body)


@FAST
@given(mutated_packets())
def test_mutated_packets_raise_only_decode_errors(wire):
    _decode_is_total(wire)


@FAST
@given(st.text(max_size=40))
def test_any_uri_text_parses_or_raises_decode_error(text):
    try:
        name = Name(text)
    except NdnDecodeError:
        return
    assert Name(name.to_uri()) == name


def test_lp_packet_with_a_huge_length_claim_is_rejected_at_once():
    for wire in (bytes.fromhex("64ffffffffffffffffff50"), bytes.fromhex("05fe7fffffff07")):
        try:
            decode_packet(wire)
        except NdnDecodeError:
            pass
        else:
            raise AssertionError("accepted a truncated packet")
    assert LpPacket.decode(LpPacket(acks=(1,)).encode()).acks == (1,)
