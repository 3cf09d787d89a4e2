"""NDN on real sockets: the simulator's Forwarder and a sensor producer behind UDP and TCP faces.

    await serve_ndn(NdnServerConfig(prefix="/iotbench/sensor"), "127.0.0.1", 6363)

The node is proto/ndn's Forwarder (PIT, FIB, Content Store, strategies)
with an NdnApp that registers the producer's prefix on a local face. Real
mode adds the faces, made the way NFD makes them on its UDP and TCP
channels, which share one port number:

- UDP: a face per remote endpoint, created by its first datagram; one NDN
  packet per datagram. Such on-demand faces close after `udp_idle_timeout_s`
  without a datagram from their peer (NFD's idle_timeout, 600 s), and at
  most `max_udp_faces` exist: a new peer beyond that closes the face idle
  longest.
- TCP: a face per accepted connection, carrying TLV elements back to back
  (proto/ndn/framing.py). A framing error (an element over 8800 bytes, an
  invalid TLV header) closes the connection, as in NFD; at most
  `max_tcp_faces` connections are served at once.
- NDNLPv2 as NFD uses it on these faces: an arriving packet is an LpPacket
  (unwrapped by the forwarder; an IDLE one is counted) or a bare Interest or
  Data; Interests and Data go out bare, Nacks as LpPackets. NDNLPv2
  fragmentation and its link reliability are not implemented (NFD uses them
  only where a link's MTU requires them), nor PIT tokens.

Memory is bounded wherever a peer could make it grow: faces (above), bytes
buffered per TCP connection (one packet), unread output per TCP connection
(real/stream.py aborts slow readers), datagrams (8800 bytes), and the
forwarder's tables (PIT entries, Content Store bytes, Dead Nonce List). A
flood costs CPU, not memory. Malformed packets are counted and dropped by
the forwarder; nothing a peer sends raises out of the node.

`NdnServerNode` is sans-I/O like every stack here: it has both the interface of a
datagram stack (real/driver.py) and that of a many-connection stream stack
(real/stream.py), so the two existing drivers run the one node.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import random
import sys
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from iotbench.apps.sensors import sensor_set
from iotbench.proto.ndn import (
    Data,
    Forwarder,
    ForwarderConfig,
    Interest,
    Name,
    NdnApp,
    NdnDecodeError,
    make_data,
)
from iotbench.proto.ndn.forwarder import Timer
from iotbench.proto.ndn.framing import MAX_PACKET_BYTES, TlvFramer
from iotbench.proto.ndn.signing import (
    DigestSha256Signer,
    EcdsaSha256Signer,
    HmacSha256Signer,
    Signer,
    generate_ecdsa_key,
    public_key_der,
)
from iotbench.proto.ndn.types import ComponentType, ContentType
from iotbench.real.driver import AsyncDatagramDriver, open_datagram_driver, serve_until_cancelled
from iotbench.real.stream import StreamServerDriver, start_stream_server
from iotbench.scenarios import UserError

DEFAULT_PORT = 6363
DEFAULT_PREFIX = "/iotbench/sensor"
#: With port 0, how many UDP ports to try before one is free for TCP too.
PORT_ATTEMPTS = 10
SIGNERS = ("ecdsa", "hmac", "digest")
#: The largest /o object whose Data still fits NDN's 8800-byte packet limit with room to spare.
MAX_OBJECT_BYTES = 8000
#: A server's tables: bounded, and larger than a constrained node's defaults.
SERVER_FORWARDER = ForwarderConfig(pit_max_entries=4096, cs_max_bytes=1 << 20)


class Reading(Protocol):
    """A sensor of apps/sensors.py: each read() is the next reading's bytes."""

    def read(self) -> bytes: ...


