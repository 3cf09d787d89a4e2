"""CoAP in a run: the sensor's server endpoint and the item client.

With `protocol.coap.security` both endpoints sit behind a security layer
(proto/coap/secured.py): DTLS with the pre-shared key below, the client
starting the handshake when its first request goes out; or OSCORE with the
security context below, which both ends hold from the start.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Literal, TypeVar

from iotbench.apps.coap_resources import serve_reading
from iotbench.apps.driver import DatagramDriver
from iotbench.apps.requesters import Done, ItemClient
from iotbench.apps.sensors import make_resource
from iotbench.metrics.items import Item
from iotbench.net.ip import address_text
from iotbench.proto.coap import codec
from iotbench.proto.coap.endpoint import CoapEndpoint, RequestFailed, ResponseReceived
from iotbench.proto.coap.params import CoapParams
from iotbench.proto.coap.secured import SecuredEndpoint
from iotbench.proto.dtls import record as dtls_record
from iotbench.proto.dtls.connection import HandshakeDone, HandshakeFailed
from iotbench.proto.dtls.layer import DtlsLayer
from iotbench.proto.dtls.params import DtlsParams, PskClientCredentials, PskServerCredentials
from iotbench.proto.oscore.context import SecurityContext
from iotbench.proto.oscore.layer import OscoreLayer
from iotbench.scenarios.settings import required
from iotbench.scenarios.settings_types import ProtocolCoapSettings, RunSettings
from iotbench.sim import Simulator
from iotbench.world.networks import Network

COAP_PORT = 5683
COAPS_PORT = 5684  # RFC 7252 12.7: CoAP over DTLS
#: The simulated devices' pre-shared key (docs/coap.md says how to give it to
#: Wireshark, which then shows the CoAP inside the DTLS records of a pcap).
SIM_PSK_IDENTITY, SIM_PSK_KEY = b"iotbench", b"iotbench-psk"
#: The simulated devices' OSCORE context: RFC 8613 C.1's Master Secret and Salt;
#: Sender IDs 0x01 (client) and 0x02 (server).
SIM_OSCORE_SECRET = bytes(range(1, 17))
SIM_OSCORE_SALT = bytes.fromhex("9e7ca92223786340")
SIM_OSCORE_CLIENT, SIM_OSCORE_SERVER = b"\x01", b"\x02"


def coap_port(cfg: ProtocolCoapSettings) -> int:
    """coaps' port for DTLS; OSCORE protects messages, not the transport: coap's."""
    security = cfg.security
    return COAPS_PORT if security is not None and security.mode == "dtls" else COAP_PORT


def oscore_context(role: str, pair: int | None = None) -> SecurityContext:
    """The simulation's OSCORE context of one client-server pair, at `role`'s end.

    S2 and S3 have one pair (`pair` None): Sender IDs 0x01 and 0x02. S4's
    many producers number theirs: pair i's IDs are 0x01 i (the end that is
    not the producer) and 0x02 i (the producer), so no two pairs derive the
    same keys and no nonce is used twice under one key (RFC 8613 3.3); i takes
    as many bytes as it needs (IDs may have 7)."""
    client, server = SIM_OSCORE_CLIENT, SIM_OSCORE_SERVER
    if pair is not None:
        number = pair.to_bytes(max(1, (pair.bit_length() + 7) // 8), "big")
        client, server = client + number, server + number
    ours, theirs = (client, server) if role == "client" else (server, client)
    return SecurityContext(SIM_OSCORE_SECRET, ours, theirs, master_salt=SIM_OSCORE_SALT)


def oscore_layer(
    sim: Simulator,
    role: str,
    stream: str,
    contexts: dict[Hashable, SecurityContext] | None = None,
) -> OscoreLayer:
    """A client's layer (its contexts by server address, or None: one for any
    server), or a server's that knows its clients' contexts; by default S2's
    and S3's one pair."""
    rng = sim.rng(f"oscore/{stream}")
    if contexts is None:
        contexts = {None: oscore_context(role)}
    if role == "client":
        layer = OscoreLayer(rng, any_peer=contexts.get(None))
        for addr, ctx in contexts.items():
            if addr is not None:
                layer.add_peer(addr, ctx)
        return layer
    layer = OscoreLayer(rng)
    for ctx in contexts.values():
        layer.add_context(ctx)
    return layer


