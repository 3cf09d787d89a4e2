"""The TCP state machine against a fake clock: handshake, teardown, loss of
every segment type, RFC 6298 timing, congestion control, options, Fast Open."""

from __future__ import annotations

import random

import pytest
from tcp_harness import Wire, flags_of

from iotbench.net.tcp.connection import (
    CLOSE_WAIT,
    CLOSED,
    ESTABLISHED,
    FIN_WAIT_2,
    TIME_WAIT,
    TcpConnection,
)
from iotbench.net.tcp.events import Closed, Connected, DataReceived, PeerClosed
from iotbench.net.tcp.params import TcpParams
from iotbench.net.tcp.segment import ACK, FIN, RST, SYN, Segment

D = 0.05  # one-way delay of the harness wire


def established(**kw) -> Wire:
    w = Wire(**kw)
    w.client.connect(0.0)
    w.run(1.0)
    assert w.client.state == ESTABLISHED and w.server.state == ESTABLISHED
    return w


# ---- handshake and teardown ---------------------------------------------------------


def test_three_way_handshake():
    w = Wire()
    w.client.connect(0.0)
    w.run(1.0)
    (t1, syn), (t3, ack) = w.sent("c")
    ((t2, synack),) = w.sent("s")
    assert (flags_of(syn), flags_of(synack), flags_of(ack)) == ("S", "S.", ".")
    assert (t1, t2, t3) == (0.0, D, 2 * D)
    assert synack.ack == (syn.seq + 1) % 2**32
    assert ack.seq == (syn.seq + 1) % 2**32 and ack.ack == (synack.seq + 1) % 2**32
    # Linux-like options: MSS, SACK-permitted, timestamps, window scale 7.
    assert (syn.mss, syn.sack_permitted, syn.wscale) == (1460, True, 7)
    assert syn.timestamps is not None and syn.timestamps[1] == 0
    assert synack.timestamps[1] == syn.timestamps[0]  # the echo
    assert w.event_names("c") == ["Connected"] and w.event_names("s") == ["Connected"]
    # Windows after the handshake are scaled: 64240 >> 7.
    assert ack.window == 64240 >> 7 and syn.window == 64240


def test_options_can_each_be_switched_off():
    off = TcpParams(sack=False, timestamps=False, window_scale=False)
    w = Wire(client_params=off)
    w.client.connect(0.0)
    w.run(1.0)
    syn, synack = w.sent("c")[0][1], w.sent("s")[0][1]
    assert (syn.sack_permitted, syn.timestamps, syn.wscale) == (False, None, None)
    # The server only agrees to what the client offered.
    assert (synack.sack_permitted, synack.timestamps, synack.wscale) == (False, None, None)
    assert w.client.smss == 1460  # no timestamp option to leave room for


def test_active_close_and_time_wait():
    w = established()
    w.client.close(w.at(2.0))
    w.run(2.0 + 3 * D)
    # FIN -> ACK; the server's application then closes: FIN -> ACK.
    assert w.server.state == CLOSE_WAIT and w.client.state == FIN_WAIT_2
    assert w.event_names("s")[-1] == "PeerClosed"
    w.server.close(w.at(3.0))
    w.run(3.0 + 2 * D)
    assert w.client.state == TIME_WAIT and w.server.state == CLOSED
    assert w.events["s"][-1][1] == Closed("closed")
    assert w.events["c"][-1][1] == Closed("closed")
    # TIME_WAIT lasts 60 s (Linux), then the connection is gone.
    w.run(3.0 + D + 59.9)
    assert w.client.state == TIME_WAIT
    w.run(3.0 + D + 60.1)
    assert w.client.state == CLOSED and w.client.finished
    fins = [flags_of(s) for _, _, s in w.log if s.flags & FIN]
    assert fins == ["F.", "F."]


def test_send_transmits_at_once_so_a_following_close_sends_fin_alone():
    w = established()
    w.client.send(2.0, b"request")
    w.client.close(2.0)
    w.run(5.0)
    assert bytes(w.received["s"]) == b"request"
    data_seg, fin_seg = [s for _, s in w.sent("c") if s.payload or s.flags & FIN]
    assert not data_seg.flags & FIN and fin_seg.flags & FIN and not fin_seg.payload


