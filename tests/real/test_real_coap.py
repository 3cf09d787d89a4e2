"""The CoAP stack on real loopback sockets: round trips, robustness, give-up rules."""

from __future__ import annotations

import asyncio
import random
import re
import socket

import pytest

from iotbench.proto.coap.codec import Code, Message, Type, decode, encode
from iotbench.proto.coap.params import CoapParams
from iotbench.real.coap import RealModeError, coap_request, describe, serve_coap


async def start_server(**kwargs):
    ready: asyncio.Future = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve_coap("127.0.0.1", 0, on_ready=ready.set_result, **kwargs))
    driver = await asyncio.wait_for(ready, 10)
    port = driver.transport.get_extra_info("sockname")[1]
    return task, driver, port


async def stop_server(task) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_round_trip_and_observe():
    async def main():
        task, _, port = await start_server(observe_interval_s=0.05)
        try:
            plain = await coap_request(f"coap://127.0.0.1:{port}/voltage", timeout_s=5)
            seen = []
            observed = await coap_request(
                f"coap://127.0.0.1:{port}/voltage", observe=3, timeout_s=5, on_update=seen.append
            )
            await asyncio.sleep(0.2)  # the deregistration reached the server
            return plain, observed, seen
        finally:
            await stop_server(task)

    plain, observed, seen = asyncio.run(main())
    assert plain.ok and plain.transmissions == 1
    size = len(plain.response.payload)
    assert describe(plain.response) == f"2.05 Content, content-format 0, {size} bytes"
    assert re.fullmatch(rb"\d{1,3}\.\d V", plain.response.payload)
    assert observed.ok and len(observed.notifications) == 3
    assert len(seen) == 4  # registration response + 3 notifications
    numbers = [m.observe for m in seen]
    assert numbers == sorted(numbers)


def test_server_survives_garbage_and_a_flood():
    async def main():
        task, driver, port = await start_server()
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                rng = random.Random(7)
                for _ in range(500):  # random bytes, some with a valid CON header
                    junk = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 40)))
                    if junk and rng.random() < 0.3:
                        junk = bytes([0x40]) + junk[1:]
                    s.sendto(junk, ("127.0.0.1", port))
                for mid in range(3000):  # a flood of distinct, valid requests
                    msg = Message.request(Type.NON, Code.GET, mid, b"\x01", "/json")
                    s.sendto(encode(msg), ("127.0.0.1", port))
            await asyncio.sleep(0.5)
            after = await coap_request(f"coap://127.0.0.1:{port}/voltage", timeout_s=5)
            return after, driver.stack.stats
        finally:
            await stop_server(task)

    after, stats = asyncio.run(main())
    assert after.ok
    assert stats.decode_errors > 0 and stats.internal_errors == 0


def _registration(mid: int, token: bytes) -> bytes:
    req = Message.request(Type.CON, Code.GET, mid, token, "/voltage")
    req.observe = 0
    return encode(req)


def test_observers_that_are_gone_end_with_the_icmp_error():
    # Clients register and close their sockets: the first notification to each
    # draws an ICMP port unreachable, which ends its observations (RFC 7641 4.5)
    # instead of notifying a closed port forever.
    def register_and_leave(port: int) -> None:
        for i in range(20):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.settimeout(5)
                for k in range(2):
                    s.sendto(_registration(100 * i + k, bytes([i, k])), ("127.0.0.1", port))
                    s.recvfrom(2048)  # the registration's answer

    async def main():
        task, driver, port = await start_server(observe_interval_s=0.05)
        endpoint = driver.stack
        try:
            await asyncio.to_thread(register_and_leave, port)
            registered = endpoint.observers("/voltage")
            for _ in range(100):  # until the notifications have gone out and bounced
                await asyncio.sleep(0.05)
                if endpoint.observers("/voltage") == 0:
                    break
            return registered, endpoint.observers("/voltage"), endpoint.stats
        finally:
            await stop_server(task)

    registered, left, stats = asyncio.run(main())
    assert registered == 40 and left == 0
    assert stats.observers_unreachable == 40


