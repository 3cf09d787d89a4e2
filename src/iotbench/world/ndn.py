"""NDN in a run (S5's set-up): a consumer and a producer on one 802.15.4-like link.

The consumer (the `client` node) fetches one Data per item, without
pipelining; the producer (the `server` node) serves the prefix. Where the
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

from iotbench.apps.ndn import NdnNode
from iotbench.apps.requesters import Done, ItemClient
from iotbench.apps.sensors import make_resource
from iotbench.metrics.items import Item
from iotbench.proto.ndn.app import NdnApp
from iotbench.proto.ndn.data import Data, make_data
from iotbench.proto.ndn.name import Name
from iotbench.proto.ndn.profiles import get_profile
from iotbench.proto.ndn.signing import (
    DigestSha256Signer,
    EcdsaSha256Signer,
    HmacSha256Signer,
    generate_ecdsa_key,
)
from iotbench.sim import Simulator
from iotbench.world.network import TwoNodeNetwork

# The profile operation that creating a Data with each signature costs.
CREATE_OPERATION = {
    "ecdsa": "data_create_ecdsa",
    "hmac": "data_create_hmac",
    "digest": "data_create_digest",
}


def make_signer(kind: str, sim: Simulator, prefix: Name):
    rng = sim.rng("ndn/keys")
    # ECDSA and HMAC need a KeyLocator (NDN packet spec, Signature); a short key
    # name keeps small Data small, as a constrained producer would keep it.
    key_name = prefix.append("K")
    if kind == "ecdsa":
        return EcdsaSha256Signer(generate_ecdsa_key(rng), key_name=key_name)
    if kind == "hmac":
        return HmacSha256Signer(rng.getrandbits(256).to_bytes(32, "big"), key_name=key_name)
    return DigestSha256Signer()


class DataMaker:
    """Data of about `size` bytes: a sensor reading, padded or cut to reach the size.

    A DER-encoded ECDSA signature is 70 to 72 bytes, so the size is reached
    within a byte or two.
    """

    def __init__(self, signer, size: int, sensor, freshness_ms: int | None) -> None:
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
        cost = node.profile.cost_s("interest_create") + node.profile.cost_s("forward_packet")

        def on_data(interest, data: Data) -> None:
            done(item, True, len(data.content))

        def on_timeout(interest) -> None:
            done(item, False, 0)

        def express() -> None:
            self.app.express_interest(
                self.name_of(item.index), self.lifetime_ms, on_data, on_timeout
            )
            node.pump()

        node.cpu.run(cost, express)


def build_ndn(sim: Simulator, net: TwoNodeNetwork, config: dict) -> ItemClient:
    cfg = config["protocol"]["ndn"]
    workload = config["workload"]
    profile = get_profile(cfg["profile"])
    # The constrained stacks S4 and S5 describe send no Nacks.
    forwarder_config = profile.forwarder_config(send_nacks=False)
    consumer = NdnNode(sim, "client", profile, forwarder_config, sim.rng("ndn/client"))
    producer = NdnNode(sim, "server", profile, forwarder_config, sim.rng("ndn/server"))
    to_producer = consumer.add_l2_face(net.client_if, net.server.address)
    producer.add_l2_face(net.server_if, net.client.address)
    prefix = Name(cfg["prefix"])
    consumer.forwarder.add_route(prefix, to_producer)

    sensor = make_resource(workload["resource"], sim.rng("sensor"))
    maker = DataMaker(
        make_signer(cfg["signature"], sim, prefix),
        cfg["data_bytes"],
        sensor,
        cfg.get("freshness_period_ms"),
    )
    consumer_app = NdnApp.create(consumer.forwarder)
    producer_app = NdnApp.create(producer.forwarder)
    item_client = NdnConsumer(consumer, consumer_app, prefix, cfg["interest_lifetime_ms"])

    create_cost = profile.cost_s(CREATE_OPERATION[cfg["signature"]])

    def on_interest(interest) -> None:
        def answer() -> None:
            producer_app.put_data(maker.make(interest.name), now=sim.now)
            producer.pump()

        producer.cpu.run(create_cost, answer)

    # The producer's application answers whatever its cache cannot.
    producer_app.register_prefix(prefix, on_interest)
    source = cfg["data_source"]
    if source != "producer-app":
        cache_app = producer_app if source == "producer-cache" else consumer_app
        for index in range(workload["items"]):
            cache_app.put_data(maker.make(item_client.name_of(index)), now=sim.now)
    consumer.pump()
    producer.pump()
    return item_client
