"""An aiocoap server whose site is behind aiocoap's OSCORE (OscoreSiteWrapper):
the peer of tests/interop/test_coap_oscore_aiocoap.py, run as its own process.

    python aiocoap_oscore_server.py PORT CONTEXT_DIR

CONTEXT_DIR is an aiocoap OSCORE context directory (settings.json, and
sequence.json once used). Resources: /hello (GET), /store (GET, PUT),
/counter (observable, a new value every 0.2 s), /big (5,000 bytes, sent in
blocks). Requests without OSCORE reach the site too (aiocoap leaves access
control to the resources); these resources do not check.
"""

from __future__ import annotations

import asyncio
import sys

import aiocoap
from aiocoap import resource
from aiocoap.credentials import CredentialsMap
from aiocoap.oscore_sitewrapper import OscoreSiteWrapper

BIG = bytes(range(250)) * 20


class Hello(resource.Resource):
    async def render_get(self, request):
        return aiocoap.Message(payload=b"hello from aiocoap", content_format=0)


class Store(resource.Resource):
    def __init__(self) -> None:
        super().__init__()
        self.value = b""

    async def render_get(self, request):
        return aiocoap.Message(payload=self.value)

    async def render_put(self, request):
        self.value = request.payload
        return aiocoap.Message(code=aiocoap.CHANGED)


class Counter(resource.ObservableResource):
    def __init__(self) -> None:
        super().__init__()
        self.value = 0

    def tick(self) -> None:
        self.value += 1
        self.updated_state()
        asyncio.get_running_loop().call_later(0.2, self.tick)

    async def render_get(self, request):
        return aiocoap.Message(payload=str(self.value).encode())


class Big(resource.Resource):
    async def render_get(self, request):
        return aiocoap.Message(payload=BIG)


async def main(port: int, context_dir: str) -> None:
    site = resource.Site()
    site.add_resource(["hello"], Hello())
    site.add_resource(["store"], Store())
    counter = Counter()
    site.add_resource(["counter"], counter)
    site.add_resource(["big"], Big())
    credentials = CredentialsMap()
    credentials.load_from_dict({":iotbench": {"oscore": {"basedir": context_dir}}})
    await aiocoap.Context.create_server_context(
        OscoreSiteWrapper(site, credentials), bind=("127.0.0.1", port)
    )
    counter.tick()
    await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
