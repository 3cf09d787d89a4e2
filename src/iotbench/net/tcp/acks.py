"""When the receiver acknowledges: the delayed-ACK policies of TcpParams.ack.

A TcpConnection asks its policy three questions about in-order data it has
received: must the ACK go at once (`ack_now`), may it go when the
application has read the data (`ack_at_read`; in the simulator an
application reads as soon as data arrives, so that is before its reply),
and otherwise how long may it wait (`delay_s`). The policy hears what
happens: data received, data sent, ACKs sent, the delayed-ACK timer firing
and the peer's FIN.

"rfc5681" acknowledges at least every second segment (RFC 5681 4.2 and RFC
1122 4.2.3.2, counting segments of any size) and otherwise after
delayed_ack_s, and acknowledges a FIN at once.

"linux" follows Linux's receive path (net/ipv4/tcp_input.c and
tcp_output.c, as of 6.x), the default because the studies ran Linux hosts:

- quick ACKs: the first data of a connection (and data after an idle gap
  longer than the RTO) turns on quickack mode, which acknowledges every
  segment at once, up to 16 ACKs (tcp_incr_quickack with
  TCP_MAX_QUICKACKS; fewer with a small window);
- ping-pong (interactive) mode: sending data within ATO of the last data
  received marks the connection interactive (tcp_pingpong_thresh 1, the
  default since Linux 6.5), which suspends quick ACKs so that replies carry
  the ACK; a delayed-ACK timer that fires in this mode leaves it. A FIN
  from the peer enters it, so an application that closes as soon as it
  reads the FIN sends its FIN with the ACK;
- otherwise an ACK goes at once when more than one receive MSS (the
  estimated segment size, rcv_mss) is unacknowledged, or when the
  application reads after two small pushed segments (ICSK_ACK_PUSHED2), or
  after one when not interactive (tcp_cleanup_rbuf); else the delayed-ACK
  timer, ATO, starts at 40 ms and adapts to the gaps between arrivals
  (tcp_event_data_recv), bounded by the smoothed RTT (at least 40 ms) and
  200 ms (tcp_send_delayed_ack).
"""

from __future__ import annotations

ACK_MODES = ("linux", "rfc5681")

ACK_EVERY = 2  # RFC 5681 4.2: at least every second full-sized segment

# Linux constants (include/net/tcp.h).
TCP_ATO_MIN_S = 0.04  # TCP_ATO_MIN = TCP_DELACK_MIN = HZ/25
TCP_DELACK_MAX_S = 0.2  # HZ/5
TCP_MAX_QUICKACKS = 16
TCP_MSS_DEFAULT = 536
TCP_MIN_MSS = 88
PINGPONG_THRESH = 1  # net.ipv4.tcp_pingpong_thresh


class AckPolicy:
    """The questions a connection asks and the events it reports (see above)."""

    def negotiated(self, mss: int, header_len: int) -> None:
        """Segment sizes once the handshake is done: the smaller MSS of the two
        ends, and the fixed TCP header length (32 with timestamps, else 20)."""

    def on_data(self, now: float, size: int, push: bool, rto_s: float) -> None:
        """In-order data of `size` bytes arrived (PSH set or not)."""

    def on_duplicate(self) -> None:
        """A segment arrived that holds only data already received."""

    def ack_now(self, unacked_bytes: int) -> bool:
        """Must the ACK of what just arrived go at once?"""
        raise NotImplementedError

    def ack_at_read(self) -> bool:
        """May it go when the application has read the data?"""
        return False

    def delay_s(self, srtt_s: float | None) -> float:
        """Otherwise, the delayed-ACK timeout."""
        raise NotImplementedError

    def on_ack_sent(self) -> None:
        """An ACK left, pure or with data or a FIN."""

    def on_data_sent(self, now: float) -> None:
        """A segment with data left."""

    def on_delack_timeout(self, rto_s: float) -> None:
        """The delayed-ACK timer fired (nothing carried the ACK in time)."""

    def fin_ack_delayed(self) -> bool:
        """The peer's FIN arrived in ESTABLISHED: may its ACK wait for ours?"""
        return False


class Rfc5681Acks(AckPolicy):
    """ACK every second segment, otherwise after a fixed delay; a FIN at once."""

    def __init__(self, delay_s: float) -> None:
        self._delay_s = delay_s
        self._segments = 0

    def on_data(self, now: float, size: int, push: bool, rto_s: float) -> None:
        self._segments += 1

    def ack_now(self, unacked_bytes: int) -> bool:
        return self._segments >= ACK_EVERY

    def delay_s(self, srtt_s: float | None) -> float:
        return self._delay_s

    def on_ack_sent(self) -> None:
        self._segments = 0


