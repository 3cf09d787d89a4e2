"""Whatever arrives, the OSCORE layer (and the endpoint behind it) never raises,
only ever sends well-formed CoAP, and keeps its tables within their bounds."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from oscore_harness import CLIENT, SERVER, Pair, contexts

from iotbench.proto.coap.codec import Code, Message, Type, decode, encode
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.coap.options import Opt
from iotbench.proto.coap.secured import SecuredEndpoint
from iotbench.proto.oscore.layer import OscoreLayer


def _corpus() -> list[bytes]:
    """Valid OSCORE datagrams both ways: requests, answers, notifications, an Echo."""
    pair = Pair(*contexts())
    pair.client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    pair.client.request(0.0, SERVER, Code.PUT, "/temp", payload=b"1", confirmable=False)
    pair.run(1.0)
    pair.server.notify(pair.now, "/temp")
    pair.run(2.0)
    return [d for _, _, _, d in pair.log]


CORPUS = _corpus()
LIMITS = {"max_bindings": 4, "cache_entries": 8, "cache_bytes": 2048}


def _mutate(data: bytes, edits: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for pos, value in edits:
        if not out:
            break
        if value < 256:
            out[pos % len(out)] = value
        elif value < 300:
            del out[pos % len(out) :]
        else:
            out.insert(pos % (len(out) + 1), value & 0xFF)
    return bytes(out)


datagrams = st.one_of(
    st.binary(max_size=80),
    st.builds(
        _mutate,
        st.sampled_from(CORPUS),
        st.lists(st.tuples(st.integers(0, 200), st.integers(0, 400)), max_size=4),
    ),
    st.sampled_from(CORPUS),
)


def _stack(role: str) -> tuple[SecuredEndpoint, OscoreLayer]:
    client_ctx, server_ctx = contexts(replay_window_known=role == "client")
    layer = OscoreLayer(random.Random(7), **LIMITS)
    layer.add_peer(SERVER, client_ctx)
    layer.add_context(server_ctx)
    endpoint = CoapEndpoint(random.Random(8))
    endpoint.add_resource("/temp", lambda req, addr: b"20 C", observable=True)
    return SecuredEndpoint(endpoint, layer), layer


def _within_bounds(layer: OscoreLayer) -> None:
    assert len(layer._servers) <= LIMITS["max_bindings"]
    assert len(layer._clients) <= LIMITS["max_bindings"]
    for cache in (layer._sent, layer._received):
        assert len(cache) <= LIMITS["cache_entries"]
        assert cache.size_bytes <= LIMITS["cache_bytes"] or len(cache) == 1


@settings(max_examples=300)
@given(
    st.sampled_from(["client", "server"]),
    st.lists(st.tuples(st.sampled_from([CLIENT, SERVER, ("x", 1)]), datagrams), max_size=25),
)
def test_any_datagrams_are_handled_without_raising(role, inputs):
    stack, layer = _stack(role)
    if role == "client":
        stack.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    now = 0.0
    for addr, data in inputs:
        now += 1.0
        stack.receive(now, data, addr)
        for out, _ in stack.datagrams_to_send():
            decode(out)  # the layer's own replies and the protected messages are CoAP
        stack.events()
        _within_bounds(layer)


def test_a_flood_of_forged_requests_keeps_memory_bounded():
    stack, layer = _stack("server")
    rng = random.Random(3)
    for i in range(3000):
        msg = Message(Type.CON, Code.POST, i & 0xFFFF, rng.randbytes(4))
        msg.add_option(Opt.OSCORE, b"\x09" + bytes((i & 0xFF,)))  # kid empty, a Partial IV
        msg.payload = rng.randbytes(rng.randrange(8, 400))
        stack.receive(float(i), encode(msg), ("10.9.0.1", 1000 + i))
        replies = stack.datagrams_to_send()
        assert [decode(r).code for r, _ in replies] == [Code.BAD_REQUEST]  # Decryption failed
        assert len(stack.events()) == 1
        _within_bounds(layer)
    assert layer.stats.failures == 3000
