"""CoAP servers under load and under a malicious datagram: iotbench, aiocoap and libcoap.

    python bench/coap_server.py [--rounds R] [--seconds S | --requests N] [--window W]
                                [--malicious N] [--servers NAME ...] [--json]

Three servers, each in its own process on 127.0.0.1 (UDP):

- iotbench: `iotbench serve coap` (real/coap.py), GET /voltage (about 6 bytes);
- aiocoap: a minimal aiocoap server in this file (AIOCOAP_SERVER), one
  resource /voltage answering 6 bytes of text;
- libcoap: Debian's `coap-server-notls` (libcoap3-bin, its example server),
  GET /time (15 bytes).

Throughput. One load generator, the same for every server, in its own
process: a closed loop that keeps W (default 32) CON GETs in flight and
sends the next request as each response arrives, for S seconds (default 5)
or N requests. Requests are pre-encoded but for their Message ID and
4-byte token (the request number), sent on connected UDP sockets from
plain Python (epoll, recv, send): no CoAP library on the client side. A
socket sends 65,536 requests at most and the next goes on a new socket, so
that no Message ID repeats towards a server (which would take it for a
duplicate). A run is one server's; a round runs every server once (A B C
A B C ...) so that what the machine does meanwhile falls on all alike.
Printed per server: responses per second (median and range over rounds),
the server's CPU time per response, and the generator's CPU time over the
run's wall time (well under 100 %: it is not the bottleneck). The ratios
iotbench/aiocoap and iotbench/libcoap are of the medians.

Malicious datagram (issue 39 item 7). A CON GET of 65,408 bytes carrying
32,700 one-byte Uri-Path options, sent N times (default 300), each followed
by a GET of the server's resource (a probe) whose response says the server
is done with both; the same probes alone, N times, are measured first and
subtracted. Printed
per server: what it answered (RST, a response code, or nothing), and its
CPU time per such datagram; "iotbench, no bound" is `serve coap` with
CoapParams.max_options lifted to 1,000,000, as before the bound.

A process's CPU time is read from Linux's per-process CPU clock (user +
system, all threads). Method and figures: docs/performance.md, "CoAP
server: throughput and a malicious datagram".
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import select
import shutil
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

HOST = "127.0.0.1"
STARTUP_TIMEOUT_S = 30.0
#: A response not in within this long is taken for lost (none ever is on loopback).
LOSS_TIMEOUT_S = 1.0
#: Requests before each timed run: code loaded, caches and the servers' tables warm.
WARMUP_REQUESTS = 2000
#: Message IDs per client socket: the next request goes on a new socket (port).
MIDS_PER_SOCKET = 1 << 16

CON, ACK, RST = 0, 2, 3
GET, CONTENT = 0x01, 0x45
URI_PATH = 11

#: The malicious datagram: its header, a 4-byte token, then one Uri-Path of one
#: byte and 32,699 more (delta 0, length 1), two bytes each: 65,408 bytes.
MALICIOUS_OPTIONS = 32_700

#: The aiocoap server: one resource, as small as aiocoap's own examples.
AIOCOAP_SERVER = """
import asyncio, sys
import aiocoap, aiocoap.resource

class Voltage(aiocoap.resource.Resource):
    async def render_get(self, request):
        return aiocoap.Message(payload=b"49.5 V", content_format=0)

async def main(port):
    root = aiocoap.resource.Site()
    root.add_resource(["voltage"], Voltage())
    await aiocoap.Context.create_server_context(root, bind=("127.0.0.1", port))
    await asyncio.get_running_loop().create_future()

asyncio.run(main(int(sys.argv[1])))
"""

#: `iotbench serve coap` as before the options bound: max_options lifted.
IOTBENCH_NO_BOUND = """
import asyncio, dataclasses, sys
from iotbench.real.coap import SERVER_PARAMS, serve_coap