def test_rst_from_peer_closes_with_reset():
    w = established()
    w.server.abort(w.at(2.0))
    w.run(3.0)
    assert w.server.state == CLOSED and w.events["s"][-1][1] == Closed("aborted")
    assert w.client.state == CLOSED and w.events["c"][-1][1] == Closed("reset")


def test_rst_to_syn_is_refused():
    w = Wire()
    w.client.connect(0.0)
    w.run(0.01)
    syn = w.sent("c")[0][1]
    rst = Segment(80, 40000, 0, (syn.seq + 1) % 2**32, RST | ACK, 0)
    w.client.receive(0.1, rst)
    assert w.client.state == CLOSED and w.client.events()[-1] == Closed("refused")


def test_out_of_window_rst_gets_a_challenge_ack():
    w = established()
    c = w.client
    bogus = Segment(80, 40000, (c.irs + c.rcv_nxt + 100_000) % 2**32, 0, RST, 0)
    c.receive(2.0, bogus)
    assert c.state == ESTABLISHED
    in_window = Segment(80, 40000, (c.irs + c.rcv_nxt + 10) % 2**32, 0, RST, 0)
    c.receive(2.0, in_window)
    assert c.state == ESTABLISHED  # RFC 5961: not exactly rcv_nxt -> challenge ACK
    (challenge, _) = c.segments_to_send()[-1]
    assert flags_of(challenge) == "."


# ---- loss of every segment type, and RFC 6298 timing --------------------------------


def lose_first(kind: str, side: str, count: int = 1):
    """A drop function losing the first `count` segments of a kind from a side."""
    seen = {"n": 0}

    def match(seg: Segment) -> bool:
        f = flags_of(seg)
        if kind == "data":
            return bool(seg.payload)
        if kind == "ack":
            return f == "." and not seg.payload
        return f == kind

    def drop(t, src, seg):
        if src == side and match(seg) and seen["n"] < count:
            seen["n"] += 1
            return True
        return False

    return drop


def test_syn_retries_back_off_exponentially_then_give_up():
    w = Wire(drop=lambda t, src, seg: src == "c")  # nothing the client sends arrives
    w.client.connect(0.0)
    w.run(200.0)
    times = [t for t, s in w.sent("c")]
    # 6 retries (Linux tcp_syn_retries) at 1, 3, 7, 15, 31, 63 s; failure at 127 s.
    assert times == [0.0, 1.0, 3.0, 7.0, 15.0, 31.0, 63.0]
    assert w.events["c"] == [(127.0, Closed("timeout"))]


def test_lost_syn_is_retransmitted_and_rto_falls_back_to_3_s():
    w = Wire(drop=lose_first("S", "c"))
    w.client.connect(0.0)
    w.run(5.0)
    assert w.client.state == ESTABLISHED
    assert [t for t, s in w.sent("c") if s.flags & SYN] == [0.0, 1.0]
    # RFC 6298 5.7: no RTT sample from the retried handshake; RTO starts at 3 s.
    assert w.client.rto.rto_s == 3.0


def test_lost_synack_is_retransmitted_by_server_and_client():
    w = Wire(drop=lose_first("S.", "s"))
    w.client.connect(0.0)
    w.run(5.0)
    assert w.client.state == ESTABLISHED and w.server.state == ESTABLISHED
    synacks = [t for t, s in w.sent("s") if flags_of(s) == "S."]
    # The server's SYN-ACK timer (1 s) fires at 1.05; the client's retransmitted
    # SYN (at 1.0) also triggers one at 1.05: the first one answers both.
    assert synacks[0] == D and synacks[1] == pytest.approx(1.0 + D)


def test_lost_third_ack_is_recovered_by_data():
    w = Wire(drop=lose_first("ack", "c"))
    w.client.connect(0.0)
    w.run(1.0)
    assert w.server.state != ESTABLISHED  # its ACK was lost
    w.client.send(w.at(1.0), b"hello")
    w.run(2.0)
    assert w.server.state == ESTABLISHED and bytes(w.received["s"]) == b"hello"


