"""The Entity Manager on a real UDP socket: `iotbench serve coap-em`.

The same sans-I/O EntityManager as in the simulator (apps/em), behind the
real-mode datagram driver. Members are any CoAP servers, e.g. other
`iotbench serve coap` processes, which serve /mc for multicast entities.

Multicast entities need an IPv6 socket (the groups are ff1e::89:<n>); on an
IPv4 one the EM refuses them with 5.01 and says why. Answers that take more
than SEPARATE_AFTER_S leave as separate responses after an empty ACK, well
before a client's first retransmission (ACK_TIMEOUT, 2 s).
"""

from __future__ import annotations

import dataclasses
import random
import socket
from collections.abc import Callable

from iotbench.apps.em.manager import EmParams, EntityManager
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.coap.secured import SecuredEndpoint
from iotbench.real.coap import SERVER_PARAMS
from iotbench.real.coap_group import interface_index
from iotbench.real.driver import AsyncDatagramDriver, open_server_driver, serve_until_cancelled

SEPARATE_AFTER_S = 1.0
_LOOPBACK_NAMES = {"127.0.0.1": ("localhost",), "::1": ("localhost", "ip6-localhost")}


async def serve_coap_em(
    host: str = "127.0.0.1",
    port: int = 5683,
    *,
    params: EmParams | None = None,
    security: Callable[[random.Random, Callable[[object], bool]], object] | None = None,
    on_ready: Callable[[AsyncDatagramDriver], None] | None = None,
) -> None:
    """Serve an Entity Manager at host:port until cancelled.

    `security(rng, is_member)` makes the layer clients talk to the EM
    through (DTLS or OSCORE); members stay plain CoAP servers, and
    `is_member` tells the layer which peers those are. The layer's
    peer_identity names the clients for EmParams.allowed_creators."""
    coap = dataclasses.replace(SERVER_PARAMS, separate_response_after_s=SEPARATE_AFTER_S)
    rng = random.SystemRandom()
    endpoint = CoapEndpoint(
        rng, coap, strict=False
    )  # real sockets: our own errors logged, not raised
    identity_of = None
    if security is not None:
        layer = security(rng, lambda addr: em.is_member_address(addr))
        endpoint = SecuredEndpoint(endpoint, layer)
        identity_of = layer.peer_identity
    em = EntityManager(endpoint, params or EmParams(), identity_of)
    driver: AsyncDatagramDriver | None = None

    def unreachable_peer(addr, exc: OSError | None = None) -> None:
        # An ICMP error, or the OS refusing to send (e.g. no multicast route).
        em.peer_unreachable(driver.now(), addr)
        driver.pump()

    driver = await open_server_driver(
        em, host, port, on_unreachable=unreachable_peer, on_send_error=unreachable_peer
    )
    bound = driver.transport.get_extra_info("sockname")[0]
    sock = driver.transport.get_extra_info("socket")
    if sock.family == socket.AF_INET6 and (ifindex := interface_index(bound)):
        # Group requests leave by the interface the EM serves on.
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, ifindex)
    names = {host, bound, *_LOOPBACK_NAMES.get(bound, ())}
    reason = None
    if sock.family != socket.AF_INET6:
        reason = (
            f"this Entity Manager's socket is IPv4 ({bound}); multicast entities use IPv6 "
            "groups: serve on an IPv6 address (e.g. --host ::1 or --host ::)"
        )
    em.params = dataclasses.replace(
        em.params,
        local_hosts=tuple(sorted(names | set(em.params.local_hosts))),
        multicast_unavailable=reason,
    )
    await serve_until_cancelled(driver, on_ready)
