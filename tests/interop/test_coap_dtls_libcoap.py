"""CoAP over DTLS 1.2 with a pre-shared key, against libcoap's OpenSSL and GnuTLS builds.

libcoap's coap-client-openssl and coap-client-gnutls against `iotbench serve
coap --psk-identity --psk-key`, and our client against coap-server-openssl:
GET, PUT, and block-wise transfers through the DTLS session, and what a
wrong key does.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import BIG_OBJECT_BYTES, PSK_IDENTITY, PSK_KEY

pytestmark = pytest.mark.interop

TIMEOUT_S = 60
PSK = ("-u", PSK_IDENTITY, "-k", PSK_KEY)
OUR_PSK = ("--psk-identity", PSK_IDENTITY, "--psk-key", PSK_KEY)


def libcoap(require_peer, build: str, *args: str) -> subprocess.CompletedProcess:
    exe = require_peer(f"coap-client-{build}")
    return subprocess.run(
        [exe, "-B", "20", *args], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def iotbench_client(*args: str, timeout_s: int = 20) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "iotbench", "client", "coap", *args, "--timeout", str(timeout_s)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


# ---- libcoap clients -> iotbench serve coap over DTLS ------------------------------------


@pytest.mark.parametrize("build", ["openssl", "gnutls"])
def test_libcoap_client_gets_and_puts_over_dtls(require_peer, iotbench_coaps_server, build):
    base = f"coaps://127.0.0.1:{iotbench_coaps_server}"
    got = libcoap(require_peer, build, "-m", "get", *PSK, f"{base}/json")
    assert got.returncode == 0 and got.stdout.startswith('{"id":'), got.stderr
    put = libcoap(require_peer, build, "-m", "put", *PSK, "-e", f"via {build}", f"{base}/store")
    assert put.returncode == 0, put.stderr
    back = libcoap(require_peer, build, "-m", "get", *PSK, f"{base}/store")
    assert back.stdout.strip() == f"via {build}"


@pytest.mark.parametrize("build", ["openssl", "gnutls"])
def test_libcoap_client_block2_through_dtls(require_peer, iotbench_coaps_server, build):
    uri = f"coaps://127.0.0.1:{iotbench_coaps_server}/o"
    got = libcoap(require_peer, build, "-m", "get", "-b", "64", *PSK, uri)
    assert got.returncode == 0, got.stderr
    assert len(got.stdout.rstrip("\n")) == BIG_OBJECT_BYTES


def test_libcoap_client_block1_upload_through_dtls(require_peer, iotbench_coaps_server, tmp_path):
    uri = f"coaps://127.0.0.1:{iotbench_coaps_server}/store"
    body = "".join(chr(ord("a") + i % 26) for i in range(3000))
    (tmp_path / "body.txt").write_text(body)
    put = libcoap(
        require_peer,
        "gnutls",
        "-m",
        "put",
        "-b",
        "128",
        *PSK,
        "-f",
        str(tmp_path / "body.txt"),
        uri,
    )
    assert put.returncode == 0, put.stderr
    assert libcoap(require_peer, "openssl", "-m", "get", *PSK, uri).stdout.rstrip("\n") == body


def test_a_libcoap_client_with_a_wrong_key_gets_nothing(require_peer, iotbench_coaps_server):
    # Our server ends the handshake with a fatal bad_record_mac (RFC 6347 4.1.2.7).
    uri = f"coaps://127.0.0.1:{iotbench_coaps_server}/json"
    got = libcoap(require_peer, "openssl", "-m", "get", "-u", PSK_IDENTITY, "-k", "wrong", uri)
    assert '"id"' not in got.stdout
    assert "bad record mac" in (got.stdout + got.stderr).lower()


# ---- iotbench client -> libcoap's coap-server-openssl ------------------------------------


def test_our_client_gets_from_libcoap_over_dtls(libcoap_dtls_server):
    got = iotbench_client("GET", f"coaps://127.0.0.1:{libcoap_dtls_server}/time", *OUR_PSK)
    assert got.returncode == 0, got.stderr
    assert "2.05 Content" in got.stderr and got.stdout.strip()


def test_our_client_puts_block_wise_to_libcoap_over_dtls(libcoap_dtls_server):
    # libcoap's example server keeps PUTs to /example_data.
    uri = f"coaps://127.0.0.1:{libcoap_dtls_server}/example_data"
    body = "y" * 300
    put = iotbench_client("PUT", uri, "--payload", body, "--block-size", "64", *OUR_PSK)
    assert put.returncode == 0 and "2.01 Created" in put.stderr, put.stderr
    got = iotbench_client("GET", uri, "--block-size", "64", *OUR_PSK)
    assert got.stdout.rstrip("\n") == body


def test_our_client_with_a_wrong_key_gets_no_response(libcoap_dtls_server):
    # OpenSSL discards the Finished it cannot read (RFC 6347 4.1.2.7), so our
    # client hears nothing more and gives up: no response, exit status 1.
    uri = f"coaps://127.0.0.1:{libcoap_dtls_server}/time"
    got = iotbench_client("GET", uri, "--psk-identity", "x", "--psk-key", "bad", timeout_s=4)
    assert got.returncode == 1 and "no response" in got.stderr, got.stderr
