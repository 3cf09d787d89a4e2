"""QUIC: a server endpoint (proto/quic/endpoint.py, aioquic underneath) fed a real
client's datagrams (lost, duplicated, reordered, mutated) and made-up ones, among
them Initial packets with valid packet protection around random and mutated
frames, so that aioquic's frame parser and TLS are reached (`quic-server`).

aioquic draws connection IDs, TLS randoms and key shares from the operating
system, dates session tickets by the wall clock, and orders a connection's streams
through a set of objects (so by their memory addresses); during a case they come
from the case's generator, a clock standing still and the stream IDs (`_seeded`),
so that a case replays exactly.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import random
import types

import aioquic.quic.connection
import aioquic.quic.packet
import aioquic.tls
from aioquic.buffer import Buffer, encode_uint_var
from aioquic.quic.crypto import CryptoPair
from aioquic.quic.packet import QuicPacketType, pull_quic_header
from aioquic.quic.stream import QuicStream
from cryptography.hazmat.primitives.asymmetric import ec, x448, x25519

from fuzz_targets.common import StackCase, mutate, randbytes
from iotbench.proto.quic.certs import certificate_pem, make_certificate
from iotbench.proto.quic.endpoint import MAX_TICKETS, SMALLEST_INITIAL, QuicClient, QuicServer
from iotbench.proto.quic.params import QuicParams

# aioquic logs every connection a peer's bytes close; the checks say what matters.
logging.getLogger("quic").setLevel(logging.CRITICAL)

SERVER = ("10.0.0.1", 4433)
CLIENTS = [("10.0.0.2", 50000), ("10.0.0.2", 50001), ("10.0.0.9", 50000)]
SERVER_NAME = "sensor.iotbench"
VERSION_1, VERSION_2 = 0x00000001, 0x6B3343CF

# ---- aioquic's randomness from the case's generator ---------------------------------------


class _Shim(types.ModuleType):
    """A module that is `real` but for the attributes given."""

    def __init__(self, real: types.ModuleType, **overrides: object) -> None:
        super().__init__(real.__name__)
        self._real = real
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)


_NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


@contextlib.contextmanager
def _seeded(rng: random.Random):
    """aioquic's os.urandom and key generation drawing from `rng`, and its wall clock
    standing still, for the duration."""

    def urandom(n: int) -> bytes:
        return randbytes(rng, n)

    os_shim = _Shim(aioquic.tls.os, urandom=urandom)
    x25519_shim = _Shim(
        x25519,
        X25519PrivateKey=types.SimpleNamespace(
            generate=lambda: x25519.X25519PrivateKey.from_private_bytes(urandom(32))
        ),
    )
    x448_shim = _Shim(
        x448,
        X448PrivateKey=types.SimpleNamespace(
            generate=lambda: x448.X448PrivateKey.from_private_bytes(urandom(56))
        ),
    )
    ec_shim = _Shim(
        ec,
        generate_private_key=lambda curve, *a: ec.derive_private_key(
            rng.randrange(1, 1 << 200), curve
        ),
    )
    patches = [
        (aioquic.tls, "utcnow", lambda: _NOW),  # (ticket ages, certificate validity)
        # A connection puts the streams it sent on back in its queue from a set, in an
        # order that follows the objects' addresses; by stream ID it is the same order
        # in every run.
        (QuicStream, "__hash__", lambda stream: hash(stream.stream_id)),
        (aioquic.tls, "os", os_shim),
        (aioquic.tls, "x25519", x25519_shim),
        (aioquic.tls, "x448", x448_shim),
        (aioquic.tls, "ec", ec_shim),
        (aioquic.quic.connection, "os", os_shim),
        (aioquic.quic.packet, "os", os_shim),
    ]
    saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
    for module, name, value in patches:
        setattr(module, name, value)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


# ---- Initial packets ---------------------------------------------------------------------

_CERT = None


def _certificate():
    global _CERT
    if _CERT is None:
        _CERT = make_certificate(0, SERVER_NAME)
    return _CERT


_HELLO: bytes | None = None


def _client_hello() -> bytes:
    """The CRYPTO data of a real client's first Initial (its TLS ClientHello)."""
    global _HELLO
    if _HELLO is None:
        with _seeded(random.Random("quic-client-hello")):
            client = QuicClient(QuicParams(), certificate_pem(_certificate()[0]), SERVER_NAME)
            client.request(0.0, SERVER, b"/t")
            datagram = client.datagrams_to_send()[0][0]
        _HELLO = b"".join(data for _, data in _frames_of_initial(datagram, client=True))
    return _HELLO


