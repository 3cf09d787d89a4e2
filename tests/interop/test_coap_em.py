"""The Entity Manager on real sockets (`iotbench serve coap-em`) driven by clients we
did not write, aiocoap and libcoap's coap-client, with three `iotbench serve coap`
members: create a unicast entity, query it (lst, eo=avg, enr=1), update it, delete
it; and the errors a client can provoke."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from aiocoap import DELETE, GET, POST, PUT, Context, Message
from aiocoap.numbers.codes import Code as AioCode

from conftest import free_udp_port, launch, stop, wait_for_udp_listener

pytestmark = pytest.mark.interop

READING = r"\d{1,3}\.\d V"
MEMBER_TIMEOUT_S = 3


@dataclass
class EmSetup:
    port: int
    members: list[str]  # member resource URIs
    silent: str  # a member URI whose socket never answers


def _serve(*args: str) -> tuple[subprocess.Popen, int]:
    # `launch` tries another port if another process took this one first.
    port, proc = launch(
        free_udp_port,
        lambda port: [sys.executable, "-m", "iotbench.cli", "serve", *args, "--port", str(port)],
        wait_for_udp_listener,
    )
    return proc, port


@pytest.fixture
def em_setup() -> Iterator[EmSetup]:
    procs = []
    try:
        members = []
        for _ in range(3):
            proc, port = _serve("coap")
            procs.append(proc)
            members.append(f"coap://127.0.0.1:{port}/voltage")
        proc, port = _serve("coap-em", "--member-timeout", str(MEMBER_TIMEOUT_S))
        procs.append(proc)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
            silent.bind(("127.0.0.1", 0))  # bound, never read: no ICMP, no answer
            yield EmSetup(port, members, f"coap://127.0.0.1:{silent.getsockname()[1]}/voltage")
    finally:
        errors = [stop(p) for p in procs]
    for err in errors:
        assert "Traceback" not in err, err


def profile(name: str, members: list[str], **fields) -> bytes:
    return json.dumps({"name": name, "er": members, **fields}).encode()


# ---- aiocoap ------------------------------------------------------------------------------


async def _aiocoap_session(setup: EmSetup) -> dict:
    base = f"coap://127.0.0.1:{setup.port}"
    ctx = await Context.create_client_context()
    out = {}

    async def ask(code, path, payload=b"", ct=None):
        msg = Message(code=code, uri=base + path, payload=payload)
        if ct is not None:
            msg.opt.content_format = ct
        return await asyncio.wait_for(ctx.request(msg).response, 30)

    try:
        out["create"] = await ask(POST, "/e", profile("volts", setup.members), 50)
        out["lst"] = await ask(GET, "/e/volts")
        out["avg"] = await ask(GET, "/e/volts?eo=avg")
        out["enr1"] = await ask(GET, "/e/volts?enr=1")
        out["update"] = await ask(PUT, "/e/volts", b'{"eo": "max", "delay": 50}', 50)
        out["max"] = await ask(GET, "/e/volts")
        out["profile"] = await ask(GET, "/e/volts/profile")
        out["delete"] = await ask(DELETE, "/e/volts")
        out["gone"] = await ask(GET, "/e/volts")
        out["bad"] = await ask(POST, "/e", b'{"er": "coap://x/y"}', 50)
        out["not-json"] = await ask(POST, "/e", b"er=coap://x/y", 0)
        out["missing"] = await ask(
            POST, "/e", profile("partial", [setup.members[0], setup.silent]), 50
        )
        out["partial"] = await ask(GET, "/e/partial")
        out["after"] = await ask(GET, "/e")  # the EM still serves
    finally:
        await ctx.shutdown()
    return out


def test_aiocoap_drives_a_unicast_entity(em_setup):
    r = asyncio.run(_aiocoap_session(em_setup))
    m = em_setup.members
    assert r["create"].code == AioCode.CREATED
    assert list(r["create"].opt.location_path) == ["e", "volts"]
    assert json.loads(r["create"].payload)["er"] == m
    lines = r["lst"].payload.decode().splitlines()
    assert r["lst"].code == AioCode.CONTENT and len(lines) == 3
    for uri, line in zip(m, lines, strict=True):
        assert re.fullmatch(re.escape(uri) + " " + READING, line), line
    assert re.fullmatch(r"\d{1,3}(\.\d+)? V\n", r["avg"].payload.decode())
    (one,) = r["enr1"].payload.decode().splitlines()
    assert one.split(" ")[0] in m
    assert r["update"].code == AioCode.CHANGED
    assert json.loads(r["update"].payload)["eo"] == ["max"]
    assert re.fullmatch(r"\d{1,3}(\.\d+)? V\n", r["max"].payload.decode())  # 6.0 V is "6 V"
    assert json.loads(r["profile"].payload)["delay"] == 50
    assert r["delete"].code == AioCode.DELETED
    assert r["gone"].code == AioCode.NOT_FOUND
    assert r["bad"].code == AioCode.BAD_REQUEST
    assert "er must be a non-empty list" in r["bad"].payload.decode()
    assert r["not-json"].code == AioCode.UNSUPPORTED_CONTENT_FORMAT
    assert r["missing"].code == AioCode.CREATED
    partial = r["partial"].payload.decode().splitlines()
    assert r["partial"].code == AioCode.CONTENT
    assert re.fullmatch(re.escape(m[0]) + " " + READING, partial[0])
    assert partial[1] == f"{em_setup.silent} error: no response"
    assert r["after"].code == AioCode.CONTENT and b"</e/partial>" in r["after"].payload


# ---- libcoap's coap-client ----------------------------------------------------------------


def coap_client(require_peer, *args: str, local_port: int | None = None) -> str:
    """One coap-client run; `local_port`: the port it sends from, so that runs one
    after another are one client (an entity belongs to its creator's address and
    port: docs/coap-em.md, "Safeguards")."""
    exe = require_peer("coap-client-notls")
    bind = ["-p", str(local_port)] if local_port is not None else []
    done = subprocess.run(
        [exe, "-B", "30", *bind, *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_libcoap_drives_a_unicast_entity(em_setup, require_peer):
    base = f"coap://127.0.0.1:{em_setup.port}"
    m = em_setup.members
    body = profile("v", m).decode()
    me = free_udp_port()
    out = coap_client(
        require_peer, "-m", "post", "-t", "50", "-e", body, f"{base}/e", local_port=me
    )
    assert json.loads(out.strip().splitlines()[-1])["name"] == "v"
    out = coap_client(require_peer, "-m", "get", f"{base}/e/v")
    assert len([line for line in out.splitlines() if " V" in line]) == 3
    out = coap_client(require_peer, "-m", "get", f"{base}/e/v?eo=avg")
    assert re.search(r"^\d{1,3}(\.\d+)? V$", out, re.M), out
    out = coap_client(require_peer, "-m", "get", f"{base}/e/v?enr=1")
    assert len([line for line in out.splitlines() if " V" in line]) == 1
    change = ("-m", "put", "-t", "50", "-e", '{"eo": "min"}', f"{base}/e/v")
    out = coap_client(require_peer, *change)  # another client: not the entity's owner
    assert "4.03" in out and "belongs to the client that created it" in out
    out = coap_client(require_peer, *change, local_port=me)
    assert '"eo":["min"]' in out
    out = coap_client(require_peer, "-m", "get", f"{base}/e/v")
    assert re.search(r"^\d{1,3}(\.\d+)? V$", out, re.M), out
    coap_client(require_peer, "-m", "delete", f"{base}/e/v", local_port=me)
    out = coap_client(require_peer, "-m", "get", f"{base}/e/v")
    assert "4.04" in out
    out = coap_client(
        require_peer, "-m", "post", "-t", "50", "-e", '{"er": [], "x": 1}', f"{base}/e"
    )
    assert "4.00" in out and "unknown field 'x'" in out


def test_libcoap_creates_and_queries_a_64_member_entity_in_blocks(em_setup, require_peer):
    """A 64-member profile (about 2.6 kB) goes up in Block1 blocks; the EM's echo of it
    and the 64-line `lst` answer are larger than its 1,024-byte blocks, so they come
    back in Block2 blocks (RFC 7959 2.5, 3.2), which coap-client reassembles. (A
    single datagram of that size was discarded by coap-client as too big.)"""
    base = f"coap://127.0.0.1:{em_setup.port}"
    members = [f"{em_setup.members[k % 3]}?n={k}" for k in range(64)]
    body = profile("big", members).decode()
    assert len(body) > 2048
    out = coap_client(require_peer, "-m", "post", "-b", "1024", "-e", body, f"{base}/e")
    echoed = json.loads(out.strip().splitlines()[-1])
    assert echoed["name"] == "big" and len(echoed["er"]) == 64
    out = coap_client(require_peer, "-m", "get", f"{base}/e/big")
    assert len([line for line in out.splitlines() if re.search(READING, line)]) == 64


def test_serve_coap_em_asks_only_allowed_members(require_peer):
    """By default the EM may ask only this host's members: a profile naming another
    address is refused with 4.03, so that it cannot be made to reflect requests
    elsewhere; --allow-members opens a network."""
    outside = profile("x", ["coap://192.0.2.7/s/t"]).decode()
    procs = []
    try:
        proc, port = _serve("coap-em")
        procs.append(proc)
        out = coap_client(
            require_peer, "-m", "post", "-t", "50", "-e", outside, f"coap://127.0.0.1:{port}/e"
        )
        assert "4.03" in out and "--allow-members" in out
        proc, port = _serve("coap-em", "--allow-members", "192.0.2.0/24")
        procs.append(proc)
        out = coap_client(
            require_peer, "-m", "post", "-t", "50", "-e", outside, f"coap://127.0.0.1:{port}/e"
        )
        assert json.loads(out.strip().splitlines()[-1])["name"] == "x"
    finally:
        errors = [stop(p) for p in procs]
    for err in errors:
        assert "Traceback" not in err, err


def test_libcoap_creates_entities_over_dtls_and_plain_coap_gets_nothing(require_peer):
    """serve coap-em with a PSK: libcoap's OpenSSL client creates and queries an
    entity over DTLS while the EM asks its member in the clear; a plain CoAP
    request to the same port is never answered."""
    openssl = require_peer("coap-client-openssl")
    procs = []
    try:
        proc, member = _serve("coap")
        procs.append(proc)
        proc, port = _serve(
            "coap-em", "--psk-identity", "admin", "--psk-key", "k3y", "--allow-creators", "admin"
        )
        procs.append(proc)
        base = f"coaps://127.0.0.1:{port}"
        psk = ["-u", "admin", "-k", "k3y", "-B", "30"]
        body = profile("t", [f"coap://127.0.0.1:{member}/voltage"]).decode()
        created = subprocess.run(
            [openssl, *psk, "-m", "post", "-t", "50", "-e", body, f"{base}/e"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert json.loads(created.stdout.strip().splitlines()[-1])["name"] == "t", created
        got = subprocess.run(
            [openssl, *psk, "-m", "get", f"{base}/e/t"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert re.search(READING, got.stdout), got
        plain = subprocess.run(
            [require_peer("coap-client-notls"), "-B", "3", "-m", "get", f"coap://127.0.0.1:{port}/e"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert "</e/t>" not in plain.stdout
    finally:
        errors = [stop(p) for p in procs]
    for err in errors:
        assert "Traceback" not in err, err
