"""An external interferer: a Wi-Fi-like transmitter that never defers to 802.15.4.

It sends bursts (one 802.11 frame each) that add power at every 802.15.4
radio within reach while they last; 802.15.4 receivers treat that power as noise (it lowers
the SINR of frames they receive) and their CCA senses it, but nothing
decodes it and it never waits for a clear channel.

Traffic: `rate_bps` of offered load in `frame_bytes` frames sent at
`phy_rate_bps` (802.11g OFDM by default: 54 Mbit/s, a 20 us PLCP preamble
and header). One transmitter: a burst never overlaps the previous one. Two
patterns of the same offered load:

- `poisson`: the gap between bursts is at least DIFS (34 us) and otherwise
  exponential, with the mean that gives the load (a steady stream, the
  S6 interference sweep's model of an interferer of a given rate);
- `trains`: frames come in trains, as a TCP transfer or a video segment
  sends them: back to back within a train (DIFS plus a random backoff of
  0..15 slots of 9 us), a geometric number of frames per train with mean
  `train_frames`, and exponential idle gaps between trains with the mean
  that gives the load. Real Wi-Fi traffic is bursty at every time scale;
  at the same load, trains leave longer clear gaps than a steady stream,
  and an 802.15.4 frame (about 2 ms) fits in them far more often.

A load the air cannot carry becomes back-to-back bursts in either pattern.

How much of the burst's power falls into an 802.15.4 channel follows the
transmit spectrum mask of 802.11 OFDM (IEEE 802.11-2016 17.3.9.3): 0 dBr up
to 9 MHz from the centre, -20 dBr at 11 MHz, -28 dBr at 20 MHz, -40 dBr from
30 MHz on, linear in dB in between. The fraction in the 2 MHz of an
802.15.4 channel is that mask integrated over the channel, divided by its
integral over all frequencies: about -9.8 dB for a channel inside the Wi-Fi
channel, far less beside it.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass

from iotbench.net.radio import phy
from iotbench.net.radio.medium import Radio

PLCP_S = 20e-6  # OFDM preamble (16 us) and SIGNAL field (4 us)
DIFS_S = 34e-6  # 802.11 OFDM at 2.4 GHz with short slots: SIFS 16 + 2 x 9 us
SLOT_S = 9e-6
CW_MIN = 15
_MASK = ((0.0, 0.0), (9.0, 0.0), (11.0, -20.0), (20.0, -28.0), (30.0, -40.0))


def wifi_center_mhz(channel: int) -> float:
    if channel == 14:
        return 2484.0
    if not 1 <= channel <= 13:
        raise ValueError(f"Wi-Fi channel {channel} is not one of 1..14 (2.4 GHz)")
    return 2407.0 + 5.0 * channel


def _mask_db(offset_mhz: float) -> float:
    offset = abs(offset_mhz)
    for (f0, d0), (f1, d1) in zip(_MASK, _MASK[1:]):
        if offset <= f1:
            return d0 + (d1 - d0) * (offset - f0) / (f1 - f0)
    return _MASK[-1][1]


def in_band_fraction(wifi_channel: int, channel_802154: int, step_mhz: float = 0.01) -> float:
    """The fraction of a Wi-Fi burst's power inside the 2 MHz of an 802.15.4 channel."""
    wifi = wifi_center_mhz(wifi_channel)
    zigbee = phy.channel_center_mhz(channel_802154)

    def integral(lo: float, hi: float) -> float:
        steps = max(1, round((hi - lo) / step_mhz))
        width = (hi - lo) / steps
        return sum(
            10.0 ** (_mask_db(lo + (k + 0.5) * width - wifi) / 10.0) * width for k in range(steps)
        )

    total = integral(wifi - 60.0, wifi + 60.0)  # beyond 30 MHz the mask is -40 dBr
    return integral(zigbee - 1.0, zigbee + 1.0) / total


PATTERNS = ("poisson", "trains")


@dataclass(frozen=True)
class WifiTraffic:
    rate_bps: float
    frame_bytes: int = 1500
    phy_rate_bps: float = 54e6
    start_s: float = 0.0
    pattern: str = "poisson"
    train_frames: float = 20.0  # mean frames per train (pattern "trains")

    def __post_init__(self) -> None:
        if self.pattern not in PATTERNS:
            raise ValueError(f"traffic pattern {self.pattern!r} is not one of {PATTERNS}")
        if self.train_frames < 1:
            raise ValueError(f"train_frames must be at least 1, got {self.train_frames}")

    @property
    def burst_s(self) -> float:
        return PLCP_S + self.frame_bytes * 8 / self.phy_rate_bps


