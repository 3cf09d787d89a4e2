"""The publish workload over CoAP (S4's `coap-put-*`, `coap-get-*`, `coap-obs`).

Each exchange is built as S4's code runs it (5G-I3/ACM-ICN-2018, apps/):
the producers run RIOT's gcoap, the GET client runs gcoap on the gateway's
own radio node, and the PUT server and the Observe client are aiocoap on the
gateway's host (the scenario puts them on the `client` node: the host behind
the border router's serial line, network.uplink). Every message is a
CoAP message on UDP port 5683 to the path `workload.path` (S4: /i3/gasval),
with `protocol.coap.token_length`-byte tokens (gcoap: 2).

- `CoapPut` (coap_put_cli, coap_put_srv): the producer PUTs each reading,
  Content-Format text/plain (0, what gcoap_finish writes for the study's
  client), CON or NON as protocol.coap.type says. The server answers 2.04
  with an empty payload: piggybacked on the ACK of a CON, as a NON response
  to a NON (RFC 7252 5.2.3; aiocoap does so); gcoap waits GCOAP_NON_TIMEOUT
  for it (protocol.coap.non_timeout_s). A CON reading is given up when the
  producer's endpoint gives up, a NON one is handed over when it is sent.
- `CoapGet` (coap_get_cli_sched/unsch, coap_get_srv_sched/unsch): the
  gateway GETs the path from each producer, each producer on its own timer.
  Scheduled, the producer answers every GET with the current value, 2.05
  with Content-Format application/json (50): the item is the request, the
  response carrying the value ends it. Polled (unscheduled), the producer
  answers with its latest reading, or 5.03 with no payload before it has
  one; a reading is delivered when the first response carrying it arrives,
  and lost only when a newer one replaced it and no response carrying it can
  still arrive (no request it answered is still open: its response, or the
  duplicate-cache copy of it, may yet come).
- `CoapObserve` (coap_observe_cli, coap_observe_srv): the gateway registers
  with each producer 0 to 2 s after publishing starts: a NON GET with
  Observe 0, given 5 to 10 s (drawn per attempt) for its answer and sent
  again (a new request) when none came. The producer takes a reading only
  while it has an observer, and sends each as a NON notification. gcoap
  keeps one observation per observer and resource, so a new registration
  replaces the old one (CoapParams.observe_one_per_peer).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import TYPE_CHECKING

from iotbench.apps.driver import DatagramDriver
from iotbench.apps.readings import find_reading_id, read_id
from iotbench.net.ip import address_text
from iotbench.net.node import Node
from iotbench.proto.coap import codec
from iotbench.proto.coap.endpoint import (
    CoapEndpoint,
    NotificationReceived,
    RequestFailed,
    ResourceResponse,
    ResponseReceived,
)
from iotbench.proto.coap.resources import Handler
from iotbench.proto.coap.secured import SecuredEndpoint
from iotbench.proto.ndn.forwarder import Forwarder
from iotbench.proto.oscore.context import SecurityContext
from iotbench.scenarios.settings import required
from iotbench.scenarios.settings_types import ProtocolCoapSettings, RunSettings
from iotbench.sim import Simulator
from iotbench.sim.cpu import Cpu
from iotbench.world.networks import Network
from iotbench.world.protocols.coap import (
    HandshakeLog,
    coap_params,
    coap_port,
    oscore_context,
    secure,
)

if TYPE_CHECKING:
    from iotbench.world.workloads.publish.sender import Publisher

#: What handling one CoAP message costs a node with a CPU (network.device): a
#: request at a server, or a response; a notification at an observing client.
COAP_MESSAGE = "coap_message"
COAP_NOTIFICATION = "coap_notification"
TEXT_PLAIN, APPLICATION_JSON = 0, 50
AEAD_TAG, FCS = 8, 2  # CCM-8's and AES-CCM-16-64-128's tag; the 802.15.4 frame's FCS
#: coap_observe_cli: the registration's start (0 to 2 s) and its wait for an answer.
OBSERVE_START_S = (0.0, 2.0)
OBSERVE_WAIT_S = (5.0, 10.0)


def _ignore(event: object) -> None:
    pass


def _attach(
    sim: Simulator,
    node: Node,
    endpoint: CoapEndpoint,
    cfg: ProtocolCoapSettings,
    role: str,
    on_event: Callable[[object], None] = _ignore,
    *,
    port: int | None = None,
    operation: str = COAP_MESSAGE,
    oscore_contexts: dict[Hashable, SecurityContext] | None = None,
    on_sealed: Callable[[bytes, bytes], None] | None = None,
) -> tuple[CoapEndpoint | SecuredEndpoint, DatagramDriver]:
    """`endpoint` on `node`, behind protocol.coap.security's layer when there is
    one (its random stream named after the node; `on_sealed` told what it
    protects), driven on `port` (None: an ephemeral one)."""
    secured, header_length = secure(sim, endpoint, cfg, role, node.name, oscore_contexts)
    if isinstance(secured, SecuredEndpoint):
        secured.layer.on_sealed = on_sealed
    driver = DatagramDriver(sim, node, secured, on_event, header_length, port, operation)
    return secured, driver


class _CoapSender:
    """What the CoAP senders share: producers with an endpoint each, and the DTLS
    clients' handshakes (the producers' for PUT, the gateway's for GET and Observe)."""

    requests: int | None = None
    schedule = "per-source"
    producers: list[tuple[CoapEndpoint | SecuredEndpoint, DatagramDriver]]
    handshakes: HandshakeLog | None = None  # with protocol.coap.security's DTLS
    #: With security: the reading each protected datagram carries, by its AEAD tag.
    _sealed: dict[bytes, int]

    def _security(self, cfg: ProtocolCoapSettings) -> None:
        security = cfg.security
        self.handshakes = HandshakeLog() if security and security.mode == "dtls" else None
        self._sealed = {}
        if security is not None:
            # A reading sealed by DTLS or OSCORE cannot be found in its frames by
            # its id; the layers tell which wire bytes carry which reading.
            self.content_id = self._sealed_content_id

    def _remember(self, plain: bytes, wire: bytes) -> None:
        """A producer's layer protected `plain` into `wire`."""
        rid = find_reading_id(plain)
        if rid is not None:
            self._sealed[wire[-AEAD_TAG:]] = rid

    def _sealed_content_id(self, frame: bytes) -> int | None:
        """The reading a frame carries: DTLS's record and OSCORE's message end
        with their 8-byte tag, which travels in the datagram's last frame (the
        whole datagram or its last 6LoWPAN fragment), just before the FCS. An
        encrypted reading is readable only whole, so that frame is its arrival."""
        return self._sealed.get(frame[-AEAD_TAG - FCS : -FCS])

    def protocol_metrics(self) -> dict[str, float | int]:
        return self.handshakes.metrics() if self.handshakes is not None else {}

    def producer_cpus(self) -> list[Cpu | None]:
        return [driver.node.cpu for _, driver in self.producers]

    def _record(self, event: object) -> None:
        if self.handshakes is not None:
            self.handshakes.record(event)

    def start(self) -> None:
        pass

    def ready(self, producer: int) -> bool:
        return True

    def app_retransmissions(self) -> int:
        return sum(endpoint.stats.retransmissions for endpoint in self._endpoints())

    def _endpoints(self) -> list[CoapEndpoint | SecuredEndpoint]:
        return [endpoint for endpoint, _ in self.producers]

    def forwarders(self) -> dict[str, Forwarder]:
        return {}


