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
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from iotbench.apps.readings import reading_producer
from iotbench.metrics.derive import percentile
from iotbench.metrics.observers import Observer
from iotbench.metrics.result import RunMeasures
from iotbench.metrics.timeseries import NETWORK, SeriesTable
from iotbench.metrics.traffic import KindSums
from iotbench.net.packet import ACK, BROADCAST, CONTROL, DATA, DELIVERED, Packet
from iotbench.sim import Simulator

if TYPE_CHECKING:
    from iotbench.net.routing.tree import Tree

CDF_POINTS: Final = 101  # the time-to-content-arrival CDF: every percentile


class NdnTables(NamedTuple):
    """What an NDN run's forwarders held at most (any node) and dropped (all nodes)."""

    pit_peak: int
    cs_entries_peak: int
    cs_bytes_peak: int
    pit_full_drops: int  # Interests dropped because the node's PIT was full


class LinkStress(Observer):
    """How many times a frame carried each item's content across a link, against its
    shortest path.

    A frame counts when it arrived (a unicast frame at its addressee, a
    broadcast at anyone) and `find_id` finds in it the id of an item being
    followed (from `started` until it is settled), so a reading crossing four
    hops once counts 4; a MAC retry that failed does not count, a duplicate
    the link delivered twice counts twice, and so does an application's
    retransmission. An item is settled `settle_s` after it ended (late
    duplicates still count) into a histogram of (traversals, shortest path)
    pairs: `histogram` for the items that arrived, `lost_histogram` for those
    that did not (their traversals fall short of the path, "left of the
    diagonal"). Memory stays bounded however long the run.
    """

    def __init__(
        self,
        hops_of: dict[int, int],
        settle_s: float,
        find_id: Callable[[bytes], int | None],
        media: Collection[object] = (),
    ) -> None:
        self.hops_of = hops_of  # producer index -> fewest hops to the gateway
        # The radio media whose frames count (not a gateway's serial line to its
        # host, which is no link of the tree); empty: every medium.
        self.media = frozenset(media)
        self.settle_s = settle_s
        self.find_id = find_id
        self._counts: dict[int, int] = {}  # item id -> traversals so far
        self._ended: deque[tuple[float, int, bool]] = deque()  # (end, item id, lost)
        self.histogram: Counter[tuple[int, int]] = Counter()
        self.lost_histogram: Counter[tuple[int, int]] = Counter()

    def finished(self, pkt: Packet) -> None:
        if pkt.fate is not DELIVERED and pkt.fate is not BROADCAST:
            return
        if self.media and pkt.medium not in self.media:
            return
        counts = self._counts
        if not counts or pkt.kind == ACK:
            return  # nothing followed, or an acknowledgement (it carries no item)
        rid = self.find_id(pkt.data)
        if rid in counts:  # only items being followed: memory stays bounded
            counts[rid] += 1

    def started(self, rid: int) -> None:
        """An item began: follow it."""
        self._counts[rid] = 0

    def ended(self, rid: int, now: float, lost: bool) -> None:
        """The item arrived, or can no longer: settle it once late duplicates have
        had their time."""
        if rid in self._counts:
            self._ended.append((now, rid, lost))
        self.settle(now - self.settle_s)

    def settle(self, until: float) -> None:
        ended, counts, hops_of = self._ended, self._counts, self.hops_of
        while ended and ended[0][0] <= until:
            _, rid, lost = ended.popleft()
            hops = hops_of.get(reading_producer(rid), -1)
            if hops > 0:
                target = self.lost_histogram if lost else self.histogram
                target[(counts.get(rid, 0), hops)] += 1
            counts.pop(rid, None)

    def mean(self) -> float:
        """Traversals per hop of the shortest path, over the items that arrived."""
        total = sum(self.histogram.values())
        if not total:
            return math.nan
        return sum(n * t / h for (t, h), n in self.histogram.items()) / total


class FrameKeeper(Protocol):
    """The gateway's MAC, as far as arrivals go (net/mac/csma.py)."""

    def loses(self, pkt: Packet) -> bool: ...


