"""Property tests: random IPv6 packets survive compression and fragmentation in any
order, and arbitrary bytes only ever give LowpanDecodeError (decompress) or None (the
Reassembler), whose memory stays within its bounds."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lowpan_helpers import MAC_A, MAC_B, SHORT_A, SHORT_B

from iotbench.net import ip
from iotbench.net.lowpan import LowpanDecodeError, Reassembler, compress, decompress, fragment
from iotbench.net.lowpan.codec import LINK_LOCAL_PREFIX, decode_header, interface_identifier
from iotbench.net.lowpan.fragments import frag1_header, fragn_header

PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ = settings(PROPS, max_examples=400)
# Every loop in the code under test is bounded by the length of its input; a
# hang would show up as this timeout rather than a stuck run.
pytestmark = pytest.mark.timeout(240)

macs = st.one_of(
    st.sampled_from([MAC_A, MAC_B, SHORT_A, SHORT_B, b"\xff\xff"]),
    st.binary(min_size=8, max_size=8),
    st.binary(min_size=2, max_size=2),
)
prefixes = st.one_of(
    st.sampled_from([bytes.fromhex("20010db800000000"), bytes(8), LINK_LOCAL_PREFIX]),
    st.binary(min_size=8, max_size=8),
)
contexts_st = st.dictionaries(st.integers(0, 15), prefixes, max_size=4)
iids = st.one_of(
    st.binary(min_size=8, max_size=8),
    st.binary(min_size=2, max_size=2).map(lambda b: bytes.fromhex("000000fffe00") + b),
    st.just(bytes(8)),
)


@st.composite
def unicast(draw, mac: bytes, contexts: dict[int, bytes]) -> bytes:
    prefix_choices = [LINK_LOCAL_PREFIX, *contexts.values()]
    prefix = draw(st.one_of(st.sampled_from(prefix_choices), prefixes))
    iid = draw(st.one_of(st.just(interface_identifier(mac)), iids))
    return draw(st.one_of(st.just(prefix + iid), st.binary(min_size=16, max_size=16)))


@st.composite
def multicast(draw, contexts: dict[int, bytes]) -> bytes:
    flags_scope = draw(st.integers(0, 255))
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return b"\xff\x02" + bytes(13) + draw(st.binary(min_size=1, max_size=1))
    if kind == 1:
        return b"\xff" + bytes((flags_scope,)) + bytes(11) + draw(st.binary(min_size=3, max_size=3))
    if kind == 2:
        return b"\xff" + bytes((flags_scope,)) + bytes(9) + draw(st.binary(min_size=5, max_size=5))
    if kind == 3 and contexts:
        prefix = draw(st.sampled_from(sorted(contexts.values())))
        group = draw(st.binary(min_size=4, max_size=4))
        return b"\xff" + bytes((flags_scope, draw(st.integers(0, 255)), 64)) + prefix + group
    return b"\xff" + draw(st.binary(min_size=15, max_size=15))


@st.composite
def udp_body(draw) -> bytes:
    port = st.one_of(
        st.integers(0xF0B0, 0xF0BF), st.integers(0xF000, 0xF0FF), st.integers(0, 0xFFFF)
    )
    sport, dport = draw(port), draw(port)
    data = draw(st.binary(max_size=1200))
    length = 8 + len(data)
    if draw(st.integers(0, 9)) == 0:
        length = draw(st.integers(0, 0xFFFF))  # a UDP length that disagrees
    checksum = draw(st.integers(0, 0xFFFF))
    return (
        sport.to_bytes(2, "big")
        + dport.to_bytes(2, "big")
        + length.to_bytes(2, "big")
        + checksum.to_bytes(2, "big")
        + data
    )


@st.composite
def scenarios(draw):
    """(packet, src_mac, dst_mac, contexts)."""
    src_mac, dst_mac = draw(macs), draw(macs)
    contexts = draw(contexts_st)
    src = draw(st.one_of(unicast(src_mac, contexts), st.just(bytes(16))))
    dst = draw(st.one_of(unicast(dst_mac, contexts), multicast(contexts)))
    next_header = draw(st.sampled_from([17, 17, 17, 6, 58, 0, 43, 59, 255]))
    if next_header == 17:
        body = draw(st.one_of(udp_body(), st.binary(max_size=7)))
    else:
        body = draw(st.binary(max_size=1200))
    packet = ip.build_ipv6(
        src,
        dst,
        next_header,
        body,
        hop_limit=draw(st.sampled_from([0, 1, 2, 63, 64, 65, 254, 255])),
        traffic_class=draw(st.one_of(st.just(0), st.integers(0, 255))),
        flow_label=draw(st.one_of(st.just(0), st.integers(0, 0xFFFFF))),
    )
    return packet, src_mac, dst_mac, contexts


@PROPS
@given(scenarios(), st.sampled_from(["iphc", "none"]))
def test_random_packets_round_trip(scenario, mode):
    packet, src_mac, dst_mac, contexts = scenario
    c = compress(packet, src_mac, dst_mac, mode=mode, contexts=contexts)
    assert c.uncompressed_header_len + len(c.payload) == len(packet)
    assert len(c.header) == c.ip_header_len + c.transport_header_len
    assert decompress(c.header + c.payload, src_mac, dst_mac, contexts=contexts) == packet


@PROPS
@given(scenarios(), st.sampled_from(["iphc", "none"]), st.integers(60, 127), st.data())
def test_random_packets_reassemble_in_any_order(scenario, mode, room, data):
    packet, src_mac, dst_mac, contexts = scenario
    c = compress(packet, src_mac, dst_mac, mode=mode, contexts=contexts)
    tag = data.draw(st.integers(0, 0xFFFF))
    pieces = fragment(c, tag, room)
    assert all(len(p) <= room for p in pieces)
    order = data.draw(st.permutations(pieces))
    r = Reassembler(contexts=contexts, max_bytes=2048)
    results = [r.add(0.0, src_mac, dst_mac, p) for p in order]
    assert results[-1] == packet
    assert results[:-1] == [None] * (len(pieces) - 1)
    assert len(r) == 0 and r.held_bytes == 0 and r.decode_errors == 0


def _well_formed(packet: bytes) -> bool:
    return (
        len(packet) >= 40
        and packet[0] >> 4 == 6
        and int.from_bytes(packet[4:6], "big") == len(packet) - 40
    )


@st.composite
def mutated(draw, valid: bytes) -> bytes:
    """A valid 6LoWPAN packet cut short, with bytes changed, or with bytes inserted."""
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        op = draw(st.integers(0, 2))
        if op == 0:
            data[i] = draw(st.integers(0, 255))
        elif op == 1:
            del data[i:]
        else:
            data[i:i] = draw(st.binary(min_size=1, max_size=3))
    return bytes(data)


@st.composite
def lowpan_inputs(draw) -> tuple[bytes, bytes, bytes, dict[int, bytes]]:
    packet, src_mac, dst_mac, contexts = draw(scenarios())
    c = compress(packet, src_mac, dst_mac, contexts=contexts)
    data = draw(st.one_of(st.binary(max_size=200), mutated(c.header + c.payload)))
    # Decompress with the same or other contexts and addresses, or nonsense ones.
    contexts = draw(st.one_of(st.just(contexts), contexts_st))
    src_mac = draw(st.one_of(st.just(src_mac), st.binary(max_size=9)))
    return data, src_mac, dst_mac, contexts


@FUZZ
@given(lowpan_inputs(), st.one_of(st.none(), st.integers(-5, 3000)))
def test_decompress_raises_only_lowpan_decode_error(inputs, datagram_size):
    data, src_mac, dst_mac, contexts = inputs
    try:
        out = decompress(data, src_mac, dst_mac, contexts=contexts, datagram_size=datagram_size)
    except LowpanDecodeError:
        return
    assert _well_formed(out)
    if datagram_size is not None:
        assert len(out) == datagram_size


@FUZZ
@given(lowpan_inputs())
def test_decode_header_raises_only_lowpan_decode_error(inputs):
    data, src_mac, dst_mac, contexts = inputs
    try:
        decoded = decode_header(data, src_mac, dst_mac, contexts=contexts)
    except LowpanDecodeError:
        return
    assert decoded.consumed <= len(data)
    assert len(decoded.headers) in (40, 48)


POOL_PACKETS = [
    ip.build_ipv6(
        LINK_LOCAL_PREFIX + interface_identifier(MAC_A),
        LINK_LOCAL_PREFIX + interface_identifier(MAC_B),
        17,
        ip.build_udp(bytes(16), bytes(16), 5683, 0xF0B1, bytes(range(n % 256)) * (1 + n // 256)),
    )
    for n in (150, 300, 700)
]


def _pool() -> list[list[bytes]]:
    """The fragments of a few genuine datagrams, some under the same tag."""
    out = []
    for i, packet in enumerate(POOL_PACKETS):
        for mode in ("iphc", "none"):
            c = compress(packet, MAC_A, MAC_B, mode=mode)
            out.append(fragment(c, i % 2, 80))
    return out


POOL_DATAGRAMS = _pool()
POOL = [frame for frames in POOL_DATAGRAMS for frame in frames]


@st.composite
def hostile_frames(draw) -> tuple[float, bytes, bytes, list[bytes]]:
    """(time step, link source, link destination, frames sent back to back)."""
    dt = draw(st.sampled_from([0.0, 0.0, 0.5, 7.0, 61.0]))
    src = draw(st.sampled_from([MAC_A, MAC_A, MAC_B, SHORT_A]))
    dst = draw(st.sampled_from([MAC_B, MAC_B, MAC_A, b"\xff\xff"]))
    size = st.integers(0, 0x7FF)
    tag = st.integers(0, 3)
    kind = draw(st.integers(0, 6))
    if kind == 0:
        frames = [draw(st.binary(max_size=127))]
    elif kind == 1:
        frames = [draw(st.sampled_from(POOL))]
    elif kind == 2:
        frames = [draw(mutated(draw(st.sampled_from(POOL))))]
    elif kind == 3:
        frames = [frag1_header(draw(size), draw(tag)) + draw(st.binary(max_size=100))]
    elif kind == 4:
        offset = draw(st.integers(0, 255)) * 8
        frames = [fragn_header(draw(size), draw(tag), offset) + draw(st.binary(max_size=100))]
    elif kind == 5:
        frames = [draw(st.sampled_from(POOL))[:5] + draw(st.binary(max_size=100))]
    else:
        frames = draw(st.permutations(draw(st.sampled_from(POOL_DATAGRAMS))))
    return dt, src, dst, frames


@FUZZ
@given(
    st.lists(hostile_frames(), max_size=60),
    st.integers(1, 4),
    st.integers(0, 3000),
)
def test_reassembler_never_raises_and_stays_bounded(frames, max_datagrams, max_bytes):
    r = Reassembler(timeout_s=60.0, max_datagrams=max_datagrams, max_bytes=max_bytes)
    now = 0.0
    for dt, src, dst, burst in frames:
        now += dt
        for frame in burst:
            out = r.add(now, src, dst, frame)
            if out is not None:
                assert _well_formed(out)
        assert len(r) <= max_datagrams
        assert r.held_bytes <= max_bytes
        for datagram in r._datagrams.values():
            assert datagram.held <= datagram.size <= 0x7FF
            assert datagram.deadline <= now + 60.0
        expiry = r.next_expiry()
        assert expiry is None or expiry > now
    r.expire(now + 60.0)
    assert len(r) == 0 and r.held_bytes == 0


@PROPS
@given(st.permutations(POOL))
def test_genuine_fragments_never_combine_into_a_wrong_packet(order):
    # Two datagrams share tag 0 and one tag 1, in both modes, from the same
    # sender: fragments of different sizes under one tag disturb each other
    # (RFC 4944 discards on a changed size), so only count what comes out whole.
    r = Reassembler(max_datagrams=8, max_bytes=16 * 1024)
    for frame in order:
        out = r.add(0.0, MAC_A, MAC_B, frame)
        assert out is None or out in POOL_PACKETS
