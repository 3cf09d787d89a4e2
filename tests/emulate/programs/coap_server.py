"""An aiocoap server for the emulation tests: GET /t answers SIZE bytes.

Usage: coap_server.py BIND_ADDRESS SIZE; prints "ready" once it listens."""

import asyncio
import sys

import aiocoap
import aiocoap.resource as resource


class Reading(resource.Resource):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    async def render_get(self, request: aiocoap.Message) -> aiocoap.Message:
        return aiocoap.Message(payload=b"r" * self.size)


async def main() -> None:
    root = resource.Site()
    root.add_resource(["t"], Reading(int(sys.argv[2])))
    await aiocoap.Context.create_server_context(root, bind=(sys.argv[1], 5683))
    print("ready", flush=True)
    await asyncio.get_running_loop().create_future()


asyncio.run(main())
