"""The NDN server glue: NdnServerNode's faces and bounds (sans-I/O, a fake clock), the producer,
`iotbench serve ndn` options, and serve_ndn on real loopback sockets with our own codec."""

from __future__ import annotations

import argparse
import asyncio
import errno
import random
import socket
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from iotbench import cli
from iotbench.proto.ndn import Data, LpPacket, Name, make_interest, verify
from iotbench.proto.ndn.framing import TlvFramer
from iotbench.proto.ndn.signing import (
    DigestSha256Verifier,
    EcdsaSha256Verifier,
    HmacSha256Verifier,
    generate_ecdsa_key,
)
from iotbench.proto.ndn.types import ContentType, NackReason
from iotbench.real import ndn as real_ndn
from iotbench.real.ndn import (
    DEFAULT_PREFIX,
    NdnServerConfig,
    NdnServerNode,
    config_from_args,
    load_ecdsa_key,
    serve_ndn,
)
from iotbench.scenarios import UserError

A = ("192.0.2.1", 5000)
B = ("192.0.2.2", 5000)


def interest(name: str, nonce: int = 1, **kw) -> bytes:
    return make_interest(name, nonce=nonce, lifetime_ms=1000, **kw).wire


def node(**kw) -> NdnServerNode:
    return NdnServerNode(NdnServerConfig(**kw), random.Random(7))


def only_datagram(n: NdnServerNode) -> tuple[bytes, tuple]:
    (out,) = n.datagrams_to_send()
    return out


# ---- UDP faces ---------------------------------------------------------------------------------


def test_an_interest_over_udp_gets_signed_data_back_to_its_sender():
    n = node()
    n.receive(0.0, interest(f"{DEFAULT_PREFIX}/voltage/seq=1"), A)
    wire, addr = only_datagram(n)
    data = Data(wire)
    assert addr == A and data.name == Name(f"{DEFAULT_PREFIX}/voltage/seq=1")
    assert data.content.endswith(b" V") and data.freshness_period_ms == 1000
    key = n.producer.key_data
    assert key.content_type == ContentType.KEY
    assert data.signature_info.key_locator.name == key.name
    assert verify(data, EcdsaSha256Verifier(key.content))
    assert verify(key, EcdsaSha256Verifier(key.content))  # self-signed


def test_each_remote_endpoint_gets_its_own_face():
    n = node()
    n.receive(0.0, interest(f"{DEFAULT_PREFIX}/json/1"), A)
    n.receive(0.0, interest(f"{DEFAULT_PREFIX}/json/2"), B)
    n.receive(0.0, interest(f"{DEFAULT_PREFIX}/json/3", nonce=2), A)
    assert [addr for _, addr in n.datagrams_to_send()] == [A, B, A]
    assert n.udp_faces == 2 and n.stats.udp_faces_opened == 2


def test_udp_faces_are_bounded_and_the_longest_idle_goes_first():
    n = node(max_udp_faces=2)
    c = ("192.0.2.3", 1)
    n.receive(0.0, interest(f"{DEFAULT_PREFIX}/o/1"), A)
    n.receive(1.0, interest(f"{DEFAULT_PREFIX}/o/2"), B)
    n.receive(2.0, interest(f"{DEFAULT_PREFIX}/o/3"), A)  # A heard from again
    n.receive(3.0, interest(f"{DEFAULT_PREFIX}/o/4"), c)  # B goes
    assert n.udp_faces == 2 and n.stats.udp_faces_evicted == 1
    assert set(n._udp) == {A, c}
    assert len(n.forwarder.faces) == 3  # two UDP faces and the producer's


def test_idle_udp_faces_close_after_the_timeout():
    n = node(udp_idle_timeout_s=10.0)
    n.receive(0.0, interest(f"{DEFAULT_PREFIX}/o/1"), A)
    n.receive(4.0, interest(f"{DEFAULT_PREFIX}/o/2"), B)
    assert n.next_timer() == pytest.approx(10.0)
    n.handle_timer(10.0)
    assert set(n._udp) == {B} and n.stats.udp_faces_idle_closed == 1
    assert n.next_timer() == pytest.approx(14.0)
    n.handle_timer(14.0)
    assert n.udp_faces == 0 and n.next_timer() is None


