"""RFC 7252 request/response behaviour: piggybacked and separate responses,
duplicates, RST, token matching, critical options, /.well-known/core."""

import pytest
from coap_harness import CLIENT, SERVER, Wire, drain, drain_raw, endpoint, raw

from iotbench.proto.coap.codec import Code, Message, Opt, Type, decode
from iotbench.proto.coap.events import RequestFailed, ResponseReceived
from iotbench.proto.coap.resources import ResourceResponse


def _get(mid=0x0101, token=b"\xaa", path="/t", type_=Type.CON, code=Code.GET):
    return Message.request(type_, code, mid, token, path)


def _server(**params):
    server = endpoint(2, **params)
    calls = []

    def handler(req, addr):
        calls.append((req.message_id, addr))
        return "21.5"

    server.add_resource("/t", handler, content_format=0)
    return server, calls


# ---- piggybacked -------------------------------------------------------------------


def test_piggybacked_response_matches_mid_and_token():
    server, calls = _server()
    server.receive(1.0, raw(_get(0xBEEF, b"\x01\x02")), CLIENT)
    ((resp, addr),) = drain(server)
    assert addr == CLIENT
    assert (resp.type, resp.code, resp.message_id, resp.token) == (
        Type.ACK,
        Code.CONTENT,
        0xBEEF,
        b"\x01\x02",
    )
    assert resp.payload == b"21.5" and resp.content_format == 0
    assert calls == [(0xBEEF, CLIENT)]


def test_client_server_round_trip_over_the_wire():
    client, (server, _) = endpoint(1), _server()
    wire = Wire(client, server, delay_s=0.02)
    rid = client.request(0.0, SERVER, Code.GET, "/t")
    wire.run(1.0)
    (ev,) = client.events()
    assert ev == ResponseReceived(rid, ev.response, pytest.approx(0.04), 1)
    assert ev.response.payload == b"21.5"
    assert len(wire.log) == 2  # CON + piggybacked ACK, nothing else
    assert client.next_timer() is None and server.next_timer() is None


def test_non_request_gets_non_response_matched_by_token():
    client, (server, _) = endpoint(1), _server()
    wire = Wire(client, server)
    rid = client.request(0.0, SERVER, Code.GET, "/t", confirmable=False)
    wire.run(1.0)
    (_, _, _, req), (_, _, _, resp) = wire.log
    assert req.type == resp.type == Type.NON
    assert resp.token == req.token and resp.message_id != req.message_id
    (ev,) = client.events()
    assert ev.request_id == rid and ev.transmissions == 1


def test_duplicate_con_answered_from_cache_without_rerunning_handler():
    server, calls = _server()
    req = raw(_get(0x0042))
    server.receive(0.0, req, CLIENT)
    first = drain_raw(server)
    for t in (2.5, 7.5, 15.0):
        server.receive(t, req, CLIENT)
        assert drain_raw(server) == first
    assert len(calls) == 1
    assert server.stats.duplicates == 3


# ---- separate responses ---------------------------------------------------------------


def _slow_server(delay=5.0, after=1.0):
    server = endpoint(2, separate_response_after_s=after)
    calls = []

    def handler(req, addr):
        calls.append(req.message_id)
        return ResourceResponse(payload=b"late", delay_s=delay)

    server.add_resource("/slow", handler)
    return server, calls


def test_separate_response_empty_ack_then_con_response():
    client = endpoint(1)
    server, calls = _slow_server()
    wire = Wire(client, server, delay_s=0.01)
    rid = client.request(0.0, SERVER, Code.GET, "/slow")
    wire.run(20.0)
    by_server = wire.sent_by(SERVER)
    by_client = wire.sent_by(CLIENT)
    (t_ack, ack), (t_resp, resp) = by_server
    req = by_client[0][1]
    # empty ACK after separate_response_after_s, matched by MID
    assert ack.type == Type.ACK and ack.code == 0 and ack.message_id == req.message_id
    assert t_ack == pytest.approx(1.01)
    # the response in its own CON, new MID, same token, when the handler is done
    assert resp.type == Type.CON and resp.code == Code.CONTENT
    assert resp.token == req.token and resp.message_id != req.message_id
    assert t_resp == pytest.approx(5.01)
    # the client did not retransmit (the ACK stopped it) and acknowledged the response
    assert len(by_client) == 2
    assert by_client[1][1].type == Type.ACK and by_client[1][1].message_id == resp.message_id
    (ev,) = client.events()
    assert ev.request_id == rid and ev.response.payload == b"late"
    assert ev.rtt_s == pytest.approx(5.02)
    assert len(calls) == 1
    assert client.next_timer() is None and server.next_timer() is None


