"""NewReno congestion control: RFC 5681 slow start and congestion avoidance,
fast retransmit, and RFC 6582 fast recovery.

The connection tells this object what happened (new data acknowledged, a
duplicate ACK, a retransmission timeout) and it answers with the window and
with what to retransmit. All values are bytes.
"""

from __future__ import annotations

DUP_ACK_THRESHOLD = 3  # RFC 5681 3.2


class NewReno:
    __slots__ = ("cwnd", "dupacks", "in_recovery", "mss", "recover", "ssthresh")

    def __init__(self, mss: int, initial_window_segments: int) -> None:
        self.mss = mss
        self.cwnd = initial_window_segments * mss
        # RFC 5681 3.1: "arbitrarily high", so slow start runs until the first loss.
        self.ssthresh = 1 << 62
        self.dupacks = 0
        self.in_recovery = False
        self.recover = 0  # RFC 6582 `recover`: highest sequence sent when recovery began

    def on_new_ack(self, acked: int, ack: int, flight_before: int) -> bool:
        """New data acknowledged up to `ack`; returns True for a partial ACK in
        recovery (the caller retransmits the next unacknowledged segment)."""
        self.dupacks = 0
        mss = self.mss
        if self.in_recovery:
            if ack >= self.recover:
                # RFC 6582 3.2 step 3, full acknowledgment, option (1):
                # cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS), FlightSize
                # being what is still outstanding after this ACK.
                self.in_recovery = False
                self.cwnd = min(self.ssthresh, max(flight_before - acked, mss) + mss)
                return False
            # Step 3, partial acknowledgment: deflate by what was acknowledged,
            # add back one MSS if at least one was acknowledged.
            self.cwnd = max(self.cwnd - acked + (mss if acked >= mss else 0), mss)
            return True
        if self.cwnd < self.ssthresh:
            self.cwnd += min(acked, mss)  # RFC 5681 3.1 slow start
        else:
            self.cwnd += max(1, mss * mss // self.cwnd)  # congestion avoidance (3.1, eq. 3)
        return False

    def on_dup_ack(self, ack: int, flight: int, highest_sent: int) -> bool:
        """A duplicate ACK of `ack`; returns True when the caller must fast-retransmit."""
        self.dupacks += 1
        if self.in_recovery:
            self.cwnd += self.mss  # RFC 6582 3.2 step 4: inflate for each segment that left
            return False
        # RFC 6582 3.2 step 2: only when the ACK covers more than `recover`, so
        # the duplicates that follow a timeout's retransmissions don't halve again.
        if self.dupacks == DUP_ACK_THRESHOLD and ack > self.recover:
            # RFC 5681 3.2 steps 2-3 (RFC 6582 step 2 via `recover`).
            self.ssthresh = max(flight // 2, 2 * self.mss)
            self.cwnd = self.ssthresh + DUP_ACK_THRESHOLD * self.mss
            self.recover = highest_sent
            self.in_recovery = True
            return True
        return False

    def on_timeout(self, flight: int, highest_sent: int) -> None:
        """Retransmission timeout: RFC 5681 3.1 eq. 4 and the loss window of one MSS."""
        self.ssthresh = max(flight // 2, 2 * self.mss)
        self.cwnd = self.mss
        self.dupacks = 0
        self.in_recovery = False
        # RFC 6582 4.1: don't enter fast recovery for dup ACKs of what was sent before.
        self.recover = highest_sent