def secure(
    sim: Simulator,
    endpoint: CoapEndpoint,
    cfg: ProtocolCoapSettings,
    role: str,
    stream: str,
    oscore_contexts: dict[Hashable, SecurityContext] | None = None,
) -> tuple[CoapEndpoint | SecuredEndpoint, Callable[[bytes], int]]:
    """`endpoint` behind protocol.coap.security's layer, and how to split its datagrams
    into header and payload (the app_layers dissector); unchanged without security.
    `oscore_contexts`: as oscore_layer takes them."""
    security = cfg.security
    if security is None:
        return endpoint, codec.header_length
    if security.mode == "oscore":
        oscore = oscore_layer(sim, role, stream, oscore_contexts)
        return SecuredEndpoint(endpoint, oscore), codec.header_length
    params = DtlsParams(
        initial_timeout_s=security.handshake_timeout_s,
        max_timeout_s=security.handshake_max_timeout_s,
        max_retransmissions=security.handshake_max_retransmit,
    )
    rng = sim.rng(f"dtls/{stream}")
    if role == "client":
        client = PskClientCredentials(SIM_PSK_IDENTITY, SIM_PSK_KEY)
        dtls = DtlsLayer(rng, params, client=client)
    else:
        server = PskServerCredentials({SIM_PSK_IDENTITY: SIM_PSK_KEY})
        dtls = DtlsLayer(rng, params, server=server)
    return SecuredEndpoint(endpoint, dtls), dtls_record.header_length


def plain(endpoint: CoapEndpoint | SecuredEndpoint) -> CoapEndpoint:
    """The CoAP endpoint itself, behind its security layer if it has one (where
    resources are served)."""
    return endpoint.endpoint if isinstance(endpoint, SecuredEndpoint) else endpoint


RTOS: tuple[Literal["rfc7252", "cocoa"], ...] = ("rfc7252", "cocoa")
BACKOFFS: tuple[Literal["exponential", "constant"], ...] = ("exponential", "constant")
_Choice = TypeVar("_Choice", bound=str)


def _one_of(value: str, allowed: tuple[_Choice, ...], key: str) -> _Choice:
    """`value` as the literal type the stack takes (the schema allows no other)."""
    for choice in allowed:
        if value == choice:
            return choice
    raise ValueError(f"{key}: {value!r} is not one of {', '.join(allowed)}")


def coap_params(cfg: ProtocolCoapSettings) -> CoapParams:
    """protocol.coap's parameters."""
    return CoapParams(
        ack_timeout_s=cfg.ack_timeout_s,
        ack_random_factor=cfg.ack_random_factor,
        max_retransmit=cfg.max_retransmit,
        nstart=cfg.nstart,
        non_timeout_s=cfg.non_timeout_s,
        rto=_one_of(cfg.rto, RTOS, "protocol.coap.rto"),
        backoff=_one_of(cfg.backoff, BACKOFFS, "protocol.coap.backoff"),
        block_size_bytes=cfg.block_size_bytes,
    )


