"""aiocoap (a CoAP implementation we did not write) as a client of `iotbench serve coap`."""

from __future__ import annotations

import asyncio
import re

import aiocoap
import pytest
from aiocoap import GET, NON, PUT, Context, Message
from aiocoap.numbers.codes import Code as AioCode
from aiocoap.util import linkformat

pytestmark = pytest.mark.interop

VOLTAGE = re.compile(rb"^\d{1,3}\.\d V$")


async def _with_context(port: int, body) -> object:
    ctx = await Context.create_client_context()
    try:
        return await asyncio.wait_for(body(ctx, f"coap://127.0.0.1:{port}"), 30)
    finally:
        await ctx.shutdown()


def run(port: int, body) -> object:
    return asyncio.run(_with_context(port, body))


def test_get_voltage_confirmable(iotbench_coap_server):
    async def body(ctx, base):
        return await ctx.request(Message(code=GET, uri=f"{base}/voltage")).response

    resp = run(iotbench_coap_server, body)
    assert resp.code == AioCode.CONTENT
    assert VOLTAGE.match(resp.payload), resp.payload
    assert resp.opt.content_format == 0


def test_get_non_confirmable_json(iotbench_coap_server):
    async def body(ctx, base):
        request = Message(code=GET, uri=f"{base}/json", transport_tuning=aiocoap.Unreliable)
        return await ctx.request(request).response

    resp = run(iotbench_coap_server, body)
    assert resp.code == AioCode.CONTENT
    assert resp.mtype == NON  # RFC 7252 5.2.3: a NON request gets a NON response
    assert re.match(rb'^\{"id":"0x[0-9a-f]{10}","val":\d+\}$', resp.payload)
    assert resp.opt.content_format == 50


def test_object_of_1000_bytes_in_one_datagram(iotbench_coap_server):
    async def body(ctx, base):
        return await ctx.request(Message(code=GET, uri=f"{base}/o")).response

    resp = run(iotbench_coap_server, body)
    assert resp.code == AioCode.CONTENT and len(resp.payload) == 1000


def test_put_then_get(iotbench_coap_server):
    async def body(ctx, base):
        put = await ctx.request(
            Message(code=PUT, uri=f"{base}/store", payload=b"from aiocoap", content_format=0)
        ).response
        get = await ctx.request(Message(code=GET, uri=f"{base}/store")).response
        return put, get

    put, get = run(iotbench_coap_server, body)
    assert put.code == AioCode.CHANGED
    assert get.code == AioCode.CONTENT and get.payload == b"from aiocoap"


def test_not_found_and_method_not_allowed(iotbench_coap_server):
    async def body(ctx, base):
        missing = await ctx.request(Message(code=GET, uri=f"{base}/nothing-here")).response
        wrong = await ctx.request(Message(code=PUT, uri=f"{base}/voltage", payload=b"1")).response
        return missing, wrong

    missing, wrong = run(iotbench_coap_server, body)
    assert missing.code == AioCode.NOT_FOUND
    assert wrong.code == AioCode.METHOD_NOT_ALLOWED


def test_well_known_core_lists_resources(iotbench_coap_server):
    async def body(ctx, base):
        return await ctx.request(Message(code=GET, uri=f"{base}/.well-known/core")).response

    resp = run(iotbench_coap_server, body)
    assert resp.code == AioCode.CONTENT and resp.opt.content_format == 40
    links = {link.href: link for link in linkformat.parse(resp.payload.decode()).links}
    assert set(links) == {"/voltage", "/json", "/o", "/store", "/mc"}
    assert links["/voltage"].rt == ["voltage"] and links["/voltage"].ct == ["0"]
    assert '</voltage>;ct=0;rt="voltage";obs' in resp.payload.decode()


def test_observe_voltage(iotbench_coap_server):
    async def body(ctx, base):
        request = ctx.request(Message(code=GET, uri=f"{base}/voltage", observe=0))
        first = await request.response
        seen = []
        async for notification in request.observation:
            seen.append(notification)
            if len(seen) == 3:
                request.observation.cancel()
                break
        return first, seen

    first, seen = run(iotbench_coap_server, body)
    assert first.code == AioCode.CONTENT and first.opt.observe is not None
    assert len(seen) == 3
    numbers = [first.opt.observe] + [n.opt.observe for n in seen]
    assert numbers == sorted(numbers) and len(set(numbers)) == 4
    assert all(VOLTAGE.match(n.payload) for n in seen)


# ---- RFC 7959 block-wise: aiocoap fetches and uploads 5,000 bytes ------------------------


def test_block2_fetch_of_5000_bytes(iotbench_coap_big_server):
    async def body(ctx, base):
        whole = await ctx.request(Message(code=GET, uri=f"{base}/o")).response
        # One block at the size aiocoap asks for (Block2 in its request).
        request = Message(code=GET, uri=f"{base}/o")
        request.opt.block2 = aiocoap.optiontypes.BlockOption.BlockwiseTuple(1, 0, 2)
        second = await ctx.request(request, handle_blockwise=False).response
        return whole, second

    whole, second = run(iotbench_coap_big_server, body)
    assert whole.code == AioCode.CONTENT and len(whole.payload) == 5000
    assert second.opt.block2.block_number == 1 and second.opt.block2.size_exponent == 2
    assert second.payload == whole.payload[64:128] and second.opt.block2.more


def test_block1_upload_of_5000_bytes(iotbench_coap_big_server):
    payload = bytes(range(250)) * 20

    async def body(ctx, base):
        put = await ctx.request(Message(code=PUT, uri=f"{base}/store", payload=payload)).response
        got = await ctx.request(Message(code=GET, uri=f"{base}/store")).response
        return put, got

    put, got = run(iotbench_coap_big_server, body)
    assert put.code == AioCode.CHANGED
    assert got.payload == payload