def test_lost_data_is_retransmitted_after_rto():
    w = established(drop=lose_first("data", "c"))
    rto = w.client.rto.rto_s
    w.client.send(w.at(2.0), b"x" * 100)
    w.run(10.0)
    data_times = [t for t, s in w.sent("c") if s.payload]
    assert data_times == [2.0, pytest.approx(2.0 + rto)]
    assert bytes(w.received["s"]) == b"x" * 100
    # The handshake measured 100 ms: RTO = SRTT + 4 RTTVAR = 0.1 + 4 * 0.05, above min 0.2.
    assert rto == pytest.approx(0.3)


def test_rto_doubles_on_repeated_loss_and_respects_minimum():
    w = established(drop=lose_first("data", "c", count=3))
    w.client.send(w.at(2.0), b"x" * 10)
    w.run(10.0)
    times = [t for t, s in w.sent("c") if s.payload]
    assert times == [2.0, pytest.approx(2.3), pytest.approx(2.9), pytest.approx(4.1)]
    w2 = established(delay_s=0.001)
    # Linux: 2 ms RTT -> SRTT 0.002 + max(4 x 0.001, rto_min 0.2) = 0.202 s.
    assert w2.client.rto.rto_s == pytest.approx(0.202)
    rfc = TcpParams(rto="rfc6298")
    w3 = established(client_params=rfc, server_params=rfc, delay_s=0.001)
    assert w3.client.rto.rto_s == pytest.approx(1.0)  # RFC 6298 2.4: at least 1 s


def test_rto_modes_on_worked_numbers():
    """SRTT/RTTVAR per RFC 6298 2.2-2.3, then each mode's RTO (seconds)."""
    from iotbench.proto.retransmit import RtoEstimator

    def estimator(mode: str) -> RtoEstimator:
        p = TcpParams(rto=mode)
        return RtoEstimator(
            initial_rto_s=p.initial_rto_s,
            min_rto_s=p.rto_min_s,
            max_rto_s=p.max_rto_s,
            variance_floor_s=p.rto_min_s if mode == "linux" else 0.0,
        )

    linux, rfc = estimator("linux"), estimator("rfc6298")
    # First sample 0.1: SRTT 0.1, RTTVAR 0.05, 4 RTTVAR 0.2.
    assert linux.update(0.1) == pytest.approx(0.1 + 0.2)  # max(0.2, 0.2)
    assert rfc.update(0.1) == pytest.approx(1.0)  # 0.3, raised to the 1 s minimum
    # A long constant delay (S3's delay-5: 10 s round trips): RTTVAR decays by
    # 3/4 per sample, so 4 RTTVAR soon falls below 200 ms. Linux keeps SRTT +
    # 200 ms; the sum bounded below (the old behaviour) would drop to SRTT + 4 RTTVAR.
    for est in (linux, rfc):
        est.srtt_s = est.rttvar_s = None
        est.update(10.0)  # SRTT 10, RTTVAR 5: RTO 30
    for _ in range(20):
        linux.update(10.0)
        rfc.update(10.0)
    assert linux.rttvar_s == pytest.approx(5 * 0.75**20)  # 0.0159
    assert linux.rto_s == pytest.approx(10.0 + 0.2)
    assert rfc.rto_s == pytest.approx(10.0 + 4 * 5 * 0.75**20)  # 10.063


def test_rto_mode_is_validated():
    with pytest.raises(ValueError, match="TcpParams.rto must be one of"):
        TcpParams(rto="bsd")
    assert TcpParams().rto_min_s == 0.2 and TcpParams(rto="rfc6298").rto_min_s == 1.0
    assert TcpParams(rto="rfc6298", min_rto_s=0.5).rto_min_s == 0.5


def test_lost_ack_of_data_is_recovered_by_retransmission():
    w = established(drop=lose_first("ack", "s"))
    w.client.send(w.at(2.0), b"abc")
    w.run(10.0)
    assert bytes(w.received["s"]) == b"abc"  # delivered once despite the duplicate
    assert w.client.snd_una == w.client.snd_max  # all acknowledged in the end
    assert len([s for _, s in w.sent("c") if s.payload]) == 2