def _frames_of_initial(datagram: bytes, client: bool) -> list[tuple[int, bytes]]:
    """The CRYPTO frames (offset, data) of the first Initial packet in `datagram`."""
    buf = Buffer(data=datagram)
    header = pull_quic_header(buf, host_cid_length=8)
    crypto = CryptoPair()
    crypto.setup_initial(header.destination_cid, is_client=not client, version=header.version)
    _, payload, _ = crypto.decrypt_packet(datagram[: header.packet_length], buf.tell(), 0)
    frames = []
    p = Buffer(data=payload)
    while not p.eof():
        kind = p.pull_uint_var()
        if kind == 0x06:
            offset = p.pull_uint_var()
            frames.append((offset, p.pull_bytes(p.pull_uint_var())))
        elif kind in (0x00, 0x01):
            continue
        else:
            break
    return frames


def _frame(rng: random.Random, hello: bytes) -> bytes:
    """One frame of an Initial packet: mostly those an Initial may carry, sometimes
    others (a protocol violation there), or random bytes."""
    v = encode_uint_var
    r = rng.random()
    if r < 0.45:
        offset = rng.choice((0, 0, 0, rng.randrange(len(hello)), 1 << 20))
        data = hello[offset:] if offset < len(hello) else randbytes(rng, 10)
        if rng.random() < 0.5:
            data = mutate(data, rng)
        return v(0x06) + v(offset) + v(len(data)) + data
    if r < 0.55:
        return v(0x01)  # PING
    if r < 0.65:
        largest = rng.choice((0, 1, 5, 1 << 20))
        ranges = rng.choice((0, 0, 1, 3))
        body = v(largest) + v(rng.randrange(100)) + v(ranges) + v(rng.randrange(largest + 2))
        for _ in range(ranges):
            body += v(rng.randrange(4)) + v(rng.randrange(4))
        return v(rng.choice((0x02, 0x03))) + body + (v(1) * 3 if rng.random() < 0.2 else b"")
    if r < 0.72:
        reason = randbytes(rng, rng.randrange(10))
        return v(0x1C) + v(rng.randrange(0x20)) + v(rng.randrange(0x20)) + v(len(reason)) + reason
    if r < 0.85:
        kind = rng.choice((0x04, 0x05, 0x07, 0x08, 0x0F, 0x10, 0x18, 0x1A, 0x1E, 0x30, 0x40))
        return v(kind) + randbytes(rng, rng.randrange(20))
    return randbytes(rng, rng.randrange(1, 30))


