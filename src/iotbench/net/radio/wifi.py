"""802.11 at 2.4 GHz as 802.15.4 radios see it: its spectrum and its frames' timing.

Nothing here decodes Wi-Fi; an 802.15.4 radio only takes its power
(interferer.py). Two things decide that power's effect: how much of a
Wi-Fi transmitter's power falls into the 2 MHz of an 802.15.4 channel
(`in_band_fraction`), and when its frames are on the air (the frame
sources below).

Spectrum. An OFDM frame (802.11g ERP-OFDM, and the ACKs at 24 Mbit/s)
carries its power on 52 subcarriers 312.5 kHz apart, k = -26..-1, 1..26
(802.11-2016 17.3.5.10, 17.3.2.5), each a tone switched on for a 4 us
symbol (3.2 us and the 0.8 us guard interval): its spectrum is a sinc^2 of
that rectangle, sinc^2((f - k 312.5 kHz) x 4 us), and the frame's the sum of
the 52. That spectrum is flat (rippling by about 1.5 dB) to the last
subcarrier at 8.125 MHz and then falls with the sidelobes, ~1/f^2: -18 dBr
at 9 MHz, -25 at 11, -33 at 20. The transmit spectrum mask (17.3.9.3: 0 dBr
to 9 MHz, -20 dBr at 11, -28 at 20, -40 from 30, linear in dB between) bounds
it, and cuts the sidelobes only beyond 27 MHz (a transmitter shapes its
symbols to meet it); the spectrum is the lower of the two. The model leaves
out the shoulders a real power amplifier's distortion adds some 30 to 40 dB
down, which the mask allows and no 802.11 figure gives; the mask's flat top
to 9 MHz would put 1.4 dB more into channel 26 below. A DSSS frame (the beacons at 1 Mbit/s) has the
spectrum of its 11 Mchip/s Barker chips, sinc^2(f / 11 MHz), clipped to the
DSSS mask (802.11-2016 16.3.7.5: -30 dBr from 11 MHz, -50 dBr from 22 MHz).
The fraction in an 802.15.4 channel is the spectrum integrated over that
channel's 2 MHz, divided by its integral over all frequencies.

Worked: Wi-Fi channel 13 (2472 MHz) against 802.15.4 channel 26 (2480 MHz:
2479 to 2481 MHz, 7 to 9 MHz from the Wi-Fi centre): the subcarriers reach
8.125 MHz, so a little more than half the 2 MHz is under the flat top and
the rest under the sidelobes: -11.2 dB of the frame's power (the mask's
flat top to 9 MHz would give -9.8 dB). Channel 25 (2475 MHz, 2 to 4 MHz
out) lies under the flat top: -9.2 dB. A beacon's DSSS spectrum puts
-16.4 dB of its power into channel 26 (the sinc^2 at 7 to 9 MHz) and
-8.1 dB into channel 25.

Timing (802.11-2016 Table 19-8, ERP with short slots): slot 9 us, SIFS 10
us plus the 6 us signal extension that follows every ERP-OFDM frame, so
16 us between the end of a frame's radiation and the next frame; DIFS =
SIFS + 2 slots; CWmin 15. An OFDM frame lasts its preamble and SIGNAL (20
us) and 4 us per symbol, ceil((16 + 8 x bytes + 6) / bits per symbol)
symbols (17.3.2.4), 216 bits per symbol at 54 Mbit/s and 96 at 24.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from iotbench.net.radio import phy

SLOT_S = 9e-6
SIFS_S = 16e-6  # SIFS (10 us) after the 6 us signal extension of an ERP-OFDM frame
DIFS_S = SIFS_S + 2 * SLOT_S  # 34 us
PIFS_S = SIFS_S + SLOT_S  # 25 us
CW_MIN = 15
OFDM_PREAMBLE_S = 20e-6  # 16 us of training symbols and the 4 us SIGNAL field
OFDM_SYMBOL_S = 4e-6
DSSS_LONG_PREAMBLE_S = 192e-6  # 144 us preamble, 48 us PLCP header, at 1 Mbit/s
BEACON_INTERVAL_S = 0.1024  # 100 TU of 1,024 us, every AP's default

#: An iperf UDP datagram (iperf's default payload of 1,470 bytes) in an 802.11
#: data frame: MAC header 24, LLC/SNAP 8, IPv4 20, UDP 8, payload, FCS 4.
IPERF_PAYLOAD_BYTES = 1470
DATA_OVERHEAD_BYTES = 24 + 8 + 20 + 8 + 4
ACK_BYTES = 14  # frame control, duration, RA, FCS
#: A beacon: MAC header 24; timestamp 8, interval 2, capability 2; SSID of 8
#: bytes (10); supported rates, 8 of them (10); DS parameter set (3); TIM (6);
#: ERP information (3); extended supported rates, 4 (6); FCS 4.
BEACON_BYTES = 24 + 12 + 10 + 10 + 3 + 6 + 3 + 6 + 4

OFDM, DSSS = "ofdm", "dsss"
ERP_OFDM_RATES = (6e6, 9e6, 12e6, 18e6, 24e6, 36e6, 48e6, 54e6)

_OFDM_MASK = ((0.0, 0.0), (9.0, 0.0), (11.0, -20.0), (20.0, -28.0), (30.0, -40.0))
_DSSS_CHIP_MHZ = 11.0
OFDM_SUBCARRIER_MHZ = 0.3125
OFDM_SUBCARRIERS = tuple(k for k in range(-26, 27) if k)  # the 52, DC left empty
_OFDM_SYMBOL_US = 4.0  # a subcarrier's tone lasts a symbol, its guard interval included


def wifi_center_mhz(channel: int) -> float:
    if channel == 14:
        return 2484.0
    if not 1 <= channel <= 13:
        raise ValueError(f"Wi-Fi channel {channel} is not one of 1..14 (2.4 GHz)")
    return 2407.0 + 5.0 * channel


def ofdm_mask_db(offset_mhz: float) -> float:
    """The OFDM transmit spectrum mask (dBr) `offset_mhz` from the centre."""
    offset = abs(offset_mhz)
    for (f0, d0), (f1, d1) in zip(_OFDM_MASK, _OFDM_MASK[1:]):
        if offset <= f1:
            return d0 + (d1 - d0) * (offset - f0) / (f1 - f0)
    return _OFDM_MASK[-1][1]


def _sinc2(x: float) -> float:
    return 1.0 if x == 0 else (math.sin(math.pi * x) / (math.pi * x)) ** 2


def _ofdm_subcarriers(offset_mhz: float) -> float:
    """The 52 subcarriers' sinc^2 spectra summed at `offset_mhz` from the centre,
    relative to the sum's peak (0 dBr, what the mask's dBr refer to). Tones 312.5 kHz
    apart that last 4 us have their zeros every 250 kHz, so the top ripples by about
    1.5 dB about its mean."""
    return _ofdm_sum(offset_mhz) / _ofdm_peak()


def _ofdm_sum(offset_mhz: float) -> float:
    return sum(
        _sinc2((offset_mhz - k * OFDM_SUBCARRIER_MHZ) * _OFDM_SYMBOL_US) for k in OFDM_SUBCARRIERS
    )


@functools.lru_cache(maxsize=1)
def _ofdm_peak() -> float:
    """The sum's largest value, on a 1 kHz grid over the occupied band."""
    return max(_ofdm_sum(k / 1000.0) for k in range(-8500, 8501))