def test_lost_fin_is_retransmitted():
    w = established(drop=lose_first("F.", "c"))
    rto = w.client.rto.rto_s  # 0.3 s, measured by the handshake
    w.client.close(w.at(2.0))
    w.run(10.0)
    assert w.server.state == CLOSE_WAIT
    fin_times = [t for t, s in w.sent("c") if s.flags & FIN]
    assert fin_times == [2.0, pytest.approx(2.0 + rto)]


def test_data_retransmissions_give_up_after_max_retransmissions():
    p = TcpParams(max_retransmissions=3)
    w = established(client_params=p)
    w.drop = lambda t, src, seg: src == "c"
    w.client.send(w.at(2.0), b"x")
    w.run(100.0)
    assert len([s for _, s in w.sent("c") if s.payload]) == 4
    assert w.events["c"][-1][1] == Closed("timeout")


# ---- data transfer, ACK policy, congestion control ------------------------------------


def test_delayed_ack_every_second_segment_or_after_40_ms():
    # ack="rfc5681"; Linux's quick ACKs and ping-pong mode: test_tcp_acks.py.
    w = established(client_params=TcpParams(nagle=False), server_params=TcpParams(ack="rfc5681"))
    c = w.client
    c.send(w.at(2.0), b"a" * c.smss)
    w.run(2.0 + D + 0.001)
    assert not [x for t, x in w.sent("s") if t > 2.0]  # one segment: ACK delayed
    w.run(2.0 + D + 0.05)
    (t_ack,) = [t for t, x in w.sent("s") if t > 2.0]
    assert t_ack == pytest.approx(2.0 + D + 0.04)
    c.send(w.at(3.0), b"b" * (2 * c.smss))
    w.run(3.0 + D + 0.001)
    acks = [t for t, x in w.sent("s") if t > 3.0]
    assert acks == [pytest.approx(3.0 + D)]  # the second segment is acknowledged at once


def test_nagle_holds_small_segments_while_data_is_unacknowledged():
    w = established()
    w.client.send(w.at(2.0), b"a")
    w.client.send(2.0, b"b")
    w.client.send(2.0, b"c")
    w.run(2.5)
    payloads = [s.payload for t, s in w.sent("c") if s.payload]
    assert payloads == [b"a", b"bc"]  # "bc" waited for the ACK of "a"
    w2 = established(client_params=TcpParams(nagle=False))
    for x in (b"a", b"b", b"c"):
        w2.client.send(w2.at(2.0), x)
    w2.run(2.5)
    assert [s.payload for t, s in w2.sent("c") if s.payload] == [b"a", b"b", b"c"]


def test_segments_are_sized_to_the_mss_less_timestamps():
    w = established(mss=500)
    w.client.send(w.at(2.0), bytes(2000))
    w.run(4.0)
    sizes = [len(s.payload) for _, s in w.sent("c") if s.payload]
    assert sizes == [488, 488, 488, 488, 48]  # 500 - 12 bytes of timestamp option


def test_initial_window_is_ten_segments():
    w = established(client_params=TcpParams(nagle=False), mss=100)
    w.client.send(w.at(2.0), bytes(5000))
    w.run(2.0 + D)  # before any ACK can come back
    first_flight = [s for t, s in w.sent("c") if s.payload]
    assert len(first_flight) == 10


def test_slow_start_then_fast_retransmit_and_newreno_recovery():
    lost = {"seq": None}

    def drop(t, src, seg):
        # Lose the 15th data segment once.
        if src == "c" and seg.payload:
            drop.count += 1
            if drop.count == 15:
                lost["seq"] = seg.seq
                return True
        return False

    drop.count = 0
    p = TcpParams(nagle=False, sack=False)
    w = established(client_params=p, server_params=p, mss=100, drop=drop)
    data = bytes(random.Random(3).getrandbits(8) for _ in range(8000))
    w.client.send(w.at(2.0), data)
    w.run(20.0)
    assert bytes(w.received["s"]) == data
    resent = [t for t, s in w.sent("c") if s.seq == lost["seq"] and s.payload]
    assert len(resent) == 2
    # Fast retransmit: well before the RTO would have fired.
    assert resent[1] - resent[0] < w.client.rto.rto_s
    cc = w.client.cc
    assert not cc.in_recovery and cc.ssthresh < 1 << 40  # recovery ran and ended


