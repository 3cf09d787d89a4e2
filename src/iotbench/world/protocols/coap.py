"""CoAP in a run: the sensor's server endpoint and the item client."""

from __future__ import annotations

from iotbench.apps.coap_resources import serve_reading
from iotbench.apps.driver import DatagramDriver
from iotbench.apps.requesters import Done, ItemClient
from iotbench.apps.sensors import make_resource
from iotbench.metrics.items import Item
from iotbench.net.ip import address_text
from iotbench.proto.coap import codec
from iotbench.proto.coap.endpoint import CoapEndpoint, RequestFailed, ResponseReceived
from iotbench.proto.coap.params import CoapParams
from iotbench.scenarios.settings import Settings
from iotbench.sim import Simulator
from iotbench.world.networks import Network

COAP_PORT = 5683


def coap_params(cfg: Settings, **overrides) -> CoapParams:
    """protocol.coap's parameters (keyword arguments add or override CoapParams')."""
    return CoapParams(
        ack_timeout_s=cfg.ack_timeout_s,
        ack_random_factor=cfg.ack_random_factor,
        max_retransmit=cfg.max_retransmit,
        nstart=cfg.nstart,
        non_timeout_s=cfg.non_timeout_s,
        rto=cfg.rto,
        backoff=cfg.backoff,
        block_size_bytes=cfg.block_size_bytes,
        **overrides,
    )


class CoapItemClient:
    """One CoAP GET per item, CON or NON, against the server's resource."""

    def __init__(self, sim: Simulator, net: Network, config: Settings) -> None:
        cfg = config.protocol.coap
        self.sim = sim
        self.path = config.workload.path
        self.confirmable = cfg.type == "con"
        self.server = (address_text(net.address(net.node("producer"))), COAP_PORT)
        self.endpoint = CoapEndpoint(
            sim.rng("coap/client"), coap_params(cfg), token_length=cfg.token_length
        )
        self.driver = DatagramDriver(
            sim, net.node("client"), self.endpoint, self._on_event, codec.header_length
        )
        self._pending: dict[object, tuple[Item, Done]] = {}

    def start(self, item: Item, done: Done, handed_over: object = None) -> None:
        # (Request-response: the response ends the item; nothing is handed over.)
        request_id = self.endpoint.request(
            self.sim.now,
            self.server,
            codec.Code.GET,
            self.path,
            confirmable=self.confirmable,
        )
        self._pending[request_id] = (item, done)
        self.driver.pump()

    def _on_event(self, event: object) -> None:
        if isinstance(event, ResponseReceived):
            entry = self._pending.pop(event.request_id, None)
            if entry is not None:
                item, done = entry
                ok = codec.is_response(event.response.code) and event.response.code >> 5 == 2
                done(item, ok, len(event.response.payload))
        elif isinstance(event, RequestFailed):
            entry = self._pending.pop(event.request_id, None)
            if entry is not None:
                item, done = entry
                done(item, False, 0)


def start_coap_server(sim: Simulator, net: Network, config: Settings) -> CoapEndpoint:
    cfg = config.protocol.coap
    workload = config.workload
    resource = make_resource(workload.resource, sim.rng("sensor"), workload.object_size_bytes)
    endpoint = CoapEndpoint(sim.rng("coap/server"), coap_params(cfg))
    serve_reading(endpoint, workload.path, resource)
    server = net.node("producer")
    DatagramDriver(sim, server, endpoint, lambda event: None, codec.header_length, COAP_PORT)
    return endpoint


def build_coap(sim: Simulator, net: Network, config: Settings) -> ItemClient:
    start_coap_server(sim, net, config)
    return CoapItemClient(sim, net, config)
