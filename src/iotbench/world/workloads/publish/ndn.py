"""The publish workload over NDN (S4's `ndn` and `ndn-inot`): senders for world/workloads/publish/workload.py.

As S4's code runs it (5G-I3/ACM-ICN-2018, apps/ndn_vanilla and
apps/ndn_ipush, on CCN-lite): every node of the radio network runs a
forwarder with a unicast face to each of its neighbours in the routing tree
(world/protocols/ndn.py), and forwards hop by hop, each forwarder retransmitting an
Interest that got no Data (`protocol.ndn.retx_max`, `retx_interval_s`; S4: 4
times, 2 s apart, with the Interest's own nonce, so a next hop that still
holds it drops the copy: `protocol.ndn.nonce_check = "ccn-lite"`).

Names: producer i's prefix is `protocol.ndn.prefix` (S4: /i3) followed by
its link-layer address as RIOT prints it (`aa:bb:...:hh`), and its reading n
is <prefix>/<address>/<resource>/<n, 4 digits>, the resource being the last
segment of `workload.path` (S4: gasval). Data are CCN-lite's unsigned form
with `protocol.ndn.signature = "none"`: an empty MetaInfo, SignatureType
DigestSha256 and an empty SignatureValue, 90 bytes for a reading.

The tree: before the study measured, HoPP built it (the gateway its root, a
PAM tree) and each producer announced its prefix up it (`hp`), which left on
every node a route /<prefix> towards its parent and, on every node of a
producer's path, a route <producer's prefix> towards the child on the way;
then HoPP was stopped (`he`). Those routes are what a run starts with, along
the shared tree; HoPP's set-up messages came before the measurement and are
not part of a run.

- `pull` (S4's `ndn`): the gateway asks the producers in turn, one loop over
  them (each step a wait divided by their number), for
  <producer's prefix>/<resource>/<k> in its k-th round, and the producer's
  application creates that Data when the Interest comes (CCN-lite's local
  producer) and puts it in its Content Store, which answers. The request is
  the item; it is lost when its Interest expires unanswered at the gateway.
  Polled (unscheduled, `workload.poll_interval_s`), the producers publish
  their readings into their Content Stores as they take them, and the
  gateway asks each poll for the lowest-numbered reading it has neither had
  nor an Interest out for: an Interest for a reading not taken yet waits in
  the PITs on the way until the reading exists (its Data satisfies it) or it
  expires.
- `inot` (S4's `ndn-inot`, Interest Notification): the producer sends each
  reading as the last component of an Interest named
  <producer's prefix>/<resource>/<n>/<reading> up the tree on the /<prefix>
  route; the gateway's application takes it and answers with a Data of the
  same name carrying "ACK" and its terminating zero, which acknowledges it
  hop by hop. A reading whose Interest expires unanswered at its producer is
  given up (unless it reached the gateway and only the acknowledgement was
  lost).

Creating an Interest or a Data costs the CPU time of the node's device
profile, and so does every forwarding decision.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from iotbench.apps.ndn import NdnNode
from iotbench.apps.readings import notification_id, read_id, reading_counter, reading_id
from iotbench.proto.ndn.app import NdnApp, OnData, OnTimeout
from iotbench.proto.ndn.data import Data, make_data
from iotbench.proto.ndn.forwarder import Forwarder
from iotbench.proto.ndn.interest import Interest
from iotbench.proto.ndn.name import Name
from iotbench.proto.ndn.profiles import get_profile
from iotbench.scenarios.settings import required
from iotbench.scenarios.settings_types import RunSettings
from iotbench.sim import Simulator
from iotbench.sim.cpu import Cpu
from iotbench.world.networks import Network, RadioNetwork
from iotbench.world.protocols.ndn import (
    CREATE_OPERATION,
    make_signer,
    scenario_forwarder_config,
    tree_forwarders,
)

if TYPE_CHECKING:
    from iotbench.world.workloads.publish.sender import Publisher

#: apps/ndn_ipush: the acknowledgement's content, "ACK" and the zero snprintf ends it with.
ACK_CONTENT = b"ACK\x00"


def address_text(address: bytes) -> str:
    """A link-layer address as RIOT's gnrc_netif_addr_to_str writes it: aa:bb:..."""
    return ":".join(f"{byte:02x}" for byte in address)