def _dsss_linear(offset_mhz: float) -> float:
    x = abs(offset_mhz) / _DSSS_CHIP_MHZ
    sinc2 = 1.0 if x == 0 else (math.sin(math.pi * x) / (math.pi * x)) ** 2
    if x < 1.0:
        return sinc2
    return min(sinc2, 10.0 ** ((-30.0 if x < 2.0 else -50.0) / 10.0))


def spectrum(modulation: str, offset_mhz: float) -> float:
    """The power spectral density, relative to its peak, `offset_mhz` from the centre."""
    if modulation == OFDM:
        return min(_ofdm_subcarriers(offset_mhz), 10.0 ** (ofdm_mask_db(offset_mhz) / 10.0))
    if modulation == DSSS:
        return _dsss_linear(offset_mhz)
    raise ValueError(f"modulation {modulation!r} is not one of {(OFDM, DSSS)}")


@functools.lru_cache(maxsize=64)
def in_band_fraction(
    wifi_channel: int, channel_802154: int, modulation: str = OFDM, step_mhz: float = 0.01
) -> float:
    """The fraction of a Wi-Fi frame's power inside the 2 MHz of an 802.15.4 channel."""
    wifi = wifi_center_mhz(wifi_channel)
    zigbee = phy.channel_center_mhz(channel_802154)

    def integral(lo: float, hi: float) -> float:
        steps = max(1, round((hi - lo) / step_mhz))
        width = (hi - lo) / steps
        return sum(
            spectrum(modulation, lo + (k + 0.5) * width - wifi) * width for k in range(steps)
        )

    total = _total(modulation)
    return integral(zigbee - 1.0, zigbee + 1.0) / total


