"""QUIC in a run: a server at the sensor answering with readings, a client at the sink."""

from __future__ import annotations

from collections.abc import Hashable

from iotbench.apps.driver import DatagramDriver
from iotbench.apps.requesters import Done, ItemClient
from iotbench.apps.sensors import make_resource
from iotbench.metrics.items import Item
from iotbench.net.ip import address_text
from iotbench.proto.quic.certs import certificate_pem, make_certificate
from iotbench.proto.quic.endpoint import QuicClient, QuicServer, RequestFailed, ResponseReceived
from iotbench.proto.quic.params import QuicParams
from iotbench.scenarios.settings import RunSettings, required
from iotbench.sim import Simulator
from iotbench.world.networks import Network

SERVER_NAME = "sensor.iotbench"


def quic_bytes(data: bytes) -> int:
    """QUIC encrypts its frames, so a datagram cannot be split into protocol header
    and application data on the wire: all of it counts as application header."""
    return len(data)


class QuicItemClient:
    """One request per item (an ItemClient)."""

    def __init__(
        self,
        sim: Simulator,
        driver: DatagramDriver | None,
        client: QuicClient,
        server: Hashable,
        path: str,
    ) -> None:
        self.sim = sim
        self.driver = driver  # build_quic sets it when it is made, before any item
        self.client = client
        self.server = server
        self.request = path.encode()
        self._pending: dict[int, tuple[Item, Done]] = {}

    def start(self, item: Item, done: Done, handed_over: object = None) -> None:
        # (Request-response: the response ends the item; nothing is handed over.)
        request_id = self.client.request(self.sim.now, self.server, self.request)
        self._pending[request_id] = (item, done)
        assert self.driver is not None  # see __init__
        self.driver.pump()

    def on_event(self, event: object) -> None:
        if isinstance(event, ResponseReceived):
            pending = self._pending.pop(event.request_id, None)
            if pending is not None:
                item, done = pending
                done(item, True, len(event.data))
        elif isinstance(event, RequestFailed):
            pending = self._pending.pop(event.request_id, None)
            if pending is not None:
                item, done = pending
                done(item, False, 0)


def build_quic(sim: Simulator, net: Network, config: RunSettings) -> ItemClient:
    cfg = required(config.protocol.quic, "protocol.quic")
    workload = config.workload
    params = QuicParams(
        connection=cfg.connection,
        zero_rtt=cfg.zero_rtt,
        idle_timeout_s=cfg.idle_timeout_s,
        initial_rtt_s=cfg.initial_rtt_s,
        congestion_control=cfg.congestion_control,
    )
    # The run's certificate depends on its seed alone (see proto/quic/certs.py).
    cert, key = make_certificate(sim.rng("quic/certificate").getrandbits(63), SERVER_NAME)
    sensor = make_resource(workload.resource, sim.rng("sensor"), workload.object_size_bytes)
    path = workload.path

    def answer(request: bytes) -> bytes:
        return sensor.read() if request.decode("utf-8", "replace") == path else b""

    server = QuicServer(params, cert, key, answer)
    server_node, client_node = net.ip_node("producer"), net.ip_node("client")
    DatagramDriver(sim, server_node, server, lambda event: None, quic_bytes, cfg.port)
    client = QuicClient(params, certificate_pem(cert), SERVER_NAME)
    item_client = QuicItemClient(
        sim, None, client, (address_text(net.address(server_node)), cfg.port), path
    )
    item_client.driver = DatagramDriver(sim, client_node, client, item_client.on_event, quic_bytes)
    return item_client
