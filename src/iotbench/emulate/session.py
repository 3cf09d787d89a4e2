"""One emulation: a scenario's network in real time, with real hosts attached.

The network is built exactly as a simulation builds it (world/run.py's
`build_world`), from the same settings and seed. It first runs a warm-up in
virtual time, as fast as the machine goes (by default up to the moment the
scenario's workload would start: routing has converged by then, as the study
let it), and then follows the wall clock (emulate/realtime.py). Each attached
node gets a network namespace with a TUN device (emulate/netns.py) and an
`AttachedHost` (emulate/attach.py) that joins the two.
"""

from __future__ import annotations

import gc
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TextIO

from iotbench.emulate.attach import AttachedHost, AttachStats
from iotbench.emulate.netns import (
    DEFAULT_STATE_DIR,
    AttachedNamespace,
    HostAddress,
    create_namespace,
    remove_stale,
)
from iotbench.emulate.realtime import LagHistogram, LagSummary, RealTimeDriver
from iotbench.emulate.zep import ZepDispatcher, ZepSocket, ZepStats
from iotbench.metrics.derive import ItemSummary, summarize_items
from iotbench.net import ip
from iotbench.net.node import Node
from iotbench.net.radio.medium import Radio
from iotbench.scenarios import UserError
from iotbench.scenarios.settings_types import RunSettings
from iotbench.sim.garbage import paced_collections
from iotbench.world.networks import RadioNetwork
from iotbench.world.run import World, build_world


@dataclass
class EmulationOptions:
    attach: list[str]
    duration_s: float | None = None  # None: until Ctrl-C or SIGTERM
    warmup_s: float | None = None  # None: when the workload's first item starts
    workload: bool = False  # the scenario's own traffic beside the attached hosts
    pcap_path: str | None = None
    lag_warn_s: float = 1e-3  # warn when a second's p99 lag passes this
    state_dir: Path = DEFAULT_STATE_DIR
    # Namespaces are named PREFIX + node name: two emulations side by side (or
    # tests) need not share names.
    netns_prefix: str = ""
    # RIOT processes over ZEP: where the dispatcher listens, and the nodes the
    # processes play in the order they register.
    zep: tuple[str, int] | None = None
    zep_nodes: list[str] = field(default_factory=list)
    # ACK RIOT's unicasts as its transceiver's would arrive (see docs/emulate.md,
    # "RIOT over ZEP"), not when the medium's ACK frame ends.
    zep_early_ack: bool = True


@dataclass
class EmulationReport:
    warmup_s: float
    real_s: float
    sim_time_s: float
    events: int
    realtime_events: int  # of those, in real time (after the warm-up)
    lag: LagSummary
    hosts: dict[str, AttachStats] = field(default_factory=dict)
    warnings: int = 0
    items: ItemSummary | None = None  # the scenario's workload, when it ran
    zep: ZepStats | None = None

    def lines(self) -> list[str]:
        out = [
            f"warm-up {self.warmup_s:g} s in virtual time, then {self.real_s:.1f} s in real "
            f"time; virtual clock at {self.sim_time_s:.3f} s, {self.events:,} events",
            self.lag.text(),
        ]
        if self.items is not None:
            i = self.items
            out.append(
                f"workload: {i.started} items started, {i.delivered} delivered, "
                f"{i.given_up} given up; latency mean {i.latency_mean_s * 1e3:.1f} ms"
            )
        if self.zep is not None:
            z = self.zep
            out.append(
                f"ZEP: {z.registered} RIOT processes registered, {z.frames_in} frames from "
                f"them on the air, {z.frames_out} to them; dropped: refused {z.refused}, "
                f"malformed {z.malformed + z.invalid_unregistered}, bad PSDU {z.bad_psdu}, "
                f"wrong channel {z.wrong_channel}, queue full {z.queue_drops}; "
                f"ACKs: {z.early_acks} to RIOT early, {z.auto_acks} on the air for it "
                f"({z.auto_acks_missed} missed while it sent)"
            )
        for name, s in self.hosts.items():
            out.append(
                f"{name}: {s.from_host} packets from the host, {s.to_host} to it; dropped: "
                f"no route {s.no_route}, too big {s.too_big}, host chatter {s.chatter_dropped}, "
                f"link-local {s.link_local_dropped}, multicast {s.multicast_dropped}, "
                f"malformed {s.malformed}"
            )
        return out


