"""S4's metrics of a publish run: delivery, time to content arrival, effort per item,
link stress, energy by place in the tree, and the NDN tables' occupancy; and its
time series (goodput against the readings offered, energy per node, the NDN
tables over time) and distributions (time to content arrival, link stress).

docs/metrics.md defines every name. What the run's other meters already
counted (items, MAC retries, control and data bytes, energy) is read from
them here, so each number is counted once.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence

from iotbench.metrics.derive import percentile
from iotbench.metrics.observers import Observer
from iotbench.metrics.timeseries import NETWORK, SeriesTable
from iotbench.net.packet import BROADCAST, DELIVERED, Packet
from iotbench.sim import Simulator

CDF_POINTS = 101  # the time-to-content-arrival CDF: every percentile


class LinkStress(Observer):
    """How many times a frame carried each reading across a link, against its shortest path.

    A frame counts when it arrived (a unicast frame at its addressee, a
    broadcast at anyone) and `find_id` finds in it the id of a reading being
    followed (from `started` until it is settled or forgotten), so a reading
    crossing four hops once counts 4; a MAC retry that failed does not count,
    a duplicate the link delivered twice counts twice, and so does an
    application's retransmission. A reading is settled `settle_s` after its
    item ended (late duplicates still count), into a histogram of
    (traversals, shortest path) pairs: memory stays bounded however long the
    run.
    """

    def __init__(
        self,
        hops_of: dict[int, int],
        settle_s: float,
        find_id: Callable[[bytes], int | None],
    ) -> None:
        self.hops_of = hops_of  # producer index -> fewest hops to the gateway
        self.settle_s = settle_s
        self.find_id = find_id
        self._counts: dict[int, int] = {}  # reading id -> traversals so far
        self._ended: deque[tuple[float, int, int]] = deque()  # (end, rid, producer)
        self.histogram: Counter[tuple[int, int]] = Counter()

    def finished(self, pkt: Packet) -> None:
        if pkt.fate is not DELIVERED and pkt.fate is not BROADCAST:
            return
        rid = self.find_id(pkt.data)
        counts = self._counts
        if rid in counts:  # only readings being followed: memory stays bounded
            counts[rid] += 1

    def started(self, rid: int) -> None:
        """A reading was taken: follow it."""
        self._counts[rid] = 0

    def delivered(self, rid: int, producer: int, now: float) -> None:
        """The reading arrived: settle it once late duplicates have had their time."""
        self._ended.append((now, rid, producer))
        self.settle(now - self.settle_s)

    def forget(self, rid: int) -> None:
        """A reading that never arrived has no link stress."""
        self._counts.pop(rid, None)

    def settle(self, until: float) -> None:
        ended, counts, hops_of = self._ended, self._counts, self.hops_of
        while ended and ended[0][0] <= until:
            _, rid, producer = ended.popleft()
            hops = hops_of.get(producer, -1)
            if hops > 0:
                self.histogram[(counts.get(rid, 0), hops)] += 1
            counts.pop(rid, None)

    def mean(self) -> float:
        total = sum(self.histogram.values())
        if not total:
            return math.nan
        return sum(n * t / h for (t, h), n in self.histogram.items()) / total


def publish_metrics(
    base: dict[str, float | int],
    total: int,
    requests: int | None,
    app_retransmissions: int,
    stress: LinkStress,
    energy_root_j: float,
    energy_leaves_j: list[float],
    energy_total_j: float,
    ndn_tables: tuple[int, int] | None,
) -> dict[str, float]:
    """S4's names, from the run's metrics so far (`base`) and the workload's counts;
    energies are the radios' until the end of the publishing period."""
    delivered = base["items_delivered"]
    per_item = (lambda n: n / total) if total else (lambda n: math.nan)
    out = {
        "delivery_ratio": per_item(delivered),
        "items_lost": total - delivered,
        "tta_mean_s": base["latency_mean_s"],
        "tta_p50_s": base["latency_p50_s"],
        "tta_p99_s": base["latency_p99_s"],
        "requests_per_item": math.nan if requests is None else per_item(requests),
        "app_retransmissions_per_item": per_item(app_retransmissions),
        "mac_retransmissions_per_item": per_item(base.get("mac_retries", 0)),
        "control_bytes": base.get("bytes_control", 0),
        "data_bytes": base.get("bytes_data", base.get("bytes_total", 0)),
        "link_stress_mean": stress.mean(),
        "energy_root_j": energy_root_j,
        "energy_leaf_median_j": (
            statistics.median(energy_leaves_j) if energy_leaves_j else math.nan
        ),
        "energy_total_j": energy_total_j,
        "pit_occupancy_max": math.nan if ndn_tables is None else ndn_tables[0],
        "cs_bytes_max": math.nan if ndn_tables is None else ndn_tables[1],
    }
    return out


