"""The publish workload: every producer's readings must reach the gateway (S4).

`workload.kind = "publish"`. Who starts a transaction decides what an item is:

- A push (CoAP PUT and Observe, MQTT-SN, NDN Interest Notification, HoPP):
  each producer takes a reading every `interval_s`, each wait drawn
  uniformly from [m (1 - jitter), m (1 + jitter)] (S4's code: jitter 0.5;
  world/workloads/publish/schedules.py), and the reading is the item; it is delivered when it
  reaches the gateway's application. The time to content arrival runs from
  the reading.
- A pull (CoAP GET, NDN), as S4's code drives it: the gateway issues a
  request to each producer on that schedule (CoAP: a timer per producer;
  NDN: one loop over the producers) and the producer answers at once from
  what it has: CoAP returns the current value, NDN's producer creates the
  named Data when asked. The request is the item; the time to content
  arrival runs from the request.
- A pull with `poll_interval_s` (S4's unscheduled runs): the producers take
  readings on their own schedule (the items), and the gateway asks every
  poll_interval_s (same jitter) for what they have: CoAP returns the latest
  reading (the same one again when nothing newer came; before the first a
  5.03), NDN asks for readings by name, and an Interest for one not taken
  yet waits in the PITs on the way until it exists or expires. A reading's
  time to content arrival runs from the first request for it, as S4 defines
  a pull's transaction in its unscheduled runs: for CoAP the first GET after
  the producer's previous fresh reading arrived (the duplicates in between
  included), for NDN the first Interest for its name.

A reading is S4's 32-byte JSON object, {"id":"0x..........","val":NNNN},
whose id names the producer and the item (apps/readings.py).

How a reading travels is the protocol's, a `Sender` per exchange
(coap.py, mqttsn.py, ndn.py and hopp.py beside this module; the table in
senders.py). A producer whose sender is not ready takes no reading (an
Observe producer nobody observes yet, an MQTT-SN client whose topic is not
registered): S4's code counts only what it sends.

An item is delivered when its content first reaches the gateway's radio (its
frame received by the gateway node: where S4's packet counter saw it), or its
application when that comes first; a polled reading when its answer reaches
the gateway's application.

A reading that nothing acknowledges end to end (CoAP NON, MQTT-SN QoS 0) is
handed over when it is sent, and one that has not arrived `drain_s` later is
given up (as of its hand-over), so the readings the run keeps track of are
those of the last `drain_s` only, however long it runs. Publishing lasts
`items` events per producer, or `duration_s`; the run ends `drain_s` after
the last, or sooner when every item has ended; what has not arrived by then
is lost.
"""

from __future__ import annotations

import math
from collections import deque

from iotbench.apps.readings import (
    IDLE_COUNTER,
    READING_BYTES,
    find_reading_id,
    read_id,
    reading,
    reading_counter,
    reading_id,
    reading_producer,
)
from iotbench.metrics.items import DELIVERED, GIVEN_UP, Item, ItemLog
from iotbench.metrics.observers import Observers
from iotbench.metrics.publish import (
    GatewayArrivals,
    LinkStress,
    NdnTables,
    PeriodTraffic,
    PublishSeries,
    distribution_rows,
    publish_metrics,
)
from iotbench.metrics.result import RunMeasures
from iotbench.metrics.timeseries import SeriesTable
from iotbench.metrics.traffic import TrafficMeter
from iotbench.proto.ndn.forwarder import Forwarder
from iotbench.scenarios.settings import required
from iotbench.scenarios.settings_types import RunSettings
from iotbench.sim import Simulator
from iotbench.sim.twister import twister_of
from iotbench.world.networks import Network, RadioNetwork
from iotbench.world.workloads.base import Workload
from iotbench.world.workloads.publish.schedules import SCHEDULES, PerSource, Schedule, Waits
from iotbench.world.workloads.publish.sender import PullSender
from iotbench.world.workloads.publish.senders import SENDERS

#: Points of the time series over the publishing period (workload.series_points).
SERIES_POINTS = 60

UNBOUNDED = 1 << 30  # events per source when publishing lasts `duration_s`


