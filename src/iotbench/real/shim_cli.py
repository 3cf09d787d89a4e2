"""`iotbench shim`: which network to impose, from a scenario or a network file,
and the shim's life from start to its closing summary.

User errors raise UserError (one line, exit code 2), never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import tomllib
from pathlib import Path

from iotbench.real.shim import ImpairmentShim, ShimLimits
from iotbench.scenarios import ScenarioError, UserError, expand, load_scenario
from iotbench.scenarios.fields import Invalid, dotted, validate
from iotbench.scenarios.merge import set_path
from iotbench.scenarios.schema import NETWORK
from iotbench.scenarios.settings import network_settings
from iotbench.scenarios.sweep import one_network, parse_filter, parse_override
from iotbench.world.networks import is_radio_network

DEFAULT_SEED = 1


def host_port(option: str, text: str) -> tuple[str, int]:
    """'host:port' or '[v6]:port' -> (host, port)."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UserError(f"{option} {text!r}: expected HOST:PORT, e.g. 127.0.0.1:5683")
    return host, int(port)


def select_network(args: argparse.Namespace) -> tuple[dict, int | None, str]:
    """(validated network section, items for random-items outages, where it came from)."""
    overrides = [parse_override(text) for text in args.overrides]
    for key, _ in overrides:
        if key.split(".")[0] != "network":
            raise ScenarioError(f"--set {key}: the shim takes only network.* keys")
    if (args.scenario is None) == (args.network is None):
        raise UserError("give the network to impose: --scenario NAME|FILE or --network FILE")
    if args.network is not None:
        if args.filter:
            raise UserError("--filter selects runs of a --scenario, not of a --network file")
        network = _network_file(args.network, dict(overrides))
        items, origin = args.items, str(args.network)
    else:
        network, items, origin = _scenario_network(args, dict(overrides))
    if args.seed is not None:
        network["seed"] = args.seed
    network.setdefault("seed", DEFAULT_SEED)
    _check_usable(network, items, origin)
    return network, items, origin


def _network_file(path: Path, overrides: dict) -> dict:
    if not path.is_file():
        raise ScenarioError(f"{path}: no such file")
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: invalid TOML: {exc}") from None
    network = document.get("network")
    if not isinstance(network, dict):
        raise ScenarioError(f"{path}: no [network] table (the keys of a scenario's network)")
    try:
        for key, value in overrides.items():
            network = set_path({"network": network}, key, value)["network"]
        return validate(NETWORK, network, ("network",))
    except (Invalid, ValueError) as exc:
        where = dotted(exc.path) if isinstance(exc, Invalid) else "--set"
        message = exc.message if isinstance(exc, Invalid) else str(exc)
        raise ScenarioError(f"{path}: {where}: {message}") from None


def _scenario_network(args: argparse.Namespace, overrides: dict) -> tuple[dict, int, str]:
    scenario = load_scenario(args.scenario)
    filters: dict[str, list[str]] = {}
    for text in args.filter:
        axis, values = parse_filter(text)
        filters.setdefault(axis, []).extend(values)
    run = one_network(expand(scenario, filters, overrides, reps=1), scenario.name)
    picked = ", ".join(f"{k}={v}" for k, v in run.params.items())
    return run.config["network"], run.config["workload"]["items"], f"{scenario.name} ({picked})"


def _check_usable(network: dict, items: int | None, origin: str) -> None:
    settings = network_settings(network)
    if is_radio_network(settings):
        raise UserError(
            f"{origin}: network.topology = {settings.topology!r}: the shim relays UDP over a "
            "point-to-point IP link only (network.topology = 'pair'), not through a radio network"
        )
    if settings.link.layer != "ip":
        raise UserError(
            f"{origin}: network.link.layer = {settings.link.layer!r}: the shim relays "
            "UDP over IP links only"
        )
    impair = settings.impair
    for direction in impair.keys() if impair is not None else ():
        parts = getattr(impair, direction)
        outages = parts.outages if parts is not None else None
        if outages is not None and outages.model == "random-items" and not items:
            raise UserError(
                f"{origin}: network.impair.{direction}.outages: random-items outages choose "
                "among a number of items: give --items N"
            )


def _inline(value) -> str:
    """A value as a TOML inline value, as the user would write it."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    return json.dumps(value)


def describe(network: dict) -> list[str]:
    link = network["link"]
    rate = f"{link['rate_bps']:,} bit/s" if link["rate_bps"] else "unlimited rate"
    lines = [
        f"  link: IPv{network['ip_version']}, {rate}, delay {link['delay_s']} s, "
        f"MTU {link['mtu_bytes']}, queue {link['queue_packets']} packets; seed {network['seed']}"
    ]
    for direction, parts in sorted((network.get("impair") or {}).items()):
        for part, spec in sorted((parts or {}).items()):
            if spec and spec.get("model") != "none":
                lines.append(f"  {direction}.{part}: {_inline(spec)}")
    if len(lines) == 1:
        lines.append("  no impairments")
    return lines


def run(args: argparse.Namespace) -> int:
    listen = host_port("--listen", args.listen)
    server = host_port("--to", args.to)
    network, items, origin = select_network(args)
    limits = ShimLimits(max_clients=args.max_clients, idle_timeout_s=args.idle_timeout)
    pcap_file = None
    if args.pcap is not None:
        try:
            pcap_file = open(args.pcap, "wb")  # noqa: SIM115 - closed in finally below
        except OSError as exc:
            raise UserError(f"--pcap {args.pcap}: {exc.strerror or exc}") from None

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None  # main() runs as a task
        with contextlib.suppress(NotImplementedError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        shim = ImpairmentShim(
            network, server, total_items=items or 0, limits=limits, pcap=pcap_file
        )
        try:
            host, port = await shim.listen(*listen)
        except OSError as exc:
            shim.close()
            raise UserError(
                f"cannot listen on UDP {listen[0]} port {listen[1]}: {exc.strerror or exc}"
            ) from None
        shown = f"[{host}]" if ":" in host else host
        lines = [f"iotbench: shim listening on UDP {shown}:{port}, relaying to {args.to}"]
        lines.append(f"  network of {origin}")
        print("\n".join(lines + describe(network)), file=sys.stderr, flush=True)
        try:
            await asyncio.Event().wait()  # until Ctrl-C or SIGTERM
        finally:
            shim.close()  # counts what is still in the log, closes every socket
            summary = "\n".join("  " + line for line in shim.summary())
            print(f"iotbench: shim stopped\n{summary}", file=sys.stderr)

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    finally:
        if pcap_file is not None:
            pcap_file.close()
    return 0
