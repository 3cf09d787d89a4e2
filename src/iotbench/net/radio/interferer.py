"""An external interferer: a Wi-Fi-like transmitter that never defers to 802.15.4.

It sends bursts (one 802.11 frame each) that add power at every 802.15.4
radio within reach; 802.15.4 receivers treat that power as noise (it lowers
the SINR of frames they receive) and their CCA senses it, but nothing
decodes it and it never waits for a clear channel.

Traffic: `rate_bps` of offered load in `frame_bytes` frames sent at
`phy_rate_bps` (802.11g OFDM by default: 54 Mbit/s, a 20 us PLCP preamble
and header). One transmitter: a burst never overlaps the previous one. The
gap between bursts is at least DIFS (34 us) and otherwise exponential, with
the mean that gives the offered load; a load the air cannot carry becomes
back-to-back bursts (DIFS plus a random backoff of 0..15 slots of 9 us).

How much of the burst's power falls into an 802.15.4 channel follows the
transmit spectrum mask of 802.11 OFDM (IEEE 802.11-2016 17.3.9.3): 0 dBr up
to 9 MHz from the centre, -20 dBr at 11 MHz, -28 dBr at 20 MHz, -40 dBr from
30 MHz on, linear in dB in between. The fraction in the 2 MHz of an
802.15.4 channel is that mask integrated over the channel, divided by its
integral over all frequencies: about -9.8 dB for a channel inside the Wi-Fi
channel, far less beside it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from iotbench.net.radio import phy
from iotbench.net.radio.medium import Radio, Transmission
from iotbench.sim import Simulator

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


@dataclass(frozen=True)
class WifiTraffic:
    rate_bps: float
    frame_bytes: int = 1500
    phy_rate_bps: float = 54e6
    start_s: float = 0.0

    @property
    def burst_s(self) -> float:
        return PLCP_S + self.frame_bytes * 8 / self.phy_rate_bps


class WifiInterferer:
    """Bursts on `targets` (radio, power in mW within its channel) at the traffic's load."""

    def __init__(
        self,
        sim: Simulator,
        name: str,
        traffic: WifiTraffic,
        targets: list[tuple[Radio, float]],
        rng: random.Random,
    ) -> None:
        self.sim = sim
        self.name = name
        self.traffic = traffic
        self.targets = targets
        self.rng = rng
        self.bursts = 0
        self.busy_s = 0.0
        frames_per_s = traffic.rate_bps / (8 * traffic.frame_bytes)
        self._mean_gap_s = (
            1.0 / frames_per_s - traffic.burst_s - DIFS_S if frames_per_s > 0 else math.inf
        )

    def start(self) -> None:
        if self.traffic.rate_bps > 0 and self.targets:
            self.sim.at(self.traffic.start_s + self._gap(), self._burst)

    def _gap(self) -> float:
        if self._mean_gap_s > 0:
            return DIFS_S + self.rng.expovariate(1.0 / self._mean_gap_s)
        return DIFS_S + self.rng.randint(0, CW_MIN) * SLOT_S  # saturated

    def _burst(self) -> None:
        now = self.sim.now
        duration = self.traffic.burst_s
        tx = Transmission(self, None, None, now, now + duration)
        for radio, mw in self.targets:
            radio.signal_starts(tx, mw, now)
        tx.affected = self.targets
        self.bursts += 1
        self.busy_s += duration
        self.sim.post(tx.end, self._burst_end, tx)

    def _burst_end(self, tx: Transmission) -> None:
        now = self.sim.now
        for radio, mw in tx.affected:
            radio.signal_ends(tx, mw, now)
        self.sim.post(now + self._gap(), self._burst)
