"""`iotbench serve` and `iotbench client`: the stacks on real sockets.

Called by iotbench.cli with its parsed arguments; user errors raise
UserError (one line, exit code 2), never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import random
import signal
import sys
from collections.abc import Awaitable, Callable

from iotbench.apps.coap_resources import REAL_RESOURCES
from iotbench.proto.coap.codec import Message
from iotbench.proto.coap.params import CoapParams
from iotbench.proto.coap.secured import DatagramSecurity
from iotbench.proto.dtls.params import DtlsParams
from iotbench.proto.oscore.context import SecurityContext
from iotbench.real.coap import RealModeError, coap_request, describe, serve_coap
from iotbench.real.coap_oscore import open_contexts, oscore_client, oscore_server
from iotbench.real.coap_security import (
    COAPS_PORT,
    dtls_client,
    dtls_em_server,
    dtls_server,
    psk_pair,
    server_params,
)
from iotbench.real.driver import AsyncDatagramDriver
from iotbench.real.http import serve_http
from iotbench.real.stream import Listener
from iotbench.scenarios import UserError

EXIT_OK, EXIT_FAILED = 0, 1
#: Options of `iotbench serve` that one server alone understands (their default is None).
SERVE_ONLY = {
    "member_timeout": "coap-em",
    "allow_members": "coap-em",
    "max_entities_per_client": "coap-em",
    "max_queries_per_client": "coap-em",
    "max_entities": "coap-em",
    "max_queries": "coap-em",
    "max_requests_per_query": "coap-em",
    "max_bytes_per_query": "coap-em",
    "max_nesting_depth": "coap-em",
    "client_prefix_v6": "coap-em",
    "shared_entities": "coap-em",
    "prefix": "ndn",
    "signer": "ndn",
    "hmac_key": "ndn",
    "ecdsa_key": "ndn",
    "freshness": "ndn",
    "password_file": "mqtt",
    "acl_file": "mqtt",
    "allow_anonymous": "mqtt",
    "broker": "mqttsn-gateway",
    "predefined_topic": "mqttsn-gateway",
    "max_clients": "mqttsn-gateway",
    "max_new_clients": "mqttsn-gateway",
    "idle_timeout": "mqttsn-gateway",
    "max_topic_name_bytes": "mqttsn-gateway",
    "max_topic_bytes_per_client": "mqttsn-gateway",
    "psk_identity": ("coap", "coap-em"),
    "psk_key": ("coap", "coap-em"),
    "dtls_max_sessions": ("coap", "coap-em"),
    "dtls_max_handshakes": ("coap", "coap-em"),
    "oscore": ("coap", "coap-em"),
    "allow_creators": "coap-em",
}


def serve(args: argparse.Namespace) -> int:
    """Run the server of `args.protocol` until Ctrl-C or SIGTERM."""
    psk = psk_pair(getattr(args, "psk_identity", None), getattr(args, "psk_key", None))
    if args.port is None:
        args.port = COAPS_PORT if psk else DEFAULT_PORTS[args.protocol]
    for option, protocols in SERVE_ONLY.items():
        protocols = (protocols,) if isinstance(protocols, str) else protocols
        if args.protocol not in protocols and getattr(args, option, None) is not None:
            names = " and ".join(f"serve {p}" for p in protocols)
            raise UserError(f"--{option.replace('_', '-')} is an option of {names}")
    for option in ("dtls_max_sessions", "dtls_max_handshakes"):
        if getattr(args, option, None) is not None and not psk:
            raise UserError(
                f"--{option.replace('_', '-')} bounds DTLS: add --psk-identity/--psk-key"
            )
    label, run = SERVERS[args.protocol]
    _run_until_stopped(lambda: run(args), args, label)
    print(f"iotbench: {label} server stopped", file=sys.stderr)
    return EXIT_OK


def _run_until_stopped(server: Callable[[], Awaitable[None]], args, label: str) -> None:
    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None  # main() runs as a task
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError):  # platforms without signal handlers
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        await server()

    try:
        asyncio.run(main())
    except OSError as exc:
        message = f"cannot serve {label} on {args.host} port {args.port}: {exc.strerror or exc}"
        raise UserError(message) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass


def _announce(lines: list[str]) -> None:
    print("\n".join(lines), file=sys.stderr, flush=True)


def _shown(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def _coap_server(args: argparse.Namespace) -> None:
    psk = psk_pair(args.psk_identity, args.psk_key)
    scheme = "coaps" if psk else "coap"
    with _oscore_contexts(psk, args.oscore or []) as oscore:

        def ready(driver: AsyncDatagramDriver) -> None:
            assert driver.transport is not None  # an open driver's
            host, port = driver.transport.get_extra_info("sockname")[:2]
            lines = [f"iotbench: CoAP server listening on {scheme}://{_shown(host)}:{port}"]
            if psk:
                lines[0] += f" (DTLS 1.2, PSK identity {args.psk_identity!r})"
            if oscore:
                lines[0] += " (OSCORE)"
                lines += [_describe_context(p, c) for p, c in zip(args.oscore, oscore, strict=True)]
            lines += [f"  {path:<18} {what}" for path, what in REAL_RESOURCES.items()]
            lines.append(f"  {'/.well-known/core':<18} the list of resources (RFC 6690)")
            _announce(lines)

        await serve_coap(
            args.host,
            args.port,
            object_size_bytes=args.object_size,
            observe_interval_s=args.observe_interval,
            security=_security(psk, oscore, client=False, params=_dtls_params(args)),
            on_ready=ready,
        )


def _oscore_contexts(psk: object, paths: list) -> contextlib.AbstractContextManager:
    """--oscore's contexts, held (locked, their sequence numbers kept) while in use."""
    if paths and psk:
        raise UserError("--oscore and --psk-identity/--psk-key: one or the other (not both)")
    return open_contexts(paths)