def attachable_node(world: World, name: str) -> Node:
    """The IP host `name` of the world's network, or a UserError naming the choices."""
    host = world.net.hosts.get(name)
    if host is None:
        raise UserError(
            f"--attach {name}: the network has no node of that name; its nodes: "
            f"{_some(world.net.hosts)} (`iotbench topology` draws them)"
        )
    if not isinstance(host, Node):
        raise UserError(
            f"--attach {name}: the node speaks NDN straight over 802.15.4, not IP; "
            "a host attaches to an IP node (pick a run of an IP protocol with --filter)"
        )
    return host


def first_item_s(world: World) -> float:
    """When the scenario's workload starts its first item: the default warm-up.
    A group query's first query waits for its entity (workload.query_start_s)."""
    workload = world.settings.workload
    return workload.query_start_s if workload.query_start_s is not None else workload.start_s


def zep_radio(world: World, name: str) -> Radio:
    """The radio of node `name`, which a RIOT process will play."""
    net = world.net
    if not isinstance(net, RadioNetwork):
        raise UserError(f"--zep-node {name}: RIOT joins radio networks; this one is a pair link")
    radio = net.radios.get(name)
    if radio is None:
        raise UserError(
            f"--zep-node {name}: the network has no radio node of that name: {_some(net.radios)}"
        )
    return radio


def _some(names: Iterable[str]) -> str:
    """The first dozen of `names`, sorted, and how many there are in all."""
    ordered = sorted(names)
    more = f" ... ({len(ordered)} in all)" if len(ordered) > 12 else ""
    return ", ".join(ordered[:12]) + more


def host_addresses(node: Node) -> tuple[list[HostAddress], list[str]]:
    """The node's address for its namespace, and the routes that send everything
    else into the simulated network."""
    address = ip.address_text(node.address)
    if len(node.address) == 4:
        return [HostAddress(address, 32)], ["0.0.0.0/0"]
    return [HostAddress(address, 128)], ["::/0"]


