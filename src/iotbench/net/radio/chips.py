"""802.15.4 transceivers as their datasheets and drivers set them.

`network.radio.chip` names one; every radio value a scenario leaves out
comes from it: TX power, sensitivity, CCA threshold, currents, and the
adjacent-channel rejection that decides how much of a transmission on
another 802.15.4 channel a receiver takes (`leak_db`).

AT86RF231 (Atmel AT86RF231 datasheet, 8111C-MCU Wireless-09/09): TX power
-17 to +3 dBm (PHY_TX_PWR), with the supply currents of its BUSY_TX table
(14 mA at +3 dBm, 11.6 mA at 0 dBm, 7.2 mA at -17 dBm); RX_ON 12.3 mA;
TRX_OFF 0.4 mA; SLEEP 20 nA; sensitivity -101 dBm (PER 1 %, 20-byte PSDU);
CCA energy threshold at its reset value, CCA_ED_THRES = 7: RSSI_BASE_VAL
(-91 dBm) + 2 x 7 = -77 dBm; rejection of another channel (Table 12-7) 32
dB at -5 MHz, 35 dB at +5 MHz, 48 dB at 10 MHz, 54 dB at 15 MHz. RIOT's at86rf2xx driver keeps the CCA reset
value and transmits at 0 dBm by default (S4's nodes).

CC2520 (TI CC2520 datasheet, SWRS068, December 2007): TX power from the
TXPOWER register's recommended values, -18 to +5 dBm, with their currents
(0x03 -18 dBm 16.2 mA; 0x2C -7 dBm 19.9 mA; 0x88 -4 dBm 23.1 mA; 0x81 -2
dBm 24.9 mA; 0x32 0 dBm 25.8 mA; 0x13 +1 dBm 27.9 mA; 0xAB +2 dBm 28.7 mA;
0xF2 +3 dBm 31.3 mA; 0xF7 +5 dBm 33.6 mA); RX 18.5 mA; idle (crystal
oscillator on) 1.6 mA; LPM2 30 nA; sensitivity -98 dBm; adjacent-channel
rejection 49 dB, alternate 54 dB. Contiki's cc2520 driver (contiki-os/
contiki, dev/cc2520/cc2520.c, as S6's 2014 snapshot has it) writes TXPOWER
0x13 (+1 dBm) and CCACTRL0 0xF8: a CCA threshold of -8 + the RSSI offset
(-76 dB) = -84 dBm, in CCA mode 3 (clear only below the threshold and
while not receiving a frame, which is how every radio here senses).

The 802.15.4 standard's own floor (IEEE 802.15.4-2006 6.5.3.4): 0 dB
adjacent, 30 dB alternate rejection. Further away than the datasheet's
last offset, its last rejection is used: what the datasheet bounds.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from iotbench.net.radio import phy


@dataclass(frozen=True)
class Chip:
    name: str
    tx_power_dbm: float  # the value a scenario gets when it names none
    sensitivity_dbm: float
    cca_threshold_dbm: float
    tx_ma: tuple[tuple[float, float], ...]  # (power dBm, current mA), increasing power
    rx_ma: float
    idle_ma: float
    off_ma: float
    # (how far the other channel is in MHz, its rejection in dB when it lies
    # below, and when above), by distance
    rejection: tuple[tuple[int, float, float], ...]

    def tx_current_ma(self, power_dbm: float) -> float:
        """The transmit current at `power_dbm`: linear between the datasheet's points,
        and its nearest point's beyond them (a power the chip cannot set; a scenario
        that models another radio sets `network.radio.energy.tx_ma`)."""
        points = self.tx_ma
        if power_dbm <= points[0][0]:
            return points[0][1]
        if power_dbm >= points[-1][0]:
            return points[-1][1]
        k = bisect.bisect_left([p for p, _ in points], power_dbm)
        (p0, i0), (p1, i1) = points[k - 1], points[k]
        return i0 + (i1 - i0) * (power_dbm - p0) / (p1 - p0)

    def rejection_db(self, rx_channel: int, tx_channel: int) -> float:
        """The datasheet's rejection of a signal on `tx_channel` by a receiver on
        `rx_channel` (802.15.4 channels are 5 MHz apart)."""
        offset = 5 * (tx_channel - rx_channel)
        if offset == 0:
            return 0.0
        row = self.rejection[-1]
        for candidate in self.rejection:
            if candidate[0] >= abs(offset):
                row = candidate
                break
        return row[1] if offset < 0 else row[2]


CHIPS = {
    "at86rf231": Chip(
        "at86rf231",
        tx_power_dbm=3.0,
        sensitivity_dbm=-101.0,
        cca_threshold_dbm=-77.0,
        tx_ma=((-17.0, 7.2), (0.0, 11.6), (3.0, 14.0)),
        rx_ma=12.3,
        idle_ma=0.4,
        off_ma=0.00002,
        rejection=((5, 32.0, 35.0), (10, 48.0, 48.0), (15, 54.0, 54.0)),
    ),
    "cc2520": Chip(
        "cc2520",
        tx_power_dbm=1.0,
        sensitivity_dbm=-98.0,
        cca_threshold_dbm=-84.0,
        tx_ma=(
            (-18.0, 16.2),
            (-7.0, 19.9),
            (-4.0, 23.1),
            (-2.0, 24.9),
            (0.0, 25.8),
            (1.0, 27.9),
            (2.0, 28.7),
            (3.0, 31.3),
            (5.0, 33.6),
        ),
        rx_ma=18.5,
        idle_ma=1.6,
        off_ma=0.00003,
        rejection=((5, 49.0, 49.0), (10, 54.0, 54.0)),
    ),
}


def leak_db(rejection_db: float) -> float:
    """How much weaker than it arrives a signal on another channel acts, as noise
    inside the receiver's channel, given the datasheet's rejection of it.

    A datasheet's rejection is measured with the wanted signal 3 dB above the
    sensitivity and the other channel's signal `rejection_db` above that, at
    the point where the PER reaches 1 % (IEEE 802.15.4-2006 6.5.3.4). Here the
    sensitivity is where the SINR is SENSITIVITY_SNR_DB (phy.py); at 3 dB above
    it, the PER reaches 1 % when the leaked power equals the noise. So the
    leaked power is the other signal's less rejection + 3 dB + SENSITIVITY_SNR_DB.
    """
    return rejection_db + 3.0 + phy.SENSITIVITY_SNR_DB
