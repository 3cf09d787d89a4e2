"""The HTTP/1.1 server on real sockets, exercised with Python's http.client."""

from __future__ import annotations

import http.client
import re
import socket
import subprocess
import sys
import time

import pytest


@pytest.fixture
def server_port():
    """`iotbench serve http` in its own process, as a user starts it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "iotbench",
            "serve",
            "http",
            "--port",
            str(port),
            "--object-size",
            "1000",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
    yield port
    proc.terminate()
    _, err = proc.communicate(timeout=10)
    assert "Traceback" not in err
    assert "HTTP/1.1 server listening on http://127.0.0.1:" in err


def get(port, path, method="GET", conn=None):
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path)
    r = c.getresponse()
    return r.status, dict(r.getheaders()), r.read()


def test_sensor_readings(server_port):
    status, headers, body = get(server_port, "/voltage")
    assert status == 200 and re.fullmatch(rb"\d{1,3}\.\d V", body)
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    status, headers, body = get(server_port, "/json")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert re.fullmatch(rb'\{"id":"0x[0-9a-f]{10}","val":\d+\}', body)
    status, headers, body = get(server_port, "/o")
    assert status == 200 and len(body) == 1000 and headers["Content-Length"] == "1000"


def test_keep_alive_serves_several_requests_on_one_connection(server_port):
    conn = http.client.HTTPConnection("127.0.0.1", server_port, timeout=10)
    for _ in range(3):
        status, _, _ = get(server_port, "/voltage", conn=conn)
        assert status == 200
    conn.close()


def test_errors(server_port):
    assert get(server_port, "/nothing")[0] == 404
    status, headers, _ = get(server_port, "/voltage", method="POST")
    assert status == 405 and headers["Allow"] == "GET, HEAD"
    status, headers, body = get(server_port, "/o", method="HEAD")
    assert status == 200 and body == b"" and headers["Content-Length"] == "1000"


def test_garbage_gets_400_and_the_server_keeps_serving(server_port):
    with socket.create_connection(("127.0.0.1", server_port), timeout=10) as s:
        s.sendall(b"\x00\x01 not http at all\r\n\r\n")
        reply = s.recv(1000)
    assert reply.startswith(b"HTTP/1.1 400 ")
    for _ in range(50):  # a burst of connections that send nothing and go away
        socket.create_connection(("127.0.0.1", server_port), timeout=10).close()
    assert get(server_port, "/voltage")[0] == 200


def test_pipelined_requests_are_answered_in_order(server_port):
    with socket.create_connection(("127.0.0.1", server_port), timeout=10) as s:
        s.sendall(b"GET /o HTTP/1.1\r\nHost: x\r\n\r\nGET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while data.count(b"HTTP/1.1 ") < 2 or not data.endswith(b"not found\n"):
            chunk = s.recv(4096)
            assert chunk
            data += chunk
    first, second = data.index(b"HTTP/1.1 200"), data.index(b"HTTP/1.1 404")
    assert first < second