class Emulation:
    def __init__(self, settings: RunSettings, seed: int, options: EmulationOptions) -> None:
        self.options = options
        self.world = build_world(settings, seed, options.pcap_path)
        self.nodes = [attachable_node(self.world, name) for name in options.attach]
        if len(set(options.attach)) != len(options.attach):
            raise UserError("--attach: a node is named twice")
        self.driver = RealTimeDriver(self.world.sim)
        self.namespaces: list[AttachedNamespace] = []
        self.hosts: dict[str, AttachedHost] = {}
        self.zep: ZepSocket | None = None
        self.warnings = 0
        self._zep_radios = [zep_radio(self.world, name) for name in options.zep_nodes]
        if options.zep is None and options.zep_nodes:
            raise UserError("--zep-node: give the dispatcher's address with --zep ADDR:PORT")
        if options.zep is not None and not options.zep_nodes:
            raise UserError("--zep: name the nodes RIOT plays with --zep-node NODE")
        if len(set(options.zep_nodes)) != len(options.zep_nodes):
            raise UserError("--zep-node: a node is named twice")
        both = set(options.zep_nodes) & set(options.attach)
        if both:
            raise UserError(f"{', '.join(sorted(both))}: a node is either --attach or --zep-node")

    def run(
        self,
        out: TextIO = sys.stderr,
        on_attached: Callable[[list[str]], None] | None = None,
    ) -> EmulationReport:
        """Warm up, attach the hosts, run in real time; the namespaces are gone
        when this returns or raises. `on_attached` hears when programs may start."""
        world, options = self.world, self.options
        warmup = options.warmup_s if options.warmup_s is not None else first_item_s(world)
        try:
            if options.workload:
                workload = world.workload()
                world.net.follow_items(world.items, workload.planned_items)
                workload.start()
            with paced_collections():  # as a simulation runs (sim/garbage.py)
                world.sim.run(until=warmup)
            # What the network built and the warm-up made lives to the end: out
            # of the collector's way, a full collection in real time does not
            # walk it all while events wait.
            gc.collect()
            gc.freeze()
            self._attach_all()
            self._open_zep()
            if on_attached is not None:
                on_attached(list(self.hosts))
            start = self.driver.clock()
            events_at_start = world.sim.events_processed
            with _stop_on_sigterm(self.driver):
                try:
                    self.driver.run(options.duration_s, on_tick=lambda: self._tick(out))
                except KeyboardInterrupt:
                    pass  # Ctrl-C ends an emulation; the summary still follows
            real_s = self.driver.clock() - start
            if world.pcap is not None:
                world.pcap.close()
        except BaseException:
            if world.pcap is not None:
                world.pcap.abort()
            raise
        finally:
            gc.unfreeze()
            self.close()
        return EmulationReport(
            warmup_s=warmup,
            real_s=real_s,
            sim_time_s=max(world.sim.now, self.driver.now()),
            events=world.sim.events_processed,
            realtime_events=world.sim.events_processed - events_at_start,
            lag=self.driver.lag.summary(),
            hosts={name: host.stats for name, host in self.hosts.items()},
            warnings=self.warnings,
            zep=self.zep.dispatcher.stats if self.zep is not None else None,
            items=self._items() if options.workload else None,
        )

    def address(self, name: str) -> str:
        """The address of attached node `name`, as its namespace has it."""
        return ip.address_text(self.hosts[name].node.address)

    def _items(self) -> ItemSummary:
        self.world.items.close_undelivered()
        return summarize_items(self.world.items.stats, self.world.traffic.window_start)

    def _attach_all(self) -> None:
        removed = remove_stale(self.options.state_dir)
        if removed:
            print(
                f"iotbench: removed namespaces a stopped run left: {', '.join(removed)}",
                file=sys.stderr,
            )
        for node in self.nodes:
            try:
                host = AttachedHost(node, lambda p: None, keep_simulated_udp=self.options.workload)
            except ValueError as exc:
                raise UserError(f"--attach {node.name}: {exc}") from None
            addresses, routes = host_addresses(node)
            ns = create_namespace(
                self.options.netns_prefix + node.name,
                addresses,
                mtu=host.mtu,
                routes=routes,
                state_dir=self.options.state_dir,
            )
            self.namespaces.append(ns)
            host.to_host = ns.write_packet
            self.hosts[node.name] = host
            self.driver.add_reader(ns.fd, self._reader(ns, host))

    def _reader(self, ns: AttachedNamespace, host: AttachedHost) -> Callable[[], None]:
        inject = self.driver.inject

        def read() -> None:
            for packet in ns.read_packets():
                inject(host.from_host, packet)

        return read

    def _tick(self, out: TextIO) -> None:
        recent = self.driver.recent.summary()
        self.driver.recent = LagHistogram()  # a fresh window for the next line
        line = (
            f"t={self.driver.now():9.3f} s  events {self.world.sim.events_processed:,}  "
            f"{recent.text()}"
        )
        if recent.p99_s > self.options.lag_warn_s:
            self.warnings += 1
            line += f"  WARNING: p99 lag over {self.options.lag_warn_s * 1e3:g} ms"
        print(line, file=out, flush=True)

    def _open_zep(self) -> None:
        if self.options.zep is None:
            return
        host, port = self.options.zep
        # ZEP stamps frames with Unix time: virtual time 0 is this long ago.
        epoch = time.time() - self.world.sim.now
        dispatcher = ZepDispatcher(
            self._zep_radios, epoch_unix_s=epoch, early_ack=self.options.zep_early_ack
        )
        try:
            self.zep = ZepSocket(dispatcher, host, port)
        except OSError as exc:
            raise UserError(f"--zep {host}:{port}: {exc.strerror or exc}") from None
        zep, now = self.zep, self.driver.now
        self.driver.add_reader(zep.fileno(), lambda: zep.on_readable(now()))

    def close(self) -> None:
        if self.zep is not None:
            self.driver.remove_reader(self.zep.fileno())
            self.zep.close()
        for ns in self.namespaces:
            self.driver.remove_reader(ns.fd)
            ns.close()
        self.namespaces.clear()


@contextmanager
def _stop_on_sigterm(driver: RealTimeDriver) -> Iterator[None]:
    """SIGTERM ends the emulation as Ctrl-C does: at the driver's next turn."""

    def stop(_signum: int, _frame: FrameType | None) -> None:
        driver.stop()

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