class HandshakeLog:
    """A DTLS client's handshakes in a run, from its layer's events: the dtls_*
    metrics (docs/metrics.md)."""

    def __init__(self) -> None:
        self.done: list[HandshakeDone] = []
        self.failures = 0

    def record(self, event: object) -> None:
        """Keep `event` if it is a handshake's end; anything else is ignored."""
        if isinstance(event, HandshakeDone):
            self.done.append(event)
        elif isinstance(event, HandshakeFailed):
            self.failures += 1

    def metrics(self) -> dict[str, float | int]:
        """What the handshakes took and what they cost the client (datagrams and
        bytes it sent and received, flights sent again)."""
        done = self.done
        return {
            "dtls_handshakes": len(done),
            "dtls_handshake_failures": self.failures,
            "dtls_handshake_time_mean_s": (
                sum(h.duration_s for h in done) / len(done) if done else float("nan")
            ),
            "dtls_handshake_packets": sum(h.datagrams_sent + h.datagrams_received for h in done),
            "dtls_handshake_bytes": sum(h.bytes_sent + h.bytes_received for h in done),
            "dtls_handshake_retransmissions": sum(h.retransmissions for h in done),
        }


class CoapItemClient:
    """One CoAP GET per item, CON or NON, against the server's resource."""

    def __init__(self, sim: Simulator, net: Network, config: RunSettings) -> None:
        cfg = required(config.protocol.coap, "protocol.coap")
        self.sim = sim
        self.path = config.workload.path
        self.confirmable = cfg.type == "con"
        port = coap_port(cfg)
        self.server = (address_text(net.address(net.ip_node("producer"))), port)
        self.endpoint, header_length = secure(
            sim,
            CoapEndpoint(sim.rng("coap/client"), coap_params(cfg), token_length=cfg.token_length),
            cfg,
            "client",
            "client",
        )
        # DTLS per request: the session ends with its item (close_notify).
        self.close_after_item = (
            cfg.security is not None
            and cfg.security.mode == "dtls"
            and cfg.security.session == "per-request"
        )
        self.driver = DatagramDriver(
            sim, net.ip_node("client"), self.endpoint, self._on_event, header_length
        )
        self._pending: dict[object, tuple[Item, Done]] = {}
        self.dtls = cfg.security is not None and cfg.security.mode == "dtls"
        self.handshakes = HandshakeLog()

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

    def metrics(self) -> dict[str, float | int]:
        return self.handshakes.metrics() if self.dtls else {}

    def _on_event(self, event: object) -> None:
        # The responses first: they are every run's events, the handshakes only DTLS's.
        if isinstance(event, ResponseReceived):
            entry = self._pending.pop(event.request_id, None)
            if entry is not None:
                item, done = entry
                ok = codec.is_response(event.response.code) and event.response.code >> 5 == 2
                self._item_over()
                done(item, ok, len(event.response.payload))
        elif isinstance(event, RequestFailed):
            entry = self._pending.pop(event.request_id, None)
            if entry is not None:
                item, done = entry
                self._item_over()
                done(item, False, 0)
        else:
            self.handshakes.record(event)

    def _item_over(self) -> None:
        # Before the next item starts, so that its request opens a new session.
        endpoint = self.endpoint
        if self.close_after_item and isinstance(endpoint, SecuredEndpoint):
            layer = endpoint.layer
            if isinstance(layer, DtlsLayer):  # close_after_item: a DTLS session
                layer.close(self.server)


def start_coap_server(
    sim: Simulator, net: Network, config: RunSettings
) -> CoapEndpoint | SecuredEndpoint:
    cfg = required(config.protocol.coap, "protocol.coap")
    workload = config.workload
    resource = make_resource(workload.resource, sim.rng("sensor"), workload.object_size_bytes)
    endpoint, header_length = secure(
        sim, CoapEndpoint(sim.rng("coap/server"), coap_params(cfg)), cfg, "server", "server"
    )
    serve_reading(plain(endpoint), workload.path, resource)
    server = net.ip_node("producer")
    port = coap_port(cfg)
    DatagramDriver(sim, server, endpoint, lambda event: None, header_length, port)
    return endpoint


def build_coap(sim: Simulator, net: Network, config: RunSettings) -> ItemClient:
    start_coap_server(sim, net, config)
    return CoapItemClient(sim, net, config)