params = dataclasses.replace(SERVER_PARAMS, max_options=1_000_000)
asyncio.run(serve_coap("127.0.0.1", int(sys.argv[1]), params=params))
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far, all threads (as bench/gateway_costs.py).

    Linux gives every process a CPU-time clock that others may read
    (clock_getcpuclockid(3)); its id is (~pid << 3) | 2 (CPUCLOCK_SCHED).
    """
    try:
        return time.clock_gettime((~pid << 3) | 2)
    except OSError:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def uri_path(path: str) -> bytes:
    """Uri-Path options of `path` ("/a/b"), every delta and length below 13."""
    out, last = b"", 0
    for segment in path.strip("/").split("/"):
        value = segment.encode()
        assert URI_PATH - last < 13 and len(value) < 13
        out += bytes(((URI_PATH - last) << 4 | len(value),)) + value
        last = URI_PATH
    return out


def malicious_datagram(mid: int) -> bytes:
    head = bytes((0x40 | CON << 4 | 4, GET, mid >> 8, mid & 0xFF)) + b"evil"
    return head + bytes((URI_PATH << 4 | 1,)) + b"a" + b"\x01b" * (MALICIOUS_OPTIONS - 1)


def get(mid: int, path: str) -> bytes:
    """A CON GET of `path`, token "boot"."""
    return bytes((0x40 | CON << 4 | 4, GET, mid >> 8, mid & 0xFF)) + b"boot" + uri_path(path)


# ---- the servers -----------------------------------------------------------------------


@dataclass
class Server:
    """A server under test: the command that starts it on a port, and its resource."""

    name: str
    argv: list[str]  # "{port}" stands for the port
    path: str
    proc: subprocess.Popen | None = None
    port: int = 0

    def start(self) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((HOST, 0))
            self.port = probe.getsockname()[1]
        argv = [a.replace("{port}", str(self.port)) for a in self.argv]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect((HOST, self.port))
            sock.settimeout(0.2)
            for mid in range(1 << 16):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{self.name} did not start: {' '.join(argv)}")
                try:
                    sock.send(get(mid, self.path))
                    if sock.recv(2048)[1] == CONTENT:
                        return
                except OSError:  # refused: not listening yet
                    time.sleep(0.1)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def libcoap_server() -> str | None:
    return shutil.which("coap-server-notls") or shutil.which("coap-server")


def servers(names: list[str]) -> list[Server]:
    python = sys.executable
    made = {
        "iotbench": lambda: Server(
            "iotbench",
            [python, "-m", "iotbench", "serve", "coap", "--host", HOST, "--port", "{port}"],
            "/voltage",
        ),
        "iotbench, no bound": lambda: Server(
            "iotbench, no bound", [python, "-c", IOTBENCH_NO_BOUND, "{port}"], "/voltage"
        ),
        "aiocoap": lambda: Server("aiocoap", [python, "-c", AIOCOAP_SERVER, "{port}"], "/voltage"),
        "libcoap": lambda: Server(
            "libcoap",
            [libcoap_server() or "coap-server-notls", "-A", HOST, "-p", "{port}"],
            "/time",
        ),
    }
    return [made[name]() for name in names]


def versions() -> dict[str, str]:
    from importlib.metadata import version

    out = {"python": platform.python_version(), "aiocoap": version("aiocoap")}
    exe = libcoap_server()
    if exe is not None:
        usage = subprocess.run([exe, "-h"], capture_output=True, text=True)
        words = (usage.stdout + usage.stderr).split()
        out["libcoap"] = next((w.lstrip("v") for w in words if w[:2] == "v4"), "?")
    return out


# ---- the load generator (its own process) ------------------------------------------------


def generate(port: int, path: str, window: int, seconds: float, requests: int | None, out) -> None:
    """Closed loop: `window` CON GETs in flight until `seconds` or `requests`; sends
    a dict of counts and times through the pipe `out`."""
    poller = select.epoll()
    sockets: dict[int, socket.socket] = {}  # by socket number
    numbers: dict[int, int] = {}  # socket number by fd
    tail = uri_path(path)
    head = bytes((0x40 | CON << 4 | 4, GET))

    def send(i: int) -> None:
        k = i >> 16
        sock = sockets.get(k)
        if sock is None:
            sock = sockets[k] = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.connect((HOST, port))
            sock.setblocking(False)
            numbers[sock.fileno()] = k
            poller.register(sock.fileno(), select.EPOLLIN)
        sock.send(head + (i & 0xFFFF).to_bytes(2, "big") + i.to_bytes(4, "big") + tail)

    cpu0 = time.process_time()
    start = time.perf_counter()
    deadline = start + seconds if requests is None else float("inf")
    limit = requests if requests is not None else 1 << 32
    outstanding: set[int] = set()
    sent = ok = errors = lost = 0
    codes: dict[str, int] = {}
    for _ in range(min(window, limit)):
        outstanding.add(sent)
        send(sent)
        sent += 1
    now = start
    while outstanding:
        events = poller.poll(LOSS_TIMEOUT_S)
        if not events:
            lost += len(outstanding)  # and put as many new requests in flight
            refill, outstanding = len(outstanding), set()
            now = time.perf_counter()
            for _ in range(refill):
                if sent < limit and now < deadline:
                    outstanding.add(sent)
                    send(sent)
                    sent += 1
            continue
        for fd, _ in events:
            try:
                data = sockets[numbers[fd]].recv(2048)
            except BlockingIOError:
                continue
            i = numbers[fd] << 16 | data[2] << 8 | data[3]
            if i not in outstanding:
                continue  # late, after it was taken for lost
            outstanding.remove(i)
            if data[1] == CONTENT and data[0] >> 4 & 3 == ACK:
                ok += 1
            else:
                errors += 1
                code = f"{data[0] >> 4 & 3}/{data[1] >> 5}.{data[1] & 31:02d}"
                codes[code] = codes.get(code, 0) + 1
            now = time.perf_counter()
            if sent < limit and now < deadline:
                outstanding.add(sent)
                send(sent)
                sent += 1
        if now >= deadline:
            break  # what is still in flight is not counted
    wall = now - start
    cpu = time.process_time() - cpu0
    for sock in sockets.values():
        sock.close()
    out.send(
        {
            "sent": sent,
            "ok": ok,
            "errors": errors,
            "lost": lost,
            "codes": codes,
            "wall_s": wall,
            "cpu_s": cpu,
        }  # fmt: skip
    )


def load(server: Server, window: int, seconds: float, requests: int | None) -> dict:
    """One run against `server`, with the server's CPU time read around it."""
    receive, send = multiprocessing.Pipe(duplex=False)
    proc = multiprocessing.Process(
        target=generate, args=(server.port, server.path, window, seconds, requests, send)
    )
    proc.start()
    before = cpu_seconds(server.pid)
    result = receive.recv()
    after = cpu_seconds(server.pid)
    proc.join()
    result["server_cpu_s"] = after - before
    # Let what was still in flight arrive, unread: the next run starts quiet.
    time.sleep(0.2)
    return result


