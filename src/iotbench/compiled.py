"""The modules a normal install compiles with mypyc, and a check that they are current.

Every frame of a radio network runs through the event kernel, the medium
and its link-variation draws, the 802.15.4 codec and MACs, and then 6LoWPAN,
IP and the IP node, or NDN's forwarder, tables, codecs and faces (with
HoPP's agent), and S4's metrics see every frame (docs/performance.md,
"S4's runs"). Every packet of a point-to-point network (S1 to S3) runs
through the link and its impairments, the checksum, IP and the node
(docs/performance.md, "iotbench versus ns-3"), and every CoAP message
through CoAP's codec and its message, client, server and endpoint layers
at both ends. setup.py compiles these modules with
mypyc: the same Python source becomes a C extension, with the same results
to the bit (the regression check compares every metric and pcap digest of
every built-in scenario). No other code exists for them; without a C
compiler, or with `IOTBENCH_PURE_PYTHON=1 pip install ...`, the sources run
as they are.

An editable install (`pip install -e .`) puts the compiled modules beside
their sources (each module's own small extension, and its group's library,
GROUPS below), and Python imports an extension before a source of the same
name. An edit to one of these files would then be silently ignored until the
next install, so `check_current` refuses to run a checkout's compiled module
that is older than its source. (An installed wheel is not checked: its
copies of the sources are the ones it was compiled from, and unpacking
gives them no meaningful order in time.) setup.py loads this file on its
own (it imports only the standard library), before the package's
dependencies are installed.
"""

from __future__ import annotations

import importlib
import os
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