class GatewayArrivals(Observer):
    """When an item's content first reaches the gateway's radio: S4's time to content
    arrival ends there, where the study's packet counter (RIOT's pktcnt on the
    gateway's radio node) saw it, whether the application is on that node or on its
    host behind the serial line. `arrived(item id)` is called for every frame the
    gateway receives with an item's content in it (`find_id`), except one its MAC
    `mac` loses before the stack reads it (the AT86RF231's buffer overwritten): pktcnt
    counts what the network stack hands it, which that frame never reaches."""

    def __init__(
        self,
        gateway: str,
        media: Collection[object],
        find_id: Callable[[bytes], int | None],
        arrived: Callable[[int], None],
        mac: FrameKeeper | None = None,
    ) -> None:
        self.gateway = gateway
        self.media = frozenset(media)
        self.find_id = find_id
        self.arrived = arrived
        self.mac = mac

    def received(self, pkt: Packet, node: str) -> None:
        if node != self.gateway or pkt.medium not in self.media or pkt.kind == ACK:
            return  # (an acknowledgement carries no item)
        if self.mac is not None and self.mac.loses(pkt):
            return
        rid = self.find_id(pkt.data)
        if rid is not None:
            self.arrived(rid)


class PeriodTraffic(Observer):
    """Packets and bytes on the air by kind while the publishing period lasts, so
    that S4's overhead leaves out what came before (the routing tree being built),
    on the radio media (not a gateway's line to its host)."""

    def __init__(
        self, sim: Simulator, start_s: float, end_s: float, media: Collection[object] = ()
    ) -> None:
        self.sim = sim
        self.start_s = start_s
        self.end_s = end_s
        self.media = frozenset(media)
        self.kinds = KindSums()

    def transmitted(self, pkt: Packet) -> None:
        if self.media and pkt.medium not in self.media:
            return
        if self.start_s <= self.sim.now <= self.end_s:
            self.kinds.add(pkt)

    def bytes_of(self, kind: str) -> int:
        return self.kinds.of(kind).bytes


def publish_metrics(
    measures: RunMeasures,
    total: int,
    requests: int | None,
    app_retransmissions: int,
    stress: LinkStress,
    energies: tuple[Sequence[float], Sequence[float]] | None,
    tree: Tree | None,
    ndn_tables: NdnTables | None,
    skipped: int = 0,
    period: PeriodTraffic | None = None,
) -> dict[str, float]:
    """S4's names, from what every run measures and the workload's counts.
    `energies`: each node's energy over the publishing period in S4's accounting and
    listening all the time (net/radio/energy.py); `tree`: the routing tree, whose
    root and leaves they are reported for; `period`: the bytes on the air during the
    publishing period (without one, the run's)."""
    items = measures.items
    delivered = items.delivered
    per_item = (lambda n: n / total) if total else (lambda n: math.nan)
    out = {
        "delivery_ratio": per_item(delivered),
        "items_lost": total - delivered,
        "readings_skipped": skipped,
        "tta_mean_s": items.latency_mean_s,
        "tta_p50_s": items.latency_percentile_s(50),
        "tta_p99_s": items.latency_percentile_s(99),
        "requests_per_item": math.nan if requests is None else per_item(requests),
        "requests_per_fresh_reading": (
            math.nan if requests is None or not delivered else requests / delivered
        ),
        "app_retransmissions_per_item": per_item(app_retransmissions),
        "mac_retransmissions_per_item": per_item(measures.mac_retries),
        "control_bytes": measures.bytes_control if period is None else period.bytes_of(CONTROL),
        "data_bytes": measures.bytes_data if period is None else period.bytes_of(DATA),
        "link_stress_mean": stress.mean(),
        "pit_occupancy_max": math.nan if ndn_tables is None else ndn_tables.pit_peak,
        "pit_full_drops": math.nan if ndn_tables is None else ndn_tables.pit_full_drops,
        "cs_entries_max": math.nan if ndn_tables is None else ndn_tables.cs_entries_peak,
        "cs_bytes_max": math.nan if ndn_tables is None else ndn_tables.cs_bytes_peak,
    }
    air, listening = energies if energies is not None else ([], [])
    for prefix, joules in (("energy", air), ("energy_listening", listening)):
        out.update(_energy_metrics(prefix, joules, tree))
    return out