# ---- the malicious datagram ----------------------------------------------------------------


def answer_name(data: bytes) -> str:
    mtype, code = data[0] >> 4 & 3, data[1]
    if code == 0:
        return ("CON", "NON", "ACK", "RST")[mtype]
    return f"{code >> 5}.{code & 31:02d}"


def probed(sock: socket.socket, path: str, count: int, first_mid: int, before=None) -> list:
    """Send `count` GETs of `path` (probes), each after `before(mid)`'s datagram if
    given, and wait for each probe's answer; returns what else came before each
    probe's answer: the answers to `before`'s datagrams, whatever their Message ID
    (libcoap's RST to an oversized datagram carries 0). A probe, not a CoAP ping:
    libcoap 4.3.1 answers only every other ping from one client."""
    answers = []
    for j in range(count):
        mid = first_mid + j
        if before is not None:
            sock.send(before(mid))
        sock.send(get(mid | 0x8000, path))
        other = "nothing"
        while True:
            data = sock.recv(2048)
            if data[2] << 8 | data[3] == mid | 0x8000:
                break
            other = answer_name(data)
        answers.append(other)
    return answers


def malicious(server: Server, count: int) -> dict:
    """CPU time per malicious datagram, the same probes' cost taken away."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        sock.connect((HOST, server.port))
        sock.settimeout(STARTUP_TIMEOUT_S)
        probed(sock, server.path, 20, 0)  # warm
        c0 = cpu_seconds(server.pid)
        probed(sock, server.path, count, 100)
        c1 = cpu_seconds(server.pid)
        answers = probed(sock, server.path, count, 100 + count, malicious_datagram)
        c2 = cpu_seconds(server.pid)
    per = ((c2 - c1) - (c1 - c0)) / count
    return {
        "answer": " or ".join(sorted(set(answers))),
        "cpu_s_per_datagram": per,
        "datagrams_per_s_saturating": 1 / per if per > 0 else None,
    }


# ---- the benchmark -----------------------------------------------------------------------


@dataclass
class Throughput:
    name: str
    rates: list[float] = field(default_factory=list)  # responses/s, one a round
    server_cpu_us: list[float] = field(default_factory=list)  # per response
    generator_cpu: list[float] = field(default_factory=list)  # CPU s / wall s
    errors: int = 0
    lost: int = 0
    codes: dict[str, int] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)


def run(
    names: list[str],
    rounds: int,
    window: int,
    seconds: float,
    requests: int | None,
    malicious_count: int,
) -> dict:
    """Every measurement; the servers started once and stopped at the end."""
    started: list[Server] = []
    try:
        throughput = {}
        for server in servers(names):
            server.start()
            started.append(server)
            load(server, window, 60.0, WARMUP_REQUESTS)
            throughput[server.name] = Throughput(server.name)
        for _ in range(rounds):
            for server in started:
                r = load(server, window, seconds, requests)
                t = throughput[server.name]
                t.rates.append(r["ok"] / r["wall_s"])
                t.server_cpu_us.append(r["server_cpu_s"] / max(r["ok"], 1) * 1e6)
                t.generator_cpu.append(r["cpu_s"] / r["wall_s"])
                t.errors += r["errors"]
                t.lost += r["lost"]
                for code, n in r["codes"].items():
                    t.codes[code] = t.codes.get(code, 0) + n
        attacked = {}
        if malicious_count:
            extra = [] if "iotbench" not in names else servers(["iotbench, no bound"])
            for server in extra:
                server.start()
                started.append(server)
            for server in started:
                attacked[server.name] = malicious(server, malicious_count)
    finally:
        for server in started:
            server.stop()
    medians = {name: t.median for name, t in throughput.items()}
    ratios = {
        f"iotbench/{other}": medians["iotbench"] / medians[other]
        for other in ("aiocoap", "libcoap")
        if "iotbench" in medians and other in medians
    }
    return {
        "config": {
            "rounds": rounds,
            "window": window,
            "seconds": None if requests is not None else seconds,
            "requests": requests,
            "malicious_datagrams": malicious_count,
            "malicious_bytes": len(malicious_datagram(0)),
            "malicious_options": MALICIOUS_OPTIONS,
            "cpus": os.cpu_count(),
        },
        "versions": versions(),
        "throughput": {name: asdict(t) | {"median": t.median} for name, t in throughput.items()},
        "ratios": ratios,
        "malicious": attacked,
    }


def report(result: dict) -> None:
    c = result["config"]
    length = f"{c['requests']:,} requests" if c["requests"] else f"{c['seconds']:g} s"
    print(
        f"CoAP servers on {HOST}, {c['cpus']} CPUs; "
        + ", ".join(f"{k} {v}" for k, v in result["versions"].items())
    )
    print(
        f"closed loop: {c['window']} CON GETs in flight, runs of {length}, "
        f"{c['rounds']} rounds (every server once a round)"
    )
    header = (
        f"{'server':<10} {'responses/s, median (range)':>32} {'server CPU us/resp':>19}"
        f" {'generator CPU':>14} {'errors':>7} {'lost':>5}"
    )
    print(header)
    print("-" * len(header))
    for name, t in result["throughput"].items():
        rates = t["rates"]
        spread = f"{t['median']:,.0f} ({min(rates):,.0f} to {max(rates):,.0f})"
        print(
            f"{name:<10} {spread:>32} {statistics.median(t['server_cpu_us']):>19.1f}"
            f" {max(t['generator_cpu']):>13.0%} {t['errors']:>7} {t['lost']:>5}"
        )
    for name, ratio in result["ratios"].items():
        print(f"{name}: {ratio:.2f}")
    if result["malicious"]:
        print()
        print(
            f"malicious datagram: CON GET of {c['malicious_bytes']:,} bytes with "
            f"{c['malicious_options']:,} Uri-Path options, {c['malicious_datagrams']} of them"
        )
        header = (
            f"{'server':<20} {'answer':>8} {'CPU ms/datagram':>16} {'datagrams/s saturate':>21}"
        )
        print(header)
        print("-" * len(header))
        for name, m in result["malicious"].items():
            rate = m["datagrams_per_s_saturating"]
            print(
                f"{name:<20} {m['answer']:>8} {m['cpu_s_per_datagram'] * 1e3:>16.3f}"
                f" {'-' if rate is None else f'{rate:,.0f}':>21}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="runs of each server (default 5)")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--seconds", type=float, default=5.0, help="length of a run (default 5)")
    length.add_argument("--requests", type=int, help="requests in a run, instead of --seconds")
    parser.add_argument("--window", type=int, default=32, help="requests in flight (default 32)")
    parser.add_argument(
        "--malicious", type=int, default=300, metavar="N", help="malicious datagrams (0: none)"
    )
    parser.add_argument(
        "--servers",
        nargs="+",
        choices=["iotbench", "aiocoap", "libcoap"],
        default=["iotbench", "aiocoap", "libcoap"],
    )
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    args = parser.parse_args(argv)
    if "libcoap" in args.servers and libcoap_server() is None:
        parser.error("libcoap's coap-server-notls is not installed (Debian: libcoap3-bin)")
    result = run(
        args.servers, args.rounds, args.window, args.seconds, args.requests, args.malicious
    )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