def test_oversize_and_malformed_datagrams_are_dropped_without_raising():
    n = node(signer="digest")
    rng = random.Random(1)
    n.receive(0.0, bytes(8801), A)
    for _ in range(500):
        n.receive(0.0, rng.randbytes(rng.randrange(0, 200)), A)
    n.receive(0.0, bytes.fromhex("050a0704080261610a020000"), A)  # 2-byte Nonce
    assert n.stats.oversize_datagrams == 1
    assert n.forwarder.counters.decode_errors > 400
    assert n.forwarder.counters.internal_errors == 0
    n.datagrams_to_send()
    n.receive(1.0, interest(f"{DEFAULT_PREFIX}/voltage/after"), A)
    assert Data(only_datagram(n)[0]).name == Name(f"{DEFAULT_PREFIX}/voltage/after")


def test_other_prefixes_get_a_nack_in_an_lp_packet():
    n = node()
    n.receive(0.0, interest("/elsewhere/x"), A)
    packet = LpPacket.decode(only_datagram(n)[0])
    assert packet.nack == NackReason.NO_ROUTE


# ---- TCP faces --------------------------------------------------------------------------------


def test_tcp_stream_in_pieces_and_answers_on_the_same_connection():
    n = node(signer="digest")
    n.connection_made(0.0, 1)
    stream = interest(f"{DEFAULT_PREFIX}/json/a") + interest(f"{DEFAULT_PREFIX}/o/b", nonce=2)
    for i in range(0, len(stream), 5):
        n.receive_data(0.0, 1, stream[i : i + 5])
    out = n.data_to_send()
    assert [conn for conn, _ in out] == [1, 1]
    assert [Data(w).name.to_uri() for _, w in out] == [
        f"{DEFAULT_PREFIX}/json/a",
        f"{DEFAULT_PREFIX}/o/b",
    ]
    assert all(verify(Data(w), DigestSha256Verifier()) for _, w in out)


def test_lp_packets_are_unwrapped_on_tcp():
    n = node(signer="digest")
    n.connection_made(0.0, 1)
    n.receive_data(0.0, 1, LpPacket(fragment=interest(f"{DEFAULT_PREFIX}/o/lp")).encode())
    n.receive_data(0.0, 1, LpPacket().encode())  # IDLE
    ((conn, wire),) = n.data_to_send()
    assert Data(wire).name.to_uri() == f"{DEFAULT_PREFIX}/o/lp"
    assert n.forwarder.counters.lp_idle == 1


def test_a_framing_error_closes_only_that_connection():
    n = node(signer="digest")
    n.connection_made(0.0, 1)
    n.connection_made(0.0, 2)
    n.receive_data(0.0, 1, bytes.fromhex("05fd2261"))  # 8801 bytes announced
    assert n.connections_to_close() == [1] and n.tcp_faces == 1
    assert n.stats.tcp_framing_errors == 1
    n.receive_data(0.0, 1, interest(f"{DEFAULT_PREFIX}/o/x"))  # ignored: closed
    n.receive_data(0.0, 2, interest(f"{DEFAULT_PREFIX}/o/y"))
    assert [conn for conn, _ in n.data_to_send()] == [2]


def test_tcp_connections_are_bounded_and_lost_ones_forgotten():
    n = node(max_tcp_faces=2)
    for conn in (1, 2, 3):
        n.connection_made(0.0, conn)
    assert n.connections_to_close() == [3] and n.stats.tcp_refused == 1
    n.connection_lost(0.0, 1)
    n.connection_lost(0.0, 3)  # the refused one: nothing to forget
    assert n.tcp_faces == 1 and len(n.forwarder.faces) == 2


