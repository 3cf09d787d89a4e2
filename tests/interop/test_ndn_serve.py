"""python-ndn's NDNApp (an NDN consumer we did not write) against `iotbench serve ndn`.

The server runs as a subprocess, started from its command line; python-ndn
connects to its forwarder the way it connects to NFD, with a TCP face or a
UDP face, expresses Interests and verifies the Data it gets: ECDSA with the
key the KeyLocator names (fetched over NDN, checked against the key the
server prints), HMAC with the shared key, DigestSha256. Then hostile input
(malformed packets on both transports, floods of Interests from many UDP
endpoints and TCP connections), after which the server still answers.
python-ndn is a test dependency, imported directly: a missing package fails
these tests.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import socket
from collections.abc import Awaitable, Callable

import pytest
from Cryptodome.PublicKey import ECC
from ndn.app import NDNApp
from ndn.encoding import ContentType, Name, SignatureType, parse_data
from ndn.security import KeychainDigest
from ndn.security.validator.known_key_validator import verify_ecdsa, verify_hmac
from ndn.transport.stream_face import TcpFace
from ndn.transport.udp_face import UdpFace
from ndn.types import InterestNack, ValidationFailure

from iotbench.proto.ndn import Data, make_interest
from iotbench.proto.ndn import Name as OurName
from iotbench.proto.ndn.framing import TlvFramer

pytestmark = pytest.mark.interop

PREFIX = "/iotbench/sensor"
TRANSPORTS = ["tcp", "udp"]


def consume(port: int, transport: str, work: Callable[[NDNApp], Awaitable[object]]) -> object:
    """Run `work(app)` with a python-ndn NDNApp whose face goes to our forwarder."""
    face = TcpFace("127.0.0.1", port) if transport == "tcp" else UdpFace("127.0.0.1", port)
    app = NDNApp(face=face, keychain=KeychainDigest())
    box: dict[str, object] = {}

    async def after_start() -> None:
        try:
            box["result"] = await work(app)
        finally:
            app.shutdown()

    async def main() -> None:
        await asyncio.wait_for(app.main_loop(after_start()), 60)

    asyncio.run(main())
    return box["result"]


class KeyFromLocator:
    """A python-ndn validator: fetch the public key the KeyLocator names (once), verify ECDSA."""

    def __init__(self, app: NDNApp) -> None:
        self.app = app
        self.keys: dict[str, bytes] = {}

    async def __call__(self, name, sig) -> bool:
        info = sig.signature_info
        if info is None or info.signature_type != SignatureType.SHA256_WITH_ECDSA:
            return False
        key_name = Name.to_str(info.key_locator.name)
        if key_name not in self.keys:
            self.keys[key_name] = await self._fetch_key(key_name)
        return verify_ecdsa(ECC.import_key(self.keys[key_name]), sig)

    async def _fetch_key(self, key_name: str) -> bytes:
        async def self_signed(_name, sig) -> bool:
            return True  # checked below, with the key the Data carries

        _, meta, content, raw = await self.app.express_interest(
            key_name, validator=self_signed, need_raw_packet=True, lifetime=4000
        )
        assert meta.content_type == ContentType.KEY
        assert verify_ecdsa(ECC.import_key(bytes(content)), parse_data(raw)[3])
        return bytes(content)


def check_reading(resource: str, content: bytes) -> None:
    if resource == "voltage":
        assert re.fullmatch(rb"\d+\.\d V", content), content
    elif resource == "json":
        reading = json.loads(content)
        assert set(reading) == {"id", "val"}
    else:
        assert len(content) == 100


async def fetch_readings(app: NDNApp, validator, count: int = 3) -> list[tuple[str, bytes]]:
    """Several readings of every resource, each Data verified by `validator`."""
    got = []
    for resource in ("voltage", "json", "o"):
        for seq in range(count):
            asked = f"{PREFIX}/{resource}/seq={seq}"
            name, meta, content = await app.express_interest(
                asked, must_be_fresh=True, lifetime=4000, validator=validator
            )
            assert Name.to_str(name) == asked
            assert meta.freshness_period == 1000
            check_reading(resource, bytes(content))
            got.append((asked, bytes(content)))
    return got


# ---- fetching -----------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_ndn_fetches_ecdsa_signed_readings(iotbench_ndn_server, transport):
    server = iotbench_ndn_server()

    async def work(app: NDNApp):
        validator = KeyFromLocator(app)
        readings = await fetch_readings(app, validator)
        return readings, validator.keys

    readings, keys = consume(server.port, transport, work)
    assert len(readings) == 9
    # The key fetched over NDN is the one the server announced.
    ((key_name, der),) = keys.items()
    assert any(key_name in line for line in server.banner)
    assert any(der.hex() in line for line in server.banner)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_ndn_verifies_hmac_and_rejects_the_wrong_key(iotbench_ndn_server, transport):
    server = iotbench_ndn_server("--signer", "hmac", "--hmac-key", "s3cret", "--freshness", "1000")

    def with_key(key: bytes):
        async def validator(_name, sig) -> bool:
            return verify_hmac(key, sig)

        return validator

    async def work(app: NDNApp):
        readings = await fetch_readings(app, with_key(b"s3cret"), count=2)
        with pytest.raises(ValidationFailure):
            await app.express_interest(
                f"{PREFIX}/voltage/other", lifetime=4000, validator=with_key(b"wrong")
            )
        return readings

    assert len(consume(server.port, transport, work)) == 6


def test_python_ndn_checks_digest_signatures_with_its_default_validator(iotbench_ndn_server):
    server = iotbench_ndn_server(
        "--signer", "digest", "--prefix", "/lab/s1", "--object-size", "3000"
    )

    async def work(app: NDNApp):
        _, _, content = await app.express_interest("/lab/s1/o/1", lifetime=4000)
        return bytes(content)

    assert len(consume(server.port, "tcp", work)) == 3000


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unknown_names_get_an_application_nack_and_other_prefixes_a_network_nack(
    iotbench_ndn_server, transport
):
    server = iotbench_ndn_server("--signer", "digest")

    async def work(app: NDNApp):
        name, meta, content = await app.express_interest(f"{PREFIX}/nothing/here", lifetime=4000)
        with pytest.raises(InterestNack) as nack:
            await app.express_interest("/not/served", lifetime=4000)
        return Name.to_str(name), meta.content_type, bytes(content), nack.value.reason

    assert consume(server.port, transport, work) == (
        f"{PREFIX}/nothing/here",
        ContentType.NACK,
        b"",
        150,  # NoRoute
    )


# ---- hostile input ------------------------------------------------------------------------------

MALFORMED = [
    b"",
    b"\x00",
    b"\x05",  # truncated header
    b"\x05\x10\x07\x02\x08\x00",  # length beyond the datagram
    bytes.fromhex("0505070308016100"),  # trailing byte inside the Name
    bytes.fromhex("050a0704080261610a020000"),  # Nonce of 2 bytes
    bytes.fromhex("0603070100"),  # Data without signature
    bytes.fromhex("640a5008ff0101"),  # LpPacket with a broken fragment
    bytes.fromhex("6406520100500105"),  # an NDNLPv2 fragment (not supported)
    bytes.fromhex("fd0001"),  # 3-byte TLV-TYPE, not a packet type
    bytes.fromhex("800001000505"),  # looks like an S5 fragment
    bytes(9000),  # over NFD's packet size limit
]


def interest_wire(name: str, nonce: int) -> bytes:
    return make_interest(name, nonce=nonce, lifetime_ms=1000).wire


def rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def flood_udp(port: int, rng: random.Random) -> None:
    target = ("127.0.0.1", port)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for packet in MALFORMED:
            s.sendto(packet, target)
        for _ in range(2000):
            s.sendto(rng.randbytes(rng.randrange(1, 300)), target)
        for i in range(3000):  # valid Interests, answers never read
            name = f"{PREFIX}/voltage/flood/{i}" if i % 2 else f"/elsewhere/{i}"
            s.sendto(interest_wire(name, i), target)
    # More remote endpoints than the server keeps faces for (1024), one at a time (waiting
    # for each answer, so that the socket buffers drop none of them).
    for i in range(1100):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(2)
            s.sendto(interest_wire(f"{PREFIX}/json/endpoint/{i}", i), target)
            try:
                s.recv(8800)
            except TimeoutError:
                pass


def hostile_tcp(port: int) -> dict[str, bool]:
    """Connections the server must close, and one that keeps working."""
    closed = {}
    for label, payload in [
        ("type 0", b"\x00\x00"),
        ("too large", bytes.fromhex("05fd2261")),  # announces 8801 bytes
        ("not shortest", bytes.fromhex("05fd0001")),
    ]:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.sendall(payload)
            try:
                closed[label] = c.recv(100) == b""
            except ConnectionResetError:
                closed[label] = True
    # Malformed packets inside good framing do not close the face; a valid Interest
    # sent a byte at a time still gets its Data back on the same connection.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(bytes.fromhex("050a0704080261610a020000"))  # Nonce of 2 bytes
        c.sendall(bytes.fromhex("0603070100"))  # Data without signature
        for byte in interest_wire(f"{PREFIX}/voltage/bytewise", 7):
            c.sendall(bytes([byte]))
        framer = TlvFramer()
        packets = []
        while not packets and (chunk := c.recv(8800)):
            packets = framer.feed(chunk)
        closed["bytewise answered"] = bool(packets) and Data(packets[0]).name == OurName(
            f"{PREFIX}/voltage/bytewise"
        )
    # A flood of Interests on many connections, none of them reading.
    conns = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(40)]
    for i, c in enumerate(conns):
        c.sendall(b"".join(interest_wire(f"{PREFIX}/o/tcp/{i}/{j}", j) for j in range(50)))
    for c in conns:
        c.close()
    return closed


def test_server_survives_malformed_input_and_floods(iotbench_ndn_server):
    server = iotbench_ndn_server("--signer", "hmac", "--hmac-key", "k")
    rng = random.Random(6363)
    before = rss_kib(server.proc.pid)
    flood_udp(server.port, rng)
    assert hostile_tcp(server.port) == {
        "type 0": True,
        "too large": True,
        "not shortest": True,
        "bytewise answered": True,
    }

    async def work(app: NDNApp):
        async def hmac_ok(_name, sig) -> bool:
            return verify_hmac(b"k", sig)

        return await fetch_readings(app, hmac_ok, count=2)

    for transport in TRANSPORTS:
        assert len(consume(server.port, transport, work)) == 6
    assert server.proc.poll() is None
    after = rss_kib(server.proc.pid)
    if before is not None and after is not None:
        # Bounded tables: the flood must not have grown the server by much.
        assert after - before < 64 * 1024, (before, after)
    # The server saw the hostile input (UDP may drop some under load): its closing summary.
    summary = server.stop().strip().splitlines()[-2]
    counts = {
        key: int(value)
        for value, key in re.findall(
            r"(\d+) (malformed|closed for newer|closed on framing)", summary
        )
    }
    assert counts["malformed"] > 0 and counts["closed on framing"] == 3, summary
    assert counts["closed for newer"] > 0, summary