class PublishWorkload(Workload):
    """The schedules and the items; a Sender carries the readings."""

    def __init__(
        self,
        sim: Simulator,
        net: Network,
        config: RunSettings,
        items: ItemLog,
        observers: Observers | None = None,
        traffic: TrafficMeter | None = None,
    ) -> None:
        """With `observers`, the run also measures S4's link stress (metrics())."""
        workload = config.workload
        self.sim = sim
        self.net = net
        self.items = items
        self.planned_items = workload.items
        self.interval_s = required(workload.interval_s, "workload.interval_s")
        self.jitter = workload.jitter
        self.poll_s = workload.poll_interval_s
        self.start_s = workload.start_s
        self.drain_s = workload.drain_s
        duration = workload.duration_s
        self.per_producer = UNBOUNDED if duration is not None else workload.items
        self.until = self.start_s + duration if duration is not None else math.inf
        # The publishing period, over which energy and the time series are taken.
        self.period_end = (
            self.until
            if duration is not None
            else self.start_s + self.per_producer * self.interval_s
        )
        self._open: dict[int, Item] = {}  # reading id -> its item, while it may arrive
        self._handed: deque[tuple[float, int]] = deque()  # (hand-over time, reading id)
        # randrange's numbers, compiled (random.Random.randrange is Python code).
        self._values = twister_of(sim.rng("sensor"))
        self.skipped = 0  # readings a producer could not take (its sender not ready)
        name = config.protocol.name
        exchange = {"coap": "coap_exchange", "ndn": "ndn_exchange"}.get(name)
        self.sender = SENDERS[getattr(workload, exchange) if exchange else name](
            self, sim, net, config
        )
        self._pull: PullSender | None = None
        if self.sender.drives == "pull":
            if not isinstance(self.sender, PullSender):
                kind = type(self.sender).__name__
                raise TypeError(f"{kind} drives a pull but has no request() and poll()")
            self._pull = self.sender
        self.polling = self.sender.drives == "pull" and self.poll_s is not None
        producers = net.nodes("producer")
        self._items_running = True  # the schedule that opens items has events to come
        self._stopping = False  # the run's end is set for the end of the period
        self._schedules = self._build_schedules(len(producers))
        self.stress: LinkStress | None = None
        radio = net if isinstance(net, RadioNetwork) else None
        if observers is not None and radio is not None:
            hops = radio.fewest_hops()
            index = {name: i for i, name in enumerate(net.hosts)}
            hops_of = {p: hops[index[host.name]] for p, host in enumerate(producers)}
            # What identifies an item's content in a frame (a sender may know better).
            content_id = getattr(self.sender, "content_id", find_reading_id)
            self.stress = LinkStress(hops_of, self.drain_s, content_id, (radio.medium,))
            observers.add(self.stress)
        # S4's time to content arrival ends when the content reaches the gateway's
        # radio (a pull polled for what exists ends at its answer's application, which
        # knows which request brought it).
        if observers is not None and radio is not None and not self.polling:
            gateway = net.node("gateway").name
            observers.add(
                GatewayArrivals(
                    gateway,
                    (radio.medium,),
                    getattr(self.sender, "content_id", find_reading_id),
                    self._at_gateway,
                    radio.macs[gateway],
                )
            )
        self.period: PeriodTraffic | None = None
        if observers is not None:
            media = (radio.medium,) if radio is not None else ()
            self.period = PeriodTraffic(sim, self.start_s, self.period_end, media)
            observers.add(self.period)
        # Energy is compared over the publishing period in every variant, from its
        # start (the routing tree is built before) to its end (not the run's end,
        # which depends on how soon the last readings arrive).
        self._radios = list(radio.radios.values()) if radio is not None else []
        self._energy_start: list[tuple[float, float]] | None = None
        self._energy_end: list[tuple[float, float]] | None = None
        self.series: PublishSeries | None = None
        if observers is not None and radio is not None:
            sim.at(self.start_s, self._energy_snapshot, "start")
            sim.at(self.period_end, self._energy_snapshot, "end")
            points = workload.series_points or SERIES_POINTS
            index = {name: i for i, name in enumerate(net.hosts)}
            forwarders = [(index[n], f) for n, f in self.sender.forwarders().items()]
            self.series = PublishSeries(
                sim,
                self.start_s,
                (self.period_end - self.start_s) / points,
                list(radio.radios.values()),
                sorted(forwarders, key=lambda pair: pair[0]),
            )

    def _build_schedules(self, producers: int) -> list[Schedule]:
        """The producers' readings (a push, a polled pull) or the gateway's requests (a
        pull), which open the items; a polled pull's polls, which go on until the run
        ends."""
        sim, sender = self.sim, self.sender
        out: list[Schedule] = []
        if sender.drives == "push" or self.polling:
            waits = Waits(sim.rng("workload/intervals"), self.interval_s, self.jitter)
            out.append(
                PerSource(
                    sim,
                    waits,
                    producers,
                    self.per_producer,
                    self.until,
                    self._publish,
                    on_done=self._items_done,
                )
            )
        if sender.drives == "pull":
            median = self.poll_s if self.polling and self.poll_s is not None else self.interval_s
            waits = Waits(sim.rng("workload/requests"), median, self.jitter)
            build = SCHEDULES[sender.schedule]
            if self.polling:
                out.append(build(sim, waits, producers, UNBOUNDED, math.inf, self._poll))
            else:
                out.append(
                    build(
                        sim,
                        waits,
                        producers,
                        self.per_producer,
                        self.until,
                        self._request,
                        on_done=self._items_done,
                    )
                )
        return out

    def start(self) -> None:
        self.sender.start()
        for schedule in self._schedules:
            schedule.start(self.start_s)
        if not self.sender.producers:
            self.sim.at(self.start_s, self._end)

    # ---- the schedules' events ----------------------------------------------------------

    def _publish(self, producer: int, k: int) -> None:
        if not self.sender.ready(producer):
            self.skipped += 1
            return
        rid = self._open_item(producer, k)
        self.sender.send(producer, rid, reading(producer, k, self._value()))

    def _request(self, producer: int, k: int) -> None:
        self._puller().request(producer, self._open_item(producer, k))

    def _poll(self, producer: int, k: int) -> None:
        self._puller().poll(producer)

    def _puller(self) -> PullSender:
        if self._pull is None:  # the schedules request and poll only for a pull
            raise RuntimeError("a pull schedule on a sender that does not pull")
        return self._pull

    def _open_item(self, producer: int, k: int) -> int:
        rid = reading_id(producer, k)
        self._open[rid] = self.items.start(self.sim.now)
        if self.stress is not None:
            self.stress.started(rid)
        if self.series is not None:
            self.series.taken += 1
        return rid

    def _items_done(self) -> None:
        """The schedule that opens items has run out: the last ones get drain_s."""
        self._items_running = False
        self.sim.schedule(self.drain_s, self._end)
        self._check_all_done()

    def _end(self) -> None:
        """The last event has had drain_s: what has not arrived is lost."""
        now = self.sim.now
        for rid in list(self._open):
            self.failed(rid, now)
        self.sim.stop()

    # ---- what the senders report -----------------------------------------------------

    def handed_over(self, rid: int) -> None:
        """The reading left its producer with no end-to-end acknowledgement to come."""
        item = self._open.get(rid)
        if item is None:
            return
        now = self.sim.now
        item.t_handed_over = now
        self._handed.append((now, rid))
        self._expire(now)

    def arrived(self, payload: bytes, since: float | None = None) -> bool | None:
        """A reading reached the gateway's application: True if it is new (its first
        arrival), False if it came before; None if it is not a reading."""
        rid = read_id(payload)
        if rid is None:
            return None
        return self.delivered(rid, len(payload), since)

    def _at_gateway(self, rid: int) -> None:
        if rid in self._open:
            self.delivered(rid, READING_BYTES)

    def delivered(self, rid: int, size: int, since: float | None = None) -> bool:
        """Item `rid` is at the gateway (its first arrival counts: True). `since`: a
        polled reading's transaction began then, with the first request for it."""
        item = self._open.pop(rid, None)
        if item is None:
            return False
        now = self.sim.now
        if since is not None:
            item.t_start = since
        self.items.finish(item, now, DELIVERED, size)
        if self.stress is not None:
            self.stress.ended(rid, now, lost=False)
        if self.series is not None:
            self.series.delivered += 1
        self._check_all_done()
        return True

    def failed(self, rid: int, when: float | None = None) -> None:
        """Item `rid` can no longer arrive (given up, replaced, expired)."""
        item = self._open.pop(rid, None)
        if item is None:
            return
        now = self.sim.now
        self.items.finish(item, now if when is None else when, GIVEN_UP)
        if self.stress is not None:
            self.stress.ended(rid, now, lost=True)
        self._check_all_done()

    def _value(self) -> int:
        """A sensor value of four digits, so that every reading is 32 bytes (S4's)."""
        return 1000 + self._values.randbelow(9000)  # randrange(1000, 10000)

    def reading_for(self, rid: int) -> bytes:
        """The value a producer returns when asked for item `rid` (a pull): a reading
        taken now, carrying the item's id."""
        return reading(reading_producer(rid), reading_counter(rid), self._value())

    def idle_reading(self, producer: int) -> bytes:
        """A reading that is no item (a resource's state before its first reading)."""
        return reading(producer, IDLE_COUNTER, 3000)

    def _expire(self, now: float) -> None:
        """Give up the handed-over readings that have had `drain_s` to arrive."""
        handed = self._handed
        while handed and handed[0][0] + self.drain_s < now:
            t, rid = handed.popleft()
            if rid in self._open:
                self.failed(rid, t)

    def _check_all_done(self) -> None:
        """Every item has ended and none will begin: the run ends, but not before the
        publishing period does, so that every variant is measured over the same time."""
        if self._items_running or self._open:
            return
        if self.sim.now >= self.period_end:
            self.sim.stop()
        elif not self._stopping:
            self._stopping = True
            self.sim.at(self.period_end, self.sim.stop)

    # ---- metrics ---------------------------------------------------------------------

    def _energy_now(self) -> list[tuple[float, float]]:
        """Each node's energy so far: (S4's accounting, always listening)."""
        now = self.sim.now
        return [(radio.power.air_joules(now), radio.power.joules(now)) for radio in self._radios]

    def _energy_snapshot(self, which: str) -> None:
        energy = self._energy_now()
        if which == "start":
            self._energy_start = energy
        else:
            self._energy_end = energy

    def _energies(self) -> tuple[list[float], list[float]] | None:
        """Each node's energy over the publishing period: (S4's accounting, always
        listening); None without a radio network."""
        if not isinstance(self.net, RadioNetwork):
            return None
        start = self._energy_start
        if start is None:
            start = self._energy_start = self._energy_now()
        end = self._energy_end
        if end is None:  # the run ended before the period did
            end = self._energy_end = self._energy_now()
        air = [e[0] - s[0] for s, e in zip(start, end, strict=True)]
        listening = [e[1] - s[1] for s, e in zip(start, end, strict=True)]
        return air, listening

    def metrics(self, measures: RunMeasures) -> dict[str, float | int]:
        """S4's metrics (metrics/publish.py), from what every run measures."""
        sender = self.sender
        stress = self.stress or LinkStress({}, 0.0, find_reading_id)
        stress.settle(float("inf"))
        tree = self.net.tree if isinstance(self.net, RadioNetwork) else None
        energies = self._energies() if tree is not None else None
        out = publish_metrics(
            measures,
            self.items.stats.started,
            sender.requests,
            sender.app_retransmissions(),
            stress,
            energies,
            tree,
            ndn_tables(sender.forwarders()),
            self.skipped,
            self.period,
        )
        out.update(sender.protocol_metrics())
        cpus = [cpu for cpu in sender.producer_cpus() if cpu is not None]
        if cpus:
            started = self.items.stats.started
            busy_ms = 1e3 * sum(cpu.busy_s for cpu in cpus)
            out["cpu_producer_ms_per_item"] = busy_ms / started if started else math.nan
        return out

    def sampling_events(self) -> int:
        return self.series.events if self.series else 0

    def series_table(self) -> SeriesTable | None:
        """The run's time series and distributions (metrics/publish.py), once it
        has ended and its metrics() are taken; None without a radio network."""
        series = self.series
        tree = self.net.tree if isinstance(self.net, RadioNetwork) else None
        if series is None:
            return None
        series.close_bin(self.sim.now)
        hops = tree.hops if tree is not None else ()
        stress = self.stress
        distribution_rows(
            series.table,
            self.items.stats.latencies,
            stress.histogram if stress is not None else {},
            stress.lost_histogram if stress is not None else {},
            hops,
        )
        return series.table


def ndn_tables(forwarders: dict[str, Forwarder]) -> NdnTables | None:
    """The most PIT entries, Content Store entries and Content Store bytes any node
    held, and the Interests all dropped for a full PIT; None: no NDN."""
    if not forwarders:
        return None
    held = forwarders.values()
    return NdnTables(
        max(f.pit.peak for f in held),
        max(f.cs.peak_entries for f in held),
        max(f.cs.peak_bytes for f in held),
        sum(f.counters.pit_full_drops for f in held),
    )