@functools.lru_cache(maxsize=2)
def _total(modulation: str, step_mhz: float = 0.02) -> float:
    """A frame's spectrum integrated over all frequencies (beyond 60 MHz from its
    centre both masks are at their floor and it holds nothing measurable)."""
    steps = round(120.0 / step_mhz)
    return sum(spectrum(modulation, -60.0 + (k + 0.5) * step_mhz) for k in range(steps)) * step_mhz


def ofdm_airtime_s(frame_bytes: int, rate_bps: float) -> float:
    """An OFDM frame's time on the air: preamble, SIGNAL and its symbols."""
    bits_per_symbol = rate_bps * OFDM_SYMBOL_S
    symbols = math.ceil((16 + 8 * frame_bytes + 6) / bits_per_symbol)
    return OFDM_PREAMBLE_S + symbols * OFDM_SYMBOL_S


def dsss_airtime_s(frame_bytes: int, rate_bps: float = 1e6) -> float:
    return DSSS_LONG_PREAMBLE_S + 8 * frame_bytes / rate_bps


# ------------------------------------------------------------------ frame sources
#
# A source yields its frames in the order they start, as (start, end, emitter,
# modulation); an emitter's frames never overlap each other. The station sends
# data, the access point its ACKs and beacons.

STATION, ACCESS_POINT = "station", "ap"

PATTERNS = ("iperf", "poisson", "trains")