def test_separate_response_is_retransmitted_until_acknowledged_and_deduplicated():
    client = endpoint(1)
    server, _ = _slow_server()
    lost = []

    def drop_first_client_ack_of_response(t, src, dst, msg):
        if src == CLIENT and msg.type == Type.ACK and not lost:
            lost.append(t)
            return True
        return False

    wire = Wire(client, server, drop=drop_first_client_ack_of_response)
    client.request(0.0, SERVER, Code.GET, "/slow")
    wire.run(30.0)
    responses = [m for _, m in wire.sent_by(SERVER) if m.code == Code.CONTENT]
    assert len(responses) == 2 and responses[0].message_id == responses[1].message_id
    acks = [m for _, m in wire.sent_by(CLIENT) if m.type == Type.ACK]
    assert len(acks) == 2  # the duplicate CON response got the same ACK again
    assert len(client.events()) == 1  # delivered once
    assert client.stats.duplicates == 1
    assert server.next_timer() is None


def test_duplicate_request_during_separate_processing_gets_the_empty_ack_again():
    server, calls = _slow_server(delay=10.0, after=0.5)
    req = raw(_get(0x0777, path="/slow"))
    server.receive(0.0, req, CLIENT)
    server.handle_timer(0.5)
    ((ack, _),) = drain(server)
    assert ack.code == 0 and ack.type == Type.ACK
    server.receive(2.5, req, CLIENT)
    ((again, _),) = drain(server)
    assert again == ack and len(calls) == 1


def test_slow_handler_without_separate_setting_is_piggybacked_when_ready():
    server, _calls = _slow_server(delay=1.5, after=None)
    req = raw(_get(0x0778, path="/slow"))
    server.receive(0.0, req, CLIENT)
    assert drain(server) == []
    server.receive(1.0, req, CLIENT)  # retransmission while processing: nothing to resend yet
    assert drain(server) == []
    server.handle_timer(1.5)
    ((resp, _),) = drain(server)
    assert resp.type == Type.ACK and resp.message_id == 0x0778 and resp.payload == b"late"


def test_separate_response_before_ack_stops_retransmission():
    # The empty ACK was lost; the separate CON response implies the request arrived.
    client = endpoint(1)
    client.request(0.0, SERVER, Code.GET, "/slow")
    ((req, _),) = drain(client)
    resp = Message(Type.CON, Code.CONTENT, 0x5000, req.token, payload=b"x")
    client.receive(1.0, raw(resp), SERVER)
    ((ack, _),) = drain(client)
    assert (ack.type, ack.code, ack.message_id) == (Type.ACK, 0, 0x5000)
    assert [type(e) for e in client.events()] == [ResponseReceived]
    assert client.next_timer() is None


def test_separate_response_wait_times_out():
    client = endpoint(1, separate_response_timeout_s=30.0)
    rid = client.request(0.0, SERVER, Code.GET, "/slow")
    ((req, _),) = drain(client)
    client.receive(0.5, raw(Message.empty(Type.ACK, req.message_id)), SERVER)
    assert client.next_timer() == pytest.approx(30.5)
    client.handle_timer(30.5)
    assert client.events() == [RequestFailed(rid, "timeout")]
    assert drain(client) == []  # no retransmission after the ACK


# ---- RST, ping, unexpected ----------------------------------------------------------------


