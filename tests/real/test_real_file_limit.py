"""`iotbench serve mqtt` (and `serve http`) at the file descriptor limit (issue 39, item 6).

The server runs in a subprocess whose RLIMIT_NOFILE is lowered to 64; more
connections than that arrive. It must keep its log short, keep serving the
clients it has, and accept new ones once descriptors are free again.
Loopback only, a few seconds each. Then real/stream.py's Listener alone,
with an accept() that fails on demand: its back-off, its log lines, its
recovery.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import http.client
import logging
import os
import socket
import subprocess
import sys
import time

import pytest

from iotbench.proto.mqtt.codec import Connect, PingReq, Publish, Subscribe, encode
from iotbench.real.stream import Listener

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="RLIMIT_NOFILE and /proc are Linux's"
)

LIMIT = 64
FLOOD = 120  # connections beyond the limit (the listen queue holds 100 of them)
#: `iotbench serve PROTOCOL` with the file limit lowered once the modules are loaded.
SERVER = """
import resource, sys
from iotbench.cli import main
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), hard))
sys.exit(main(["serve", sys.argv[2], "--port", "0"]))
"""


def cpu_s(pid: int) -> float:
    """User and system CPU time the process has used (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    return data


def mqtt_client(port: int, client_id: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(encode(Connect(client_id=client_id)))
    assert recv_exactly(sock, 4) == b"\x20\x02\x00\x00"  # CONNACK, accepted
    return sock


@contextlib.contextmanager
def serve(tmp_path, protocol: str):
    """The server process, its port and its log (stderr, in a file: a pipe left
    unread would stop a server that logs too much)."""
    log = tmp_path / "server.log"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(LIMIT), protocol],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 20
        while "listening on" not in (first := log.read_text()) and time.monotonic() < deadline:
            assert proc.poll() is None, first
            time.sleep(0.05)
        line = first.splitlines()[0] if first else ""
        assert "listening on" in line and "://127.0.0.1:" in line, first
        yield proc, int(line.split()[-1].rsplit(":", 1)[1]), log
    finally:
        proc.terminate()
        proc.wait(10)


def stop(proc: subprocess.Popen, log_file) -> str:
    proc.terminate()
    proc.wait(10)
    return log_file.read_text()


@pytest.fixture
def broker(tmp_path):
    with serve(tmp_path, "mqtt") as running:
        yield running


def test_at_the_file_limit_the_broker_logs_little_and_keeps_serving(broker):
    proc, port, log_file = broker
    subscriber = mqtt_client(port, "subscriber")
    subscriber.sendall(encode(Subscribe(packet_id=1, topics=(("t", 0),))))
    assert recv_exactly(subscriber, 5) == b"\x90\x03\x00\x01\x00"  # SUBACK, QoS 0
    publisher = mqtt_client(port, "publisher")

    flood = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(FLOOD)]
    started, cpu_before = time.monotonic(), cpu_s(proc.pid)
    for n in range(4):  # two seconds at the limit
        time.sleep(0.5)
        publisher.sendall(encode(PingReq()))
        assert recv_exactly(publisher, 2) == b"\xd0\x00"  # PINGRESP
        publisher.sendall(encode(Publish(topic="t", payload=b"%d" % n)))
        assert recv_exactly(subscriber, 6) == b"\x30\x04\x00\x01t" + b"%d" % n
    cpu = cpu_s(proc.pid) - cpu_before
    assert cpu < 0.5 * (time.monotonic() - started), f"{cpu:.2f} s of CPU at the limit"

    for sock in flood:
        sock.close()
    newcomer = mqtt_client(port, "newcomer")  # accepted again once descriptors are free
    newcomer.sendall(encode(PingReq()))
    assert recv_exactly(newcomer, 2) == b"\xd0\x00"
    for sock in (subscriber, publisher, newcomer):
        sock.close()

    log = stop(proc, log_file)
    assert "Too many open files (EMFILE)" in log
    assert "Traceback" not in log
    # Listening, stopped, and for each run of failures (one at the limit, one
    # while the closed flood is accepted) its start and its end.
    assert len(log.splitlines()) <= 6, log[:3000]


def test_at_the_file_limit_the_http_server_logs_little_and_keeps_serving(tmp_path):
    with serve(tmp_path, "http") as (proc, port, log_file):
        kept = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        kept.request("GET", "/json")
        assert kept.getresponse().read()
        flood = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(FLOOD)]
        time.sleep(1.0)
        kept.request("GET", "/json")  # keep-alive: the connection it has
        assert kept.getresponse().status == 200
        for sock in flood:
            sock.close()
        later = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        later.request("GET", "/json")
        assert later.getresponse().status == 200
        kept.close()
        later.close()
        log = stop(proc, log_file)
    assert "Too many open files (EMFILE)" in log and "Traceback" not in log
    assert len(log.splitlines()) <= 10, log[:3000]


class FlakySocket:
    """A listening socket whose accept() fails with `error` while it is set."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.error: int | None = errno.EMFILE

    def accept(self):
        if self.error is not None:
            raise OSError(self.error, os.strerror(self.error))
        return self.sock.accept()

    def __getattr__(self, name):  # fileno, getsockname, close
        return getattr(self.sock, name)


def test_the_listener_backs_off_logs_once_per_interval_and_recovers(caplog):
    caplog.set_level(logging.WARNING, "iotbench.real")

    async def main():
        flaky = FlakySocket()
        made: list[asyncio.Transport] = []

        class Peer(asyncio.Protocol):
            def connection_made(self, transport) -> None:
                made.append(transport)

        listener = Listener([flaky], Peer, backoff_s=0.05, log_interval_s=0.3)
        client = socket.create_connection(flaky.getsockname())  # waits in the listen queue
        await asyncio.sleep(1.0)
        failed = listener.failed_accepts
        flaky.error = None
        for _ in range(100):
            if made:
                break
            await asyncio.sleep(0.02)
        listener.close()
        client.close()
        for transport in made:
            transport.close()
        return failed, len(made)

    failed, made = asyncio.run(main())
    # About one accept() per back-off, not a hundred per wake-up.
    assert 5 <= failed <= 21 and made == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "iotbench.real"]
    assert lines[0].startswith("cannot accept connections on 127.0.0.1:")
    assert "Too many open files (EMFILE); trying again every 0.05 s" in lines[0]
    still = lines[1:-1]
    assert 1 <= len(still) <= 3
    assert all(line.startswith("still cannot accept") for line in still)
    assert all("accept() calls failed in the last" in line for line in still)
    assert lines[-1].startswith("accepting connections on 127.0.0.1:")
    assert lines[-1].endswith(f"and {failed} failed accept() calls")
