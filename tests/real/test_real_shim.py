"""The impairment shim: real UDP datagrams through the simulated network, in process.

Each test runs an echo server, the shim and client sockets on loopback in one
asyncio loop. Delays are checked as lower bounds only (the shim must not be
faster than the model); nothing asserts on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import io
import socket
import struct

from iotbench.metrics.pcap import LINKTYPE_RAW
from iotbench.real.shim import ImpairmentShim, ShimLimits
from iotbench.scenarios.fields import validate
from iotbench.scenarios.schema import NETWORK


def network(seed: int = 1, **sections) -> dict:
    """A validated network section: an unimpaired fast link unless told otherwise."""
    raw = {"seed": seed, "link": sections.pop("link", {}), "impair": sections.pop("impair", {})}
    return validate(NETWORK, raw, ("network",))


class Echo(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.received: list[bytes] = []

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data, addr) -> None:
        self.received.append(data)
        self.transport.sendto(data, addr)


class Client(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()

    def datagram_received(self, data, addr) -> None:
        self.queue.put_nowait((asyncio.get_running_loop().time(), data))


async def setup(net: dict, **kwargs):
    loop = asyncio.get_running_loop()
    echo_transport, echo = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
    server = echo_transport.get_extra_info("sockname")[:2]
    shim = ImpairmentShim(net, server, **kwargs)
    listen = await shim.listen("127.0.0.1", 0)
    return echo_transport, echo, shim, listen


async def client(listen):
    transport, protocol = await asyncio.get_running_loop().create_datagram_endpoint(
        Client, remote_addr=listen
    )
    return transport, protocol


async def settle(seconds: float = 0.3) -> None:
    await asyncio.sleep(seconds)


def test_datagrams_cross_both_ways_with_the_modelled_delay():
    net = network(
        link={"delay_s": 0.1},
        impair={"to_server": {"delay": {"model": "constant", "s": 0.1}}},
    )

    async def main():
        echo_t, echo, shim, listen = await setup(net)
        transport, c = await client(listen)
        loop = asyncio.get_running_loop()
        sent_at = loop.time()
        transport.sendto(b"ping")
        arrived_at, data = await asyncio.wait_for(c.queue.get(), 10)
        shim.close()
        echo_t.close()
        transport.close()
        return arrived_at - sent_at, data, echo.received, shim.stats

    rtt, data, received, stats = asyncio.run(main())
    assert data == b"ping" and received == [b"ping"]
    assert rtt >= 0.3 - 0.01  # 0.1 + 0.1 there, 0.1 back; never faster than the model
    assert stats.delivered_to_server == stats.delivered_to_clients == 1
    assert stats.packets[("client->server", "delivered")] == 1


def test_each_client_gets_its_own_answers():
    async def main():
        echo_t, _, shim, listen = await setup(network())
        clients = [await client(listen) for _ in range(3)]
        for i, (transport, _) in enumerate(clients):
            transport.sendto(f"client {i}".encode())
        answers = [(await asyncio.wait_for(c.queue.get(), 10))[1] for _, c in clients]
        n = len(shim.clients)
        shim.close()
        echo_t.close()
        return answers, n

    answers, n = asyncio.run(main())
    assert answers == [b"client 0", b"client 1", b"client 2"] and n == 3


def test_losses_follow_the_seed():
    def delivered(seed: int) -> list[bytes]:
        net = network(seed, impair={"both": {"loss": {"model": "bernoulli", "p": 0.5}}})

        async def main():
            echo_t, echo, shim, listen = await setup(net)
            transport, _ = await client(listen)
            for i in range(60):
                transport.sendto(b"%d" % i)
            await settle()
            shim.close()
            echo_t.close()
            return echo.received, shim.stats

        received, stats = asyncio.run(main())
        assert stats.packets[("client->server", "lost")] == 60 - len(received)
        return received

    first, again, other = delivered(3), delivered(3), delivered(4)
    assert first == again  # same seed, same fates
    assert first != other
    assert 10 < len(first) < 50  # about half of 60


def test_total_loss_and_outages_drop_everything():
    for impair, fate in [
        ({"to_server": {"loss": {"model": "bernoulli", "p": 1.0}}}, "lost"),
        (
            {"both": {"outages": {"model": "scheduled", "start_s": [0.0], "duration_s": 600.0}}},
            "outage",
        ),
    ]:

        async def main(impair=impair):
            echo_t, echo, shim, listen = await setup(network(impair=impair))
            transport, _ = await client(listen)
            for _ in range(5):
                transport.sendto(b"x")
            await settle()
            shim.close()
            echo_t.close()
            return echo.received, shim.stats

        received, stats = asyncio.run(main())
        assert received == []
        assert stats.packets[("client->server", fate)] == 5


def test_a_large_datagram_is_fragmented_on_the_link_and_reassembled():
    payload = bytes(range(256)) * 6  # 1536 bytes: three fragments at MTU 576

    async def main():
        echo_t, echo, shim, listen = await setup(network(link={"mtu_bytes": 576}))
        transport, c = await client(listen)
        transport.sendto(payload)
        _, data = await asyncio.wait_for(c.queue.get(), 10)
        shim.close()
        echo_t.close()
        return data, echo.received, shim.stats

    data, received, stats = asyncio.run(main())
    assert data == payload and received == [payload]
    assert stats.packets[("client->server", "delivered")] == 3
    assert stats.packets[("server->client", "delivered")] == 3


def test_a_slow_link_with_a_short_queue_drops_at_the_tail():
    async def main():
        net = network(link={"rate_bps": 8000, "queue_packets": 2})
        echo_t, echo, shim, listen = await setup(net)
        transport, _ = await client(listen)
        for _ in range(10):
            transport.sendto(bytes(72))  # 100 bytes on the wire: 0.1 s each at 8 kbit/s
        await settle(0.6)
        shim.close()
        echo_t.close()
        return echo.received, shim.stats

    received, stats = asyncio.run(main())
    # one on the wire and two queued; the seven others find the queue full
    assert stats.packets[("client->server", "queue-full")] == 7
    assert len(received) == 3


def test_item_based_redraws_count_client_datagrams():
    net = network(
        impair={
            "both": {"delay": {"model": "constant", "s": {"uniform": [0.0, 1.0], "every_items": 2}}}
        }
    )

    async def main():
        echo_t, _, shim, listen = await setup(net)
        transport, c = await client(listen)
        for _ in range(5):
            transport.sendto(b"x")
            await asyncio.wait_for(c.queue.get(), 10)
        history = list(shim.net.redraws[0].history)
        shim.close()
        echo_t.close()
        return history

    history = asyncio.run(main())
    assert len(history) == 3  # datagrams 0, 2 and 4 start a new draw


def test_clients_beyond_the_limit_are_refused_and_idle_ones_forgotten():
    async def main():
        limits = ShimLimits(max_clients=2, idle_timeout_s=0.4)
        echo_t, echo, shim, listen = await setup(network(), limits=limits)
        clients = [await client(listen) for _ in range(4)]
        for transport, _ in clients:
            transport.sendto(b"x")
        await settle()
        refused = shim.stats.refused_clients
        await settle(1.0)  # everyone idle for longer than 0.4 s
        left = len(shim.clients)
        clients[3][0].sendto(b"y")  # a new client is welcome again
        await settle()
        shim.close()
        echo_t.close()
        return refused, left, shim.stats, echo.received

    refused, left, stats, received = asyncio.run(main())
    assert refused == 2 and left == 0 and stats.forgotten_clients >= 2
    assert received == [b"x", b"x", b"y"]


def test_pcap_holds_every_packet_the_link_carried():
    buffer = io.BytesIO()

    async def main():
        net = network(impair={"to_client": {"loss": {"model": "bernoulli", "p": 1.0}}})
        echo_t, _, shim, listen = await setup(net, pcap=buffer)
        transport, _ = await client(listen)
        for i in range(4):
            transport.sendto(b"%d" % i)
        await settle()
        shim.close()
        echo_t.close()

    asyncio.run(main())
    data = buffer.getvalue()
    magic, _, _, _, _, _, linktype = struct.unpack_from("<IHHiIII", data)
    assert magic == 0xA1B23C4D and linktype == LINKTYPE_RAW
    records, offset = [], 24
    while offset < len(data):
        _, _, length, _ = struct.unpack_from("<IIII", data, offset)
        records.append(data[offset + 16 : offset + 16 + length])
        offset += 16 + length
    # four requests and four answers (lost on the way, but they were on the wire)
    assert len(records) == 8
    assert all(r[0] >> 4 == 4 and r[9] == socket.IPPROTO_UDP for r in records)


def test_a_flood_of_odd_datagrams_leaves_the_shim_working():
    """Empty, huge and random datagrams from more clients than allowed, as fast as the
    sockets take them; then an admitted client still gets its answer."""
    import random

    rng = random.Random(7)

    async def main():
        net = network(link={"mtu_bytes": 1280, "queue_packets": 50, "rate_bps": 10_000_000})
        echo_t, _, shim, listen = await setup(net, limits=ShimLimits(max_clients=8))
        clients = [await client(listen) for _ in range(20)]
        for transport, _ in clients:  # the first 8 are admitted, the 12 others refused
            transport.sendto(b"hello")
        await settle()
        refused = shim.stats.refused_clients
        for i in range(3000):  # most of these the kernel's socket buffers drop
            transport, _ = clients[i % 20]
            size = rng.choice([0, 1, 7, 1400, 9000, 60000])
            transport.sendto(rng.randbytes(size))
            if i % 200 == 0:
                await asyncio.sleep(0)  # let the loop breathe, as a real flood would
        await settle(1.0)
        while not clients[0][1].queue.empty():
            clients[0][1].queue.get_nowait()
        clients[0][0].sendto(b"still there?")
        answers = []
        while True:
            _, data = await asyncio.wait_for(clients[0][1].queue.get(), 10)
            answers.append(data)
            if data == b"still there?":
                break
        stats = shim.stats
        shim.close()
        echo_t.close()
        return refused, stats

    refused, stats = asyncio.run(main())
    assert refused == 12 and stats.refused_clients >= 12
    assert stats.datagrams_from_clients > 20
