"""NDN in a run: a consumer (role client) and a producer (role producer).

On a pair network they share one 802.15.4-like link (S5's set-up); on a
radio network every node runs an NDN forwarder with a unicast face to each
of its neighbours in the routing tree (world/networks/radio.py), and the
forwarders from the consumer to the producer have the producer's prefix in
their FIB towards it, so Interests travel the tree hop by hop and Data
comes back on the PIT's breadcrumbs. The consumer fetches one Data per
item, without pipelining; the producer serves the prefix. Where the
Data comes from is the scenario's `protocol.ndn.data_source`:

- producer-app: the producer's application creates and signs each Data when
  its Interest arrives (S5's "fresh" case);
- producer-cache: the producer's Content Store holds every Data before the
  run (S5's "remote cache");
- consumer-cache: the consumer's own Content Store holds them (S5's "local
  cache"): no frame leaves the consumer.

Both nodes spend the CPU time their device profile gives each operation:
a forwarding decision per packet, creating an Interest, creating and signing
a Data (with ECDSA on an M3, about 270 ms).
"""

from __future__ import annotations

from typing import Any, Protocol

from iotbench.apps.ndn import NdnNode
from iotbench.apps.requesters import Done, ItemClient
from iotbench.apps.sensors import make_resource
from iotbench.metrics.items import Item
from iotbench.proto.ndn.app import NdnApp
from iotbench.proto.ndn.data import Data, make_data
from iotbench.proto.ndn.forwarder import ForwarderConfig
from iotbench.proto.ndn.interest import Interest
from iotbench.proto.ndn.name import Name
from iotbench.proto.ndn.profiles import DeviceProfile, get_profile
from iotbench.proto.ndn.signing import (
    DigestSha256Signer,
    EcdsaSha256Signer,
    HmacSha256Signer,
    Signer,
    UnsignedSigner,
    generate_ecdsa_key,
)
from iotbench.scenarios.settings import RunSettings, required
from iotbench.scenarios.settings_types import ProtocolNdnSettings
from iotbench.sim import Simulator
from iotbench.world.networks import Network, PairNetwork, RadioNetwork

# The profile operation that creating a Data with each signature costs.
CREATE_OPERATION = {
    "ecdsa": "data_create_ecdsa",
    "hmac": "data_create_hmac",
    "digest": "data_create_digest",
    "none": "data_create_unsigned",
}


class Reading(Protocol):
    """A sensor (apps/sensors.py): what a Data's content is made from."""

    def read(self) -> bytes: ...


def make_signer(kind: str, sim: Simulator, prefix: Name) -> Signer:
    rng = sim.rng("ndn/keys")
    # ECDSA and HMAC need a KeyLocator (NDN packet spec, Signature); a short key
    # name keeps small Data small, as a constrained producer would keep it.
    key_name = prefix.append("K")
    if kind == "ecdsa":
        return EcdsaSha256Signer(generate_ecdsa_key(rng), key_name=key_name)
    if kind == "hmac":
        return HmacSha256Signer(rng.getrandbits(256).to_bytes(32, "big"), key_name=key_name)
    if kind == "none":
        return UnsignedSigner()
    return DigestSha256Signer()


class DataMaker:
    """Data of about `size` bytes: a sensor reading, padded or cut to reach the size.

    A DER-encoded ECDSA signature is 70 to 72 bytes, so the size is reached
    within a byte or two.
    """

    def __init__(
        self, signer: Signer, size: int, sensor: Reading, freshness_ms: int | None
    ) -> None:
        self.signer = signer
        self.size = size
        self.sensor = sensor
        self.freshness_ms = freshness_ms

    def make(self, name: Name) -> Data:
        room = max(0, self.size - len(self._make(name, b"").wire))
        content = (self.sensor.read() + b" " * room)[:room]
        data = self._make(name, content)
        while len(data.wire) > self.size and content:  # the signature came out longer
            content = content[: len(content) - (len(data.wire) - self.size)]
            data = self._make(name, content)
        return data

    def _make(self, name: Name, content: bytes) -> Data:
        return make_data(name, content, signer=self.signer, freshness_period_ms=self.freshness_ms)


class NdnConsumer:
    """Fetches /prefix/<item number> for each item (an ItemClient)."""

    def __init__(self, node: NdnNode, app: NdnApp, prefix: Name, lifetime_ms: int) -> None:
        self.node = node
        self.app = app
        self.prefix = prefix
        self.lifetime_ms = lifetime_ms

    def name_of(self, index: int) -> Name:
        return self.prefix.append(str(index))

    def start(self, item: Item, done: Done, handed_over: object = None) -> None:
        # (Request-response: the Data ends the item; nothing is handed over.)
        node = self.node
        cost = node.interest_cost_s

        def on_data(interest: Interest, data: Data) -> None:
            done(item, True, len(data.content))

        def on_timeout(interest: Interest) -> None:
            done(item, False, 0)

        def express() -> None:
            # Its lifetime counts from now, not from the forwarder's last event.
            self.app.express_interest(
                self.name_of(item.index), self.lifetime_ms, on_data, on_timeout, now=node.sim.now
            )
            node.pump()

        node.cpu.run(cost, express)


