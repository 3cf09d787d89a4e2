"""`iotbench emulate`: a scenario's network in real time, real programs attached."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from iotbench.argtypes import positive_float
from iotbench.emulate.netns import DEFAULT_STATE_DIR, check_name
from iotbench.scenarios import Run, Scenario, UserError
from iotbench.scenarios.settings import run_settings
from iotbench.scenarios.sweep import config_key, one_network

DESCRIPTION = """\
Build the network of one run of a scenario (pair links and radio networks alike,
Wi-Fi included) and run it in real time: virtual time follows the wall clock.
Each --attach NODE gets a network namespace named NODE holding a TUN device with
the node's address and a route into the network; programs run in it with
`ip netns exec NODE PROGRAM` and their packets cross the simulated network as
the node's own (6LoWPAN, RPL routes, CSMA, retries, interference). The network
first runs --warmup seconds in virtual time, as fast as the machine goes (by
default until the scenario's workload would start, when routing has
converged). Every second a line gives the virtual time and how late events
ran (lag p50/p99/max); a p99 over --lag-warn-ms is flagged. Ctrl-C or SIGTERM
ends it and removes the namespaces; a later start removes what a killed run
left. Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) and /dev/net/tun.
docs/emulate.md has worked examples and what emulation cannot give."""

EPILOG = """\
examples:
  iotbench emulate docs/examples/multihop-coap.toml --attach n0 --attach n5
      then: ip netns exec n0 aiocoap-fileserver ...; ip netns exec n5 aiocoap-client ...
  iotbench emulate s4-multi-hop --filter variant=coap-get-con --attach gw --duration 60 \\
      --workload --pcap air.pcap

exit status: 0 ended (duration, Ctrl-C or SIGTERM), 2 usage error.
"""


def add_emulate_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    formatter: type[argparse.HelpFormatter],
    add_selection: Callable[[argparse.ArgumentParser], None],
    handler: Callable[[argparse.Namespace], int],
) -> None:
    p = commands.add_parser(
        "emulate",
        help="run a scenario's network in real time with real programs attached",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=formatter,
    )
    add_selection(p)
    p.add_argument(
        "--attach",
        action="append",
        default=[],
        metavar="NODE",
        help="give NODE a network namespace of that name with a TUN device (repeatable)",
    )
    p.add_argument(
        "--duration",
        type=positive_float,
        metavar="S",
        help="stop after S seconds of real time (default: until Ctrl-C or SIGTERM)",
    )
    p.add_argument(
        "--warmup",
        type=float,
        metavar="S",
        help="virtual seconds to run first, as fast as possible (default: when the "
        "workload's first item starts, workload.start_s or query_start_s)",
    )
    p.add_argument(
        "--workload",
        action="store_true",
        help="run the scenario's own workload beside the attached programs",
    )
    p.add_argument("--pcap", type=Path, metavar="FILE", help="write every frame on the air here")
    p.add_argument(
        "--lag-warn-ms",
        type=positive_float,
        default=1.0,
        metavar="MS",
        help="flag a second whose p99 lag passes MS milliseconds (default 1)",
    )
    p.add_argument(
        "--netns-prefix",
        default="",
        metavar="P",
        help="name the namespaces P + node name (two emulations side by side)",
    )
    p.add_argument(
        "--zep",
        type=zep_address,
        metavar="ADDR:PORT",
        help="be a ZEP dispatcher for RIOT socket_zep processes (e.g. [::1]:17754); "
        "start RIOT with -z ADDR:PORT",
    )
    p.add_argument(
        "--zep-node",
        action="append",
        default=[],
        metavar="NODE",
        help="a node a RIOT process plays, in the order they start (repeatable)",
    )
    p.add_argument(
        "--zep-ack",
        choices=("early", "medium"),
        default="early",
        help="early: ACK RIOT's unicasts when a transceiver's ACK would arrive "
        "(default); medium: pass on the medium's ACK frames, later than RIOT waits "
        "(docs/emulate.md)",
    )
    p.set_defaults(handler=handler)


def zep_address(text: str) -> tuple[str, int]:
    """ADDR:PORT, an IPv6 address in brackets: [::1]:17754, 127.0.0.1:17754."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536 or not host:
        raise argparse.ArgumentTypeError(f"{text!r}: give ADDR:PORT, e.g. [::1]:17754")
    return host.strip("[]"), int(port)


def run(
    args: argparse.Namespace,
    select: Callable[[argparse.Namespace], tuple[Scenario, list[Run]]],
) -> int:
    """`iotbench emulate`; `select` is the CLI's run selection (cli._select)."""
    from iotbench.emulate.session import Emulation, EmulationOptions

    # Started with SIGINT ignored (a shell's background job), `kill -INT` would
    # not end the emulation; it ends it as Ctrl-C does.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.warmup is not None and args.warmup < 0:
        raise UserError(f"--warmup {args.warmup}: a number of seconds, 0 or more")
    for name in args.attach:
        check_name(args.netns_prefix + name)
    if args.rep is None:
        args.rep = 0
    scenario, runs = select(args)
    picked = one_network(runs, scenario.label, key=config_key)
    options = EmulationOptions(
        attach=list(args.attach),
        duration_s=args.duration,
        warmup_s=args.warmup,
        workload=args.workload,
        pcap_path=str(args.pcap) if args.pcap is not None else None,
        lag_warn_s=args.lag_warn_ms / 1e3,
        state_dir=DEFAULT_STATE_DIR,
        netns_prefix=args.netns_prefix,
        zep=args.zep,
        zep_nodes=list(args.zep_node),
        zep_early_ack=args.zep_ack == "early",
    )
    emulation = Emulation(run_settings(picked.config), picked.seed, options)
    print(f"iotbench: emulating {scenario.name} ({picked.label()})", file=sys.stderr)
    report = emulation.run(
        on_attached=lambda names: print(
            "iotbench: attached "
            + ", ".join(f"{name} ({emulation.address(name)})" for name in names)
            + f" (run programs with `ip netns exec {args.netns_prefix}NODE PROGRAM`)",
            file=sys.stderr,
            flush=True,
        )
    )
    print("\n".join(report.lines()), file=sys.stderr)
    return 0