@dataclass(frozen=True)
class WifiTraffic:
    """What a Wi-Fi interferer sends.

    `iperf` (iperf's UDP test between a station and its access point, S6's
    interferer): a datagram of `payload_bytes` every payload bits / `rate_bps`
    (iperf paces its sends at the rate asked), each in a data frame at
    `phy_rate_bps` that the station sends after DIFS and its backoff (DCF;
    no other Wi-Fi station contends, so none collide), answered by the access
    point's ACK at 24 Mbit/s after SIFS; and the access point's beacons every
    102.4 ms at 1 Mbit/s DSSS, whatever the rate (0 Mbit/s still has them).
    A datagram that comes while the previous ones wait is queued: a rate the
    air cannot carry sends back to back.

    `poisson` and `trains` are bare bursts of `frame_bytes` (no ACKs, no
    beacons), for offered loads of unknown make-up: `poisson` spaced DIFS
    plus an exponential gap with the mean that gives the rate; `trains`
    back-to-back trains of `train_frames` frames on average (geometric) with
    exponential idle gaps between them, as a TCP transfer or a video segment
    comes. At one load, trains leave longer clear gaps than a steady stream.
    """

    rate_bps: float
    pattern: str = "iperf"
    start_s: float = 0.0
    phy_rate_bps: float = 54e6
    payload_bytes: int = IPERF_PAYLOAD_BYTES  # iperf
    beacons: bool = True  # iperf
    frame_bytes: int = 1500  # poisson, trains
    train_frames: float = 20.0  # trains

    def __post_init__(self) -> None:
        if self.pattern not in PATTERNS:
            raise ValueError(f"traffic pattern {self.pattern!r} is not one of {PATTERNS}")
        if self.train_frames < 1:
            raise ValueError(f"train_frames must be at least 1, got {self.train_frames}")
        if self.pattern == "iperf" and self.phy_rate_bps not in ERP_OFDM_RATES:
            raise ValueError(
                f"an iperf interferer's data frames are ERP-OFDM: phy_rate_bps "
                f"{self.phy_rate_bps:g} is not one of {[f'{r:g}' for r in ERP_OFDM_RATES]}"
            )

    @property
    def data_frame_bytes(self) -> int:
        if self.pattern == "iperf":
            return self.payload_bytes + DATA_OVERHEAD_BYTES
        return self.frame_bytes

    @property
    def data_s(self) -> float:
        if self.pattern == "iperf":
            return ofdm_airtime_s(self.data_frame_bytes, self.phy_rate_bps)
        # A bare burst: its preamble and its bytes at the PHY rate.
        return OFDM_PREAMBLE_S + self.frame_bytes * 8 / self.phy_rate_bps

    @property
    def emitters(self) -> tuple[tuple[str, str], ...]:
        """The (emitter, modulation) pairs whose frames this traffic has."""
        if self.pattern != "iperf":
            return ((STATION, OFDM),)
        return ((STATION, OFDM), (ACCESS_POINT, OFDM)) + (
            ((ACCESS_POINT, DSSS),) if self.beacons else ()
        )

    def source(self, rng: random.Random) -> FrameSource:
        """Its frames, in order, drawn from `rng`."""
        if self.pattern == "iperf":
            return IperfSource(self, rng)
        return BurstSource(self, rng)

    def frames(self, rng: random.Random) -> Iterator[Frame]:
        source = self.source(rng)
        while (frame := source.next()) is not None:
            yield frame


#: (start, end, emitter, modulation) of one frame on the air.
Frame = tuple[float, float, str, str]


class FrameSource:
    """A transmitter's frames, one at a time, whose offered rate can change while it
    runs (`set_rate`: a stepped sweep starts the next iperf at a higher rate).

    `next()` returns the next frame (None: no more). `rewind()` undoes the last
    `next()` unless that frame was an ACK, whose data frame went before it: the
    interferer draws a frame ahead of the time asked, and a new rate from a time
    before that frame must decide it again. A source's state is a few numbers, so
    a rewind restores them; the random draws are the same either way, since they
    follow frames that have gone (an iperf station draws its backoff after its
    ACK, a burst source its gap after its burst).
    """

    def next(self) -> Frame | None:
        raise NotImplementedError

    def rewind(self) -> bool:
        """Undo the last `next()`: True, or False when it cannot (an ACK)."""
        raise NotImplementedError

    def set_rate(self, now: float, rate_bps: float) -> None:
        raise NotImplementedError


