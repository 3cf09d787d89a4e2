"""Runs one simulation from a validated scenario config: build the network, build
the workload on it, run, collect the metrics.

`run_one` is the only entry point the runner needs: config + seed in, metrics
out (and a pcap file when asked). Everything it builds (nodes, link, protocol
stacks, workload) lives and dies inside the call, so runs are independent and
can execute in any process, in any order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from iotbench.metrics.derive import NdnFrameMeter, rtt_ms_metrics, summarize_items
from iotbench.metrics.frames import FrameTally
from iotbench.metrics.items import ItemLog
from iotbench.metrics.observers import Observers
from iotbench.metrics.pcap import (
    LINKTYPE_IEEE802_15_4_WITHFCS,
    LINKTYPE_RAW,
    PcapNgWriter,
    PcapWriter,
)
from iotbench.metrics.radio import radio_metrics
from iotbench.metrics.result import Row, RunCounters, RunFailures, RunMeasures, RunResult
from iotbench.metrics.series import NodeSeries
from iotbench.metrics.traffic import TrafficMeter
from iotbench.scenarios.settings import run_settings
from iotbench.scenarios.settings_types import NetworkSettings, RunSettings
from iotbench.sim import Simulator
from iotbench.sim.garbage import no_collections, paced_collections
from iotbench.world.networks import Network, RadioNetwork, build_network, is_radio_network
from iotbench.world.networks.radio import check_network
from iotbench.world.networks.topology import TopologyError
from iotbench.world.workloads import WORKLOADS
from iotbench.world.workloads.base import Workload

LINKTYPES = {"ip": LINKTYPE_RAW, "ieee802154": LINKTYPE_IEEE802_15_4_WITHFCS}


class RunWatch(Protocol):
    """Something that follows a run from outside: told when its world is built
    (before the workload), and when its simulation has ended (before the metrics
    are collected). It may raise to fail the run (world/books.py does)."""

    def built(self, world: World) -> None: ...

    def ended(self, world: World) -> None: ...


def run_one(
    config: dict[str, Any],
    seed: int,
    pcap_path: str | None = None,
    series_path: str | None = None,
    watch: RunWatch | None = None,
) -> RunResult:
    """Run one simulation of `config` (a run's validated config, as the results
    store keeps it; parsed into settings here, once) and return its result: the
    metrics, counters, failures and time series (metrics/result.py).
    `pcap_path`: write the packets there; `series_path`: a radio network's
    per-node energy and counters over time (CSV); `watch`: see `RunWatch`."""
    with paced_collections():  # sim/garbage.py
        return _run(config, seed, pcap_path, series_path, watch)


@dataclass
class World:
    """What a run builds before anything happens: the kernel, the network with its
    observers, and the workload's kind (built by the caller, who may leave it
    out: `iotbench emulate` runs a network with or without its workload)."""

    settings: RunSettings
    sim: Simulator
    items: ItemLog
    kind: type[Workload]
    traffic: TrafficMeter
    observers: Observers
    net: Network
    sensor: str | None
    frames: NdnFrameMeter | None
    pcap: PcapWriter | None

    def workload(self) -> Workload:
        return self.kind(
            self.sim, self.net, self.settings, self.items, self.observers, self.traffic
        )


def build_world(settings: RunSettings, seed: int, pcap_path: str | None) -> World:
    sim = Simulator(seed)
    items = ItemLog()
    kind = WORKLOADS[settings.workload.kind]
    traffic = TrafficMeter(sim, windowed=kind.windowed_traffic)
    observers = Observers(traffic)
    protocol = settings.protocol.name
    with no_collections():  # sim/garbage.py: what it builds lives to the end
        net = build_network(sim, settings.network, observers, settings.protocol)
    # The node whose packets S3's `packets_total` counts: the sensor, which is the
    # producer (the server in request-response scenarios).
    sensor = net.ids("producer")[0] if len(net.ids("producer")) == 1 else None
    frames = NdnFrameMeter(sensor) if protocol == "ndn" and sensor is not None else None
    if frames is not None:
        observers.add(frames)
    pcap = pcap_writer(sim, net, settings.network, pcap_path)
    if pcap is not None:
        observers.add(pcap)
    return World(settings, sim, items, kind, traffic, observers, net, sensor, frames, pcap)


def _run(
    config: dict[str, Any],
    seed: int,
    pcap_path: str | None,
    series_path: str | None,
    watch: RunWatch | None,
) -> RunResult:
    settings = run_settings(config)
    world = build_world(settings, seed, pcap_path)
    if watch is not None:
        watch.built(world)
    sim, net, items, traffic = world.sim, world.net, world.items, world.traffic
    observers, sensor, frames, pcap = world.observers, world.sensor, world.frames, world.pcap
    protocol = settings.protocol.name
    series = None
    radio_settings = settings.network.radio
    if series_path and isinstance(net, RadioNetwork) and radio_settings is not None:
        tally = FrameTally(ndn=protocol == "ndn")
        observers.add(tally)
        series = NodeSeries(
            sim,
            series_path,
            net.all_radios(),
            net.all_macs(),
            radio_settings.series_interval_s,
            tally,
        )
    outputs = [o for o in (pcap, series) if o is not None]
    try:
        with no_collections():  # the workload's nodes and apps live to the end too
            workload = world.workload()
            net.follow_items(items, workload.planned_items)
            workload.start()
        sim.run(until=settings.max_sim_time_s)
        items.close_undelivered()
        if watch is not None:
            watch.ended(world)
    except BaseException:
        for output in outputs:
            output.abort()
        raise
    for output in outputs:
        output.close()

    # The row's sections, in the store's column order (docs/metrics.md).
    summary = summarize_items(items.stats, traffic.window_start)
    sections: list[Row] = [workload.leading_metrics(), dict(traffic.wire_metrics())]
    if sensor is not None:
        sections.append(dict(traffic.node_metrics(sensor)))
    sections.append(summary.metrics())
    if frames is not None:
        sections += [rtt_ms_metrics(items.stats), frames.metrics()]
    kinds: dict[str, int] = {}
    radio: dict[str, float | int] = {}
    if isinstance(net, RadioNetwork):
        kinds = traffic.kind_metrics()
        radio = radio_metrics(net.all_macs(), net.all_radios(), net.tree, net.all_rpl(), sim.now)
        sections += [dict(kinds), radio]
    measures = RunMeasures(
        items=summary,
        bytes_control=kinds.get("bytes_control", 0),
        bytes_data=kinds.get("bytes_data", traffic.wire.total),
        mac_retries=int(radio.get("mac_retries", 0)),
    )
    sections.append(workload.metrics(measures))
    table = workload.series_table()
    # A time series only reads the run: the same run with or without one has the
    # same metrics, its sampling events not counted.
    sampling = (series.events if series else 0) + workload.sampling_events()
    counters = RunCounters(sim_time_s=sim.now, sim_events=sim.events_processed - sampling)
    failures = RunFailures(summary.unfinished, workload.unfinished())
    return RunResult.assemble(sections, counters, failures, table)


def check_networks(configs: Iterable[dict[str, Any]], label: str = "") -> None:
    """Check every distinct radio network of these run configs before anything runs,
    so a network that cannot work is one clear error, not a failure per run."""
    seen: set[str] = set()
    for config in map(run_settings, configs):
        network = config.network
        if not is_radio_network(network):
            continue
        key = repr((network, config.protocol.name))
        if key not in seen:
            seen.add(key)
            try:
                check_network(network, config.protocol.name)
            except TopologyError as exc:
                raise TopologyError(f"{label}: {exc}" if label else str(exc)) from None


def pcap_writer(
    sim: Simulator, net: Network, network: NetworkSettings, path: str | None
) -> PcapWriter | None:
    if not path:
        return None
    if not isinstance(net, RadioNetwork):
        return PcapWriter(sim, path, LINKTYPES[network.link.layer])
    media: list[tuple[tuple[object, ...], int, str]] = [
        ((r.medium,), LINKTYPE_IEEE802_15_4_WITHFCS, r.medium.name) for r in net.networks()
    ]
    links = [("uplink", net.uplink), ("gateways link", net.gateways_link)]
    if net.second is not None:
        links.append(("second uplink", net.second.uplink))
    for name, link in links:
        if link is not None:
            media.append(((link.a_to_b, link.b_to_a), LINKTYPE_RAW, name))
    if len(media) == 1:
        return PcapWriter(sim, path, LINKTYPE_IEEE802_15_4_WITHFCS)
    return PcapNgWriter(sim, path, media)