def test_sack_blocks_report_out_of_order_data_and_sender_skips_them():
    losses = {"n": 0}

    def drop(t, src, seg):
        if src == "c" and seg.payload:
            losses["n"] += 1
            return losses["n"] in (3, 6)  # two holes in one window
        return False

    w = established(client_params=TcpParams(nagle=False), mss=100, drop=drop)
    data = bytes(range(256)) * 8
    w.client.send(w.at(2.0), data)
    w.run(20.0)
    assert bytes(w.received["s"]) == data
    sacks = [s.sack_blocks for _, s in w.sent("s") if s.sack_blocks]
    assert sacks, "the receiver reported SACK blocks"
    # Both holes are repaired without resending what the receiver held:
    # 2048 bytes are 24 segments of up to 88 bytes, plus the 2 lost ones again.
    assert len([s for _, s in w.sent("c") if s.payload]) == 24 + 2


def test_bulk_transfer_over_a_lossy_wire_delivers_every_byte_in_order():
    rng = random.Random(11)
    w = established(drop=lambda t, src, seg: t > 1.0 and rng.random() < 0.1, mss=536)
    data = bytes(rng.getrandbits(8) for _ in range(50_000))
    w.client.send(w.at(2.0), data)
    w.client.close(2.0)
    w.run(600.0)
    assert bytes(w.received["s"]) == data
    assert w.event_names("s")[-1] == "PeerClosed"


# ---- TCP Fast Open --------------------------------------------------------------------


def tfo_wire(cookie_ok: bool = True, **kw) -> Wire:
    p = TcpParams(fast_open=True)
    w = Wire(client_params=p, server_params=p, **kw)
    good = b"GOODCOOK"

    def setup(server: TcpConnection) -> None:
        server.tfo_grant = good
        server.tfo_valid = lambda c: cookie_ok and c == good

    w.on_server_created = setup
    return w


def test_fast_open_cookie_request_and_grant():
    w = tfo_wire()
    w.client.connect(0.0)
    w.run(1.0)
    syn, synack = w.sent("c")[0][1], w.sent("s")[0][1]
    assert syn.fast_open == b"" and synack.fast_open == b"GOODCOOK"
    cookie_events = [e for _, e in w.events["c"] if type(e).__name__ == "FastOpenCookie"]
    assert cookie_events[0].cookie == b"GOODCOOK" and cookie_events[0].mss == 1460


def test_fast_open_data_in_the_syn_with_a_valid_cookie():
    w = tfo_wire()
    w.client.send(0.0, b"GET / HTTP/1.1\r\n\r\n", header_len=18)
    w.client.set_syn_data_mss(1460)
    w.client.connect(0.0, fast_open_cookie=b"GOODCOOK")
    w.run(1.0)
    syn = w.sent("c")[0][1]
    assert syn.payload == b"GET / HTTP/1.1\r\n\r\n" and syn.fast_open == b"GOODCOOK"
    # The server's application has the request half a round trip after the SYN left.
    (t, data_event) = [(t, e) for t, e in w.events["s"] if isinstance(e, DataReceived)][0]
    assert t == D and data_event.data == syn.payload
    synack = w.sent("s")[0][1]
    assert synack.ack == (syn.seq + 1 + len(syn.payload)) % 2**32  # data acknowledged
    # Nothing is sent twice.
    assert len([s for _, s in w.sent("c") if s.payload]) == 1


