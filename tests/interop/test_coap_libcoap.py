"""libcoap's coap-client and coap-server (C implementations we did not write)
against our CoAP stack on real sockets."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.interop

VOLTAGE = re.compile(r"^\d{1,3}\.\d V$")
TIMEOUT_S = 60


def coap_client(require_peer, *args: str) -> str:
    exe = require_peer("coap-client-notls")
    done = subprocess.run(
        [exe, "-B", "20", *args], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def iotbench_client(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "iotbench", "client", "coap", *args, "--timeout", "20"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


# ---- libcoap coap-client -> iotbench serve coap --------------------------------------


def test_libcoap_client_block2_fetch_of_5000_bytes(require_peer, iotbench_coap_big_server):
    uri = f"coap://127.0.0.1:{iotbench_coap_big_server}/o"
    whole = coap_client(require_peer, "-m", "get", uri).rstrip("\n")  # our 1,024-byte blocks
    small = coap_client(require_peer, "-m", "get", "-b", "64", uri).rstrip("\n")  # its 64
    assert len(whole) == len(small) == 5000 and whole == small


def test_libcoap_client_block1_upload_of_5000_bytes(
    require_peer, iotbench_coap_big_server, tmp_path
):
    uri = f"coap://127.0.0.1:{iotbench_coap_big_server}/store"
    body = "".join(chr(ord("a") + i % 26) for i in range(5000))
    (tmp_path / "body.txt").write_text(body)
    coap_client(require_peer, "-m", "put", "-b", "128", "-f", str(tmp_path / "body.txt"), uri)
    assert coap_client(require_peer, "-m", "get", uri).rstrip("\n") == body


def test_our_client_block_options_against_our_server(iotbench_coap_big_server):
    uri = f"coap://127.0.0.1:{iotbench_coap_big_server}"
    got = iotbench_client("GET", f"{uri}/o", "--block-size", "64")
    assert got.returncode == 0 and len(got.stdout.rstrip("\n")) == 5000
    assert "79 transmission(s)" in got.stderr  # one per 64-byte block
    body = "x" * 3000
    put = iotbench_client("PUT", f"{uri}/store", "--payload", body, "--block-size", "256")
    assert put.returncode == 0 and "12 transmission(s)" in put.stderr
    assert iotbench_client("GET", f"{uri}/store").stdout.rstrip("\n") == body


def test_libcoap_client_gets_voltage(require_peer, iotbench_coap_server):
    out = coap_client(require_peer, "-m", "get", f"coap://127.0.0.1:{iotbench_coap_server}/voltage")
    assert VOLTAGE.match(out.strip()), out


def test_libcoap_client_non_request(require_peer, iotbench_coap_server):
    uri = f"coap://127.0.0.1:{iotbench_coap_server}/json"
    out = coap_client(require_peer, "-m", "get", "-N", uri)
    assert re.match(r'^\{"id":"0x[0-9a-f]{10}","val":\d+\}$', out.strip()), out


def test_libcoap_client_put_then_get(require_peer, iotbench_coap_server):
    uri = f"coap://127.0.0.1:{iotbench_coap_server}/store"
    coap_client(require_peer, "-m", "put", "-e", "from libcoap", uri)
    assert coap_client(require_peer, "-m", "get", uri).strip() == "from libcoap"


def test_libcoap_client_large_object(require_peer, iotbench_coap_server):
    out = coap_client(require_peer, "-m", "get", f"coap://127.0.0.1:{iotbench_coap_server}/o")
    assert len(out.rstrip("\n")) == 1000


def test_libcoap_client_well_known_core(require_peer, iotbench_coap_server):
    uri = f"coap://127.0.0.1:{iotbench_coap_server}/.well-known/core"
    out = coap_client(require_peer, "-m", "get", uri)
    assert '</voltage>;ct=0;rt="voltage";obs' in out
    assert "</store>" in out


def test_libcoap_client_observes(require_peer, iotbench_coap_server):
    # -s 2: observe for 2 s; the server notifies every 0.2 s.
    uri = f"coap://127.0.0.1:{iotbench_coap_server}/voltage"
    out = coap_client(require_peer, "-m", "get", "-s", "2", uri)
    readings = re.findall(r"\d{1,3}\.\d V", out)
    assert len(readings) >= 4, out


# ---- iotbench client coap -> libcoap coap-server ---------------------------------------


def test_our_client_gets_libcoap_index(libcoap_server):
    done = iotbench_client("GET", f"coap://127.0.0.1:{libcoap_server}/")
    assert done.returncode == 0, done.stderr
    assert "libcoap" in done.stdout
    assert done.stderr.startswith("2.05 Content")


def test_our_client_non_request_to_libcoap(libcoap_server):
    done = iotbench_client("GET", f"coap://127.0.0.1:{libcoap_server}/time", "--non")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_our_client_puts_and_gets_libcoap_example_data(libcoap_server):
    uri = f"coap://127.0.0.1:{libcoap_server}/example_data"
    put = iotbench_client("PUT", uri, "--payload", "from iotbench", "--content-format", "0")
    assert put.returncode == 0, put.stderr
    assert put.stderr.startswith(("2.01 Created", "2.04 Changed"))
    get = iotbench_client("GET", uri)
    assert get.returncode == 0 and get.stdout.strip() == "from iotbench"


def test_our_client_observes_libcoap_time(libcoap_server):
    # libcoap's /time notifies once a second.
    done = iotbench_client("GET", f"coap://127.0.0.1:{libcoap_server}/time", "--observe", "2")
    assert done.returncode == 0, done.stderr
    # Each reading once (the registration's response and two notifications), then
    # one summary that counts them as shown.
    assert done.stderr.splitlines()[-1].startswith(
        "3 readings: the registration's response and 2 notification(s)"
    )
    observes = [int(n) for n in re.findall(r"observe (\d+)", done.stderr)]
    assert len(observes) == 3 and observes == sorted(observes)
    assert len(done.stdout.splitlines()) == 3


def test_our_client_reads_libcoap_well_known_core(libcoap_server):
    done = iotbench_client("GET", f"coap://127.0.0.1:{libcoap_server}/.well-known/core")
    assert done.returncode == 0, done.stderr
    assert "</time>" in done.stdout and "content-format 40" in done.stderr


def test_our_client_gets_404_from_libcoap(libcoap_server):
    done = iotbench_client("GET", f"coap://127.0.0.1:{libcoap_server}/no-such-resource")
    assert done.returncode == 1
    assert done.stderr.startswith("4.04 Not Found")
