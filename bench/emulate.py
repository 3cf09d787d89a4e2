"""How much `iotbench emulate` carries in real time, and how late its events run.

    python bench/emulate.py                    all three parts, 20 s each
    python bench/emulate.py --part size --seconds 30 --json

Three parts, each an emulation in real time on this machine (needs root for
the attached part):

- size: grid networks of N radio nodes (RPL, every node publishing a CoAP
  NON reading to the gateway every 10 s: a busier network than S4's) run in
  real time without attached programs; N doubles from 25 until the p99 lag
  passes 1 ms. Prints, per N: the lag (p50, p99, max), kernel events per
  second, and whether it kept up.
- rate: both hosts of a fast link (100 Mbit/s) attached; a sender in one
  namespace sends UDP datagrams of 40 bytes to the other at a rate doubled
  from 100 per second until the p99 lag passes 1 ms or a tenth of them is
  lost: what the emulator itself carries (a radio mesh saturates far below:
  one 802.15.4 hop carries about a hundred such frames a second). Prints,
  per rate: the datagrams sent and received and the lag.
- studies: S4's building (s4-multi-hop, coap-get-con at 5 s) and S6's room
  (s6-interference: 60 nodes, unicast group queries to 30 members, the
  Wi-Fi at 28.5 Mbit/s) with their own workloads, in real time from the
  workload's start. Prints the lag.

The ratio that matters is the p99 lag against 1 ms; events per second show
the work behind it. Wall-clock figures depend on the machine and on what
else runs (docs/performance.md gives the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iotbench.emulate.session import Emulation, EmulationOptions, EmulationReport
from iotbench.net import ip
from iotbench.scenarios import expand, load_scenario, parse_scenario
from iotbench.scenarios.settings import run_settings

LAG_LIMIT_S = 1e-3

GRID = """
name = "grid"
description = "a grid of {nodes} nodes, each publishing every 10 s"
max_sim_time_s = 100000.0
[network]
topology = "grid"
[network.nodes]
count = {nodes}
spacing_m = 25.0
[network.routing]
protocol = "rpl"
[workload]
kind = "publish"
items = 100000
interval_s = 10.0
start_s = 120.0
resource = "json"
path = "/r"
[protocol]
name = "coap"
[protocol.coap]
type = "non"
"""

PAIR = """
name = "pair"
description = "two hosts on a 100 Mbit/s link, 1 ms each way"
max_sim_time_s = 100000.0
[network]
ip_version = 6
[network.link]
rate_bps = 100000000
delay_s = 0.001
mtu_bytes = 1500
queue_packets = 1000
[workload]
kind = "sequential"
items = 1
[protocol]
name = "coap"
"""

SENDER = """
import socket, sys, time
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
rate, seconds, dst = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
start = time.monotonic(); n = 0
while (now := time.monotonic() - start) < seconds:
    while n < now * rate:  # what is due by now, in a burst: the sender keeps up
        s.sendto(b"x" * 40, (dst, 9999)); n += 1
    time.sleep(0.0005)
print(n)
"""

RECEIVER = """
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(("::", 9999))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.settimeout(float(sys.argv[1])); n = 0
try:
    while True:
        s.recv(2048); n += 1
except socket.timeout:
    pass