def test_rst_cancels_con_request():
    client = endpoint(1)
    rid = client.request(0.0, SERVER, Code.GET, "/t")
    ((req, _),) = drain(client)
    client.receive(0.1, raw(Message.empty(Type.RST, req.message_id)), SERVER)
    assert client.events() == [RequestFailed(rid, "reset")]
    assert client.next_timer() is None
    assert client.stats.resets_received == 1


def test_rst_cancels_non_request():
    client = endpoint(1)
    rid = client.request(0.0, SERVER, Code.GET, "/t", confirmable=False)
    ((req, _),) = drain(client)
    client.receive(0.1, raw(Message.empty(Type.RST, req.message_id)), SERVER)
    assert client.events() == [RequestFailed(rid, "reset")]
    assert client.next_timer() is None


def test_rst_from_another_address_is_ignored():
    client = endpoint(1)
    client.request(0.0, SERVER, Code.GET, "/t")
    ((req, _),) = drain(client)
    client.receive(0.1, raw(Message.empty(Type.RST, req.message_id)), ("10.9.9.9", 5683))
    assert client.events() == [] and client.next_timer() is not None
    assert client.stats.unexpected == 1


def test_empty_con_ping_is_answered_with_rst():
    ep = endpoint(1)
    ep.receive(0.0, raw(Message.empty(Type.CON, 0x7777)), CLIENT)
    ((rst, addr),) = drain(ep)
    assert (rst.type, rst.code, rst.message_id, addr) == (Type.RST, 0, 0x7777, CLIENT)


def test_unexpected_con_and_non_responses_get_rst():
    ep = endpoint(1)
    for t in (Type.CON, Type.NON):
        ep.receive(0.0, raw(Message(t, Code.CONTENT, 0x0100 + t, b"zz", payload=b"?")), SERVER)
        ((rst, _),) = drain(ep)
        assert rst.type == Type.RST and rst.message_id == 0x0100 + t
    assert ep.events() == []


def test_unexpected_ack_and_rst_are_silently_ignored():
    ep = endpoint(1)
    ep.receive(0.0, raw(Message.empty(Type.ACK, 1)), SERVER)
    ep.receive(0.0, raw(Message.empty(Type.RST, 2)), SERVER)
    ep.receive(0.0, raw(Message(Type.ACK, Code.CONTENT, 3, b"t")), SERVER)
    assert drain(ep) == [] and ep.events() == []
    assert ep.stats.unexpected == 3


def test_reserved_code_class_con_is_rejected():
    ep = endpoint(1)
    ep.receive(0.0, raw(Message(Type.CON, (7 << 5) | 1, 0x0A0A, b"")), CLIENT)
    ((rst, _),) = drain(ep)
    assert rst.type == Type.RST and rst.message_id == 0x0A0A
    ep.receive(0.0, raw(Message(Type.NON, (1 << 5) | 1, 0x0A0B, b"")), CLIENT)
    assert drain(ep) == []


def test_malformed_con_with_readable_header_is_rejected_other_garbage_dropped():
    ep = endpoint(1)
    ep.receive(0.0, bytes([0x49, 0x01, 0x12, 0x34]) + b"\0" * 9, CLIENT)  # TKL 9
    ((rst, _),) = drain(ep)
    assert rst.type == Type.RST and rst.message_id == 0x1234
    ep.receive(0.0, bytes([0x59, 0x01, 0x12, 0x35]), CLIENT)  # NON, TKL 9
    ep.receive(0.0, b"\x00\x01", CLIENT)
    ep.receive(0.0, b"", CLIENT)
    assert drain(ep) == []
    assert ep.stats.decode_errors == 4


# ---- token matching --------------------------------------------------------------------


def test_response_from_wrong_address_is_not_accepted():
    client = endpoint(1)
    client.request(0.0, SERVER, Code.GET, "/t", confirmable=False)
    ((req, _),) = drain(client)
    resp = Message(Type.NON, Code.CONTENT, 0x2222, req.token)
    client.receive(0.1, raw(resp), ("10.6.6.6", 5683))
    ((rst, _),) = drain(client)
    assert rst.type == Type.RST
    assert client.events() == []
    client.receive(0.2, raw(resp), SERVER)
    assert [type(e) for e in client.events()] == [ResponseReceived]


