"""CoAP over real UDP sockets: the simulator's CoapEndpoint behind asyncio.

    await serve_coap("127.0.0.1", 5683)                    # until cancelled
    result = await coap_request("coap://127.0.0.1/voltage")  # one exchange

Real mode draws tokens and Message IDs from the operating system's random
source (RFC 7252 5.3.1 wants tokens an off-path attacker cannot guess); the
simulator injects a seeded stream instead. Everything else is the same code.

`security` (both calls) puts a datagram security layer under the endpoint
(proto/coap/secured.py): DTLS with pre-shared keys for coaps:// (port 5684,
real/coap_security.py), or OSCORE.
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
import socket
from collections.abc import Callable
from dataclasses import dataclass, field

from iotbench.apps.coap_resources import serve_sensor_set
from iotbench.proto.coap.codec import Code, Message, code_name
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.coap.events import NotificationReceived, RequestFailed, ResponseReceived
from iotbench.proto.coap.group import serve_membership
from iotbench.proto.coap.options import Opt
from iotbench.proto.coap.params import CoapParams
from iotbench.proto.coap.secured import DatagramSecurity, SecuredEndpoint
from iotbench.proto.coap.uri import CoapUriError, parse_coap_uri
from iotbench.proto.dtls.connection import HandshakeFailed
from iotbench.real.coap_group import GroupSockets
from iotbench.real.driver import (
    AsyncDatagramDriver,
    open_datagram_driver,
    open_server_driver,
    unreachable,
)

#: How long a client waits for the answer to its Observe deregistration.
DEREGISTER_WAIT_S = 2.0

METHODS = {"GET": Code.GET, "POST": Code.POST, "PUT": Code.PUT, "DELETE": Code.DELETE}


#: A server on real sockets makes every 5th notification to an observer a CON
#: (libcoap's COAP_OBS_MAX_NON is the same), so that an observer that is gone,
#: or that a spoofed registration made up, is detected within a few intervals
#: (RFC 7641 4.5) and not only after the 24 hours the RFC allows. Bodies over
#: 1,024 bytes go in RFC 7959 blocks of that size: RFC 7252 4.6 asks for
#: messages that fit a 1,280-byte IPv6 MTU.
SERVER_PARAMS = CoapParams(observe_con_every=5, block_size_bytes=1024)


class RealModeError(Exception):
    """A request could not be made (bad URI, unknown host...): a one-line message."""


# --------------------------------------------------------------------------- server


async def serve_coap(
    host: str = "127.0.0.1",
    port: int = 5683,
    *,
    object_size_bytes: int = 100,
    observe_interval_s: float = 5.0,
    params: CoapParams | None = None,
    security: Callable[[random.Random], DatagramSecurity] | None = None,
    on_ready: Callable[[AsyncDatagramDriver], None] | None = None,
) -> None:
    """Serve the sensor resources (apps/coap_resources.py) and /mc until cancelled.

    Observers of /voltage get a notification every `observe_interval_s`. /mc
    joins and leaves IPv6 groups (proto/coap/group.py, real/coap_group.py).
    """
    rng = random.SystemRandom()
    coap = CoapEndpoint(
        rng, params or SERVER_PARAMS, strict=False
    )  # real sockets: our own errors logged, not raised
    endpoint: CoapEndpoint | SecuredEndpoint = coap
    if security is not None:
        endpoint = SecuredEndpoint(coap, security(rng))
    # The resources live on the CoAP endpoint itself (a security layer hands it
    # add_resource as it is).
    serve_sensor_set(coap, rng, object_size_bytes)
    driver: AsyncDatagramDriver | None = None

    def unreachable_peer(addr: tuple[str, int]) -> None:
        assert driver is not None  # reported by the driver's own socket
        endpoint.peer_unreachable(driver.now(), addr)

    driver = await open_server_driver(endpoint, host, port, on_unreachable=unreachable_peer)
    groups = GroupSockets(driver)
    serve_membership(coap, groups.join, groups.leave, groups.groups)
    try:
        if on_ready is not None:
            on_ready(driver)
        while True:
            await asyncio.sleep(observe_interval_s)
            if endpoint.observers("/voltage"):
                endpoint.notify(driver.now(), "/voltage")
                driver.pump()
    finally:
        _close_sessions(endpoint, driver)
        groups.close()
        driver.close()


# --------------------------------------------------------------------------- client


@dataclass
class CoapResult:
    """What one client exchange produced."""

    response: Message | None = None
    failure: str | None = None  # "timeout", "reset", "max-retransmit", or unreachable
    rtt_s: float | None = None
    transmissions: int = 0
    notifications: list[Message] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.response is not None and self.response.code >> 5 == 2


async def _resolve(host: str, port: int) -> tuple[str, int, int]:
    """(address text, port, socket family) for a URI host."""
    try:
        ip = ipaddress.ip_address(host.partition("%")[0])
        return host, port, socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    except OSError as exc:
        raise RealModeError(f"cannot resolve host {host!r}: {exc}") from None
    family, _, _, _, sockaddr = infos[0]
    return str(sockaddr[0]), int(sockaddr[1]), family  # an IP socket address


async def coap_request(
    uri: str,
    method: str = "GET",
    *,
    payload: bytes = b"",
    content_format: int | None = None,
    confirmable: bool = True,
    observe: int = 0,
    timeout_s: float | None = None,
    params: CoapParams | None = None,
    security: Callable[[random.Random], DatagramSecurity] | None = None,
    secure_scheme: str = "coaps",
    on_update: Callable[[Message], None] | None = None,
) -> CoapResult:
    """One request to `uri`; with observe=N, also wait for N notifications.

    on_update, when observing, is called with the registration response and
    with every notification as they arrive.

    Without `timeout_s` the endpoint's own rules end the exchange (a CON gives
    up after MAX_TRANSMIT_WAIT, a NON after its NON timeout).

    `security` makes the client's layer; `secure_scheme` is the URI scheme it
    serves ("coaps" for DTLS, "coap" for OSCORE, which protects messages,
    not the transport).
    """
    code = METHODS.get(method.upper())
    if code is None:
        raise RealModeError(f"method {method!r} is not one of {', '.join(METHODS)}")
    try:
        target = parse_coap_uri(uri)
    except CoapUriError as exc:
        raise RealModeError(str(exc)) from None
    scheme = uri.partition(":")[0].lower()
    wanted = secure_scheme if security is not None else "coap"
    if scheme != wanted:
        if scheme == "coaps":
            raise RealModeError("coaps:// needs DTLS credentials: --psk-identity and --psk-key")
        raise RealModeError(f"expected a {wanted}:// URI here, not {uri!r}")
    address, port, family = await _resolve(target.host, target.port)
    options: list[tuple[int, bytes | str | int]] = []
    try:
        ipaddress.ip_address(target.host.partition("%")[0])
    except ValueError:
        options.append((Opt.URI_HOST, target.host))  # RFC 7252 6.4 step 5: a name
    if content_format is not None:
        options.append((Opt.CONTENT_FORMAT, content_format))

    rng = random.SystemRandom()
    coap = CoapEndpoint(rng, params or CoapParams(), strict=False)
    endpoint: CoapEndpoint | SecuredEndpoint = coap
    if security is not None:
        endpoint = SecuredEndpoint(coap, security(rng))
    result = CoapResult()
    done = asyncio.Event()
    ids = {"request": -1, "dereg": -1}

    def on_event(event: object) -> None:
        if getattr(event, "request_id", None) == ids["dereg"]:
            done.set()  # the deregistration was answered (or failed): nothing to report
        elif isinstance(event, ResponseReceived):
            result.response = event.response
            result.rtt_s = event.rtt_s
            result.transmissions = event.transmissions
            if observe and on_update is not None:
                on_update(event.response)
            if not observe or event.response.observe is None:
                done.set()
        elif isinstance(event, NotificationReceived):
            result.notifications.append(event.message)
            if on_update is not None:
                on_update(event.message)
            if event.final or len(result.notifications) >= observe:
                done.set()
        elif isinstance(event, RequestFailed):
            result.failure = event.reason
            done.set()
        elif isinstance(event, HandshakeFailed) and result.failure is None:
            result.failure = f"DTLS handshake failed: {event.reason}"
            done.set()

    def on_error(exc: OSError) -> None:
        result.failure = unreachable((address, port), exc)
        done.set()

    driver = await open_datagram_driver(
        endpoint, on_event, remote_addr=(address, port), family=family, on_error=on_error
    )
    try:
        ids["request"] = endpoint.request(
            driver.now(),
            (address, port),
            code,
            target.path,
            query=target.query,
            confirmable=confirmable,
            payload=payload,
            options=options,
            observe=observe > 0,
        )
        driver.pump()
        try:
            await asyncio.wait_for(done.wait(), timeout_s)
        except TimeoutError:
            result.failure = "timeout"
        if observe and result.response is not None and result.response.observe is not None:
            # RFC 7641 3.6: deregister proactively so the server stops at once; a
            # server that never answers is forgotten after a short wait.
            done.clear()
            ids["dereg"] = endpoint.cancel_observe(driver.now(), ids["request"]) or -1
            driver.pump()
            if ids["dereg"] != -1:
                try:
                    await asyncio.wait_for(done.wait(), DEREGISTER_WAIT_S)
                except TimeoutError:
                    pass
    finally:
        _close_sessions(endpoint, driver)
        driver.close()
    return result


def _close_sessions(endpoint, driver: AsyncDatagramDriver) -> None:
    """Say goodbye where the layer keeps sessions (DTLS's close_notify, RFC 5246 7.2.1)."""
    close_all = getattr(getattr(endpoint, "layer", None), "close_all", None)
    if close_all is not None:
        close_all()
        driver.pump()


def describe(msg: Message) -> str:
    """One line for a response: "2.05 Content, content-format 0, 6 bytes"."""
    parts = [code_name(msg.code)]
    if msg.content_format is not None:
        parts.append(f"content-format {msg.content_format}")
    parts.append(f"{len(msg.payload)} bytes")
    if msg.observe is not None:
        parts.append(f"observe {msg.observe}")
    return ", ".join(parts)
