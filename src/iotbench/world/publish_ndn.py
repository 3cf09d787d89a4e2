"""The publish workload over NDN (S4's `ndn` and `ndn-inot`): senders for world/publish.py.

Every node of the radio network runs a forwarder with a face to each of its
neighbours in the routing tree (world/ndn.py), so packets travel the tree
hop by hop, and each forwarder retransmits an Interest that got no Data as
`protocol.ndn.retx_max` and `retx_interval_s` say (S4: 4 times, 2 s apart).
Producer i owns the prefix /p0…0i, one name component of
`protocol.ndn.prefix_bytes` bytes (S4: 24), and its reading n is named
/<prefix>/<n>.

- `pull` (S4's `ndn`): a producer turns each reading into a Data and keeps it
  in its own Content Store. The gateway polls each producer every
  `workload.poll_interval_s` (default interval_s; each producer at its own
  random phase, the draws CoAP GET's polls make) with an Interest for the
  oldest reading it has not had, one at a time. A producer answers an
  Interest for a reading it has not taken yet at once with an
  application-level Nack (a Data of ContentType NACK, content `not-yet`,
  FreshnessPeriod 0): the poll found nothing, and no PIT on the way holds an
  entry for seconds. The gateway's Interests carry MustBeFresh, so such a
  Nack, cached on the way, never answers a later poll, while the readings
  (FreshnessPeriod one hour: a reading never changes) do. A poll that finds
  the previous Interest still out is owed, and so is one whose Interest
  expired unanswered: for each owed poll, a reading that arrives makes the
  gateway ask for the next one at once, so a gateway that fell behind
  catches up instead of staying late for ever; a `not-yet` says it has
  caught up. A reading the producer no longer holds (its
  Content Store dropped it) gets a Nack `gone`: the reading is lost, the
  gateway moves on. The gateway never has more Interests out than its own
  PIT holds (`protocol.ndn.pit_max_entries`): further asks wait their turn
  in order, rather than being dropped by its own forwarder and waiting out
  an Interest lifetime.
- `inot` (S4's `ndn-inot`, Interest Notification): the producer sends each
  reading as the ApplicationParameters of an Interest named /<prefix>/<n>
  (with its ParametersSha256DigestComponent) up the tree on a default route;
  the gateway's application takes every such Interest and answers with an
  empty Data, the acknowledgement. Nothing is cached (Content Stores of 0
  bytes), as I-Not asks. A reading whose Interest expires unanswered at its
  producer is given up (unless it reached the gateway and only the
  acknowledgement was lost).

Creating an Interest or a Data costs the CPU time of the node's device
profile (`protocol.ndn.profile`, with the signature of
`protocol.ndn.signature`), and so does every forwarding decision.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from iotbench.apps.ndn import NdnNode
from iotbench.proto.ndn.app import NdnApp
from iotbench.proto.ndn.data import Data, make_data
from iotbench.proto.ndn.forwarder import Forwarder
from iotbench.proto.ndn.interest import Interest
from iotbench.proto.ndn.name import Name
from iotbench.proto.ndn.profiles import get_profile
from iotbench.proto.ndn.types import ContentType
from iotbench.sim import Simulator
from iotbench.world.ndn import (
    CREATE_OPERATION,
    make_signer,
    route_prefix,
    scenario_forwarder_config,
    tree_forwarders,
)
from iotbench.world.network import Network
from iotbench.world.readings import reading_counter, reading_id

if TYPE_CHECKING:
    from iotbench.world.publish import PublishWorkload


def producer_prefix(index: int, size: int) -> Name:
    """Producer `index`'s prefix: one component of `size` bytes, 'p' and the number."""
    digits = str(index)
    if len(digits) + 1 > size:
        raise ValueError(f"a {size}-byte prefix cannot name producer {index}")
    return Name("/p" + digits.zfill(size - 1))