def _producer_server(
    sender: _CoapSender,
    sim: Simulator,
    node: Node,
    endpoint: CoapEndpoint,
    cfg: ProtocolCoapSettings,
    index: int,
    port: int,
) -> tuple[CoapEndpoint | SecuredEndpoint, DatagramDriver]:
    """Producer `index`'s server endpoint (GET and Observe), answering the gateway."""
    contexts: dict[Hashable, SecurityContext] = {None: oscore_context("server", index)}
    return _attach(
        sim,
        node,
        endpoint,
        cfg,
        "server",
        port=port,
        oscore_contexts=contexts,
        on_sealed=sender._remember,
    )


class CoapPut(_CoapSender):
    """coap-put-*: each reading a PUT to the gateway's server."""

    drives = "push"

    def __init__(self, work: Publisher, sim: Simulator, net: Network, config: RunSettings) -> None:
        cfg = required(config.protocol.coap, "protocol.coap")
        self.work = work
        self.sim = sim
        self.path = config.workload.path
        self.confirmable = cfg.type == "con"
        self._security(cfg)
        self._requests: dict[tuple[int, int], int] = {}  # (producer, request id) -> reading
        sink = net.ip_node("client")
        producers = net.ip_nodes("producer")
        port = coap_port(cfg)
        server = CoapEndpoint(sim.rng("coap/server"), coap_params(cfg))
        server.add_resource(self.path, self._arrived, methods={codec.Code.PUT})
        contexts: dict[Hashable, SecurityContext] = {
            i: oscore_context("server", i) for i in range(len(producers))
        }
        _attach(sim, sink, server, cfg, "server", port=port, oscore_contexts=contexts)
        self._sink = (address_text(net.address(sink)), port)
        self.producers = []
        for index, node in enumerate(producers):
            endpoint = CoapEndpoint(
                sim.rng(f"coap/{node.name}"), coap_params(cfg), token_length=cfg.token_length
            )
            self.producers.append(
                _attach(
                    sim,
                    node,
                    endpoint,
                    cfg,
                    "client",
                    self._on_event(index),
                    oscore_contexts={None: oscore_context("client", index)},
                    on_sealed=self._remember,
                )
            )
        self._options = [(codec.Opt.CONTENT_FORMAT, TEXT_PLAIN)]

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

    def _arrived(self, request: codec.Message, addr: Hashable) -> ResourceResponse:
        if self.work.arrived(request.payload) is None:
            return ResourceResponse(codec.Code.BAD_REQUEST)
        return ResourceResponse(codec.Code.CHANGED)

    def _on_event(self, producer: int) -> Callable[[object], None]:
        def on_event(event: object) -> None:
            request_id = getattr(event, "request_id", None)
            key = (producer, request_id) if isinstance(request_id, int) else None
            rid = self._requests.pop(key, None) if key is not None else None
            if rid is not None and isinstance(event, RequestFailed):
                self.work.failed(rid)
            elif rid is None:
                self._record(event)

        return on_event