class IperfSource(FrameSource):
    """iperf's UDP test (WifiTraffic's doc): datagrams every payload bits / rate,
    each a data frame after DIFS and backoff and the access point's ACK after
    SIFS; the beacons at their own phase, ahead of any data. A new rate is a new
    iperf: its first datagram at once, the next ones at its own pace."""

    def __init__(self, t: WifiTraffic, rng: random.Random) -> None:
        self.rng = rng
        self.payload_bits = 8 * t.payload_bytes
        self.start_s = t.start_s
        self.data_s = t.data_s
        self.ack_s = ofdm_airtime_s(ACK_BYTES, min(24e6, t.phy_rate_bps))  # the highest basic rate
        self.beacon_s = dsss_airtime_s(BEACON_BYTES)
        self.interval = self.payload_bits / t.rate_bps if t.rate_bps > 0 else math.inf
        self.arrival = t.start_s if t.rate_bps > 0 else math.inf  # the next datagram's
        # The access point's beacon times (TBTT) have their own phase.
        self.tbtt = t.start_s + rng.uniform(0.0, BEACON_INTERVAL_S) if t.beacons else math.inf
        self.free = t.start_s  # when the medium last became idle
        self.backoff = rng.randint(0, CW_MIN)  # the station's slots still to count down
        self.ack: float | None = None  # when the ACK of the frame just sent goes
        self._before: tuple = ()

    def next(self) -> Frame | None:
        ack = self.ack
        if ack is not None:
            self.ack = None
            self._before = ()
            self.free = end = ack + self.ack_s
            self.arrival += self.interval
            self.backoff = self.rng.randint(0, CW_MIN)
            return ack, end, ACCESS_POINT, OFDM
        self._before = (self.free, self.tbtt, self.backoff)
        free = self.free
        # The station may send once the medium was idle for DIFS and its backoff
        # has counted down; a datagram that finds that done goes at once.
        station = max(self.arrival, free + DIFS_S + self.backoff * SLOT_S)
        # The beacon goes at TBTT once the medium was idle for PIFS: APs send it
        # from a queue of their own, ahead of any data.
        beacon = max(self.tbtt, free + PIFS_S)
        if beacon <= station:
            if beacon == math.inf:
                return None
            counted = math.floor((beacon - free - DIFS_S) / SLOT_S)
            if counted > 0:  # the slots the station counted before the beacon began
                self.backoff = max(0, self.backoff - counted)
            self.free = end = beacon + self.beacon_s
            self.tbtt += BEACON_INTERVAL_S
            return beacon, end, ACCESS_POINT, DSSS
        end = station + self.data_s
        self.ack = end + SIFS_S
        return station, end, STATION, OFDM

    def rewind(self) -> bool:
        if not self._before:
            return False
        self.free, self.tbtt, self.backoff = self._before
        self.ack = None
        self._before = ()
        return True

    def set_rate(self, now: float, rate_bps: float) -> None:
        self.interval = self.payload_bits / rate_bps if rate_bps > 0 else math.inf
        self.arrival = max(now, self.start_s) if rate_bps > 0 else math.inf


class BurstSource(FrameSource):
    """Bare bursts (`poisson`, `trains`; WifiTraffic's doc)."""

    def __init__(self, t: WifiTraffic, rng: random.Random) -> None:
        self.rng = rng
        self.burst = t.data_s
        self.t = t
        self._pace(t.rate_bps)
        self.start = t.start_s + self._gap() if self.frames_per_s > 0 else math.inf
        self.last_end = t.start_s  # the end of the last burst sent
        self._before: tuple[float, float] | None = None

    def _pace(self, rate_bps: float) -> None:
        t = self.t
        self.frames_per_s = rate_bps / (8 * t.frame_bytes)
        if t.pattern == "trains":
            # A train of n frames and the idle gap after it last n / frames_per_s on
            # average: n bursts, n - 1 back-to-back gaps and one DIFS, the rest idle.
            n = t.train_frames
            busy = n * self.burst + (n - 1) * (DIFS_S + CW_MIN / 2 * SLOT_S) + DIFS_S
            self.last_p = 1.0 / n  # a frame is its train's last with this chance
        else:
            n, busy, self.last_p = 1.0, self.burst + DIFS_S, 1.0
        self.mean_gap = n / self.frames_per_s - busy if self.frames_per_s > 0 else math.inf

    def _gap(self) -> float:
        rng = self.rng
        if self.mean_gap <= 0 or (self.last_p < 1.0 and rng.random() >= self.last_p):
            return DIFS_S + rng.randint(0, CW_MIN) * SLOT_S  # saturated, or within a train
        return DIFS_S + rng.expovariate(1.0 / self.mean_gap)

    def next(self) -> Frame | None:
        start = self.start
        if start == math.inf:
            return None
        self._before = (start, self.last_end)
        self.last_end = end = start + self.burst
        self.start = start + (self.burst + self._gap())
        return start, end, STATION, OFDM

    def rewind(self) -> bool:
        if self._before is None:
            return False
        self.start, self.last_end = self._before
        self._before = None
        return True

    def set_rate(self, now: float, rate_bps: float) -> None:
        self._pace(rate_bps)
        # The new load's first burst a gap after now, or after the burst on the air,
        # which the new rate does not stop.
        self.start = max(now, self.last_end) + self._gap() if self.frames_per_s > 0 else math.inf