@dataclass(frozen=True)
class NdnServerConfig:
    prefix: str = DEFAULT_PREFIX
    #: "ecdsa" (P-256; `ecdsa_key`, or a new key), "hmac" (`hmac_key`) or "digest".
    signer: str = "ecdsa"
    hmac_key: bytes | None = None
    ecdsa_key: ec.EllipticCurvePrivateKey | None = None
    freshness_ms: int = 1000
    object_size_bytes: int = 100
    max_udp_faces: int = 1024
    max_tcp_faces: int = 256
    udp_idle_timeout_s: float = 600.0
    forwarder: ForwarderConfig = SERVER_FORWARDER

    def __post_init__(self) -> None:
        if self.signer not in SIGNERS:
            raise ValueError(f"signer must be one of {SIGNERS}, got {self.signer!r}")
        if self.signer == "hmac" and not self.hmac_key:
            raise ValueError("an HMAC signer needs a key")
        if not 0 <= self.object_size_bytes <= MAX_OBJECT_BYTES:
            raise ValueError(f"object_size_bytes must be 0..{MAX_OBJECT_BYTES}")


# ---- the producer ------------------------------------------------------------------------


def make_signer(
    config: NdnServerConfig, prefix: Name, rng: random.Random
) -> tuple[Signer, Data | None]:
    """The producer's signer and, for ECDSA, the Data that carries its public key.

    The ECDSA KeyLocator names the key as NDN does, <prefix>/KEY/<key id>
    (8 bytes of SHA-256 of the public key), and the key Data is published
    under that name: a consumer can fetch the key the KeyLocator names.
    """
    if config.signer == "digest":
        return DigestSha256Signer(), None
    if config.signer == "hmac":
        return HmacSha256Signer(config.hmac_key or b"", key_name=prefix.append(b"KEY")), None
    key = config.ecdsa_key or generate_ecdsa_key(rng)
    der = public_key_der(key)
    key_name = prefix.append(b"KEY").append(hashlib.sha256(der).digest()[:8])
    signer = EcdsaSha256Signer(key, key_name=key_name)
    key_data = make_data(
        key_name,
        der,
        signer=signer,
        content_type=ContentType.KEY,
        freshness_period_ms=3_600_000,
    )
    return signer, key_data


@dataclass(slots=True)
class ProducerStats:
    readings: int = 0
    keys: int = 0
    nacks: int = 0
    unanswerable: int = 0


class SensorProducer:
    """Answers Interests under `prefix` with signed Data.

    - <prefix>/<resource>[/...]: a new reading of the resource (voltage,
      json, o: apps/sensors.py), in a Data named as the Interest, with the
      configured FreshnessPeriod;
    - the key name (ECDSA): the public key Data (see make_signer);
    - anything else under the prefix: an application Nack (a Data of
      ContentType NACK without content), so a consumer learns at once that
      there is nothing there;
    - a name ending in an implicit digest asks for one particular Data that
      cannot be made on demand: no answer (the Content Store may have it).
    """

    def __init__(self, app: NdnApp, config: NdnServerConfig, rng: random.Random) -> None:
        self.app = app
        self.prefix = Name(config.prefix)
        self.freshness_ms = config.freshness_ms
        self.signer, self.key_data = make_signer(config, self.prefix, rng)
        # sensor_set's values are the sensors, each with read() -> bytes
        sensors = cast("dict[str, Reading]", sensor_set(rng, config.object_size_bytes))
        self.resources = {path.lstrip("/").encode(): sensor for path, sensor in sensors.items()}
        self.stats = ProducerStats()
        app.register_prefix(self.prefix, self._on_interest)

    @property
    def resource_names(self) -> list[Name]:
        return [self.prefix.append(key) for key in self.resources]

    def _on_interest(self, interest: Interest) -> None:
        name = interest.name
        key_data = self.key_data
        if key_data is not None and interest.matches_data(key_data):
            self.stats.keys += 1
            self.app.put_data(key_data)
            return
        depth = len(self.prefix)
        if len(name) > depth and name[-1].type == ComponentType.IMPLICIT_SHA256_DIGEST:
            self.stats.unanswerable += 1
            return
        sensor = None
        if len(name) > depth and name[depth].type == ComponentType.GENERIC:
            sensor = self.resources.get(name[depth].value)
        if sensor is None:
            self.stats.nacks += 1
            content, content_type = b"", ContentType.NACK
        else:
            self.stats.readings += 1
            content, content_type = sensor.read(), None
        self.app.put_data(
            make_data(
                name,
                content,
                signer=self.signer,
                content_type=content_type,
                freshness_period_ms=self.freshness_ms,
            )
        )