class NdnTree:
    """What the NDN exchanges share: a forwarder on every node, the producers' names,
    the routes HoPP's set-up leaves, and the CPU cost of creating packets."""

    def __init__(
        self, sim: Simulator, network: Network, config: RunSettings, **overrides: object
    ) -> None:
        if not isinstance(network, RadioNetwork):  # NDN runs straight over 802.15.4
            raise TypeError("NDN's publish exchanges need a radio network")
        cfg = required(config.protocol.ndn, "protocol.ndn")
        net = network
        self.sim = sim
        self.net = net
        self.lifetime_ms = cfg.interest_lifetime_ms
        self.prefix = Name(cfg.prefix)
        self.resource = config.workload.path.rstrip("/").rsplit("/", 1)[-1] or "data"
        profile = get_profile(cfg.profile)
        self.nodes = tree_forwarders(sim, net, profile, scenario_forwarder_config(cfg, **overrides))
        self.gateway_name = net.node("client").name
        self.gateway = self.nodes[self.gateway_name]
        device = config.network.device
        gateway_profile = device.gateway_profile if device is not None else None
        if gateway_profile is not None:  # network.device: the gateway's own device
            self.gateway.profile = get_profile(gateway_profile)
        self.gateway_app = NdnApp.create(self.gateway.forwarder)
        hosts = net.nodes("producer")
        self.producer_names = [host.name for host in hosts]
        self.producers = [self.nodes[name] for name in self.producer_names]
        self.apps = [NdnApp.create(node.forwarder) for node in self.producers]
        self.prefixes = [self.prefix.append(address_text(net.address(host))) for host in hosts]
        self.signature = cfg.signature
        self.signers = [make_signer(self.signature, sim, p) for p in self.prefixes]
        self.gateway_signer = make_signer(self.signature, sim, self.prefix)
        self._create_data = CREATE_OPERATION[self.signature]

    def hopp_routes(self, down: bool = True) -> None:
        """The FIB HoPP's set-up leaves: /<prefix> towards the parent on every node but
        the root; with `down`, each producer's prefix towards the child on the way, on
        its path (what the pulls follow)."""
        net, nodes = self.net, self.nodes
        tree = net.tree
        ids = list(net.hosts)
        for i, name in enumerate(ids):
            parent = tree.parent[i]
            if parent is not None:
                nodes[name].forwarder.add_route(self.prefix, nodes[name].faces[ids[parent]])
        if not down:
            return
        for producer, prefix in zip(self.producer_names, self.prefixes, strict=True):
            path = net.tree_path(self.gateway_name, producer)
            for here, there in zip(path, path[1:], strict=False):
                nodes[here].forwarder.add_route(prefix, nodes[here].faces[there])

    def create_data_s(self, node: NdnNode) -> float:
        """The CPU time `node` spends creating (and signing) a Data."""
        return node.profile.cost_s(self._create_data)

    def reading_name(self, producer: int, counter: int) -> Name:
        """<producer's prefix>/<resource>/<counter, 4 digits>: the name of one reading."""
        return self.prefixes[producer].append(self.resource).append(f"{counter:04d}")

    def data(self, producer: int | None, name: Name, content: bytes) -> Data:
        """A Data of producer `producer` (None: the gateway's) as the scenario's nodes
        write it (protocol.ndn.signature; none: CCN-lite's unsigned form)."""
        signer = self.gateway_signer if producer is None else self.signers[producer]
        return make_data(name, content, signer=signer, meta_info=self.signature == "none")

    def put_data(
        self, node: NdnNode, app: NdnApp, data: Data, then: Callable[[], None] | None = None
    ) -> None:
        """Create `data` on `node` (its CPU time), then hand it to the forwarder through
        `app` (after `then()`, when given)."""

        def put() -> None:
            if then is not None:
                then()
            app.put_data(data, now=self.sim.now)
            node.pump()

        node.cpu.run(self.create_data_s(node), put)

    def express(
        self, node: NdnNode, app: NdnApp, name: Name, on_data: OnData, on_timeout: OnTimeout
    ) -> None:
        """Create an Interest on `node` (its CPU time), then send it."""

        def send() -> None:
            app.express_interest(name, self.lifetime_ms, on_data, on_timeout, now=self.sim.now)
            node.pump()

        node.cpu.run(node.interest_cost_s, send)

    def app_retransmissions(self) -> int:
        """NDN retransmits hop by hop: the forwarders' retransmitted Interests."""
        return sum(node.forwarder.counters.retransmissions for node in self.nodes.values())

    def pump_all(self) -> None:
        for node in self.nodes.values():
            node.pump()

    def counter_of(self, name: Name) -> int | None:
        """The reading number in <prefix>/<address>/<resource>/<n>; None if none."""
        at = len(self.prefix) + 2
        try:
            return int(name[at].value)
        except (IndexError, ValueError):
            return None


class NdnSender:
    """What every NDN sender reports through its tree (world/workloads/publish/workload.py's Sender)."""

    tree: NdnTree
    requests: int | None = None  # a push, unless a sender counts its polls
    schedule = "round-robin"

    def start(self) -> None:
        pass

    def ready(self, producer: int) -> bool:
        return True

    def app_retransmissions(self) -> int:
        return self.tree.app_retransmissions()

    def forwarders(self) -> dict[str, Forwarder]:
        return {name: node.forwarder for name, node in self.tree.nodes.items()}

    def protocol_metrics(self) -> dict[str, float | int]:
        return {}

    def producer_cpus(self) -> list[Cpu | None]:
        return [node.cpu for node in self.tree.producers]


