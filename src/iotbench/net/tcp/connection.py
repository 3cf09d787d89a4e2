"""One TCP connection as a sans-I/O state machine (RFC 9293).

Inputs: `receive(now, segment)`, `handle_timer(now)` and the application's
`connect`, `send`, `close` and `abort`. Outputs: `segments_to_send()` (each
with how many of its payload bytes are application header), `events()` and
`next_timer()`. No clock, socket or global random state: time is passed in,
and the initial sequence number and timestamp offset come from the injected
`random.Random`.

What is implemented, and the choices RFCs leave open:

- The RFC 9293 state machine with the three-way handshake, SYN and SYN-ACK
  retries with exponential back-off (RFC 6298 5.7 fallback to 3 s once data
  flows after a retried handshake), FIN/RST teardown, TIME_WAIT, and the
  RFC 5961 challenge ACK for in-window RST/SYN.
- Sequence numbers are kept as unbounded offsets from each side's ISN (0 is
  the SYN) and converted to 32-bit values only on the wire, so comparisons
  never wrap.
- Retransmission: RFC 6298 with the project's RtoEstimator (Karn's rule; RTT
  from timestamps when negotiated), go-back-N from the first unacknowledged
  byte after a timeout.
- Congestion control: NewReno (congestion.py). With SACK negotiated, the
  receiver reports SACK blocks (RFC 2018) and the sender skips ranges the
  peer holds when it retransmits (a SACK-aware NewReno, not RFC 6675's pipe
  algorithm).
- Receiving: out-of-order segments are kept and reassembled; an ACK is sent
  for every second segment or after the delayed-ACK timeout, at once for an
  out-of-order segment, a segment filling a gap, or a FIN. Applications take
  data as it arrives, so the advertised window is always the full buffer and
  no persist timer is needed.
- Nagle's algorithm (RFC 896) with Minshall's refinement, as Linux has it: a
  small segment waits only while an earlier small segment is unacknowledged,
  unless `TcpParams.nagle` is off or the application has closed.
- TCP Fast Open (RFC 7413): see `connect` and `listen_accept`.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from iotbench.net.tcp.acks import AckPolicy, LinuxAcks, Rfc5681Acks
from iotbench.net.tcp.congestion import NewReno
from iotbench.net.tcp.events import (
    Closed,
    CloseReason,
    Connected,
    DataReceived,
    FastOpenCookie,
    PeerClosed,
    TcpEvent,
)
from iotbench.net.tcp.params import TcpParams
from iotbench.net.tcp.segment import ACK, FIN, PSH, RST, SYN, Segment
from iotbench.proto.retransmit import RtoEstimator

CLOSED = "CLOSED"
LISTEN = "LISTEN"
SYN_SENT = "SYN-SENT"
SYN_RECEIVED = "SYN-RECEIVED"
ESTABLISHED = "ESTABLISHED"
FIN_WAIT_1 = "FIN-WAIT-1"
FIN_WAIT_2 = "FIN-WAIT-2"
CLOSE_WAIT = "CLOSE-WAIT"
CLOSING = "CLOSING"
LAST_ACK = "LAST-ACK"
TIME_WAIT = "TIME-WAIT"

# States in which data may be sent / received.
_CAN_SEND = frozenset({ESTABLISHED, CLOSE_WAIT, FIN_WAIT_1, CLOSING, LAST_ACK})
_CAN_RECEIVE = frozenset({ESTABLISHED, FIN_WAIT_1, FIN_WAIT_2})
# States after the peer's FIN: a FIN further on is not a second end of its stream.
_PEER_FINISHED = frozenset({CLOSE_WAIT, CLOSING, LAST_ACK, TIME_WAIT})

MOD = 1 << 32
DEFAULT_PEER_MSS = 536  # RFC 9293 3.7.1: assumed when the SYN carries no MSS option
# The smallest MSS taken from a peer (Linux's tcp_min_snd_mss): a smaller one, down
# to 0, would leave no room for data beside the timestamp option.
MIN_PEER_MSS = 48
TIMESTAMP_OPTION_LEN = 12  # NOP NOP TS, in every segment once negotiated
MAX_SYN_OPTION_SPACE = 40


def _signed32(x: int) -> int:
    x &= MOD - 1
    return x - MOD if x >= 1 << 31 else x


class TcpConnection:
    """One end of a TCP connection."""

    def __init__(
        self,
        params: TcpParams,
        rng: random.Random,
        local_port: int,
        remote_port: int,
        mss: int,
    ) -> None:
        self.params = params
        self.local_port = local_port
        self.remote_port = remote_port
        self.mss = mss  # what we announce
        self.state = CLOSED
        self.iss = rng.getrandbits(32)
        self.irs = 0
        # RFC 7323 5.4: timestamps start at a random offset per connection.
        self._ts_offset = rng.getrandbits(32)

        # ---- send side (offsets from our ISN; 0 is the SYN, data starts at 1)
        self.snd_una = 0
        self.snd_nxt = 0
        self.snd_max = 0
        self.snd_wnd = 0
        self._wl1 = 0
        self._wl2 = 0
        self._buf = bytearray()
        self._buf_start = 1  # offset of _buf[0]
        self.data_end = 1  # one past the last byte the application gave us
        self._header_marks: list[list[int]] = []  # [start, end) of application headers
        self.fin_queued = False
        self._sacked: list[list[int]] = []  # peer's SACK blocks above snd_una, merged
        self.smss = DEFAULT_PEER_MSS
        self.cc: NewReno | None = None
        self.rto = RtoEstimator(
            initial_rto_s=params.initial_rto_s,
            min_rto_s=params.rto_min_s,
            max_rto_s=params.max_rto_s,
            variance_floor_s=params.rto_min_s if params.rto == "linux" else 0.0,
        )
        self._timed: tuple[int, float] | None = None  # (end offset, send time): RTT sample
        self._backoffs = 0  # consecutive timeouts of the same data
        self._syn_sent_at = 0.0
        self._syn_retries = 0
        self._syn_data = 0  # bytes of data our SYN carried (Fast Open)
        self._small_end = 0  # end of the last segment shorter than the MSS (Nagle)

        # ---- receive side (offsets from the peer's ISN; 0 is its SYN)
        self.rcv_nxt = 0
        # Out-of-order segments: start -> (first byte kept, the bytes kept); see _hold.
        self._ooo: dict[int, tuple[int, bytes]] = {}
        self._sack_report: list[list[int]] = []  # most recent first (RFC 2018 4)
        self._peer_fin: int | None = None  # offset of a FIN seen beyond a gap
        self._ack_now = False
        self._acks: AckPolicy = (
            LinuxAcks(mss, params.receive_buffer_bytes)
            if params.ack == "linux"
            else Rfc5681Acks(params.delayed_ack_s)
        )
        self._ts_recent = 0
        # RFC 7323 4.3: the ACK field we last sent (Last.ACK.sent), as an offset.
        self._last_ack_sent = 0

        # ---- negotiated options
        self.sack_ok = False
        self.ts_ok = False
        self.ws_ok = False
        self._snd_wscale = 0  # shift of the peer's windows
        self._rcv_wscale = 0  # shift of ours

        # ---- Fast Open
        self._tfo_cookie: bytes | None = None  # client: the cookie our SYN carries
        self._tfo_request = False  # client: our SYN asks for a cookie
        self.tfo_grant: bytes | None = None  # server: cookie to put in the SYN-ACK
        self.tfo_valid: Callable[[bytes], bool] = lambda cookie: False  # server check
        self.tfo_accepted = False  # server: data of the SYN was taken

        # ---- timers (absolute times, None = not armed)
        self._rto_at: float | None = None
        self._delack_at: float | None = None
        self._wait_at: float | None = None  # TIME_WAIT or FIN_WAIT_2 expiry

        self._out: list[tuple[Segment, int]] = []
        self._events: list[TcpEvent] = []
        self._closed_reported = False

    # =================================================================== outputs

    def segments_to_send(self) -> list[tuple[Segment, int]]:
        """(segment, application-header bytes in its payload), in order (drains)."""
        out = self._out
        self._out = []
        return out

    def events(self) -> list[TcpEvent]:
        ev = self._events
        self._events = []
        return ev

    def next_timer(self) -> float | None:
        times = [t for t in (self._rto_at, self._delack_at, self._wait_at) if t is not None]
        return min(times) if times else None

    @property
    def finished(self) -> bool:
        """True once the connection holds no state any more (the stack may forget it)."""
        return self.state == CLOSED

    # =================================================================== application

    def connect(self, now: float, fast_open_cookie: bytes | None = None) -> None:
        """Active open. With Fast Open on: a cookie (from an earlier connection
        to this server) sends the queued data in the SYN; no cookie asks the
        server for one."""
        if self.state != CLOSED:
            raise RuntimeError(f"connect() in state {self.state}")
        self.state = SYN_SENT
        if self.params.fast_open:
            self._tfo_cookie = fast_open_cookie
            self._tfo_request = fast_open_cookie is None
        self._send_syn(now, first=True)

    def listen_accept(self, now: float, syn: Segment) -> None:
        """Passive open: answer the SYN that a listening stack received.

        Fast Open (server): a SYN with an empty cookie option is granted
        `tfo_grant`; a SYN whose cookie passes `tfo_valid` has its data
        delivered at once (Connected, then DataReceived, before the handshake
        completes); an invalid cookie gets a fresh one and its data is ignored
        (the client sends it again after the handshake).
        """
        if self.state != CLOSED or not syn.flags & SYN:
            raise RuntimeError("listen_accept() needs a fresh connection and a SYN")
        self.state = LISTEN
        self.irs = syn.seq
        self.rcv_nxt = 1
        self._negotiate(syn)
        self.snd_wnd = syn.window  # never scaled in a SYN (RFC 7323 2.2)
        self.state = SYN_RECEIVED
        if self.params.fast_open and syn.fast_open is not None:
            if syn.fast_open and syn.payload and self.tfo_valid(syn.fast_open):
                self.tfo_accepted = True
                self.tfo_grant = None  # the client has a good cookie
                self._start_cc()
                self._events.append(Connected())
                self._deliver(syn.payload)
                self.rcv_nxt += len(syn.payload)
            # otherwise tfo_grant (set by the stack) goes out in the SYN-ACK
        else:
            self.tfo_grant = None
        self._send_syn(now, first=True)

    def send(self, now: float, data: bytes, header_len: int = 0) -> None:
        """Queue `data`; its first `header_len` bytes are application header."""
        # Data queued before connect() goes out after the handshake, or in the
        # SYN with a Fast Open cookie.
        if self.fin_queued or self._closed_reported:
            raise RuntimeError(f"send() after close, in state {self.state}")
        if not data:
            return
        start = self.data_end
        if header_len:
            self._header_marks.append([start, start + min(header_len, len(data))])
        self._buf += data
        self.data_end += len(data)
        self._output(now)

    def close(self, now: float) -> None:
        """Send FIN after the queued data (half-close; data may still arrive)."""
        state = self.state
        if state in (CLOSED, LISTEN) or (state == SYN_SENT and self.data_end == 1):
            self._enter_closed("closed")
            return
        if self.fin_queued:
            return
        self.fin_queued = True
        if state == ESTABLISHED:
            self.state = FIN_WAIT_1
        elif state == CLOSE_WAIT:
            self.state = LAST_ACK
        # In SYN-SENT (with data queued) and SYN-RECEIVED the FIN waits for the
        # handshake to complete (RFC 9293 3.10.4).
        self._output(now)

    def abort(self, now: float) -> None:
        """Reset the connection (RST) and forget it."""
        if self.state in (SYN_RECEIVED, ESTABLISHED, FIN_WAIT_1, FIN_WAIT_2, CLOSE_WAIT):
            self._emit(self._segment(now, RST | ACK, self.snd_nxt))
        self._enter_closed("aborted")

    # =================================================================== timers

    def handle_timer(self, now: float) -> None:
        if self._wait_at is not None and now >= self._wait_at:
            self._wait_at = None
            # TIME_WAIT over, or an orphan gave up waiting in FIN_WAIT_2.
            self._enter_closed("closed" if self.state == TIME_WAIT else "timeout")
            return
        if self._rto_at is not None and now >= self._rto_at:
            self._rto_at = None
            self._on_retransmission_timeout(now)
        if self._delack_at is not None and now >= self._delack_at:
            self._delack_at = None
            self._acks.on_delack_timeout(self.rto.rto_s)
            self._ack_now = True
            self._output(now)

    def _on_retransmission_timeout(self, now: float) -> None:
        state = self.state
        if state in (SYN_SENT, SYN_RECEIVED):
            limit = self.params.syn_retries if state == SYN_SENT else self.params.synack_retries
            if self._syn_retries >= limit:
                self._enter_closed("timeout")
                return
            self._syn_retries += 1
            self._send_syn(now, first=False)
            return
        if self.snd_una >= self.snd_max:
            return
        if self._backoffs >= self.params.max_retransmissions:
            self._enter_closed("timeout")
            return
        self._backoffs += 1
        self.rto.backoff()  # RFC 6298 5.5
        self._timed = None  # Karn: no sample from what is retransmitted
        if self.cc is not None:
            self.cc.on_timeout(self.snd_max - self.snd_una, self.snd_max)
        # RFC 2018 8: after a timeout the receiver may have reneged; forget SACKs.
        self._sacked.clear()
        self.snd_nxt = self.snd_una  # go back N
        self._output(now, retransmit_one=True)

    # =================================================================== input

    def receive(self, now: float, seg: Segment) -> None:
        """Process one segment addressed to this connection."""
        state = self.state
        if state == CLOSED or state == LISTEN:
            return
        if state == SYN_SENT:
            self._receive_in_syn_sent(now, seg)
        else:
            self._receive_synchronized(now, seg)
        self._output(now)

    def _receive_in_syn_sent(self, now: float, seg: Segment) -> None:
        flags = seg.flags
        ack = None
        if flags & ACK:
            ack = (seg.ack - self.iss) % MOD
            if ack == 0 or ack > self.snd_max:
                if not flags & RST:  # RFC 9293 3.10.7.3: reset an unacceptable ACK
                    self._emit(Segment(self.local_port, self.remote_port, seg.ack, 0, RST, 0))
                return
        if flags & RST:
            if ack is not None:
                self._enter_closed("refused")
            return
        if not flags & SYN:
            return
        self.irs = seg.seq
        self.rcv_nxt = 1
        self._negotiate(seg)
        if ack is None:
            # Simultaneous open (RFC 9293 3.5): answer with a SYN-ACK.
            self.state = SYN_RECEIVED
            self.snd_wnd = seg.window
            self._send_syn(now, first=False)
            return
        self.snd_una = ack
        self.snd_nxt = max(self.snd_nxt, ack)
        self.snd_wnd = seg.window  # a SYN's window is never scaled
        self._wl1, self._wl2 = 0, ack
        if self._syn_retries == 0:
            self.rto.update(now - self._syn_sent_at)
        self._rto_at = None
        self._established()
        self._start_cc()
        if seg.fast_open:  # the server granted a cookie
            self._events.append(FastOpenCookie(seg.fast_open, seg.mss or DEFAULT_PEER_MSS))
        if ack < 1 + self._syn_data:
            # The SYN's data was not taken: send it again as ordinary data.
            self.snd_nxt = ack
        self._events.append(Connected())
        self._ack_now = True  # the handshake's third segment

    def _receive_synchronized(self, now: float, seg: Segment) -> None:
        flags = seg.flags
        state = self.state
        start = self.rcv_nxt + _signed32(seg.seq - (self.irs + self.rcv_nxt))
        if flags & SYN:
            if state == SYN_RECEIVED and seg.seq == self.irs:
                self._send_syn(now, first=False)  # our SYN-ACK was lost
                return
            self._ack_now = True  # RFC 5961 4.2: challenge ACK
            return
        payload = seg.payload
        seg_len = len(payload) + (1 if flags & FIN else 0)
        if not self._acceptable(start, seg_len):
            if not flags & RST:
                self._ack_now = True  # RFC 9293 3.10.7.4: ACK an unacceptable segment
                if payload and start < self.rcv_nxt:
                    self._acks.on_duplicate()
                if state == TIME_WAIT:
                    self._arm_wait(now, self.params.time_wait_s)
            return
        if flags & RST:
            if start == self.rcv_nxt:
                self._enter_closed("reset" if state != SYN_RECEIVED else "refused")
            else:
                self._ack_now = True  # RFC 5961 3.2: challenge ACK
            return
        if not flags & ACK:
            return
        if self._process_ack(now, seg, start) is False:
            return
        if (
            self.ts_ok
            and seg.timestamps is not None
            and start <= self._last_ack_sent
            and (seg.timestamps[0] - self._ts_recent) % MOD < 1 << 31
        ):
            # RFC 7323 4.3: only a segment that begins at or before what we last
            # acknowledged updates TS.Recent (and no older TSval), so the ACK of
            # delayed or several segments echoes the earliest one's TSval and
            # the peer's RTT sample includes the delay.
            self._ts_recent = seg.timestamps[0]
        if payload and self.state in _CAN_RECEIVE:
            self._accept_data(now, start, payload, bool(flags & PSH))
        if flags & FIN and self.state not in _PEER_FINISHED:
            self._peer_fin = start + len(payload)
        if self._peer_fin is not None and self._peer_fin == self.rcv_nxt:
            self._on_peer_fin(now)

    def _acceptable(self, start: int, seg_len: int) -> bool:
        """RFC 9293 3.10.7.4 segment acceptability against the receive window."""
        window = self.params.receive_buffer_bytes
        nxt = self.rcv_nxt
        if seg_len == 0:
            return nxt <= start <= nxt + window or start == nxt
        end = start + seg_len - 1
        return nxt <= start < nxt + window or nxt <= end < nxt + window

    def _process_ack(self, now: float, seg: Segment, start: int) -> bool | None:
        """The ACK field of a synchronized segment; False means drop the segment."""
        ack = self.snd_una + _signed32(seg.ack - (self.iss + self.snd_una))
        state = self.state
        if state == SYN_RECEIVED:
            if not self.snd_una < ack <= self.snd_max:
                self._emit(Segment(self.local_port, self.remote_port, seg.ack, 0, RST, 0))
                return False
            if self._syn_retries == 0:
                self.rto.update(now - self._syn_sent_at)
            self._established()
            if not self.tfo_accepted:
                self._start_cc()
                self._events.append(Connected())
            self._wl1, self._wl2 = start, ack
            self.snd_wnd = seg.window << self._snd_wscale
        if ack > self.snd_max:
            self._ack_now = True  # acknowledges something not yet sent
            return False
        window = seg.window << self._snd_wscale
        if ack > self.snd_una:
            self._on_new_ack(now, seg, ack)
        elif (
            ack == self.snd_una
            and self.snd_max > self.snd_una
            and not seg.payload
            and not seg.flags & FIN
            and window == self.snd_wnd
        ):
            self._on_dup_ack(now, seg)
        if self._wl1 < start or (self._wl1 == start and self._wl2 <= ack):
            self.snd_wnd = window
            self._wl1, self._wl2 = start, ack
        fin_acked = self.fin_queued and self.snd_una > self.data_end
        if state == FIN_WAIT_1 and fin_acked:
            self.state = FIN_WAIT_2
            self._arm_wait(now, self.params.fin_wait_2_s)
        elif state == CLOSING and fin_acked:
            self._enter_time_wait(now)
        elif state == LAST_ACK and fin_acked:
            self._enter_closed("closed")
            return False
        return True

    def _on_new_ack(self, now: float, seg: Segment, ack: int) -> None:
        # Data bytes newly acknowledged (the SYN and FIN occupy sequence space, not bytes).
        acked = max(0, min(ack, self.data_end) - max(self.snd_una, 1))
        flight_before = self.snd_max - self.snd_una
        # RTT sample (RFC 6298 / RFC 7323 4.1).
        if self.ts_ok and seg.timestamps is not None and seg.timestamps[1]:
            rtt_ms = (self._ts_val(now) - seg.timestamps[1]) % MOD
            if rtt_ms < 1 << 31:
                self.rto.update(rtt_ms / 1000)
        elif self._timed is not None and ack >= self._timed[0]:
            self.rto.update(now - self._timed[1])
            self._timed = None
        self.snd_una = ack
        self.snd_nxt = max(self.snd_nxt, ack)
        self._backoffs = 0
        # Drop acknowledged bytes and header marks (the FIN has no byte).
        drop = min(ack, self.data_end) - self._buf_start
        if drop > 0:
            del self._buf[:drop]
            self._buf_start += drop
        marks = self._header_marks
        while marks and marks[0][1] <= ack:
            marks.pop(0)
        while self._sacked and self._sacked[0][1] <= ack:
            self._sacked.pop(0)
        if self.sack_ok and seg.sack_blocks:
            self._record_sacks(seg)
        partial = self.cc.on_new_ack(acked, ack, flight_before) if self.cc else False
        # RFC 6298 5.2/5.3: stop the timer when all is acknowledged, else restart it.
        self._rto_at = None if self.snd_una >= self.snd_max else now + self.rto.rto_s
        if partial:
            self._retransmit_first_hole(now)

    def _on_dup_ack(self, now: float, seg: Segment) -> None:
        if self.sack_ok and seg.sack_blocks:
            self._record_sacks(seg)
        if self.cc is None:
            return
        flight = self.snd_max - self.snd_una
        if self.cc.on_dup_ack(self.snd_una, flight, self.snd_max):
            self._timed = None  # Karn
            self._retransmit_first_hole(now)

    def _retransmit_first_hole(self, now: float) -> None:
        """Send the first unacknowledged segment the peer does not hold (fast retransmit)."""
        start = self.snd_una
        for left, right in self._sacked:
            if left <= start < right:
                start = right
        if start >= self.snd_max:
            return
        end = min(start + self.smss, self.data_end, self.snd_max)
        for left, _ in self._sacked:
            if start < left < end:
                end = left
        self._emit_data(now, start, end)
        self._rto_at = now + self.rto.rto_s

    def _record_sacks(self, seg: Segment) -> None:
        base = self.iss + self.snd_una
        for left_w, right_w in seg.sack_blocks:
            left = self.snd_una + _signed32(left_w - base)
            right = self.snd_una + _signed32(right_w - base)
            if self.snd_una < left < right <= self.snd_max:
                _merge_block(self._sacked, left, right)
        self._sacked.sort()

    def _accept_data(self, now: float, start: int, payload: bytes, push: bool) -> None:
        nxt = self.rcv_nxt
        if start < nxt:
            payload = payload[nxt - start :]
            start = nxt
        limit = nxt + self.params.receive_buffer_bytes
        if start + len(payload) > limit:
            payload = payload[: max(0, limit - start)]
        if not payload:
            return
        if start > nxt:
            # Out of order: keep it, tell the sender at once (a duplicate ACK).
            self._hold(start, payload)
            if self.sack_ok:
                self._report_sack(start, start + len(payload))
            self._ack_now = True
            return
        self._deliver(payload)
        self.rcv_nxt = nxt = start + len(payload)
        filled = False
        while self._ooo:
            ready = [s for s in self._ooo if s <= nxt]
            if not ready:
                break
            for s in sorted(ready):
                kept_from, chunk = self._ooo.pop(s)
                end = kept_from + len(chunk)
                if end > nxt:
                    self._deliver(chunk[nxt - kept_from :])
                    nxt = end
                    filled = True
            self.rcv_nxt = nxt
        if self._sack_report:
            self._sack_report = [b for b in self._sack_report if b[1] > nxt]
        acks = self._acks
        acks.on_data(now, len(payload), push, self.rto.rto_s)
        if (
            filled  # RFC 5681 4.2: a filled gap is acknowledged at once
            or not self.params.delayed_ack
            or acks.ack_now(nxt - self._last_ack_sent)
            or acks.ack_at_read()  # the application reads at once here
        ):
            self._ack_now = True
        else:
            self._delay_ack(now)

    def _hold(self, start: int, payload: bytes) -> None:
        """Keep an out-of-order segment for delivery, without holding any byte twice.

        Delivery (in _accept_data) goes through the segments in sequence order and
        gives of each the bytes past those already delivered: a segment within an
        earlier one gives nothing, and of one that overlaps an earlier one only its
        bytes past the earlier one's end. So only those are kept, the same bytes in
        the same pieces as if every segment were kept whole, and what is held stays
        within the receive window however a peer's segments overlap.
        """
        end = start + len(payload)
        ooo = self._ooo
        held = ooo.get(start)
        if held is not None and held[0] + len(held[1]) >= end:
            return
        keep_from = start
        after = None  # the next segment, whose start may now overlap this one
        for s, (kept_from, chunk) in list(ooo.items()):
            e = kept_from + len(chunk)
            if s < start:
                if e >= end:
                    return  # within an earlier segment
                keep_from = max(keep_from, e)
            elif e <= end:
                del ooo[s]  # within this one
            elif after is None or s < after:
                after = s
        if after is not None:
            kept_from, chunk = ooo[after]
            if kept_from < end:
                ooo[after] = (end, chunk[end - kept_from :])
        ooo[start] = (keep_from, payload[keep_from - start :])

    def _delay_ack(self, now: float) -> None:
        """Arm the delayed-ACK timer; an earlier deadline stands."""
        if self._delack_at is None:
            self._delack_at = now + self._acks.delay_s(self.rto.srtt_s)

    def _report_sack(self, left: int, right: int) -> None:
        """RFC 2018 4: the block holding the newest segment goes first."""
        blocks = self._sack_report
        merged = [left, right]
        keep = []
        for b in blocks:
            if b[1] < merged[0] or b[0] > merged[1]:
                keep.append(b)
            else:
                merged = [min(b[0], merged[0]), max(b[1], merged[1])]
        self._sack_report = [merged, *keep]

    def _deliver(self, data: bytes) -> None:
        self._events.append(DataReceived(bytes(data)))

    def _on_peer_fin(self, now: float) -> None:
        self._peer_fin = None
        self.rcv_nxt += 1
        self._events.append(PeerClosed())
        state = self.state
        if state in (SYN_RECEIVED, ESTABLISHED):
            self.state = CLOSE_WAIT
            # Linux delays this ACK (ping-pong mode), so an application that
            # closes when it reads the FIN sends its FIN with the ACK.
            if self.params.delayed_ack and self._acks.fin_ack_delayed():
                self._delay_ack(now)
            else:
                self._ack_now = True
            return
        self._ack_now = True
        if state == FIN_WAIT_1:
            if self.snd_una > self.data_end:  # our FIN is acknowledged too
                self._enter_time_wait(now)
            else:
                self.state = CLOSING
        elif state == FIN_WAIT_2:
            self._enter_time_wait(now)

    # =================================================================== output

    def _output(self, now: float, retransmit_one: bool = False) -> None:
        """Send what the windows allow, then a pure ACK if one is owed."""
        state = self.state
        if state in _CAN_SEND or (state == SYN_RECEIVED and self.tfo_accepted):
            while self._send_next(now):
                if retransmit_one:
                    break
        if self._ack_now and state not in (CLOSED, SYN_SENT, LISTEN):
            self._emit(self._segment(now, ACK, self.snd_nxt))

    def _send_next(self, now: float) -> bool:
        """Send the next data or FIN segment if allowed; False when nothing went."""
        nxt = self.snd_nxt
        for left, right in self._sacked:  # don't resend what the peer holds
            if left <= nxt < right:
                nxt = self.snd_nxt = right
        end = self.data_end
        if nxt < end:
            n = min(self.smss, end - nxt)
            window = min(self.cc.cwnd if self.cc else 0, self.snd_wnd)
            usable = self.snd_una + window - nxt
            if usable < n:
                # Window-limited: a smaller segment only when nothing is in
                # flight (sender silly-window avoidance, RFC 9293 3.8.6.2.1).
                if usable <= 0 or nxt != self.snd_una:
                    return False
                n = usable
            if (
                self.params.nagle
                and n < self.smss
                and nxt >= self.snd_max
                and self._small_end > self.snd_una
                and not self.fin_queued
            ):
                # Nagle with Minshall's refinement (as Linux does it): hold a
                # small segment while an earlier small one is unacknowledged.
                return False
            for left, _ in self._sacked:
                if nxt < left < nxt + n:
                    n = left - nxt
            self._emit_data(now, nxt, nxt + n)
            return True
        if self.fin_queued and nxt == end:
            self._emit_data(now, nxt, nxt)
            return True
        return False

    def _emit_data(self, now: float, start: int, end: int) -> None:
        """Send bytes [start, end) (with FIN when they end the stream) from `start`."""
        payload = bytes(self._buf[start - self._buf_start : end - self._buf_start])
        flags = ACK
        if end == self.data_end:
            if payload:
                flags |= PSH
            if self.fin_queued:
                flags |= FIN
        seg = self._segment(now, flags, start, payload)
        retransmission = start < self.snd_max
        if not retransmission and self._timed is None and not self.ts_ok:
            self._timed = (end, now)
        elif retransmission and self._timed is not None and start < self._timed[0]:
            self._timed = None  # Karn
        if end - start < self.smss:
            self._small_end = max(self._small_end, end)
        if end > start:
            self._acks.on_data_sent(now)
        nxt = end + (1 if flags & FIN else 0)
        self.snd_nxt = max(self.snd_nxt, nxt)
        self.snd_max = max(self.snd_max, nxt)
        if self._rto_at is None:
            self._rto_at = now + self.rto.rto_s
        self._emit(seg, self._header_bytes(start, end))

    def _header_bytes(self, start: int, end: int) -> int:
        total = 0
        for left, right in self._header_marks:
            if left >= end:
                break
            if right > start:
                total += min(right, end) - max(left, start)
        return total

    def _send_syn(self, now: float, first: bool) -> None:
        """(Re)send our SYN or SYN-ACK and arm its back-off timer."""
        flags = SYN | (ACK if self.state == SYN_RECEIVED else 0)
        payload = b""
        if first:
            self._syn_sent_at = now
            if flags == SYN and self._tfo_cookie:
                # Fast Open: data in the SYN, up to the MSS cached with the cookie.
                payload = bytes(self._buf[: self.smss])
                self._syn_data = len(payload)
        else:
            self._timed = None
        seg = self._segment(now, flags, 0, payload)
        self._syn_options(seg)
        self.snd_nxt = max(self.snd_nxt, 1 + len(payload))
        self.snd_max = max(self.snd_max, self.snd_nxt)
        # RFC 6298 5.5 back-off; 2.1 initial RTO for the first transmission.
        self._rto_at = now + self.params.initial_rto_s * (2**self._syn_retries)
        self._emit(seg, self._header_bytes(1, 1 + len(payload)))

    def _syn_options(self, seg: Segment) -> None:
        p = self.params
        synack = seg.flags & ACK
        seg.mss = self.mss
        if p.sack and (not synack or self.sack_ok):
            seg.sack_permitted = True
        if p.window_scale and (not synack or self.ws_ok):
            seg.wscale = p.wscale
        if synack and not self.ts_ok:
            seg.timestamps = None  # only echo timestamps the peer offered
        if not synack and p.fast_open:
            seg.fast_open = b"" if self._tfo_request else self._tfo_cookie
        elif synack and self.tfo_grant is not None:
            seg.fast_open = self.tfo_grant

    def _segment(self, now: float, flags: int, seq: int, payload: bytes = b"") -> Segment:
        syn = flags & SYN
        if syn or not self.ws_ok:
            window = min(self.params.receive_buffer_bytes, 0xFFFF)
        else:
            window = self.params.receive_buffer_bytes >> self._rcv_wscale
        seg = Segment(
            self.local_port,
            self.remote_port,
            (self.iss + seq) % MOD,
            (self.irs + self.rcv_nxt) % MOD if flags & ACK else 0,
            flags,
            window,
            payload,
        )
        if flags & ACK:
            self._last_ack_sent = self.rcv_nxt
        if self.ts_ok or (syn and self.params.timestamps):
            seg.timestamps = (self._ts_val(now), self._ts_recent)
        if self.sack_ok and self._sack_report and not syn and flags & ACK:
            limit = 3 if self.ts_ok else 4  # what fits in 40 option bytes
            irs = self.irs
            seg.sack_blocks = tuple(
                ((irs + left) % MOD, (irs + right) % MOD)
                for left, right in self._sack_report[:limit]
            )
        if flags & ACK:
            self._ack_now = False
            self._acks.on_ack_sent()
            self._delack_at = None
        return seg

    def _emit(self, seg: Segment, header_bytes: int = 0) -> None:
        self._out.append((seg, header_bytes))

    # =================================================================== helpers

    def _ts_val(self, now: float) -> int:
        return (self._ts_offset + int(now * 1000)) % MOD  # a 1 ms clock, like Linux's

    def _negotiate(self, syn: Segment) -> None:
        """Options both ends agreed on, from the peer's SYN or SYN-ACK."""
        p = self.params
        self.sack_ok = p.sack and syn.sack_permitted
        self.ts_ok = p.timestamps and syn.timestamps is not None
        self.ws_ok = p.window_scale and syn.wscale is not None
        if self.ws_ok:
            self._snd_wscale = syn.wscale or 0
            self._rcv_wscale = p.wscale
        if self.ts_ok and syn.timestamps is not None:  # ts_ok: the SYN has them
            self._ts_recent = syn.timestamps[0]
        peer_mss = max(syn.mss, MIN_PEER_MSS) if syn.mss is not None else DEFAULT_PEER_MSS
        # Payload per segment: the smaller MSS, less the timestamp option that
        # every segment then carries (as Linux sizes its segments).
        self.smss = min(peer_mss, self.mss) - (TIMESTAMP_OPTION_LEN if self.ts_ok else 0)
        self._acks.negotiated(
            min(peer_mss, self.mss), 20 + (TIMESTAMP_OPTION_LEN if self.ts_ok else 0)
        )

    def set_syn_data_mss(self, cached_mss: int) -> None:
        """Bound the data of a Fast Open SYN by the MSS cached with the server's
        cookie, less the 40 bytes the SYN's options may take (as Linux does), so
        the SYN fits the path without fragmentation."""
        self.smss = max(0, min(cached_mss, self.mss) - MAX_SYN_OPTION_SPACE)

    def _start_cc(self) -> None:
        self.cc = NewReno(self.smss, self.params.initial_window_segments)
        if self._syn_retries:
            # RFC 6298 5.7: the handshake needed retransmissions, so the RTO
            # (unmeasured) is 3 s, not 1 s, once data flows.
            self.rto.rto_s = max(self.rto.rto_s, self.params.syn_rto_fallback_s)

    def _established(self) -> None:
        # A close() during the handshake takes effect now.
        self.state = FIN_WAIT_1 if self.fin_queued else ESTABLISHED

    def _arm_wait(self, now: float, seconds: float) -> None:
        self._wait_at = now + seconds

    def _enter_time_wait(self, now: float) -> None:
        self.state = TIME_WAIT
        self._rto_at = None
        self._report_closed("closed")
        self._arm_wait(now, self.params.time_wait_s)

    def _enter_closed(self, reason: CloseReason) -> None:
        self.state = CLOSED
        self._rto_at = self._delack_at = self._wait_at = None
        self._report_closed(reason)

    def _report_closed(self, reason: CloseReason) -> None:
        if not self._closed_reported:
            self._closed_reported = True
            self._events.append(Closed(reason))


def _merge_block(blocks: list[list[int]], left: int, right: int) -> None:
    """Add [left, right) to a list of disjoint blocks, merging overlaps."""
    for b in blocks:
        if left <= b[1] and right >= b[0]:
            b[0] = min(b[0], left)
            b[1] = max(b[1], right)
            break
    else:
        blocks.append([left, right])
        return
    blocks.sort()
    merged: list[list[int]] = []
    for b in blocks:
        if merged and b[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b[1])
        else:
            merged.append(b)
    blocks[:] = merged
