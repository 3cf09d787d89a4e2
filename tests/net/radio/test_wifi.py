"""802.11 as 802.15.4 radios see it: the spectrum in an 802.15.4 channel, and the
frame timing of iperf's UDP test, checked against numbers worked by hand."""

from __future__ import annotations

import math
import random

import pytest

from iotbench.net.radio import phy
from iotbench.net.radio.propagation import PathLoss, free_space_loss_db
from iotbench.net.radio.wifi import (
    ACCESS_POINT,
    BEACON_INTERVAL_S,
    CW_MIN,
    DIFS_S,
    DSSS,
    OFDM,
    PIFS_S,
    SIFS_S,
    SLOT_S,
    STATION,
    WifiTraffic,
    _ofdm_subcarriers,  # what the mask bounds
    dsss_airtime_s,
    in_band_fraction,
    ofdm_airtime_s,
    ofdm_mask_db,
    spectrum,
    wifi_center_mhz,
)


def test_channel_centres():
    assert wifi_center_mhz(1) == 2412.0
    assert wifi_center_mhz(13) == 2472.0
    assert wifi_center_mhz(14) == 2484.0
    assert phy.channel_center_mhz(25) == 2475.0 and phy.channel_center_mhz(26) == 2480.0
    with pytest.raises(ValueError, match="not one of 1..14"):
        wifi_center_mhz(15)


def test_ofdm_share_in_an_802154_channel_inside_the_occupied_band():
    """52 tones 312.5 kHz apart, each a sinc^2 of its 4 us symbol that integrates to
    1 / 4 us = 0.25 MHz: 13 MHz-equivalent in all, spread at 0.25 / 0.3125 = 0.8 per
    MHz over the occupied band. Channel 25 lies 2 to 4 MHz from Wi-Fi 13's centre,
    inside it: 2 x 0.8 / 13 = 0.123, -9.10 dB (the tones' ripple moves it a little)."""
    assert 10 * math.log10(in_band_fraction(13, 25)) == pytest.approx(-9.10, abs=0.15)


def test_ofdm_share_at_the_band_edge_is_its_occupied_part():
    """Channel 26 spans 7 to 9 MHz from Wi-Fi 13's centre; the last tone sits at
    8.125 MHz, its main lobe to 8.375: about 1.25 MHz of 0.8, the sidelobes beyond
    adding a few hundredths: (1.0 + 0.03) / 13, -11.0 dB, 1.3 dB less than the flat
    top of the transmit mask (0 dBr to 9 MHz) would put there."""
    share = 10 * math.log10(in_band_fraction(13, 26))
    assert share == pytest.approx(-11.0, abs=0.2)
    assert share < -9.77 - 1.0


def test_the_subcarriers_spectrum_stays_under_the_transmit_mask():
    peak = max(spectrum(OFDM, k / 100.0) for k in range(-900, 901))
    assert peak == pytest.approx(1.0, abs=1e-3)  # relative to its peak, as dBr is
    for tenth_mhz in range(90, 600):
        offset = tenth_mhz / 10.0
        assert 10 * math.log10(spectrum(OFDM, offset)) <= ofdm_mask_db(offset) + 1e-9
        if offset < 26.9:  # the tones' own sidelobes: the mask cuts nothing this near
            assert spectrum(OFDM, offset) == _ofdm_subcarriers(offset)
    # 12 MHz out (802.15.4 channel 22 against Wi-Fi 13) the sidelobes are some 25 dB
    # under the band's mean level: -9.1 - 25.4 dB.
    assert 10 * math.log10(in_band_fraction(13, 22)) == pytest.approx(-34.5, abs=0.5)
    assert in_band_fraction(1, 26) < in_band_fraction(13, 26) / 1000


