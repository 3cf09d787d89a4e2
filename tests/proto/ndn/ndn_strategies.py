"""Hypothesis strategies and helpers shared by the NDN property tests."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from iotbench.proto.ndn.data import Data, make_data
from iotbench.proto.ndn.interest import Interest, make_interest
from iotbench.proto.ndn.lp import LpPacket
from iotbench.proto.ndn.name import Component, Name
from iotbench.proto.ndn.signing import HmacSha256Signer

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

component_types = st.one_of(
    st.sampled_from([8, 8, 8, 0x20, 0x32, 0x34, 0x36, 0x38, 0x3A]),
    st.integers(3, 0xFFFF),
)


@st.composite
def components(draw: st.DrawFn) -> Component:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return Component(draw(st.sampled_from([1, 2])), draw(st.binary(min_size=32, max_size=32)))
    if kind == 1:
        return Component(
            draw(st.sampled_from([0x32, 0x34, 0x36, 0x38, 0x3A])),
            draw(st.integers(0, 2**64 - 1)).to_bytes(8, "big")[
                -draw(st.sampled_from([1, 2, 4, 8])) :
            ],
        )
    if kind == 2:
        return Component(8, b"." * draw(st.integers(0, 4)))
    return Component(draw(component_types), draw(st.binary(max_size=12)))


names = st.lists(components(), max_size=6).map(Name)


@st.composite
def interests(draw: st.DrawFn) -> Interest:
    name = draw(names.filter(lambda n: all(c.type != 2 for c in n)))
    params = draw(st.one_of(st.none(), st.binary(max_size=20)))
    signer = (
        HmacSha256Signer(b"k", key_name="/k")
        if params is not None and draw(st.booleans())
        else None
    )
    return make_interest(
        name,
        can_be_prefix=draw(st.booleans()),
        must_be_fresh=draw(st.booleans()),
        forwarding_hint=draw(st.lists(names, max_size=2)),
        nonce=draw(st.one_of(st.none(), st.integers(0, 2**32 - 1))),
        lifetime_ms=draw(st.one_of(st.none(), st.integers(0, 2**40))),
        hop_limit=draw(st.one_of(st.none(), st.integers(0, 255))),
        app_parameters=params,
        signer=signer,
    )


@st.composite
def datas(draw: st.DrawFn) -> Data:
    return make_data(
        draw(names),
        draw(st.binary(max_size=300)),
        content_type=draw(st.one_of(st.none(), st.integers(0, 5))),
        freshness_period_ms=draw(st.one_of(st.none(), st.integers(0, 2**33))),
        final_block_id=draw(st.one_of(st.none(), components())),
        signer=HmacSha256Signer(b"k", key_digest=b"\x01" * 8) if draw(st.booleans()) else None,
    )


@st.composite
def packets(draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return draw(interests()).wire
    if kind == 1:
        return draw(datas()).wire
    inner = draw(interests()).wire
    return LpPacket(fragment=inner, nack=draw(st.sampled_from([None, 0, 50, 100, 150]))).encode()


@st.composite
def mutated_packets(draw: st.DrawFn) -> bytes:
    """A valid packet with a few bytes flipped, inserted, deleted, or cut short."""
    wire = bytearray(draw(packets()))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.integers(0, 3))
        at = draw(st.integers(0, max(len(wire) - 1, 0)))
        if op == 0 and wire:
            wire[at] = draw(st.integers(0, 255))
        elif op == 1:
            wire.insert(at, draw(st.integers(0, 255)))
        elif op == 2 and wire:
            del wire[at]
        else:
            del wire[at:]
    return bytes(wire)


def exercise(packet: Interest | Data | LpPacket) -> None:
    """Read every field, the way a curious application would."""
    if isinstance(packet, Interest):
        packet.validate()
        packet.name.to_uri()
        _ = [c.to_uri() for c in packet.name]
        _ = (packet.app_parameters, packet.signature_value, packet.signed_portion)
        packet.parameters_digest_valid()
        packet.with_nonce(1).with_hop_limit(2)
    elif isinstance(packet, Data):
        packet.validate()
        _ = (packet.content, packet.signature_value, packet.signed_portion, packet.full_name)
        packet.name.to_uri()
    else:
        _ = (packet.nack, packet.acks)
        if packet.fragment:
            from iotbench.proto.ndn.packet import decode_packet

            inner = decode_packet(packet.fragment)
            if not isinstance(inner, LpPacket):
                exercise(inner)
