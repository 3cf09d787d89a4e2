"""CoAP transmission parameters (RFC 7252 section 4.8) and iotbench's additions.

The derived values follow RFC 7252 4.8.2 literally, so changing a base value
(say ACK_TIMEOUT for a slow network) moves every lifetime consistently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = ["BACKOFFS", "RTO_MODES", "CoapParams"]

RTO_MODES = ("rfc7252", "cocoa")
BACKOFFS = ("exponential", "constant")


def _finite(name: str, value: float, *, low: float, low_open: bool, what: str) -> None:
    ok = isinstance(value, (int, float)) and math.isfinite(value)
    ok = ok and (value > low if low_open else value >= low)
    if not ok:
        raise ValueError(f"CoapParams.{name} must be {what}, got {value!r}")


@dataclass(frozen=True)
class CoapParams:
    """Protocol parameters of one CoAP endpoint.

    RFC 7252 4.8 base values: ack_timeout_s, ack_random_factor, max_retransmit,
    nstart, default_leisure_s, probing_rate_bps, max_latency_s, and
    processing_delay_s (None: ACK_TIMEOUT, as 4.8.2 assumes).
    default_leisure_s is the Leisure a group member waits at most before
    answering a multicast request (RFC 7252 8.2); an application that knows
    its group may set it from group.leisure_lower_bound_s.

    iotbench additions:
    - non_timeout_s: how long a NON request waits for a response before it is
      given up (and stops counting against NSTART). None: with rto="rfc7252",
      MAX_TRANSMIT_WAIT (93 s by default), which is what the S3 study's client
      did; with rto="cocoa", the wait a CON would have with the current
      estimate (see CoapEndpoint for the rule).
    - rto: "rfc7252" (fixed initial timeout in [ACK_TIMEOUT, ACK_TIMEOUT *
      ACK_RANDOM_FACTOR], doubling) or "cocoa" (draft-ietf-core-cocoa
      adaptive RTO per destination, variable backoff).
    - backoff (rto = "rfc7252"): "exponential", RFC 7252 4.2's doubling of
      the timeout after each retransmission; "constant", the same timeout
      before every retransmission. S4's study aligned every protocol on a
      constant 2 s, 4 times (its RIOT's gcoap waits COAP_ACK_TIMEOUT before
      each retransmission, without randomisation); the derived values below
      follow the schedule chosen.
    - separate_response_after_s: a server whose handler needs longer than
      this for a CON request sends an empty ACK after this long and the
      response later as a separate CON; None never does (the response is
      piggybacked whenever it is ready), except for a handler that returns
      Deferred, whose request is acknowledged at once.
    - separate_response_timeout_s: how long a client waits for a separate
      response after the empty ACK; None: EXCHANGE_LIFETIME.
    - token_length: bytes of random token per request, 0..8. Default 4:
      RFC 7252 5.3.1 asks for at least 32 bits of randomness from clients
      exposed to the Internet; short-token studies set 0..2.
    - dedup_capacity: at most this many received messages are remembered for
      deduplication (RFC 7252 4.5); past it, the entry closest to expiry is
      forgotten early. Bounds a server's memory under a flood of distinct
      Message IDs, which would otherwise grow for EXCHANGE_LIFETIME (247 s).
    - observe_con_interval_s: a notification to an observer that has had no
      CON notification for this long goes out as CON, whatever the resource
      says (RFC 7641 4.5: at least every 24 hours), so that an observer that
      is gone stops being notified when the CON is never acknowledged.
    - observe_con_every: also every this-many-th notification to an observer
      is a CON (0: never by count). A server on the Internet sets it so that
      a gone or spoofed observer is detected within minutes, not a day.
    - observe_one_per_peer: a registration replaces the peer's earlier
      observation of the same resource (under another token), as RIOT's gcoap
      keeps one per observer and resource; RFC 7641 4.1 keys observations by
      endpoint and token, so by default both stay.
    - max_observers_per_resource, max_observations_per_peer: bounds on the
      list of observers (RFC 7641 4.1), per resource and per client endpoint
      over all resources. A registration past either is answered as a plain
      GET, without Observe, which RFC 7641 4.1 prescribes for a server that
      will not add an observer; the endpoint counts it (observers_refused).
    - block_size_bytes: RFC 7959 block-wise transfers at this block size (16,
      32, ... 1024). A client asks for responses in blocks of it (Block2 in
      its first GET, early negotiation) and sends request payloads larger
      than it in Block1 blocks; a server sends responses larger than it in
      Block2 blocks and asks for Block1 blocks no larger. None: the client
      asks for nothing and sends payloads whole, the server answers whole;
      both still follow a peer that uses blocks (a server answers a request's
      Block2 at the size asked, a client fetches every block it is offered).
    - max_body_bytes: the largest body assembled from blocks, as a server
      (larger uploads get 4.13 with Size1) and as a client.
    - max_options: the most options a received message may carry, repeated
      ones included. The decoder stops at the next one, so a datagram costs
      at most this many options' work; the message is then one the endpoint
      cannot parse: a CON is rejected with RST (RFC 7252 4.2), a NON is
      silently ignored (4.3). Default 64, four times RIOT nanocoap's
      NANOCOAP_NOPTS_MAX of 16 (which counts only distinct option numbers);
      libcoap and aiocoap count none but bound the datagram (1,152 and 4,096
      bytes), which bounds the options too. docs/coap.md, "Options per
      message", says why RST and what a legitimate request needs.
    """

    ack_timeout_s: float = 2.0
    ack_random_factor: float = 1.5
    max_retransmit: int = 4
    nstart: int = 1
    default_leisure_s: float = 5.0
    probing_rate_bps: float = 1.0
    max_latency_s: float = 100.0
    processing_delay_s: float | None = None
    non_timeout_s: float | None = None
    rto: Literal["rfc7252", "cocoa"] = "rfc7252"
    backoff: Literal["exponential", "constant"] = "exponential"
    separate_response_after_s: float | None = None
    separate_response_timeout_s: float | None = None
    token_length: int = 4
    dedup_capacity: int = 65536
    observe_con_interval_s: float = 86400.0
    observe_con_every: int = 0
    observe_one_per_peer: bool = False
    max_observers_per_resource: int = 1000
    max_observations_per_peer: int = 16
    block_size_bytes: int | None = None
    max_body_bytes: int = 65536
    max_options: int = 64

    def __post_init__(self) -> None:
        _finite("ack_timeout_s", self.ack_timeout_s, low=0.0, low_open=True, what="> 0 seconds")
        # RFC 7252 4.8: ACK_RANDOM_FACTOR MUST NOT be decreased below 1.0.
        _finite("ack_random_factor", self.ack_random_factor, low=1.0, low_open=False, what=">= 1.0")
        if not isinstance(self.max_retransmit, int) or not 0 <= self.max_retransmit <= 20:
            raise ValueError(
                f"CoapParams.max_retransmit must be an integer in 0..20, got {self.max_retransmit!r}"
            )
        if not isinstance(self.nstart, int) or self.nstart < 1:
            raise ValueError(f"CoapParams.nstart must be an integer >= 1, got {self.nstart!r}")
        _finite("default_leisure_s", self.default_leisure_s, low=0.0, low_open=False, what=">= 0 s")
        _finite("probing_rate_bps", self.probing_rate_bps, low=0.0, low_open=True, what="> 0")
        _finite("max_latency_s", self.max_latency_s, low=0.0, low_open=False, what=">= 0 s")
        for name in ("processing_delay_s", "separate_response_after_s"):
            value = getattr(self, name)
            if value is not None:
                _finite(name, value, low=0.0, low_open=False, what=">= 0 seconds or None")
        for name in ("non_timeout_s", "separate_response_timeout_s"):
            value = getattr(self, name)
            if value is not None:
                _finite(name, value, low=0.0, low_open=True, what="> 0 seconds or None")
        if self.rto not in RTO_MODES:
            raise ValueError(f"CoapParams.rto must be one of {RTO_MODES}, got {self.rto!r}")
        if self.backoff not in BACKOFFS:
            raise ValueError(f"CoapParams.backoff must be one of {BACKOFFS}, got {self.backoff!r}")
        if not isinstance(self.dedup_capacity, int) or self.dedup_capacity < 1:
            raise ValueError(
                f"CoapParams.dedup_capacity must be an integer >= 1, got {self.dedup_capacity!r}"
            )
        _finite(
            "observe_con_interval_s",
            self.observe_con_interval_s,
            low=0.0,
            low_open=True,
            what="> 0 seconds",
        )
        for name, low in (
            ("observe_con_every", 0),
            ("max_observers_per_resource", 1),
            ("max_observations_per_peer", 1),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < low:
                raise ValueError(f"CoapParams.{name} must be an integer >= {low}, got {value!r}")
        size = self.block_size_bytes
        if size is not None and (
            not isinstance(size, int) or size not in (16, 32, 64, 128, 256, 512, 1024)
        ):
            raise ValueError(
                "CoapParams.block_size_bytes must be None or a power of two in 16..1024, "
                f"got {size!r}"
            )
        if not isinstance(self.max_body_bytes, int) or self.max_body_bytes < 1:
            raise ValueError(
                f"CoapParams.max_body_bytes must be an integer >= 1, got {self.max_body_bytes!r}"
            )
        if not isinstance(self.max_options, int) or self.max_options < 1:
            raise ValueError(
                f"CoapParams.max_options must be an integer >= 1, got {self.max_options!r}"
            )
        if not isinstance(self.token_length, int) or not 0 <= self.token_length <= 8:
            raise ValueError(
                f"CoapParams.token_length must be an integer in 0..8, got {self.token_length!r}"
            )

    # ---- RFC 7252 4.8.2 derived values ---------------------------------------------

    @property
    def processing_delay(self) -> float:
        """PROCESSING_DELAY; RFC 7252 4.8.2 takes it to be ACK_TIMEOUT."""
        return self.ack_timeout_s if self.processing_delay_s is None else self.processing_delay_s

    @property
    def backoff_factor(self) -> float:
        """What each retransmission multiplies the timeout by: 2 (RFC 7252) or 1."""
        return 2.0 if self.backoff == "exponential" else 1.0

    def _timeouts(self, count: int) -> float:
        """ACK_TIMEOUT units of the first `count` timeouts of a CON's schedule."""
        return sum(self.backoff_factor**n for n in range(count))

    @property
    def max_transmit_span_s(self) -> float:
        """First transmission to last retransmission of a CON: 45 s with defaults."""
        return self.ack_timeout_s * self._timeouts(self.max_retransmit) * self.ack_random_factor

    @property
    def max_transmit_wait_s(self) -> float:
        """First transmission to giving up on an ACK: 93 s with defaults."""
        units = self._timeouts(self.max_retransmit + 1)
        return self.ack_timeout_s * units * self.ack_random_factor

    @property
    def max_rtt_s(self) -> float:
        """MAX_RTT = 2 * MAX_LATENCY + PROCESSING_DELAY: 202 s with defaults."""
        return 2 * self.max_latency_s + self.processing_delay

    @property
    def exchange_lifetime_s(self) -> float:
        """How long a CON's Message ID stays in use: 247 s with defaults."""
        return self.max_transmit_span_s + 2 * self.max_latency_s + self.processing_delay

    @property
    def non_lifetime_s(self) -> float:
        """How long a NON's Message ID stays in use: 145 s with defaults."""
        return self.max_transmit_span_s + self.max_latency_s
