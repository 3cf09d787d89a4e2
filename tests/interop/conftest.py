"""Fixtures for interop tests: our servers and peer servers on free loopback ports.

Servers run as separate processes started from their command lines, exactly as
a user would start them, and are stopped after the test.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

STARTUP_TIMEOUT_S = 20.0
#: Daemons such as mosquitto install here, which is often not on a user's PATH.
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_udp_listener(port: int, proc: subprocess.Popen, timeout_s: float) -> None:
    """Wait until something is bound to UDP `port` on loopback (or the process died)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {out}")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return  # taken: the server is bound
        time.sleep(0.05)
    raise RuntimeError(f"nothing listened on UDP port {port} within {timeout_s} s")


#: Attempts to start a server before giving up; see `launch`.
LAUNCH_ATTEMPTS = 5


def launch(
    pick_port: Callable[[], int],
    argv_for: Callable[[int], list[str]],
    wait: Callable[[int, subprocess.Popen, float], None],
) -> tuple[int, subprocess.Popen]:
    """Start a server on a port picked free, retrying with another port when it lost
    the race for it: between our probe and the server's bind another process (often a
    client's ephemeral port in a parallel test) can take the port."""
    for attempt in range(LAUNCH_ATTEMPTS):
        port = pick_port()
        proc = subprocess.Popen(
            argv_for(port), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            wait(port, proc, STARTUP_TIMEOUT_S)
        except RuntimeError as error:
            if "in use" in str(error) and attempt + 1 < LAUNCH_ATTEMPTS:
                continue
            raise
        return port, proc
    raise AssertionError("unreachable")


def stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err or ""


def _serve_coap(object_size: int, *extra: str) -> Iterator[int]:
    port, proc = launch(
        free_udp_port,
        lambda port: [
            sys.executable,
            "-m",
            "iotbench.cli",
            "serve",
            "coap",
            "--port",
            str(port),
            "--object-size",
            str(object_size),
            "--observe-interval",
            "0.2",
            *extra,
        ],
        wait_for_udp_listener,
    )
    yield port
    err = stop(proc)
    assert "Traceback" not in err, err


@pytest.fixture
def iotbench_coap_server() -> Iterator[int]:
    """`iotbench serve coap` on a free port (fast notifications); yields the port."""
    yield from _serve_coap(1000)


#: The object of the block-wise tests: five blocks of 1,024 bytes at the server's size.
BIG_OBJECT_BYTES = 5000


@pytest.fixture
def iotbench_coap_big_server() -> Iterator[int]:
    """`iotbench serve coap` with a 5,000-byte /o, which it serves in RFC 7959 blocks."""
    yield from _serve_coap(BIG_OBJECT_BYTES)


@pytest.fixture
def libcoap_server(require_peer) -> Iterator[int]:
    """libcoap's example `coap-server` on a free port; yields the port."""
    exe = require_peer("coap-server-notls")
    port, proc = launch(
        free_udp_port,
        lambda port: [exe, "-A", "127.0.0.1", "-p", str(port)],
        wait_for_udp_listener,
    )
    yield port
    stop(proc)


#: The pre-shared key of the DTLS interop tests (libcoap's -u and -k, our --psk-*).
PSK_IDENTITY, PSK_KEY = "iotbench-dev", "secretPSK"


@pytest.fixture
def iotbench_coaps_server() -> Iterator[int]:
    """`iotbench serve coap` over DTLS with the test PSK (5,000-byte /o); yields the port."""
    yield from _serve_coap(BIG_OBJECT_BYTES, "--psk-identity", PSK_IDENTITY, "--psk-key", PSK_KEY)


@pytest.fixture
def libcoap_dtls_server(require_peer) -> Iterator[int]:
    """libcoap's `coap-server-openssl` with the test PSK; yields its coaps port.

    It listens for coaps on the port after the one it is given (-p)."""
    exe = require_peer("coap-server-openssl")

    def wait(port: int, proc: subprocess.Popen, timeout_s: float) -> None:
        wait_for_udp_listener(port + 1, proc, timeout_s)

    port, proc = launch(
        free_udp_port,
        lambda port: [exe, "-A", "127.0.0.1", "-p", str(port), "-k", PSK_KEY],
        wait,
    )
    yield port + 1
    stop(proc)


# ---- MQTT ------------------------------------------------------------------------------


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_tcp_listener(port: int, proc: subprocess.Popen, timeout_s: float) -> None:
    """Wait until a TCP connection to loopback `port` succeeds (or the process died)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {out}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listened on TCP port {port} within {timeout_s} s")


def find_daemon(name: str, require_peer: Callable[[str], str]) -> str:
    """Path of a daemon executable: PATH first, then the sbin directories; otherwise
    `require_peer` decides (skip locally, fail under IOTBENCH_REQUIRE_PEERS=1)."""
    found = shutil.which(name) or shutil.which(name, path=":".join(SBIN_DIRS))
    return found or require_peer(name)


@pytest.fixture
def iotbench_mqtt_server() -> Iterator[int]:
    """`iotbench serve mqtt` on a free port; yields the port."""
    port, proc = launch(
        free_tcp_port,
        lambda port: [sys.executable, "-m", "iotbench.cli", "serve", "mqtt", "--port", str(port)],
        wait_for_tcp_listener,
    )
    yield port
    err = stop(proc)
    assert "Traceback" not in err, err


@pytest.fixture
def mosquitto_broker(require_peer, tmp_path: Path) -> Iterator[int]:
    """Eclipse mosquitto on a free loopback port with a config of our own; yields the port."""
    exe = find_daemon("mosquitto", require_peer)
    config = tmp_path / "mosquitto.conf"

    def argv_for(port: int) -> list[str]:
        config.write_text(
            f"listener {port} 127.0.0.1\n"
            "allow_anonymous true\n"
            "persistence false\n"
            "log_dest stderr\n"
            "log_type error\n"
            "log_type warning\n"
        )
        return [exe, "-c", str(config)]

    port, proc = launch(free_tcp_port, argv_for, wait_for_tcp_listener)
    yield port
    stop(proc)


# ---- NDN -------------------------------------------------------------------------------


@dataclass
class NdnServer:
    port: int
    proc: subprocess.Popen
    #: The startup lines on stderr, through the signature (and, for ECDSA, the public key).
    banner: list[str]
    stderr: str | None = None

    def stop(self) -> str:
        """Stop the server (once); the rest of its stderr, with its closing summary."""
        if self.stderr is None:
            self.stderr = stop(self.proc)
        return self.stderr


def free_port_for_tcp_and_udp() -> int:
    """A loopback port number free for both TCP and UDP (NDN serves both on one port)."""
    while True:
        port = free_tcp_port()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port


@pytest.fixture
def iotbench_ndn_server() -> Iterator[Callable[..., NdnServer]]:
    """`iotbench_ndn_server(*ARGS)` starts `iotbench serve ndn ARGS` on a free port;
    every server started is stopped after the test, which fails on a traceback."""
    started: list[NdnServer] = []

    def start(*args: str) -> NdnServer:
        port, proc = launch(
            free_port_for_tcp_and_udp,
            lambda port: [
                sys.executable,
                "-m",
                "iotbench.cli",
                "serve",
                "ndn",
                "--port",
                str(port),
                *args,
            ],
            wait_for_tcp_listener,
        )
        started.append(NdnServer(port, proc, []))
        while line := proc.stderr.readline():  # printed once both sockets are bound
            started[-1].banner.append(line.rstrip("\n"))
            if line.startswith("  signed with"):
                if "ECDSA" in line:
                    started[-1].banner.append(proc.stderr.readline().rstrip("\n"))
                break
        return started[-1]

    yield start
    for server in started:
        err = server.stop()
        assert "Traceback" not in err, err
