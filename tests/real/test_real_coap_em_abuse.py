"""The Entity Manager on real loopback sockets, with its real-mode defaults, against
the attacks that worked before it had them: clients at eight loopback addresses
filling the entity table, one client changing another's entity, and nested
entities multiplying one query (apps/em/safeguards.py, docs/coap-em.md)."""

from __future__ import annotations

import asyncio
import json
import os
import socket

import pytest

from iotbench.proto.coap.codec import Code, Message, Type, decode, encode
from iotbench.proto.coap.options import Opt
from iotbench.real.coap import serve_coap
from iotbench.real.coap_em import REAL_MODE_PARAMS, serve_coap_em

TIMEOUT_S = 5.0


def raw_call(
    src: str, port: int, code: int, path: list[str], payload: bytes = b"", ct: int | None = None
) -> Message:
    """One CON request from address `src` (a loopback address of our choice, which
    no CoAP library lets a client pick), answered piggybacked."""
    msg = Message(Type.CON, code, int.from_bytes(os.urandom(2), "big"), os.urandom(4))
    msg.uri_path = path
    if ct is not None:
        msg.add_option(Opt.CONTENT_FORMAT, ct)
    msg.payload = payload
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((src, 0))
        s.settimeout(TIMEOUT_S)
        s.sendto(encode(msg), ("127.0.0.1", port))
        while True:
            reply = decode(s.recv(65536))
            if reply.token == msg.token:
                return reply


async def start(serve, **kwargs) -> tuple[asyncio.Task, int]:
    ready: asyncio.Future = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve("127.0.0.1", 0, on_ready=ready.set_result, **kwargs))
    driver = await asyncio.wait_for(ready, 10)
    return task, driver.transport.get_extra_info("sockname")[1]


def run_against_em(session) -> object:
    """`session(em_port, member_uri)` in a thread, beside an EM and one member."""

    async def main():
        member_task, member_port = await start(serve_coap)
        em_task, em_port = await start(serve_coap_em)
        try:
            member = f"coap://127.0.0.1:{member_port}/voltage"
            return await asyncio.to_thread(session, em_port, member)
        finally:
            for task in (em_task, member_task):
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task

    return asyncio.run(main())


def post(src: str, port: int, profile: dict) -> Message:
    return raw_call(src, port, Code.POST, ["e"], json.dumps(profile).encode(), ct=50)


def test_eight_loopback_addresses_do_not_lock_others_out():
    per_client = REAL_MODE_PARAMS.max_entities_per_client
    assert 8 * per_client < REAL_MODE_PARAMS.max_entities

    def session(port: int, member: str) -> tuple[list[list[int]], int, int]:
        codes = []
        for k in range(2, 10):  # 127.0.0.2 .. 127.0.0.9
            src = f"127.0.0.{k}"
            codes.append(
                [
                    post(src, port, {"name": f"a{k}n{i}", "er": [f"{member}?i={i}"]}).code
                    for i in range(per_client + 1)
                ]
            )
        newcomer = post("127.0.0.10", port, {"name": "mine", "er": [member]}).code
        query = raw_call("127.0.0.10", port, Code.GET, ["e", "mine"]).code
        return codes, newcomer, query

    codes, newcomer, query = run_against_em(session)
    for row in codes:
        assert row == [Code.CREATED] * per_client + [Code.SERVICE_UNAVAILABLE]
    assert (newcomer, query) == (Code.CREATED, Code.CONTENT)


def test_a_client_may_not_change_or_delete_anothers_entity():
    def session(port: int, member: str) -> list[int]:
        assert post("127.0.0.2", port, {"name": "t", "er": [member]}).code == Code.CREATED
        return [
            raw_call("127.0.0.3", port, Code.PUT, ["e", "t"], b'{"delay": 1}', ct=50).code,
            raw_call("127.0.0.3", port, Code.DELETE, ["e", "t"]).code,
            raw_call("127.0.0.3", port, Code.GET, ["e", "t"]).code,
        ]

    assert run_against_em(session) == [Code.FORBIDDEN, Code.FORBIDDEN, Code.CONTENT]


def test_nested_entities_cannot_multiply_a_query():
    """B has 64 members at one address; A would be 64 x B: 4,096 requests from one
    query. A is refused when it is made, B stays usable."""

    def session(port: int, member: str) -> tuple[Message, int]:
        b = {"name": "B", "er": [f"{member}?n={i}" for i in range(64)]}
        a = {"name": "A", "er": [f"coap://127.0.0.1:{port}/e/B?y={i}" for i in range(64)]}
        assert post("127.0.0.2", port, b).code == Code.CREATED
        refused = post("127.0.0.2", port, a)
        return refused, raw_call("127.0.0.2", port, Code.GET, ["e", "B"]).code

    refused, query_b = run_against_em(session)
    assert refused.code == Code.FORBIDDEN
    assert b"more than 256 requests to members" in refused.payload
    assert query_b in (Code.CONTENT, Code.EMPTY)  # piggybacked, or an empty ACK first


def test_serve_options_set_the_bounds(monkeypatch):
    """Each `serve coap-em` option reaches EmParams; what is not given keeps the
    real-mode default."""
    seen = {}

    async def fake_serve(host, port, *, params, security, on_ready):
        seen["params"] = params

    monkeypatch.setattr("iotbench.real.coap_em.serve_coap_em", fake_serve)
    from iotbench.cli import main

    argv = ["serve", "coap-em", "--max-requests-per-query", "3", "--max-bytes-per-query", "999"]
    argv += ["--max-nesting-depth", "2", "--max-queries", "5", "--max-entities", "7"]
    argv += ["--client-prefix-v6", "56", "--shared-entities", "--member-timeout", "4"]
    assert main(argv) == 0
    p = seen["params"]
    assert (p.max_requests_per_query, p.max_bytes_per_query, p.max_nesting_depth) == (3, 999, 2)
    assert (p.max_queries, p.max_entities, p.client_prefix_v6) == (5, 7, 56)
    assert p.shared_entities and p.member_timeout_s == 4.0
    assert p.max_queries_per_client == REAL_MODE_PARAMS.max_queries_per_client
    assert p.allowed_members == REAL_MODE_PARAMS.allowed_members
    assert main(["serve", "coap-em"]) == 0
    assert seen["params"] == REAL_MODE_PARAMS