def test_output_for_the_other_transport_wakes_the_drivers():
    n = node(signer="digest")
    woken = []
    n.wakeup = lambda: woken.append(True)
    n.connection_made(0.0, 1)
    assert woken == []
    n.receive_data(0.0, 1, interest(f"{DEFAULT_PREFIX}/o/x"))
    assert woken == [True]


# ---- the producer --------------------------------------------------------------------------------


def test_producer_answers_unknown_names_with_an_application_nack():
    n = node(signer="digest")
    for name in (f"{DEFAULT_PREFIX}", f"{DEFAULT_PREFIX}/nothing", f"{DEFAULT_PREFIX}/7=voltage"):
        n.receive(0.0, interest(name), A)
        data = Data(only_datagram(n)[0])
        assert data.name == Name(name) and data.content_type == ContentType.NACK
        assert data.content == b""
    assert n.producer.stats.nacks == 3


def test_producer_serves_its_key_and_ignores_implicit_digest_names():
    n = node()
    key = n.producer.key_data
    n.receive(0.0, interest(key.name.to_uri()), A)
    assert Data(only_datagram(n)[0]) == key
    n.receive(0.0, interest(f"{DEFAULT_PREFIX}/KEY", can_be_prefix=True, nonce=2), A)
    assert Data(only_datagram(n)[0]) == key
    n.receive(0.0, interest(f"{DEFAULT_PREFIX}/o/sha256digest={'00' * 32}"), A)
    assert n.datagrams_to_send() == [] and n.producer.stats.unanswerable == 1


def test_hmac_signer_object_size_and_freshness():
    n = node(signer="hmac", hmac_key=b"k", object_size_bytes=3000, freshness_ms=0)
    n.receive(0.0, interest("/iotbench/sensor/o/1"), A)
    data = Data(only_datagram(n)[0])
    assert len(data.content) == 3000 and data.freshness_period_ms == 0
    assert data.signature_info.key_locator.name == Name("/iotbench/sensor/KEY")
    assert verify(data, HmacSha256Verifier(b"k")) and not verify(data, HmacSha256Verifier(b"x"))


def test_server_config_rejects_bad_values():
    with pytest.raises(ValueError):
        NdnServerConfig(signer="rsa")
    with pytest.raises(ValueError):
        NdnServerConfig(signer="hmac")
    with pytest.raises(ValueError):
        NdnServerConfig(object_size_bytes=9000)


# ---- options ---------------------------------------------------------------------------------------


def options(**kw) -> argparse.Namespace:
    base = dict(
        prefix=None, signer=None, hmac_key=None, ecdsa_key=None, freshness=None, object_size=100
    )
    return argparse.Namespace(**(base | kw))


