"""OSCORE (RFC 8613) with aiocoap's implementation, both ways: aiocoap's client
against `iotbench serve coap --oscore`, and `iotbench client coap --oscore`
against an aiocoap server behind aiocoap's OscoreSiteWrapper. GET, PUT,
Observe, block-wise both ways, replay-window recovery with Echo after a
restart (Appendix B.1.2), and the unprotected errors of 8.2.

Both ends describe one context in aiocoap's keys: ours as a file, aiocoap's as
the settings.json of its context directory.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest
from aiocoap import GET, PUT, Context, Message
from aiocoap.numbers.codes import Code as AioCode

from conftest import BIG_OBJECT_BYTES, free_udp_port, launch, stop, wait_for_udp_listener
from iotbench.real.coap import coap_request
from iotbench.real.coap_oscore import open_context, oscore_client

pytestmark = pytest.mark.interop

SECRET = "correct horse battery staple"
SALT = "9e7ca92223786340"
CLIENT_ID, SERVER_ID = "01", "02"
VOLTAGE = re.compile(rb"^\d{1,3}\.\d V$")
AIOCOAP_SERVER = Path(__file__).with_name("aiocoap_oscore_server.py")
BIG = bytes(range(250)) * 20  # aiocoap_oscore_server.py's /big


@pytest.fixture(autouse=True)
def aiocoap_oscore(require_module):
    """aiocoap's OSCORE needs its oscore extra (cbor2 and others)."""
    require_module("aiocoap.oscore")


def _settings(sender: str, recipient: str, secret: str) -> dict:
    return {
        "sender-id_hex": sender,
        "recipient-id_hex": recipient,
        "secret_ascii": secret,
        "salt_hex": SALT,
    }


def our_context(path: Path, sender: str, recipient: str, secret: str = SECRET) -> Path:
    path.write_text(json.dumps(_settings(sender, recipient, secret)))
    return path


def aiocoap_context(directory: Path, sender: str, recipient: str) -> Path:
    directory.mkdir()
    (directory / "settings.json").write_text(json.dumps(_settings(sender, recipient, SECRET)))
    return directory


# ---- aiocoap's client, our server ------------------------------------------------------


class OurServer:
    """`iotbench serve coap --oscore` (restartable with the same context)."""

    def __init__(self, context: Path) -> None:
        self.context = context
        self.port = free_udp_port()
        self.proc: subprocess.Popen | None = None
        self.banner = ""

    def start(self) -> None:
        def argv(port: int) -> list[str]:
            return [
                *(sys.executable, "-m", "iotbench.cli", "serve", "coap", "--port", str(port)),
                *("--oscore", str(self.context), "--observe-interval", "0.2"),
                *("--object-size", str(BIG_OBJECT_BYTES)),
            ]

        self.port, self.proc = launch(lambda: self.port, argv, wait_for_udp_listener)
        # The listening line, then one line per context (printed once bound).
        self.banner = self.proc.stderr.readline() + self.proc.stderr.readline()

    def stop(self) -> None:
        if self.proc is not None:
            err = stop(self.proc)
            self.proc = None
            assert "Traceback" not in err, err


@pytest.fixture
def our_server(tmp_path):
    server = OurServer(our_context(tmp_path / "server.json", SERVER_ID, CLIENT_ID))
    server.start()
    yield server
    server.stop()


async def _aiocoap(port: int, context_dir: Path, body):
    ctx = await Context.create_client_context()
    ctx.client_credentials.load_from_dict(
        {f"coap://127.0.0.1:{port}/*": {"oscore": {"basedir": f"{context_dir}/"}}}
    )
    try:
        return await asyncio.wait_for(body(ctx, f"coap://127.0.0.1:{port}"), 30)
    finally:
        await ctx.shutdown()


