"""TCP parameters, with Linux-like defaults (the study set-ups use Linux hosts).

Every value is configurable per scenario; the defaults are what a current
Linux kernel does unless tuned, which is what "a Linux client" in S1 and S3
means.
"""

from __future__ import annotations

from dataclasses import dataclass

from iotbench.net.tcp.acks import ACK_MODES

RTO_MODES = ("linux", "rfc6298")
#: The minimum RTO of each mode when min_rto_s is not given: Linux's TCP_RTO_MIN
#: (200 ms), RFC 6298 2.4's 1 s.
DEFAULT_MIN_RTO_S = {"linux": 0.2, "rfc6298": 1.0}


@dataclass(frozen=True)
class TcpParams:
    """Protocol parameters of one TCP endpoint.

    mss_bytes: the MSS this end announces; None derives it from the
    interface MTU (MTU - 40 for IPv4, MTU - 60 for IPv6).
    initial_window_segments: IW (RFC 6928 default 10).
    rto: how the RTO follows the RTT estimate. "linux": RTO = SRTT +
    max(4 RTTVAR, min_rto_s), rto_min added to the smoothed RTT as Linux's
    tcp_set_rto does (min_rto_s default 200 ms). "rfc6298": RTO = SRTT +
    4 RTTVAR bounded below by min_rto_s (RFC 6298 2.4: default 1 s).
    initial_rto_s / max_rto_s: RFC 6298 2.1's 1 s, and the 120 s cap. syn_rto_fallback_s: the RTO used once data flows when the
    SYN or SYN-ACK had to be retransmitted (RFC 6298 5.7: 3 s).
    syn_retries / synack_retries: retransmissions of a SYN / SYN-ACK before
    the attempt fails (Linux tcp_syn_retries 6, tcp_synack_retries 5).
    max_retransmissions: retransmissions of one data segment before the
    connection is given up (Linux tcp_retries2 15).
    delayed_ack: delay ACKs as `ack` says (off: acknowledge every segment).
    ack: when a delayed ACK goes (net/tcp/acks.py). "linux": quick ACKs
    at the start, ping-pong mode for replies, an ACK per full segment or when
    the application reads small pushed ones, a 40 ms timer that adapts.
    "rfc5681": every second segment, else after delayed_ack_s (Linux's
    minimum delayed-ACK timeout is 40 ms; RFC 1122 allows 500 ms).
    nagle: hold a small segment while data is unacknowledged (RFC 896; on
    unless an application sets TCP_NODELAY).
    sack / timestamps / window_scale: negotiate these options (RFC 2018,
    RFC 7323); wscale is the shift announced when window_scale is on.
    fast_open: use TCP Fast Open (RFC 7413): a client asks for a cookie,
    then sends data in the SYN with it; a server grants and checks cookies.
    receive_buffer_bytes: the window this end announces (Linux's initial
    receive window is 64,240 bytes with window scaling).
    time_wait_s: TIME_WAIT duration (Linux 60 s). fin_wait_2_s: how long an
    orphaned connection waits for the peer's FIN (Linux tcp_fin_timeout 60 s).
    """

    mss_bytes: int | None = None
    initial_window_segments: int = 10
    rto: str = "linux"
    min_rto_s: float | None = None
    initial_rto_s: float = 1.0
    max_rto_s: float = 120.0
    syn_rto_fallback_s: float = 3.0
    syn_retries: int = 6
    synack_retries: int = 5
    max_retransmissions: int = 15
    delayed_ack: bool = True
    ack: str = "linux"
    delayed_ack_s: float = 0.04
    nagle: bool = True
    sack: bool = True
    timestamps: bool = True
    window_scale: bool = True
    wscale: int = 7
    fast_open: bool = False
    receive_buffer_bytes: int = 64240
    time_wait_s: float = 60.0
    fin_wait_2_s: float = 60.0

    def __post_init__(self) -> None:
        if self.rto not in RTO_MODES:
            raise ValueError(f"TcpParams.rto must be one of {RTO_MODES}, got {self.rto!r}")
        if self.ack not in ACK_MODES:
            raise ValueError(f"TcpParams.ack must be one of {ACK_MODES}, got {self.ack!r}")
        positive = ("rto_min_s", "initial_rto_s", "max_rto_s", "delayed_ack_s")
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(f"TcpParams.{name} must be > 0, got {getattr(self, name)!r}")
        if self.rto_min_s > self.max_rto_s:
            raise ValueError("TcpParams.min_rto_s must not exceed max_rto_s")
        for name in ("syn_retries", "synack_retries", "max_retransmissions"):
            if getattr(self, name) < 0:
                raise ValueError(f"TcpParams.{name} must be >= 0")
        if self.initial_window_segments < 1:
            raise ValueError("TcpParams.initial_window_segments must be >= 1")
        if self.mss_bytes is not None and not 64 <= self.mss_bytes <= 65495:
            raise ValueError(f"TcpParams.mss_bytes must be 64..65495, got {self.mss_bytes}")
        if not 0 <= self.wscale <= 14:
            raise ValueError(f"TcpParams.wscale must be 0..14, got {self.wscale}")
        if not 1 <= self.receive_buffer_bytes <= (0xFFFF << self.wscale):
            raise ValueError("TcpParams.receive_buffer_bytes must fit the scaled window")
        if self.time_wait_s < 0 or self.fin_wait_2_s < 0:
            raise ValueError("TcpParams.time_wait_s and fin_wait_2_s must be >= 0")

    @property
    def rto_min_s(self) -> float:
        """min_rto_s, or the default of the RTO mode."""
        return DEFAULT_MIN_RTO_S[self.rto] if self.min_rto_s is None else self.min_rto_s