def test_dsss_beacon_share_follows_the_chips_sinc():
    """sinc^2(f / 11 MHz): its main lobe (within 11 MHz) holds 90.3 % of the 11 MHz
    its whole integral is; beyond, the mask clips the side lobes to -30 dBr up to 22
    MHz and -50 dBr on (2 x 11 x 10^-3 + 2 x 38 x 10^-5 MHz): 9.95 MHz-equivalent.
    Channel 26 sits 7 to 9 MHz away; Simpson's rule over sinc^2 there, over 9.95:
    -16.4 dB."""

    def sinc2(f_mhz: float) -> float:
        x = f_mhz / 11
        return (math.sin(math.pi * x) / (math.pi * x)) ** 2

    total = 0.9028 * 11 + 2 * 11 * 1e-3 + 2 * 38 * 1e-5
    in_26 = 2 * (sinc2(7) + 4 * sinc2(8) + sinc2(9)) / 6
    assert 10 * math.log10(in_band_fraction(13, 26, DSSS)) == pytest.approx(
        10 * math.log10(in_26 / total), abs=0.05
    )
    assert 10 * math.log10(in_26 / total) == pytest.approx(-16.4, abs=0.05)
    assert in_band_fraction(13, 25, DSSS) > in_band_fraction(13, 26, DSSS)


def test_the_power_a_channel_26_receiver_takes_from_a_20_dbm_sender_at_10_m():
    """Step by step: free space at 1 m and 2480 MHz, 20 log10(4 pi f / c) = 40.33 dB;
    10 m with exponent 3: + 30 dB, 70.33 dB; the whole frame arrives at 20 - 70.33 =
    -50.33 dBm, and -11.10 dB of it lies in channel 26: -61.43 dBm, 23 dB above the
    CC2520's CCA threshold (-84 dBm) and 39 dB above the channel's noise."""
    fspl = free_space_loss_db(1.0, 2480.0)
    assert fspl == pytest.approx(40.33, abs=0.01)
    loss = PathLoss(exponent=3.0, shadowing_db=0.0).mean_loss_db(10.0, 2480.0)
    assert loss == pytest.approx(70.33, abs=0.01)
    in_channel = 20.0 - loss + 10 * math.log10(in_band_fraction(13, 26))
    assert in_channel == pytest.approx(-61.43, abs=0.02)


def test_frame_airtimes():
    # 1,470 + 64 = 1,534 bytes at 54 Mbit/s: ceil(12,294 / 216) = 57 symbols.
    assert ofdm_airtime_s(1534, 54e6) == pytest.approx(20e-6 + 57 * 4e-6)
    assert ofdm_airtime_s(14, 24e6) == pytest.approx(28e-6)  # ceil(134 / 96) = 2
    assert dsss_airtime_s(78) == pytest.approx(192e-6 + 624e-6)
    assert WifiTraffic(5e6).data_frame_bytes == 1534


def frames(rate_bps: float, seconds: float, seed: int = 1, **kw) -> list[tuple]:
    out = []
    for frame in WifiTraffic(rate_bps, **kw).frames(random.Random(seed)):
        if frame[0] > seconds:
            break
        out.append(frame)
    return out


def exchanges(fs: list[tuple]) -> list[tuple[float, float]]:
    """(data start, ACK end) per data frame."""
    out = []
    for k, (start, _end, emitter, _modulation) in enumerate(fs):
        if emitter == STATION and k + 1 < len(fs):
            ack = fs[k + 1]
            assert ack[2:] == (ACCESS_POINT, OFDM)
            assert ack[0] == pytest.approx(fs[k][1] + SIFS_S)
            out.append((start, ack[1]))
    return out


def test_iperf_at_5_mbit_s_sends_a_datagram_every_2352_us():
    """1,470 bytes every 11,760 bits / 5 Mbit/s = 2.352 ms. The medium is idle most
    of the time, so a datagram goes DIFS plus the rest of the backoff after the last
    exchange, which ended long ago: at once, on iperf's grid."""
    fs = frames(5e6, 10.0)
    ex = exchanges(fs)
    assert len(ex) == pytest.approx(10.0 / 2.352e-3, abs=2)
    gaps = [b[0] - a[0] for a, b in zip(ex, ex[1:])]
    on_grid = [g for g in gaps if g == pytest.approx(2.352e-3, abs=1e-9)]
    assert len(on_grid) / len(gaps) > 0.98  # the others waited for a beacon
    airtime = sum(end - start for start, end, *_ in fs)
    # Data 248 us and ACK 28 us per datagram, and 816 us of beacon per 102.4 ms.
    expected = len(ex) * (248e-6 + 28e-6) + 10.0 / BEACON_INTERVAL_S * 816e-6
    assert airtime == pytest.approx(expected, rel=0.01)