def build_ndn(sim: Simulator, net: Network, config: RunSettings) -> ItemClient:
    cfg = required(config.protocol.ndn, "protocol.ndn")
    workload = config.workload
    profile = get_profile(cfg.profile)
    forwarder_config = scenario_forwarder_config(cfg)
    prefix = Name(cfg.prefix)
    consumer_host, producer_host = net.node("client"), net.node("producer")
    if isinstance(net, PairNetwork):  # one link, one face each way
        consumer = NdnNode(sim, "client", profile, forwarder_config, sim.rng("ndn/client"))
        producer = NdnNode(sim, "server", profile, forwarder_config, sim.rng("ndn/server"))
        to_producer = consumer.add_l2_face(net.l2_interface(consumer_host), producer_host.address)
        producer.add_l2_face(net.l2_interface(producer_host), consumer_host.address)
        consumer.forwarder.add_route(prefix, to_producer)
        others: list[NdnNode] = []
    else:
        assert isinstance(net, RadioNetwork)  # a network is a pair or a radio network
        nodes = tree_forwarders(sim, net, profile, forwarder_config)
        consumer, producer = nodes[consumer_host.name], nodes[producer_host.name]
        route_prefix(net, nodes, prefix, consumer_host.name, producer_host.name)
        others = [n for n in nodes.values() if n is not consumer and n is not producer]

    sensor = make_resource(workload.resource, sim.rng("sensor"))
    maker = DataMaker(
        make_signer(cfg.signature, sim, prefix),
        cfg.data_bytes,
        sensor,
        cfg.freshness_period_ms,
    )
    consumer_app = NdnApp.create(consumer.forwarder)
    producer_app = NdnApp.create(producer.forwarder)
    item_client = NdnConsumer(consumer, consumer_app, prefix, cfg.interest_lifetime_ms)

    create_cost = profile.cost_s(CREATE_OPERATION[cfg.signature])

    def on_interest(interest: Interest) -> None:
        def answer() -> None:
            producer_app.put_data(maker.make(interest.name), now=sim.now)
            producer.pump()

        producer.cpu.run(create_cost, answer)

    # The producer's application answers whatever its cache cannot.
    producer_app.register_prefix(prefix, on_interest)
    source = cfg.data_source
    if source != "producer-app":
        cache_app = producer_app if source == "producer-cache" else consumer_app
        for index in range(workload.items):
            cache_app.put_data(maker.make(item_client.name_of(index)), now=sim.now)
    for node in (consumer, producer, *others):
        node.pump()
    return item_client


def scenario_forwarder_config(cfg: ProtocolNdnSettings, **overrides: Any) -> ForwarderConfig:
    """`protocol.ndn`'s tables and timers; what it leaves out, the device profile's."""
    tables = {
        key: getattr(cfg, key)
        for key in (
            "pit_max_entries",
            "cs_max_bytes",
            "cs_max_entries",
            "fib_max_entries",
            "heap_bytes",
        )
        if getattr(cfg, key) is not None
    }
    if cfg.heap_bytes is not None:  # CCN-lite: the heap bounds the PIT, no count does
        tables.setdefault("pit_max_entries", None)
    return get_profile(cfg.profile).forwarder_config(
        # The constrained stacks S4 and S5 describe send no Nacks.
        send_nacks=False,
        pit_overflow=cfg.pit_overflow,
        retx_max=cfg.retx_max,
        retx_interval_s=cfg.retx_interval_s,
        nonce_check=cfg.nonce_check,
        **{**tables, **overrides},
    )


def tree_forwarders(
    sim: Simulator, net: RadioNetwork, profile: DeviceProfile, forwarder_config: ForwarderConfig
) -> dict[str, NdnNode]:
    """An NDN forwarder on every node of a radio network, with a unicast face to each
    neighbour in the routing tree (faces[node][neighbour] = face id)."""
    tree = net.tree
    ids = list(net.hosts)
    nodes = {
        name: NdnNode(sim, name, profile, forwarder_config, sim.rng(f"ndn/{name}")) for name in ids
    }
    for i, name in enumerate(ids):
        parent = tree.parent[i]
        if parent is None:
            continue
        child_node, parent_node = nodes[name], nodes[ids[parent]]
        child_host, parent_host = net.hosts[name], net.hosts[ids[parent]]
        child_node.faces[ids[parent]] = child_node.add_l2_face(
            net.l2_interface(child_host), net.address(parent_host)
        )
        parent_node.faces[name] = parent_node.add_l2_face(
            net.l2_interface(parent_host), net.address(child_host)
        )
    return nodes


def route_prefix(
    net: RadioNetwork, nodes: dict[str, NdnNode], prefix: Name, consumer: str, producer: str
) -> None:
    """FIB entries for `prefix` along the tree path from the consumer to the producer."""
    path = net.tree_path(consumer, producer)
    for here, there in zip(path, path[1:]):
        nodes[here].forwarder.add_route(prefix, nodes[here].faces[there])
