"""CoapParams.max_options: a message with more options than that is rejected, and the
decoder stops at the bound instead of walking the rest (issue 39, item 7).

Work is asserted as what the decoder walked (CoapTooManyOptions.offset), never as time.
"""

import pytest
from coap_harness import CLIENT, SERVER, drain, endpoint, raw

from iotbench.proto.coap.codec import (
    BlockOption,
    CoapDecodeError,
    CoapTooManyOptions,
    Code,
    Message,
    Opt,
    Type,
    decode,
)
from iotbench.proto.coap.params import CoapParams

HEADER = 4 + 4  # fixed header and a 4-byte token


def many_options(count: int, type_: Type = Type.CON, mid: int = 0x1234) -> bytes:
    """A GET with `count` one-byte Uri-Path segments: two bytes an option, no payload."""
    head = bytes((0x40 | type_ << 4 | 4, Code.GET, mid >> 8, mid & 0xFF)) + b"tokn"
    first = bytes((Opt.URI_PATH << 4 | 1,)) + b"a"  # delta 11, length 1
    return head + first + b"\x01b" * (count - 1)  # delta 0: Uri-Path again


#: The datagram of the issue: 65,408 bytes, 32,700 options (75 ms of CPU before the bound).
HUGE = many_options(32_700)


def served(**params):
    server = endpoint(2, **params)
    calls = []
    server.add_resource("/a", lambda req, addr: calls.append(req) or "ok")
    return server, calls


def test_the_65_kB_datagram_of_32_700_options_gets_rst_after_64_options():
    assert len(HUGE) == 65_408
    server, calls = served()
    server.receive(0.0, HUGE, CLIENT)
    ((rst, addr),) = drain(server)
    # RFC 7252 4.2: a CON that cannot be parsed is rejected with RST.
    assert (rst.type, rst.code, rst.message_id, rst.token, addr) == (
        Type.RST,
        Code.EMPTY,
        0x1234,
        b"",
        CLIENT,
    )
    assert calls == []
    assert (server.stats.decode_errors, server.stats.too_many_options) == (1, 1)
    # The endpoint's decoder stopped at the bound (too_many_options: the error only
    # the bound raises). With that bound the decoder reads 64 options (2 bytes
    # each) and stops at the 65th: 136 of the 65,408 bytes. (The endpoint's own
    # call cannot be spied on: the endpoint is compiled, src/iotbench/compiled.py.)
    with pytest.raises(CoapTooManyOptions) as stopped:
        decode(HUGE, CoapParams().max_options)
    assert (stopped.value.limit, stopped.value.offset) == (64, HEADER + 64 * 2)


def test_an_rst_keeps_no_state_so_the_same_datagram_is_rejected_again():
    server, _ = served()
    for _ in range(2):
        server.receive(0.0, HUGE, CLIENT)
        ((rst, _),) = drain(server)
        assert rst.type == Type.RST
    assert server.stats.duplicates == 0 and server.stats.too_many_options == 2


def test_a_non_over_the_bound_is_silently_ignored():
    server, calls = served()
    server.receive(0.0, many_options(65, Type.NON), CLIENT)
    assert drain(server) == [] and calls == []
    assert server.stats.too_many_options == 1


def test_nothing_sent_to_a_group_is_answered_over_the_bound():
    server, _ = served()
    server.receive(0.0, many_options(65, Type.NON), CLIENT, multicast=True)
    server.receive(0.0, many_options(65, Type.CON, 0x1235), CLIENT, multicast=True)
    assert drain(server) == []
    assert server.stats.too_many_options == 2


def test_exactly_the_bound_is_served_one_more_is_not():
    server = endpoint(2, max_options=5)
    server.add_resource("/a/b/b/b/b", lambda req, addr: "ok")
    server.receive(0.0, many_options(5, mid=1), CLIENT)
    ((resp, _),) = drain(server)
    assert (resp.type, resp.code) == (Type.ACK, Code.CONTENT)
    server.receive(0.0, many_options(6, mid=2), CLIENT)
    ((rst, _),) = drain(server)
    assert rst.type == Type.RST and rst.message_id == 2