def test_iperf_at_28_5_mbit_s_fills_the_air_but_keeps_up():
    """A datagram every 412.6 us; an exchange takes DIFS + 7.5 slots on average +
    248 + 16 + 28 us = 393.5 us, so the station keeps up but rarely finds the
    medium idle: the mean spacing is iperf's, the gaps between exchanges DIFS plus
    a backoff of 0 to 15 slots (or more when the datagram comes later)."""
    fs = frames(28.5e6, 5.0, seed=3)
    ex = exchanges(fs)
    interval = 8 * 1470 / 28.5e6
    assert interval == pytest.approx(412.6e-6, abs=0.1e-6)
    assert len(ex) == pytest.approx(5.0 / interval, rel=0.002)
    idle = [b[0] - a[1] for a, b in zip(ex, ex[1:])]
    assert min(idle) >= DIFS_S - 1e-12
    busy = sum(end - start for start, end, *_ in fs) / 5.0
    assert busy == pytest.approx((276e-6 / interval) + 816e-6 / BEACON_INTERVAL_S, rel=0.01)
    backed_off = [g for g in idle if g <= DIFS_S + CW_MIN * SLOT_S + 1e-12]
    assert len(backed_off) / len(idle) > 0.5


def test_a_rate_the_air_cannot_carry_goes_back_to_back():
    ex = exchanges(frames(50e6, 2.0, seed=5))
    idle = [b[0] - a[1] for a, b in zip(ex, ex[1:])]
    # No beacon between: DIFS plus 0..15 slots, 7.5 on average.
    plain = [g for g in idle if g < 500e-6]
    assert all(DIFS_S - 1e-12 <= g <= DIFS_S + CW_MIN * SLOT_S + 1e-12 for g in plain)
    assert sum(plain) / len(plain) == pytest.approx(DIFS_S + 7.5 * SLOT_S, rel=0.03)


def test_beacons_every_102_4_ms_ahead_of_the_data_and_without_iperf():
    fs = frames(0.0, 2.0, seed=2)
    assert {f[2:] for f in fs} == {(ACCESS_POINT, DSSS)}
    starts = [f[0] for f in fs]
    assert all(b - a == pytest.approx(BEACON_INTERVAL_S) for a, b in zip(starts, starts[1:]))
    busy = frames(28.5e6, 2.0, seed=2)
    beacons = [f for f in busy if f[3] == DSSS]
    for (start, *_), k in zip(beacons, range(len(beacons))):
        # At TBTT, or PIFS after the exchange on the air then.
        late = start - (starts[0] + k * BEACON_INTERVAL_S)
        assert -1e-12 <= late <= 248e-6 + 16e-6 + 28e-6 + PIFS_S + 1e-9
    assert not frames(0.0, 2.0, beacons=False)


def test_frames_never_overlap_and_come_in_order():
    fs = frames(20e6, 1.0, seed=9)
    for (_s1, e1, *_), (s2, _e2, *_) in zip(fs, fs[1:]):
        assert s2 >= e1 - 1e-12


def test_bare_bursts_carry_the_offered_load():
    for pattern in ("poisson", "trains"):
        fs = frames(3e6, 30.0, seed=7, pattern=pattern)
        assert {f[2:] for f in fs} == {(STATION, OFDM)}
        assert len(fs) == pytest.approx(30.0 * 3e6 / (8 * 1500), rel=0.1)


def test_traffic_rejects_what_it_cannot_model():
    with pytest.raises(ValueError, match="pattern 'bursty' is not one of"):
        WifiTraffic(1e6, pattern="bursty")
    with pytest.raises(ValueError, match="train_frames"):
        WifiTraffic(1e6, pattern="trains", train_frames=0.5)
    with pytest.raises(ValueError, match="ERP-OFDM"):
        WifiTraffic(1e6, phy_rate_bps=11e6)
