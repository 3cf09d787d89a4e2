"""Deferred answers, group communication (RFC 7252 8, RFC 7390) and the /mc resource."""

from __future__ import annotations

import ipaddress

import pytest
from coap_harness import CLIENT, SERVER, Wire, drain, endpoint, run_timers

from iotbench.proto.coap.codec import Code, Message, Type, encode
from iotbench.proto.coap.endpoint import (
    Deferred,
    GroupRequestDone,
    GroupResponse,
    RequestFailed,
    ResourceResponse,
    ResponseReceived,
)
from iotbench.proto.coap.group import leisure_lower_bound_s, serve_membership
from iotbench.proto.coap.options import Opt

GROUP = ("ff1e::89:1", 5683)


def deferring_server(**params):
    server = endpoint(2, **params)
    pending: list[Deferred] = []
    calls = []

    def handler(req, addr):
        calls.append(req.message_id)
        d = Deferred()
        pending.append(d)
        return d

    server.add_resource("/e/x", handler)
    return server, pending, calls


# ---- deferred answers -----------------------------------------------------------------


def test_a_deferred_answer_ready_in_time_rides_on_the_ack():
    server, pending, _ = deferring_server(separate_response_after_s=1.0)
    client = endpoint(1)
    wire = Wire(client, server, delay_s=0.01)
    rid = client.request(0.0, SERVER, Code.GET, "/e/x")
    wire.run(0.5)
    (d,) = pending
    assert d.request.code == Code.GET and d.addr == CLIENT
    server.respond(wire.at(0.5), d, ResourceResponse(Code.CONTENT, b"21.5"))
    wire.run(3.0)
    ((_, ack),) = wire.sent_by(SERVER)
    assert ack.type == Type.ACK and ack.code == Code.CONTENT and ack.payload == b"21.5"
    (ev,) = client.events()
    assert isinstance(ev, ResponseReceived) and ev.request_id == rid


def test_a_late_deferred_answer_is_a_separate_response_after_an_empty_ack():
    server, pending, calls = deferring_server()  # no separate_response_after_s: ACK at once
    client = endpoint(1)
    wire = Wire(client, server, delay_s=0.01)
    client.request(0.0, SERVER, Code.GET, "/e/x")
    wire.run(10.0)
    ((t_ack, ack),) = wire.sent_by(SERVER)
    assert ack.type == Type.ACK and ack.code == 0 and t_ack == pytest.approx(0.01)
    server.respond(wire.at(10.0), pending[0], (Code.CONTENT, b"late"))
    wire.run(12.0)
    (t, resp) = wire.sent_by(SERVER)[1]
    assert resp.type == Type.CON and resp.payload == b"late" and t == pytest.approx(10.0)
    assert [type(e) for e in client.events()] == [ResponseReceived]
    assert len(calls) == 1  # the client did not retransmit: the handler ran once


def test_a_duplicate_of_a_deferred_request_never_reaches_the_handler_again():
    server, pending, calls = deferring_server(separate_response_after_s=5.0)
    request = Message.request(Type.CON, Code.GET, 7, b"tk", "/e/x")
    server.receive(0.0, encode(request), CLIENT)
    server.receive(2.0, encode(request), CLIENT)  # the client's retransmission
    assert drain(server) == [] and len(calls) == 1  # nothing to repeat yet
    ((_, ack),) = run_timers(server, 5.0)  # the empty ACK
    server.receive(6.0, encode(request), CLIENT)
    ((ack_again, _),) = drain(server)
    assert ack.code == 0 and ack_again.code == 0 and len(calls) == 1


def test_a_non_request_gets_a_non_deferred_answer_and_errors_are_clear():
    server, pending, _ = deferring_server()
    server.receive(0.0, encode(Message.request(Type.NON, Code.GET, 9, b"a", "/e/x")), CLIENT)
    assert drain(server) == []
    server.respond(1.0, pending[0], "text")
    ((resp, addr),) = drain(server)
    assert resp.type == Type.NON and resp.payload == b"text" and addr == CLIENT
    with pytest.raises(ValueError, match="answered already"):
        server.respond(1.0, pending[0], "again")
    with pytest.raises(ValueError, match="not returned by a handler of this endpoint"):
        server.respond(1.0, Deferred(), "x")
    other, others, _ = deferring_server()
    other.receive(0.0, encode(Message.request(Type.NON, Code.GET, 3, b"b", "/e/x")), CLIENT)
    with pytest.raises(ValueError, match="not returned by a handler of this endpoint"):
        server.respond(1.0, others[0], "x")
    with pytest.raises(ValueError, match="must return"):
        other.respond(1.0, others[0], 3.5)
    other.respond(1.0, others[0], ResourceResponse(Code.CONTENT, b"ok"))  # still answerable


def test_a_large_deferred_answer_goes_block_wise():
    server, pending, _ = deferring_server(block_size_bytes=64)
    client = endpoint(1)
    wire = Wire(client, server, delay_s=0.01)
    client.request(0.0, SERVER, Code.GET, "/e/x")
    wire.run(1.0)
    server.respond(wire.at(1.0), pending[0], bytes(range(200)))
    wire.run(5.0)
    (ev,) = client.events()
    assert ev.response.payload == bytes(range(200))
    blocks = [m for _, m in wire.sent_by(SERVER) if m.block2 is not None]
    assert [b.block2.num for b in blocks] == [0, 1, 2, 3]