class LinuxAcks(AckPolicy):
    """Linux's delayed-ACK engine (the receive side of one connection)."""

    def __init__(self, mss: int, receive_window: int) -> None:
        self._window = receive_window
        self._mss = mss
        self._header_len = 20  # tcp_header_len: 32 with timestamps
        self.rcv_mss = self._initial_rcv_mss()
        self._last_seg_size = 0
        self.quick = 0  # quick ACKs left
        self.pingpong = 0
        self.ato = 0.0  # 0 until the first data arrives
        self._lrcvtime = 0.0
        self._pushed = 0  # ICSK_ACK_PUSHED (1) and PUSHED2 (2)
        self._scheduled = False  # an ACK of new data is owed

    def _initial_rcv_mss(self) -> int:
        """tcp_initialize_rcv_mss: min(MSS, window / 2, 536), at least 88."""
        return max(TCP_MIN_MSS, min(self._mss, self._window // 2, TCP_MSS_DEFAULT))

    def negotiated(self, mss: int, header_len: int) -> None:
        self._mss = mss
        self._header_len = header_len
        self.rcv_mss = self._initial_rcv_mss()

    @property
    def interactive(self) -> bool:
        return self.pingpong >= PINGPONG_THRESH

    def _incr_quickack(self, most: int) -> None:
        quickacks = self._window // (2 * self.rcv_mss) or 2
        self.quick = max(self.quick, min(quickacks, most))

    def _measure_rcv_mss(self, size: int, push: bool) -> None:
        """tcp_measure_rcv_mss: learn the peer's segment size; note small pushed ones."""
        if size >= self.rcv_mss:
            self.rcv_mss = min(size, self._mss)
            return
        with_header = size + self._header_len
        if with_header >= TCP_MSS_DEFAULT + 20 or (with_header >= TCP_MIN_MSS + 20 and not push):
            last, self._last_seg_size = self._last_seg_size, size
            if size == last:
                self.rcv_mss = size
                return
        self._pushed = 2 if self._pushed else 1

    def on_data(self, now: float, size: int, push: bool, rto_s: float) -> None:
        """tcp_event_data_recv: in-order data of `size` bytes arrived."""
        self._scheduled = True
        self._measure_rcv_mss(size, push)
        if not self.ato:
            # The first data: start the delayed-ACK engine in quickack mode.
            self._incr_quickack(TCP_MAX_QUICKACKS)
            self.ato = TCP_ATO_MIN_S
        else:
            gap = now - self._lrcvtime
            if gap <= TCP_ATO_MIN_S / 2:
                self.ato = self.ato / 2 + TCP_ATO_MIN_S / 2
            elif gap < self.ato:
                self.ato = min(self.ato / 2 + gap, rto_s)
            elif gap > rto_s:
                # Too long a gap: the sender restarts from idle; ACK it quickly.
                self._incr_quickack(TCP_MAX_QUICKACKS)
        self._lrcvtime = now

    def on_duplicate(self) -> None:
        """tcp_enter_quickack_mode: a retransmission of received data means our
        ACK was lost or late; acknowledge quickly and leave ping-pong mode."""
        self._incr_quickack(TCP_MAX_QUICKACKS)
        self.pingpong = 0
        self.ato = TCP_ATO_MIN_S

    def ack_now(self, unacked_bytes: int) -> bool:
        """__tcp_ack_snd_check: more than one full frame, or quickack mode."""
        return unacked_bytes > self.rcv_mss or (self.quick > 0 and not self.interactive)

    def ack_at_read(self) -> bool:
        """tcp_cleanup_rbuf: the application read after small pushed segments."""
        if not self._scheduled:
            return False
        return self._pushed == 2 or (self._pushed == 1 and not self.interactive)

    def delay_s(self, srtt_s: float | None) -> float:
        """tcp_send_delayed_ack's timeout."""
        ato = self.ato
        if ato > TCP_ATO_MIN_S:
            most = TCP_DELACK_MAX_S if self.interactive or self._pushed else 0.5
            if srtt_s is not None:
                most = min(most, max(srtt_s, TCP_ATO_MIN_S))
            ato = min(ato, most)
        return ato

    def on_ack_sent(self) -> None:
        """tcp_event_ack_sent: an ACK left (pure, or with data or a FIN)."""
        if self.quick and self._scheduled:
            self.quick -= 1
            if not self.quick:
                self.ato = TCP_ATO_MIN_S  # leaving quickack mode deflates ATO
        self._scheduled = False
        self._pushed = 0

    def on_data_sent(self, now: float) -> None:
        """tcp_event_data_sent: a reply within ATO of the last arrival is interactive."""
        if now - self._lrcvtime < self.ato:
            self.pingpong += 1

    def on_delack_timeout(self, rto_s: float) -> None:
        """tcp_delack_timer_handler: the delayed ACK was not piggybacked."""
        if self.interactive:
            self.pingpong = 0
            self.ato = TCP_ATO_MIN_S
        else:
            self.ato = min(2 * self.ato, rto_s)

    def fin_ack_delayed(self) -> bool:
        """tcp_fin in ESTABLISHED: enter ping-pong mode and delay the ACK."""
        self._scheduled = True
        self.pingpong = max(self.pingpong, PINGPONG_THRESH)
        return True