class _Gateway:
    """The gateway's client endpoint, shared by the GET and Observe senders."""

    def __init__(
        self,
        sim: Simulator,
        net: Network,
        cfg: ProtocolCoapSettings,
        on_event: Callable[[object], None],
        addresses: list[tuple[str, int]],
        operation: str = COAP_MESSAGE,
    ) -> None:
        endpoint = CoapEndpoint(
            sim.rng("coap/gateway"), coap_params(cfg), token_length=cfg.token_length
        )
        contexts: dict[Hashable, SecurityContext] = {
            addr: oscore_context("client", i) for i, addr in enumerate(addresses)
        }
        self.endpoint, self.driver = _attach(
            sim,
            net.ip_node("client"),
            endpoint,
            cfg,
            "client",
            on_event,
            operation=operation,
            oscore_contexts=contexts,
        )


class _Request:
    """A GET the gateway has open."""

    __slots__ = ("producer", "rid", "sent_s", "token")

    def __init__(self, producer: int, rid: int | None, sent_s: float, token: bytes) -> None:
        self.producer = producer
        self.rid = rid  # the item it asks for (scheduled); None when it polls
        self.sent_s = sent_s
        self.token = token


class CoapGet(_CoapSender):
    """coap-get-*: the gateway GETs the producers' current value."""

    drives = "pull"
    requests: int = 0

    def __init__(self, work: Publisher, sim: Simulator, net: Network, config: RunSettings) -> None:
        cfg = required(config.protocol.coap, "protocol.coap")
        self.work = work
        self.sim = sim
        self.path = config.workload.path
        self.confirmable = cfg.type == "con"
        self.token_length = cfg.token_length
        self._security(cfg)
        port = coap_port(cfg)
        producers = net.ip_nodes("producer")
        self.addresses = [(address_text(net.address(node)), port) for node in producers]
        self.gateway = _Gateway(sim, net, cfg, self._on_event, self.addresses)
        self.requests = 0
        self._open: dict[int, _Request] = {}  # gateway request id -> request
        self._by_token: dict[bytes, _Request] = {}
        self._next_token = 0
        # Polled: each producer's latest reading; which reading each open request was
        # answered with (by token), and how many open requests carry each reading;
        # when the first GET since the producer's last fresh reading went out (its
        # next fresh reading's transaction began then: EXPERIMENTS.md, S4).
        self.latest: list[tuple[int, bytes] | None] = []
        self.asking_since: list[float | None] = []
        self._served: dict[bytes, int] = {}
        self._carrying: dict[int, int] = {}
        self._replaced: set[int] = set()
        self.producers = []
        for index, node in enumerate(producers):
            endpoint = CoapEndpoint(sim.rng(f"coap/{node.name}"), coap_params(cfg))
            endpoint.add_resource(
                self.path,
                self._server_of(index),
                methods={codec.Code.GET},
                content_format=APPLICATION_JSON,
            )
            self.producers.append(_producer_server(self, sim, node, endpoint, cfg, index, port))
            self.latest.append(None)
            self.asking_since.append(None)

    def _endpoints(self) -> list[CoapEndpoint | SecuredEndpoint]:
        return [self.gateway.endpoint, *super()._endpoints()]

    # ---- the gateway ------------------------------------------------------------------

    def request(self, producer: int, rid: int) -> None:
        self._get(producer, rid)

    def poll(self, producer: int) -> None:
        if self.asking_since[producer] is None:
            self.asking_since[producer] = self.sim.now
        self._get(producer, None)

    def _get(self, producer: int, rid: int | None) -> None:
        self.requests += 1
        token = self._token()
        gateway = self.gateway
        request_id = gateway.endpoint.request(
            self.sim.now,
            self.addresses[producer],
            codec.Code.GET,
            self.path,
            confirmable=self.confirmable,
            token=token,
        )
        request = _Request(producer, rid, self.sim.now, token)
        self._open[request_id] = request
        self._by_token[token] = request
        gateway.driver.pump()

    def _token(self) -> bytes:
        """A token no open request uses (gcoap draws them; any unique value does)."""
        size = self.token_length
        space = 1 << (8 * size)
        while True:
            self._next_token = (self._next_token + 1) % space
            token = self._next_token.to_bytes(size, "big")
            if token not in self._by_token:
                return token

    def _on_event(self, event: object) -> None:
        if not isinstance(event, (ResponseReceived, RequestFailed)):
            self._record(event)
            return
        request = self._open.pop(event.request_id, None)
        if request is None:
            return
        del self._by_token[request.token]
        answer = event.response if isinstance(event, ResponseReceived) else None
        if answer is not None and answer.code != codec.Code.CONTENT:
            answer = None  # only a 2.05 carries a reading
        if request.rid is not None:  # scheduled: the request is the item
            if answer is not None:
                self.work.delivered(request.rid, len(answer.payload))
            else:
                self.work.failed(request.rid)
            return
        if answer is not None:
            producer = request.producer
            if self.work.arrived(answer.payload, since=self.asking_since[producer]):
                self.asking_since[producer] = None  # the next GET asks for the next one
        self._release(request.token)

    # ---- the producers ----------------------------------------------------------------

    def _server_of(self, producer: int) -> Handler:
        """The handler of producer `producer`'s resource."""

        def serve(request: codec.Message, addr: Hashable) -> ResourceResponse:
            return self._serve(producer, request)

        return serve

    def _serve(self, producer: int, request: codec.Message) -> ResourceResponse:
        asked = self._by_token.get(request.token)
        if asked is not None and asked.rid is not None:
            # Scheduled: the current value, taken now; it carries the item's id.
            payload = self.work.reading_for(asked.rid)
            return ResourceResponse(codec.Code.CONTENT, payload, APPLICATION_JSON)
        latest = self.latest[producer]
        if latest is None:  # nothing taken yet (coap_get_srv_unsch: 5.03, no payload)
            return ResourceResponse(codec.Code.SERVICE_UNAVAILABLE, b"", APPLICATION_JSON)
        rid, payload = latest
        if asked is not None and request.token not in self._served:
            self._served[request.token] = rid
            self._carrying[rid] = self._carrying.get(rid, 0) + 1
        return ResourceResponse(codec.Code.CONTENT, payload, APPLICATION_JSON)

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        """Polled: the producer took a reading; the one it replaces may now be lost."""
        previous = self.latest[producer]
        self.latest[producer] = (rid, payload)
        if previous is not None:
            old = previous[0]
            if self._carrying.get(old):
                self._replaced.add(old)
            else:
                self.work.failed(old)

    def _release(self, token: bytes) -> None:
        """A polled request ended: the reading it was answered with may now be lost."""
        rid = self._served.pop(token, None)
        if rid is None:
            return
        left = self._carrying[rid] - 1
        if left:
            self._carrying[rid] = left
            return
        del self._carrying[rid]
        if rid in self._replaced:
            self._replaced.discard(rid)
            self.work.failed(rid)