class PublishSeries:
    """S4's time series, in bins of `bin_s` from the start of publishing.

    At the end of every bin it writes, stamped with that time: the readings
    that arrived at the gateway per second (`goodput_per_s`) and the readings
    taken per second (`offered_per_s`, the optimum goodput), each node's
    energy since t = 0 (`energy_j`) and, on NDN nodes, the most PIT entries
    (`pit_entries`) and Content Store bytes (`cs_bytes`) held during the bin.
    The goodput's points are stamped with their bin's end, the others with the
    time they were taken (the run's end for the last). Only reads the run: its sampling
    events (`events`) are left out of the run's event count.
    """

    def __init__(
        self,
        sim: Simulator,
        start_s: float,
        bin_s: float,
        radios: list,
        forwarders: list[tuple[int, object]],
    ) -> None:
        self.sim = sim
        self.bin_s = bin_s
        self.radios = radios
        self.forwarders = forwarders  # (node index, its NDN forwarder)
        self.table = SeriesTable()
        self.taken = 0  # readings taken in the current bin
        self.delivered = 0  # readings arrived in the current bin
        self.events = 0
        self._bin_start = start_s
        sim.at(start_s, self._start)

    def _start(self) -> None:
        self.events += 1
        now = self.sim.now
        for i, radio in enumerate(self.radios):
            self.table.add("energy_j", i, now, radio.power.joules(now))
        self.sim.schedule(self.bin_s, self._sample)

    def _sample(self) -> None:
        self.events += 1
        self.close_bin(self.sim.now)
        self.sim.schedule(self.bin_s, self._sample)

    def close_bin(self, now: float) -> None:
        """End the current bin at `now`. The run's end ends the last one early:
        its rates still count per `bin_s` (nothing arrives after the end), so
        a short last bin shows no spike."""
        if now <= self._bin_start:
            return
        table, end = self.table, self._bin_start + self.bin_s
        table.add("goodput_per_s", NETWORK, end, self.delivered / self.bin_s)
        table.add("offered_per_s", NETWORK, end, self.taken / self.bin_s)
        self.delivered = self.taken = 0
        for i, radio in enumerate(self.radios):
            table.add("energy_j", i, now, radio.power.joules(now))
        for i, forwarder in self.forwarders:
            table.add("pit_entries", i, now, forwarder.pit.take_recent_peak())
            table.add("cs_bytes", i, now, forwarder.cs.take_recent_peak())
        self._bin_start = now


def distribution_rows(
    table: SeriesTable,
    latencies: Sequence[float],
    stress: Mapping[tuple[int, int], int],
    hops: Sequence[int],
) -> None:
    """Add the run's distributions to `table`: the CDF of time to content arrival
    (`tta_cdf`: x seconds, y the share of delivered readings that took at most
    x), the link-stress scatter (`link_stress`: x the fewest hops, y the
    traversals, n the readings; from LinkStress.histogram), each node's hops in
    the routing tree (`tree_hops`, -1: not in the tree)."""
    ordered = sorted(latencies)
    if ordered:
        for k in range(CDF_POINTS):
            q = k / (CDF_POINTS - 1)
            table.add("tta_cdf", NETWORK, percentile(ordered, 100 * q), q)
    for (traversals, hops_), n in sorted(stress.items()):
        table.add("link_stress", NETWORK, hops_, traversals, n)
    for i, h in enumerate(hops):
        table.add("tree_hops", i, 0.0, h)
