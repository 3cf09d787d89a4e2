"""The MQTT-SN gateway on real loopback sockets, with our broker behind it, against
issue 39's attacks (items 3 and 4), each bounded: CONNECTs with Duration 0 from
addresses that never read (as spoofed ones would not), and topic names of 60 kB.
Legitimate clients must still be served. Also the bounds `serve mqttsn-gateway`
sets by default."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import pytest

from iotbench.cli import build_parser
from iotbench.proto.mqttsn.codec import ConnAck, Connect, RegAck, Register, ReturnCode
from iotbench.proto.mqttsn.codec import decode as sn_decode
from iotbench.proto.mqttsn.codec import encode as sn_encode
from iotbench.proto.mqttsn.events import ClientDisconnected
from iotbench.proto.mqttsn.params import MqttSnGatewayParams
from iotbench.real.mqtt import serve_mqtt
from iotbench.real.mqttsn import gateway_address, mqttsn_publish, serve_mqttsn_gateway
from iotbench.real.mqttsn_cli import describe_bounds, gateway_params
from iotbench.scenarios import UserError

WAIT_S = 10


async def start(coroutine_fn, **kwargs):
    ready: asyncio.Future = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(coroutine_fn(on_ready=ready.set_result, **kwargs))
    driver = await asyncio.wait_for(ready, WAIT_S)
    return task, driver


@contextlib.asynccontextmanager
async def broker_and_gateway(params: MqttSnGatewayParams, on_event=None):
    """Our broker and our gateway on free loopback ports: (gateway driver, its port)."""
    broker_task, broker = await start(serve_mqtt, host="127.0.0.1", port=0)
    broker_port = broker.server.sockets[0].getsockname()[1]
    gw_task, gw = await start(
        serve_mqttsn_gateway,
        host="127.0.0.1",
        port=0,
        broker_host="127.0.0.1",
        broker_port=broker_port,
        params=params,
        on_event=on_event,
    )
    try:
        yield gw, gateway_address(gw)[1]
    finally:
        for task in (gw_task, broker_task):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def until(condition, timeout_s: float = WAIT_S) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_duration_0_flood_leaves_room_for_legitimate_clients_and_goes_away():
    """100 CONNECTs with Duration 0 from sockets that never read, against 40 slots with
    a share of 10 for new clients: the flood holds at most 10 (and as many broker
    connections), a publisher is served meanwhile, and the rest are gone once silent
    for the idle timeout."""
    params = MqttSnGatewayParams(max_clients=40, max_new_clients=10, idle_timeout_s=1.0)
    gone = []

    def on_event(event) -> None:
        if isinstance(event, ClientDisconnected):
            gone.append((event.client_id, event.reason))

    async def main():
        async with broker_and_gateway(params, on_event) as (gw, port):
            stack = gw.stack
            flood = []
            try:
                for i in range(100):
                    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    flood.append(s)
                    s.sendto(sn_encode(Connect(f"spoof-{i}", 0)), ("127.0.0.1", port))
                await until(lambda: stack.stats.evicted == 90)
                assert stack.clients == 10
                pub = await mqttsn_publish(
                    "127.0.0.1", port, "t/legit", b"through", qos=1, timeout_s=WAIT_S
                )
                assert pub.ok, pub.failure
                await until(lambda: stack.clients == 0)  # the idle timeout
                await until(lambda: not gw._streams)  # every broker connection closed
            finally:
                for s in flood:
                    s.close()

    asyncio.run(main())
    spoofed = [reason for client_id, reason in gone if client_id.startswith("spoof")]
    # 90 made room for the flood's last 10, one for the publisher; 9 timed out.
    assert spoofed.count("evicted") == 91 and spoofed.count("idle-timeout") == 9
    assert [reason for client_id, reason in gone if client_id.startswith("iotbench")] == [
        "disconnect"
    ]


async def raw_exchange(sock: socket.socket, port: int, message) -> object:
    loop = asyncio.get_running_loop()
    await loop.sock_sendto(sock, sn_encode(message), ("127.0.0.1", port))
    data = await asyncio.wait_for(loop.sock_recv(sock, 65535), WAIT_S)
    return sn_decode(data)


def test_60kB_topic_names_are_refused_and_a_table_holds_its_bytes():
    """REGISTER of a 60 kB name gets "not supported" (names up to 256 octets), names
    that fit get ids until the client's 600 octets are used ("congestion"), and
    another client publishes as if nothing happened."""
    params = MqttSnGatewayParams(max_topic_name_bytes=256, max_topic_bytes_per_client=600)

    async def main():
        async with broker_and_gateway(params) as (gw, port):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.setblocking(False)
                sock.bind(("127.0.0.1", 0))
                assert await raw_exchange(sock, port, Connect("big", 60)) == ConnAck(0)
                huge = "a/" + "x" * 60_000
                fits = ["b/" + str(i) * 254 for i in range(3)]
                acks = [await raw_exchange(sock, port, Register(0, 1, huge))]
                for i, name in enumerate(fits):
                    acks.append(await raw_exchange(sock, port, Register(0, 2 + i, name)))
            assert acks == [
                RegAck(0, 1, ReturnCode.NOT_SUPPORTED),
                RegAck(1, 2, ReturnCode.ACCEPTED),
                RegAck(2, 3, ReturnCode.ACCEPTED),
                RegAck(0, 4, ReturnCode.CONGESTION),
            ]
            assert gw.stack.stats.long_topics == 1
            pub = await mqttsn_publish(
                "127.0.0.1", port, "t/legit", b"through", qos=1, timeout_s=WAIT_S
            )
            assert pub.ok, pub.failure

    asyncio.run(main())


def test_serve_mqttsn_gateway_bounds_by_default():
    """The real server's defaults (the sans-I/O gateway leaves these off), and the
    options that change them; 0 turns the idle timeout and the new clients' share off."""
    parse = build_parser().parse_args
    params = gateway_params(parse(["serve", "mqttsn-gateway"]))
    assert (params.max_clients, params.max_new_clients, params.idle_timeout_s) == (1000, 250, 600)
    assert (params.max_topic_name_bytes, params.max_topic_bytes_per_client) == (256, 65536)
    assert "at most 1000 clients, up to 250 of them new" in describe_bounds(params)
    args = ["--max-clients", "40", "--max-topic-name-bytes", "65535"]
    params = gateway_params(parse(["serve", "mqttsn-gateway", *args]))
    assert (params.max_clients, params.max_new_clients, params.max_topic_name_bytes) == (
        40,
        10,
        65535,
    )
    args = ["--idle-timeout", "0", "--max-new-clients", "0", "--max-topic-bytes-per-client", "9"]
    params = gateway_params(parse(["serve", "mqttsn-gateway", *args]))
    assert (params.idle_timeout_s, params.max_new_clients) == (None, None)
    assert params.max_topic_bytes_per_client == 9
    sans_io = MqttSnGatewayParams()
    assert (sans_io.idle_timeout_s, sans_io.max_new_clients) == (None, None)
    assert sans_io.max_topic_name_bytes == 65535


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-topic-name-bytes", "65536"], "more than MQTT's 65535"),
        (["--idle-timeout", "-1"], "must be a finite number > 0"),
        (["--max-clients", "0"], "must be >= 1"),
    ],
)
def test_bad_bounds_are_usage_errors(capsys, args, message):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "mqttsn-gateway", *args])
    assert message in capsys.readouterr().err


def test_the_bounds_are_options_of_the_gateway_only(capsys):
    from iotbench import cli

    assert cli.main(["serve", "mqtt", "--idle-timeout", "5"]) == 2
    assert "--idle-timeout is an option of serve mqttsn-gateway" in capsys.readouterr().err
    with pytest.raises(UserError):
        gateway_params(
            build_parser().parse_args(["serve", "mqttsn-gateway", "--predefined-topic", "0=a"])
        )
