"""Builds and runs one simulation from a validated scenario config.

`run_one` is the only entry point the runner needs: config + seed in, metrics
out (and a pcap file when asked). Everything it builds (nodes, link, protocol
stacks, workload) lives and dies inside the call, so runs are independent and
can execute in any process, in any order.
"""

from __future__ import annotations

import json
import math

from iotbench.apps.requesters import PeriodicRequester, SequentialRequester
from iotbench.metrics.derive import NdnFrameMeter, item_metrics, rtt_ms_metrics
from iotbench.metrics.items import DELIVERED, Item, ItemLog
from iotbench.metrics.observers import Observers
from iotbench.metrics.pcap import (
    LINKTYPE_IEEE802_15_4_WITHFCS,
    LINKTYPE_RAW,
    PcapNgWriter,
    PcapWriter,
)
from iotbench.metrics.radio import radio_metrics
from iotbench.metrics.series import NodeSeries
from iotbench.metrics.timeseries import RunMetrics
from iotbench.metrics.traffic import TrafficMeter
from iotbench.sim import Simulator
from iotbench.world.group_query import GroupQueryWorkload
from iotbench.world.network import Network, build_network
from iotbench.world.protocols import build_client
from iotbench.world.publish import PublishWorkload

LINKTYPES = {"ip": LINKTYPE_RAW, "ieee802154": LINKTYPE_IEEE802_15_4_WITHFCS}


def run_one(
    config: dict, seed: int, pcap_path: str | None = None, series_path: str | None = None
) -> dict[str, float | int]:
    """Run one simulation; its metrics (a publish run's are `RunMetrics`, with its
    time series for the results store). `pcap_path`: write the packets there;
    `series_path`: a radio network's per-node energy and counters over time (CSV)."""
    sim = Simulator(seed)
    items = ItemLog()
    workload = config["workload"]
    downloads = workload["kind"] == "object-download"
    count = 1 if downloads else workload["items"]
    if workload["kind"] == "group-query":
        count = workload["queries"]
    traffic = TrafficMeter(sim, windowed=downloads)
    observers = Observers(traffic)
    protocol = config["protocol"]["name"]
    net = build_network(sim, config["network"], items, count, observers, config["protocol"])
    # The node whose packets S3's `packets_total` counts: the sensor, which is the
    # producer (the server in request-response scenarios).
    sensor = net.ids("producer")[0] if len(net.ids("producer")) == 1 else None
    frames = NdnFrameMeter(sensor) if protocol == "ndn" and sensor is not None else None
    if frames is not None:
        observers.add(frames)
    pcap = _pcap_writer(sim, net, config["network"], pcap_path)
    if pcap is not None:
        observers.add(pcap)
    series = None
    if series_path and "radios" in net.parts:
        series = NodeSeries(
            sim,
            series_path,
            list(radio_parts(net)["radios"].values()),
            list(radio_parts(net)["macs"].values()),
            config["network"]["radio"]["series_interval_s"],
        )
    outputs = [o for o in (pcap, series) if o is not None]
    group: list[GroupQueryWorkload] = []
    published: list[PublishWorkload] = []
    try:
        download = _run(sim, config, net, items, count, traffic, observers, group, published)
    except BaseException:
        for output in outputs:
            output.abort()
        raise
    for output in outputs:
        output.close()
    metrics: dict[str, float | int] = {}
    t_first = traffic.window_start
    if download is not None:
        done = download.status == DELIVERED and t_first is not None
        metrics["object_download_time_s"] = download.t_end - t_first if done else math.nan
    metrics.update(traffic.wire_metrics())
    if sensor is not None:
        metrics.update(traffic.node_metrics(sensor))
    metrics.update(item_metrics(items.stats, t_first))
    if frames is not None:
        metrics.update(rtt_ms_metrics(items.stats))
        metrics.update(frames.metrics())
    if "radios" in net.parts:
        metrics.update(traffic.kind_metrics())
        metrics.update(radio_metrics(radio_parts(net), sim.now))
    for workload_ in group:
        metrics.update(workload_.metrics())
    for publish in published:
        metrics.update(publish.metrics(metrics))
    tables = [t for t in (p.series_table() for p in published) if t is not None]
    metrics["sim_time_s"] = sim.now
    # A time series only reads the run: the same run with or without one has the
    # same metrics, its sampling events not counted.
    sampling = (series.events if series else 0) + sum(
        p.series.events for p in published if p.series
    )
    metrics["sim_events"] = sim.events_processed - sampling
    metrics["hit_time_limit"] = int(metrics["items_unfinished"] > 0)
    return RunMetrics(metrics, tables[0]) if tables else metrics


