"""QUIC client and server endpoints (aioquic underneath) against a fake clock."""

from __future__ import annotations

import heapq

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iotbench.proto.quic.certs import certificate_pem, make_certificate
from iotbench.proto.quic.endpoint import (
    MAX_TICKETS,
    QuicClient,
    QuicServer,
    RequestFailed,
    ResponseReceived,
)
from iotbench.proto.quic.params import QuicParams

SERVER = ("10.0.0.2", 4433)
CLIENT = ("10.0.0.1", 50000)
D = 0.01  # one-way delay


class Wire:
    def __init__(self, client_params=None, server_params=None, drop=None, seed=1, strict=True):
        cert, key = make_certificate(seed)
        answer = lambda request: b"reading:" + request  # noqa: E731
        self.server = QuicServer(server_params or QuicParams(), cert, key, answer, strict)
        self.client = QuicClient(
            client_params or QuicParams(), certificate_pem(cert), "sensor.iotbench"
        )
        self.drop = drop or (lambda t, who, size: False)
        self.now = 0.0
        self.log: list[tuple[float, str, int]] = []
        self.events: list[tuple[float, object]] = []
        self._flight: list = []
        self._seq = 0

    def _collect(self) -> None:
        for who, ep in (("c", self.client), ("s", self.server)):
            for data, _ in ep.datagrams_to_send():
                self.log.append((round(self.now, 6), who, len(data)))
                if self.drop(self.now, who, len(data)):
                    continue
                self._seq += 1
                heapq.heappush(self._flight, (self.now + D, self._seq, who, data))
        self.events.extend((self.now, e) for e in self.client.events())

    def request(self, t: float, data: bytes = b"/x") -> int:
        self.run(t)
        rid = self.client.request(self.now, SERVER, data)
        self._collect()
        return rid

    def run(self, until: float) -> None:
        while True:
            self._collect()
            times = [self._flight[0][0]] if self._flight else []
            times += [t for t in (self.client.next_timer(), self.server.next_timer()) if t]
            if not times or min(times) > until:
                self.now = max(self.now, until)
                return
            self.now = max(self.now, min(times))
            if self._flight and self._flight[0][0] <= self.now:
                _, _, who, data = heapq.heappop(self._flight)
                if who == "c":
                    self.server.receive(self.now, data, CLIENT)
                else:
                    self.client.receive(self.now, data, SERVER)
                continue
            for ep in (self.client, self.server):
                t = ep.next_timer()
                if t is not None and t <= self.now:
                    ep.handle_timer(self.now)

    def responses(self) -> list[tuple[float, ResponseReceived]]:
        return [(t, e) for t, e in self.events if isinstance(e, ResponseReceived)]


def test_first_request_takes_the_handshake_and_one_more_round_trip():
    w = Wire()
    rid = w.request(0.0, b"/sensor")
    w.run(1.0)
    ((t, resp),) = w.responses()
    assert resp == ResponseReceived(rid, b"reading:/sensor", pytest.approx(4 * D))
    assert t == pytest.approx(4 * D)
    # The client's Initial and its first flight after the handshake are padded to 1200 bytes.
    assert w.log[0] == (0.0, "c", 1200)
    assert w.client.handshakes == 1 and w.server.requests_served == 1


def test_a_connection_per_request_repeats_the_handshake():
    w = Wire()
    for i in range(3):
        w.request(i * 1.0)
        w.run(i * 1.0 + 0.5)
    assert w.client.handshakes == 3
    assert [round(e.rtt_s, 6) for _, e in w.responses()] == [4 * D] * 3


def test_zero_rtt_resumption_sends_the_request_in_the_first_flight():
    w = Wire(client_params=QuicParams(zero_rtt=True))
    for i in range(3):
        w.request(i * 1.0)
        w.run(i * 1.0 + 0.5)
    rtts = [round(e.rtt_s, 6) for _, e in w.responses()]
    assert rtts == [4 * D, 2 * D, 2 * D]  # resumed connections answer in one round trip


def test_the_server_remembers_a_bounded_number_of_session_tickets():
    w = Wire()
    for i in range(MAX_TICKETS + 6):
        w.request(i * 1.0)
        w.run(i * 1.0 + 0.5)
    assert len(w.server._tickets) == MAX_TICKETS  # every connection got one; the oldest went