def _security(
    psk: tuple[bytes, bytes] | None,
    oscore: list[SecurityContext],
    *,
    client: bool,
    params: DtlsParams | None = None,
) -> Callable[[random.Random], DatagramSecurity] | None:
    """The layer factory of --psk-identity/--psk-key (DTLS) or --oscore, or None;
    `params`: a DTLS server's."""
    if oscore:
        return oscore_client(oscore[0]) if client else oscore_server(*oscore)
    if psk:
        return dtls_client(*psk) if client else dtls_server(*psk, params)
    return None


def _dtls_params(args: argparse.Namespace) -> DtlsParams:
    """--dtls-max-sessions and --dtls-max-handshakes as a DTLS server's parameters."""
    return server_params(args.dtls_max_sessions, args.dtls_max_handshakes)


def _describe_context(path, ctx) -> str:
    ids = f"Sender ID {ctx.sender_id.hex() or '(empty)'}, Recipient ID"
    ids += f" {ctx.recipient_id.hex() or '(empty)'}"
    if ctx.replay is None:
        ids += "; replay window recovered with Echo (the context was used before)"
    return f"  OSCORE context {path}: {ids}"


async def _coap_em_server(args: argparse.Namespace) -> None:
    from iotbench.real.coap_em import REAL_MODE_PARAMS, ClientSecurity, serve_coap_em

    psk = psk_pair(args.psk_identity, args.psk_key)

    def ready(driver: AsyncDatagramDriver) -> None:
        assert driver.transport is not None  # an open driver's
        host, port = driver.transport.get_extra_info("sockname")[:2]
        base = f"{'coaps' if psk else 'coap'}://{_shown(host)}:{port}"
        _announce(
            [
                f"iotbench: CoAP Entity Manager listening on {base}",
                f"  POST {base}/e with a JSON profile creates an entity (docs/coap-em.md);",
                f"  GET {base}/e lists them, GET/PUT/DELETE {base}/e/<name> use one",
            ]
        )

    if args.allow_creators and not (psk or args.oscore):
        raise UserError("--allow-creators names authenticated clients: add DTLS or --oscore")
    given = {
        key: value
        for key in EM_LIMIT_OPTIONS
        if (value := getattr(args, key.removesuffix("_s"))) is not None
    }
    loopback = REAL_MODE_PARAMS.allowed_members
    assert loopback is not None  # REAL_MODE_PARAMS allows this host's networks
    params = dataclasses.replace(
        REAL_MODE_PARAMS,
        **given,
        allowed_members=_allowed_members(args.allow_members, loopback),
        allowed_creators=tuple(args.allow_creators) if args.allow_creators else None,
        shared_entities=bool(args.shared_entities),
    )
    with _oscore_contexts(psk, args.oscore or []) as oscore:
        security: Callable[[random.Random, Callable[[object], bool]], ClientSecurity] | None
        security = None
        if oscore:
            server = oscore_server(*oscore)
            security = lambda rng, is_member: server(rng)  # noqa: E731
        elif psk:
            security = dtls_em_server(*psk, _dtls_params(args))
        await serve_coap_em(args.host, args.port, params=params, security=security, on_ready=ready)


