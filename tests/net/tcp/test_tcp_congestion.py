"""NewReno (RFC 5681, RFC 6582) step by step: exact cwnd and ssthresh through slow
start, congestion avoidance, fast retransmit, partial and full ACKs, and a timeout."""

from iotbench.net.tcp.congestion import NewReno

MSS = 1000


def test_slow_start_grows_by_at_most_one_mss_per_ack():
    cc = NewReno(MSS, 10)
    assert (cc.cwnd, cc.ssthresh) == (10_000, 1 << 62)
    cc.on_new_ack(1000, 1000, 10_000)
    assert cc.cwnd == 11_000
    cc.on_new_ack(2000, 3000, 10_000)  # a delayed ACK of two segments: still one MSS
    assert cc.cwnd == 12_000
    cc.on_new_ack(500, 3500, 10_000)
    assert cc.cwnd == 12_500  # min(N, SMSS) with N < SMSS


def test_timeout_then_slow_start_to_ssthresh_then_congestion_avoidance():
    cc = NewReno(MSS, 10)
    cc.on_timeout(flight=20_000, highest_sent=20_000)
    assert (cc.cwnd, cc.ssthresh, cc.recover) == (1000, 10_000, 20_000)  # RFC 5681 eq. 4
    for _ in range(9):
        cc.on_new_ack(1000, 0, 1000)
    assert cc.cwnd == 10_000  # slow start up to ssthresh
    cc.on_new_ack(1000, 0, 10_000)
    assert cc.cwnd == 10_100  # congestion avoidance: SMSS * SMSS // cwnd (eq. 3)
    cc.on_new_ack(1000, 0, 10_000)
    assert cc.cwnd == 10_199
    small = NewReno(MSS, 1)
    small.on_timeout(flight=1000, highest_sent=1000)
    assert small.ssthresh == 2000  # never below 2 SMSS


def test_fast_retransmit_partial_and_full_acks():
    cc = NewReno(MSS, 10)
    cc.cwnd = 16_000
    assert not cc.on_dup_ack(ack=34_000, flight=16_000, highest_sent=50_000)
    assert not cc.on_dup_ack(ack=34_000, flight=16_000, highest_sent=50_000)
    # Third duplicate: ssthresh = FlightSize / 2, cwnd = ssthresh + 3 SMSS (RFC 6582 3.2 2).
    assert cc.on_dup_ack(ack=34_000, flight=16_000, highest_sent=50_000)
    assert (cc.ssthresh, cc.cwnd, cc.recover, cc.in_recovery) == (8000, 11_000, 50_000, True)
    cc.on_dup_ack(ack=34_000, flight=16_000, highest_sent=50_000)
    assert cc.cwnd == 12_000  # step 4: inflate by one SMSS per further duplicate
    # Partial ACK of 3 SMSS: deflate by 3000, add one SMSS back; retransmit the next.
    assert cc.on_new_ack(acked=3000, ack=37_000, flight_before=16_000)
    assert cc.cwnd == 10_000 and cc.in_recovery
    # A partial ACK of less than one SMSS adds nothing back.
    assert cc.on_new_ack(acked=500, ack=37_500, flight_before=13_000)
    assert cc.cwnd == 9500
    # Full ACK (covers `recover`) with 4000 bytes still outstanding afterwards:
    # cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS) = min(8000, 5000).
    assert not cc.on_new_ack(acked=8500, ack=50_000, flight_before=12_500)
    assert (cc.cwnd, cc.in_recovery) == (5000, False)


def test_full_ack_with_nothing_outstanding_leaves_two_segments():
    cc = NewReno(MSS, 10)
    cc.cwnd = 16_000
    for _ in range(3):
        cc.on_dup_ack(ack=1000, flight=15_000, highest_sent=16_000)
    assert cc.in_recovery
    # Everything acknowledged at once: FlightSize 0, so max(0, SMSS) + SMSS.
    cc.on_new_ack(acked=15_000, ack=16_000, flight_before=15_000)
    assert cc.cwnd == 2000


def test_duplicates_after_a_timeout_do_not_halve_again():
    cc = NewReno(MSS, 10)
    cc.on_timeout(flight=10_000, highest_sent=30_000)
    for _ in range(3):
        assert not cc.on_dup_ack(ack=25_000, flight=5000, highest_sent=30_000)
    assert (cc.ssthresh, cc.cwnd, cc.in_recovery) == (5000, 1000, False)  # RFC 6582 4.1