def test_a_request_with_many_legitimate_options_is_served():
    # 20 Uri-Path segments, Uri-Host, Observe, two ETags, four Uri-Query, Accept and
    # Block2: 30 options, with room to spare under the default 64.
    server = endpoint(2, block_size_bytes=64)
    path = "/" + "/".join(f"s{i}" for i in range(20))
    seen = []

    def handler(req, addr):
        seen.append(req)
        return "x" * 100  # two Block2 blocks of 64

    server.add_resource(path, handler, observable=True)
    req = Message.request(Type.CON, Code.GET, 0x0500, b"tk", path, query=["a=1", "b", "c", "d"])
    req.add_option(Opt.URI_HOST, "sensor.example")
    req.add_option(Opt.ETAG, b"\x01").add_option(Opt.ETAG, b"\x02")
    req.add_option(Opt.ACCEPT, 0)
    req.observe = 0
    req.block2 = BlockOption(0, False, 2)  # 64 bytes
    assert len(req.options) == 30
    server.receive(0.0, raw(req), CLIENT)
    ((resp, _),) = drain(server)
    assert (resp.type, resp.code) == (Type.ACK, Code.CONTENT)
    assert resp.block2 == BlockOption(0, True, 2) and resp.observe is not None
    assert seen[0].uri_query == ["a=1", "b", "c", "d"] and len(seen[0].path_segments) == 20
    assert server.observers(path) == 1 and server.stats.too_many_options == 0


def test_a_response_over_the_bound_is_rejected_as_a_client_too():
    client = endpoint(1, max_options=4)
    rid = client.request(0.0, SERVER, Code.GET, "/t", confirmable=False)
    ((req, _),) = drain(client)
    resp = Message(Type.CON, Code.CONTENT, 0x0900, req.token, payload=b"!")
    for _ in range(5):
        resp.add_option(Opt.LOCATION_PATH, "p")
    client.receive(0.1, raw(resp), SERVER)
    ((rst, _),) = drain(client)
    assert rst.type == Type.RST and rst.message_id == 0x0900
    assert client.events() == [] and rid in client.client_layer._requests  # still waiting


def test_the_codec_bound_is_off_unless_asked_and_stops_before_the_next_header():
    assert len(decode(HUGE).options) == 32_700  # tools reading captures see everything
    assert len(decode(HUGE, 32_700).options) == 32_700
    with pytest.raises(CoapTooManyOptions) as caught:
        decode(HUGE, 1)
    assert (caught.value.limit, caught.value.offset) == (1, HEADER + 2)
    assert isinstance(caught.value, CoapDecodeError)  # a stack that counts and drops sees one
    # The payload marker is not an option: the bound's options and a payload decode.
    msg = decode(many_options(3) + b"\xffpayload", 3)
    assert (len(msg.options), msg.payload) == (3, b"payload")


def test_max_options_is_validated():
    assert CoapParams().max_options == 64
    for bad in (0, -1, 1.5, None):
        with pytest.raises(ValueError, match="max_options"):
            CoapParams(max_options=bad)


def test_an_oscore_server_reads_no_more_of_the_datagram_than_its_endpoint(monkeypatch):
    """Behind OSCORE the layer decodes first: it stops at the same bound and hands the
    datagram on, which the endpoint rejects with an RST (issue 39, item 7)."""
    import random

    import iotbench.proto.oscore.layer as layer_module
    from iotbench.proto.coap.endpoint import CoapEndpoint
    from iotbench.proto.coap.secured import SecuredEndpoint
    from iotbench.proto.oscore.layer import OscoreLayer

    walked: list[int] = []

    def spy(data, max_options=None):
        try:
            return decode(data, max_options)
        except CoapTooManyOptions as exc:
            walked.append(exc.offset)
            raise

    monkeypatch.setattr(layer_module, "decode", spy)
    server = SecuredEndpoint(CoapEndpoint(random.Random(4)), OscoreLayer(random.Random(2)))
    server.receive(0.0, HUGE, CLIENT)
    ((reply, addr),) = server.datagrams_to_send()
    assert addr == CLIENT and decode(reply).type == Type.RST
    assert walked == [HEADER + 2 * 64]  # 64 options of 2 bytes, then it stopped