def forged_initial(rng: random.Random, dcid: bytes | None = None) -> bytes:
    """A client Initial packet with valid packet protection around random frames."""
    hello = _client_hello()
    version = rng.choice((VERSION_1,) * 8 + (VERSION_2, rng.randrange(1, 1 << 32)))
    dcid = dcid if dcid is not None else randbytes(rng, rng.choice((8, 8, 0, 1, 20)))
    scid = randbytes(rng, rng.choice((8, 0, 20)))
    token = randbytes(rng, rng.choice((0, 0, 0, 16)))
    frames = b"".join(_frame(rng, hello) for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.3:
        frames = mutate(frames, rng)
    pn_len = rng.choice((1, 2, 4))
    pn = rng.choice((0, 0, 1, rng.randrange(1 << (8 * pn_len))))
    size = rng.choice((SMALLEST_INITIAL, SMALLEST_INITIAL, 1300, rng.randrange(40, 1200)))
    overhead = 1 + 4 + 1 + len(dcid) + 1 + len(scid) + 2 + len(token) + 2 + pn_len + 16
    frames += bytes(max(0, size - overhead - len(frames), 20 - len(frames)))  # PADDING
    type_bits = 0 if version == VERSION_1 else 1  # Initial in v1 and in v2 (RFC 9369 3.2)
    first = 0xC0 | (type_bits << 4) | (pn_len - 1)
    header = (
        bytes((first,))
        + version.to_bytes(4, "big")
        + bytes((len(dcid),))
        + dcid
        + bytes((len(scid),))
        + scid
        + encode_uint_var(len(token))
        + token
        + (0x4000 | (pn_len + len(frames) + 16)).to_bytes(2, "big")  # a 2-byte varint
        + pn.to_bytes(pn_len, "big")
    )
    crypto = CryptoPair()
    crypto.setup_initial(dcid, is_client=True, version=version)
    return crypto.encrypt_packet(header, frames, pn)


# ---- the target ----------------------------------------------------------------------------


def _check_server(server: QuicServer, out: list[tuple[bytes, object]]) -> None:
    for data, addr in out:
        assert addr in CLIENTS, f"a datagram to {addr}"
        assert len(data) <= server.configuration.max_datagram_size, f"{len(data)} bytes"
        header = pull_quic_header(Buffer(data=data), host_cid_length=8)
        assert header.packet_type != QuicPacketType.RETRY
    assert server.internal_errors == 0
    live = set(server._connections)
    assert set(server._by_cid.values()) <= live, "a forgotten connection keeps a connection ID"
    assert set(server._timers) <= live and set(server._touched) <= live
    ids = {id(c) for c in live}
    assert all(key[0] in ids for key in server._requests), "a closed connection's request"
    assert len(server._tickets) <= MAX_TICKETS


def run_quic_server_case(case: StackCase, count: int, stats: dict) -> None:
    """A server, and a client making requests to it over a lossy, reordering path;
    each input is one datagram to the server: the client's, a mutated copy, a forged
    Initial, a packet for one of its connection IDs, or random bytes."""
    rng = case.rng
    cert, key = _certificate()
    with _seeded(rng):
        params = QuicParams(
            idle_timeout_s=rng.choice((2.0, 60.0)),
            connection=rng.choice(("per-request", "reuse")),
            zero_rtt=rng.random() < 0.3,
        )
        server = QuicServer(params, cert, key, lambda request: b"21.5 " + request[:20])
        client = QuicClient(params, certificate_pem(cert), SERVER_NAME, strict=False)
        to_server: list[tuple[bytes, tuple]] = []
        history: list[bytes] = []
        now = 0.0
        client.request(now, SERVER, b"/t")
        for _ in range(count):
            for data, _ in client.datagrams_to_send(now):
                to_server.append((data, CLIENTS[0]))
                history = (history + [data])[-6:]
            r = rng.random()
            addr = CLIENTS[0] if rng.random() < 0.9 else rng.choice(CLIENTS)
            if to_server and r < 0.45:
                i = 0 if rng.random() < 0.8 else rng.randrange(len(to_server))
                data, addr = to_server[i] if rng.random() < 0.1 else to_server.pop(i)
            elif history and r < 0.6:
                data = mutate(rng.choice(history), rng)
            elif r < 0.85:
                known = list(server._by_cid) if rng.random() < 0.3 else []
                data = forged_initial(rng, rng.choice(known) if known else None)
                if rng.random() < 0.2:
                    data += forged_initial(rng)  # coalesced
            elif r < 0.92 and server._by_cid:
                cid = rng.choice(list(server._by_cid))  # a short header for a connection
                data = bytes((0x40 | rng.randrange(64),)) + cid + randbytes(rng, 40)
            else:
                data = randbytes(rng, rng.choice((1, 20, 1200)))
            server.receive(now, case.note(f"{addr[0]}:{addr[1]}", data), addr)
            out = server.datagrams_to_send(now)
            _check_server(server, out)
            for datagram, dst in out:
                if dst == CLIENTS[0] and rng.random() < 0.9:
                    client.receive(now, datagram, SERVER)
            if rng.random() < 0.1:
                client.request(now, SERVER, b"/t")
            now += rng.choice((0.0, 0.001, 0.05, 0.3, 1.0, 5.0))
            for stack in (server, client):
                t = stack.next_timer()
                if t is not None and t <= now:
                    stack.handle_timer(now)
            out = server.datagrams_to_send(now)
            _check_server(server, out)
            for datagram, dst in out:
                if dst == CLIENTS[0] and rng.random() < 0.9:
                    client.receive(now, datagram, SERVER)
            client.events()
            server.events()
            stats["inputs"] += 1


STACKS = {"quic-server": run_quic_server_case}
