"""What the impairment shim costs: UDP round trips per wall second through it.

    python bench/shim.py [--round-trips N] [--size BYTES]

An echo server and a client on loopback, in one asyncio loop with the shim
(an unimpaired network, so only the shim's own work is timed): the client
sends a datagram, waits for the echo, sends the next. Then the same without
the shim. Prints both rates, the ratio, and the time the shim adds per
relayed datagram (two per round trip).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from iotbench.real.shim import ImpairmentShim
from iotbench.scenarios.fields import validate
from iotbench.scenarios.schema import NETWORK


class Echo(asyncio.DatagramProtocol):
    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data, addr) -> None:
        self.transport.sendto(data, addr)


class Client(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()

    def datagram_received(self, data, addr) -> None:
        self.queue.put_nowait(data)


async def round_trips(target, n: int, size: int) -> float:
    """Wall seconds for n round trips to `target`, one at a time."""
    loop = asyncio.get_running_loop()
    transport, client = await loop.create_datagram_endpoint(Client, remote_addr=target)
    payload = bytes(size)
    t0 = time.perf_counter()
    for _ in range(n):
        transport.sendto(payload)
        await client.queue.get()
    wall = time.perf_counter() - t0
    transport.close()
    return wall


async def main(n: int, size: int) -> None:
    loop = asyncio.get_running_loop()
    echo, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
    server = echo.get_extra_info("sockname")[:2]
    shim = ImpairmentShim(validate(NETWORK, {"seed": 1}, ("network",)), server)
    listen = await shim.listen("127.0.0.1", 0)
    await round_trips(listen, 100, size)  # warm-up: the relay socket opens
    through = await round_trips(listen, n, size)
    direct = await round_trips(server, n, size)
    shim.close()
    echo.close()
    print(f"{n} round trips of {size}-byte datagrams, one at a time, on loopback")
    print(f"through the shim  {n / through:>9,.0f} round trips/s")
    print(f"direct            {n / direct:>9,.0f} round trips/s")
    print(f"ratio             {direct / through:>9.2f} (rate through the shim / direct rate)")
    print(f"added per relayed datagram: {(through - direct) / n / 2 * 1e6:.0f} us")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", type=int, default=5000)
    parser.add_argument("--size", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(main(args.round_trips, args.size))
