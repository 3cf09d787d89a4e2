"""Per-node time series of a radio network: energy and MAC counters over time.

`NodeSeries` samples every node of a radio network every `interval_s` of
virtual time (and once more when the run ends) and writes one CSV row per
node and sample as it goes, so the series costs no memory that grows with
the run. Columns:

    time_s, node, energy_j, tx_s, rx_s, listen_s, frames, retries, cca_busy,
    channel_access_failures, no_ack, queue_drops, phy_received, phy_corrupted,
    phy_collisions

Energy and the times in each radio state (net/radio/energy.py), the MAC's
counters (net/mac/csma.py) and the receiver's (net/radio/medium.py) are
running totals since t = 0: the difference of two rows is what happened in
between.

Beside it, `<name>.links.csv` holds one row per link (a node and a neighbour
it sent unicast frames to) when the run ends: `node, neighbour, frames,
retries, acked, no_ack, channel_access_failures`; and `<name>.frames.csv`
the frames per link and message type (metrics/frames.py).

The files appear under their names only when the run finished (`close`); a
failed run leaves none (`abort`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from iotbench.metrics.frames import FrameTally
from iotbench.metrics.outfile import OutFile
from iotbench.sim import Simulator

if TYPE_CHECKING:
    from iotbench.net.mac.csma import CsmaMac
    from iotbench.net.radio.medium import Radio

COLUMNS = (
    "time_s",
    "node",
    "energy_j",
    "tx_s",
    "rx_s",
    "listen_s",
    "frames",
    "retries",
    "cca_busy",
    "channel_access_failures",
    "no_ack",
    "queue_drops",
    "phy_received",
    "phy_corrupted",
    "phy_collisions",
)
LINK_COLUMNS = (
    "node",
    "neighbour",
    "frames",
    "retries",
    "acked",
    "no_ack",
    "channel_access_failures",
)
_LISTEN, _RX, _TX = 2, 3, 4  # radio states (net/radio/medium.py)
#: The files written beside a series: `companion_path(path, part)` for each part.
COMPANIONS = ("links", "frames")


class NodeSeries:
    def __init__(
        self,
        sim: Simulator,
        path: str,
        radios: Sequence[Radio],
        macs: Sequence[CsmaMac],
        interval_s: float,
        frames: FrameTally | None = None,
    ) -> None:
        self.sim = sim
        self.radios = radios
        self.macs = macs
        self.interval_s = interval_s
        self.frames = frames
        self._file = OutFile(path, "w")
        self._file.write(",".join(COLUMNS) + "\n")
        self._path = path
        self._last = -1.0
        self.events = 0  # kernel events of its own, which the run's metrics leave out
        sim.at(sim.now, self._sample)

    def _sample(self) -> None:
        self.events += 1
        self._write(self.sim.now)
        self.sim.schedule(self.interval_s, self._sample)

    def _write(self, now: float) -> None:
        if now == self._last:
            return
        self._last = now
        rows = []
        for radio, m in zip(self.radios, self.macs, strict=True):
            times = radio.power.times_s(now)
            c = m.counters
            r = radio.counters
            rows.append(
                f"{now:.6f},{radio.name},{radio.power.joules(now):.9f},{times[_TX]:.6f},"
                f"{times[_RX]:.6f},{times[_LISTEN]:.6f},{c.frames},{c.retries},{c.cca_busy},"
                f"{c.channel_access_failures},{c.no_ack},{c.queue_drops},"
                f"{r.received},{r.corrupted},{r.collisions}\n"
            )
        self._file.write("".join(rows))

    def _write_links(self) -> OutFile:
        names = {m.address: radio.name for radio, m in zip(self.radios, self.macs, strict=True)}
        out = OutFile(companion_path(self._path, "links"), "w")
        out.write(",".join(LINK_COLUMNS) + "\n")
        for radio, m in zip(self.radios, self.macs, strict=True):
            for address, k in sorted(m.links.items(), key=lambda item: names.get(item[0], "")):
                out.write(
                    f"{radio.name},{names.get(address, address.hex())},{k.frames},{k.retries},"
                    f"{k.acked},{k.no_ack},{k.channel_access_failures}\n"
                )
        return out

    def close(self) -> None:
        self._write(self.sim.now)
        # The companions first: a run counts as done when its node series exists.
        self._write_links().commit()
        if self.frames is not None:
            out = OutFile(companion_path(self._path, "frames"), "w")
            self.frames.write(out)
            out.commit()
        self._file.commit()

    def abort(self) -> None:
        self._file.discard()


def companion_path(series_path: str, part: str) -> str:
    """Where a table beside the series at `series_path` goes (`part`: one of
    COMPANIONS): "x.csv" -> "x.links.csv", and a runner's temporary "x.csv.tmp" ->
    "x.links.csv.tmp"."""
    for ext in (".csv.tmp", ".csv"):
        if series_path.endswith(ext):
            return series_path[: -len(ext)] + f".{part}" + ext
    return series_path + f".{part}.csv"