# The modules compile in groups, each one C extension (`iotbench/NAME__mypyc`,
# "the group library") that holds the group's code, plus a small extension
# per module under the module's own name that loads it. The groups compile
# in parallel; a call inside a group is a direct C call, one between groups
# goes through a table of pointers, so each group keeps together modules that
# call each other on every frame.
GROUPS: dict[str, tuple[str, ...]] = {
    "iotbench.compiled_core": (
        "iotbench.sim.kernel",
        "iotbench.sim.twister",
        "iotbench.sim.deadline",
        "iotbench.sim.cpu",
        "iotbench.proto.octets",
        "iotbench.proto.recent",
        "iotbench.proto.timers",
        "iotbench.proto.retransmit",
        "iotbench.net.packet",
        "iotbench.net.pktbuf",
        "iotbench.net.l2",
        "iotbench.net.checksum",
        "iotbench.net.ip",
        "iotbench.net.impairments",
        "iotbench.net.serial",
        "iotbench.net.link",
        "iotbench.net.node",
    ),
    "iotbench.compiled_radio": (
        "iotbench.net.radio.phy",
        "iotbench.net.radio.energy",
        "iotbench.net.radio.propagation",
        "iotbench.net.radio.medium",
        "iotbench.net.radio.neighbours",
        "iotbench.net.routing.tree",
        "iotbench.net.ieee802154",
        "iotbench.net.mac.csma",
        "iotbench.net.mac.contiki_csma",
    ),
    "iotbench.compiled_lowpan": (
        "iotbench.net.lowpan.dispatch",
        "iotbench.net.lowpan.codec",
        "iotbench.net.lowpan.fragments",
        "iotbench.net.lowpan.interface",
    ),
    # RPL's state machine and its driver: the MAC's result for every unicast
    # frame a node sends updates a link's ETX and re-arms RPL's timer.
    "iotbench.compiled_rpl": (
        "iotbench.net.icmpv6",
        "iotbench.net.rpl.sequence",
        "iotbench.net.rpl.trickle",
        "iotbench.net.rpl.objective",
        "iotbench.net.rpl.codec",
        "iotbench.net.rpl.node",
        "iotbench.net.rpl.driver",
    ),
    # The CoAP, MQTT and MQTT-SN codecs: every message of S4's IP variants is
    # encoded and decoded at both ends (an MQTT-SN reading four times: client,
    # gateway, the gateway's MQTT connection, broker).
    "iotbench.compiled_codecs": (
        "iotbench.proto.coap.options",
        "iotbench.proto.coap.codec",
        "iotbench.proto.mqtt.codec",
        "iotbench.proto.mqttsn.messages",
        "iotbench.proto.mqttsn.codec",
    ),
    # NDN's packets, tables, forwarder and app API in one: the forwarder parses
    # and builds packets and calls its faces' apps on every packet, and with
    # packets and forwarder apart S4's NDN variant ran 3 to 4 % slower
    # (bench/s4_hour.py, alternated with one group for everything). NDNLPv2
    # (proto/ndn/lp.py) stays Python: the simulated networks send no LpPacket
    # but a Nack (none in S4's runs: 0.00 % of their time, cProfile), and its
    # C was a twentieth of all the groups' (docs/performance.md, "Install time").
    "iotbench.compiled_ndn": (
        "iotbench.proto.ndn.tlv",
        "iotbench.proto.ndn.name",
        "iotbench.proto.ndn.interest",
        "iotbench.proto.ndn.data",
        "iotbench.proto.ndn.siginfo",
        "iotbench.proto.ndn.fragmentation",
        "iotbench.proto.ndn.heap",
        "iotbench.proto.ndn.pit",
        "iotbench.proto.ndn.cs",
        "iotbench.proto.ndn.fib",
        "iotbench.proto.ndn.strategy",
        "iotbench.proto.ndn.dead_nonce",
        "iotbench.proto.ndn.forwarder",
        "iotbench.proto.ndn.hopp",
        "iotbench.proto.ndn.app",
    ),
    # CoAP's message, client, server and endpoint layers: every CoAP message of
    # S2, S4 and S6 runs through them at both ends (docs/performance.md, "Hubs,
    # fan-outs and CoAP's layers compiled").
    "iotbench.compiled_coap": (
        "iotbench.proto.coap.exchange",
        "iotbench.proto.coap.messaging",
        "iotbench.proto.coap.client",
        "iotbench.proto.coap.server",
        "iotbench.proto.coap.endpoint",
    ),
    # MQTT and MQTT-SN: the clients, the broker, the MQTT-SN gateway and the
    # drivers that run a stack on a node. Every reading of S4's MQTT-SN variants
    # crosses the client, the gateway and its MQTT connection, and the broker
    # (docs/performance.md, "The MQTT and MQTT-SN stacks compiled"). apps.driver
    # runs every datagram stack (CoAP's too), with proto.sansio's drain loop.
    "iotbench.compiled_mqtt": (
        "iotbench.proto.sansio",
        "iotbench.proto.keepalive",
        "iotbench.apps.driver",
        "iotbench.apps.mqtt",
        "iotbench.apps.mqttsn",
        "iotbench.proto.mqtt.topics",
        "iotbench.proto.mqtt.flows",
        "iotbench.proto.mqtt.client",
        "iotbench.proto.mqtt.broker",
        "iotbench.proto.mqttsn.registry",
        "iotbench.proto.mqttsn.discovery",
        "iotbench.proto.mqttsn.client",
        "iotbench.proto.mqttsn.gateway_state",
        "iotbench.proto.mqttsn.gateway_topics",
        "iotbench.proto.mqttsn.gateway_clients",
        "iotbench.proto.mqttsn.gateway_datagrams",
        "iotbench.proto.mqttsn.gateway_delivery",
        "iotbench.proto.mqttsn.gateway_forwarding",
        "iotbench.proto.mqttsn.gateway_broker",
        "iotbench.proto.mqttsn.gateway",
    ),
    # The applications and S4's measures: the echo and reading apps, the NDN node,
    # HoPP's agent, the observers and traffic meters that see every frame, and
    # the publish workload's schedules, items and series, which run for every
    # reading (interpreted, 1.5 to 1.9 % of S4's instructions went to Python's
    # interpreter loop for them; docs/performance.md), and the MQTT-SN
    # publisher, which runs for each of its client's events (interpreted, 0.8 %
    # of `mqttsn-qos1`'s instructions were the interpreter's loop).
    "iotbench.compiled_apps": (
        "iotbench.apps.echo",
        "iotbench.apps.readings",
        "iotbench.apps.ndn",
        "iotbench.world.workloads.publish.hopp_agent",
        "iotbench.metrics.observers",
        "iotbench.metrics.traffic",
        "iotbench.metrics.publish",
        "iotbench.metrics.items",
        "iotbench.metrics.timeseries",
        "iotbench.world.workloads.base",
        "iotbench.world.workloads.publish.schedules",
        "iotbench.world.workloads.publish.workload",
        "iotbench.world.workloads.publish.mqttsn",
    ),
}

MODULES = tuple(module for modules in GROUPS.values() for module in modules)

# The groups compiled with `-O1` instead of mypyc's `-O3`. The codecs', CoAP's
# layers' and the MQTT stacks' code runs a few times per message, not per frame
# and receiver: `-O1` cost at most 0.04 % (codecs, S4's `mqttsn-qos1`) and 0.1 %
# (CoAP, `coap-put-con`) more instructions per run (cachegrind), and the MQTT
# group's S4 hours were no faster at `-O3` (docs/performance.md, "The MQTT and
# MQTT-SN stacks compiled"); it takes 30 to 35 % less of the compiler's time
# (18.6 s of CPU against 26.5 s; 14 s against 22 s; 14.8 s against 21.3 s).
# The other groups cost 0.03 to 0.15 % each at `-O1`, more than an install's
# few seconds are worth against many hours of runs (docs/performance.md,
# "Each group's optimisation level").
LIGHTLY_OPTIMISED = frozenset(
    {"iotbench.compiled_codecs", "iotbench.compiled_coap", "iotbench.compiled_mqtt"}
)

