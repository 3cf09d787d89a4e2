"""An aiocoap client for the emulation tests: N GETs of coap://[ADDRESS]/t, one
after the other; prints one line per answer: its size and round trip in ms."""

import asyncio
import sys
import time

import aiocoap


async def main() -> None:
    context = await aiocoap.Context.create_client_context()
    for _ in range(int(sys.argv[2])):
        request = aiocoap.Message(code=aiocoap.GET, uri=f"coap://[{sys.argv[1]}]/t")
        start = time.monotonic()
        response = await asyncio.wait_for(context.request(request).response, 30)
        print(len(response.payload), round((time.monotonic() - start) * 1e3, 3), flush=True)
    await context.shutdown()


asyncio.run(main())