# ---- the node: faces for both transports ----------------------------------------------------


@dataclass(slots=True)
class FaceStats:
    udp_faces_opened: int = 0
    udp_faces_idle_closed: int = 0
    udp_faces_evicted: int = 0
    oversize_datagrams: int = 0
    tcp_faces_opened: int = 0
    tcp_refused: int = 0
    tcp_framing_errors: int = 0


class _UdpFace:
    __slots__ = ("face_id", "last_seen_s")

    def __init__(self, face_id: int, now: float) -> None:
        self.face_id = face_id
        self.last_seen_s = now


class NdnServerNode:
    """A forwarder with the producer, and its faces; driven by a datagram and a stream driver.

    Outputs queue here until a driver takes them. Output for the transport
    that did not deliver the input (a UDP Interest answered on a TCP face)
    would wait for that transport's driver, so after every input with output
    queued, `wakeup()` is called: the caller makes both drivers pump.
    """

    def __init__(self, config: NdnServerConfig, rng: random.Random) -> None:
        self.config = config
        self.forwarder = Forwarder(
            rng, config.forwarder, strict=False
        )  # real sockets: our own errors logged, not raised
        self.producer = SensorProducer(NdnApp.create(self.forwarder), config, rng)
        self.stats = FaceStats()
        self.wakeup: Callable[[], None] | None = None
        # Least recently heard from first.
        self._udp: OrderedDict[tuple, _UdpFace] = OrderedDict()
        self._idle_timer: Timer | None = None
        self._tcp: dict[int, tuple[int, TlvFramer]] = {}
        self._datagrams: list[tuple[bytes, tuple]] = []
        self._stream_out: list[tuple[int, bytes]] = []
        self._to_close: list[int] = []

    @property
    def udp_faces(self) -> int:
        return len(self._udp)

    @property
    def tcp_faces(self) -> int:
        return len(self._tcp)

    # ---- inputs shared by both drivers ------------------------------------------------

    def handle_timer(self, now: float) -> None:
        self.forwarder.handle_timer(now)
        self._after_input()

    def next_timer(self) -> float | None:
        return self.forwarder.next_timer()

    def events(self) -> list:
        return []  # the node reports through counters, not events

    def _after_input(self) -> None:
        if self.wakeup is not None and (self._datagrams or self._stream_out or self._to_close):
            self.wakeup()

    # ---- UDP (the datagram-stack interface) ---------------------------------------------

    def receive(self, now: float, data: bytes, addr: tuple) -> None:
        if len(data) > MAX_PACKET_BYTES:
            self.stats.oversize_datagrams += 1
            return
        self.forwarder.receive(now, self._udp_face(now, addr), data)
        self._after_input()

    def datagrams_to_send(self) -> list[tuple[bytes, tuple]]:
        out, self._datagrams = self._datagrams, []
        return out

    def _udp_face(self, now: float, addr: tuple) -> int:
        face = self._udp.get(addr)
        if face is not None:
            face.last_seen_s = now
            self._udp.move_to_end(addr)
            return face.face_id
        if len(self._udp) >= self.config.max_udp_faces:
            _, oldest = self._udp.popitem(last=False)
            self.forwarder.remove_face(oldest.face_id)
            self.stats.udp_faces_evicted += 1
        face_id = self.forwarder.add_face(
            lambda wire: self._datagrams.append((wire, addr)), s5_fragments=False
        ).face_id
        self._udp[addr] = _UdpFace(face_id, now)
        self.stats.udp_faces_opened += 1
        if self._idle_timer is None:
            self._arm_idle_timer()
        return face_id

    def _arm_idle_timer(self) -> None:
        oldest = next(iter(self._udp.values()), None)
        self._idle_timer = None
        if oldest is not None:
            deadline = oldest.last_seen_s + self.config.udp_idle_timeout_s
            self._idle_timer = self.forwarder.call_at(deadline, self._close_idle_faces)

    def _close_idle_faces(self) -> None:
        expired = self.forwarder.now - self.config.udp_idle_timeout_s
        faces = self._udp
        while faces:
            addr, face = next(iter(faces.items()))
            if face.last_seen_s > expired:
                break
            del faces[addr]
            self.forwarder.remove_face(face.face_id)
            self.stats.udp_faces_idle_closed += 1
        self._arm_idle_timer()

    # ---- TCP (the many-connection stream-stack interface) ---------------------------------

    def connection_made(self, now: float, conn: int) -> None:
        if len(self._tcp) >= self.config.max_tcp_faces:
            self.stats.tcp_refused += 1
            self._to_close.append(conn)
            self._after_input()
            return
        face = self.forwarder.add_face(
            lambda wire: self._stream_out.append((conn, wire)), s5_fragments=False
        )
        self._tcp[conn] = (face.face_id, TlvFramer())
        self.stats.tcp_faces_opened += 1

    def receive_data(self, now: float, conn: int, data: bytes) -> None:
        face = self._tcp.get(conn)
        if face is None:
            return
        face_id, framer = face
        try:
            packets = framer.feed(data)
        except NdnDecodeError:
            self.stats.tcp_framing_errors += 1
            self._close(conn)
        else:
            for packet in packets:
                self.forwarder.receive(now, face_id, packet)
        self._after_input()

    def connection_lost(self, now: float, conn: int) -> None:
        face = self._tcp.pop(conn, None)
        if face is not None:
            self.forwarder.remove_face(face[0])

    def data_to_send(self) -> list[tuple[int, bytes]]:
        out, self._stream_out = self._stream_out, []
        return out

    def connections_to_close(self) -> list[int]:
        out, self._to_close = self._to_close, []
        return out

    def _close(self, conn: int) -> None:
        face = self._tcp.pop(conn, None)
        if face is not None:
            self.forwarder.remove_face(face[0])
        self._to_close.append(conn)