def test_piggybacked_response_with_wrong_token_is_ignored():
    client = endpoint(1)
    client.request(0.0, SERVER, Code.GET, "/t")
    ((req, _),) = drain(client)
    bad = Message(Type.ACK, Code.CONTENT, req.message_id, b"nottoken")
    client.receive(0.1, raw(bad), SERVER)
    assert client.events() == [] and drain(client) == []
    t = client.next_timer()
    client.handle_timer(t)
    assert len(drain(client)) == 1  # still retransmitting


def test_token_length_is_configurable_including_zero():
    for n in (0, 1, 2, 8):
        ep = endpoint(1, token_length=n)
        ep.request(0.0, SERVER, Code.GET, "/t")
        ((req, _),) = drain(ep)
        assert len(req.token) == n


def test_zero_length_tokens_serialise_requests_to_one_peer():
    ep = endpoint(1, token_length=0, nstart=4)
    ep.request(0.0, SERVER, Code.GET, "/a")
    ep.request(0.0, SERVER, Code.GET, "/b")
    ((req, _),) = drain(ep)
    ep.receive(0.1, raw(Message(Type.ACK, Code.CONTENT, req.message_id, b"")), SERVER)
    assert [m.uri_path for m, _ in drain(ep)] == ["/b"]


def test_explicit_token_is_used():
    ep = endpoint(1)
    ep.request(0.0, SERVER, Code.GET, "/t", token=b"\xde\xad")
    ((req, _),) = drain(ep)
    assert req.token == b"\xde\xad"


def test_message_ids_start_random_and_increment():
    a, b = endpoint(1), endpoint(2)
    a.request(0.0, SERVER, Code.GET, "/t", confirmable=False)
    a.request(0.0, ("x", 1), Code.GET, "/t", confirmable=False)
    b.request(0.0, SERVER, Code.GET, "/t", confirmable=False)
    (m1, _), (m2, _) = drain(a)
    ((m3, _),) = drain(b)
    assert m2.message_id == (m1.message_id + 1) & 0xFFFF
    assert m1.message_id != m3.message_id
    import random

    from iotbench.proto.coap.endpoint import CoapEndpoint

    c = CoapEndpoint(random.Random(0), first_message_id=0xFFFF)
    c.request(0.0, SERVER, Code.GET, "/t", confirmable=False)
    c.request(0.0, ("x", 1), Code.GET, "/t", confirmable=False)
    assert [m.message_id for m, _ in drain(c)] == [0xFFFF, 0]


# ---- options and server errors ------------------------------------------------------


def test_unrecognized_critical_option_in_con_request_gives_4_02():
    server, calls = _server()
    req = _get(0x0300).add_option(2049, b"x")  # odd = critical, unregistered
    server.receive(0.0, raw(req), CLIENT)
    ((resp, _),) = drain(server)
    assert (resp.type, resp.code, resp.message_id) == (Type.ACK, Code.BAD_OPTION, 0x0300)
    assert calls == []


def test_unrecognized_critical_option_in_non_request_is_rejected_with_rst():
    server, calls = _server()
    req = _get(0x0301, type_=Type.NON).add_option(Opt.Q_BLOCK1, 0)  # Q-Block1: not implemented
    server.receive(0.0, raw(req), CLIENT)
    ((rst, _),) = drain(server)
    assert rst.type == Type.RST and rst.message_id == 0x0301
    assert calls == []


def test_unrecognized_elective_option_is_ignored():
    server, calls = _server()
    server.receive(0.0, raw(_get(0x0302).add_option(2048, b"x")), CLIENT)
    ((resp, _),) = drain(server)
    assert resp.code == Code.CONTENT and len(calls) == 1


