"""The publish workload: every producer sends its readings to the gateway.

`workload.kind = "publish"`: each producer takes a reading every
`interval_s` (or at intervals drawn uniformly from [interval_s,
interval_max_s]), the first at a uniformly random phase in [0, interval_s)
after `start_s` (producers are not coordinated), `items` readings each (or
`duration_s` divided by the mean interval). A reading
is S4's 32-byte JSON object, {"id":"0x..........","val":NNNN}, whose id
names the producer and the reading's number, so the gateway knows which item
arrived. An item is delivered when its reading first reaches the client
node's application (the gateway, or the host behind its uplink); that is
its time to content arrival.

How a reading travels is the protocol's (a `Sender` per protocol):

- CoAP: the producer PUTs the reading to the gateway's server at
  `workload.path`, confirmable or not as `protocol.coap.type` says. A CON
  item is given up when the producer's endpoint gives up (MAX_RETRANSMIT).
  A NON reading carries No-Response 26 (RFC 7967): the producer wants
  nothing back, so the gateway sends nothing and the producer's next
  reading never waits for a response (NSTART).
- CoAP with `workload.coap_exchange = "get"`: each producer serves its
  latest reading at `workload.path`; the gateway GETs it from every
  producer every `workload.poll_interval_s` (default: interval_s), each
  producer at its own random phase, CON or NON as `protocol.coap.type`
  says. A reading a newer one replaced before any poll fetched it is lost
  then (the producer keeps only its latest). With `"observe"`, the gateway
  registers an observation (RFC 7641, a CON GET with Observe 0) on every
  producer at start_s (again a reading interval later if the registration
  fails), and each reading goes out as a NON notification
  (`protocol.coap.notify_confirmable` is not consulted: S4's coap-obs).
  Time to content arrival starts when the reading is taken, for both.
- MQTT-SN: each producer keeps one session with the gateway beside the
  broker on the client node (S4's set-up): it connects and registers
  `protocol.mqttsn.topic` once, then publishes every reading under the
  topic id with `protocol.mqttsn.qos`; a subscriber on the broker's host
  receives them. Readings taken before the registration is done wait for
  it (in the client's queue, `max_queued`). A QoS 1 item is given up when
  the client gives the PUBLISH up (Nretry retransmissions, Tretry apart);
  a session the gateway loses is started again. Client ids are the node
  names.

- NDN (`workload.ndn_exchange`): the gateway pulls /<prefix>/<n> from each
  producer, or each reading rides an Interest to the gateway (Interest
  Notification), world/publish_ndn.py; or HoPP pushes names up the tree and
  each hop pulls the Data, world/publish_hopp.py.

A reading that nothing acknowledges end to end (CoAP NON, MQTT-SN QoS 0)
is handed over when it is sent, and one that has not arrived `drain_s`
later is given up (as of its hand-over), so the readings the run keeps
track of are those of the last `drain_s` only, however long it runs. The
run ends `drain_s` after the last reading was taken, or sooner when every
item has ended; a reading that has not arrived by then is given up.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol

from iotbench.apps.driver import DatagramDriver
from iotbench.apps.mqtt import LocalClient
from iotbench.metrics.items import DELIVERED, GIVEN_UP, Item, ItemLog
from iotbench.metrics.observers import Observers
from iotbench.metrics.publish import (
    LinkStress,
    PublishSeries,
    distribution_rows,
    publish_metrics,
)
from iotbench.metrics.timeseries import SeriesTable
from iotbench.net.ip import address_text
from iotbench.proto.coap import codec
from iotbench.proto.coap.endpoint import (
    NO_RESPONSE_ALL,
    CoapEndpoint,
    NotificationReceived,
    RequestFailed,
    ResourceResponse,
    ResponseReceived,
)
from iotbench.proto.coap.options import Opt
from iotbench.proto.mqtt import events as mqtt_ev
from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.params import MqttClientParams
from iotbench.proto.mqttsn import events as sn_ev
from iotbench.proto.mqttsn.client import DISCONNECTED, MqttSnClient, QueueFull
from iotbench.proto.mqttsn.codec import header_length as sn_header_length
from iotbench.proto.mqttsn.params import MqttSnClientParams
from iotbench.proto.ndn.forwarder import Forwarder
from iotbench.sim import Simulator
from iotbench.world.coap import COAP_PORT, coap_params
from iotbench.world.mqttsn import retry_settings, sink_broker
from iotbench.world.network import Network
from iotbench.world.publish_hopp import NdnHopp
from iotbench.world.publish_ndn import NdnInterestNotification, NdnPull
from iotbench.world.readings import (
    find_reading_id,
    read_id,
    reading,
    reading_id,
    reading_producer,
)


class Sender(Protocol):
    """How one protocol carries the readings (CoapPut, CoapPull, MqttSnPublish, and
    world/publish_ndn.py's NdnPull and NdnInterestNotification)."""

    producers: list  # one entry per producer, in the network's order
    requests: int | None  # requests the gateway sent (pull variants); None for a push

    def start(self) -> None: ...

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        """The producer took a reading: carry it (and report to the workload)."""

    def app_retransmissions(self) -> int:
        """Retransmissions above the MAC so far."""

    def forwarders(self) -> dict[str, Forwarder]:
        """NDN: each node's forwarder, by host name; empty otherwise."""


#: Points of the time series over the publishing period (workload.series_points).
SERIES_POINTS = 60

#: What handling one CoAP message costs a node with a CPU (network.device).
COAP_MESSAGE = "coap_message"


class PublishWorkload:
    """The readings' schedule and their items; a Sender carries them."""

    def __init__(
        self,
        sim: Simulator,
        net: Network,
        config: dict,
        items: ItemLog,
        observers: Observers | None = None,
    ) -> None:
        """With `observers`, the run also measures S4's link stress (metrics())."""
        workload = config["workload"]
        self.sim = sim
        self.items = items
        self.interval_s = workload["interval_s"]
        self.interval_max_s = workload.get("interval_max_s")
        mean_interval_s = (self.interval_s + (self.interval_max_s or self.interval_s)) / 2
        self.per_producer = workload["items"]
        if workload.get("duration_s") is not None:
            self.per_producer = max(1, int(workload["duration_s"] / mean_interval_s))
        self.start_s = workload["start_s"]
        self.drain_s = workload["drain_s"]
        self._open: dict[int, Item] = {}  # reading id -> its item, while it may arrive
        self._handed: deque[tuple[float, int]] = deque()  # (hand-over time, reading id)
        producers = net.nodes("producer")
        self._total = self.per_producer * len(producers)
        self._values = sim.rng("sensor")
        self._phases = sim.rng("workload/phases")
        self._intervals = sim.rng("workload/intervals")
        self._producing = 0  # producers that have readings still to take
        name = config["protocol"]["name"]
        if name == "coap":
            build = SENDERS[workload["coap_exchange"]]
        elif name == "ndn":
            build = SENDERS[workload["ndn_exchange"]]
        else:
            build = SENDERS[name]
        self.sender = build(self, sim, net, config)
        self.net = net
        self.stress: LinkStress | None = None
        if observers is not None and "fewest_hops" in net.parts:
            hops = net.parts["fewest_hops"]()
            index = {name: i for i, name in enumerate(net.hosts)}
            hops_of = {p: hops[index[host.name]] for p, host in enumerate(producers)}
            self.stress = LinkStress(hops_of, self.drain_s, find_reading_id)
            observers.add(self.stress)
        # Energy is compared over the same time in every variant: until the end of
        # the publishing period (readings times their mean interval), not until
        # the run ends, which depends on how soon the last readings arrive.
        self._energy: list[float] | None = None
        self.energy_until = self.start_s + self.per_producer * mean_interval_s
        self.series: PublishSeries | None = None
        if observers is not None and "radios" in net.parts:
            sim.at(self.energy_until, self._energy_snapshot)
            points = workload.get("series_points") or SERIES_POINTS
            index = {name: i for i, name in enumerate(net.hosts)}
            forwarders = [(index[n], f) for n, f in self.sender.forwarders().items()]
            self.series = PublishSeries(
                sim,
                self.start_s,
                (self.energy_until - self.start_s) / points,
                list(net.parts["radios"].values()),
                sorted(forwarders, key=lambda pair: pair[0]),
            )

    def start(self) -> None:
        self.sender.start()
        self._producing = len(self.sender.producers)
        for index in range(self._producing):
            first = self.start_s + self._phases.uniform(0.0, self.interval_s)
            self.sim.at(first, self._publish, index, 0)
        if not self._producing:
            self.sim.at(self.start_s, self._end)

    def _end(self) -> None:
        """The last reading has had drain_s: what has not arrived is lost (a polled
        reading no poll fetched, a message still on its way)."""
        now = self.sim.now
        for rid, item in self._open.items():
            self.items.finish(item, now, GIVEN_UP)
            self._forget(rid)
        self._open.clear()
        self.sim.stop()

    def _publish(self, producer: int, counter: int) -> None:
        sim = self.sim
        rid = reading_id(producer, counter)
        self._open[rid] = self.items.start(sim.now)
        if self.stress is not None:
            self.stress.started(rid)
        if self.series is not None:
            self.series.taken += 1
        payload = reading(producer, counter, self._values.randrange(10000))
        self.sender.send(producer, rid, payload)
        if counter + 1 < self.per_producer:
            sim.schedule(self._next_interval(), self._publish, producer, counter + 1)
        else:
            self._producing -= 1
            if not self._producing:  # the last reading of all: drain_s for it to arrive
                sim.schedule(self.drain_s, self._end)

    def _next_interval(self) -> float:
        if self.interval_max_s is None:
            return self.interval_s
        return self._intervals.uniform(self.interval_s, self.interval_max_s)

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

    def arrived(self, payload: bytes) -> bool:
        """A reading reached the gateway's application; False if it is not one."""
        rid = read_id(payload)
        if rid is None:
            return False
        item = self._open.pop(rid, None)
        if item is not None:
            now = self.sim.now
            self.items.finish(item, now, DELIVERED, len(payload))
            if self.stress is not None:
                self.stress.delivered(rid, reading_producer(rid), now)
            if self.series is not None:
                self.series.delivered += 1
            self._check_all_done()
        return True

    def failed(self, rid: int) -> None:
        """The producer gave the reading up."""
        item = self._open.pop(rid, None)
        if item is not None:
            self.items.finish(item, self.sim.now, GIVEN_UP)
            self._forget(rid)
            self._check_all_done()

    def _expire(self, now: float) -> None:
        """Give up the handed-over readings that have had `drain_s` to arrive."""
        handed = self._handed
        while handed and handed[0][0] + self.drain_s < now:
            t, rid = handed.popleft()
            item = self._open.pop(rid, None)
            if item is not None:
                self.items.finish(item, t, GIVEN_UP)
                self._forget(rid)

    def _forget(self, rid: int) -> None:
        if self.stress is not None:
            self.stress.forget(rid)

    def _energy_snapshot(self) -> None:
        now = self.sim.now
        self._energy = [radio.power.joules(now) for radio in self.net.parts["radios"].values()]

    def metrics(self, base: dict[str, float | int]) -> dict[str, float]:
        """S4's metrics (metrics/publish.py), from the run's metrics so far."""
        sender, parts = self.sender, self.net.parts
        stress = self.stress or LinkStress({}, 0.0, find_reading_id)
        stress.settle(float("inf"))
        radios = parts.get("radios")
        tree = parts.get("tree")
        root_j, total_j, leaves_j = float("nan"), float("nan"), []
        if radios and tree is not None:
            if self._energy is None:  # the run ended before the publishing period did
                self._energy_snapshot()
            energy = self._energy
            root_j, total_j = energy[tree.root], sum(energy)
            children = tree.children()
            leaves_j = [
                joules
                for i, joules in enumerate(energy)
                if i != tree.root and tree.reached(i) and not children[i]
            ]
        return publish_metrics(
            base,
            self._total,
            sender.requests,
            sender.app_retransmissions(),
            stress,
            root_j,
            leaves_j,
            total_j,
            ndn_tables(sender.forwarders()),
        )

    def series_table(self) -> SeriesTable | None:
        """The run's time series and distributions (metrics/publish.py), once it
        has ended and its metrics() are taken; None without a radio network."""
        series, tree = self.series, self.net.parts.get("tree")
        if series is None:
            return None
        series.close_bin(self.sim.now)
        hops = tree.hops if tree is not None else ()
        stress = self.stress.histogram if self.stress is not None else {}
        distribution_rows(series.table, self.items.stats.latencies, stress, hops)
        return series.table

    def _check_all_done(self) -> None:
        stats = self.items.stats
        if stats.delivered + stats.given_up == self._total:
            self.sim.stop()


def ndn_tables(forwarders: dict[str, Forwarder]) -> tuple[int, int] | None:
    """The most PIT entries and Content Store bytes any node held; None: no NDN."""
    if not forwarders:
        return None
    held = forwarders.values()
    return max(f.pit.peak for f in held), max(f.cs.peak_bytes for f in held)


class CoapPut:
    """CoAP: each reading a PUT to the gateway's server (CON, or NON with No-Response)."""

    def __init__(self, work: PublishWorkload, sim: Simulator, net: Network, config: dict) -> None:
        cfg = config["protocol"]["coap"]
        self.work = work
        self.sim = sim
        self.path = config["workload"]["path"]
        self.confirmable = cfg["type"] == "con"
        self._requests: dict[tuple[int, int], int] = {}  # (producer, request id) -> reading id
        sink = net.node("client")
        self._server = CoapEndpoint(sim.rng("coap/server"), coap_params(cfg))
        self._server.add_resource(self.path, self._arrived, methods={codec.Code.PUT})
        DatagramDriver(
            sim, sink, self._server, _ignore, codec.header_length, COAP_PORT, COAP_MESSAGE
        )
        self._sink = (address_text(net.address(sink)), COAP_PORT)
        self.producers = []
        for index, node in enumerate(net.nodes("producer")):
            endpoint = CoapEndpoint(
                sim.rng(f"coap/{node.name}"), coap_params(cfg), token_length=cfg["token_length"]
            )
            driver = DatagramDriver(
                sim,
                node,
                endpoint,
                self._on_event(index),
                codec.header_length,
                operation=COAP_MESSAGE,
            )
            self.producers.append((endpoint, driver))
        self._options = [(codec.Opt.CONTENT_FORMAT, 50)]  # application/json
        if not self.confirmable:
            self._options.append((Opt.NO_RESPONSE, NO_RESPONSE_ALL))

    requests = None  # a push: the gateway asks for nothing

    def start(self) -> None:
        pass

    def app_retransmissions(self) -> int:
        return sum(endpoint.stats.retransmissions for endpoint, _ in self.producers)

    def forwarders(self) -> dict[str, Forwarder]:
        return {}

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        endpoint, driver = self.producers[producer]
        request = endpoint.request(
            self.sim.now,
            self._sink,
            codec.Code.PUT,
            self.path,
            confirmable=self.confirmable,
            payload=payload,
            options=self._options,
        )
        driver.pump()
        if self.confirmable:
            self._requests[(producer, request)] = rid
        else:
            self.work.handed_over(rid)

    def _arrived(self, request, addr) -> ResourceResponse:
        if not self.work.arrived(request.payload):
            return ResourceResponse(codec.Code.BAD_REQUEST)
        return ResourceResponse(codec.Code.CHANGED)

    def _on_event(self, producer: int) -> Callable[[object], None]:
        def on_event(event: object) -> None:
            rid = self._requests.pop((producer, getattr(event, "request_id", None)), None)
            if rid is not None and isinstance(event, RequestFailed):
                self.work.failed(rid)

        return on_event


class CoapPull:
    """CoAP: the producers serve their latest reading; the gateway polls it with GET
    (exchange "get") or observes it (exchange "observe", NON notifications)."""

    def __init__(self, work: PublishWorkload, sim: Simulator, net: Network, config: dict) -> None:
        cfg = config["protocol"]["coap"]
        workload = config["workload"]
        self.work = work
        self.sim = sim
        self.path = workload["path"]
        self.observe = workload["coap_exchange"] == "observe"
        self.confirmable = cfg["type"] == "con"
        self.poll_s = workload.get("poll_interval_s") or workload["interval_s"]
        self.start_s = workload["start_s"]
        sink = net.node("client")
        self.gateway = CoapEndpoint(
            sim.rng("coap/gateway"), coap_params(cfg), token_length=cfg["token_length"]
        )
        self.gateway_driver = DatagramDriver(
            sim, sink, self.gateway, self._on_event, codec.header_length, operation=COAP_MESSAGE
        )
        self.latest: list[tuple[int, bytes] | None] = []
        self.producers = []
        self.addresses = []
        for index, node in enumerate(net.nodes("producer")):
            endpoint = CoapEndpoint(sim.rng(f"coap/{node.name}"), coap_params(cfg))
            endpoint.add_resource(
                self.path,
                lambda request, addr, i=index: self._serve(i),
                observable=self.observe,
                methods={codec.Code.GET},
                content_format=50,
            )
            driver = DatagramDriver(
                sim, node, endpoint, _ignore, codec.header_length, COAP_PORT, COAP_MESSAGE
            )
            self.producers.append((endpoint, driver))
            self.addresses.append((address_text(net.address(node)), COAP_PORT))
            self.latest.append(None)
        self._polls = sim.rng("workload/polls")
        self._registrations: dict[int, int] = {}  # observe: request id -> producer
        # GETs the gateway sent (observe: none, a registration is not a poll).
        self.requests: int | None = None if self.observe else 0

    def app_retransmissions(self) -> int:
        endpoints = [self.gateway, *(endpoint for endpoint, _ in self.producers)]
        return sum(endpoint.stats.retransmissions for endpoint in endpoints)

    def forwarders(self) -> dict[str, Forwarder]:
        return {}

    def start(self) -> None:
        for index in range(len(self.producers)):
            if self.observe:
                self.sim.at(self.start_s, self._register, index)
            else:
                first = self.start_s + self._polls.uniform(0.0, self.poll_s)
                self.sim.at(first, self._poll, index)

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        previous = self.latest[producer]
        self.latest[producer] = (rid, payload)
        if self.observe:
            endpoint, driver = self.producers[producer]
            endpoint.notify(self.sim.now, self.path, confirmable=False)
            driver.pump()
            self.work.handed_over(rid)
        elif previous is not None:
            self.work.failed(previous[0])  # replaced: no poll can fetch it any more

    def _serve(self, producer: int) -> ResourceResponse:
        latest = self.latest[producer]
        # Before the first reading: an empty representation (an observation starts).
        payload = latest[1] if latest is not None else b""
        return ResourceResponse(codec.Code.CONTENT, payload, 50)

    def _poll(self, producer: int) -> None:
        self.requests += 1
        self.gateway.request(
            self.sim.now,
            self.addresses[producer],
            codec.Code.GET,
            self.path,
            confirmable=self.confirmable,
        )
        self.gateway_driver.pump()
        self.sim.schedule(self.poll_s, self._poll, producer)

    def _register(self, producer: int) -> None:
        request = self.gateway.request(
            self.sim.now, self.addresses[producer], codec.Code.GET, self.path, observe=True
        )
        self._registrations[request] = producer
        self.gateway_driver.pump()

    def _on_event(self, event: object) -> None:
        if isinstance(event, ResponseReceived):
            self._registrations.pop(event.request_id, None)
            self.work.arrived(event.response.payload)
        elif isinstance(event, NotificationReceived):
            self.work.arrived(event.message.payload)
        elif isinstance(event, RequestFailed):
            # A registration the producer never answered (RFC 7641 3.3.1: the client
            # may register again): try again a reading interval later, or nothing
            # that producer takes would ever arrive.
            producer = self._registrations.pop(event.request_id, None)
            if producer is not None:
                self.sim.schedule(self.poll_s, self._register, producer)


class MqttSnPublish:
    """MQTT-SN: one session per producer to the gateway beside the broker; every
    reading a PUBLISH under the registered topic id."""

    def __init__(self, work: PublishWorkload, sim: Simulator, net: Network, config: dict) -> None:
        cfg = config["protocol"]["mqttsn"]
        self.work = work
        self.sim = sim
        self.topic = cfg["topic"]
        self.qos = cfg["qos"]
        retry = retry_settings(cfg)
        sink = net.node("client")
        broker = sink_broker(sim, sink, cfg)
        subscriber = MqttClient(
            sim.rng("mqtt/subscriber"), MqttClientParams(client_id="gateway-app", keep_alive_s=0)
        )
        subscriber.subscribe(sim.now, [(self.topic, self.qos)])
        LocalClient(sim, broker, subscriber, self._received, name="subscriber")
        self._gateway = (address_text(net.address(sink)), cfg["port"])
        self.producers = [
            _SnProducer(self, sim, node, cfg, retry) for node in net.nodes("producer")
        ]

    requests = None  # a push

    def start(self) -> None:
        pass

    def app_retransmissions(self) -> int:
        return sum(producer.client.stats.retransmissions for producer in self.producers)

    def forwarders(self) -> dict[str, Forwarder]:
        return {}

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        self.producers[producer].send(rid, payload)

    def _received(self, event: object) -> None:
        if isinstance(event, mqtt_ev.MessageReceived):
            self.work.arrived(event.payload)


class _SnProducer:
    """One producer's MQTT-SN client and session."""

    def __init__(self, owner: MqttSnPublish, sim: Simulator, node, cfg: dict, retry: dict):
        self.owner = owner
        self.sim = sim
        self.client = MqttSnClient(
            sim.rng(f"mqttsn/{node.name}"),
            MqttSnClientParams(client_id=node.name, keep_alive_s=cfg["keep_alive_s"], **retry),
        )
        self.driver = DatagramDriver(
            sim, node, self.client, self._on_event, sn_header_length, operation="mqttsn_message"
        )
        self.topic_id: int | None = None
        self.waiting: deque[tuple[int, bytes]] = deque()  # readings before the registration
        self.in_flight: dict[int, int] = {}  # QoS 1 MsgId -> reading id
        self.sent_qos0: deque[int] = deque()  # QoS 0 readings queued in the client, in order

    def send(self, rid: int, payload: bytes) -> None:
        if self.topic_id is None:
            self.waiting.append((rid, payload))
            if self.client.state == DISCONNECTED:
                self.client.connect(self.sim.now, self.owner._gateway)
                self.driver.pump()
            return
        self._publish(rid, payload)

    def _publish(self, rid: int, payload: bytes) -> None:
        try:
            msg_id = self.client.publish(self.sim.now, self.topic_id, payload, qos=self.owner.qos)
        except (QueueFull, RuntimeError):
            self.owner.work.failed(rid)  # the client cannot take it: lost at the producer
            return
        if msg_id is None:
            self.sent_qos0.append(rid)
        else:
            self.in_flight[msg_id] = rid
        self.driver.pump()

    def _on_event(self, event: object) -> None:
        now, work = self.sim.now, self.owner.work
        if isinstance(event, sn_ev.Connected):
            self.client.register(now, self.owner.topic)
        elif isinstance(event, sn_ev.Registered):
            self.topic_id = event.topic_id
            while self.waiting:
                self._publish(*self.waiting.popleft())
        elif isinstance(event, sn_ev.Published):
            if event.msg_id is None:
                if self.sent_qos0:
                    work.handed_over(self.sent_qos0.popleft())
            else:
                self.in_flight.pop(event.msg_id, None)
        elif isinstance(event, sn_ev.RequestFailed):
            rid = self.in_flight.pop(getattr(event, "msg_id", None), None)
            if rid is not None:
                work.failed(rid)
        elif isinstance(event, (sn_ev.Disconnected, sn_ev.ConnectionRefused)):
            # The session is gone (the gateway lost us, or refused): what the client
            # still held is lost; the next reading connects again.
            for rid in [*self.in_flight.values(), *self.sent_qos0]:
                work.failed(rid)
            self.in_flight.clear()
            self.sent_qos0.clear()
            self.topic_id = None
            if self.waiting:
                self.client.connect(now, self.owner._gateway)
                self.driver.pump()


#: By protocol name; for CoAP by workload.coap_exchange, for NDN by workload.ndn_exchange.
SENDERS: dict[str, Callable[..., Sender]] = {
    "put": CoapPut,
    "get": CoapPull,
    "observe": CoapPull,
    "mqttsn": MqttSnPublish,
    "pull": NdnPull,
    "inot": NdnInterestNotification,
    "hopp": NdnHopp,
}


def _ignore(event: object) -> None:
    pass