# ---- on sockets -------------------------------------------------------------------------------


@dataclass
class NdnServer:
    """A running server: the node and the driver of each transport."""

    node: NdnServerNode
    udp: AsyncDatagramDriver
    tcp: StreamServerDriver
    host: str = ""
    port: int = 0
    _pump_scheduled: bool = field(default=False, repr=False)

    def wakeup(self) -> None:
        """Pump both drivers soon (once, however many inputs ask before it runs)."""
        if not self._pump_scheduled:
            self._pump_scheduled = True
            assert self.udp.loop is not None  # an open driver's
            self.udp.loop.call_soon(self._pump)

    def _pump(self) -> None:
        self._pump_scheduled = False
        self.udp.pump()
        self.tcp.pump()

    def close(self) -> None:
        self.udp.close()
        self.tcp.close()


async def serve_ndn(
    config: NdnServerConfig,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    rng: random.Random | None = None,
    on_ready: Callable[[NdnServer], None] | None = None,
) -> None:
    """Serve until cancelled: UDP and TCP on the same port (0: UDP picks, TCP follows;
    if another program holds that number for TCP, UDP picks again)."""
    node = NdnServerNode(config, rng or random.SystemRandom())
    attempts = PORT_ATTEMPTS if port == 0 else 1
    for attempt in range(1, attempts + 1):
        udp = await open_datagram_driver(node, local_addr=(host, port))
        try:
            assert udp.transport is not None  # an open driver's
            bound_host, bound_port = udp.transport.get_extra_info("sockname")[:2]
            tcp = await start_stream_server(node, bound_host, bound_port)
            break
        except OSError as exc:
            udp.close()
            if exc.errno != errno.EADDRINUSE or attempt == attempts:
                raise
        except BaseException:
            udp.close()
            raise
    server = NdnServer(node, udp, tcp, bound_host, bound_port)
    node.wakeup = server.wakeup
    await serve_until_cancelled(server, on_ready)


# ---- `iotbench serve ndn` ----------------------------------------------------------------------