class NdnTree:
    """What both exchanges share: a forwarder on every node, the producers' prefixes,
    signers, and the CPU cost of creating packets."""

    def __init__(self, sim: Simulator, net: Network, config: dict, **overrides) -> None:
        cfg = config["protocol"]["ndn"]
        self.sim = sim
        self.net = net
        self.lifetime_ms = cfg["interest_lifetime_ms"]
        profile = get_profile(cfg["profile"])
        self.nodes = tree_forwarders(sim, net, profile, scenario_forwarder_config(cfg, **overrides))
        self.gateway_name = net.node("client").name
        self.gateway = self.nodes[self.gateway_name]
        gateway_profile = config["network"].get("device", {}).get("gateway_profile")
        if gateway_profile is not None:  # network.device: e.g. S4's Cortex-A8 gateway
            self.gateway.profile = get_profile(gateway_profile)
        self.gateway_app = NdnApp.create(self.gateway.forwarder)
        self.producer_names = [host.name for host in net.nodes("producer")]
        self.producers = [self.nodes[name] for name in self.producer_names]
        self.apps = [NdnApp.create(node.forwarder) for node in self.producers]
        self.prefixes = [
            producer_prefix(i, cfg["prefix_bytes"]) for i in range(len(self.producers))
        ]
        self.signers = [make_signer(cfg["signature"], sim, p) for p in self.prefixes]
        self._create_data = CREATE_OPERATION[cfg["signature"]]

    def create_data_s(self, node: NdnNode) -> float:
        """The CPU time `node` spends creating and signing a Data."""
        return node.profile.cost_s(self._create_data)

    @staticmethod
    def create_interest_s(node: NdnNode) -> float:
        """The CPU time `node` spends creating an Interest and forwarding it."""
        return node.profile.cost_s("interest_create") + node.profile.cost_s("forward_packet")

    def reading_name(self, producer: int, counter: int) -> Name:
        """/<producer's prefix>/<counter>: the name of one reading."""
        return self.prefixes[producer].append(str(counter))

    def put_data(self, node: NdnNode, app: NdnApp, data: Data, then=None) -> None:
        """Create `data` on `node` (its CPU time), then hand it to the forwarder through
        `app` (after `then()`, when given)."""

        def put() -> None:
            if then is not None:
                then()
            app.put_data(data, now=self.sim.now)
            node.pump()

        node.cpu.run(self.create_data_s(node), put)

    def app_retransmissions(self) -> int:
        """NDN retransmits hop by hop: the forwarders' retransmitted Interests."""
        return sum(node.forwarder.counters.retransmissions for node in self.nodes.values())

    def pump_all(self) -> None:
        for node in self.nodes.values():
            node.pump()

    @staticmethod
    def counter_of(name: Name) -> int | None:
        """The reading number in /<prefix>/<n>[/digest]; None if there is none."""
        try:
            return int(name[1].value)
        except (IndexError, ValueError):
            return None


class NdnSender:
    """What every NDN sender reports through its tree (world/publish.py's Sender)."""

    tree: NdnTree
    requests: int | None = None  # a push, unless a sender counts its polls

    def start(self) -> None:
        pass

    def app_retransmissions(self) -> int:
        return self.tree.app_retransmissions()

    def forwarders(self) -> dict[str, Forwarder]:
        return {name: node.forwarder for name, node in self.tree.nodes.items()}