#: `serve coap-em`'s options that set an EmParams field of the same name (member_timeout
#: sets member_timeout_s); their defaults are real.coap_em.REAL_MODE_PARAMS.
EM_LIMIT_OPTIONS = (
    "member_timeout_s",
    "max_entities",
    "max_entities_per_client",
    "max_queries",
    "max_queries_per_client",
    "max_requests_per_query",
    "max_bytes_per_query",
    "max_nesting_depth",
    "client_prefix_v6",
)


def _allowed_members(
    prefixes: list[str] | None, loopback: tuple[str, ...]
) -> tuple[str, ...] | None:
    """--allow-members: networks members may be in (besides this host's `loopback`);
    `any` lifts the restriction."""
    if not prefixes:
        return loopback
    if "any" in prefixes:
        return None
    import ipaddress

    for prefix in prefixes:
        try:
            ipaddress.ip_network(prefix, strict=False)
        except ValueError:
            raise UserError(
                f"--allow-members {prefix!r}: expected a network such as fd00::/64 or "
                "192.168.1.0/24, or any"
            ) from None
    return loopback + tuple(prefixes)


async def _http_server(args: argparse.Namespace) -> None:
    def ready(listener: Listener) -> None:
        host, port = listener.sockets[0].getsockname()[:2]
        lines = [f"iotbench: HTTP/1.1 server listening on http://{_shown(host)}:{port}"]
        lines += [
            f"  {path:<18} {what}" for path, what in REAL_RESOURCES.items() if path != "/store"
        ]
        _announce(lines)

    await serve_http(args.host, args.port, object_size_bytes=args.object_size, on_ready=ready)


async def _mqtt_server(args: argparse.Namespace) -> None:
    await _mqtt_cli().server(args)


async def _mqttsn_gateway(args: argparse.Namespace) -> None:
    from iotbench.real import mqttsn_cli  # MQTT-SN modules load only for MQTT-SN commands

    await mqttsn_cli.server(args)


async def _ndn_server(args: argparse.Namespace) -> None:
    from iotbench.real import ndn  # NDN modules load only for NDN commands

    await ndn.server(args)


DEFAULT_PORTS = {
    "coap": 5683,
    "coap-em": 5683,
    "http": 8080,
    "mqtt": 1883,
    "mqttsn-gateway": 1883,
    "ndn": 6363,
}
SERVERS: dict[str, tuple[str, Callable[[argparse.Namespace], Awaitable[None]]]] = {
    "coap": ("CoAP", _coap_server),
    "coap-em": ("CoAP Entity Manager", _coap_em_server),
    "http": ("HTTP", _http_server),
    "mqtt": ("MQTT", _mqtt_server),
    "mqttsn-gateway": ("MQTT-SN gateway", _mqttsn_gateway),
    "ndn": ("NDN", _ndn_server),
}


