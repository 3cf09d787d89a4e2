"""QUIC settings of an iotbench client or server."""

from __future__ import annotations

from dataclasses import dataclass

ALPN = "iotbench-sensor"  # the application protocol on the streams: one request, one reading


@dataclass(frozen=True)
class QuicParams:
    """connection: "per-request" opens a connection (and does a handshake) for
    every request, as S3 does; "reuse" keeps one connection per server.
    zero_rtt: with per-request connections, resume with the session ticket of
    the previous connection and send the request as 0-RTT data (RFC 9001 4.6).
    idle_timeout_s: the max_idle_timeout transport parameter (RFC 9000 10.1).
    initial_rtt_s: RTT assumed before a sample, RFC 9002 6.2.2's 333 ms.
    congestion_control: aioquic's "reno" (RFC 9002 7) or "cubic".
    max_datagram_size: aioquic's UDP payload limit (1200 is QUIC's minimum).
    """

    connection: str = "per-request"
    zero_rtt: bool = False
    idle_timeout_s: float = 60.0
    initial_rtt_s: float = 0.333
    congestion_control: str = "reno"
    max_datagram_size: int = 1200

    def __post_init__(self) -> None:
        if self.connection not in ("per-request", "reuse"):
            raise ValueError(
                f"QuicParams.connection must be per-request or reuse, got {self.connection!r}"
            )
        if self.congestion_control not in ("reno", "cubic"):
            raise ValueError(
                f"QuicParams.congestion_control must be reno or cubic, got {self.congestion_control!r}"
            )
        for name in ("idle_timeout_s", "initial_rtt_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"QuicParams.{name} must be > 0")
        if not 1200 <= self.max_datagram_size <= 65527:
            raise ValueError("QuicParams.max_datagram_size must be 1200..65527")