def test_options_to_config():
    config = config_from_args(options(prefix="ndn:/lab/s1/", hmac_key="pw", freshness=250))
    assert config.prefix == "/lab/s1" and config.signer == "hmac" and config.hmac_key == b"pw"
    assert config.freshness_ms == 250
    assert config_from_args(options()).signer == "ecdsa"


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (dict(prefix="/a//b"), "--prefix '/a//b' is not an NDN name"),
        (dict(signer="hmac"), "--signer hmac needs --hmac-key"),
        (dict(signer="digest", hmac_key="k"), "--hmac-key is for --signer hmac"),
        (dict(signer="hmac", hmac_key="k", ecdsa_key=Path("k.pem")), "--ecdsa-key is for"),
        (dict(object_size=8001), "--object-size must be at most 8000"),
    ],
)
def test_bad_options_are_user_errors(kw, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        config_from_args(options(**kw))


def test_ecdsa_keys_from_pem_and_der(tmp_path):
    key = generate_ecdsa_key(random.Random(3))
    pem = tmp_path / "k.pem"
    der = tmp_path / "k.der"
    pkcs8 = serialization.PrivateFormat.PKCS8
    none = serialization.NoEncryption()
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, pkcs8, none))
    der.write_bytes(key.private_bytes(serialization.Encoding.DER, pkcs8, none))
    for path in (pem, der):
        assert load_ecdsa_key(path).private_numbers() == key.private_numbers()
    other = tmp_path / "p384.pem"
    p384 = ec.generate_private_key(ec.SECP384R1())
    other.write_bytes(p384.private_bytes(serialization.Encoding.PEM, pkcs8, none))
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"not a key")
    with pytest.raises(UserError, match="not a P-256"):
        load_ecdsa_key(other)
    with pytest.raises(UserError, match="not an unencrypted private key"):
        load_ecdsa_key(garbage)
    with pytest.raises(UserError, match="cannot read"):
        load_ecdsa_key(tmp_path / "missing.pem")
    config = config_from_args(options(ecdsa_key=pem))
    signer_key = NdnServerNode(config, random.Random(1)).producer.signer.private_key
    assert signer_key.private_numbers() == key.private_numbers()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "http", "--prefix", "/x"], "--prefix is an option of serve ndn"),
        (["serve", "coap", "--freshness", "5"], "--freshness is an option of serve ndn"),
        (["serve", "ndn", "--signer", "hmac"], "--signer hmac needs --hmac-key"),
    ],
)
def test_serve_option_errors_exit_2_with_one_line(capsys, argv, message):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


# ---- on real sockets --------------------------------------------------------------------------------


def test_serve_ndn_on_loopback_udp_and_tcp_on_one_port():
    async def main():
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        config = NdnServerConfig(signer="digest")
        task = asyncio.create_task(serve_ndn(config, "127.0.0.1", 0, on_ready=ready.set_result))
        server = await asyncio.wait_for(ready, 10)
        loop = asyncio.get_running_loop()
        try:
            # UDP
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.setblocking(False)
                await loop.sock_connect(s, ("127.0.0.1", server.port))
                await loop.sock_sendall(s, interest(f"{DEFAULT_PREFIX}/voltage/udp"))
                udp = await asyncio.wait_for(loop.sock_recv(s, 9000), 10)
            # TCP, same port number
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(interest(f"{DEFAULT_PREFIX}/json/tcp"))
            framer = TlvFramer()
            tcp = []
            while not tcp:
                chunk = await asyncio.wait_for(reader.read(9000), 10)
                assert chunk, "the server closed the connection"
                tcp = framer.feed(chunk)
            writer.close()
            return udp, tcp[0], server
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    udp, tcp, server = asyncio.run(main())
    assert Data(udp).name.to_uri() == f"{DEFAULT_PREFIX}/voltage/udp"
    assert Data(tcp).name.to_uri() == f"{DEFAULT_PREFIX}/json/tcp"
    assert server.node.stats.udp_faces_opened == 1 and server.node.stats.tcp_faces_opened == 1


def test_port_0_picks_again_when_tcp_cannot_have_the_udp_port(monkeypatch):
    # Another program may hold for TCP the number UDP was given; with port 0 the
    # server takes another one instead of failing (or a test failing by chance).
    start = real_ndn.start_stream_server
    tried = []

    async def taken_once(node, host, port):
        tried.append(port)
        if len(tried) == 1:
            raise OSError(errno.EADDRINUSE, "address already in use")
        return await start(node, host, port)

    monkeypatch.setattr(real_ndn, "start_stream_server", taken_once)

    async def main():
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        config = NdnServerConfig(signer="digest")
        task = asyncio.create_task(serve_ndn(config, "127.0.0.1", 0, on_ready=ready.set_result))
        server = await asyncio.wait_for(ready, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return server

    server = asyncio.run(main())
    assert len(tried) == 2 and server.port == tried[1]
    # A port the user named is not changed: the error is theirs to see.
    tried.clear()

    async def named():
        await serve_ndn(NdnServerConfig(signer="digest"), "127.0.0.1", free_udp_port())

    with pytest.raises(OSError):
        asyncio.run(named())
    assert len(tried) == 1


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
