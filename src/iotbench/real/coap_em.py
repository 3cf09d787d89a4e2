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
from collections.abc import Callable, Hashable
from typing import Protocol

from iotbench.apps.em.manager import EmParams, EntityManager
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.coap.secured import DatagramSecurity, SecuredEndpoint
from iotbench.real.coap import SERVER_PARAMS
from iotbench.real.coap_group import interface_index
from iotbench.real.driver import AsyncDatagramDriver, open_server_driver, serve_until_cancelled

SEPARATE_AFTER_S = 1.0

#: What a reachable EM bounds unless told otherwise (docs/coap-em.md, "Safeguards";
#: apps/em/safeguards.py says why each bound exists). Members on this host only;
#: per client (an IPv4 address, an IPv6 /64) 8 entities and 4 queries in progress;
#: for everyone 256 entities and 64 queries; one query at most 256 requests to
#: members, 64 KiB of them with retransmissions, through 4 levels of entities, and
#: over after 93 s (RFC 7252's MAX_TRANSMIT_WAIT, when a CON member is given up).
REAL_MODE_PARAMS = EmParams(
    max_entities=256,
    allowed_members=("127.0.0.0/8", "::1/128"),
    max_entities_per_client=8,
    max_queries_per_client=4,
    max_queries=64,
    max_requests_per_query=256,
    max_bytes_per_query=65_536,
    max_nesting_depth=4,
    client_prefix_v6=64,
    member_timeout_s=93.0,
)
_LOOPBACK_NAMES = {
    "127.0.0.1": ("localhost",),
    "::1": ("localhost", "ip6-localhost"),
    # A socket on every address also gets what is sent to the loopback ones.
    "0.0.0.0": ("127.0.0.1", "localhost"),
    "::": ("::1", "localhost", "ip6-localhost", "127.0.0.1"),
}


class ClientSecurity(DatagramSecurity, Protocol):
    """A security layer that says who a client proved to be (DTLS's and OSCORE's)."""

    def peer_identity(self, addr: Hashable) -> str | None: ...


async def serve_coap_em(
    host: str = "127.0.0.1",
    port: int = 5683,
    *,
    params: EmParams | None = None,
    security: Callable[[random.Random, Callable[[object], bool]], ClientSecurity] | None = None,
    on_ready: Callable[[AsyncDatagramDriver], None] | None = None,
) -> None:
    """Serve an Entity Manager at host:port until cancelled.

    `security(rng, is_member)` makes the layer clients talk to the EM
    through (DTLS or OSCORE); members stay plain CoAP servers, and
    `is_member` tells the layer which peers those are. The layer's
    peer_identity names the clients for EmParams.allowed_creators and owns
    what they create. `params`: REAL_MODE_PARAMS when None."""
    coap = dataclasses.replace(SERVER_PARAMS, separate_response_after_s=SEPARATE_AFTER_S)
    rng = random.SystemRandom()
    plain = CoapEndpoint(rng, coap, strict=False)  # real sockets: our own errors logged, not raised
    endpoint: CoapEndpoint | SecuredEndpoint = plain
    identity_of = None
    if security is not None:
        layer = security(rng, lambda addr: em.is_member_address(addr))
        endpoint = SecuredEndpoint(plain, layer)
        identity_of = layer.peer_identity
    # EntityManager is typed for a CoapEndpoint; a SecuredEndpoint takes the same
    # calls (those with a time itself, the rest forwarded to its endpoint).
    em = EntityManager(endpoint, params or REAL_MODE_PARAMS, identity_of)  # type: ignore[arg-type]
    driver: AsyncDatagramDriver | None = None

    def unreachable_peer(addr, exc: OSError | None = None) -> None:
        # An ICMP error, or the OS refusing to send (e.g. no multicast route).
        assert driver is not None  # reported by the driver's own socket
        em.peer_unreachable(driver.now(), addr)
        driver.pump()

    driver = await open_server_driver(
        em, host, port, on_unreachable=unreachable_peer, on_send_error=unreachable_peer
    )
    transport = driver.transport
    assert transport is not None  # an open driver's
    bound = transport.get_extra_info("sockname")[0]
    sock = transport.get_extra_info("socket")
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
        port=transport.get_extra_info("sockname")[1],
        multicast_unavailable=reason,
    )
    await serve_until_cancelled(driver, on_ready)