def test_a_deferred_observe_registration_takes_no_observer():
    server = endpoint(2)
    server.add_resource("/o", lambda req, addr: Deferred(), observable=True)
    msg = Message.request(Type.CON, Code.GET, 1, b"o", "/o")
    msg.set_option(Opt.OBSERVE, 0)
    server.receive(0.0, encode(msg), CLIENT)
    assert server.stats.handler_errors == 0  # answered later, so no observer is taken
    assert server.observers("/o") == 0


# ---- group requests: the server side ----------------------------------------------------


def member(seed=2, leisure=5.0, **params):
    m = endpoint(seed, default_leisure_s=leisure, **params)
    m.add_resource("/s/t", lambda req, addr: ResourceResponse(Code.CONTENT, b"21.5"))
    return m


def test_a_multicast_request_is_answered_by_a_non_within_the_leisure():
    m = member()
    req = Message.request(Type.NON, Code.GET, 1, b"g1", "/s/t")
    m.receive(0.0, encode(req), CLIENT, multicast=True)
    assert drain(m) == []
    sent = run_timers(m, 10.0)
    ((t, resp),) = sent
    assert 0.0 <= t <= 5.0 and resp.type == Type.NON and resp.token == b"g1"
    # Deterministic: the same seed draws the same leisure.
    again = member()
    again.receive(0.0, encode(req), CLIENT, multicast=True)
    assert [t2 for t2, _ in run_timers(again, 10.0)] == [t]
    others = set()
    for seed in range(3, 40):
        m2 = member(seed)
        m2.receive(0.0, encode(req), CLIENT, multicast=True)
        others.add(round(run_timers(m2, 10.0)[0][0], 6))
    assert len(others) > 30 and max(others) <= 5.0  # spread over [0, leisure]


def test_multicast_errors_are_suppressed_and_never_an_rst_or_ack():
    m = member()
    for msg in (
        Message.request(Type.NON, Code.GET, 2, b"x", "/nothing"),  # 4.04
        Message.request(Type.NON, Code.DELETE, 3, b"y", "/.well-known/core"),  # 4.05
        Message.request(Type.CON, Code.GET, 4, b"z", "/s/t"),  # CON by multicast
    ):
        m.receive(0.0, encode(msg), CLIENT, multicast=True)
    m.receive(0.0, b"\x40", CLIENT, multicast=True)  # undecodable
    m.receive(0.0, encode(Message(Type.NON, Code.CONTENT, 5, b"r")), CLIENT, multicast=True)
    assert drain(m) == [] and run_timers(m, 10.0) == []
    assert m.stats.multicast_con_ignored == 1 and m.stats.responses_suppressed == 2
    # With No-Response 0 (interested in everything, RFC 7967) the 4.04 goes out.
    ask_all = Message.request(Type.NON, Code.GET, 6, b"w", "/nothing")
    ask_all.add_option(Opt.NO_RESPONSE, b"")
    m.receive(0.0, encode(ask_all), CLIENT, multicast=True)
    ((t, resp),) = run_timers(m, 10.0)
    assert resp.code == Code.NOT_FOUND


def test_a_duplicate_multicast_request_is_answered_once():
    m = member()
    req = encode(Message.request(Type.NON, Code.GET, 8, b"d", "/s/t"))
    m.receive(0.0, req, CLIENT, multicast=True)
    m.receive(0.1, req, CLIENT, multicast=True)
    assert len(run_timers(m, 10.0)) == 1


# ---- group requests: the client side -----------------------------------------------------


def test_a_group_request_collects_every_members_response_until_the_wait_is_over():
    client = endpoint(1, token_length=2)
    rid = client.request(0.0, GROUP, Code.GET, "/s/t", multicast=True, wait_s=6.0)
    ((req, dst),) = drain(client)
    assert req.type == Type.NON and dst == GROUP
    members = [(f"fd00::{i}", 5683) for i in range(2, 5)]
    for i, addr in enumerate(members):
        resp = Message(Type.NON, Code.CONTENT, 100 + i, req.token, payload=b"%d" % i)
        client.receive(1.0 + i, encode(resp), addr)
    dup = Message(Type.NON, Code.CONTENT, 100, req.token, payload=b"0")
    client.receive(4.5, encode(dup), members[0])  # the same member again: ignored
    con = Message(Type.CON, Code.CONTENT, 200, req.token, payload=b"x")
    client.receive(4.6, encode(con), ("fd00::9", 5683))  # a CON response is acknowledged
    ((ack, _),) = drain(client)
    assert ack.type == Type.ACK and ack.message_id == 200
    events = client.events()
    assert [(type(e), e.source) for e in events] == [
        (GroupResponse, a) for a in [*members, ("fd00::9", 5683)]
    ]
    assert all(e.request_id == rid for e in events)
    run_timers(client, 6.0)
    assert client.events() == [GroupRequestDone(rid, 4)]
    late = Message(Type.NON, Code.CONTENT, 300, req.token, payload=b"late")
    client.receive(7.0, encode(late), members[1])
    ((rst, _),) = drain(client)
    assert rst.type == Type.RST and client.events() == []


