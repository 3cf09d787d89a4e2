"""Property-based fuzzing: parsers raise only IpDecodeError, receivers never raise,
and the reassembler stays within its limits and reassembles what it can."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotbench.net import ip
from iotbench.net.ip import IpDecodeError
from iotbench.net.node import Node
from iotbench.net.reassembly import Reassembler
from iotbench.sim import Simulator

V4_A, V4_B = ip.address_bytes("10.0.0.1"), ip.address_bytes("10.0.0.2")
V6_A, V6_B = ip.address_bytes("fd00::1"), ip.address_bytes("fd00::2")

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# The hostile-stream test draws long lists; fewer examples keep the suite fast.
FUZZ_LONG = settings(FUZZ, max_examples=120)


def _valid_packets() -> list[bytes]:
    out = []
    for size in (0, 5, 300):
        payload = bytes(i % 251 for i in range(size))
        seg4 = ip.build_udp(V4_A, V4_B, 5683, 49152, payload)
        v4 = ip.build_ipv4(V4_A, V4_B, ip.IPPROTO_UDP, seg4, 77)
        seg6 = ip.build_udp(V6_A, V6_B, 5683, 49152, payload)
        v6 = ip.build_ipv6(V6_A, V6_B, ip.IPPROTO_UDP, seg6)
        out += [v4, v6]
        out += ip.fragment_ipv4(v4, 128)
        out += ip.fragment_ipv6(v6, 128, 99)
    return out


VALID = _valid_packets()


@st.composite
def mutated(draw) -> bytes:
    """A valid packet with random byte changes, truncation, or extension."""
    data = bytearray(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(0, 4))):
        if data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut] if draw(st.booleans()) else data) + draw(st.binary(max_size=8))


packet_bytes = st.one_of(st.binary(max_size=120), mutated())
addresses = st.sampled_from([(b"", b""), (V4_A, V4_B), (V6_A, V6_B)])


def parse_everything(data: bytes, src: bytes, dst: bytes) -> None:
    """Every parser on these bytes; only IpDecodeError may escape."""
    for verify in (False, True):
        try:
            ip.parse_ipv4(data, verify=verify)
        except IpDecodeError:
            pass
        try:
            ip.parse_udp(data, src, dst, verify=verify)
        except IpDecodeError:
            pass
    try:
        ip.parse_ipv6(data)
    except IpDecodeError:
        pass
    # The UDP layer of whatever the IP layer accepted.
    try:
        if data and data[0] >> 4 == 4:
            h = ip.parse_ipv4(data)
            ip.parse_udp(data[h.header_len : h.total_len], h.src, h.dst, verify=True)
        else:
            h6 = ip.parse_ipv6(data)
            body = data[h6.header_len : h6.header_len + h6.payload_len]
            ip.parse_udp(body, h6.src, h6.dst, verify=True)
    except IpDecodeError:
        pass


@FUZZ
@given(packet_bytes, addresses)
def test_parsers_raise_only_decode_errors(data, addrs):
    parse_everything(data, *addrs)


def test_mutations_do_produce_decode_errors():
    # Guard against a fuzz test that never exercises the error paths.
    errors = 0
    for pkt in VALID:
        for cut in range(0, len(pkt), 7):
            try:
                (ip.parse_ipv4 if pkt[0] >> 4 == 4 else ip.parse_ipv6)(pkt[:cut])
            except IpDecodeError:
                errors += 1
    assert errors > 100


def _fuzz_node() -> tuple[Simulator, Node, list]:
    sim = Simulator(1)
    node = Node(sim, "fuzz")
    node.add_interface("10.0.0.2", 1500)
    got: list = []
    node.udp_bind(5683, lambda payload, src, sport, dport, dst: got.append(payload))
    return sim, node, got


@FUZZ_LONG
@given(st.lists(packet_bytes, max_size=12), st.lists(st.floats(0, 100), max_size=12))
def test_node_receive_ip_never_raises(packets, times):
    sim, node, _got = _fuzz_node()
    for i, data in enumerate(packets):
        if i < len(times) and times[i] > sim.now:
            sim.now = times[i]  # receive_ip reads the clock for reassembly timeouts
        node.receive_ip(data)
    assert len(node.reassembler) <= node.reassembler.max_datagrams
    assert node.reassembler._held <= node.reassembler.max_bytes


def test_node_counts_garbage_as_decode_errors():
    _sim, node, got = _fuzz_node()
    for data in (b"", b"\x45", b"\x60" + bytes(10), b"\xff" * 40):
        node.receive_ip(data)
    assert node.ip_decode_errors == 4
    assert got == []


# ----------------------------------------------------------------- reassembler streams


@st.composite
def fragment_streams(draw):
    """Several datagrams cut at random 8-byte boundaries, some cut twice differently
    (overlapping fragments), with duplicates, all shuffled together."""
    n = draw(st.integers(1, 4))
    datagrams = {}
    stream = []
    for ident in range(n):
        key = (V4_A, V4_B, 17, ident)
        payload = draw(st.binary(min_size=1, max_size=400))
        datagrams[key] = payload
        for _ in range(draw(st.integers(1, 2))):  # a second cut overlaps the first
            units = (len(payload) + 7) // 8
            cuts = sorted(set(draw(st.lists(st.integers(1, max(1, units - 1)), max_size=6))))
            bounds = [0] + [c * 8 for c in cuts if c * 8 < len(payload)] + [len(payload)]
            for a, b in itertools.pairwise(bounds):
                stream.append((key, a, b < len(payload), payload[a:b]))
    extra = draw(st.lists(st.sampled_from(stream), max_size=5))  # duplicates
    stream += extra
    stream = draw(st.permutations(stream))
    return datagrams, stream


@FUZZ
@given(fragment_streams())
def test_reassembler_reassembles_any_complete_stream(case):
    datagrams, stream = case
    r = Reassembler()
    results: dict[tuple, list[bytes]] = {}
    for key, off, more, data in stream:
        whole = r.add(0.0, key, off, more, data)
        if whole is not None:
            results.setdefault(key, []).append(whole)
        assert len(r) <= r.max_datagrams
        assert 0 <= r._held <= r.max_bytes
    assert r.invalid == 0 and r.overflowed == 0
    # Every datagram came out, and only ever its exact payload (duplicates arriving
    # after completion may start a second copy, which must be identical).
    assert set(results) == set(datagrams)
    for key, outs in results.items():
        assert all(out == datagrams[key] for out in outs)


@st.composite
def hostile_streams(draw):
    """Arbitrary (key, offset, more, data, time) tuples: overlapping, inconsistent,
    oversized, mixed with real fragments."""
    datagrams, stream = draw(fragment_streams())
    junk = draw(
        st.lists(
            st.tuples(
                st.sampled_from(list(datagrams) + [(b"x", b"y", 6, 9)]),
                st.integers(0, 8191).map(lambda u: u * 8),
                st.booleans(),
                st.binary(max_size=120),
            ),
            max_size=20,
        )
    )
    mixed = draw(st.permutations(stream + junk))
    times = sorted(draw(st.lists(st.floats(0, 120), min_size=len(mixed), max_size=len(mixed))))
    return [(t,) + item for t, item in zip(times, mixed)]


@FUZZ_LONG
@given(hostile_streams(), st.integers(1, 4), st.integers(0, 600), st.floats(0.5, 60))
def test_reassembler_never_raises_and_respects_limits(stream, max_datagrams, max_bytes, timeout):
    r = Reassembler(timeout_s=timeout, max_datagrams=max_datagrams, max_bytes=max_bytes)
    for now, key, off, more, data in stream:
        whole = r.add(now, key, off, more, data)
        assert whole is None or isinstance(whole, bytes)
        assert len(r) <= max_datagrams
        assert 0 <= r._held <= max_bytes
        # The byte account matches what is actually stored.
        assert r._held == sum(len(d) for p in r._partials.values() for d in p.parts.values())