#: How far back a radio may ask about bursts: longer than any 802.15.4 frame
#: (133 bytes, 4.3 ms) and any CCA window, so a reception's oldest stretch is kept.
HISTORY_S = 0.05


class WifiInterferer:
    """The bursts of one Wi-Fi transmitter, received by `targets` (radio, power in mW
    within its 802.15.4 channel).

    A burst costs no kernel events: a radio that needs the interference over an
    interval (a stretch of a reception at constant SINR, a CCA window) asks
    `overlaps(a, b)`. Bursts are drawn in order from the interferer's own random
    stream up to the latest time asked, so a seed gives the same bursts whoever
    asks, and when; those that ended more than HISTORY_S before the latest time
    asked are forgotten, so memory stays flat however long the run (at a
    saturating load a burst every ~0.25 ms would otherwise cost two events and a
    call on every radio within reach).
    """

    def __init__(
        self,
        name: str,
        traffic: WifiTraffic,
        targets: list[tuple[Radio, float]],
        rng: random.Random,
    ) -> None:
        self.name = name
        self.traffic = traffic
        self.targets = targets
        self.rng = rng
        self._burst_s = traffic.burst_s
        frames_per_s = traffic.rate_bps / (8 * traffic.frame_bytes)
        if traffic.pattern == "trains":
            # A train of n frames and the idle gap after it last n / frames_per_s
            # on average: n bursts, n - 1 back-to-back gaps and one DIFS, the rest idle.
            n = traffic.train_frames
            busy = n * self._burst_s + (n - 1) * (DIFS_S + CW_MIN / 2 * SLOT_S) + DIFS_S
            self._train_p = 1.0 / n  # a frame is the train's last with this chance
        else:
            n, busy, self._train_p = 1.0, self._burst_s + DIFS_S, 1.0
        self._mean_gap_s = n / frames_per_s - busy if frames_per_s > 0 else math.inf
        # The bursts drawn and not yet forgotten, from index `_head`: start and end
        # times, both increasing (one transmitter: bursts never overlap).
        self._starts: list[float] = []
        self._ends: list[float] = []
        self._head = 0
        self._next_start = (
            traffic.start_s + self._gap() if traffic.rate_bps > 0 and targets else math.inf
        )
        self._drawn = 0
        self._forgotten_busy_s = 0.0

    def start(self) -> None:
        """Make the targets hear the bursts."""
        for radio, mw in self.targets:
            radio.interferers.append((self, mw))

    def _gap(self) -> float:
        """The time from a burst's end to the next one's start."""
        if self._mean_gap_s <= 0:
            return DIFS_S + self.rng.randint(0, CW_MIN) * SLOT_S  # saturated
        if self._train_p < 1.0 and self.rng.random() >= self._train_p:
            return DIFS_S + self.rng.randint(0, CW_MIN) * SLOT_S  # within a train
        return DIFS_S + self.rng.expovariate(1.0 / self._mean_gap_s)

    def _draw_until(self, t: float) -> None:
        starts, ends, burst = self._starts, self._ends, self._burst_s
        while self._next_start <= t:
            start = self._next_start
            starts.append(start)
            ends.append(start + burst)
            self._drawn += 1
            self._next_start = start + burst + self._gap()
        # Forget what no one can ask about any more; compact now and then.
        horizon = t - HISTORY_S
        head = bisect.bisect_left(ends, horizon, self._head)
        self._forgotten_busy_s += (head - self._head) * burst
        self._head = head
        if head > 4096:
            del starts[:head], ends[:head]
            self._head = 0

    def overlaps(self, a: float, b: float) -> list[tuple[float, float]]:
        """The parts of [a, b] during which a burst was on the air, in order."""
        if self._next_start > b and self._head == len(self._ends):
            return []
        self._draw_until(b)
        ends, starts = self._ends, self._starts
        out = []
        for k in range(bisect.bisect_right(ends, a, self._head), len(ends)):
            start = starts[k]
            if start >= b:
                break
            end = ends[k]
            out.append((start if start > a else a, end if end < b else b))
        return out

    def on_air(self, t: float) -> bool:
        """Whether a burst is on the air at `t`."""
        return bool(self.overlaps(t, t))

    def stats(self, now: float) -> tuple[int, float]:
        """Bursts begun by `now`, and the time they were on the air."""
        self._draw_until(now)
        starts, ends = self._starts, self._ends
        later = len(starts) - bisect.bisect_right(starts, now, self._head)
        busy = self._forgotten_busy_s + sum(
            min(e, now) - s
            for s, e in zip(starts[self._head :], ends[self._head :], strict=True)
            if s <= now
        )
        return self._drawn - later, busy
