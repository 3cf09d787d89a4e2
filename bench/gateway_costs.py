"""CPU time per message of S4's gateway software, measured here and scaled to the A8.

    python bench/gateway_costs.py [--quick] [--repeat R] [--seconds S] [--rate MSG_PER_S]
                                  [--coremark SCORE] [--quiet-peers]
                                  [--peer-python EXE] [--answers N]

S4's gateway was a FIT IoT-LAB A8 node (ARM Cortex-A8, TI AM3505 at 600 MHz,
Linux). It ran aiocoap 0.3 (a CoAP server answering each PUT /i3/gasval with
2.04, and an Observe client receiving NON notifications) and mosquitto.rsmb
1.3 (the MQTT-SN broker). This script measures what those programs cost in
CPU time per message on this machine, and scales it to the A8 by CoreMark:

- aiocoap PUT (CON and NON): a real aiocoap server in its own process, with
  the study's resource (it prints the PUT and answers 2.04 with an empty
  payload), driven over IPv6 loopback by hand-built CoAP bytes sent from
  plain sockets in this process, so that no client's work is in the server's
  account. Payload: the study's 32-byte JSON, Content-Format 0.
- aiocoap notification: this process plays the observed server: it answers
  the client's NON GET with Observe=0 with a NON 2.05, then sends NON
  notifications with increasing Observe numbers (the same 32 bytes,
  Content-Format 50). An aiocoap Observe client in its own process prints
  each notification, as the study's did, which is also how this process
  learns that it has been handled.
- mosquitto PUBLISH (QoS 0 and QoS 1): rsmb is in no package registry
  reachable here, so mosquitto (C, like rsmb) stands in. It parses MQTT over
  TCP where rsmb parses MQTT-SN over UDP, but a broker's work per message is
  of the same kind: parse, match the topic, acknowledge (QoS 1), forward to
  subscribers. Topic /i3/gasval, the 32-byte payload, from hand-built MQTT
  3.1.1 bytes. No subscriber, as in the study: its nodes only published, and
  its broker (apps/mqtt_pub_cli/broker.cfg) had no other client.

Like the study's programs, the peers log every message: the aiocoap server
prints each PUT and the client each notification (line-buffered, as on a
terminal), and rsmb ran with `trace_output protocol`, for which mosquitto's
`log_type all` (a line per packet received and sent) stands in. The output
goes to /dev/null or, for the Observe client, to a pipe that this process
reads. --quiet-peers drops the server's print and mosquitto's log, and the
client prints a bare count instead of the study's line.

The aiocoap programs run under --peer-python (default: this Python, with
today's aiocoap). The study's own stack runs as well: a Python 3.6 with
aiocoap 0.3 (docs/performance.md says how to make one).

A program's CPU time (user + system, all threads) is read from Linux's
per-process CPU clock before and after a run. Its idle CPU (measured with no
traffic) over the run's wall time is subtracted and the rest divided by the
messages handled. Each program gets R runs of two kinds:

- busy: 3,000 messages (500 with --quick) as fast as the program takes
  them, with at most 64 outstanding over UDP (over TCP, TCP's flow control
  is the window). The program is never idle, so this is its work per
  message, and the rate is its saturation rate. (Over TCP, mosquitto may
  read several PUBLISH packets at once, saving system calls that rsmb,
  reading a UDP datagram at a time, makes.)
- paced: one message at a time at a quarter of the first busy run's rate,
  at most --rate (1,000/s by default), for S seconds, as sparse traffic
  arrives at a gateway. Each message then also pays for waking the program
  up, which on a virtual machine can cost more than a small program's work.

The first line measures that floor: a plain Python loop that receives a
datagram and answers it (no CoAP), measured in the same two ways.

Printed per program: the median of each kind and its range, and both scaled
to the A8. The ratio to the A8: this machine's CoreMark (HOST_COREMARK, or
--coremark) over a Cortex-A8's at 600 MHz (A8_COREMARK_PER_MHZ x 600); one
ratio serves both the Python and the C programs.

--answers N adds each PUT's own time: N PUTs (CON and NON) sent one at a
time at the study's pace at its 50 ms interval (a wait drawn from 25 to
75 ms), the server's CPU time from one PUT to the next, scaled to the A8:
its quantiles, and how often the A8 would still be working on a PUT when
the producer sends the next one (what every loss mechanism of the
gateway's path needs, docs/studies/s4.md, "PUT at 50 ms"), also were the
A8 slower than CoreMark says (SLOWER_FACTORS), and their spread relative to
the median (the profiles' MEASURED_SPREADS, which `network.uplink.cost_spread`
draws from). CoreMark moves with the machine's speed: measure it the same hour
and pass it with --coremark.

Method, sources and figures: docs/performance.md, "Gateway software costs".
"""