def radio_parts(net: Network) -> dict:
    """The radio network's parts, with a second network's radios, MACs and RPL
    nodes added (its metrics count with the first's; the tree is the first's)."""
    second = net.parts.get("second")
    if second is None:
        return net.parts
    both = dict(net.parts)
    for key in ("radios", "macs"):
        both[key] = {**net.parts[key], **second.parts[key]}
    both["rpl"] = [*net.parts["rpl"], *second.parts["rpl"]]
    return both


def check_networks(configs, label: str = "") -> None:
    """Check every distinct radio network of these run configs before anything runs,
    so a network that cannot work is one clear error, not a failure per run."""
    from iotbench.world.radio_network import check_network
    from iotbench.world.topology import TopologyError

    seen: set[str] = set()
    for config in configs:
        network = config["network"]
        if network.get("topology", "pair") == "pair":
            continue
        key = json.dumps([network, config["protocol"]["name"]], sort_keys=True)
        if key not in seen:
            seen.add(key)
            try:
                check_network(network, config["protocol"]["name"])
            except TopologyError as exc:
                raise TopologyError(f"{label}: {exc}" if label else str(exc)) from None


def _pcap_writer(sim: Simulator, net: Network, network: dict, path: str | None):
    if not path:
        return None
    medium = net.parts.get("medium")
    if medium is None:
        return PcapWriter(sim, path, LINKTYPES[network["link"]["layer"]])
    media = [((medium,), LINKTYPE_IEEE802_15_4_WITHFCS, medium.name)]
    second = net.parts.get("second")
    if second is not None:
        other = second.parts["medium"]
        media.append(((other,), LINKTYPE_IEEE802_15_4_WITHFCS, other.name))
    links = [(name, net.parts.get(name)) for name in ("uplink", "gateways_link")]
    if second is not None:
        links.append(("second uplink", second.parts.get("uplink")))
    for name, link in links:
        if link is not None:
            media.append(((link.a_to_b, link.b_to_a), LINKTYPE_RAW, name.replace("_", " ")))
    if len(media) == 1:
        return PcapWriter(sim, path, LINKTYPE_IEEE802_15_4_WITHFCS)
    return PcapNgWriter(sim, path, media)


def _run(
    sim: Simulator,
    config: dict,
    net: Network,
    items: ItemLog,
    count: int,
    traffic: TrafficMeter,
    observers: Observers,
    group: list,
    published: list,
) -> Item | None:
    """Run the simulation; the object-download item, if that is the workload."""
    workload = config["workload"]
    downloads = workload["kind"] == "object-download"
    # The first packet the client sends for the workload starts the count: a
    # connection that only primes a Fast Open cookie before the item is not part
    # of it. For an object download, the count ends when the object is in.
    the_item: list[Item] = []
    if downloads:
        client_id = net.ids("client")[0]
        items.on_start.append(lambda index: traffic.arm_window(client_id))
        items.on_end.append(the_item.append)
        items.on_end.append(
            lambda item: traffic.close_window(sim.now) if item.status == DELIVERED else None
        )
    if workload["kind"] == "publish":
        publish = PublishWorkload(sim, net, config, items, observers)
        published.append(publish)
        publish.start()
        sim.run(until=config["max_sim_time_s"])
        items.close_undelivered()
        return None
    if workload["kind"] == "group-query":
        queries = GroupQueryWorkload(sim, net, config, items, observers)
        group.append(queries)
        queries.start()
        sim.run(until=config["max_sim_time_s"])
        items.close_undelivered()
        return None
    client = build_client(sim, net, config)
    if workload["kind"] == "periodic":
        requester = PeriodicRequester(sim, client, items, count, workload["interval_s"])
    else:
        requester = SequentialRequester(sim, client, items, count)
    requester.start(workload["start_s"])
    sim.run(until=config["max_sim_time_s"])
    items.close_undelivered()
    if downloads:
        return the_item[0] if the_item else items.open.get(0)
    return None