def _energy_metrics(prefix: str, joules: Sequence[float], tree: Tree | None) -> dict[str, float]:
    """The root's, the leaves' median and the total energy of one accounting."""
    if not joules or tree is None:
        return {
            f"{prefix}_root_j": math.nan,
            f"{prefix}_leaf_median_j": math.nan,
            f"{prefix}_total_j": math.nan,
        }
    children = tree.children()
    leaves = [
        j for i, j in enumerate(joules) if i != tree.root and tree.reached(i) and not children[i]
    ]
    return {
        f"{prefix}_root_j": joules[tree.root],
        f"{prefix}_leaf_median_j": statistics.median(leaves) if leaves else math.nan,
        f"{prefix}_total_j": sum(joules),
    }


class AirEnergy(Protocol):
    def air_joules(self, now: float) -> float: ...


class EnergyMetered(Protocol):
    """What PublishSeries reads of a radio (net/radio/medium.py's Radio): its energy
    in S4's accounting. A protocol, not the class, so a test can stand in for it."""

    @property
    def power(self) -> AirEnergy: ...


class PublishSeries:
    """S4's time series, in bins of `bin_s` from the start of publishing.

    At the end of every bin it writes, stamped with that time: the items
    that arrived at the gateway per second (`goodput_per_s`) and the items
    begun per second (`offered_per_s`, the optimum goodput), each node's
    energy since publishing began in S4's accounting (`energy_j`: transmit,
    receive and idle time at the radio's currents, net/radio/energy.py) and,
    on NDN nodes, the most PIT entries (`pit_entries`) and Content Store bytes
    (`cs_bytes`) held during the bin.
    The goodput's points are stamped with their bin's end, the others with the
    time they were taken (the run's end for the last). Only reads the run: its sampling
    events (`events`) are left out of the run's event count.
    """

    def __init__(
        self,
        sim: Simulator,
        start_s: float,
        bin_s: float,
        radios: list[EnergyMetered],
        forwarders: list[tuple[int, Any]],
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
        self._energy_start: list[float] = []
        sim.at(start_s, self._start)

    def _start(self) -> None:
        self.events += 1
        now = self.sim.now
        self._energy_start = [radio.power.air_joules(now) for radio in self.radios]
        for i in range(len(self.radios)):
            self.table.add("energy_j", i, now, 0.0)
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
        radios = self.radios
        energies = [
            radio.power.air_joules(now) - at_start
            for radio, at_start in zip(radios, self._energy_start, strict=True)
        ]
        table.add_rows(["energy_j"] * len(radios), list(range(len(radios))), now, energies)
        names: list[str] = []
        nodes: list[int] = []
        values: list[float] = []
        for i, forwarder in self.forwarders:
            names += ("pit_entries", "cs_bytes")
            nodes += (i, i)
            values.append(forwarder.pit.take_recent_peak())
            values.append(forwarder.cs.take_recent_peak())
        table.add_rows(names, nodes, now, values)
        self._bin_start = now


def distribution_rows(
    table: SeriesTable,
    latencies: Sequence[float],
    stress: Mapping[tuple[int, int], int],
    lost: Mapping[tuple[int, int], int],
    hops: Sequence[int],
) -> None:
    """Add the run's distributions to `table`: the CDF of time to content arrival
    (`tta_cdf`: x seconds, y the share of delivered items that took at most
    x), the link-stress scatter (`link_stress` for the items that arrived,
    `link_stress_lost` for those that did not: x the fewest hops, y the
    traversals, n the items; from LinkStress), each node's hops in the
    routing tree (`tree_hops`, -1: not in the tree)."""
    ordered = sorted(latencies)
    if ordered:
        for k in range(CDF_POINTS):
            q = k / (CDF_POINTS - 1)
            table.add("tta_cdf", NETWORK, percentile(ordered, 100 * q), q)
    for name, histogram in (("link_stress", stress), ("link_stress_lost", lost)):
        for (traversals, hops_), n in sorted(histogram.items()):
            table.add(name, NETWORK, hops_, traversals, n)
    for i, h in enumerate(hops):
        table.add("tree_hops", i, 0.0, h)
