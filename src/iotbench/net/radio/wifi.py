"""802.11 at 2.4 GHz as 802.15.4 radios see it: its spectrum and its frames' timing.

Nothing here decodes Wi-Fi; an 802.15.4 radio only takes its power
(interferer.py). Two things decide that power's effect: how much of a
Wi-Fi transmitter's power falls into the 2 MHz of an 802.15.4 channel
(`in_band_fraction`), and when its frames are on the air (the frame
sources below).

Spectrum. An OFDM frame (802.11g ERP-OFDM, and the ACKs at 24 Mbit/s)
fills its channel flat and falls off as the transmit spectrum mask allows
(IEEE 802.11-2016 17.3.9.3 / 18.3.9.3): 0 dBr up to 9 MHz from the centre,
-20 dBr at 11 MHz, -28 dBr at 20 MHz, -40 dBr from 30 MHz on, linear in dB
between; the mask is the bound every transmitter meets, and a flat OFDM
spectrum follows it closely. A DSSS frame (the beacons at 1 Mbit/s) has
the spectrum of its 11 Mchip/s Barker chips, sinc^2(f / 11 MHz), clipped
to the DSSS mask (802.11-2016 16.3.7.5: -30 dBr from 11 MHz, -50 dBr from
22 MHz). The fraction in an 802.15.4 channel is the spectrum integrated
over that channel's 2 MHz, divided by its integral over all frequencies.

Worked: Wi-Fi channel 13 (2472 MHz) against 802.15.4 channel 26 (2480
MHz: 2479 to 2481 MHz, 7 to 9 MHz from the Wi-Fi centre, all under the
mask's flat top): 2 MHz of 0 dBr against the whole OFDM spectrum's 18.96
MHz-equivalent (18 MHz flat; 2 x 0.430 between 9 and 11 MHz; 2 x 0.044
between 11 and 20; 2 x 0.005 between 20 and 30; 0.006 beyond): a fraction
of 0.1055, -9.77 dB. Channel 25 (2475 MHz) lies inside the flat top too:
the same -9.77 dB. A beacon's DSSS spectrum puts -16.4 dB of its power
into channel 26 (the sinc^2 at 7 to 9 MHz) and -8.1 dB into channel 25.

Timing (802.11-2016 Table 19-8, ERP with short slots): slot 9 us, SIFS 10
us plus the 6 us signal extension that follows every ERP-OFDM frame, so
16 us between the end of a frame's radiation and the next frame; DIFS =
SIFS + 2 slots; CWmin 15. An OFDM frame lasts its preamble and SIGNAL (20
us) and 4 us per symbol, ceil((16 + 8 x bytes + 6) / bits per symbol)
symbols (17.3.2.4), 216 bits per symbol at 54 Mbit/s and 96 at 24.
"""

from __future__ import annotations

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


def wifi_center_mhz(channel: int) -> float:
    if channel == 14:
        return 2484.0
    if not 1 <= channel <= 13:
        raise ValueError(f"Wi-Fi channel {channel} is not one of 1..14 (2.4 GHz)")
    return 2407.0 + 5.0 * channel


def _ofdm_db(offset_mhz: float) -> float:
    offset = abs(offset_mhz)
    for (f0, d0), (f1, d1) in zip(_OFDM_MASK, _OFDM_MASK[1:]):
        if offset <= f1:
            return d0 + (d1 - d0) * (offset - f0) / (f1 - f0)
    return _OFDM_MASK[-1][1]


def _dsss_linear(offset_mhz: float) -> float:
    x = abs(offset_mhz) / _DSSS_CHIP_MHZ
    sinc2 = 1.0 if x == 0 else (math.sin(math.pi * x) / (math.pi * x)) ** 2
    if x < 1.0:
        return sinc2
    return min(sinc2, 10.0 ** ((-30.0 if x < 2.0 else -50.0) / 10.0))


