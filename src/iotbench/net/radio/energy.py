"""Radio energy: time in each transceiver state, times its current, times the voltage.

    E = V * sum over states (I_state * t_state)

The default currents are the AT86RF231's at 3 V (datasheet 8111C, "Current
consumption"): SLEEP 0.02 uA, TRX_OFF 0.4 mA, RX_ON 12.3 mA, BUSY_TX 14 mA
at its maximum +3 dBm. The datasheet gives receiving (BUSY_RX) no current
of its own beyond RX_ON, so `rx` defaults to the listening current; the
turnaround between receiving and transmitting is counted in the state the
radio leaves. Another radio, or another TX power, is another profile.
"""

from __future__ import annotations

from dataclasses import dataclass

STATES = ("off", "idle", "listen", "rx", "tx")


@dataclass(frozen=True)
class EnergyProfile:
    voltage_v: float = 3.0
    off_ma: float = 0.00002  # SLEEP
    idle_ma: float = 0.4  # TRX_OFF
    listen_ma: float = 12.3  # RX_ON
    rx_ma: float = 12.3  # BUSY_RX: as RX_ON
    tx_ma: float = 14.0  # BUSY_TX at +3 dBm

    def currents_ma(self) -> tuple[float, ...]:
        return (self.off_ma, self.idle_ma, self.listen_ma, self.rx_ma, self.tx_ma)


AT86RF231 = EnergyProfile()


class RadioEnergy:
    """Time a radio spent in each state so far; energy from it on demand."""

    __slots__ = ("profile", "since", "state", "time_s")

    def __init__(self, now: float, profile: EnergyProfile = AT86RF231, state: int = 2) -> None:
        self.profile = profile
        self.time_s = [0.0] * len(STATES)
        self.state = state
        self.since = now

    def change(self, old: int, new: int, now: float) -> None:
        self.time_s[old] += now - self.since
        self.since = now
        self.state = new

    def times_s(self, now: float) -> list[float]:
        """Seconds in each state up to `now` (the current state counted up to now)."""
        times = list(self.time_s)
        times[self.state] += now - self.since
        return times

    def joules(self, now: float) -> float:
        currents = self.profile.currents_ma()
        charge_mas = sum(i * t for i, t in zip(currents, self.times_s(now), strict=True))
        return self.profile.voltage_v * charge_mas / 1000.0
