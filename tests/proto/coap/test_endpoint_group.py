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


def test_a_deferred_answer_after_the_deadline_is_a_retransmitted_separate_con():
    server, pending, calls = deferring_server(separate_response_after_s=1.0)
    request = Message.request(Type.CON, Code.GET, 7, b"tk", "/e/x")
    server.receive(0.0, encode(request), CLIENT)
    assert drain(server) == []
    ((t_ack, ack),) = run_timers(server, 1.5)
    assert t_ack == pytest.approx(1.0) and ack.type == Type.ACK and ack.code == 0
    server.respond(3.0, pending[0], ResourceResponse(Code.CONTENT, b"late"))
    ((resp, addr),) = drain(server)
    assert resp.type == Type.CON and resp.token == b"tk" and addr == CLIENT
    # Nobody acknowledges it: RFC 7252 4.2 retransmissions of the same message.
    retx = run_timers(server, 100.0)
    assert len(retx) == 4 and all(m == resp for _, m in retx)
    server.receive(100.0, encode(request), CLIENT)  # a late duplicate: the empty ACK again
    ((again, _),) = drain(server)
    assert again == ack and calls == [7]


def test_a_deferred_answer_may_carry_a_processing_delay():
    server, pending, _ = deferring_server(separate_response_after_s=1.0)
    server.receive(0.0, encode(Message.request(Type.CON, Code.GET, 7, b"tk", "/e/x")), CLIENT)
    server.respond(0.2, pending[0], ResourceResponse(Code.CONTENT, b"slow", delay_s=0.3))
    assert drain(server) == []
    ((t, resp),) = run_timers(server, 10.0)  # at 0.5, before the deadline: piggybacked
    assert t == pytest.approx(0.5) and resp.type == Type.ACK and resp.payload == b"slow"


def test_a_deferred_handed_back_twice_is_a_handler_error():
    server = endpoint(2, strict=False)  # a server on real sockets answers 5.00
    shared = Deferred()
    server.add_resource("/e/x", lambda req, addr: shared)
    server.receive(0.0, encode(Message.request(Type.NON, Code.GET, 1, b"a", "/e/x")), CLIENT)
    server.receive(0.0, encode(Message.request(Type.NON, Code.GET, 2, b"b", "/e/x")), CLIENT)
    ((resp, _),) = drain(server)
    assert resp.code == Code.INTERNAL_SERVER_ERROR and resp.token == b"b"
    assert server.stats.handler_errors == 1
    server.respond(1.0, shared, "first")
    ((resp, _),) = drain(server)
    assert resp.token == b"a" and resp.payload == b"first"


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


def test_a_multicast_request_with_nothing_useful_to_say_is_not_answered():
    m = member()
    m.add_resource("/empty", lambda req, addr: ResourceResponse(Code.CHANGED))
    m.add_resource("/valid", lambda req, addr: ResourceResponse(Code.VALID))
    proxy = Message.request(Type.NON, Code.GET, 3, b"p", "/s/t")
    proxy.add_option(Opt.PROXY_URI, "coap://elsewhere/x")  # 5.05
    filtered = Message.request(Type.NON, Code.GET, 4, b"f", "/.well-known/core")
    filtered.add_option(Opt.URI_QUERY, "rt=nothing-matches")  # RFC 6690 4.1
    for msg in (
        Message.request(Type.NON, Code.PUT, 1, b"e", "/empty"),  # 2.04, empty
        proxy,
        filtered,
        Message.request(Type.NON, Code.GET, 5, b"v", "/valid"),  # 2.03: its code is news
    ):
        m.receive(0.0, encode(msg), CLIENT, multicast=True)
    ((_, resp),) = run_timers(m, 10.0)
    assert resp.code == Code.VALID and m.stats.responses_suppressed == 3
    # No-Response 0: the client wants everything, the empty 2.04 too (RFC 7967).
    wants_all = Message.request(Type.NON, Code.PUT, 6, b"w", "/empty")
    wants_all.add_option(Opt.NO_RESPONSE, b"")
    m.receive(0.0, encode(wants_all), CLIENT, multicast=True)
    ((_, resp),) = run_timers(m, 10.0)
    assert resp.code == Code.CHANGED and resp.type == Type.NON
    # No-Response 2 (not interested in 2.xx): a success is left out, by the client's choice.
    no_success = Message.request(Type.NON, Code.GET, 7, b"n", "/s/t")
    no_success.add_option(Opt.NO_RESPONSE, 0x02)
    m.receive(0.0, encode(no_success), CLIENT, multicast=True)
    assert run_timers(m, 10.0) == []