from __future__ import annotations

import argparse
import inspect
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from iotbench.proto.ndn.profiles import SPREAD_PROBABILITIES

#: CoreMark 1.0 of this machine, one core (2-core AMD EPYC virtual machine; 2026-11-26):
#: github.com/eembc/coremark at d5fad6b, `make compile` (GCC 12.2.0, -O2, the
#: Linux port), median of 8 runs of `./coremark.exe 0x0 0x0 0x66 0 7 1 2000`
#: (19,194 to 22,786: the machine's speed varies). Measure another machine the
#: same way and pass its score with --coremark.
HOST_COREMARK = 21_220.0
#: CoreMark per MHz of a Cortex-A8: 2,497 at 1,000 MHz on a BeagleBone Black
#: (TI AM3359) under Ubuntu 14.04 with GCC (github.com/fm4dd/sbc-benchmarks,
#: cm-benchmark.md, March 2017). CoreMark fits in the A8's L1 caches, so its
#: score per MHz is the core's, whatever the clock and the memory behind it.
A8_COREMARK_PER_MHZ = 2497 / 1000
#: The FIT IoT-LAB A8 node's clock (TI AM3505).
A8_MHZ = 600

#: The study's sensor value (apps/coap_put_cli, apps/mqtt_pub_cli): 32 bytes of JSON.
PAYLOAD = b'{"id":"0x12a77af232","val":3000}'
TOPIC = b"/i3/gasval"
#: Daemons install here, which is often not on a user's PATH.
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")
STARTUP_TIMEOUT_S = 20.0
#: Messages handled before anything is timed: a program's first messages load
#: code and fill caches that every later one finds ready.
WARMUP_MESSAGES = 200
#: Over UDP, at most this many messages outstanding while saturating (a full
#: socket buffer would drop the rest, and dropped messages cost no CPU).
SATURATION_WINDOW = 64
#: The study's wait between readings at its 50 ms interval: MEDIAN_WAIT = 50 in
#: its apps draws it uniformly from MEDIAN_WAIT / 2 to 3 * MEDIAN_WAIT / 2 ms.
STUDY_WAIT_S = (0.025, 0.075)
#: The quantiles printed of the per-PUT times.
ANSWER_QUANTILES = (0.5, 0.9, 0.99, 0.999)
#: The A8 slower than CoreMark says by these factors: how the share of readings
#: it is behind at depends on the ratio (CoreMark likely flatters the A8 on
#: Python, whose code and data overflow its caches; docs/performance.md).
SLOWER_FACTORS = (1.25, 1.5, 2.0)
#: After the last message is handled, the program may still finish its work
#: (a timer, a log line) before its CPU clock is read.
SETTLE_S = 0.05


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far, all threads, in seconds.

    Linux gives every process a CPU-time clock that others may read
    (clock_getcpuclockid(3)); its id is (~pid << 3) | 2 (CPUCLOCK_SCHED). It
    counts nanoseconds, where /proc/<pid>/stat counts 10 ms ticks.
    """
    try:
        return time.clock_gettime((~pid << 3) | 2)
    except OSError:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---- Hand-built CoAP and MQTT bytes ------------------------------------------------------

CON, NON = 0, 1
PUT, CHANGED, CONTENT = 0x03, 0x44, 0x45
URI_PATH, OBSERVE, CONTENT_FORMAT = 11, 6, 12


def uint(n: int) -> bytes:
    """A CoAP uint option value: big-endian, no leading zero bytes (0 is empty)."""
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


def coap(mtype: int, code: int, mid: int, token: bytes, options, payload: bytes = b"") -> bytes:
    """A CoAP message; `options` in ascending order, every delta and length below 13."""
    out = bytearray([0x40 | mtype << 4 | len(token), code, mid >> 8, mid & 0xFF]) + token
    last = 0
    for number, value in options:
        assert number - last < 13 and len(value) < 13, "needs an extended option header"
        out += bytes([(number - last) << 4 | len(value)]) + value
        last = number
    if payload:
        out += b"\xff" + payload
    return bytes(out)


def mqtt(first_byte: int, body: bytes) -> bytes:
    """An MQTT control packet: fixed header (Remaining Length) and body."""
    length, encoded = len(body), bytearray()
    while True:
        length, digit = divmod(length, 128)
        encoded.append(digit | (0x80 if length else 0))
        if not length:
            return bytes([first_byte]) + encoded + body


def mqtt_string(text: bytes) -> bytes:
    return len(text).to_bytes(2, "big") + text


# ---- The programs under test -------------------------------------------------------------


class Peer:
    """A program under test in its own process, and a count of the messages it has handled."""

    #: Most messages outstanding while saturating; None: TCP's flow control is the window.
    window: int | None = SATURATION_WINDOW

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.sent = 0
        self.handled = 0
        self._changed = threading.Condition()

    def _count(self, handled: int) -> None:
        with self._changed:
            self.handled = handled
            self._changed.notify_all()

    def wait_handled(self, count: int, timeout: float = 5.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self.handled >= count, timeout)

    def forget_lost(self) -> None:
        """Take messages not handled by now (lost over UDP) for never sent."""
        with self._changed:
            self.sent = self.handled

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    def send(self) -> None:
        """Send the next message."""
        raise NotImplementedError

    def sync(self) -> None:
        """Wait until every message sent has been handled (or a timeout)."""
        self.wait_handled(self.sent)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


#: The Python that runs the aiocoap programs (--peer-python): it must import aiocoap.
peer_python = sys.executable


def start_python_peer(role: str, port: int, quiet: bool, **popen) -> subprocess.Popen:
    """`python_peer` in a new process of `peer_python`."""
    code = inspect.getsource(python_peer) + "\nimport sys\n"
    code += "python_peer(sys.argv[1], int(sys.argv[2]), sys.argv[3] == 'quiet')\n"
    return subprocess.Popen(
        [peer_python, "-c", code, role, str(port), "quiet" if quiet else "log"], **popen
    )


def aiocoap_version() -> str:
    """Python and aiocoap versions of `peer_python`."""
    probe = (
        "import sys\ntry:\n from importlib.metadata import version\n"
        "except ImportError:\n import pkg_resources\n"
        " version = lambda name: pkg_resources.get_distribution(name).version\n"
        "print('Python %d.%d.%d' % sys.version_info[:3], 'aiocoap', version('aiocoap'))"
    )
    return subprocess.run(
        [peer_python, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()


def _check_mid(mid: int) -> None:
    # aiocoap takes a message whose Message ID it saw from the same endpoint
    # in the last 247 s (EXCHANGE_LIFETIME) for a duplicate.
    if mid >= 65536:
        raise RuntimeError("more than 65,536 CoAP messages to one peer: Message IDs would repeat")


class CoapServer(Peer):
    """aiocoap's server with the study's PUT resource; this process is its client.

    With `echo`, a plain Python loop answers instead: the floor of any program's
    cost per datagram received and answered on this machine.
    """

    def __init__(self, confirmable: bool, quiet: bool = False, echo: bool = False) -> None:
        super().__init__()
        self.mtype = CON if confirmable else NON
        self.mids = 0  # Message IDs used (`sent` forgets lost messages)
        self.sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        self.sock.bind(("::1", 0))
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as probe:
            probe.bind(("::1", 0))
            port = probe.getsockname()[1]
        self.server = ("::1", port)
        self.log = tempfile.TemporaryFile()  # the server's logging, shown if it fails
        self.proc = start_python_peer(
            "echo" if echo else "server",
            port,
            quiet,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:  # until the server answers (it may not be listening yet)
            self.send()
            if self.wait_handled(1, 0.2):
                break
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                self.log.seek(0)
                raise RuntimeError(f"the server did not answer: {self.log.read().decode()}")
        # PUTs sent before the server was listening are lost.
        time.sleep(0.3)  # (answers to the others may be on their way)
        self.forget_lost()

    def _read(self) -> None:
        responses = 0
        while True:
            try:
                data = self.sock.recv(1500)
            except OSError:  # closed
                return
            if len(data) >= 2 and data[1] == CHANGED:
                responses += 1
                self._count(responses)

    def send(self) -> None:
        mid = self.mids
        _check_mid(mid)
        self.mids += 1
        self.sent += 1
        token = mid.to_bytes(2, "big")
        options = [(URI_PATH, b"i3"), (URI_PATH, b"gasval"), (CONTENT_FORMAT, uint(0))]
        self.sock.sendto(coap(self.mtype, PUT, mid, token, options, PAYLOAD), self.server)

    def close(self) -> None:
        super().close()
        self.sock.close()


class ObserveClient(Peer):
    """aiocoap's Observe client; this process plays the observed server."""

    def __init__(self, quiet: bool = False) -> None:
        super().__init__()
        self.sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        self.sock.bind(("::1", 0))
        self.sock.settimeout(STARTUP_TIMEOUT_S)
        port = self.sock.getsockname()[1]
        self.proc = start_python_peer(
            "observer",
            port,
            quiet,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            registration, self.client = self.sock.recvfrom(1500)
        except TimeoutError:
            self.close()
            raise RuntimeError("the aiocoap Observe client sent no registration") from None
        self.token = registration[4 : 4 + (registration[0] & 0x0F)]
        self.mids = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.send()  # the 2.05 answering the registration: the first notification
        if not self.wait_handled(1, STARTUP_TIMEOUT_S):
            self.close()
            raise RuntimeError("the aiocoap Observe client did not take the first response")

    def _read(self) -> None:
        lines = 0
        for _ in self.proc.stdout:  # one line per response handled
            lines += 1
            self._count(lines)

    def send(self) -> None:
        self.mids += 1  # this message's Message ID and Observe number
        _check_mid(self.mids)
        self.sent += 1
        options = [(OBSERVE, uint(self.mids)), (CONTENT_FORMAT, uint(50))]
        message = coap(NON, CONTENT, self.mids, self.token, options, PAYLOAD)
        self.sock.sendto(message, self.client)

    def close(self) -> None:
        super().close()
        self.sock.close()


def find_mosquitto() -> str | None:
    return shutil.which("mosquitto") or shutil.which("mosquitto", path=":".join(SBIN_DIRS))


class Mosquitto(Peer):
    """mosquitto with one publisher, this process, and no subscriber."""

    window = None  # TCP

    def __init__(self, qos: int, quiet: bool = False) -> None:
        super().__init__()
        exe = find_mosquitto()
        if exe is None:
            raise RuntimeError("mosquitto is not installed (apt-get install mosquitto)")
        self.qos = qos
        self.dir = tempfile.TemporaryDirectory()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        config = os.path.join(self.dir.name, "mosquitto.conf")
        with open(config, "w") as f:
            f.write(
                # Nagle's algorithm off, as on the publisher's socket: UDP has none.
                f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                "set_tcp_nodelay true\n"
                + ("log_dest none\n" if quiet else "log_dest stdout\nlog_type all\n")
            )
        self.proc = subprocess.Popen(
            [exe, "-c", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.close()
                    raise RuntimeError("mosquitto did not listen") from None
                time.sleep(0.05)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connect = b"\x00\x04MQTT\x04\x02\x00\x3c" + mqtt_string(b"gateway-costs-pub")
        self.sock.sendall(mqtt(0x10, connect))
        if self.sock.recv(4)[:1] != b"\x20":
            raise RuntimeError("mosquitto refused the connection")
        self.sock.settimeout(None)
        self._pings: deque[int] = deque()  # messages sent before each PINGREQ in flight
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        # The broker sends this publisher PUBACKs (4 bytes) and PINGRESPs (2 bytes) only.
        buffer = b""
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            buffer += data
            while len(buffer) >= 2 and len(buffer) >= 2 + buffer[1]:
                kind, buffer = buffer[0] >> 4, buffer[2 + buffer[1] :]
                if kind == 13:  # PINGRESP: everything sent before its PINGREQ is handled
                    self._count(self._pings.popleft())

    def send(self) -> None:
        self.sent += 1
        if self.qos:
            packet_id = (self.sent - 1) % 65535 + 1  # acknowledged at once, so reusable
            body = mqtt_string(TOPIC) + packet_id.to_bytes(2, "big") + PAYLOAD
            self.sock.sendall(mqtt(0x32, body))
        else:
            self.sock.sendall(mqtt(0x30, mqtt_string(TOPIC) + PAYLOAD))

    def sync(self) -> None:
        # The broker handles a connection's packets in order: its PINGRESP comes
        # after it has handled every PUBLISH before the PINGREQ.
        self._pings.append(self.sent)
        self.sock.sendall(b"\xc0\x00")
        self.wait_handled(self.sent)

    def close(self) -> None:
        if hasattr(self, "sock"):
            self.sock.close()
        super().close()
        self.dir.cleanup()


# ---- Measuring -----------------------------------------------------------------------------


def idle_cpu(peer: Peer, seconds: float) -> float:
    """CPU seconds per wall second the peer spends with no traffic (timers, housekeeping)."""
    before = peer.cpu()
    time.sleep(seconds)
    return (peer.cpu() - before) / seconds


def run(peer: Peer, messages: int, rate: float | None, idle: float) -> tuple[float, float]:
    """Send `messages`, `rate` a second (None: as fast as the peer takes them).

    Returns (CPU seconds per message handled, net of idle CPU; messages handled
    per wall second).
    """
    peer.sync()
    handled_before = peer.handled
    cpu_before, start = peer.cpu(), time.perf_counter()
    for i in range(messages):
        if rate is not None:
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        elif peer.window is not None:
            peer.wait_handled(peer.sent - peer.window + 1)
        peer.send()
    peer.sync()
    busy = time.perf_counter() - start
    time.sleep(SETTLE_S)
    cpu = peer.cpu() - cpu_before - idle * (time.perf_counter() - start)
    handled = peer.handled - handled_before
    if handled < messages:
        print(f"  warning: {messages - handled} of {messages} messages not handled", flush=True)
        peer.forget_lost()
    return cpu / max(handled, 1), handled / busy


@dataclass
class Result:
    name: str
    #: The a8 profile's operation this figure prices (proto/ndn/profiles.py).
    operation: str
    rate: float = 0.0  # the paced runs' messages per second
    #: CPU seconds per message, one figure per run: paced, and busy (saturating).
    paced_s: list[float] = field(default_factory=list)
    busy_s: list[float] = field(default_factory=list)
    saturation: list[float] = field(default_factory=list)  # messages per second, per busy run


def measure(
    name: str,
    operation: str,
    start: Callable[[], Peer],
    repeat: int,
    seconds: float,
    max_rate: float,
    saturation_messages: int,
    idle_seconds: float,
) -> Result:
    """Start a peer, warm it up and measure its idle CPU; then `repeat` times a busy
    run (saturating) and a paced run, at a quarter of the first busy run's rate."""
    result = Result(name, operation)
    peer = start()
    try:
        run(peer, WARMUP_MESSAGES, None, 0.0)
        idle = idle_cpu(peer, idle_seconds)
        for _ in range(repeat):
            cost, rate = run(peer, saturation_messages, None, idle)
            result.busy_s.append(cost)
            result.saturation.append(rate)
            if not result.rate:  # well below saturation: each message handled on its own
                result.rate = min(max_rate, rate / 4)
            paced = run(peer, max(1, round(result.rate * seconds)), result.rate, idle)
            result.paced_s.append(paced[0])
    finally:
        peer.close()
    return result


def answer_times(peer: Peer, messages: int, seed: int) -> list[float]:
    """CPU seconds the peer spends on each of `messages` sent one at a time, a
    study's wait apart: from just before a message to just before the next, so
    whatever it does after answering (timers, logging) counts too; its idle CPU
    is zero for the aiocoap programs (measured) and not subtracted."""
    rng = random.Random(seed)
    peer.sync()
    times = []
    before = peer.cpu()
    for _ in range(messages):
        peer.send()
        peer.sync()
        time.sleep(rng.uniform(*STUDY_WAIT_S))
        now = peer.cpu()
        times.append(now - before)
        before = now
    return times


def quantile(sorted_values: list[float], q: float) -> float:
    """The value below which a share `q` of `sorted_values` lies (nearest rank)."""
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def share_still_busy(a8_times_s: list[float]) -> float:
    """The share of readings whose PUT the A8 is still working on when the
    producer sends the next: the mean over the PUTs of P(wait < time), the
    study's wait uniform over STUDY_WAIT_S."""
    low, high = STUDY_WAIT_S
    return sum(min(1.0, max(0.0, (t - low) / (high - low))) for t in a8_times_s) / len(a8_times_s)


def answers_row(name: str, times_s: list[float], ratio: float) -> str:
    """A PUT server's per-PUT times: quantiles and most here in us, the same scaled
    to the A8 in ms, and the share of readings the A8 is still busy at."""
    ordered = sorted(times_s)
    here = [quantile(ordered, q) * 1e6 for q in ANSWER_QUANTILES] + [ordered[-1] * 1e6]
    a8 = [t * ratio / 1e3 for t in here]
    busy = share_still_busy([t * ratio for t in ordered])
    return (
        f"{name:<26} {len(ordered):>5} "
        + " ".join(f"{t:>6,.0f}" for t in here)
        + "  "
        + " ".join(f"{t:>5.1f}" for t in a8)
        + f"  {busy:>9.2%}"
    )


def spread_row(times_s: list[float]) -> str:
    """A PUT server's per-PUT times relative to their median at SPREAD_PROBABILITIES:
    the form the device profiles keep a measured spread in (MEASURED_SPREADS), which
    runs draw from with `network.uplink.cost_spread`."""
    ordered = sorted(times_s)
    median = statistics.median(ordered)
    knots = [quantile(ordered, p) / median for p in SPREAD_PROBABILITIES[:-1]]
    knots.append(ordered[-1] / median)
    return (
        "  spread, time / median at p"
        + ", ".join(f"{p * 100:g}" for p in SPREAD_PROBABILITIES)
        + ":\n    ("
        + ", ".join(f"{k:.3f}" for k in knots)
        + ")"
    )


def print_answers(messages: int, quiet: bool, ratio: float) -> None:
    """--answers: each PUT's own time at the study's 50 ms pace, CON and NON, and
    the floor: a plain loop's time per datagram received and answered so."""
    labels = [f"p{q * 100:g}" for q in ANSWER_QUANTILES] + ["max"]
    print(
        f"\nEach PUT's CPU time, {messages} PUTs one at a time, a wait of "
        f"{STUDY_WAIT_S[0] * 1e3:g} to {STUDY_WAIT_S[1] * 1e3:g} ms apart (the study's "
        "50 ms interval), from one PUT to the next"
    )
    header = (
        f"{'program, message':<26} {'PUTs':>5} "
        + " ".join(f"{label:>6}" for label in labels)
        + "  "
        + " ".join(f"{label:>5}" for label in labels)
        + f"  {'A8 busy at':>9}"
    )
    print(f"{'':<32} {' here, us ':-^34}  {' A8, ms ':-^29}  {'next PUT':>9}")
    print(header)
    print("-" * len(header))
    servers = [
        ("plain UDP echo (floor)", lambda: CoapServer(True, echo=True)),
        ("aiocoap server, PUT CON", lambda: CoapServer(True, quiet)),
        ("aiocoap server, PUT NON", lambda: CoapServer(False, quiet)),
    ]
    for name, start in servers:
        peer = start()
        try:
            run(peer, WARMUP_MESSAGES, None, 0.0)
            times = answer_times(peer, messages, seed=1)
        finally:
            peer.close()
        print(answers_row(name, times, ratio), flush=True)
        if name.startswith("aiocoap"):
            shares = [share_still_busy([t * ratio * f for t in times]) for f in SLOWER_FACTORS]
            factors = " / ".join(f"{f:g}x" for f in SLOWER_FACTORS)
            print(
                f"  A8 busy at next PUT were the A8 {factors} slower than CoreMark says: "
                + " / ".join(f"{share:.2%}" for share in shares),
                flush=True,
            )
            print(spread_row(times), flush=True)
    print("-" * len(header))
    print(
        "A8 busy at next PUT: the share of readings whose PUT the A8 is still working on "
        "when the producer sends the next one"
    )


def a8_ratio(host_coremark: float) -> float:
    """How many times longer the A8 takes for the same work: the CoreMark ratio."""
    return host_coremark / (A8_COREMARK_PER_MHZ * A8_MHZ)


def workloads(quiet: bool) -> list[tuple[str, str, Callable[[], Peer]]]:
    """(name, the a8 profile's operation, how to start the peer) for each measurement."""
    return [
        ("plain UDP echo (floor, Python)", "", lambda: CoapServer(True, echo=True)),
        ("aiocoap server, PUT CON", "coap_message", lambda: CoapServer(True, quiet)),
        ("aiocoap server, PUT NON", "coap_message", lambda: CoapServer(False, quiet)),
        ("aiocoap client, notification", "coap_message", lambda: ObserveClient(quiet)),
        ("mosquitto, PUBLISH QoS 0", "mqttsn_message", lambda: Mosquitto(0, quiet)),
        ("mosquitto, PUBLISH QoS 1", "mqttsn_message", lambda: Mosquitto(1, quiet)),
    ]


def a8_us(result: Result, ratio: float) -> tuple[float, float]:
    """The A8's CPU time per message, busy and paced: the medians here x `ratio`, in us."""
    return (
        statistics.median(result.busy_s) * ratio * 1e6,
        statistics.median(result.paced_s) * ratio * 1e6,
    )


def row(result: Result, ratio: float) -> str:
    """The result's line in the table: here, and scaled to the A8."""
    busy, paced = a8_us(result, ratio)
    return (
        f"{result.name:<36} {statistics.median(result.saturation):>10,.0f} "
        f"{spread(result.busy_s):>24} {busy:>7,.0f} "
        f"{result.rate:>7,.0f} {spread(result.paced_s):>24} {paced:>7,.0f}"
    )


def spread(values_s: list[float]) -> str:
    """Median and range, in microseconds."""
    us = [v * 1e6 for v in values_s]
    return f"{statistics.median(us):.1f} ({min(us):.1f} to {max(us):.1f})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI-size runs (about 20 s)")
    parser.add_argument("--repeat", type=int, help="runs of each kind (default 5; quick 2)")
    parser.add_argument("--seconds", type=float, help="length of a paced run (default 2)")
    parser.add_argument("--rate", type=float, default=1000.0, help="most messages/s when paced")
    parser.add_argument(
        "--coremark",
        type=float,
        default=HOST_COREMARK,
        help=f"this machine's CoreMark (default {HOST_COREMARK:,.0f}: see HOST_COREMARK)",
    )
    parser.add_argument("--quiet-peers", action="store_true", help="no per-message log lines")
    parser.add_argument(
        "--peer-python",
        default=sys.executable,
        metavar="EXE",
        help="the Python that runs the aiocoap programs, e.g. a Python 3.6 with aiocoap 0.3",
    )
    parser.add_argument(
        "--answers",
        type=int,
        default=0,
        metavar="N",
        help="also time each of N PUTs at the study's 50 ms pace (CON, NON and a plain loop; about N x 0.16 s)",
    )
    args = parser.parse_args(argv)
    global peer_python
    peer_python = args.peer_python
    repeat = args.repeat or (2 if args.quick else 5)
    seconds = args.seconds or (0.5 if args.quick else 2.0)
    busy_messages = 500 if args.quick else 3000
    idle_seconds = 0.3 if args.quick else 1.0
    ratio = a8_ratio(args.coremark)

    if find_mosquitto() is None:
        parser.error("mosquitto is not installed (Debian: apt-get install mosquitto)")
    mosquitto = subprocess.run([find_mosquitto(), "-h"], capture_output=True)
    print(f"peers: {aiocoap_version()}; {mosquitto.stdout.decode().splitlines()[0]}")
    print(
        f"CPU time per message, median (min to max) of {repeat} runs of each kind: busy "
        f"({busy_messages} messages, as fast as the program takes them) and paced "
        f"({seconds:g} s at a quarter of the busy rate, at most {args.rate:,.0f}/s)"
    )
    groups = f"{'':<36} {' busy: saturating ':-^43} {' paced: one at a time ':-^40}"
    header = (
        f"{'program, message':<36} {'msg/s':>10} {'us/msg here':>24} {'A8 us':>7}"
        f" {'msg/s':>7} {'us/msg here':>24} {'A8 us':>7}"
    )
    print(groups)
    print(header)
    print("-" * len(header))
    results = []
    for name, operation, start in workloads(args.quiet_peers):
        r = measure(name, operation, start, repeat, seconds, args.rate, busy_messages, idle_seconds)
        results.append(r)
        print(row(r, ratio), flush=True)
    print("-" * len(header))
    print(
        f"A8 = here x {ratio:.2f}: CoreMark here {args.coremark:,.0f}, Cortex-A8 at {A8_MHZ} MHz "
        f"{A8_COREMARK_PER_MHZ * A8_MHZ:,.0f} ({A8_COREMARK_PER_MHZ:.3f}/MHz, BeagleBone Black)"
    )
    from iotbench.proto.ndn.profiles import get_profile

    profile = get_profile("a8")
    for operation in ("coap_message", "mqttsn_message"):
        busy = [a8_us(r, ratio)[0] for r in results if r.operation == operation]
        print(
            f"a8 profile's {operation}: {profile.cost_s(operation) * 1e6:.0f} us today; "
            f"busy figures scaled: {min(busy):,.0f} to {max(busy):,.0f} us"
        )
    if args.answers:
        print_answers(args.answers, args.quiet_peers, ratio)


# ---- The aiocoap programs' own process ------------------------------------------------------


def python_peer(role, port, quiet):
    """The study's aiocoap programs: the PUT server (apps/coap_put_srv) on [::1]:port
    (role "server"), or the Observe client (apps/coap_observe_cli) of
    coap://[::1]:port/i3/gasval (role "observer"); or (role "echo") a plain loop
    that answers every datagram on [::1]:port with an ACK 2.04.

    Its source is run by --peer-python, which may be the study's own stack
    (Python 3.6 and aiocoap 0.3): Python 3.6 syntax only, and only the aiocoap
    API that 0.3 and today's versions share (the study's code used it so).
    """
    if role == "echo":  # receive, answer, nothing else
        import socket

        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        sock.bind(("::1", port))
        while True:
            data, address = sock.recvfrom(1500)
            sock.sendto(b"\x60\x44" + data[2:4], address)

    import asyncio
    import logging

    import aiocoap
    import aiocoap.resource

    logging.basicConfig(level=logging.INFO)  # as the study's programs

    class GasVal(aiocoap.resource.Resource):
        async def render_put(self, request):
            if not quiet:  # flushed: one write per line, as on the study's terminal
                host, port = request.remote.sockaddr[:2]
                print(f"PUT /i3/gasval from [{host}]:{port}: {request.payload}", flush=True)
            return aiocoap.Message(code=aiocoap.CHANGED, payload=b"")

    async def serve():
        root = aiocoap.resource.Site()
        root.add_resource(
            (".well-known", "core"),
            aiocoap.resource.WKCResource(root.get_resources_as_linkheader),
        )
        root.add_resource(("i3", "gasval"), GasVal())
        await aiocoap.Context.create_server_context(root, bind=("::1", port))

    async def observe():
        uri = f"coap://[::1]:{port}/i3/gasval"
        context = await aiocoap.Context.create_client_context()
        request = aiocoap.Message(mtype=aiocoap.NON, code=aiocoap.GET, uri=uri, observe=0)
        pr = context.request(request)
        response = await pr.response
        print(f"First response for {uri}: {response.code} {response.payload!r}", flush=True)
        count = 1
        async for response in pr.observation:  # every line tells the benchmark one more
            count += 1
            if quiet:
                print(count, flush=True)
            else:
                line = f"{count}: Next result for {uri}: {response.code} {response.payload!r}"
                print(line, flush=True)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    if role == "server":
        loop.run_until_complete(serve())
        loop.run_forever()  # until terminated
    else:
        loop.run_until_complete(observe())


if __name__ == "__main__":
    main()
