"""The IEEE 802.15.4-2006 2.4 GHz O-QPSK PHY: its constants and its error model.

Constants are the standard's (6.5, 7.4): 250 kbit/s, 62.5 ksymbol/s (16 us
symbols, 4 bits each, so a byte takes 32 us), a 6-byte synchronisation and
PHY header before each PSDU of at most 127 bytes, channels 11 to 26 at
2405 + 5 (k - 11) MHz.

Bit errors follow the O-QPSK DSSS model of Annex E (E.4.1.7), which gives the
bit error rate from the signal to interference-plus-noise ratio (linear):

    BER = 8/15 * 1/16 * sum_{k=2..16} (-1)^k C(16, k) exp(20 SINR (1/k - 1))

and a frame's PSDU bits survive a stretch of constant SINR with probability
(1 - BER)^n. Interference is treated as noise, as Annex E does. The
synchronisation header is not counted: whether a receiver synchronises is
decided by its sensitivity (the radio locks onto a frame whose power reaches
it), as the datasheet's sensitivity is defined over the PSDU.

Noise: a radio's effective noise floor is derived from its datasheet
sensitivity, the input power at which it receives 20-byte PSDUs with a packet
error rate of 1 % (the AT86RF231's -101 dBm is specified that way). Under the
Annex E model that takes an SNR of about 0.40 dB, so the noise floor is
sensitivity - 0.40 dB: the radio then behaves at its sensitivity as its
datasheet says. (ns-3's lr-wpan uses the same relation: noise -106.99 dBm,
sensitivity -106.58 dBm.)
"""

from __future__ import annotations

import math
from typing import Final

from iotbench.net.ieee802154 import MAX_FRAME_BYTES, PHY_OVERHEAD_BYTES

SYMBOL_S: Final = 16e-6
RATE_BPS: Final = 250_000
BYTE_S: Final = 8 / RATE_BPS  # 32 us
PHY_HEADER_BYTES: Final = PHY_OVERHEAD_BYTES  # preamble 4, SFD 1, PHY header 1
MAX_PSDU_BYTES: Final = MAX_FRAME_BYTES  # aMaxPHYPacketSize
TURNAROUND_S: Final = 12 * SYMBOL_S  # aTurnaroundTime: RX <-> TX
CCA_S: Final = 8 * SYMBOL_S  # CCA detection time
UNIT_BACKOFF_S: Final = 20 * SYMBOL_S  # aUnitBackoffPeriod
SHR_SYMBOLS: Final = 10  # phySHRDuration: preamble and SFD
# macAckWaitDuration = aUnitBackoffPeriod + aTurnaroundTime + phySHRDuration
# + ceil(6 * phySymbolsPerOctet): 20 + 12 + 10 + 12 = 54 symbols (7.4.2).
ACK_WAIT_S: Final = (20 + 12 + SHR_SYMBOLS + 12) * SYMBOL_S
SIFS_S: Final = 12 * SYMBOL_S  # macSIFSPeriod
LIFS_S: Final = 40 * SYMBOL_S  # macLIFSPeriod
MAX_SIFS_FRAME_BYTES: Final = 18  # aMaxSIFSFrameSize
CHANNELS: Final = range(11, 27)

# The sensitivity definition: PER 1 % at a 20-byte PSDU (IEEE 802.15.4-2006 6.5.3.3).
SENSITIVITY_PER: Final = 0.01
SENSITIVITY_PSDU_BYTES: Final = 20


def channel_center_mhz(channel: int) -> float:
    if channel not in CHANNELS:
        raise ValueError(f"802.15.4 channel {channel} is not one of 11..26 (2.4 GHz)")
    return 2405.0 + 5.0 * (channel - 11)


def frame_airtime_s(frame_bytes: int) -> float:
    """Time on the air of a PSDU of `frame_bytes`, synchronisation and PHY header included."""
    return (frame_bytes + PHY_HEADER_BYTES) * BYTE_S


def dbm_to_mw(dbm: float) -> float:
    return 10.0 ** (dbm / 10.0)


def mw_to_dbm(mw: float) -> float:
    return 10.0 * math.log10(mw) if mw > 0 else -math.inf


def ber(sinr: float) -> float:
    """Bit error rate at a linear SINR (Annex E, E.4.1.7); 0.5 at and below SINR 0."""
    if sinr <= 0.0:
        return 0.5
    # The sum over k = 2..16 of (-1)^k C(16, k) e^(20 SINR (1/k - 1)), with C(16, k)
    # kept as it goes (every step exact in floating point): compiled, this is
    # arithmetic on unboxed floats, where tables of floats were boxed reads.
    # k counts as a float (exact, as are its conversions from int it replaces):
    # a tagged int's k was converted for every use, a third of this function.
    total = 0.0
    x = 20.0 * sinr
    binomial = 120.0  # C(16, 2)
    k = 2.0
    even = True
    while k <= 16.0:
        term = binomial * math.exp(x * (1.0 / k - 1.0))
        total += term if even else -term
        binomial = binomial * (16.0 - k) / (k + 1.0)
        k += 1.0
        even = not even
    # Cancellation can leave a tiny negative value at high SINR.
    return min(0.5, max(0.0, 8.0 / 15.0 / 16.0 * total))


# Above this SINR (about 9 dB) the BER is below 1e-20: a frame cannot fail.
_SINR_ERROR_FREE: Final = 8.0
# mypyc has no primitive for log1p: a static, not a lookup by name in `math` per call.
_LOG1P: Final = math.log1p


# Not cached: with the links' variation in time (propagation.py) a SINR rarely
# comes again (a cache of 4,096 answered a third of S4's calls), and a call
# through a cache costs compiled code more than Annex E's 15 exponentials.
def log_success_per_bit(sinr: float) -> float:
    """ln(1 - BER): a stretch of n bits at this SINR survives with exp(n * this)."""
    if sinr >= _SINR_ERROR_FREE:
        return 0.0
    return _LOG1P(-ber(sinr))


def packet_success(sinr: float, bits: int) -> float:
    """Probability that `bits` bits at a constant SINR all arrive intact."""
    return math.exp(bits * log_success_per_bit(sinr))


def snr_for_per_db(per: float, psdu_bytes: int) -> float:
    """The SNR (dB) at which a PSDU of `psdu_bytes` fails with probability `per`."""
    bits = 8 * psdu_bytes
    lo, hi = -10.0, 20.0
    for _ in range(100):  # bisection: PER falls monotonically with SNR
        mid = (lo + hi) / 2
        if 1.0 - packet_success(dbm_to_mw(mid), bits) > per:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


SENSITIVITY_SNR_DB: Final = snr_for_per_db(SENSITIVITY_PER, SENSITIVITY_PSDU_BYTES)


def noise_floor_dbm(sensitivity_dbm: float) -> float:
    """The noise floor that makes a radio meet its sensitivity under the Annex E model."""
    return sensitivity_dbm - SENSITIVITY_SNR_DB


def snr_for_prr_db(prr: float, frame_bytes: int) -> float:
    """The SNR at which frames (PSDUs) of `frame_bytes` arrive with probability `prr`."""
    return snr_for_per_db(1.0 - prr, frame_bytes)