def test_aiocoap_gets_puts_and_observes(our_server, tmp_path):
    client = aiocoap_context(tmp_path / "aiocoap", CLIENT_ID, SERVER_ID)

    async def body(ctx, base):
        voltage = await ctx.request(Message(code=GET, uri=f"{base}/voltage")).response
        put = await ctx.request(Message(code=PUT, uri=f"{base}/store", payload=b"x1")).response
        got = await ctx.request(Message(code=GET, uri=f"{base}/store")).response
        request = ctx.request(Message(code=GET, uri=f"{base}/voltage", observe=0))
        first = await request.response
        seen = []
        async for notification in request.observation:
            seen.append(notification)
            if len(seen) == 3:
                request.observation.cancel()
                break
        return voltage, put, got, first, seen

    voltage, put, got, first, seen = asyncio.run(_aiocoap(our_server.port, client, body))
    assert voltage.code == AioCode.CONTENT and VOLTAGE.match(voltage.payload)
    assert voltage.opt.content_format == 0
    assert put.code == AioCode.CHANGED and got.payload == b"x1"
    assert first.code == AioCode.CONTENT and first.opt.observe is not None
    numbers = [first.opt.observe] + [n.opt.observe for n in seen]
    assert numbers == sorted(numbers) and len(set(numbers)) == 4
    assert all(VOLTAGE.match(n.payload) for n in seen)


def test_aiocoap_fetches_and_uploads_in_blocks(our_server, tmp_path):
    client = aiocoap_context(tmp_path / "aiocoap", CLIENT_ID, SERVER_ID)

    async def body(ctx, base):
        whole = await ctx.request(Message(code=GET, uri=f"{base}/o")).response
        put = await ctx.request(Message(code=PUT, uri=f"{base}/store", payload=BIG)).response
        got = await ctx.request(Message(code=GET, uri=f"{base}/store")).response
        return whole, put, got

    whole, put, got = asyncio.run(_aiocoap(our_server.port, client, body))
    assert whole.code == AioCode.CONTENT and len(whole.payload) == BIG_OBJECT_BYTES
    assert put.code == AioCode.CHANGED and got.payload == BIG


def test_aiocoap_answers_our_echo_after_our_server_restarts(our_server, tmp_path, caplog):
    client = aiocoap_context(tmp_path / "aiocoap", CLIENT_ID, SERVER_ID)

    async def body(ctx, base):
        before = await ctx.request(Message(code=GET, uri=f"{base}/voltage")).response
        our_server.stop()
        our_server.start()  # the same context, used before: its replay window is unknown
        with caplog.at_level(logging.INFO):
            after = await ctx.request(Message(code=GET, uri=f"{base}/voltage")).response
        return before, after

    before, after = asyncio.run(_aiocoap(our_server.port, client, body))
    assert "recovered with Echo" in our_server.banner
    assert before.code == after.code == AioCode.CONTENT
    assert "B.1.2 recovery" in caplog.text  # aiocoap answered the 4.01 with Echo


def test_aiocoap_without_oscore_or_with_a_wrong_key_is_refused(our_server, tmp_path):
    import aiocoap.oscore

    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "settings.json").write_text(json.dumps(_settings(CLIENT_ID, SERVER_ID, "other")))

    async def plain():
        ctx = await Context.create_client_context()
        try:
            uri = f"coap://127.0.0.1:{our_server.port}/voltage"
            return await asyncio.wait_for(ctx.request(Message(code=GET, uri=uri)).response, 30)
        finally:
            await ctx.shutdown()

    refused = asyncio.run(plain())
    assert refused.code == AioCode.UNAUTHORIZED and refused.payload == b"OSCORE required"

    async def body(ctx, base):
        with pytest.raises(aiocoap.oscore.NotAProtectedMessage) as error:
            await ctx.request(Message(code=GET, uri=f"{base}/voltage")).response
        return error.value.plain_message

    answer = asyncio.run(_aiocoap(our_server.port, wrong, body))
    assert answer.code == AioCode.BAD_REQUEST and answer.payload == b"Decryption failed"
    assert answer.opt.max_age == 0  # 8.2: no proxy should cache it


# ---- our client, aiocoap's server ------------------------------------------------------