#: `iotbench client` options -> (their default, the protocols that use them).
CLIENT_OPTIONS: dict[str, tuple[object, tuple[str, ...]]] = {
    "non": (False, ("coap",)),
    "observe": (0, ("coap",)),
    "content_format": (None, ("coap",)),
    "block_size": (None, ("coap",)),
    "qos": (None, ("mqtt", "mqttsn")),
    "count": (None, ("mqtt", "mqttsn")),
    "retain": (False, ("mqtt", "mqttsn")),
    "topic_id": (None, ("mqttsn",)),
    "psk_identity": (None, ("coap",)),
    "psk_key": (None, ("coap",)),
    "oscore": (None, ("coap",)),
}
PROTOCOL_NAMES = {"coap": "CoAP", "mqtt": "MQTT", "mqttsn": "MQTT-SN"}


def check_client_options(args: argparse.Namespace) -> None:
    """Refuse an option given for a protocol that does not use it (rather than ignore it)."""
    for name, (default, protocols) in CLIENT_OPTIONS.items():
        if args.protocol not in protocols and getattr(args, name, default) != default:
            owners = " and ".join(PROTOCOL_NAMES[p] for p in protocols)
            raise UserError(
                f"--{name.replace('_', '-')} is an option of {owners}; "
                f"{PROTOCOL_NAMES[args.protocol]} does not use it"
            )


def client(args: argparse.Namespace) -> int:
    check_client_options(args)
    if args.protocol == "mqtt":
        return _mqtt_cli().client(args)
    if args.protocol == "mqttsn":
        from iotbench.real import mqttsn_cli

        return mqttsn_cli.client(args)
    payload = (args.payload or "").encode("utf-8")
    psk = psk_pair(args.psk_identity, args.psk_key)
    oscore_context = _oscore_contexts(psk, [args.oscore] if args.oscore else [])

    def show(msg: Message) -> None:
        print(describe(msg), file=sys.stderr)
        _print_payload(msg)

    try:
        with oscore_context as oscore:
            result = asyncio.run(
                coap_request(
                    args.uri,
                    args.method,
                    payload=payload,
                    content_format=args.content_format,
                    confirmable=not args.non,
                    observe=args.observe,
                    timeout_s=args.timeout,
                    params=CoapParams(block_size_bytes=args.block_size),
                    security=_security(psk, oscore, client=True),
                    secure_scheme="coap" if oscore else "coaps",  # OSCORE protects coap://
                    on_update=show,
                )
            )
    except RealModeError as exc:
        raise UserError(str(exc)) from None
    except KeyboardInterrupt:
        return EXIT_FAILED
    if result.response is None:
        print(f"iotbench: no response ({result.failure})", file=sys.stderr)
        return EXIT_FAILED
    msg = result.response
    assert result.rtt_s is not None  # measured with the response
    timing = f"rtt {1000 * result.rtt_s:.1f} ms, {result.transmissions} transmission(s)"
    if not args.observe:
        print(f"{describe(msg)}; {timing}", file=sys.stderr)
        _print_payload(msg)
        return EXIT_OK if result.ok else EXIT_FAILED
    # Observing: every reading was shown as it came (`show`); now one summary.
    print(observe_summary(args.observe, result, timing), file=sys.stderr)
    ok = result.ok and msg.observe is not None and len(result.notifications) >= args.observe
    return EXIT_OK if ok else EXIT_FAILED


def observe_summary(wanted: int, result, timing: str) -> str:
    """ "4 readings: the registration's response and 3 notification(s); rtt ..." or why not."""
    msg, got = result.response, len(result.notifications)
    if not result.ok:
        return f"iotbench: the registration was answered {describe(msg)}; {timing}"
    if msg.observe is None:
        return f"iotbench: the server answered without Observe: not observable; {timing}"
    readings = f"{got + 1} readings: the registration's response and {got} notification(s)"
    if got < wanted:
        why = result.failure or "the server ended the observation"
        return f"iotbench: {readings} of {wanted} ({why}); registration {timing}"
    return f"{readings}; registration {timing}"


def _mqtt_cli():
    from iotbench.real import mqtt_cli  # MQTT modules load only for MQTT commands

    return mqtt_cli


def _print_payload(msg: Message) -> None:
    if not msg.payload:
        return
    text = msg.payload.decode("utf-8", errors="replace")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()