print(n)
"""


def emulate(
    text: str | None,
    seconds: float,
    *,
    scenario: str | None = None,
    filters: dict[str, list[str]] | None = None,
    **options: object,
) -> Emulation:
    loaded = parse_scenario(text) if text is not None else load_scenario(scenario or "")
    run = expand(loaded, filters or {}, {}, reps=1)[0]
    state = Path(tempfile.mkdtemp(prefix="emulate-bench-"))
    opts = EmulationOptions(duration_s=seconds, state_dir=state, netns_prefix="bench-", **options)  # type: ignore[arg-type]
    return Emulation(run_settings(run.config), run.seed, opts)


def lag_row(report: EmulationReport) -> dict[str, object]:
    lag = report.lag
    return {
        "lag_p50_ms": round(lag.p50_s * 1e3, 3),
        "lag_p99_ms": round(lag.p99_s * 1e3, 3),
        "lag_max_ms": round(lag.max_s * 1e3, 3),
        "events_per_s": round(report.realtime_events / max(report.real_s, 1e-9)),
        "kept_up": lag.p99_s <= LAG_LIMIT_S,
    }


def size_part(seconds: float, largest: int) -> list[dict[str, object]]:
    rows = []
    nodes = 25
    while nodes <= largest:
        emu = emulate(GRID.format(nodes=nodes), seconds, attach=[], workload=True)
        report = emu.run(out=open(os.devnull, "w"))  # noqa: SIM115
        row = {"part": "size", "nodes": nodes, **lag_row(report)}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
        if not row["kept_up"]:
            break
        nodes *= 2
    return rows


def rate_run(rate: float, seconds: float) -> dict[str, object]:
    """A sender on the client sends to a receiver on the server at `rate`."""
    emu = emulate(PAIR, seconds, attach=["client", "server"])
    dst = ip.address_text(emu.world.net.hosts["server"].address)  # type: ignore[union-attr]
    procs: dict[str, subprocess.Popen[str]] = {}

    def in_namespace(node: str, program: str, *argv: str) -> subprocess.Popen[str]:
        command = ["ip", "netns", "exec", f"bench-{node}", sys.executable, "-c", program, *argv]
        return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)

    def attached(_names: list[str]) -> None:
        procs["rx"] = in_namespace("server", RECEIVER, "2")
        time.sleep(0.3)
        procs["tx"] = in_namespace("client", SENDER, str(rate), str(seconds - 1.0), dst)

    report = emu.run(out=open(os.devnull, "w"), on_attached=attached)  # noqa: SIM115
    sent = int(procs["tx"].communicate(timeout=30)[0] or 0)
    received = int(procs["rx"].communicate(timeout=30)[0] or 0)
    return {
        "part": "rate",
        "datagrams_per_s": rate,
        "sent": sent,
        "received": received,
        **lag_row(report),
    }


def rate_part(seconds: float, lowest: float, highest: float) -> list[dict[str, object]]:
    rows = []
    rate = lowest
    while rate <= highest:
        row = rate_run(rate, seconds)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
        if not row["kept_up"] or int(row["received"]) < 0.9 * int(row["sent"]):  # type: ignore[call-overload]
            break
        rate *= 2
    return rows


def studies_part(seconds: float) -> list[dict[str, object]]:
    rows = []
    for name, filters in (
        ("s4-multi-hop", {"variant": ["coap-get-con"], "interval": ["5s"], "network_seed": ["8"]}),
        (
            "s6-interference",
            {"wifi_mbps": ["28.5"], "group_size": ["30"], "mode": ["unicast"]},
        ),
    ):
        emu = emulate(None, seconds, scenario=name, filters=filters, attach=[], workload=True)
        nodes = len(emu.world.net.hosts)
        report = emu.run(out=open(os.devnull, "w"))  # noqa: SIM115
        row = {"part": "studies", "scenario": name, "hosts": nodes, **lag_row(report)}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("size", "rate", "studies", "all"), default="all")
    parser.add_argument("--seconds", type=float, default=20.0, help="real seconds per emulation")
    parser.add_argument("--largest", type=int, default=3200, help="size: stop at this many nodes")
    parser.add_argument("--lowest", type=float, default=100.0, help="rate: start here")
    parser.add_argument("--highest", type=float, default=102400.0, help="rate: stop there")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    if args.part in ("size", "all"):
        rows += size_part(args.seconds, args.largest)
    if args.part in ("rate", "all"):
        rows += rate_part(args.seconds, args.lowest, args.highest)
    if args.part in ("studies", "all"):
        rows += studies_part(args.seconds)
    for row in rows:
        print(json.dumps(row) if args.json else "  ".join(f"{k}={v}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
