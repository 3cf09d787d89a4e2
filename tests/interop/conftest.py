"""Fixtures for interop tests: our servers and peer servers on free loopback ports.

Servers run as separate processes started from their command lines, exactly as
a user would start them, and are stopped after the test.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

STARTUP_TIMEOUT_S = 20.0


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


def stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err or ""


@pytest.fixture
def iotbench_coap_server() -> Iterator[int]:
    """`iotbench serve coap` on a free port (fast notifications); yields the port."""
    port = free_udp_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "iotbench.cli",
            "serve",
            "coap",
            "--port",
            str(port),
            "--object-size",
            "1000",
            "--observe-interval",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_udp_listener(port, proc, STARTUP_TIMEOUT_S)
    yield port
    err = stop(proc)
    assert "Traceback" not in err, err


@pytest.fixture
def libcoap_server(require_peer) -> Iterator[int]:
    """libcoap's example `coap-server` on a free port; yields the port."""
    exe = require_peer("coap-server-notls")
    port = free_udp_port()
    proc = subprocess.Popen(
        [exe, "-A", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_udp_listener(port, proc, STARTUP_TIMEOUT_S)
    yield port
    stop(proc)
