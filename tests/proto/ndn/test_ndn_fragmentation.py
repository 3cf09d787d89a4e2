"""S5's 3-byte-header fragmentation and reassembly."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ndn_strategies import FAST

from iotbench.proto.ndn.data import make_data
from iotbench.proto.ndn.fragmentation import (
    HEADER_SIZE,
    MAX_FRAGMENTS,
    FragmentError,
    FragmentHeader,
    Reassembler,
    fragment,
    is_fragment,
)
from iotbench.proto.ndn.interest import make_interest
from iotbench.proto.ndn.tlv import NdnDecodeError


def test_header_bits_by_hand():
    # 1 (fragment) | 0 (reserved) | 1 (more) | 00010 (seq 2), then identification 0x1234.
    assert FragmentHeader(True, 2, 0x1234).encode() == bytes([0b1010_0010, 0x12, 0x34])
    assert FragmentHeader(False, 31, 0xFFFF).encode() == bytes([0b1001_1111, 0xFF, 0xFF])
    assert FragmentHeader.decode(bytes([0b1010_0010, 0x12, 0x34, 0])) == FragmentHeader(
        True, 2, 0x1234
    )
    with pytest.raises(ValueError):
        FragmentHeader(True, 32, 0).encode()
    with pytest.raises(ValueError):
        FragmentHeader(True, 0, 0x10000).encode()


def test_unfragmented_packets_never_look_like_fragments():
    interest = make_interest("/a", nonce=1).wire
    data = make_data("/a", b"x").wire
    assert not is_fragment(interest) and not is_fragment(data) and not is_fragment(b"\x64\x00")
    assert all(is_fragment(f) for f in fragment(data + bytes(200), 102, 1))
    assert fragment(interest, 102, 7) == [interest]  # fits: sent as it is


def test_s5_data_sizes_at_mtu_102():
    # S5: at an NDN-layer MTU of 102 bytes, a 100-byte Data fits, a 196-byte one needs 2 frames.
    assert len(fragment(bytes(100), 102, 0)) == 1
    frames = fragment(bytes(196), 102, 0x0102)
    assert len(frames) == 2
    assert [len(f) for f in frames] == [102, 3 + 196 - 99]
    assert frames[0][:3] == bytes([0b1010_0000, 0x01, 0x02])
    assert frames[1][:3] == bytes([0b1000_0001, 0x01, 0x02])


def test_fragment_limits():
    fragment(bytes(MAX_FRAGMENTS * 10), 13, 0)  # exactly 32 fragments
    with pytest.raises(ValueError, match="at most 32"):
        fragment(bytes(MAX_FRAGMENTS * 10 + 1), 13, 0)
    with pytest.raises(ValueError, match="no room"):
        fragment(bytes(10), HEADER_SIZE, 0)


def _frames(size, mtu=50, ident=1):
    packet = bytes(random.Random(size).randbytes(size))
    return packet, fragment(packet, mtu, ident)


def test_reassembly_in_any_order():
    packet, frames = _frames(300)
    for order in (frames, frames[::-1], frames[2:] + frames[:2]):
        r = Reassembler()
        results = [r.feed(0.0, "peer", f) for f in order]
        assert results[:-1] == [None] * (len(order) - 1)
        assert results[-1] == packet
        assert r.pending == 0 and r.buffered_bytes == 0
    assert r.stats.packets == 1


def test_interleaved_packets_and_sources():
    p1, f1 = _frames(200, ident=1)
    p2, f2 = _frames(150, ident=2)
    p3, f3 = _frames(200, ident=1)  # same identification, other source
    r = Reassembler(max_packets=4, max_buffer_bytes=10_000)
    out = []
    for a, b, c in zip(f1, f2 + [None] * 9, f3, strict=False):
        out.append(r.feed(0, "x", a))
        if b is not None:
            out.append(r.feed(0, "x", b))
        out.append(r.feed(0, "y", c))
    for rest in f1[len(f3) :]:
        out.append(r.feed(0, "x", rest))
    got = [p for p in out if p is not None]
    assert sorted(got) == sorted([p1, p2, p3])


def test_duplicates_and_conflicts():
    packet, frames = _frames(120)
    r = Reassembler()
    assert r.feed(0, 1, frames[0]) is None
    assert r.feed(0, 1, frames[0]) is None  # an L2 retransmission: ignored
    assert r.stats.duplicates == 1
    changed = frames[0][:-1] + bytes([frames[0][-1] ^ 1])
    with pytest.raises(FragmentError, match="changed"):
        r.feed(0, 1, changed)
    assert r.pending == 0  # the partial packet is gone
    assert issubclass(FragmentError, NdnDecodeError)


@pytest.mark.parametrize(
    ("frames", "why"),
    [
        ([bytes([0x00, 0, 1, 5])], "not a fragment"),
        ([bytes([0xC0, 0, 1, 5])], "reserved"),
        ([bytes([0x80, 0, 1])], "header and payload"),
        ([bytes([0xA2, 0, 1, 5]), bytes([0x81, 0, 1, 5])], "precedes"),
        ([bytes([0x81, 0, 1, 5]), bytes([0x83, 0, 1, 5])], "two last"),
        ([bytes([0x81, 0, 1, 5]), bytes([0xA2, 0, 1, 5])], "after the last"),
    ],
)
def test_bad_fragments(frames, why):
    r = Reassembler()
    with pytest.raises(FragmentError, match=why):
        for f in frames:
            r.feed(0.0, "p", f)
    assert r.stats.errors == 1


def test_timeout_drops_partial_packets():
    _, frames = _frames(200)
    r = Reassembler(timeout_s=3.0)
    r.feed(10.0, "p", frames[0])
    assert r.next_timer() == 13.0
    assert r.expire(12.9) == 0
    assert r.expire(13.0) == 1
    assert r.pending == 0 and r.buffered_bytes == 0 and r.stats.timeouts == 1
    # A late fragment starts a new partial packet, which never completes.
    assert r.feed(14.0, "p", frames[1]) is None
    assert r.next_timer() == 17.0


def test_buffer_limits_evict_oldest_first():
    r = Reassembler(max_packets=2, max_buffer_bytes=10_000)
    parts = [_frames(200, ident=i)[1] for i in range(3)]
    for i, frames in enumerate(parts):
        r.feed(i * 0.1, "p", frames[0])
    assert r.pending == 2 and r.stats.evicted == 1
    # Packet 0 (the oldest) was evicted; packets 1 and 2 still complete.
    for frames in parts[1:]:
        done = [r.feed(1.0, "p", f) for f in frames[1:]]
        assert done[-1] is not None
    assert r.pending == 0

    small = Reassembler(max_packets=8, max_buffer_bytes=100)
    _, frames = _frames(400, mtu=50)
    for f in frames[:-1]:
        small.feed(0, "p", f)
        assert small.buffered_bytes <= 100
    assert small.stats.evicted >= 1


def test_bad_parameters():
    with pytest.raises(ValueError):
        Reassembler(timeout_s=0)
    with pytest.raises(ValueError):
        Reassembler(max_packets=0)


@FAST
@given(st.binary(min_size=1, max_size=700), st.integers(4, 120), st.randoms(use_true_random=False))
def test_any_packet_survives_fragmentation_in_any_order(packet, mtu, rnd):
    if -(-len(packet) // (mtu - HEADER_SIZE)) > MAX_FRAGMENTS and len(packet) > mtu:
        with pytest.raises(ValueError):
            fragment(packet, mtu, 9)
        return
    frames = fragment(packet, mtu, 9)
    assert all(len(f) <= mtu for f in frames)
    if len(frames) == 1 and len(packet) <= mtu:
        assert frames == [packet]
        return
    rnd.shuffle(frames)
    r = Reassembler(max_buffer_bytes=10_000)
    out = [r.feed(0.0, "s", f) for f in frames]
    assert out[-1] == packet and all(o is None for o in out[:-1])


@FAST
@given(
    st.lists(
        st.tuples(
            st.floats(0, 10),
            st.sampled_from(["a", "b"]),
            st.one_of(
                st.binary(max_size=40),
                st.builds(
                    lambda m, s, i, p: FragmentHeader(m, s, i).encode() + p,
                    st.booleans(),
                    st.integers(0, 31),
                    st.integers(0, 3),
                    st.binary(max_size=40),
                ),
            ),
        ),
        max_size=60,
    )
)
def test_hostile_frames_raise_only_fragment_errors_and_stay_bounded(frames):
    r = Reassembler(timeout_s=1.0, max_packets=3, max_buffer_bytes=120)
    for t, source, frame in sorted(frames, key=lambda x: x[0]):
        try:
            r.feed(t, source, frame)
        except FragmentError:
            pass
        assert r.pending <= 3
        assert r.buffered_bytes <= 120
        assert r.buffered_bytes == sum(p.size for p in r._partials.values())