class NdnPull(NdnSender):
    """ndn: the gateway polls /<prefix>/<n> from each producer, one Interest at a time."""

    NOT_YET = b"not-yet"
    GONE = b"gone"
    READING_FRESHNESS_MS = 3_600_000  # a reading never changes

    def __init__(self, work: PublishWorkload, sim: Simulator, net: Network, config: dict) -> None:
        workload = config["workload"]
        self.work = work
        self.sim = sim
        self.tree = tree = NdnTree(sim, net, config)
        self.poll_s = workload.get("poll_interval_s") or workload["interval_s"]
        self.start_s = workload["start_s"]
        self.producers = tree.producers
        count = len(self.producers)
        self.taken = [0] * count  # readings each producer has taken so far
        self.wanted = [0] * count  # the oldest reading the gateway has not had
        self.waiting = [False] * count  # an Interest of the gateway's is out
        self.owed = [0] * count  # polls that came while it was out or queued
        self.queued = [False] * count
        self.queue: deque[int] = deque()  # producers to ask when an Interest is free
        self.window = tree.gateway.forwarder.config.pit_max_entries  # None: no limit
        self.out = 0  # the gateway's Interests out now
        for index, (name, app, prefix) in enumerate(
            zip(tree.producer_names, tree.apps, tree.prefixes, strict=True)
        ):
            route_prefix(net, tree.nodes, prefix, tree.gateway_name, name)
            app.register_prefix(prefix, lambda interest, i=index: self._on_interest(i, interest))
        tree.pump_all()
        self._polls = sim.rng("workload/polls")
        self.requests = 0  # Interests the gateway expressed

    def start(self) -> None:
        for index in range(len(self.producers)):
            first = self.start_s + self._polls.uniform(0.0, self.poll_s)
            self.sim.at(first, self._poll, index)

    # ---- the producer -----------------------------------------------------------------

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        tree = self.tree
        name = tree.reading_name(producer, reading_counter(rid))
        data = make_data(
            name,
            payload,
            signer=tree.signers[producer],
            freshness_period_ms=self.READING_FRESHNESS_MS,
        )
        self._put(producer, data, taken=reading_counter(rid) + 1)

    def _on_interest(self, producer: int, interest: Interest) -> None:
        """An Interest the Content Store could not answer: a reading not taken yet, or
        one taken and dropped from the store. Either way an application Nack."""
        counter = self.tree.counter_of(interest.name)
        if counter is None:
            return
        reason = self.NOT_YET if counter >= self.taken[producer] else self.GONE
        nack = make_data(
            interest.name,
            reason,
            signer=self.tree.signers[producer],
            content_type=ContentType.NACK,
            freshness_period_ms=0,
        )
        self._put(producer, nack)

    def _put(self, producer: int, data: Data, taken: int | None = None) -> None:
        tree = self.tree

        def record() -> None:
            self.taken[producer] = taken

        then = record if taken is not None else None
        tree.put_data(tree.producers[producer], tree.apps[producer], data, then)

    # ---- the gateway ------------------------------------------------------------------

    def _poll(self, producer: int) -> None:
        if self.wanted[producer] >= self.work.per_producer:
            return  # it has had every reading: no more polls
        self._want(producer)
        self.sim.schedule(self.poll_s, self._poll, producer)

    def _want(self, producer: int) -> None:
        """Ask the producer as soon as an Interest is free (owe it, if one is out)."""
        if self.waiting[producer] or self.queued[producer]:
            self.owed[producer] += 1
            return
        self.queued[producer] = True
        self.queue.append(producer)
        self._serve()

    def _serve(self) -> None:
        queue, window = self.queue, self.window
        while queue and (window is None or self.out < window):
            producer = queue.popleft()
            self.queued[producer] = False
            self._ask(producer)

    def _done(self, producer: int) -> None:
        self.waiting[producer] = False
        self.out -= 1

    def _ask(self, producer: int) -> None:
        tree = self.tree
        counter = self.wanted[producer]
        name = tree.reading_name(producer, counter)
        self.waiting[producer] = True
        self.out += 1
        self.requests += 1

        def on_data(interest: Interest, data: Data) -> None:
            self._done(producer)
            if data.content_type == ContentType.NACK and data.content == self.NOT_YET:
                self.owed[producer] = 0  # caught up: the next poll asks again
            else:
                if data.content_type == ContentType.NACK:
                    self.work.failed(reading_id(producer, counter))
                else:
                    self.work.arrived(data.content)
                self.wanted[producer] = counter + 1
                if self.owed[producer] and counter + 1 < self.work.per_producer:
                    self.owed[producer] -= 1
                    self._want(producer)
            self._serve()

        def on_timeout(interest: Interest) -> None:
            # The poll fetched nothing: owed, the next poll asks again and then
            # once more at once, so a lost round does not leave the gateway a
            # reading behind for the rest of the run.
            self._done(producer)
            self.owed[producer] += 1
            self._serve()

        def express() -> None:
            tree.gateway_app.express_interest(
                name,
                tree.lifetime_ms,
                on_data,
                on_timeout,
                must_be_fresh=True,
                now=self.sim.now,
            )
            tree.gateway.pump()

        tree.gateway.cpu.run(tree.create_interest_s(tree.gateway), express)


class NdnInterestNotification(NdnSender):
    """ndn-inot: each reading rides an Interest to the gateway; an empty Data acknowledges it."""

    def __init__(self, work: PublishWorkload, sim: Simulator, net: Network, config: dict) -> None:
        self.work = work
        self.sim = sim
        # I-Not caches nothing: the acknowledgements are of no use to anyone else.
        self.tree = tree = NdnTree(sim, net, config, cs_max_bytes=0)
        self.producers = tree.producers
        everything = Name("/")
        # Every Interest goes up the tree on a default route; the gateway's
        # application takes them all.
        for name in tree.producer_names:
            route_prefix(net, tree.nodes, everything, name, tree.gateway_name)
        tree.gateway_app.register_prefix(everything, self._on_interest)
        tree.pump_all()
        self._acks = make_signer(config["protocol"]["ndn"]["signature"], sim, Name("/gateway"))

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        tree = self.tree
        name = tree.reading_name(producer, reading_counter(rid))
        node, app = tree.producers[producer], tree.apps[producer]

        def on_timeout(interest: Interest) -> None:
            self.work.failed(rid)  # no-op when it arrived and only the ack was lost

        def express() -> None:
            app.express_interest(
                name,
                tree.lifetime_ms,
                _acknowledged,
                on_timeout,
                app_parameters=payload,
                now=self.sim.now,
            )
            node.pump()

        node.cpu.run(tree.create_interest_s(node), express)

    def _on_interest(self, interest: Interest) -> None:
        tree = self.tree
        self.work.arrived(interest.app_parameters or b"")
        ack = make_data(interest.name, b"", signer=self._acks)
        tree.put_data(tree.gateway, tree.gateway_app, ack)


def _acknowledged(interest: Interest, data: Data) -> None:
    pass  # the reading counted when it reached the gateway
