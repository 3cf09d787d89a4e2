"""Real mode's OSCORE: context files in aiocoap's format, sequence numbers kept
across runs (RFC 8613 B.1.1), Echo after a restart (B.1.2), on loopback sockets."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from iotbench.proto.coap.codec import Code
from iotbench.real.coap import coap_request, serve_coap
from iotbench.real.coap_oscore import (
    RESERVE_STEP,
    open_context,
    open_contexts,
    oscore_client,
    oscore_server,
)
from iotbench.scenarios import UserError

SECRET = "correct horse battery staple"


def _files(tmp_path, **extra):
    server = {"sender-id_hex": "02", "recipient-id_hex": "01", "secret_ascii": SECRET, **extra}
    client = {"sender-id_hex": "01", "recipient-id_hex": "02", "secret_ascii": SECRET, **extra}
    (tmp_path / "server.json").write_text(json.dumps(server))
    (tmp_path / "client.json").write_text(json.dumps(client))
    return tmp_path / "server.json", tmp_path / "client.json"


@pytest.mark.parametrize(
    "content, message",
    [
        ("[1]", "expected a JSON object"),
        ('{"sender-id_hex": "01", "recipient-id_hex": "02"}', "secret_hex or secret_ascii is required"),
        ('{"sender-id_hex": "0x1", "recipient-id_hex": "02", "secret_ascii": "s"}',
         "sender-id_hex must be hexadecimal digits"),
        ('{"sender-id_hex": "01", "sender-id_ascii": "a", "recipient-id_hex": "02", "secret_ascii": "s"}',
         "sender-id is given twice"),
        ('{"sender-id_hex": "0102030405060708", "recipient-id_hex": "02", "secret_ascii": "s"}',
         "sender-id is 8 bytes; at most 7"),
        ('{"sender-id_hex": "01", "recipient-id_hex": "01", "secret_ascii": "s"}', "must differ"),
        ('{"sender-id_hex": "01", "recipient-id_hex": "02", "secret_ascii": "s", "window": 0}',
         "window 0 must be a positive integer"),
        ('{"sender-id_hex": "01", "recipient-id_hex": "02", "secret_ascii": "s", "kdf-hashfun": "sha512"}',
         "kdf-hashfun 'sha512' is not built; allowed: sha256"),
        ('{"sender": "01"}', "unknown key 'sender'; allowed: sender-id_hex|sender-id_ascii"),
        ("{", "not JSON"),
    ],
)  # fmt: skip
def test_a_bad_context_file_is_one_clear_line(tmp_path, content, message):
    path = tmp_path / "ctx.json"
    path.write_text(content)
    with pytest.raises(UserError) as error, open_context(path):
        pass
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value)
    assert "\n" not in str(error.value)


def test_sequence_numbers_are_reserved_before_use_and_kept_on_exit(tmp_path):
    _, client = _files(tmp_path)
    state = tmp_path / "client.sequence.json"
    with open_context(client) as ctx:
        assert ctx.replay is not None  # never used: a fresh window
        assert ctx.new_partial_iv() == b"\0"
        assert json.loads(state.read_text()) == {"next-to-send": RESERVE_STEP}  # before use
        ctx.new_partial_iv()
        with pytest.raises(UserError, match="in use"), open_context(client):
            pass
    assert json.loads(state.read_text()) == {"next-to-send": 2}
    with open_context(client) as ctx:
        assert ctx.sender_sequence_number == 2 and ctx.replay is None  # used before
        assert ctx.new_partial_iv() == b"\2"
        assert json.loads(state.read_text()) == {"next-to-send": 2 + RESERVE_STEP}
    # A crash (no clean exit) leaves the reservation: the next run starts above it.
    state.write_text(json.dumps({"next-to-send": 2 + RESERVE_STEP}))
    with open_context(client) as ctx:
        assert ctx.new_partial_iv() == bytes((2 + RESERVE_STEP,))


def test_a_server_takes_one_context_per_client(tmp_path):
    server, _ = _files(tmp_path)
    other = tmp_path / "other.json"
    other.write_text(server.read_text().replace('"01"', '"03"'))
    same = tmp_path / "same.json"
    same.write_text(server.read_text().replace(SECRET, "another secret"))
    with pytest.raises(UserError, match="same recipient-id"), open_contexts([server, same]):
        pass
    with pytest.raises(UserError, match="nonces would repeat"), open_contexts([server, other]):
        pass  # other: the same secret and sender-id as server
    other.write_text(other.read_text().replace(SECRET, "another secret"))
    with open_contexts([server, other]) as contexts:
        assert [c.recipient_id for c in contexts] == [b"\x01", b"\x03"]
    with pytest.raises(UserError, match="given twice"), open_contexts([server, server]):
        pass


def test_requests_and_echo_recovery_after_a_server_restart(tmp_path):
    server_file, client_file = _files(tmp_path, salt_hex="9e7ca92223786340")

    async def exchange(port, path, method="GET", payload=b""):
        with open_context(client_file) as ctx:
            return await coap_request(
                f"coap://127.0.0.1:{port}{path}",
                method,
                payload=payload,
                timeout_s=5,
                security=oscore_client(ctx),
                secure_scheme="coap",
            )

    async def run_server():
        with open_context(server_file) as ctx:
            ready = asyncio.get_running_loop().create_future()
            task = asyncio.create_task(
                serve_coap("127.0.0.1", 0, security=oscore_server(ctx), on_ready=ready.set_result)
            )
            driver = await asyncio.wait_for(ready, 10)
            port = driver.transport.get_extra_info("sockname")[1]
            try:
                put = await exchange(port, "/store", "PUT", b"secret value")
                got = await exchange(port, "/store")
                plain = await coap_request(f"coap://127.0.0.1:{port}/voltage", timeout_s=5)
                return put, got, plain, driver.stack.layer.stats
            finally:
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task

    put, got, plain, stats = asyncio.run(run_server())
    assert put.response.code == Code.CHANGED and got.response.payload == b"secret value"
    assert plain.response.code == Code.UNAUTHORIZED and plain.response.payload == b"OSCORE required"
    assert stats.echo_challenges == 0
    # The server restarts: its window is unknown, the first request shows Echo.
    put, got, _, stats = asyncio.run(run_server())
    assert put.ok and got.ok and stats.echo_challenges == 1
    assert re.fullmatch(
        r"\{\"next-to-send\": \d+\}", (tmp_path / "server.sequence.json").read_text()
    )