class CoapObserve(_CoapSender):
    """coap-obs: the gateway observes each producer; each reading a NON notification."""

    drives = "push"

    def __init__(self, work: Publisher, sim: Simulator, net: Network, config: RunSettings) -> None:
        cfg = required(config.protocol.coap, "protocol.coap")
        self.work = work
        self.sim = sim
        self.path = config.workload.path
        self.start_s = config.workload.start_s
        self._security(cfg)
        port = coap_port(cfg)
        producers = net.ip_nodes("producer")
        self.addresses = [(address_text(net.address(node)), port) for node in producers]
        # aiocoap keeps its NON registration open while coap_observe_cli waits for
        # the answer (at most 10 s), longer than gcoap's NON timeout.
        self.gateway = _Gateway(
            sim,
            net,
            replace(cfg, non_timeout_s=OBSERVE_WAIT_S[1]),
            self._on_event,
            self.addresses,
            COAP_NOTIFICATION,
        )
        self._rng = sim.rng("workload/observe")
        self._registrations: dict[int, int] = {}  # gateway request id -> producer
        self._current: list[int | None] = []  # each producer's registration attempt
        self.latest: list[bytes] = []
        self.producers = []
        params = replace(coap_params(cfg), observe_one_per_peer=True)
        for index, node in enumerate(producers):
            endpoint = CoapEndpoint(sim.rng(f"coap/{node.name}"), params)
            endpoint.add_resource(
                self.path,
                self._latest_of(index),
                observable=True,
                methods={codec.Code.GET},
                content_format=APPLICATION_JSON,
            )
            self.producers.append(_producer_server(self, sim, node, endpoint, cfg, index, port))
            self.latest.append(work.idle_reading(index))
            self._current.append(None)

    def _latest_of(self, producer: int) -> Handler:
        """The handler of producer `producer`'s resource: its latest reading."""

        def latest(request: codec.Message, addr: Hashable) -> ResourceResponse:
            return ResourceResponse(codec.Code.CONTENT, self.latest[producer], APPLICATION_JSON)

        return latest

    def _endpoints(self) -> list[CoapEndpoint | SecuredEndpoint]:
        return [self.gateway.endpoint, *super()._endpoints()]

    def start(self) -> None:
        for index in range(len(self.producers)):
            self.sim.at(self.start_s + self._rng.uniform(*OBSERVE_START_S), self._register, index)

    def ready(self, producer: int) -> bool:
        endpoint, _ = self.producers[producer]
        return endpoint.observers(self.path) > 0

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        self.latest[producer] = payload
        endpoint, driver = self.producers[producer]
        endpoint.notify(self.sim.now, self.path, confirmable=False)
        driver.pump()
        self.work.handed_over(rid)

    def _register(self, producer: int) -> None:
        gateway = self.gateway
        request = gateway.endpoint.request(
            self.sim.now,
            self.addresses[producer],
            codec.Code.GET,
            self.path,
            confirmable=False,
            observe=True,
        )
        self._registrations[request] = producer
        self._current[producer] = request
        gateway.driver.pump()
        wait = self._rng.uniform(*OBSERVE_WAIT_S)
        self.sim.schedule(wait, self._waited, producer, request)

    def _waited(self, producer: int, request: int) -> None:
        """No answer within the wait: forget the attempt and register again."""
        if self._current[producer] != request:
            return  # answered
        self._registrations.pop(request, None)
        self.gateway.endpoint.cancel(self.sim.now, request)
        self._register(producer)

    def _on_event(self, event: object) -> None:
        if isinstance(event, NotificationReceived):
            self.work.arrived(event.message.payload)
            return
        request_id = getattr(event, "request_id", None)
        producer = (
            self._registrations.pop(request_id, None) if isinstance(request_id, int) else None
        )
        if producer is None:
            self._record(event)
            return
        if isinstance(event, ResponseReceived) and event.response.code >> 5 == 2:
            self._current[producer] = None
            # The first answer may already be a notification carrying a reading.
            if read_id(event.response.payload) is not None:
                self.work.arrived(event.response.payload)