def test_a_server_holds_a_bounded_number_of_connections():
    w = Wire()
    w.server.max_connections = 1
    first = w.request(0.0)  # a connection per request: two at once
    second = w.request(0.001)
    w.run(0.5)
    got = [e.request_id for _, e in w.responses()]
    assert got == [first]  # the second Initial found the server full and was dropped
    assert w.server.refused_connections >= 1
    w.run(10.0)  # once the first is over, the second's retransmitted Initial gets in
    assert sorted(e.request_id for _, e in w.responses()) == [first, second]


def test_a_request_longer_than_the_bound_closes_its_connection():
    w = Wire()
    w.server.max_request_bytes = 4096
    w.request(0.0, b"x" * 6000)
    w.run(60.0)
    assert w.server.oversize_requests == 1 and w.server._requests == {}
    assert w.responses() == [] and w.server.requests_served == 0
    assert any(isinstance(e, RequestFailed) for _, e in w.events)  # the client hears of it
    w.request(61.0, b"/short")  # the server still serves
    w.run(62.0)
    assert [e.data for _, e in w.responses()] == [b"reading:/short"]


def test_reuse_keeps_one_connection():
    w = Wire(client_params=QuicParams(connection="reuse"))
    for i in range(3):
        w.request(i * 1.0)
        w.run(i * 1.0 + 0.5)
    assert w.client.handshakes == 1
    assert [round(e.rtt_s, 6) for _, e in w.responses()] == [4 * D, 2 * D, 2 * D]


def test_lost_initial_is_recovered_after_the_probe_timeout():
    lost = {"n": 0}

    def drop(t, who, size):
        if who == "c" and lost["n"] == 0:
            lost["n"] += 1
            return True
        return False

    w = Wire(drop=drop)
    w.request(0.0)
    w.run(10.0)
    ((t, resp),) = w.responses()
    # Before any RTT sample aioquic's PTO is 2 x the initial RTT (RFC 9002 6.2.2
    # has 3 x, "a PTO of 1 second"); the Initial goes again then.
    resent = [when for when, who, size in w.log if who == "c" and size == 1200]
    assert resent[:2] == [0.0, pytest.approx(2 * 0.333)]
    assert t == pytest.approx(2 * 0.333 + 4 * D, abs=1e-6)


def test_unreachable_server_fails_after_the_idle_timeout():
    w = Wire(client_params=QuicParams(idle_timeout_s=5.0), drop=lambda t, who, size: True)
    rid = w.request(0.0)
    w.run(60.0)
    failures = [e for _, e in w.events if isinstance(e, RequestFailed)]
    assert [f.request_id for f in failures] == [rid]
    assert not w.client._connections


def test_packet_sizes_and_times_are_the_same_in_every_run():
    """aioquic's randomness changes packet contents, never their sizes or times."""
    runs = []
    for _ in range(2):
        w = Wire(seed=3)
        for i in range(3):
            w.request(i * 1.0)
            w.run(i * 1.0 + 0.5)
        runs.append(w.log)
    assert runs[0] == runs[1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=1300), max_size=5))
def test_random_datagrams_never_raise(datagrams):
    w = Wire()
    for i, data in enumerate(datagrams):
        w.server.receive(0.1 * i, data, CLIENT)
        w.client.receive(0.1 * i, data, SERVER)
        w.server.datagrams_to_send()
        w.client.datagrams_to_send()


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_mutated_handshake_datagrams_never_raise(data):
    """A server on real sockets (strict=False): a stranger's bytes that aioquic
    refuses cost that connection only."""
    w = Wire(client_params=QuicParams(connection="reuse"), strict=False)
    w.request(0.0)
    w.run(1.0)
    w2 = Wire()
    w2.client.request(0.0, SERVER, b"/x")
    sent = [d for d, _ in w2.client.datagrams_to_send()]
    raw = bytearray(sent[0])
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    w.server.receive(2.0, bytes(raw), ("10.0.0.9", 1))
    w.server.datagrams_to_send()
    w.server.handle_timer(3.0)
    # The established connection is unharmed by a stranger's mangled Initial.
    w.request(4.0)
    w.run(5.0)
    assert len(w.responses()) == 2