# Set at install time for no compilation; read here to say so in errors.
PURE_PYTHON_ENV = "IOTBENCH_PURE_PYTHON"


class StaleBuildError(ImportError):
    """A compiled module is older than its source, which would be ignored."""


def _package_root() -> Path:
    return Path(__file__).resolve().parent.parent


def _extension_files(name: str, root: Path | None) -> list[Path]:
    base = (root or _package_root()).joinpath(*name.split("."))
    candidates = (base.with_name(base.name + suffix) for suffix in EXTENSION_SUFFIXES)
    return [path for path in candidates if path.exists()]


def compiled_files(module: str, root: Path | None = None) -> list[Path]:
    """The compiled copies of `module` beside its source (none in a pure install)."""
    return _extension_files(module, root)


def group_of(module: str) -> str:
    return next(group for group, modules in GROUPS.items() if module in modules)


def group_library_files(group: str, root: Path | None = None) -> list[Path]:
    """The compiled group library that holds the code of `group`'s modules (mypyc
    names it GROUP__mypyc)."""
    return _extension_files(group + "__mypyc", root)


def source_file(module: str, root: Path | None = None) -> Path:
    return (root or _package_root()).joinpath(*module.split(".")).with_suffix(".py")


def _compiled_at(module: str, root: Path | None) -> float | None:
    """When `module`'s compiled code was built: the newer of its own extension and
    its group's library. A rebuild in place rewrites the library, which holds the
    code, but may leave the module's own extension (which only loads the library)
    untouched with its old time; and an edit rebuilds neither until the next
    install."""
    own = compiled_files(module, root)
    if not own:
        return None
    times = [min(p.stat().st_mtime for p in own)]
    library = group_library_files(group_of(module), root)
    if library:
        times.append(min(p.stat().st_mtime for p in library))
    return max(times)


def stale_modules(root: Path | None = None) -> list[str]:
    """The modules whose source changed after they were compiled."""
    stale = []
    for module in MODULES:
        source = source_file(module, root)
        if not source.exists():
            continue  # an installed wheel may carry only the extension
        built = _compiled_at(module, root)
        if built is not None and built < source.stat().st_mtime:
            stale.append(module)
    return stale


def orphaned_files(root: Path | None = None) -> list[Path]:
    """Compiled files an earlier build left for a module or group no longer in
    GROUPS: Python would import such a module's old copy instead of its source."""
    root = root or _package_root()
    current = {path for module in MODULES for path in compiled_files(module, root)}
    current |= {path for group in GROUPS for path in group_library_files(group, root)}
    generic = EXTENSION_SUFFIXES[-1]  # every other suffix ends with it (".so", ".pyd")
    found = {
        Path(folder, name)
        for folder, _, names in os.walk(root / "iotbench")
        for name in names
        if name.endswith(generic)
    }
    return sorted(found - current)


def check_current(root: Path | None = None) -> None:
    """In a checkout (src/ beside pyproject.toml), refuse to run compiled modules
    that no longer match their sources."""
    root = root or _package_root()
    if not (root.parent / "pyproject.toml").exists():
        return  # an installed package, not a checkout
    problems = []
    stale = stale_modules(root)
    if stale:
        problems.append(f"{', '.join(stale)}: the source changed after it was compiled")
    orphans = [str(path.relative_to(root)) for path in orphaned_files(root)]
    if orphans:
        problems.append(f"{', '.join(orphans)}: left by an earlier build, no longer compiled")
    if problems:
        raise StaleBuildError(
            f"{'; '.join(problems)}. Python would run the old compiled copy. Run `pip "
            f"install -e .` again to recompile, or `{PURE_PYTHON_ENV}=1 pip install -e .` "
            "to run the sources without compiling."
        )


def running_compiled() -> dict[str, bool]:
    """Whether each module in MODULES was loaded from a compiled extension."""
    return {
        module: not str(importlib.import_module(module).__file__).endswith(".py")
        for module in MODULES
    }


def describe() -> str:
    """How the per-frame modules run here, for reports and benchmarks."""
    compiled = sum(running_compiled().values())
    if compiled == 0:
        return "pure Python"
    return f"{compiled} of {len(MODULES)} compiled with mypyc"


def is_required() -> bool:
    """CI sets IOTBENCH_REQUIRE_COMPILED=1: the compiled build must be the one tested."""
    return os.environ.get("IOTBENCH_REQUIRE_COMPILED") == "1"
