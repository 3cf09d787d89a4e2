"""`iotbench serve mqtt` and `iotbench client mqtt pub|sub`.

Called by real/cli.py with the parsed arguments (which also runs and stops
the server); user errors raise UserError (one line, exit code 2), never a
traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path

from iotbench.proto.mqtt.acl import Acl
from iotbench.proto.mqtt.auth import Passwords
from iotbench.proto.mqtt.conffile import ConfigFileError
from iotbench.proto.mqtt.events import MessageReceived
from iotbench.proto.mqtt.params import MqttBrokerParams
from iotbench.real.coap import RealModeError
from iotbench.real.mqtt import mqtt_publish, mqtt_subscribe, serve_mqtt
from iotbench.real.stream import StreamServerDriver
from iotbench.scenarios import UserError

EXIT_OK, EXIT_FAILED = 0, 1
ACTIONS = ("pub", "sub")


async def server(args: argparse.Namespace) -> None:
    """The broker on args.host:args.port until cancelled (real/cli.py runs and stops it)."""
    params = broker_params(args)

    def ready(driver: StreamServerDriver) -> None:
        assert driver.server is not None  # listening when ready
        host, port = driver.server.sockets[0].getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        lines = [f"iotbench: MQTT broker listening on mqtt://{shown}:{port}"]
        lines += security_summary(args, params)
        print("\n".join(lines), file=sys.stderr, flush=True)

    await serve_mqtt(args.host, args.port, params=params, on_ready=ready)


def broker_params(args: argparse.Namespace) -> MqttBrokerParams:
    """The broker's settings from serve's options; the password and ACL files are read
    here, before anything listens, and a bad one is a UserError naming file and line."""
    return MqttBrokerParams(
        users=_read(args.password_file, Passwords.parse, "password file"),
        acl=_read(args.acl_file, Acl.parse, "ACL file"),
        allow_anonymous=args.allow_anonymous,
    )


def _read(path: Path | None, parse: Callable[[bytes, str], object], what: str):
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    try:
        return parse(data, str(path))
    except ConfigFileError as exc:
        raise UserError(f"bad {what}: {exc}") from None


def security_summary(args: argparse.Namespace, params: MqttBrokerParams) -> list[str]:
    """What the startup banner says about who may connect and what they may do."""
    lines = []
    anonymous = "allowed" if params.anonymous_allowed else "refused"
    if params.users is not None:
        lines.append(
            f"  password file {args.password_file}: {len(params.users)} user(s);"
            f" anonymous clients {anonymous}"
        )
    if params.acl is not None:
        sections = sum(1 for user in params.acl.users if user is not None)
        anonymous_entries = len(params.acl.users.get(None, ()))
        lines.append(
            f"  ACL file {args.acl_file}: {anonymous_entries} anonymous entries,"
            f" {sections} user section(s), {len(params.acl.patterns)} pattern(s);"
            " what it does not grant is denied"
        )
    return lines


def client(args: argparse.Namespace) -> int:
    action = args.method.lower()
    if action not in ACTIONS:
        raise UserError(f"MQTT action {args.method!r} is not one of pub, sub")
    if args.qos == -1:
        raise UserError("--qos -1 is MQTT-SN's; MQTT's QoS is 0, 1 or 2")
    check_pub_sub(args, action)
    qos = 0 if args.qos is None else args.qos
    if action == "pub":
        work = mqtt_publish(
            args.uri,
            (args.payload or "").encode("utf-8"),
            qos=qos,
            retain=args.retain,
            count=1 if args.count is None else args.count,
            timeout_s=args.timeout,
        )
    else:
        work = mqtt_subscribe(
            args.uri, qos=qos, count=args.count or 0, timeout_s=args.timeout, on_message=_show
        )
    return run_pub_sub(action, qos, args.count, work)


def check_pub_sub(args: argparse.Namespace, action: str) -> None:
    """The options that make no sense for this action (MQTT and MQTT-SN alike)."""
    if action == "pub" and args.count == 0:
        raise UserError("--count must be at least 1 for pub")
    if action == "sub":
        if args.retain:
            raise UserError("--retain applies to pub, not sub")
        if args.payload is not None:
            raise UserError("--payload applies to pub, not sub")


def run_pub_sub(action: str, qos: int, count: int | None, work: Coroutine) -> int:
    """Run a pub or sub coroutine to its end; a summary on stderr; the exit status.

    Ctrl-C ends an open-ended sub (no --count) normally; anything else it
    interrupts failed.
    """
    try:
        result = asyncio.run(work)
    except RealModeError as exc:
        raise UserError(str(exc)) from None
    except KeyboardInterrupt:
        return EXIT_OK if action == "sub" and not count else EXIT_FAILED
    print(summary(action, qos, count, result), file=sys.stderr)
    return EXIT_OK if result.failure is None else EXIT_FAILED


def summary(action: str, qos: int, count: int | None, result) -> str:
    """One line that says what happened: "published 3 message(s), QoS 1", or on a
    failure "iotbench: published 0 of 1 message(s), QoS 1: timeout: no CONNACK ..."."""
    wanted: int | None
    if action == "pub":
        done, wanted, what = result.published, count or 1, f"message(s), QoS {qos}"
        verb = "published"
    else:
        done, wanted, what = len(result.messages), count, "message(s)"
        verb = "received"
    if result.failure is None:
        return f"{verb} {done} {what}"
    of = f" of {wanted}" if wanted else ""
    return f"iotbench: {verb} {done}{of} {what}: {result.failure}"


def _show(msg: MessageReceived) -> None:
    """The payload on stdout (one line), what it was on stderr, like `client coap`."""
    flags = f"QoS {msg.qos}" + (", retained" if msg.retain else "")
    print(f"{msg.topic}: {flags}, {len(msg.payload)} bytes", file=sys.stderr)
    text = msg.payload.decode("utf-8", errors="replace")
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()