def test_a_deferred_answer_to_a_multicast_request_waits_a_leisure_too():
    def serve(seed):
        m = endpoint(seed, default_leisure_s=5.0)
        pending = []
        m.add_resource("/e/x", lambda req, addr: pending.append(Deferred()) or pending[-1])
        for mid, token in ((1, b"g"), (2, b"h")):
            req = Message.request(Type.NON, Code.GET, mid, token, "/e/x")
            m.receive(0.0, encode(req), CLIENT, multicast=True)
        return m, pending

    m, pending = serve(2)
    assert drain(m) == []
    m.respond(10.0, pending[0], "21.5")
    m.respond(10.0, pending[1], (Code.NOT_FOUND, b""))  # an error: suppressed
    assert drain(m) == []
    ((t, resp),) = run_timers(m, 20.0)
    assert 10.0 <= t <= 15.0 and resp.type == Type.NON and resp.payload == b"21.5"
    assert m.stats.responses_suppressed == 1


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
    client.receive(4.5, encode(dup), members[0])  # repeated by the network: dropped
    again = Message(Type.NON, Code.CONTENT, 150, req.token, payload=b"0+")
    client.receive(4.55, encode(again), members[0])  # a second response: reported
    con = Message(Type.CON, Code.CONTENT, 200, req.token, payload=b"x")
    client.receive(4.6, encode(con), ("fd00::9", 5683))  # a CON response is acknowledged
    ((ack, _),) = drain(client)
    assert ack.type == Type.ACK and ack.message_id == 200
    events = client.events()
    assert [(type(e), e.source) for e in events] == [
        (GroupResponse, a) for a in [*members, members[0], ("fd00::9", 5683)]
    ]
    assert [e.response.payload for e in events] == [b"0", b"1", b"2", b"0+", b"x"]
    assert all(e.request_id == rid for e in events)
    assert client.stats.duplicates == 1
    run_timers(client, 6.0)
    assert client.events() == [GroupRequestDone(rid, 5, 4)]
    late = Message(Type.NON, Code.CONTENT, 300, req.token, payload=b"late")
    client.receive(7.0, encode(late), members[1])
    ((rst, _),) = drain(client)
    assert rst.type == Type.RST and client.events() == []


def test_a_group_response_with_an_unknown_critical_option_is_rejected():
    client = endpoint(1)
    rid = client.request(0.0, GROUP, Code.GET, "/s/t", multicast=True, wait_s=2.0)
    ((req, _),) = drain(client)
    bad = Message(Type.NON, Code.CONTENT, 7, req.token, payload=b"1")
    bad.add_option(9, b"x")  # option 9: critical and unknown
    client.receive(1.0, encode(bad), ("fd00::2", 5683))
    ((rst, _),) = drain(client)
    assert rst.type == Type.RST and rst.message_id == 7 and client.events() == []
    run_timers(client, 2.0)
    assert client.events() == [GroupRequestDone(rid, 0, 0)]


def test_a_group_request_is_sent_once_and_never_retransmitted():
    client = endpoint(1)
    client.request(0.0, GROUP, Code.POST, "/s/t", multicast=True, payload=b"on")
    ((req, _),) = drain(client)
    assert req.type == Type.NON and req.payload == b"on"
    assert run_timers(client, 100.0) == [] and client.stats.retransmissions == 0


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
    run_timers(client, 200.0)  # the unicast request gives up, then the group one goes
    events = client.events()
    assert isinstance(events[0], RequestFailed)
    assert events[1:] == [GroupRequestDone(rid, 0, 0)]


# ---- leisure and /mc --------------------------------------------------------------------


def test_leisure_lower_bound_by_hand():
    # lb_Leisure = S x G / R. DEFAULT_LEISURE's own numbers: 100-byte responses
    # from 50 members at 1 kB/s = 8 kbit/s: 100 * 50 / 1000 = 5 s.
    assert leisure_lower_bound_s(100, 50, 8_000) == pytest.approx(5.0)
    # 100 bytes, 40 members, 250 kbit/s (802.15.4's raw rate): 800 * 40 / 250000 = 0.128 s.
    assert leisure_lower_bound_s(100, 40, 250_000) == pytest.approx(0.128)
    # 64 bytes, 5 members, 8 kbit/s: 512 * 5 / 8000 = 0.32 s.
    assert leisure_lower_bound_s(64, 5, 8_000) == pytest.approx(0.32)
    for bad in ((100, 0, 1000), (-1, 5, 1000), (100, 5, 0), (100, 5, float("nan"))):
        with pytest.raises(ValueError):
            leisure_lower_bound_s(*bad)


def membership():
    ep = endpoint(2)
    joined: list[bytes] = []

    def join(g: bytes) -> None:
        if g == ipaddress.IPv6Address("ff1e::dead").packed:
            raise OSError(19, "No such device")
        joined.append(g)

    def leave(g: bytes) -> None:
        if g == ipaddress.IPv6Address("ff1e::beef").packed:
            raise OSError(99, "Cannot assign requested address")
        joined.remove(g)

    serve_membership(ep, join, leave, lambda: list(joined))
    return ep, joined


def ask(ep, code, query=(), payload=b""):
    msg = Message.request(Type.CON, code, 1, b"m", "/mc")
    for q in query:
        msg.add_option(Opt.URI_QUERY, q)
    msg.payload = payload
    ep.receive(0.0, encode(msg), CLIENT)
    ((resp, _),) = drain(ep)
    ep.message_layer._seen.clear()  # the next request may reuse the Message ID
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


def test_mc_resource_reports_a_refused_leave_and_serves_only_get_and_post():
    ep, joined = membership()
    stuck = ipaddress.IPv6Address("ff1e::beef").packed
    assert ask(ep, Code.POST, ["act=add"], stuck)[0] == Code.CHANGED
    code, text = ask(ep, Code.POST, ["act=del"], stuck)
    assert code == Code.INTERNAL_SERVER_ERROR
    assert text == "cannot leave ff1e::beef: Cannot assign requested address"
    assert joined == [stuck]
    assert ask(ep, Code.PUT, ["act=add"], stuck)[0] == Code.METHOD_NOT_ALLOWED
    assert ask(ep, Code.GET) == (Code.CONTENT, "ff1e::beef")