class NdnPull(NdnSender):
    """ndn: the gateway asks each producer in turn for a reading by name."""

    drives = "pull"
    requests: int = 0  # Interests the gateway expressed

    def __init__(self, work: Publisher, sim: Simulator, net: Network, config: RunSettings) -> None:
        self.work = work
        self.sim = sim
        self.tree = tree = NdnTree(sim, net, config)
        tree.hopp_routes()
        self.producers = tree.producers
        count = len(self.producers)
        self.polled = config.workload.poll_interval_s is not None
        # Polled: what the gateway has had of each producer, what it has an Interest
        # out for, and when it first asked for each reading it has not had (a
        # reading's transaction begins with the first Interest for its name:
        # EXPERIMENTS.md, S4).
        self.had: list[set[int]] = [set() for _ in range(count)]
        self.asked: list[set[int]] = [set() for _ in range(count)]
        self.first_asked: list[dict[int, float]] = [{} for _ in range(count)]
        for index, (app, prefix) in enumerate(zip(tree.apps, tree.prefixes, strict=True)):
            app.register_prefix(prefix, partial(self._on_interest, index))
        tree.pump_all()
        self.requests = 0  # Interests the gateway expressed

    # ---- the producer -----------------------------------------------------------------

    def _on_interest(self, producer: int, interest: Interest) -> None:
        """An Interest its Content Store could not answer. Scheduled: the value now,
        as a Data of the asked name; polled: nothing (it waits for the reading)."""
        if self.polled:
            return
        counter = self.tree.counter_of(interest.name)
        if counter is None:
            return
        content = self.work.reading_for(reading_id(producer, counter))
        tree = self.tree
        data = tree.data(producer, interest.name, content)
        tree.put_data(tree.producers[producer], tree.apps[producer], data)

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        """Polled: the producer publishes a reading into its Content Store (any Interest
        waiting for it is satisfied)."""
        tree = self.tree
        name = tree.reading_name(producer, reading_counter(rid))
        tree.put_data(
            tree.producers[producer], tree.apps[producer], tree.data(producer, name, payload)
        )

    # ---- the gateway ------------------------------------------------------------------

    def request(self, producer: int, rid: int) -> None:
        """Scheduled: ask for the reading of this round (the item)."""
        tree = self.tree
        self.requests += 1

        def on_data(interest: Interest, data: Data) -> None:
            self.work.delivered(rid, len(data.content))

        def on_timeout(interest: Interest) -> None:
            self.work.failed(rid)

        name = tree.reading_name(producer, reading_counter(rid))
        tree.express(tree.gateway, tree.gateway_app, name, on_data, on_timeout)

    def poll(self, producer: int) -> None:
        """Polled: ask for the lowest-numbered reading neither had nor asked for."""
        had, asked = self.had[producer], self.asked[producer]
        counter = 0
        while counter in had or counter in asked:
            counter += 1
        asked.add(counter)
        self.requests += 1
        first = self.first_asked[producer]
        since = first.setdefault(counter, self.sim.now)
        tree = self.tree

        def on_data(interest: Interest, data: Data) -> None:
            asked.discard(counter)
            had.add(counter)
            first.pop(counter, None)
            self.work.arrived(data.content, since=since)

        def on_timeout(interest: Interest) -> None:
            asked.discard(counter)

        name = tree.reading_name(producer, counter)
        tree.express(tree.gateway, tree.gateway_app, name, on_data, on_timeout)


class NdnInterestNotification(NdnSender):
    """ndn-inot: each reading rides an Interest to the gateway; a Data acknowledges it."""

    drives = "push"
    content_id = staticmethod(notification_id)

    def __init__(self, work: Publisher, sim: Simulator, net: Network, config: RunSettings) -> None:
        self.work = work
        self.sim = sim
        self.tree = tree = NdnTree(sim, net, config)
        # No routes down: the gateway's application takes every notification (in
        # CCN-lite its local producer sees an Interest before the FIB does), and the
        # acknowledgements follow the PIT's breadcrumbs.
        tree.hopp_routes(down=False)
        self.producers = tree.producers
        tree.gateway_app.register_prefix(tree.prefix, self._on_interest)
        tree.pump_all()

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        tree = self.tree
        name = tree.reading_name(producer, reading_counter(rid)).append(payload)

        def on_timeout(interest: Interest) -> None:
            self.work.failed(rid)  # no-op when it arrived and only the ack was lost

        tree.express(tree.producers[producer], tree.apps[producer], name, _acknowledged, on_timeout)

    def _on_interest(self, interest: Interest) -> None:
        tree = self.tree
        payload = interest.name[-1].value if len(interest.name) else b""
        if read_id(payload) is None:
            return
        self.work.arrived(payload)
        ack = tree.data(None, interest.name, ACK_CONTENT)
        tree.put_data(tree.gateway, tree.gateway_app, ack)


def _acknowledged(interest: Interest, data: Data) -> None:
    pass  # the reading counted when it reached the gateway
