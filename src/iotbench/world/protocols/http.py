"""HTTP in a run: TCP stacks on both nodes, the sensor's HTTP server, the item client."""

from __future__ import annotations

from iotbench.apps.http.content import host_header
from iotbench.apps.http.http1 import Http1Client, Http1Server
from iotbench.apps.http.http2 import Http2Client, Http2Server
from iotbench.apps.requesters import ItemClient
from iotbench.apps.sensors import make_resource
from iotbench.net.ip import address_text
from iotbench.net.tcp import Connected, TcpSocket, TcpStack
from iotbench.net.tcp.stack import EventHandler
from iotbench.scenarios.settings import RunSettings, required
from iotbench.sim import Simulator
from iotbench.world.networks import Network
from iotbench.world.protocols.tcp import tcp_params


def prime_fast_open(stack: TcpStack, server: bytes, port: int) -> None:
    """Open and close one connection so that the client caches the server's cookie."""

    def on_event(event: object) -> None:
        if isinstance(event, Connected):
            sock.close()

    sock = stack.connect(server, port, on_event)


def build_http(sim: Simulator, net: Network, config: RunSettings) -> ItemClient:
    cfg = required(config.protocol.http, "protocol.http")
    tcp_cfg = required(config.protocol.tcp, "protocol.tcp")
    workload = config.workload
    params = tcp_params(tcp_cfg)
    server_node, client_node = net.ip_node("producer"), net.ip_node("client")
    server_stack = TcpStack(sim, server_node, params)
    client_stack = TcpStack(sim, client_node, params)
    resource = make_resource(workload.resource, sim.rng("sensor"), workload.object_size_bytes)
    resources = {workload.path: resource}
    port = cfg.port
    response_headers = list(cfg.response_headers)  # (name, value) pairs
    request_headers = list(cfg.request_headers)
    per_request = cfg.connection == "per-request"
    server = net.address(server_node)
    host = host_header(address_text(server), port)

    def connect(on_event: EventHandler, data: bytes, header_len: int) -> TcpSocket:
        return client_stack.connect(server, port, on_event, data=data, header_len=header_len)

    if tcp_cfg.prime_fast_open:
        prime_fast_open(client_stack, server, port)
    if cfg.version == "1.1":
        Http1Server(server_stack, port, resources, response_headers)
        return Http1Client(connect, host, workload.path, request_headers, per_request)
    minimal = cfg.minimal_settings
    Http2Server(server_stack, port, resources, response_headers, minimal)
    return Http2Client(connect, host, workload.path, request_headers, per_request, minimal)