def spectrum(modulation: str, offset_mhz: float) -> float:
    """The power spectral density, relative to its peak, `offset_mhz` from the centre."""
    if modulation == OFDM:
        return 10.0 ** (_ofdm_db(offset_mhz) / 10.0)
    if modulation == DSSS:
        return _dsss_linear(offset_mhz)
    raise ValueError(f"modulation {modulation!r} is not one of {(OFDM, DSSS)}")


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

    total = integral(wifi - 60.0, wifi + 60.0)  # beyond, both masks are at their floor
    return integral(zigbee - 1.0, zigbee + 1.0) / total


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

    def frames(self, rng: random.Random) -> Iterator[tuple[float, float, str, str]]:
        if self.pattern == "iperf":
            return _iperf(self, rng)
        return _bursts(self, rng)


def _iperf(t: WifiTraffic, rng: random.Random) -> Iterator[tuple[float, float, str, str]]:
    data_s = t.data_s
    ack_s = ofdm_airtime_s(ACK_BYTES, min(24e6, t.phy_rate_bps))  # the highest basic rate
    beacon_s = dsss_airtime_s(BEACON_BYTES)
    interval = 8 * t.payload_bytes / t.rate_bps if t.rate_bps > 0 else math.inf
    arrival = t.start_s if t.rate_bps > 0 else math.inf  # the next datagram's
    # The access point's beacon times (TBTT) have their own phase.
    tbtt = t.start_s + rng.uniform(0.0, BEACON_INTERVAL_S) if t.beacons else math.inf
    free = t.start_s  # when the medium last became idle
    backoff = rng.randint(0, CW_MIN)  # the station's slots still to count down
    while True:
        # The station may send once the medium was idle for DIFS and its backoff
        # has counted down; a datagram that finds that done goes at once.
        station = max(arrival, free + DIFS_S + backoff * SLOT_S)
        # The beacon goes at TBTT once the medium was idle for PIFS: APs send it
        # from a queue of their own, ahead of any data.
        beacon = max(tbtt, free + PIFS_S)
        if beacon <= station:
            if beacon == math.inf:
                return
            yield beacon, beacon + beacon_s, ACCESS_POINT, DSSS
            counted = math.floor((beacon - free - DIFS_S) / SLOT_S)
            if counted > 0:  # the slots the station counted before the beacon began
                backoff = max(0, backoff - counted)
            free = beacon + beacon_s
            tbtt += BEACON_INTERVAL_S
            continue
        yield station, station + data_s, STATION, OFDM
        ack = station + data_s + SIFS_S
        yield ack, ack + ack_s, ACCESS_POINT, OFDM
        free = ack + ack_s
        arrival += interval
        backoff = rng.randint(0, CW_MIN)


def _bursts(t: WifiTraffic, rng: random.Random) -> Iterator[tuple[float, float, str, str]]:
    burst = t.data_s
    frames_per_s = t.rate_bps / (8 * t.frame_bytes)
    if frames_per_s <= 0:
        return
    if t.pattern == "trains":
        # A train of n frames and the idle gap after it last n / frames_per_s on
        # average: n bursts, n - 1 back-to-back gaps and one DIFS, the rest idle.
        n = t.train_frames
        busy = n * burst + (n - 1) * (DIFS_S + CW_MIN / 2 * SLOT_S) + DIFS_S
        last_p = 1.0 / n  # a frame is its train's last with this chance
    else:
        n, busy, last_p = 1.0, burst + DIFS_S, 1.0
    mean_gap = n / frames_per_s - busy

    def gap() -> float:
        if mean_gap <= 0 or (last_p < 1.0 and rng.random() >= last_p):
            return DIFS_S + rng.randint(0, CW_MIN) * SLOT_S  # saturated, or within a train
        return DIFS_S + rng.expovariate(1.0 / mean_gap)

    start = t.start_s + gap()
    while True:
        yield start, start + burst, STATION, OFDM
        start += burst + gap()