def test_invalid_critical_option_value_gives_4_02():
    server, calls = _server()
    bad_path = Message(Type.CON, Code.GET, 0x0303, b"", [(Opt.URI_PATH, b"\xff\xfe")])
    server.receive(0.0, raw(bad_path), CLIENT)
    ((resp, _),) = drain(server)
    assert resp.code == Code.BAD_OPTION
    two_ports = _get(0x0304).add_option(Opt.URI_PORT, 1).add_option(Opt.URI_PORT, 2)
    server.receive(0.0, raw(two_ports), CLIENT)
    ((resp, _),) = drain(server)
    assert resp.code == Code.BAD_OPTION  # 5.4.5: repeated non-repeatable critical option
    assert calls == []


def test_not_found_method_not_allowed_internal_error_proxying():
    server = endpoint(2, strict=False)  # on real sockets, a broken handler is a 5.00
    server.add_resource("/ro", lambda r, a: b"x", methods=[Code.GET])

    def broken(req, addr):
        raise RuntimeError("boom")

    server.add_resource("/broken", broken)
    cases = [
        (_get(1, path="/nope"), Code.NOT_FOUND),
        (_get(2, path="/ro", code=Code.PUT), Code.METHOD_NOT_ALLOWED),
        (_get(3, path="/broken"), Code.INTERNAL_SERVER_ERROR),
        (_get(4, path="/ro").add_option(Opt.PROXY_URI, "coap://h/x"), Code.PROXYING_NOT_SUPPORTED),
    ]
    for req, code in cases:
        server.receive(0.0, raw(req), CLIENT)
        ((resp, _),) = drain(server)
        assert resp.code == code and resp.message_id == req.message_id
    assert server.stats.handler_errors == 1
    # In a simulation (strict, the default) the handler's exception is ours: it is raised.
    strict = endpoint(2)
    strict.add_resource("/broken", broken)
    with pytest.raises(RuntimeError, match="boom"):
        strict.receive(0.0, raw(_get(3, path="/broken")), CLIENT)
    assert strict.stats.handler_errors == 1


def test_handler_returning_garbage_gives_5_00():
    server = endpoint(2, strict=False)
    server.add_resource("/a", lambda r, a: 42)
    server.add_resource("/b", lambda r, a: ResourceResponse(code=Code.GET))
    server.add_resource("/c", lambda r, a: ResourceResponse(options=[(70000, b"")]))
    for i, p in enumerate(("/a", "/b", "/c")):
        server.receive(0.0, raw(_get(10 + i, path=p)), CLIENT)
        ((resp, _),) = drain(server)
        assert resp.code == Code.INTERNAL_SERVER_ERROR
    assert server.stats.handler_errors == 3


def test_response_with_unrecognized_critical_option_is_rejected():
    client = endpoint(1)
    client.request(0.0, SERVER, Code.GET, "/t")
    ((req, _),) = drain(client)
    piggy = Message(Type.ACK, Code.CONTENT, req.message_id, req.token).add_option(9999, b"")
    client.receive(0.1, raw(piggy), SERVER)
    assert drain(client) == [] and client.events() == []  # ACK rejected = ignored
    sep = Message(Type.CON, Code.CONTENT, 0x6000, req.token).add_option(9999, b"")
    client.receive(0.2, raw(sep), SERVER)
    ((rst, _),) = drain(client)
    assert rst.type == Type.RST and rst.message_id == 0x6000
    assert client.events() == []


def test_request_options_and_query_reach_the_server():
    client, server = endpoint(1), endpoint(2)
    seen = []
    server.add_resource("/q", lambda r, a: seen.append(r) or b"")
    wire = Wire(client, server)
    client.request(
        0.0,
        SERVER,
        Code.POST,
        "/q",
        payload=b"body",
        query=["a=1", "b"],
        options=[(Opt.CONTENT_FORMAT, 0), (Opt.ACCEPT, 0)],
    )
    wire.run(1.0)
    (req,) = seen
    assert req.uri_query == ["a=1", "b"] and req.payload == b"body"
    assert req.content_format == 0 and req.get_uint(Opt.ACCEPT) == 0
    assert req.code == Code.POST


def test_request_argument_validation():
    ep = endpoint(1)
    with pytest.raises(ValueError):
        ep.request(0.0, SERVER, Code.CONTENT, "/t")
    with pytest.raises(ValueError):
        ep.request(0.0, SERVER, Code.GET, "/t", token=b"123456789")
    with pytest.raises(ValueError):
        ep.request(0.0, SERVER, Code.GET, "/t", options=[(70000, b"")])


