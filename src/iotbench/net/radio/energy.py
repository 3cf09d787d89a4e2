"""Radio energy: time in each transceiver state, times its current, times the voltage.

    E = V * sum over states (I_state * t_state)

The default currents are the AT86RF231's at 3 V (datasheet 8111C, "Current
Consumption Specifications"): SLEEP 0.02 uA, TRX_OFF 0.4 mA,
RX_ON 12.3 mA, BUSY_TX 14 mA at +3 dBm (11.6 mA at 0 dBm and 7.2 mA at
-17 dBm: the three TX powers the datasheet gives a current for; a scenario
with another TX power sets `network.radio.energy.tx_ma` with it). The
datasheet gives receiving (BUSY_RX) no current of its own beyond RX_ON, so
`rx` defaults to the listening current; the turnaround between receiving
and transmitting is counted in the state the radio leaves.

Two accountings of the same times:

- `joules`: the radio as it physically runs in the studies' nodes, which
  never sleep: listening costs RX_ON's current;
- `air_joules`: S4's "bytes in the air", the energy of the radio's work on
  frames: transmitting at the TX current, receiving a frame (addressed to
  the node or overheard) at the RX current, and the rest of the time at the
  idle (TRX_OFF) current. It follows the traffic a node carries, where the
  first is almost the listening current times the time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

STATES: Final = ("off", "idle", "listen", "rx", "tx")
_OFF: Final = 0
_IDLE: Final = 1
_LISTEN: Final = 2
_RX: Final = 3
_TX: Final = 4
assert len(STATES) == 5


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

    def joules(self, times_s: Sequence[float]) -> float:
        """Energy of these state times, listening at RX_ON's current."""
        charge_mas = sum(i * t for i, t in zip(self.currents_ma(), times_s, strict=True))
        return self.voltage_v * charge_mas / 1000.0

    def air_joules(self, times_s: Sequence[float]) -> float:
        """S4's accounting: listening costs the idle current, frames their own."""
        charge_mas = (
            self.off_ma * times_s[_OFF]
            + self.idle_ma * (times_s[_IDLE] + times_s[_LISTEN])
            + self.rx_ma * times_s[_RX]
            + self.tx_ma * times_s[_TX]
        )
        return self.voltage_v * charge_mas / 1000.0


AT86RF231: Final = EnergyProfile()


class RadioEnergy:
    """Time a radio spent in each state so far; energy from it on demand.

    One float field per state, not a list: compiled, a field is a double in
    the object, where each write to a list of floats made a new float object,
    and the medium changes a receiver's state twice for every frame it locks
    onto (in a network of 100,000 nodes, the list and its floats were three
    more places in memory to fetch; docs/performance.md).
    """

    __slots__ = ("idle_s", "listen_s", "off_s", "profile", "rx_s", "since", "state", "tx_s")

    def __init__(self, now: float, profile: EnergyProfile = AT86RF231, state: int = 2) -> None:
        self.since = now
        self.state = state
        self.listen_s = 0.0
        self.rx_s = 0.0
        self.tx_s = 0.0
        self.idle_s = 0.0
        self.off_s = 0.0
        self.profile = profile

    def change(self, old: int, new: int, now: float) -> None:
        spent = now - self.since
        if old == _LISTEN:
            self.listen_s += spent
        elif old == _RX:
            self.rx_s += spent
        elif old == _TX:
            self.tx_s += spent
        elif old == _IDLE:
            self.idle_s += spent
        else:
            self.off_s += spent
        self.since = now
        self.state = new

    @property
    def time_s(self) -> list[float]:
        """Seconds in each state (STATES' order) up to the last change."""
        return [self.off_s, self.idle_s, self.listen_s, self.rx_s, self.tx_s]

    def times_s(self, now: float) -> list[float]:
        """Seconds in each state up to `now` (the current state counted up to now)."""
        times = self.time_s
        times[self.state] += now - self.since
        return times

    def joules(self, now: float) -> float:
        """Energy so far, the radio listening whenever it is not busy."""
        return self.profile.joules(self.times_s(now))

    def air_joules(self, now: float) -> float:
        """Energy so far in S4's accounting (see the module doc)."""
        return self.profile.air_joules(self.times_s(now))
