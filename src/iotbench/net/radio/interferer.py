"""External interferers: transmitters 802.15.4 radios hear but cannot decode.

An interferer never defers to 802.15.4. While one of its frames is on the
air it adds power at every 802.15.4 radio within reach; receivers treat that
power as noise (it lowers the SINR of the frames they receive), their CCA
senses it, and nothing decodes it.

Two kinds share one interface, `Bursts`: a radio holds (bursts, power in mW
here while one is on the air) pairs and asks `overlaps(a, b)` when it needs
the interference over an interval (a stretch of a reception at constant
SINR, a CCA window). Bursts cost no kernel events.

- `WifiInterferer`: a Wi-Fi station and its access point (wifi.py gives
  their frames and spectrum). Each emitter and modulation is a `Bursts` of
  its own, since each reaches the radios with its own power: the station's
  data frames, the access point's ACKs (OFDM) and beacons (DSSS).
- `LeakingTransmitter`: an 802.15.4 radio on another channel, heard through
  the receiver's adjacent-channel rejection (world/networks/radio.py); its
  bursts are its frames, recorded as they start.
"""

from __future__ import annotations

import bisect
import random
from typing import TYPE_CHECKING

from iotbench.net.radio.wifi import WifiTraffic

if TYPE_CHECKING:
    from iotbench.net.radio.medium import Radio

#: How far back a radio may ask about bursts: longer than any 802.15.4 frame
#: (133 bytes, 4.3 ms) and any CCA window, so a reception's oldest stretch is kept.
HISTORY_S = 0.05


class Bursts:
    """The times one transmitter was on the air, kept for HISTORY_S behind the
    latest time asked; `fill(t)` makes sure every burst that began by `t` is in.

    Bursts never overlap each other (one transmitter) and are appended in order.
    """

    def __init__(self, name: str, fill) -> None:
        self.name = name
        self._fill = fill
        self.starts: list[float] = []
        self.ends: list[float] = []
        self._head = 0
        self.begun = 0  # bursts appended so far
        self._forgotten_busy_s = 0.0

    def append(self, start: float, end: float) -> None:
        self.starts.append(start)
        self.ends.append(end)
        self.begun += 1

    def _forget(self, t: float) -> None:
        """Forget what no one can ask about any more; compact now and then."""
        ends = self.ends
        head = bisect.bisect_left(ends, t - HISTORY_S, self._head)
        for k in range(self._head, head):
            self._forgotten_busy_s += ends[k] - self.starts[k]
        self._head = head
        if head > 4096:
            del self.starts[:head], ends[:head]
            self._head = 0

    def overlaps(self, a: float, b: float) -> list[tuple[float, float]]:
        """The parts of [a, b] during which a burst was on the air, in order."""
        self._fill(b)
        ends, starts = self.ends, self.starts
        if self._head == len(ends):
            return []
        self._forget(b)
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
        """Bursts begun by `now`, and the time they were on the air by then."""
        self._fill(now)
        self._forget(now)
        starts, ends = self.starts, self.ends
        later = len(starts) - bisect.bisect_right(starts, now, self._head)
        busy = self._forgotten_busy_s + sum(
            min(e, now) - s
            for s, e in zip(starts[self._head :], ends[self._head :], strict=True)
            if s <= now
        )
        return self.begun - later, busy


class WifiInterferer:
    """The frames of one Wi-Fi station and access point (`traffic`), heard by
    `targets`: for each (emitter, modulation) of the traffic, the radios within
    reach and the power (mW) each takes in its 802.15.4 channel.

    Frames are drawn in order from the interferer's own random stream up to the
    latest time any radio asked about, so a seed gives the same frames whoever
    asks, and when; memory stays flat however long the run.

    `steps`: the rates of a stepped sweep (S6 raised the Wi-Fi rate step by step
    over one network), the first the traffic's own; `enter_step(now, k)` offers
    the k-th from `now` on.
    """

    def __init__(
        self,
        name: str,
        traffic: WifiTraffic,
        targets: dict[tuple[str, str], list[tuple[Radio, float]]],
        rng: random.Random,
        steps: tuple[float, ...] = (),
    ) -> None:
        self.name = name
        self.traffic = traffic
        self.steps = steps or (traffic.rate_bps,)
        if self.steps[0] != traffic.rate_bps:
            raise ValueError(f"{name}: the first step's rate is the traffic's own")
        self.targets = targets
        self.bursts = {
            key: Bursts(f"{name} {key[0]} {key[1]}", self._draw_until) for key in traffic.emitters
        }
        heard = any(targets.get(key) for key in self.bursts)
        self._source = traffic.source(rng) if heard else None
        self._next = self._source.next() if self._source is not None else None
        self.rate_bps = traffic.rate_bps

    def start(self) -> None:
        """Make the targets hear the frames."""
        for key, bursts in self.bursts.items():
            for radio, mw in self.targets.get(key, ()):
                radio.interferers.append((bursts, mw))

    def _draw_until(self, t: float) -> None:
        frame, source, bursts = self._next, self._source, self.bursts
        if source is None:  # nothing within reach hears it: no frames drawn
            return
        while frame is not None and frame[0] <= t:
            start, end, emitter, modulation = frame
            bursts[emitter, modulation].append(start, end)
            frame = source.next()
        self._next = frame

    def enter_step(self, now: float, k: int) -> None:
        self.set_rate(now, self.steps[k])

    def set_rate(self, now: float, rate_bps: float) -> None:
        """From `now` on, offer `rate_bps` (a stepped sweep's next step). Every frame
        that began by `now` stays as it was; the one drawn ahead is drawn again at
        the new rate, unless it is the ACK of a frame already on the air."""
        self.rate_bps = rate_bps
        source = self._source
        if source is None:
            return  # no radio hears it
        self._draw_until(now)
        kept = self._next is not None and not source.rewind()
        source.set_rate(now, rate_bps)
        if not kept:
            self._next = source.next()

    def stats(self, now: float) -> dict[tuple[str, str], tuple[int, float]]:
        """Per emitter and modulation: frames begun by `now`, and their time on the air."""
        return {key: bursts.stats(now) for key, bursts in self.bursts.items()}


class LeakingTransmitter(Bursts):
    """An 802.15.4 radio's frames as radios on another channel hear them.

    Its medium calls `record` as each frame starts, so every frame that began
    by the simulator's now is known whenever a radio asks."""

    def __init__(self, name: str) -> None:
        super().__init__(name, _nothing_to_draw)

    def record(self, start: float, end: float) -> None:
        self.append(start, end)


def _nothing_to_draw(_t: float) -> None:
    return None