def test_cancel_forgets_request_and_later_response_is_reset():
    client = endpoint(1)
    rid = client.request(0.0, SERVER, Code.GET, "/t")
    queued = client.request(0.0, SERVER, Code.GET, "/u")
    ((req, _),) = drain(client)
    assert client.cancel(0.1, queued)
    assert client.cancel(0.1, rid)
    assert client.next_timer() is None and drain(client) == []
    client.receive(0.2, raw(Message(Type.CON, Code.CONTENT, 0x9, req.token)), SERVER)
    ((rst, _),) = drain(client)
    assert rst.type == Type.RST and client.events() == []
    assert not client.cancel(0.3, rid)


# ---- /.well-known/core --------------------------------------------------------------


def test_well_known_core_lists_resources_in_link_format():
    server = endpoint(2)
    server.add_resource(
        "/sensors/temp",
        lambda r, a: "1",
        observable=True,
        content_format=0,
        attributes={"rt": "temperature-c", "if": "sensor"},
    )
    server.add_resource("/led", lambda r, a: b"", methods=[Code.PUT])
    server.receive(0.0, raw(_get(1, path="/.well-known/core")), CLIENT)
    ((resp, _),) = drain(server)
    assert resp.code == Code.CONTENT and resp.content_format == 40
    assert resp.payload == (b'</sensors/temp>;ct=0;rt="temperature-c";if="sensor";obs,</led>')


def test_well_known_core_filtering_rfc6690_4_1():
    server = endpoint(2)
    server.add_resource("/a", lambda r, a: b"", attributes={"rt": "temp-c hum"})
    server.add_resource("/b", lambda r, a: b"", attributes={"rt": "light"})
    server.add_resource("/c", lambda r, a: b"", observable=True)
    for query, expected in [
        ("rt=temp*", b'</a>;rt="temp-c hum"'),
        ("rt=hum", b'</a>;rt="temp-c hum"'),
        ("href=/b", b'</b>;rt="light"'),
        ("obs", b"</c>;obs"),
        ("rt=none", b""),
    ]:
        req = _get(5, path="/.well-known/core")
        req.uri_query = [query]
        server.receive(0.0, raw(req), ("p", hash(query)))
        ((resp, _),) = drain(server)
        assert resp.payload == expected, query


def test_well_known_core_only_allows_get():
    server = endpoint(2)
    server.receive(0.0, raw(_get(1, path="/.well-known/core", code=Code.POST)), CLIENT)
    ((resp, _),) = drain(server)
    assert resp.code == Code.METHOD_NOT_ALLOWED


def test_emitted_bytes_decode_back_to_the_same_bytes():
    server, _ = _server()
    server.receive(0.0, raw(_get(1)), CLIENT)
    for data, _ in drain_raw(server):
        assert decode(data).payload == b"21.5"


def test_ack_carrying_a_request_code_is_a_format_error():
    client = endpoint(1)
    client.request(0.0, SERVER, Code.GET, "/t")
    ((req, _),) = drain(client)
    client.receive(0.1, raw(Message(Type.ACK, Code.GET, req.message_id, req.token)), SERVER)
    assert drain(client) == [] and client.events() == []
    assert client.stats.format_errors == 1
    assert client.next_timer() is not None  # still waiting for a real ACK


def test_piggybacked_response_to_our_separate_response_is_ignored():
    server, _ = _slow_server(delay=2.0, after=0.5)
    server.receive(0.0, raw(_get(0x0900, path="/slow")), CLIENT)
    server.handle_timer(0.5)
    server.handle_timer(2.0)
    (_ack, _), (resp, _) = drain(server)
    server.receive(2.1, raw(Message(Type.ACK, Code.CONTENT, resp.message_id, b"")), CLIENT)
    assert server.stats.unexpected == 1
    assert server.next_timer() is not None  # the separate response still awaits its ACK


