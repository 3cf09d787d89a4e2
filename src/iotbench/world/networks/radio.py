"""Builds a radio network: 802.15.4 nodes on a shared medium, from the topology up.

Bottom to top, for every node of the topology (topology.py):

1. a `Radio` on the channel's `RadioMedium`, with the node's TX power,
   sensitivity, CCA threshold and energy profile; neighbour lists from the
   positions, the path loss and the shadowing (net/radio/neighbours.py);
2. a `CsmaMac` with the node's extended (or short) address;
3. for NDN, an `L2Node` whose interface sends frames through the MAC; for
   every other protocol, an IPv6 `Node` that forwards, with a
   `LowpanInterface` (6LoWPAN) on the MAC. Addresses: fe80::IID and, under
   the gateway's prefix fd00::/64, fd00::IID, with the IID from the MAC
   address;
4. routing: RPL storing mode on every node (net/rpl), or the static tree of
   least ETX (net/routing/tree.py) with its routes installed; SMRF for
   multicast; NDN always uses the static tree (world/protocols/ndn.py);
5. the interferers, and the gateway's uplink (a point-to-point link to the
   host `uplink`, prefix fd01::/64) when the scenario has one;
6. `network.second`: a second radio network, the first one again (the same
   positions, link draws and members' hop counts: a twin) on its own
   802.15.4 channel, under the prefix fd02::/64, its nodes named `b.<id>`,
   its gateway the root of its own DODAG and joined to the first gateway by
   an Ethernet link (fd03::/64). Each network's frames reach the other's
   radios as the receivers' rejection of another channel lets them
   (net/radio/chips.py): as noise, and sensed by CCA. S6 nests entities on
   two gateways this way.

The network's randomness (shadowing, fading, reception draws, interferers,
the node draws of random and building topologies) comes from streams of the
network seed, so every variant of a campaign meets the same radio
conditions; the MACs' backoffs belong to the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

from iotbench.metrics.observers import Observers
from iotbench.net import ieee802154 as mac
from iotbench.net import ip, serial
from iotbench.net.busy_wait import BusyWaitInterface, SerialBusyWait
from iotbench.net.l2 import L2Node
from iotbench.net.link import PointToPointLink
from iotbench.net.lowpan.fragments import Reassembler
from iotbench.net.lowpan.interface import LowpanInterface
from iotbench.net.mac.contiki_csma import ContikiCsmaMac, ContikiParams
from iotbench.net.mac.csma import CsmaMac, MacParams
from iotbench.net.node import AppLayers, Interface, Node
from iotbench.net.pktbuf import PacketBuffer
from iotbench.net.radio import phy
from iotbench.net.radio.chips import CHIPS, leak_db
from iotbench.net.radio.energy import EnergyProfile, RadioEnergy
from iotbench.net.radio.interferer import LeakingTransmitter, WifiInterferer
from iotbench.net.radio.medium import Radio, RadioMedium
from iotbench.net.radio.neighbours import connect
from iotbench.net.radio.propagation import (
    GaussMarkovLinks,
    GilbertElliottLinks,
    NoVariation,
    RayleighFading,
    between,
)
from iotbench.net.radio.wifi import ACCESS_POINT, STATION, WifiTraffic, in_band_fraction
from iotbench.net.routing.smrf import Smrf
from iotbench.net.routing.tree import Tree, least_etx_tree
from iotbench.net.rpl.driver import RplDriver, dao_targets_per_frame
from iotbench.net.rpl.node import RplNode, RplParams
from iotbench.proto.ndn.profiles import DeviceProfile, get_profile
from iotbench.scenarios.settings import required
from iotbench.scenarios.settings_types import (
    NetworkRadioVariationGaussMarkovSettings,
    NetworkRadioVariationGilbertElliottSettings,
    NetworkRadioVariationRayleighSettings,
    NetworkSecondSettings,
    NetworkSettings,
    NetworkUplinkSettings,
)
from iotbench.sim import RngStreams, Simulator
from iotbench.sim.cpu import Cpu
from iotbench.world.networks.base import HostInterface, RadioNetwork, Streams
from iotbench.world.networks.pairs import pair_model, path_loss_of
from iotbench.world.networks.topology import NodeSpec, Topology, TopologyError, build_topology

PREFIX = bytes.fromhex("fd00000000000000")  # the radio network's /64
UPLINK_PREFIX = bytes.fromhex("fd01000000000000")
ALL_NODES = bytes.fromhex("ff020000000000000000000000000001")
ALL_RPL_NODES = bytes.fromhex("ff02000000000000000000000000001a")


@dataclass(frozen=True)
class Subnet:
    """Which radio network of a run: how its nodes are named and addressed."""

    index: int  # 0: the network; 1: network.second
    prefix: bytes
    id_prefix: str  # put before the topology's node ids


FIRST = Subnet(0, PREFIX, "")
SECOND = Subnet(1, bytes.fromhex("fd02000000000000"), "b.")
GATEWAYS_LINK = ("fd03::1", "fd03::2")  # the first network's end (gateway or host), the second's
SLIP_BAUD = 115_200  # a serial uplink's rate when the scenario names none

_T = TypeVar("_T")
#: Per node, for SMRF: its parent's MAC address (asked when needed), and whether a
#: node below it is in a group.
Multicast = tuple[Callable[[], bytes | None], Callable[[bytes], bool]]


class EthernetSettings(Protocol):
    """What an Ethernet link is made of: network.uplink's, or network.second's."""

    @property
    def rate_bps(self) -> int: ...
    @property
    def delay_s(self) -> float: ...
    @property
    def mtu_bytes(self) -> int: ...
    @property
    def queue_packets(self) -> int: ...


def _ip(host: Node | L2Node) -> Node:
    """A host of an IP network: every protocol's but NDN's, which has neither
    network.second nor network.uplink (build_radio_network refuses them)."""
    assert isinstance(host, Node), f"{host.name} is not an IP node"
    return host


def build_radio_network(
    sim: Simulator,
    network: NetworkSettings,
    protocol: str,
    observers: Observers,
    l2_mtu: int | None = None,
) -> RadioNetwork:
    net, cfg = _one_network(sim, network, protocol, observers, l2_mtu, FIRST)
    hosts, interfaces = net.hosts, net.interfaces
    if protocol == "ndn" and (cfg.second is not None or cfg.uplink is not None):
        raise TopologyError("network.second, network.uplink: NDN nodes have no IP links")
    second = None
    if cfg.second is not None:
        second, _ = _one_network(
            sim, second_network(network), protocol, observers, l2_mtu, SECOND, cfg.second.offset_m
        )
        net.second = second
        _leak_between(cfg, net.streams, net, second)
    if cfg.uplink is not None:
        net.uplink = _uplink(sim, cfg.uplink, net, FIRST_HOST, observers)
    if second is not None:
        joined = required(cfg.second, "network.second")  # what made `second`
        if cfg.uplink is not None:
            # Each gateway has its host, and the hosts are joined by Ethernet (S6's).
            second.uplink = _uplink(sim, cfg.uplink, second, SECOND_HOST, observers)
            net.gateways_link = _join(sim, joined, net, "uplink", second, "uplink", observers)
        else:
            net.gateways_link = _join(sim, joined, net, "gateway", second, "gateway", observers)
        # One table of how datagrams split into layers for both networks: the second
        # network's forwarders carry datagrams to the first one's hosts too.
        layers = _ip(next(iter(hosts.values()))).app_layers
        for host in second.hosts.values():
            ip_host = _ip(host)
            layers.update(ip_host.app_layers)
            ip_host.app_layers = layers
        hosts.update(second.hosts)
        interfaces.update(second.interfaces)
    return net


def second_network(network: NetworkSettings) -> NetworkSettings:
    """The `network` section of the second radio network: the first's on its own
    channel, its per-node radios renamed, its clients the first network's (the
    uplink host stays where it is). Its shift is network.second.offset_m."""
    radio = required(network.radio, "network.radio")
    nodes = radio.nodes
    if nodes:
        nodes = MappingProxyType({SECOND.id_prefix + k: v for k, v in nodes.items()})
    return replace(
        network,
        radio=replace(
            radio, channel=required(network.second, "network.second").channel, nodes=nodes
        ),
        roles=replace(required(network.roles, "network.roles"), client="gateway"),
        second=None,
        uplink=None,
    )


def _one_network(
    sim: Simulator,
    network: NetworkSettings,
    protocol: str,
    observers: Observers,
    l2_mtu: int | None,
    subnet: Subnet,
    offset_m: tuple[float, ...] | None = None,
) -> tuple[RadioNetwork, NetworkSettings]:
    cfg, streams, topology, medium, radios, tree = radio_layout(
        sim, network, protocol, observers, subnet, offset_m
    )
    mac_cfg = required(cfg.mac, "network.mac")
    routing = required(cfg.routing, "network.routing")
    params = MacParams(
        min_be=mac_cfg.min_be,
        max_be=mac_cfg.max_be,
        max_csma_backoffs=mac_cfg.max_csma_backoffs,
        max_frame_retries=mac_cfg.max_frame_retries,
        queue_frames=mac_cfg.queue_frames,
        pan_id=mac_cfg.pan_id,
        interframe_spacing=mac_cfg.interframe_spacing,
        extended_mode=mac_cfg.kind == "at86rf2xx",
    )
    contiki = ContikiParams(
        backoff_unit_s=mac_cfg.backoff_unit_s,
        max_transmissions=mac_cfg.max_transmissions,
        neighbour_queues=mac_cfg.neighbour_queues,
    )
    macs: list[CsmaMac] = []  # a ContikiCsmaMac is one too
    for i, radio in enumerate(radios):
        address = (
            mac.short_address(i + 1)
            if mac_cfg.address_mode == "short"
            else mac.extended_address(i + 1, subnet.index)
        )
        rng = sim.rng(f"mac/{radio.name}")
        if mac_cfg.kind == "contiki":
            macs.append(ContikiCsmaMac(sim, radio, address, rng, params, observers, contiki))
        else:
            macs.append(CsmaMac(sim, radio, address, rng, params, observers))
    rpl_drivers: list[RplDriver] = []
    profiles = device_profiles(cfg, topology)
    # A device's packet memory bounds what its MAC queues (every stack) and what
    # its 6LoWPAN layer reassembles (net/pktbuf.py).
    pktbufs = {
        name: PacketBuffer(size) for name, size in pktbuf_sizes(cfg, topology, profiles).items()
    }
    for node, m in zip(topology.nodes, macs, strict=True):
        m.pktbuf = pktbufs.get(node.id)
    hosts: dict[str, Node | L2Node]
    interfaces: dict[str, HostInterface]
    if protocol == "ndn":
        hosts, interfaces = _l2_hosts(sim, topology, macs, l2_mtu)
    else:
        ip_hosts, lowpans = _ip_hosts(sim, cfg, topology, macs, subnet.prefix)
        for name, profile in profiles.items():
            ip_hosts[name].use_cpu(Cpu(sim), profile)
            lowpans[name].reassembler.pktbuf = pktbufs[name]
        multicast: list[Multicast]
        if routing.protocol == "static":
            install_static_routes(topology, tree, ip_hosts, lowpans)
            multicast = static_multicast(topology, tree, ip_hosts, lowpans)
        else:
            rpl_drivers = start_rpl(sim, cfg, topology, ip_hosts, lowpans, tree)
            multicast = [(d.parent_link_address, d.members_below) for d in rpl_drivers]
        if routing.multicast == "smrf":
            for (name, host), (parent, below) in zip(ip_hosts.items(), multicast, strict=True):
                host.multicast_forwarder = Smrf(
                    sim,
                    lowpans[name],
                    sim.rng(f"smrf/{name}"),
                    parent,
                    below,
                    delay_s=routing.smrf_delay_s,
                    spread=routing.smrf_spread,
                    buffers=routing.smrf_buffers,
                )
        hosts, interfaces = dict(ip_hosts), dict(lowpans)
    interferers = build_interferers(cfg, medium, streams, topology.nodes)
    net = RadioNetwork(
        hosts=hosts,
        roles=dict(topology.roles),
        interfaces=interfaces,
        topology=topology,
        medium=medium,
        radios={r.name: r for r in radios},
        macs={m.name: m for m in macs},
        tree=tree,
        interferers=interferers,
        streams=streams,
        rpl=[d.rpl for d in rpl_drivers],
        prr_frame_bytes=required(cfg.radio, "network.radio").prr_frame_bytes,
        min_link_prr=routing.min_link_prr,
    )
    return net, cfg


def radio_layout(
    sim: Simulator,
    network: NetworkSettings,
    protocol: str,
    observers: Observers,
    subnet: Subnet = FIRST,
    offset_m: tuple[float, ...] | None = None,
) -> tuple[NetworkSettings, Streams, Topology, RadioMedium, list[Radio], Tree]:
    """What decides whether a radio network can work: its topology (shifted by
    `offset_m`), radios with their neighbour lists, and routing tree, checked (a
    TopologyError says why not). (settings, streams, topology, medium, radios, tree)"""
    cfg = network
    streams = RngStreams(network.seed).stream
    topology = build_topology(network, streams("topology"))
    if subnet.id_prefix:
        topology = topology.renamed(subnet.id_prefix)
        if offset_m:
            topology = topology.shifted(offset_m)
    medium, radios = build_radio(sim, cfg, topology, streams, observers)
    check_reach(topology, radios)
    gateway = topology.index(topology.ids("gateway")[0])
    routing = required(cfg.routing, "network.routing")
    tree = least_etx_tree(
        radios,
        gateway,
        required(cfg.radio, "network.radio").prr_frame_bytes,
        routing.min_link_prr,
        tree_gain_db(cfg, medium.frequency_mhz),
        medium.variation.spread(),
    )
    if protocol == "ndn" or routing.protocol == "static" or routing.parents == "tree":
        check_tree(topology, tree)
    else:
        check_connected(topology, radios, gateway)
    return cfg, streams, topology, medium, radios, tree


def check_network(network: NetworkSettings, protocol: str) -> None:
    """Check a radio network without simulating it (see radio_layout)."""
    radio_layout(Simulator(0), network, protocol, Observers())
    if network.second is not None:
        radio_layout(
            Simulator(0),
            second_network(network),
            protocol,
            Observers(),
            SECOND,
            network.second.offset_m,
        )


# --------------------------------------------------------------------- radio


def build_radio(
    sim: Simulator, cfg: NetworkSettings, topology: Topology, streams: Streams, observers: Observers
) -> tuple[RadioMedium, list[Radio]]:
    """The medium and one radio per node, with their neighbour lists."""
    radio_cfg = required(cfg.radio, "network.radio")
    medium = RadioMedium(sim, radio_cfg.channel, streams("radio/reception"), observers)
    chip = CHIPS[radio_cfg.chip]
    given = radio_cfg.energy
    currents = {
        "off_ma": chip.off_ma,
        "idle_ma": chip.idle_ma,
        "listen_ma": chip.rx_ma,
        "rx_ma": chip.rx_ma,
    }
    currents = {k: _given(getattr(given, k), v) for k, v in currents.items()}
    cca = _given(radio_cfg.cca_threshold_dbm, chip.cca_threshold_dbm)
    own = radio_cfg.nodes or {}
    unknown = sorted(set(own) - {n.id for n in topology.nodes})
    if unknown:
        raise TopologyError(f"network.radio.nodes: unknown node id {unknown[0]!r}")
    radios = []
    for i, node in enumerate(topology.nodes):
        mine = own.get(node.id)  # the node's own radio settings, if it has any
        own_sensitivity = mine.sensitivity_dbm if mine is not None else None
        own_tx_power = mine.tx_power_dbm if mine is not None else None
        sensitivity = _given(
            own_sensitivity, _given(radio_cfg.sensitivity_dbm, chip.sensitivity_dbm)
        )
        tx_power = _given(own_tx_power, _given(radio_cfg.tx_power_dbm, chip.tx_power_dbm))
        tx_ma = _given(given.tx_ma, chip.tx_current_ma(tx_power))
        energy = EnergyProfile(voltage_v=given.voltage_v, tx_ma=tx_ma, **currents)
        radio = Radio(
            medium,
            i,
            node.id,
            tx_power_dbm=tx_power,
            sensitivity_dbm=sensitivity,
            cca_threshold_dbm=cca,
            noise_floor_dbm=radio_cfg.noise_floor_dbm,
            energy=RadioEnergy(sim.now, energy),
        )
        radio.position = node.position
        medium.add_radio(radio)
        radios.append(radio)
    v = radio_cfg.variation  # one settings type per model
    pairs = connect(
        radios,
        frequency_mhz=medium.frequency_mhz,
        rng=streams("radio/shadowing"),
        prr_frame_bytes=radio_cfg.prr_frame_bytes,
        **pair_model(radio_cfg, topology),
    )
    if isinstance(v, NetworkRadioVariationRayleighSettings):
        medium.variation = RayleighFading(streams("radio/fading"))
    elif isinstance(v, NetworkRadioVariationGilbertElliottSettings):
        medium.variation = GilbertElliottLinks(
            streams("radio/fading"), pairs, v.good_s, v.bad_s, v.bad_loss_db
        )
    elif isinstance(v, NetworkRadioVariationGaussMarkovSettings):
        medium.variation = GaussMarkovLinks(streams("radio/fading"), pairs, v.sigma_db, v.tau_s)
    else:
        medium.variation = NoVariation()
    return medium, radios


def _given(value: _T | None, default: _T) -> _T:
    return default if value is None else value


def _decodable(a: Radio, b: Radio, mw: float) -> bool:
    return mw >= b.sensitivity_mw


def check_reach(topology: Topology, radios: list[Radio]) -> None:
    """Every node must reach (be decodable at) at least one other node."""
    for radio, node in zip(radios, topology.nodes, strict=True):
        if any(_decodable(radio, rcv, mw) for rcv, mw, _ in radio.neighbours):
            continue
        best = max(
            ((phy.mw_to_dbm(mw), rcv.name) for rcv, mw, _ in radio.neighbours),
            default=None,
        )
        strongest = f"strongest: {best[0]:.1f} dBm at {best[1]}" if best else "nobody in range"
        raise TopologyError(
            f"network: node {node.id!r} at {[round(c, 2) for c in node.position]} reaches no "
            f"other node ({strongest}; sensitivity {phy.mw_to_dbm(radio.sensitivity_mw):g} "
            "dBm): move it closer, or raise network.radio.tx_power_dbm"
        )


def tree_gain_db(cfg: NetworkSettings, frequency_mhz: float) -> float:
    """How much stronger every link is on the routing's `tree_channel` than on the
    network's own: the reference loss grows as 20 log10(f) (propagation.py), the rest
    of the path loss does not depend on the channel."""
    channel = required(cfg.routing, "network.routing").tree_channel
    path_loss = required(cfg.radio, "network.radio").path_loss
    if channel is None or (path_loss is not None and path_loss.reference_loss_db is not None):
        return 0.0  # (a reference loss given outright does not follow the frequency)
    return 20.0 * math.log10(frequency_mhz / phy.channel_center_mhz(channel))


def check_tree(topology: Topology, tree: Tree) -> None:
    missing = tree.unreached()
    if missing:
        names = ", ".join(topology.nodes[i].id for i in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise TopologyError(
            f"network: the routing tree from the gateway {topology.nodes[tree.root].id!r} does "
            f"not reach {names}{more} (no path of links with a reception ratio of at least "
            "network.routing.min_link_prr)"
        )


def check_connected(topology: Topology, radios: list[Radio], root: int) -> None:
    """RPL can only build a DODAG over links that work both ways."""
    # Each radio's decodable links (`_decodable`), by receiver index.
    heard = [
        {
            rcv.index
            for rcv, mw in zip(r.receivers, r.mean_mws, strict=True)
            if _decodable(r, rcv, mw)
        }
        for r in radios
    ]
    seen, stack = {root}, [root]
    while stack:
        a = stack.pop()
        for b in heard[a]:
            if b not in seen and a in heard[b]:
                seen.add(b)
                stack.append(b)
    missing = [topology.nodes[i].id for i in range(len(radios)) if i not in seen]
    if missing:
        raise TopologyError(
            f"network: {', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''} cannot "
            f"reach the gateway {topology.nodes[root].id!r} over links that work both ways"
        )


# --------------------------------------------------------------------- hosts


def _l2_hosts(
    sim: Simulator, topology: Topology, macs: list[CsmaMac], mtu: int | None
) -> tuple[dict[str, Node | L2Node], dict[str, HostInterface]]:
    hosts: dict[str, Node | L2Node] = {}
    interfaces: dict[str, HostInterface] = {}
    for i, (node, m) in enumerate(zip(topology.nodes, macs, strict=True)):
        host = L2Node(sim, node.id, i + 1)
        room = mac.MAX_FRAME_BYTES - mac.header_length(m.address, len(m.address)) - mac.FCS_BYTES
        iface = host.add_interface(min(mtu or room, room), m.params.pan_id)
        iface.attach_mac(m)
        host.address = m.address
        hosts[node.id], interfaces[node.id] = host, iface
    return hosts, interfaces


def pktbuf_sizes(
    cfg: NetworkSettings, topology: Topology, profiles: dict[str, DeviceProfile]
) -> dict[str, int]:
    """Each device's packet memory: its profile's, or `network.device.pktbuf_bytes`
    (a gateway with a profile of its own keeps that one's)."""
    device = cfg.device
    override = device.pktbuf_bytes if device is not None else None
    gateway = topology.ids("gateway")[0] if profiles else None
    sizes = {}
    for name, profile in profiles.items():
        if override is None or (
            name == gateway and device is not None and device.gateway_profile is not None
        ):
            sizes[name] = profile.pktbuf_bytes
        else:
            sizes[name] = override
    return sizes


def device_profiles(cfg: NetworkSettings, topology: Topology) -> dict[str, DeviceProfile]:
    """`network.device`: each node's device profile: its CPU for the IP stacks, and
    the packet memory of its MAC and 6LoWPAN layer (none: neither)."""
    device = cfg.device
    if device is None or (device.profile is None and device.gateway_profile is None):
        return {}
    gateway = topology.ids("gateway")[0]
    out = {}
    for node in topology.nodes:
        name = device.gateway_profile if node.id == gateway else None
        name = name or device.profile
        if name is not None:
            out[node.id] = get_profile(name)
    return out


def _ip_hosts(
    sim: Simulator, cfg: NetworkSettings, topology: Topology, macs: list[CsmaMac], prefix: bytes
) -> tuple[dict[str, Node], dict[str, LowpanInterface]]:
    hosts: dict[str, Node] = {}
    interfaces: dict[str, LowpanInterface] = {}
    app_layers: AppLayers = {}  # shared: how forwarders split datagrams into layers
    low = required(cfg.lowpan, "network.lowpan")
    for node, m in zip(topology.nodes, macs, strict=True):
        host = Node(sim, node.id)
        host.forwarding = True
        host.app_layers = app_layers
        reassembler = Reassembler(
            timeout_s=low.reassembly_timeout_s,
            max_datagrams=low.reassembly_datagrams,
            max_bytes=low.reassembly_bytes,
            contexts={0: prefix} if low.compression == "iphc" else None,
        )
        iface = LowpanInterface(
            host,
            m,
            prefix,
            sim.rng(f"lowpan/{node.id}"),
            compression=low.compression,
            reassembler=reassembler,
        )
        host.attach_interface(iface)
        host.set_default_route(None, None)  # routing gives it one (the root keeps none)
        host.join(ALL_NODES)
        host.join(ALL_RPL_NODES)
        hosts[node.id], interfaces[node.id] = host, iface
    return hosts, interfaces


def install_static_routes(
    topology: Topology,
    tree: Tree,
    hosts: dict[str, Node],
    interfaces: dict[str, LowpanInterface],
) -> None:
    """Default route to the parent, host routes to every descendant via the child on the way."""
    ids = [n.id for n in topology.nodes]
    for i, name in enumerate(ids):
        parent = tree.parent[i]
        if parent is not None:
            hosts[name].set_default_route(interfaces[name], interfaces[ids[parent]].link_local)
    # Walk up from every node: each ancestor reaches it through the child on the way.
    for d, name in enumerate(ids):
        target = interfaces[name].address
        child, ancestor = d, tree.parent[d]
        while ancestor is not None:
            up = ids[ancestor]
            hosts[up].add_route(target, interfaces[up], interfaces[ids[child]].link_local)
            child, ancestor = ancestor, tree.parent[ancestor]


def static_multicast(
    topology: Topology,
    tree: Tree,
    hosts: dict[str, Node],
    interfaces: dict[str, LowpanInterface],
) -> list[Multicast]:
    """For SMRF over the static tree, per node: its parent's MAC address and who
    below it is in which group (kept by the tree as nodes join and leave)."""
    ids = [n.id for n in topology.nodes]
    # Members below each node, per group: a count, so one leaving keeps the others.
    below: dict[str, dict[bytes, int]] = {name: {} for name in ids}
    index = {name: i for i, name in enumerate(ids)}

    def membership(name: str) -> Callable[[bytes, bool], None]:
        def changed(group: bytes, joined: bool) -> None:
            # Static routing: the ancestors learn of it at once (RPL carries it in DAOs).
            i = tree.parent[index[name]]
            while i is not None:
                counts = below[ids[i]]
                counts[group] = counts.get(group, 0) + (1 if joined else -1)
                if counts[group] <= 0:
                    del counts[group]
                i = tree.parent[i]

        return changed

    out: list[Multicast] = []
    for i, name in enumerate(ids):
        parent = tree.parent[i]
        parent_mac = interfaces[ids[parent]].mac.address if parent is not None else None
        hosts[name].group_listeners.append(membership(name))
        out.append((_constant(parent_mac), below[name].__contains__))
    return out


def _constant(value: bytes | None) -> Callable[[], bytes | None]:
    return lambda: value


def start_rpl(
    sim: Simulator,
    cfg: NetworkSettings,
    topology: Topology,
    hosts: dict[str, Node],
    interfaces: dict[str, LowpanInterface],
    tree: Tree,
) -> list[RplDriver]:
    """RPL on every node, the gateway the DODAG root, all starting at t = 0; with
    `routing.parents = "tree"` each node takes only its parent in `tree`."""
    routing = required(cfg.routing, "network.routing")
    params = RplParams(
        objective=routing.objective,
        dio_interval_min=routing.dio_interval_min,
        dio_interval_doublings=routing.dio_interval_doublings,
        dio_redundancy=routing.dio_redundancy,
        dao_ack=routing.dao_ack,
        max_routes=routing.max_routes,
        hop_rank=routing.rank == "hops",
    )
    # Absent keys keep RplParams' defaults (and existing scenarios their networks).
    given: dict[str, Any] = {  # RplParams' fields, of several types
        "dao_ack_timeout_s": routing.dao_ack_timeout_s,
        "default_lifetime": routing.default_lifetime,
        "lifetime_unit": routing.lifetime_unit_s,
        "max_neighbours": routing.max_neighbours,
        "etx_noack_penalty": routing.etx_noack_penalty,
        "max_group_routes": routing.max_group_routes,
        "dao_style": routing.dao_style,
    }
    params = replace(params, **{k: v for k, v in given.items() if v is not None})
    gateway = topology.ids("gateway")[0]
    params = replace(params, targets_per_dao=dao_targets_per_frame(interfaces[gateway]))
    ids = [n.id for n in topology.nodes]
    drivers: list[RplDriver] = []
    for i, node in enumerate(topology.nodes):
        iface = interfaces[node.id]
        parent = tree.parent[i]
        mine = params
        if routing.parents == "tree" and parent is not None:
            mine = replace(params, fixed_parent=interfaces[ids[parent]].link_local)
        rpl = RplNode(
            sim.rng(f"rpl/{node.id}"),
            mine,
            iface.link_local,
            iface.address,
            root=node.id == gateway,
            dodag_id=interfaces[gateway].address,
        )
        driver = RplDriver(sim, hosts[node.id], iface, rpl)
        sim.at(0.0, driver.start)
        drivers.append(driver)
    return drivers


@dataclass(frozen=True)
class UplinkHost:
    """A gateway's host: its name, and the addresses of the link's two ends."""

    name: str
    gateway_address: str
    host_address: str


FIRST_HOST = UplinkHost("uplink", "fd01::1", "fd01::2")
SECOND_HOST = UplinkHost("b.uplink", "fd04::1", "fd04::2")


def _uplink(
    sim: Simulator,
    cfg: NetworkUplinkSettings,
    net: RadioNetwork,
    where: UplinkHost,
    observers: Observers,
) -> PointToPointLink:
    """The gateway's host behind a serial line or Ethernet; in `net` its role is
    `uplink` (the client role `uplink` of the first network names it)."""
    hosts, interfaces = net.hosts, net.interfaces
    gateway = _ip(net.node("gateway"))
    host = Node(sim, where.name)
    if cfg.kind == "serial":
        gw_if, host_if, link = _serial(
            sim, cfg, gateway, where.gateway_address, host, where.host_address, observers
        )
    else:
        gw_if, host_if, link = _ethernet(
            sim, cfg, gateway, where.gateway_address, host, where.host_address, observers
        )
    if cfg.profile is not None:
        host.use_cpu(Cpu(sim), uplink_profile(cfg))
    hosts[where.name], interfaces[where.name] = host, host_if
    net.roles["uplink"] = (where.name,)
    # The border router's default route leads out of the radio network, to the uplink;
    # groups (multicast) it sends go down the DODAG, into the radio.
    gateway.group_interface = gateway.interfaces[0]
    gateway.set_default_route(gw_if, None)
    host.set_default_route(host_if, None)
    host.app_layers = gateway.app_layers
    return link


def _ethernet(
    sim: Simulator,
    cfg: EthernetSettings,
    a: Node,
    a_address: str,
    b: Node,
    b_address: str,
    observers: Observers,
) -> tuple[Interface, Interface, PointToPointLink]:
    """A point-to-point Ethernet link between hosts a and b, with a new interface on
    each at the given address. (a's interface, b's interface, the link)"""
    a_if = a.add_interface(a_address, cfg.mtu_bytes)
    b_if = b.add_interface(b_address, cfg.mtu_bytes)
    link = PointToPointLink(
        sim,
        a_if,
        b_if,
        rate_bps=cfg.rate_bps,
        delay_s=cfg.delay_s,
        queue_packets=cfg.queue_packets,
        observers=observers,
    )
    return a_if, b_if, link


def uplink_profile(cfg: NetworkUplinkSettings) -> DeviceProfile:
    """The uplink host's device profile, slowed by `cpu_slowdown` and with its
    measured spreads drawn if `cost_spread` asks for them."""
    assert cfg.profile is not None
    profile = get_profile(cfg.profile)
    if cfg.cpu_slowdown is not None and cfg.cpu_slowdown != 1:
        profile = profile.slowed(cfg.cpu_slowdown)
    if cfg.cost_spread:  # (the schema checked the profile has one)
        profile = profile.with_measured_spread()
    return profile


def _serial(
    sim: Simulator,
    cfg: NetworkUplinkSettings,
    a: Node,
    a_address: str,
    b: Node,
    b_address: str,
    observers: Observers,
) -> tuple[Interface, Interface, PointToPointLink]:
    """The serial line between a border router (a) and its host (b): the packets'
    framed bytes at the UART's rate, no propagation delay (net/serial.py); with
    `busy_wait`, the router's CPU waits for the bytes it writes (net/busy_wait.py)."""
    framed = serial.LINE_BYTES[cfg.framing or "slip"]
    rate_bps = serial.line_rate_bps(cfg.baud or SLIP_BAUD)
    a_if: Interface
    if cfg.busy_wait:
        gate = SerialBusyWait(
            sim,
            8 / rate_bps,
            framed,
            fifo_frames=cfg.radio_fifo_frames or 1,
            input_packets=cfg.input_packets or 2,
        )
        a_if = BusyWaitInterface(
            a, f"{a.name}-serial", ip.address_bytes(a_address), cfg.mtu_bytes, gate
        )
        radio_mac = a.interfaces[0].mac
        if not isinstance(radio_mac, ContikiCsmaMac):
            raise TopologyError(
                "network.uplink.busy_wait models Contiki's border router: it needs "
                'network.mac.kind = "contiki"'
            )
        a.attach_interface(a_if)
        radio_mac.gate = gate
    else:
        a_if = a.add_interface(a_address, cfg.mtu_bytes)
    b_if = b.add_interface(b_address, cfg.mtu_bytes)
    link = PointToPointLink(
        sim,
        a_if,
        b_if,
        rate_bps=rate_bps,
        queue_packets=cfg.queue_packets,
        observers=observers,
        framed_bytes=framed,
    )
    return a_if, b_if, link


def _join(
    sim: Simulator,
    cfg: NetworkSecondSettings,
    first: RadioNetwork,
    a_role: str,
    second: RadioNetwork,
    b_role: str,
    observers: Observers,
) -> PointToPointLink:
    """An Ethernet link between the first network's node of `a_role` and the second's
    of `b_role` (their gateways, or their gateways' hosts). The second network's
    gateway sends what leaves its network over it; the first reaches the second
    network's nodes (and its host) through it, a route per node."""
    a, b = _ip(first.node(a_role)), _ip(second.node(b_role))
    a_if, b_if, link = _ethernet(sim, cfg, a, GATEWAYS_LINK[0], b, GATEWAYS_LINK[1], observers)
    a.forwarding = True  # a host: between its gateway and the other host
    gateway = _ip(second.node("gateway"))
    gateway.group_interface = gateway.interfaces[0]  # its groups go down its own DODAG
    if b is gateway:
        b.set_default_route(b_if, None)
    else:
        # The second host: its gateway's way out is the host; the host's, the Ethernet
        # (the second network's nodes it reaches through its gateway).
        b.set_default_route(b_if, None)
        b.forwarding = True
        host_link = second.uplink
        assert host_link is not None  # b is the second gateway's host
        to_gateway = host_link.b if host_link.a.node is gateway else host_link.a
        for node in second.hosts.values():
            if node is not b:
                for iface in node.interfaces:
                    b.add_route(iface.address, to_gateway)
    for node in second.hosts.values():
        for iface in node.interfaces:
            if iface is not b_if:
                a.add_route(iface.address, a_if)
    a.add_route(b_if.address, a_if)
    return link


def build_interferers(
    cfg: NetworkSettings, medium: RadioMedium, streams: Streams, nodes: Sequence[NodeSpec]
) -> list[WifiInterferer]:
    """The Wi-Fi interferers: for each of its emitters (the station, and for iperf
    traffic its access point, on the station's floor of its building), the power
    each radio (`nodes`' order) takes in its channel, from the same path loss as
    the radios' links (distance, floors or outer walls between, one shadowing
    draw per emitter and radio) and the share of the emitter's spectrum in the
    channel (wifi.py)."""
    out: list[WifiInterferer] = []
    if not cfg.interferers:
        return out
    radio_cfg = required(cfg.radio, "network.radio")
    path_loss = path_loss_of(radio_cfg)
    shadowing_db = radio_cfg.path_loss.shadowing_db
    shadow = streams("interferers/shadowing")
    for k, spec in enumerate(cfg.interferers):
        # A stepped sweep starts at its first step's rate (workload/group_query.py).
        steps = (*(spec.earlier_rates_bps or ()), spec.rate_bps)
        traffic = WifiTraffic(
            steps[0],
            pattern=spec.pattern,
            start_s=spec.start_s,
            phy_rate_bps=spec.phy_rate_bps,
            payload_bytes=spec.payload_bytes,
            beacons=spec.beacons,
            frame_bytes=spec.frame_bytes,
            train_frames=spec.train_frames,
        )
        station = _xyz(spec.position)
        places = {STATION: station}
        if spec.pattern == "iperf":
            ap = spec.ap_position
            places[ACCESS_POINT] = _xyz(ap) if ap is not None else (station[0] + 1.0, *station[1:])
        # The mean power (mW, whole spectrum) each emitter puts at each radio.
        powers: dict[str, list[float]] = {}
        for emitter, place in places.items():
            powers[emitter] = []
            for radio, node in zip(medium.radios, nodes, strict=True):
                d = math.dist(radio.position, place)
                floors, facades = between(node.building, node.floor, spec.building, spec.floor)
                loss = path_loss.mean_loss_db(d, medium.frequency_mhz, floors, facades)
                loss += shadow.gauss(0.0, shadowing_db)
                powers[emitter].append(phy.dbm_to_mw(spec.tx_power_dbm - loss))
        targets: dict[tuple[str, str], list[tuple[Radio, float]]] = {}
        for emitter, modulation in traffic.emitters:
            fraction = in_band_fraction(spec.channel, medium.channel, modulation)
            targets[emitter, modulation] = [
                (radio, mw * fraction)
                for radio, mw in zip(medium.radios, powers[emitter], strict=True)
                if mw * fraction
                >= radio.noise_mw * 10.0 ** (-radio_cfg.interference_floor_db / 10.0)
            ]
        interferer = WifiInterferer(
            f"wifi{k}", traffic, targets, streams(f"interferers/{k}"), steps
        )
        interferer.start()
        out.append(interferer)
    return out


def _leak_between(
    cfg: NetworkSettings, streams: Streams, first: RadioNetwork, second: RadioNetwork
) -> None:
    """Each network's frames reach the other's radios through the receivers'
    rejection of another channel (chips.py): as noise, and sensed by CCA. The
    same path loss as every link (one shadowing draw per pair of radios, for
    both directions)."""
    radio_cfg = required(cfg.radio, "network.radio")
    chip = CHIPS[radio_cfg.chip]
    path_loss = path_loss_of(radio_cfg)
    sigma = radio_cfg.path_loss.shadowing_db
    below_noise = 10.0 ** (-radio_cfg.interference_floor_db / 10.0)
    shadow = streams("radio/adjacent-channel-shadowing")
    a_medium, b_medium = first.medium, second.medium
    a_nodes, b_nodes = first.topology.nodes, second.topology.nodes
    a_to_b = leak_db(chip.rejection_db(b_medium.channel, a_medium.channel))
    b_to_a = leak_db(chip.rejection_db(a_medium.channel, b_medium.channel))
    for a, a_node in zip(a_medium.radios, a_nodes, strict=True):
        for b, b_node in zip(b_medium.radios, b_nodes, strict=True):
            d = math.dist(a_node.position, b_node.position)
            floors, facades = between(a_node.building, a_node.floor, b_node.building, b_node.floor)
            loss = path_loss.mean_loss_db(d, a_medium.frequency_mhz, floors, facades)
            loss += shadow.gauss(0.0, sigma)
            for tx, rx, medium, rejected_db in ((a, b, b_medium, a_to_b), (b, a, a_medium, b_to_a)):
                mw = phy.dbm_to_mw(tx.tx_power_dbm - loss - rejected_db)
                if mw >= rx.noise_mw * below_noise:
                    if tx.leak is None:
                        tx.leak = LeakingTransmitter(f"{tx.name} into channel {medium.channel}")
                    rx.interferers.append((tx.leak, mw))


def _xyz(position: Sequence[float]) -> tuple[float, ...]:
    return tuple(position) + (0.0,) * (3 - len(position))
