"""Fuzzing receive(): random and mutated datagrams never raise out of the endpoint
and never make it emit malformed bytes."""

from __future__ import annotations

import random

from coap_harness import CLIENT, SERVER
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotbench.proto.coap.codec import Code, Message, Opt, Type, decode, encode
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.coap.params import CoapParams
from iotbench.proto.coap.resources import ResourceResponse

FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _server(params: CoapParams) -> CoapEndpoint:
    ep = CoapEndpoint(random.Random(7), params)
    ep.add_resource("/t", lambda r, a: b"21.5", observable=True, content_format=0)
    ep.add_resource("/slow", lambda r, a: ResourceResponse(payload=b"x", delay_s=3.0))
    ep.add_resource("/obs-con", lambda r, a: "v", observable=True, notify_confirmable=True)
    return ep


TOK_CON, TOK_NON, TOK_OBS = b"\x01\x02\x03\x04", b"\x05\x06", b"\x07"


def _client(params: CoapParams) -> CoapEndpoint:
    """A client with a CON, a NON and an observation outstanding towards SERVER.

    Tokens and the first Message ID are fixed so that corpus messages match them
    (NSTART may hold some back; they go out as others complete).
    """
    ep = CoapEndpoint(random.Random(8), params, first_message_id=0x1004)
    ep.request(0.0, SERVER, Code.GET, "/t", token=TOK_CON)
    ep.request(0.0, SERVER, Code.GET, "/t", confirmable=False, token=TOK_NON)
    ep.request(0.0, SERVER, Code.GET, "/t", observe=True, token=TOK_OBS)
    return ep


def _corpus() -> list[bytes]:
    """Valid datagrams of every kind, as both endpoints would see them."""
    tok = TOK_CON
    msgs = [
        Message.request(Type.CON, Code.GET, 0x1000, tok, "/t"),
        Message.request(Type.NON, Code.GET, 0x1001, tok, "/slow"),
        Message.request(Type.CON, Code.POST, 0x1002, tok, "/t", payload=b"abc"),
        Message.request(Type.CON, Code.GET, 0x1003, tok, "/.well-known/core", query=["rt=x*"]),
        Message(Type.ACK, Code.CONTENT, 0x1004, tok, [(Opt.CONTENT_FORMAT, b"")], b"ok"),
        Message(Type.CON, Code.CONTENT, 0x1005, tok, [(Opt.OBSERVE, b"\x07")], b"n"),
        Message(Type.NON, Code.NOT_FOUND, 0x1006, tok),
        Message.empty(Type.ACK, 0x1007),
        Message.empty(Type.RST, 0x1008),
        Message.empty(Type.CON, 0x1009),
        Message(Type.ACK, Code.CONTENT, 0x1005, TOK_OBS, [(Opt.OBSERVE, b"\x02")], b"r"),
        Message(Type.NON, Code.CONTENT, 0x2000, TOK_NON, [], b"non"),
        Message(Type.NON, Code.CONTENT, 0x2001, TOK_OBS, [(Opt.OBSERVE, b"\x09")], b"n"),
        Message(Type.CON, Code.CONTENT, 0x2002, TOK_OBS, [(Opt.OBSERVE, b"\x01")], b"n"),
        Message(Type.CON, Code.CHANGED, 0x2003, TOK_CON, [], b"sep"),
    ]
    reg = Message.request(Type.CON, Code.GET, 0x100A, tok, "/obs-con")
    reg.observe = 0
    msgs.append(reg)
    return [encode(m) for m in msgs]


CORPUS = _corpus()


def _mutate(data: bytes, ops: list[tuple[int, int, int]]) -> bytes:
    b = bytearray(data)
    for kind, pos, val in ops:
        if not b:
            b.append(val)
            continue
        i = pos % (len(b) + 1)
        if kind == 0 and i < len(b):
            b[i] ^= val or 1  # flip bits
        elif kind == 1:
            b.insert(i, val)
        elif kind == 2 and i < len(b):
            del b[i]
        elif kind == 3:
            del b[i:]  # truncate
        elif kind == 4 and i < len(b):
            b[i] = val
    return bytes(b)


def _check_output(ep: CoapEndpoint) -> None:
    for data, addr in ep.datagrams_to_send():
        msg = decode(data)  # raises if malformed
        assert encode(msg) == data  # and canonical
        assert addr in (CLIENT, SERVER)
    ep.events()
    assert ep.stats.internal_errors == 0


def _feed(datagrams: list[bytes], times: list[float], params: CoapParams) -> None:
    server, client = _server(params), _client(params)
    _check_output(server)
    _check_output(client)
    now = 0.0
    for data, dt in zip(datagrams, times):
        now += dt
        server.receive(now, data, CLIENT)
        client.receive(now, data, SERVER)
        for ep in (server, client):
            t = ep.next_timer()
            if t is not None and t <= now:
                ep.handle_timer(now)
            _check_output(ep)
        server.notify(now, "/obs-con")
        _check_output(server)


_PARAMS = st.sampled_from(
    [
        CoapParams(),
        CoapParams(rto="cocoa", separate_response_after_s=0.5, token_length=0),
        CoapParams(nstart=3, token_length=1, separate_response_after_s=0.0),
    ]
)


@FUZZ
@given(
    st.lists(st.binary(max_size=64), min_size=1, max_size=12),
    st.lists(st.floats(0.0, 50.0), min_size=12, max_size=12),
    _PARAMS,
)
def test_random_bytes_never_raise_or_produce_bad_output(datagrams, times, params):
    _feed(datagrams, times, params)


_OPS = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 200), st.integers(0, 255)), max_size=6)


@FUZZ
@given(
    st.lists(st.tuples(st.sampled_from(CORPUS), _OPS), min_size=1, max_size=12),
    st.lists(st.floats(0.0, 30.0), min_size=12, max_size=12),
    _PARAMS,
)
def test_mutated_datagrams_never_raise_or_produce_bad_output(items, times, params):
    _feed([_mutate(d, ops) for d, ops in items], times, params)


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.sampled_from([Type.CON, Type.NON, Type.ACK, Type.RST]),
            st.integers(0, 255),
            st.integers(0, 0xFFFF),
            st.binary(max_size=8),
            st.lists(st.tuples(st.integers(0, 300), st.binary(max_size=20)), max_size=4),
            st.binary(max_size=16),
        ),
        min_size=1,
        max_size=10,
    ),
    _PARAMS,
)
def test_well_formed_but_arbitrary_messages(specs, params):
    datagrams = []
    for t, code, mid, token, options, payload in specs:
        if code == 0:
            token, options, payload = b"", [], b""
        datagrams.append(encode(Message(t, code, mid, token, options, payload)))
    _feed(datagrams, [0.7] * len(datagrams), params)