def config_from_args(args: argparse.Namespace) -> NdnServerConfig:
    """The server configuration from `iotbench serve ndn` options; UserError if they are wrong."""
    try:
        prefix = Name(args.prefix or DEFAULT_PREFIX)
    except NdnDecodeError as exc:
        raise UserError(f"--prefix {args.prefix!r} is not an NDN name: {exc}") from None
    hmac_key = args.hmac_key.encode("utf-8") if args.hmac_key is not None else None
    signer = args.signer or ("hmac" if hmac_key is not None else "ecdsa")
    if signer == "hmac" and not hmac_key:
        raise UserError("--signer hmac needs --hmac-key SECRET (the key both ends share)")
    if hmac_key is not None and signer != "hmac":
        raise UserError(f"--hmac-key is for --signer hmac, not {signer}")
    if args.ecdsa_key is not None and signer != "ecdsa":
        raise UserError(f"--ecdsa-key is for --signer ecdsa, not {signer}")
    if args.object_size > MAX_OBJECT_BYTES:
        raise UserError(
            f"--object-size must be at most {MAX_OBJECT_BYTES} for ndn "
            f"(an NDN packet is at most {MAX_PACKET_BYTES} bytes)"
        )
    return NdnServerConfig(
        prefix=prefix.to_uri(),
        signer=signer,
        hmac_key=hmac_key,
        ecdsa_key=None if args.ecdsa_key is None else load_ecdsa_key(args.ecdsa_key),
        freshness_ms=1000 if args.freshness is None else args.freshness,
        object_size_bytes=args.object_size,
    )


def load_ecdsa_key(path: Path) -> ec.EllipticCurvePrivateKey:
    """A P-256 private key from a PEM or DER file (unencrypted); UserError otherwise."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read --ecdsa-key {path}: {exc.strerror or exc}") from None
    try:
        if b"-----BEGIN" in data:
            key = serialization.load_pem_private_key(data, password=None)
        else:
            key = serialization.load_der_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise UserError(f"--ecdsa-key {path} is not an unencrypted private key: {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise UserError(f"--ecdsa-key {path} is not a P-256 (secp256r1) private key")
    return key


async def server(args: argparse.Namespace) -> None:
    """`iotbench serve ndn` until cancelled (real/cli.py runs and stops it): what it serves
    on stderr at the start, what it did at the end."""
    config = config_from_args(args)
    running: list[NdnServer] = []

    def ready(server: NdnServer) -> None:
        running.append(server)
        print(banner(server), file=sys.stderr, flush=True)

    try:
        await serve_ndn(config, args.host, args.port, on_ready=ready)
    finally:
        if running:
            print(f"iotbench: NDN {summary(running[0].node)}", file=sys.stderr, flush=True)


def banner(server: NdnServer) -> str:
    """Where the server listens, what it serves, and how to check its signatures."""
    shown = f"[{server.host}]" if ":" in server.host else server.host
    producer = server.node.producer
    lines = [
        f"iotbench: NDN forwarder on udp://{shown}:{server.port} and tcp://{shown}:{server.port}",
        f"  producer {producer.prefix} (FreshnessPeriod {producer.freshness_ms} ms):",
    ]
    lines += [f"    {name}" for name in producer.resource_names]
    signer = producer.signer
    if producer.key_data is not None:
        lines.append(f"  signed with ECDSA P-256, key {producer.key_data.name}")
        lines.append(f"    public key (DER, hex) {producer.key_data.content.hex()}")
    elif isinstance(signer, HmacSha256Signer):
        assert signer.key_locator is not None  # make_signer names the HMAC key
        lines.append(f"  signed with HMAC-SHA256, key name {signer.key_locator.name}")
    else:
        lines.append("  signed with DigestSha256 (integrity only)")
    return "\n".join(lines)


def summary(node: NdnServerNode) -> str:
    """One line of what the node did, for the operator."""
    c = node.forwarder.counters
    f = node.stats
    return (
        f"{c.interests_in} Interests in; {c.data_out} Data ({c.cs_hits} from the Content Store) "
        f"and {c.nacks_out} Nacks out; {c.decode_errors + f.oversize_datagrams} malformed packets "
        f"dropped; UDP faces: {f.udp_faces_opened} opened, {f.udp_faces_evicted} closed for "
        f"newer peers, {f.udp_faces_idle_closed} idle; TCP faces: {f.tcp_faces_opened} opened, "
        f"{f.tcp_framing_errors} closed on framing errors, {f.tcp_refused} refused"
    )