def test_observers_per_client_are_bounded():
    async def main():
        task, _, port = await start_server()

        def register(port: int) -> list[Message]:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.settimeout(5)
                answers = []
                for k in range(20):
                    s.sendto(_registration(k, bytes([k])), ("127.0.0.1", port))
                    answers.append(decode(s.recvfrom(2048)[0]))
                return answers

        try:
            return await asyncio.to_thread(register, port)
        finally:
            await stop_server(task)

    answers = asyncio.run(main())
    # 16 observations per client endpoint; past that a plain answer without Observe.
    assert [a.observe is not None for a in answers] == [True] * 16 + [False] * 4
    assert all(a.code == Code.CONTENT for a in answers)


def test_no_server_gives_up_after_the_timeout():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))  # bound but never answering
        port = s.getsockname()[1]
        params = CoapParams(ack_timeout_s=0.05, max_retransmit=2)
        result = asyncio.run(coap_request(f"coap://127.0.0.1:{port}/x", params=params))
        assert result.response is None and result.failure == "max-retransmit"
        received = 0
        s.settimeout(0.1)
        while True:
            try:
                s.recvfrom(2048)
            except TimeoutError:
                break
            received += 1
        assert received == 3  # the request and MAX_RETRANSMIT = 2 retransmissions


def test_nothing_listening_fails_at_once():
    # The OS answers with ICMP port unreachable: the client ends then, not after
    # MAX_TRANSMIT_WAIT (93 s by default), and says why.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = asyncio.run(coap_request(f"coap://127.0.0.1:{port}/x"))
    assert result.response is None and result.transmissions == 0
    assert result.failure == f"127.0.0.1 port {port} is unreachable: Connection refused"


@pytest.mark.parametrize(
    ("uri", "method", "message"),
    [
        ("http://127.0.0.1/x", "GET", "is not a CoAP scheme"),
        ("coaps://127.0.0.1/x", "GET", "coaps:// needs DTLS credentials"),
        ("coap://127.0.0.1/x", "FETCH", "method 'FETCH' is not one of"),
        ("coap://no-such-host.invalid/x", "GET", "cannot resolve host"),
    ],
)
def test_bad_requests_are_clear_errors(uri, method, message):
    with pytest.raises(RealModeError, match=message):
        asyncio.run(coap_request(uri, method, timeout_s=1))


def test_a_dtls_server_survives_garbage_and_a_hello_flood():
    # coaps: random bytes, records with bad headers, a flood of ClientHellos
    # from one port (each answered statelessly with a HelloVerifyRequest);
    # then a real client completes a handshake and gets its answer.
    from iotbench.proto.dtls.messages import ClientHello, whole_message
    from iotbench.proto.dtls.record import plain_record
    from iotbench.real.coap_security import dtls_client, dtls_server

    async def main():
        task, driver, port = await start_server(security=dtls_server(b"dev1", b"s3cret"))
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                rng = random.Random(7)
                for n in range(500):
                    junk = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 60)))
                    if junk and rng.random() < 0.5:
                        junk = bytes([22, 254, 253]) + junk[3:]
                    s.sendto(junk, ("127.0.0.1", port))
                    if n % 100 == 99:
                        await asyncio.sleep(0.01)  # the server shares this event loop
                for n in range(2000):
                    hello = ClientHello(n.to_bytes(32, "big"), (0xC0A8,))
                    body = whole_message(1, 0, hello.encode()).encode()
                    s.sendto(plain_record(22, 0, n, body), ("127.0.0.1", port))
                    if n % 100 == 99:
                        await asyncio.sleep(0.01)
            await asyncio.sleep(0.5)
            after = await coap_request(
                f"coaps://127.0.0.1:{port}/voltage",
                timeout_s=10,
                security=dtls_client(b"dev1", b"s3cret"),
            )
            return after, driver.stack.layer.stats
        finally:
            await stop_server(task)

    after, stats = asyncio.run(main())
    assert after.ok
    assert stats.hello_verify_requests >= 1000  # the socket may drop some of the flood
    assert stats.datagrams_dropped > 0  # the garbage
    assert stats.handshakes_done == 1 and stats.handshakes_started == 1