def test_request_with_busy_explicit_token_waits_for_it():
    client = endpoint(1, nstart=4)
    first = client.request(0.0, SERVER, Code.GET, "/a", token=b"T")
    client.request(0.0, SERVER, Code.GET, "/b", token=b"T")
    ((req, _),) = drain(client)
    assert req.uri_path == "/a"
    client.receive(0.1, raw(Message(Type.ACK, Code.CONTENT, req.message_id, b"T")), SERVER)
    (ev,) = client.events()
    assert ev.request_id == first
    ((req2, _),) = drain(client)
    assert req2.uri_path == "/b" and req2.token == b"T"


def test_next_event_pops_in_order():
    client = endpoint(1, nstart=2)
    a = client.request(0.0, SERVER, Code.GET, "/a")
    b = client.request(0.0, SERVER, Code.GET, "/b")
    for m, _ in drain(client):
        client.receive(0.1, raw(Message.empty(Type.RST, m.message_id)), SERVER)
    assert client.next_event() == RequestFailed(a, "reset")
    assert client.next_event() == RequestFailed(b, "reset")
    assert client.next_event() is None


def test_first_message_id_is_validated():
    import random

    from iotbench.proto.coap.endpoint import CoapEndpoint

    with pytest.raises(ValueError, match="first_message_id"):
        CoapEndpoint(random.Random(1), first_message_id=0x10000)


def test_handler_may_return_a_response_tuple():
    server = endpoint(2, strict=False)  # /d's bad payload is a 5.00 on real sockets
    server.add_resource("/a", lambda r, a: (Code.CONTENT, b"49.5 V", 0))
    server.add_resource("/b", lambda r, a: (Code.CHANGED, "ok"))
    server.add_resource("/c", lambda r, a: (Code.CONTENT, b"x", 50, [(Opt.MAX_AGE, 30)]))
    server.add_resource("/d", lambda r, a: (Code.CONTENT, 12))  # bad payload type
    got = []
    for i, p in enumerate(("/a", "/b", "/c", "/d")):
        server.receive(0.0, raw(_get(20 + i, path=p)), CLIENT)
        ((resp, _),) = drain(server)
        got.append((resp.code, resp.payload, resp.content_format, resp.get_uint(Opt.MAX_AGE)))
    assert got == [
        (Code.CONTENT, b"49.5 V", 0, None),
        (Code.CHANGED, b"ok", None, None),
        (Code.CONTENT, b"x", 50, 30),
        (Code.INTERNAL_SERVER_ERROR, b"", None, None),
    ]


def test_token_length_constructor_shorthand():
    import random

    from iotbench.proto.coap.endpoint import CoapEndpoint, RequestFailed, ResponseReceived
    from iotbench.proto.coap.params import CoapParams

    ep = CoapEndpoint(random.Random(1), CoapParams(), token_length=1)
    assert ep.params.token_length == 1
    ep.request(0.0, SERVER, Code.GET, "/t")
    ((req, _),) = drain(ep)
    assert len(req.token) == 1
    with pytest.raises(ValueError, match="token_length"):
        CoapEndpoint(random.Random(1), token_length=9)
    assert RequestFailed and ResponseReceived


# ---- floods ------------------------------------------------------------------------


def test_flood_of_distinct_message_ids_keeps_dedup_memory_bounded():
    server, calls = _server(dedup_capacity=100)
    for i in range(1000):
        peer = ("10.9.0.1", 20000 + i % 7)
        server.receive(1.0 + i * 1e-3, raw(_get(i, b"\x01")), peer)
    assert len(calls) == 1000  # every new message was handled
    assert len(server.message_layer._seen) == 100
    assert len(server.message_layer._seen_con) + len(server.message_layer._seen_non) == 100
    assert len(drain(server)) == 1000
    # The most recent messages are still deduplicated: a repeat is answered from the cache.
    server.receive(2.0, raw(_get(999, b"\x01")), ("10.9.0.1", 20000 + 999 % 7))
    ((resp, _),) = drain(server)
    assert resp.message_id == 999 and len(calls) == 1000