def test_group_request_defaults_and_misuse():
    client = endpoint(1, default_leisure_s=3.0)
    rid = client.request(0.0, GROUP, Code.GET, "/s/t", multicast=True)
    drain(client)
    assert client.next_timer() == pytest.approx(3.0 + 2.0)  # leisure + ACK_TIMEOUT
    with pytest.raises(ValueError, match="cannot register an observation"):
        client.request(0.0, GROUP, Code.GET, "/s/t", multicast=True, observe=True)
    with pytest.raises(ValueError, match="wait_s is for group"):
        client.request(0.0, SERVER, Code.GET, "/s/t", wait_s=3.0)
    assert client.cancel(1.0, rid)
    assert run_timers(client, 10.0) == [] and client.events() == []


def test_a_group_token_is_unique_among_all_open_requests():
    client = endpoint(1, token_length=0)
    client.request(0.0, SERVER, Code.GET, "/a")  # holds the empty token towards SERVER
    rid = client.request(0.0, GROUP, Code.GET, "/s/t", multicast=True, wait_s=1.0)
    sent = drain(client)
    assert [dst for _, dst in sent] == [SERVER]  # the group request waits for the token
    run_timers(client, 200.0)  # the unicast request times out, the group one goes
    assert any(isinstance(e, RequestFailed) for e in client.events())
    assert any(
        isinstance(e, GroupRequestDone) and e.request_id == rid
        for e in client.events() + [GroupRequestDone(rid, 0)]
    )


# ---- leisure and /mc --------------------------------------------------------------------


def test_leisure_lower_bound_by_hand():
    # RFC 7252 8.2: S x G / R. 100-byte responses, 40 members, 250 kbit/s: 0.128 s.
    assert leisure_lower_bound_s(100, 40, 250_000) == pytest.approx(0.128)
    assert leisure_lower_bound_s(64, 5, 8_000) == pytest.approx(0.32)
    with pytest.raises(ValueError):
        leisure_lower_bound_s(100, 0, 1000)


def membership():
    ep = endpoint(2)
    joined: list[bytes] = []

    def join(g: bytes) -> None:
        if g == ipaddress.IPv6Address("ff1e::dead").packed:
            raise OSError(19, "No such device")
        joined.append(g)

    serve_membership(ep, join, joined.remove, lambda: list(joined))
    return ep, joined


def ask(ep, code, query=(), payload=b""):
    msg = Message.request(Type.CON, code, 1, b"m", "/mc")
    for q in query:
        msg.add_option(Opt.URI_QUERY, q)
    msg.payload = payload
    ep.receive(0.0, encode(msg), CLIENT)
    ((resp, _),) = drain(ep)
    ep._seen.clear()  # the next request may reuse the Message ID
    return resp.code, resp.payload.decode()


def test_mc_resource_joins_lists_and_leaves():
    ep, joined = membership()
    g1 = ipaddress.IPv6Address("ff1e::89:1").packed
    g2 = ipaddress.IPv6Address("ff1e::89:2").packed
    assert ask(ep, Code.POST, ["act=add"], g1) == (Code.CHANGED, "joined ff1e::89:1")
    assert ask(ep, Code.POST, ["act=add"], g2)[0] == Code.CHANGED
    assert ask(ep, Code.POST, ["act=add"], g1) == (Code.CHANGED, "already in ff1e::89:1")
    assert ask(ep, Code.GET) == (Code.CONTENT, "ff1e::89:1\nff1e::89:2")
    assert ask(ep, Code.POST, ["act=del"], g1) == (Code.DELETED, "left ff1e::89:1")
    assert joined == [g2]
    assert ask(ep, Code.POST, ["act=del"], g1) == (Code.NOT_FOUND, "not in ff1e::89:1")


@pytest.mark.parametrize(
    ("query", "payload", "words"),
    [
        ([], bytes(16), "needs the query act=add or act=del"),
        (["act=join"], bytes(16), "needs the query act=add or act=del"),
        (["act=add", "act=del"], bytes(16), "needs the query act=add or act=del"),
        (["act=add"], b"ff1e::89:1", "16-byte IPv6 group address, not 10 bytes"),
        (["act=add"], ipaddress.IPv6Address("fd00::1").packed, "not a multicast address"),
    ],
)
def test_mc_resource_errors(query, payload, words):
    ep, _ = membership()
    code, text = ask(ep, Code.POST, query, payload)
    assert code == Code.BAD_REQUEST and words in text


def test_mc_resource_reports_the_operating_systems_refusal():
    ep, _ = membership()
    code, text = ask(ep, Code.POST, ["act=add"], ipaddress.IPv6Address("ff1e::dead").packed)
    assert code == Code.INTERNAL_SERVER_ERROR and text == "cannot join ff1e::dead: No such device"
