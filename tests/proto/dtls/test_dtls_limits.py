"""A server's two limits: handshakes in progress and established sessions (issue 39, item 5).

The attack: an idle client with an established session, then hundreds of
half-open handshakes from other addresses, each past the cookie exchange
(the attacker receives at its addresses), none finishing. Before, they
shared one table with the sessions and pushed the idle client out.
"""

from __future__ import annotations

import random

import pytest
from dtls_harness import IDENTITY, KEY, C, Link, S, pair

from iotbench.proto.dtls.connection import SessionClosed
from iotbench.proto.dtls.layer import DtlsLayer
from iotbench.proto.dtls.params import DtlsParams, PskClientCredentials, PskServerCredentials


def server_layer(params: DtlsParams) -> DtlsLayer:
    return DtlsLayer(random.Random(2), params, server=PskServerCredentials({IDENTITY: KEY}))


def half_open(server: DtlsLayer, addr: object, now: float, seed: int) -> None:
    """A handshake from `addr` taken past the cookie and abandoned: the peer
    answers the HelloVerifyRequest (return routability), then goes silent."""
    peer = DtlsLayer(random.Random(seed), client=PskClientCredentials(b"mallory", b"guess"))
    peer.outgoing(now, b"x", S)
    for data, _ in peer.datagrams_to_send():  # ClientHello
        server.incoming(now, data, addr)
    for data, _ in server.datagrams_to_send():  # HelloVerifyRequest
        peer.incoming(now, data, S)
    for data, _ in peer.datagrams_to_send():  # ClientHello with the cookie
        server.incoming(now, data, addr)
    server.datagrams_to_send()  # flight 4, never answered
    server.events()


def established(server: DtlsLayer, addr: object, seed: int = 1) -> Link:
    client = DtlsLayer(random.Random(seed), client=PskClientCredentials(IDENTITY, KEY))
    link = Link(client, server, client_addr=addr)
    client.outgoing(0.0, b"hello", S)
    link.run()
    assert server.session(addr).established
    return link


def test_half_open_handshakes_never_push_out_an_established_session():
    params = DtlsParams()
    server = server_layer(params)
    link = established(server, C)
    session = server.session(C)
    for n in range(600):
        half_open(server, ("attacker", n), 1.0 + n / 1000, seed=100 + n)
    assert server.stats.handshakes_started == 601
    assert server.session(C) is session and session.established
    assert len(server._handshakes) == params.max_handshakes
    assert server.stats.handshakes_evicted == 600 - params.max_handshakes
    assert server.stats.sessions_evicted == 0
    assert not link.of_type(SessionClosed)  # no close_notify reached the client
    # The idle client goes on using its session without a new handshake.
    link.now = 2.0
    link.client.outgoing(link.now, b"still here", S)
    link.run()
    assert link.received["server"][-1] == b"still here"
    assert server.stats.handshakes_started == 601
    # The half-open ones time out (flight 4 resent, then given up); the session stays.
    while (deadline := server.next_timer()) is not None:
        server.handle_timer(deadline)
        server.datagrams_to_send()
    assert not server._handshakes and server.session(C) is session


def test_a_full_handshake_table_never_touches_sessions_even_at_one_each():
    server = server_layer(DtlsParams(max_sessions=1, max_handshakes=1))
    established(server, C)
    for n in range(5):
        half_open(server, ("attacker", n), 1.0, seed=100 + n)
    assert server.session(C).established and len(server._handshakes) == 1
    assert server.stats.handshakes_evicted == 4 and server.stats.sessions_evicted == 0


def test_the_oldest_started_handshake_gives_way_not_the_least_active():
    server = server_layer(DtlsParams(max_handshakes=2))
    half_open(server, "first", 0.0, seed=11)
    half_open(server, "second", 0.1, seed=12)
    # "first" keeps sending (a retransmitted flight 3 would do): no refresh.
    server.incoming(0.2, b"\x17\xfe\xfd" + bytes(20), "first")
    half_open(server, "third", 0.3, seed=13)
    assert list(server._handshakes) == ["second", "third"]


def test_an_honest_handshake_completes_while_fewer_than_the_limit_start_in_its_round_trip():
    params = DtlsParams(max_handshakes=8)
    server = server_layer(params)
    client = DtlsLayer(random.Random(1), params, client=PskClientCredentials(IDENTITY, KEY))
    flight_5: list[bytes] = []
    link = Link(client, server, drop=lambda d, n: d == "c2s" and n == 2 and not flight_5)
    client.outgoing(0.0, b"GET", S)
    link.run(until_s=0.5)  # flights 1-4; flight 5 held back as a slow path would
    flight_5.append(link.sent["c2s"][2])
    for n in range(params.max_handshakes - 1):
        half_open(server, ("attacker", n), 0.1, seed=100 + n)
    server.incoming(0.2, flight_5[0], C)
    link.run()
    assert server.session(C).established and link.received["server"] == [b"GET"]


def test_a_completed_handshake_closes_the_least_recently_active_session():
    server = server_layer(DtlsParams(max_sessions=2))
    a = established(server, "a", seed=1)
    b = established(server, "b", seed=2)
    a.now = 1.0
    a.client.outgoing(a.now, b"busy", S)  # "a" in use, "b" idle since its handshake
    a.run()
    c = established(server, "c", seed=3)
    assert server.stats.sessions_evicted == 1
    assert set(server._sessions) == {"a", "c"}
    # Closed with close_notify (the harness's link to "c" carries all the
    # server sends, so the event is read there).
    assert c.of_type(SessionClosed) == [SessionClosed("b", by_peer=False)]
    assert not b.of_type(SessionClosed) and not a.of_type(SessionClosed)


def test_a_session_the_endpoint_sends_on_counts_as_active():
    # An observer receives notifications and sends nothing: its session is in use.
    server = server_layer(DtlsParams(max_sessions=2))
    established(server, "observer", seed=1)
    established(server, "other", seed=2)
    server.outgoing(1.0, b"notification", "observer")
    established(server, "newcomer", seed=3)
    assert set(server._sessions) == {"observer", "newcomer"}


def test_a_failed_renewal_from_the_same_address_keeps_the_session():
    # A verified ClientHello with a new random from C (a rebooted client,
    # RFC 6347 4.2.8, or anyone on its path) whose handshake fails: the
    # session C proved the key for stays, and carries data afterwards.
    link = Link(*pair())
    link.client.outgoing(0.0, b"first", S)
    link.run()
    session = link.server.session(C)
    intruder = DtlsLayer(random.Random(7), client=PskClientCredentials(IDENTITY, b"wrong"))
    intruder.outgoing(1.0, b"x", S)
    Link(intruder, link.server, client_addr=C).run()
    assert link.server.stats.handshakes_failed == 1
    assert link.server.session(C) is session and session.established
    link.now = 2.0
    link.client.outgoing(link.now, b"second", S)
    link.run()
    assert link.received["server"] == [b"first", b"second"]


@pytest.mark.parametrize("field", ["max_sessions", "max_handshakes"])
def test_the_limits_are_at_least_one(field):
    with pytest.raises(ValueError, match=field):
        DtlsParams(**{field: 0})
