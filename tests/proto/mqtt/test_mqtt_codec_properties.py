"""Property tests of the MQTT codec and framer: round trips, any split, only MqttDecodeError."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotbench.proto.mqtt.codec import (
    ConnAck,
    Connect,
    Disconnect,
    MqttDecodeError,
    PacketFramer,
    PingReq,
    PingResp,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    SubAck,
    Subscribe,
    UnsubAck,
    Unsubscribe,
    Will,
    decode,
    encode,
    header_length,
)

PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12)
pid = st.integers(1, 0xFFFF)
qos = st.integers(0, 2)
blob = st.binary(max_size=40)


@st.composite
def connects(draw):
    username = draw(st.none() | text)
    password = draw(st.none() | blob) if username is not None else None
    will = draw(st.none() | st.builds(Will, text, blob, qos, st.booleans()))
    return Connect(
        draw(text), draw(st.booleans()), draw(st.integers(0, 0xFFFF)), will, username, password
    )


@st.composite
def publishes(draw):
    q = draw(qos)
    dup = draw(st.booleans()) if q else False
    return Publish(draw(text), draw(blob), q, draw(st.booleans()), dup, draw(pid) if q else None)


PACKETS = st.one_of(
    connects(),
    st.builds(lambda sp, rc: ConnAck(sp and rc == 0, rc), st.booleans(), st.integers(0, 255)),
    publishes(),
    st.builds(PubAck, pid),
    st.builds(PubRec, pid),
    st.builds(PubRel, pid),
    st.builds(PubComp, pid),
    st.builds(Subscribe, pid, st.lists(st.tuples(text, qos), min_size=1, max_size=4).map(tuple)),
    st.builds(
        SubAck, pid, st.lists(st.sampled_from([0, 1, 2, 0x80]), min_size=1, max_size=4).map(tuple)
    ),
    st.builds(Unsubscribe, pid, st.lists(text, min_size=1, max_size=4).map(tuple)),
    st.builds(UnsubAck, pid),
    st.just(PingReq()),
    st.just(PingResp()),
    st.just(Disconnect()),
)


@PROPS
@given(PACKETS)
def test_every_packet_round_trips(packet):
    wire = encode(packet)
    assert decode(wire) == packet
    header = header_length(wire)
    assert 2 <= header <= len(wire)
    if isinstance(packet, Publish):
        assert len(wire) - header == len(packet.payload)


@PROPS
@given(st.lists(PACKETS, min_size=1, max_size=6), st.lists(st.integers(1, 30), min_size=1))
def test_any_split_of_a_stream_gives_the_packets(packets, sizes):
    wire = b"".join(encode(p) for p in packets)
    framer = PacketFramer()
    got = []
    pos = i = 0
    while pos < len(wire):
        n = sizes[i % len(sizes)]
        framer.feed(wire[pos : pos + n])
        pos += n
        i += 1
        while (raw := framer.next_packet()) is not None:
            got.append(decode(raw))
    assert got == packets and framer.buffered_bytes == 0


def _decode_only_typed_errors(data: bytes) -> None:
    try:
        packet = decode(data)
    except MqttDecodeError:
        return
    assert decode(encode(packet)) == packet  # whatever decodes, encodes back


def _frame_only_typed_errors(chunks: list[bytes], limit: int) -> None:
    framer = PacketFramer(max_packet_size_bytes=limit)
    try:
        for chunk in chunks:
            framer.feed(chunk)
            while (raw := framer.next_packet()) is not None:
                assert len(raw) <= limit
                _decode_only_typed_errors(raw)
            # Memory stays bounded: never more than one partial packet.
            assert framer.buffered_bytes < limit + 5
    except MqttDecodeError:
        pass


@PROPS
@given(st.binary(max_size=80))
def test_random_bytes_raise_only_decode_errors(data):
    _decode_only_typed_errors(data)
    for nibble in range(16):  # the same body under every packet type and flags
        _decode_only_typed_errors(bytes([nibble << 4 | (data[0] & 0x0F if data else 0)]) + data[1:])


@PROPS
@given(st.lists(st.binary(max_size=40), max_size=10), st.integers(2, 300))
def test_random_streams_into_the_framer(chunks, limit):
    _frame_only_typed_errors(chunks, limit)


_OPS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 400), st.integers(0, 255)), max_size=5)


def _mutate(data: bytes, ops) -> bytes:
    b = bytearray(data)
    for kind, pos, val in ops:
        i = pos % (len(b) + 1)
        if kind == 0 and i < len(b):
            b[i] ^= val or 1
        elif kind == 1:
            b.insert(i, val)
        elif kind == 2 and i < len(b):
            del b[i]
        elif kind == 3:
            del b[i:]
    return bytes(b)


@PROPS
@given(st.lists(PACKETS, min_size=1, max_size=5), _OPS, st.integers(1, 16))
def test_mutated_streams_raise_only_decode_errors(packets, ops, chunk):
    wire = _mutate(b"".join(encode(p) for p in packets), ops)
    _decode_only_typed_errors(wire)
    _frame_only_typed_errors([wire[i : i + chunk] for i in range(0, len(wire), chunk)], 200)
