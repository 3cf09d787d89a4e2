"""Retransmission timing shared by every iotbench protocol stack.

One implementation of "send, wait, back off, give up" for the whole project:
CoAP uses it now, MQTT-SN and the virtual-time TCP later. Three pieces:

- `BackoffSchedule`: the timeout before each (re)transmission of one message:
  an initial timeout, optionally dithered in [t, t * random_factor], multiplied
  by a backoff factor per retransmission (optionally truncated), and a maximum
  number of retransmissions after which the sender gives up (RFC 7252 4.2 with
  factor 2 and no truncation; CoCoA with its variable factor and 32 s cap).
- `Retransmission`: the per-message state walking one schedule (deadline,
  retransmission count, first-send time for RTT samples).
- `RtoEstimator` (RFC 6298) and `CocoaEstimator` (draft-ietf-core-cocoa) turn
  RTT samples into the base timeout of the next schedule. Karn's rule (no
  sample from a retransmitted message) is the caller's job for RtoEstimator;
  CocoaEstimator applies its own strong/weak split instead.

Everything here is sans-I/O: time is passed in, randomness comes from the
caller's `random.Random`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

__all__ = [
    "BackoffSchedule",
    "CocoaEstimator",
    "Retransmission",
    "RtoEstimator",
    "cocoa_backoff_factor",
]


@dataclass(frozen=True, slots=True)
class BackoffSchedule:
    """Timeouts of one message's transmissions.

    The timeout armed after transmission `n` (0 = first transmission, 1 = first
    retransmission, ...) is ``dither * min(base * factor**n, cap)``, where
    `dither` is drawn once per message from [1, random_factor] and `cap` is
    `max_backoff_s` (never below `base`, so a large base is not shortened).
    With RFC 7252 defaults (base ACK_TIMEOUT = 2 s, random_factor 1.5,
    factor 2, no cap, max 4 retransmissions) the sender transmits at 0, T,
    3T, 7T, 15T and gives up at 31T, T being the first timeout in [2, 3] s.
    """

    base_timeout_s: float
    max_retransmissions: int
    random_factor: float = 1.0
    backoff_factor: float = 2.0
    max_backoff_s: float | None = None

    def __post_init__(self) -> None:
        if not self.base_timeout_s > 0:
            raise ValueError(f"base_timeout_s must be > 0, got {self.base_timeout_s}")
        if self.max_retransmissions < 0:
            raise ValueError(f"max_retransmissions must be >= 0, got {self.max_retransmissions}")
        if not self.random_factor >= 1.0:
            raise ValueError(f"random_factor must be >= 1.0, got {self.random_factor}")
        if not self.backoff_factor >= 1.0:
            raise ValueError(f"backoff_factor must be >= 1.0, got {self.backoff_factor}")
        if self.max_backoff_s is not None and not self.max_backoff_s > 0:
            raise ValueError(f"max_backoff_s must be > 0 or None, got {self.max_backoff_s}")

    def draw_dither(self, rng: random.Random) -> float:
        """The per-message multiplier in [1, random_factor]; 1.0 without drawing when fixed."""
        if self.random_factor == 1.0:
            return 1.0
        return rng.uniform(1.0, self.random_factor)

    def initial_timeout_s(self, dither: float) -> float:
        return self.timeout_s(0, dither)

    def timeout_s(self, attempt: int, dither: float = 1.0) -> float:
        """Timeout armed after transmission number `attempt` (0-based)."""
        t = self.base_timeout_s * self.backoff_factor**attempt
        if self.max_backoff_s is not None:
            t = min(t, max(self.max_backoff_s, self.base_timeout_s))
        return dither * t

    def gives_up(self, retransmissions: int) -> bool:
        """True when a timeout after `retransmissions` retransmissions ends the attempt."""
        return retransmissions >= self.max_retransmissions

    def span_s(self, dither: float = 1.0) -> float:
        """First transmission to last retransmission (RFC 7252 MAX_TRANSMIT_SPAN at worst dither)."""
        return sum(self.timeout_s(n, dither) for n in range(self.max_retransmissions))

    def wait_s(self, dither: float = 1.0) -> float:
        """First transmission to giving up (RFC 7252 MAX_TRANSMIT_WAIT at worst dither)."""
        return sum(self.timeout_s(n, dither) for n in range(self.max_retransmissions + 1))

    @property
    def max_span_s(self) -> float:
        return self.span_s(self.random_factor)

    @property
    def max_wait_s(self) -> float:
        return self.wait_s(self.random_factor)


class Retransmission:
    """Where one message is on its schedule.

    The owner transmits, calls `start(now)`, arms a timer at `deadline_s`, and
    on expiry calls `on_timeout(now)`: True means "retransmit now and re-arm at
    the new deadline", False means "give up". The deadline is counted from the
    moment of the timeout, as RFC 7252 4.2 restarts the timer on each
    retransmission.
    """

    __slots__ = ("deadline_s", "dither", "first_sent_s", "retransmissions", "schedule")

    def __init__(self, schedule: BackoffSchedule, rng: random.Random) -> None:
        self.schedule = schedule
        self.dither = schedule.draw_dither(rng)
        self.first_sent_s = 0.0
        self.retransmissions = 0
        self.deadline_s = 0.0

    def start(self, now: float) -> float:
        """Record the first transmission; returns the first deadline."""
        self.first_sent_s = now
        self.deadline_s = now + self.schedule.timeout_s(0, self.dither)
        return self.deadline_s

    def on_timeout(self, now: float) -> bool:
        if self.schedule.gives_up(self.retransmissions):
            return False
        self.retransmissions += 1
        self.deadline_s = now + self.schedule.timeout_s(self.retransmissions, self.dither)
        return True

    @property
    def transmissions(self) -> int:
        return self.retransmissions + 1


class RtoEstimator:
    """RFC 6298 section 2 smoothed RTT, RTT variance and retransmission timeout.

    `update(r)` feeds one RTT sample; callers must follow Karn's rule (RFC 6298
    section 3: no samples from retransmitted segments). `backoff()` is the
    RFC 6298 5.5 doubling after a timeout, for transports that keep backing
    off the estimator itself (TCP); CoAP backs off per message instead.
    """

    __slots__ = (
        "alpha",
        "beta",
        "granularity_s",
        "k",
        "max_rto_s",
        "min_rto_s",
        "rto_s",
        "rttvar_s",
        "samples",
        "srtt_s",
        "variance_floor_s",
    )

    def __init__(
        self,
        *,
        initial_rto_s: float = 1.0,
        min_rto_s: float = 1.0,
        max_rto_s: float = 60.0,
        k: float = 4.0,
        alpha: float = 1 / 8,
        beta: float = 1 / 4,
        granularity_s: float = 0.0,
        variance_floor_s: float = 0.0,
    ) -> None:
        if not 0 <= min_rto_s <= max_rto_s:
            raise ValueError(f"need 0 <= min_rto_s <= max_rto_s, got {min_rto_s}, {max_rto_s}")
        if not initial_rto_s > 0:
            raise ValueError(f"initial_rto_s must be > 0, got {initial_rto_s}")
        self.k = k
        self.alpha = alpha
        self.beta = beta
        self.granularity_s = granularity_s
        # Linux adds its rto_min to SRTT instead of bounding the sum (tcp_set_rto:
        # RTO = SRTT + max(4 RTTVAR, rto_min)); RFC 6298 2.4 bounds the sum.
        self.variance_floor_s = variance_floor_s
        self.min_rto_s = min_rto_s
        self.max_rto_s = max_rto_s
        self.srtt_s: float | None = None
        self.rttvar_s: float | None = None
        # RFC 6298 2.1: before any measurement the RTO is the initial value.
        self.rto_s = initial_rto_s
        self.samples = 0

    def update(self, rtt_s: float) -> float:
        """Feed one RTT sample (seconds); returns the new RTO."""
        rtt_s = max(rtt_s, 0.0)
        if self.srtt_s is None or self.rttvar_s is None:
            # RFC 6298 2.2: first measurement.
            self.srtt_s = rtt_s
            self.rttvar_s = rtt_s / 2
        else:
            # RFC 6298 2.3: RTTVAR first, using the SRTT from before this sample.
            self.rttvar_s = (1 - self.beta) * self.rttvar_s + self.beta * abs(self.srtt_s - rtt_s)
            self.srtt_s = (1 - self.alpha) * self.srtt_s + self.alpha * rtt_s
        rto = self.srtt_s + max(self.granularity_s, self.k * self.rttvar_s, self.variance_floor_s)
        # RFC 6298 2.4 / 2.5: lower and upper bounds.
        self.rto_s = min(max(rto, self.min_rto_s), self.max_rto_s)
        self.samples += 1
        return self.rto_s

    def backoff(self) -> float:
        """RFC 6298 5.5: double the RTO after a retransmission timeout (bounded by max)."""
        self.rto_s = min(self.rto_s * 2, self.max_rto_s)
        return self.rto_s


def cocoa_backoff_factor(rto_s: float) -> float:
    """CoCoA variable backoff factor (draft-ietf-core-cocoa 4.2.1).

    Small RTOs back off faster (x3) so that their retransmissions are not all
    spent within the 2-3 s a server may wait before an empty ACK; large RTOs
    back off slower (x1.5) so that all retransmissions fit in MAX_TRANSMIT_WAIT.
    """
    if rto_s < 1.0:
        return 3.0
    if rto_s > 3.0:
        return 1.5
    return 2.0


# CoCoA's blind estimate (4.1), named outside the class because a default
# argument cannot name a class attribute in a compiled module.
COCOA_INITIAL_RTO_S: Final = 2.0


class CocoaEstimator:
    """The CoCoA RTO estimator for one destination endpoint (draft-ietf-core-cocoa).

    Section numbers refer to draft-ietf-core-cocoa-02/-03:

    - 4.1 blind estimate: 2 s before any measurement, multiplied by the number
      of exchanges that would then run in parallel (2 s, 4 s, 6 s, ...).
    - 4.2 two RFC 6298 estimators: the strong one (K = 4) fed by exchanges
      that completed without retransmission, the weak one (K = 1, 4.2.1) fed
      by exchanges that needed one or two retransmissions, with the RTT
      counted from the initial transmission; exchanges that needed three or
      more retransmissions feed nothing.
    - 4.2 overall RTO, updated from the estimator that just changed:
      strong: RTO := 0.5 * E_strong + 0.5 * RTO;
      weak:   RTO := 0.25 * E_weak + 0.75 * RTO.
    - 4.2.1 variable backoff factor (see `cocoa_backoff_factor`), binary
      backoff truncated at 32 s, dithering in [1, ACK_RANDOM_FACTOR] x RTO.
    - 4.3 aging, applied cumulatively when the estimate is next used: an RTO
      below 1 s left without update for 16 x RTO doubles; one above 3 s left
      for 4 x RTO becomes 1 s + RTO / 2. Each aging step restarts the idle
      clock, so a long silence ages the value step by step towards [1, 3] s.

    The draft sets no lower bound on the RTO (its variable backoff exists for
    RTOs under 1 s), so the RFC 6298 1 s minimum is not applied; the RFC 6298
    60 s upper bound is.
    """

    INITIAL_RTO_S = COCOA_INITIAL_RTO_S
    STRONG_K = 4.0
    WEAK_K = 1.0
    MAX_BACKOFF_S = 32.0
    #: Exchanges with more retransmissions than this feed no estimator (4.2).
    MAX_WEAK_RETRANSMISSIONS = 2

    __slots__ = ("_measured", "initial_rto_s", "last_update_s", "rto_s", "strong", "weak")

    def __init__(
        self,
        *,
        initial_rto_s: float = COCOA_INITIAL_RTO_S,
        min_rto_s: float = 0.0,
        max_rto_s: float = 60.0,
        granularity_s: float = 0.0,
    ) -> None:
        self.initial_rto_s = initial_rto_s
        self.strong = RtoEstimator(
            initial_rto_s=initial_rto_s,
            min_rto_s=min_rto_s,
            max_rto_s=max_rto_s,
            k=self.STRONG_K,
            granularity_s=granularity_s,
        )
        self.weak = RtoEstimator(
            initial_rto_s=initial_rto_s,
            min_rto_s=min_rto_s,
            max_rto_s=max_rto_s,
            k=self.WEAK_K,
            granularity_s=granularity_s,
        )
        self.rto_s = initial_rto_s
        self.last_update_s: float | None = None
        self._measured = False

    @property
    def measured(self) -> bool:
        """True once any RTT sample has reached an estimator."""
        return self._measured

    def on_exchange(self, now: float, rtt_s: float, retransmissions: int) -> bool:
        """Feed a completed exchange; returns False when it is too ambiguous to use.

        `rtt_s` is counted from the initial transmission (4.2).
        """
        if retransmissions < 0:
            raise ValueError(f"retransmissions must be >= 0, got {retransmissions}")
        if retransmissions == 0:
            e = self.strong.update(rtt_s)
            self.rto_s = 0.5 * e + 0.5 * self.rto_s
        elif retransmissions <= self.MAX_WEAK_RETRANSMISSIONS:
            e = self.weak.update(rtt_s)
            self.rto_s = 0.25 * e + 0.75 * self.rto_s
        else:
            return False
        self.last_update_s = now
        self._measured = True
        return True

    def _age(self, now: float) -> None:
        """4.3 aging, computed cumulatively instead of with a timer."""
        last = self.last_update_s
        if last is None:
            return
        while True:
            rto = self.rto_s
            if rto < 1.0:
                idle = 16 * rto
                if now - last < idle:
                    break
                self.rto_s = 2 * rto
            elif rto > 3.0:
                idle = 4 * rto
                if now - last < idle:
                    break
                self.rto_s = 1.0 + 0.5 * rto
            else:
                break
            last += idle
        self.last_update_s = last

    def rto(self, now: float, parallel: int = 0) -> float:
        """Overall RTO for a new exchange; `parallel` = exchanges already running."""
        if not self._measured:
            # 4.1: blind estimate, scaled by the number of parallel exchanges.
            return self.initial_rto_s * (parallel + 1)
        self._age(now)
        return self.rto_s

    def schedule(
        self, now: float, max_retransmissions: int, random_factor: float, parallel: int = 0
    ) -> BackoffSchedule:
        """The retransmission schedule of a new exchange to this destination."""
        rto = self.rto(now, parallel)
        return BackoffSchedule(
            base_timeout_s=rto,
            max_retransmissions=max_retransmissions,
            random_factor=random_factor,
            backoff_factor=cocoa_backoff_factor(rto),
            max_backoff_s=self.MAX_BACKOFF_S,
        )
