"""When a receiver acknowledges, TcpParams.ack = "linux" (the default): quick ACKs,
ping-pong mode, an ACK per two full segments or when small pushed segments are
read, the FIN's ACK on the closer's FIN (net/tcp/acks.py), against a fake clock.
The same sequences captured from Linux are in tests/interop/test_tcp_linux_segments.py."""

from __future__ import annotations

import pytest
from tcp_harness import Wire

from iotbench.net.tcp.acks import LinuxAcks
from iotbench.net.tcp.connection import CLOSE_WAIT, ESTABLISHED, LAST_ACK
from iotbench.net.tcp.params import TcpParams
from iotbench.net.tcp.segment import FIN

D = 0.05  # one-way delay of the harness wire
REPLY_S = 0.001  # the application's time to answer


def established(**kw) -> Wire:
    w = Wire(**kw)
    w.client.connect(0.0)
    w.run(1.0)
    assert w.client.state == ESTABLISHED and w.server.state == ESTABLISHED
    return w


def pure_acks(w: Wire, side: str, after: float) -> list[float]:
    return [t for t, s in w.sent(side) if t > after and not s.payload and not s.flags & FIN]


def exchange(w: Wire, t: float, request: bytes = b"q" * 20, reply: bytes = b"r" * 30) -> float:
    """The client sends a request at t; the server answers REPLY_S after it arrives."""
    w.client.send(w.at(t), request)
    w.server.send(w.at(t + D + REPLY_S), reply)
    return t + D + REPLY_S


def test_the_first_data_is_acknowledged_at_once():
    w = established()
    w.client.send(w.at(2.0), b"q" * 20)
    w.run(2.0 + D + 0.0001)
    assert pure_acks(w, "s", 2.0) == [pytest.approx(2.0 + D)]  # quick ACK, not after 40 ms
    assert w.server._acks.quick == 15  # 16 quick ACKs, one used


def test_a_reply_within_ato_makes_the_connection_interactive_and_carries_the_ack():
    w = established()
    exchange(w, 2.0)  # quick ACK, then the reply
    assert w.server._acks.interactive
    exchange(w, 3.0)
    w.run(4.0)
    # The second request's ACK rides on the reply: no pure ACK after 3.0.
    assert pure_acks(w, "s", 3.0) == []
    (reply,) = [s for t, s in w.sent("s") if t > 3.0]
    assert reply.payload == b"r" * 30 and reply.ack == w.server.irs + w.server.rcv_nxt


def test_an_unanswered_request_is_acknowledged_after_ato_which_ends_ping_pong():
    w = established()
    exchange(w, 2.0)
    w.client.send(w.at(3.0), b"q" * 20)
    w.run(4.0)
    assert pure_acks(w, "s", 3.0) == [pytest.approx(3.0 + D + 0.04)]
    assert not w.server._acks.interactive  # the timer fired: not interactive any more


def test_small_pushed_segments_are_acknowledged_when_read():
    w = established()
    exchange(w, 2.0)
    w.client.send(w.at(3.0), b"a" * 10)
    w.client.send(w.at(3.01), b"b" * 10)  # Nagle holds it: "a" is unacknowledged
    w.run(4.0)
    # "a" waits for the delayed ACK (interactive); the timer ends ping-pong, so
    # "b" (released by that ACK) is acknowledged as soon as it is read.
    acks = pure_acks(w, "s", 3.0)
    assert acks == [pytest.approx(3.0 + D + 0.04), pytest.approx(3.0 + 3 * D + 0.04)]
    w2 = established(client_params=TcpParams(nagle=False))
    exchange(w2, 2.0)
    w2.client.send(w2.at(3.0), b"a" * 10)
    w2.client.send(w2.at(3.01), b"b" * 10)
    w2.run(4.0)
    # Without Nagle both arrive; reading the second (ICSK_ACK_PUSHED2) sends the
    # ACK although the connection is interactive.
    assert pure_acks(w2, "s", 3.0) == [pytest.approx(3.01 + D)]


def test_the_first_sixteen_full_segments_get_an_ack_each_then_every_second():
    w = established(client_params=TcpParams(nagle=False))
    n = w.client.smss
    w.client.send(w.at(2.0), b"x" * (40 * n))
    w.run(10.0)
    assert bytes(w.received["s"]) == b"x" * (40 * n)
    base = w.server.irs + 1
    covered = [(s.ack - base) // n for t, s in w.sent("s") if t > 2.0 and not s.payload]
    steps = [b - a for a, b in zip([0, *covered], covered, strict=False)]
    assert steps[:16] == [1] * 16
    assert set(steps[16:]) == {2}  # more than one full segment unacknowledged


def test_a_fin_ack_rides_on_the_fin_of_a_peer_that_closes_when_it_reads_it():
    w = established()
    exchange(w, 2.0)
    w.client.close(w.at(3.0))
    w.run(3.0 + D)
    assert w.server.state == CLOSE_WAIT
    assert pure_acks(w, "s", 3.0) == []  # not acknowledged yet
    w.server.close(w.at(3.0 + D + REPLY_S))
    w.run(5.0)
    assert w.server.state != LAST_ACK  # our FIN was acknowledged: closed
    after = [s for t, s in w.sent("s") if t > 3.0]
    assert len(after) == 1 and after[0].flags & FIN  # FIN and ACK in one segment
    assert after[0].ack == w.server.irs + w.server.rcv_nxt


def test_a_fin_is_acknowledged_after_ato_when_the_application_does_not_close():
    w = established()
    exchange(w, 2.0)
    w.client.close(w.at(3.0))
    w.run(4.0)
    assert pure_acks(w, "s", 3.0) == [pytest.approx(3.0 + D + 0.04)]


def test_rfc5681_mode_keeps_the_every_second_segment_rule():
    rfc = TcpParams(ack="rfc5681")
    w = established(server_params=rfc)
    w.client.send(w.at(2.0), b"q" * 20)
    w.run(3.0)
    assert pure_acks(w, "s", 2.0) == [pytest.approx(2.0 + D + 0.04)]  # no quick ACK
    w.client.close(w.at(4.0))
    w.run(4.0 + D)
    assert pure_acks(w, "s", 4.0) == [pytest.approx(4.0 + D)]  # the FIN at once


def test_ato_adapts_to_the_arrival_gaps_and_is_bounded():
    acks = LinuxAcks(1460, 64240)
    acks.on_data(1.0, 100, True, 0.2)
    assert acks.ato == 0.04 and acks.quick == 16
    acks.on_data(1.03, 100, True, 0.2)  # gap 30 ms < ato: ato/2 + gap
    assert acks.ato == pytest.approx(0.05)
    acks.on_data(1.035, 100, True, 0.2)  # gap 5 ms <= 20 ms: ato/2 + 20 ms
    assert acks.ato == pytest.approx(0.045)
    acks.on_data(2.0, 100, True, 0.2)  # a gap above the RTO: quick ACKs again
    assert acks.quick == 16
    acks.on_delack_timeout(0.2)  # not interactive: the timer doubles ato
    assert acks.ato == pytest.approx(0.09)
    assert acks.delay_s(srtt_s=0.06) == pytest.approx(0.06)  # bounded by the RTT
    assert acks.delay_s(srtt_s=None) == pytest.approx(0.09)


def test_invalid_ack_mode_is_refused():
    with pytest.raises(ValueError, match="ack must be one of"):
        TcpParams(ack="bsd")