def test_fast_open_with_an_invalid_cookie_falls_back_to_the_handshake():
    w = tfo_wire(cookie_ok=False)
    w.client.send(0.0, b"hello")
    w.client.set_syn_data_mss(1460)
    w.client.connect(0.0, fast_open_cookie=b"BADCOOKI")
    w.run(2.0)
    synack = w.sent("s")[0][1]
    assert synack.ack == (w.sent("c")[0][1].seq + 1) % 2**32  # only the SYN acknowledged
    assert synack.fast_open == b"GOODCOOK"  # a fresh cookie
    assert bytes(w.received["s"]) == b"hello"  # sent again after the handshake
    assert [len(s.payload) for _, s in w.sent("c") if s.payload] == [5, 5]


def test_fast_open_off_sends_no_option():
    w = Wire()
    w.client.send(0.0, b"hi")
    w.client.connect(0.0, fast_open_cookie=b"GOODCOOK")
    w.run(1.0)
    syn = w.sent("c")[0][1]
    assert syn.fast_open is None and not syn.payload
    assert bytes(w.received["s"]) == b"hi"


def test_syn_data_is_bounded_by_cached_mss_less_option_space():
    w = tfo_wire()
    w.client.send(0.0, bytes(500))
    w.client.set_syn_data_mss(88)  # S1's 128-byte MTU
    w.client.connect(0.0, fast_open_cookie=b"GOODCOOK")
    w.run(5.0)
    assert len(w.sent("c")[0][1].payload) == 48
    assert bytes(w.received["s"]) == bytes(500)


# ---- receiving ------------------------------------------------------------------------


def test_old_duplicate_data_is_acknowledged_not_delivered_twice():
    w = established()
    w.client.send(w.at(2.0), b"once")
    w.run(3.0)
    seg = [s for _, s in w.sent("c") if s.payload][0]
    w.server.receive(3.0, seg)
    (ack, _) = w.server.segments_to_send()[-1]
    assert flags_of(ack) == "." and bytes(w.received["s"]) == b"once"
    assert not [e for e in w.server.events() if isinstance(e, DataReceived)]


def test_connected_and_peer_closed_events_order():
    w = established()
    w.client.send(w.at(2.0), b"x")
    w.client.close(2.0)
    w.run(5.0)
    names = w.event_names("s")
    assert names == ["Connected", "DataReceived", "PeerClosed"]
    assert isinstance(w.events["s"][0][1], Connected)
    assert isinstance(w.events["s"][-1][1], PeerClosed)


def test_ack_flag_without_syn_in_syn_sent_gets_rst():
    c = TcpConnection(TcpParams(), random.Random(1), 1, 2, 1460)
    c.connect(0.0)
    c.segments_to_send()
    c.receive(0.1, Segment(2, 1, 5, (c.iss + 999) % 2**32, ACK, 100))
    (rst, _) = c.segments_to_send()[0]
    assert rst.flags == RST and rst.seq == (c.iss + 999) % 2**32
    assert c.state != CLOSED


def test_nagle_minshall_a_full_segment_in_flight_does_not_hold_the_small_tail():
    w = established(mss=500)
    w.client.send(w.at(2.0), bytes(488 + 19))  # one full segment and a small tail
    w.run(2.0 + 0.001)
    sizes = [len(s.payload) for t, s in w.sent("c") if s.payload]
    assert sizes == [488, 19]  # both leave at once (Linux's Minshall check)


def test_an_ack_for_two_segments_echoes_the_first_ones_timestamp():
    # RFC 7323 4.3: TS.Recent only takes a segment that starts at or before
    # Last.ACK.sent, so a delayed ACK of two segments echoes the first TSval and
    # the sender's RTT sample includes the delayed-ACK wait.
    fast = TcpParams(nagle=False, ack="rfc5681")  # Linux would ACK these at once (quick ACKs)
    w = established(client_params=fast, server_params=fast)
    w.client.send(w.at(2.0), b"a" * 100)
    w.client.send(w.at(2.02), b"b" * 100)
    w.run(3.0)
    first, second = [s for _, s in w.sent("c") if s.payload]
    assert first.timestamps[0] != second.timestamps[0]
    acks = [s for t, s in w.sent("s") if t > 2.0 and not s.payload]
    assert acks[0].ack == (second.seq + 100) % 2**32  # one ACK for both
    assert acks[0].timestamps[1] == first.timestamps[0]