@pytest.fixture
def aiocoap_server(tmp_path):
    """aiocoap_oscore_server.py on a free port; yields (port, its context directory)."""
    directory = aiocoap_context(tmp_path / "aiocoap", SERVER_ID, CLIENT_ID)
    started = []

    def start(window_lost: bool = False) -> int:
        if window_lost:  # as aiocoap leaves it after a crash: Echo recovery (B.1.2)
            (directory / "sequence.json").write_text('{"next-to-send": 50, "received": "unknown"}')
        port, proc = launch(
            free_udp_port,
            lambda port: [sys.executable, str(AIOCOAP_SERVER), str(port), str(directory)],
            wait_for_udp_listener,
        )
        started.append(proc)
        return port

    yield start
    for proc in started:
        err = stop(proc)
        assert "Traceback" not in err, err


def our_client(port: int, context: Path, method: str, path: str, *args: str):
    return subprocess.run(
        [
            *(sys.executable, "-m", "iotbench.cli", "client", "coap", method),
            *(f"coap://127.0.0.1:{port}{path}", "--oscore", str(context), "--timeout", "20"),
            *args,
        ],
        capture_output=True,
        timeout=60,
    )


def test_our_client_gets_puts_and_observes(aiocoap_server, tmp_path):
    port = aiocoap_server()
    context = our_context(tmp_path / "client.json", CLIENT_ID, SERVER_ID)
    hello = our_client(port, context, "GET", "/hello")
    assert hello.returncode == 0, hello.stderr
    assert hello.stdout == b"hello from aiocoap\n" and b"2.05 Content" in hello.stderr
    put = our_client(port, context, "PUT", "/store", "--payload", "from iotbench")
    got = our_client(port, context, "GET", "/store")
    assert put.returncode == 0 and b"2.04 Changed" in put.stderr, put.stderr
    assert got.stdout == b"from iotbench\n"
    observed = our_client(port, context, "GET", "/counter", "--observe", "3")
    assert observed.returncode == 0, observed.stderr
    assert b"4 readings: the registration's response and 3 notification(s)" in observed.stderr
    counts = [int(line) for line in observed.stdout.split()]
    assert counts == sorted(counts) and len(set(counts)) == 4
    # The context's sequence numbers were kept across the four runs.
    state = json.loads((tmp_path / "client.sequence.json").read_text())
    assert state["next-to-send"] >= 5


def test_our_client_fetches_and_uploads_in_blocks(aiocoap_server, tmp_path):
    port = aiocoap_server()
    context = our_context(tmp_path / "client.json", CLIENT_ID, SERVER_ID)
    whole = our_client(port, context, "GET", "/big")
    small = our_client(port, context, "GET", "/big", "--block-size", "64")
    for result in (whole, small):
        assert result.returncode == 0, result.stderr
        assert f"2.05 Content, {len(BIG)} bytes".encode() in result.stderr
    assert b"79 transmission(s)" in small.stderr  # 5,000 bytes in 64-byte blocks
    put = our_client(port, context, "PUT", "/store", "--payload", "x" * 3000, "--block-size", "256")
    got = our_client(port, context, "GET", "/store")
    assert put.returncode == 0 and b"12 transmission(s)" in put.stderr, put.stderr
    assert got.stdout == b"x" * 3000 + b"\n"


def test_our_client_answers_aiocoaps_echo(aiocoap_server, tmp_path):
    port = aiocoap_server(window_lost=True)
    layers = []
    with open_context(our_context(tmp_path / "client.json", CLIENT_ID, SERVER_ID)) as ctx:

        def security(rng):
            layers.append(oscore_client(ctx)(rng))
            return layers[-1]

        result = asyncio.run(
            coap_request(
                f"coap://127.0.0.1:{port}/hello",
                timeout_s=20,
                security=security,
                secure_scheme="coap",
            )
        )
    assert result.ok and result.response.payload == b"hello from aiocoap"
    assert layers[0].stats.echo_repeats == 1 and result.transmissions == 1


def test_our_client_with_a_wrong_key_gets_aiocoaps_unprotected_error(aiocoap_server, tmp_path):
    port = aiocoap_server()
    wrong = our_context(tmp_path / "client.json", CLIENT_ID, SERVER_ID, secret="other")
    result = our_client(port, wrong, "GET", "/hello")
    assert result.returncode == 1
    assert b"4.00 Bad Request" in result.stderr and result.stdout == b"Decryption failed\n"
