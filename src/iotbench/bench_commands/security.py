"""S4's security micro-benchmark: what a DTLS session costs to set up, and what
protecting a transaction adds in bytes and CPU time at the producer and the consumer.

    iotbench bench security [--seconds S] [--json]

One transaction is S4's: a request for a reading and a response carrying
its 32-byte JSON object ({"id":"0x12a77af232","val":3000}). The consumer
asks, the producer answers.

- CoAP over DTLS 1.2 with a pre-shared key and AES-128-CCM-8 (RFC 6655;
  TLS_PSK_WITH_AES_128_CCM_8, mandatory for CoAP PSK mode, RFC 7252
  9.1.3.1): both datagrams travel as protected records through an
  established session's layers (proto/dtls/layer.py). The consumer's layer
  seals the request and opens the response, the producer's the reverse:
  the record, the AEAD and the replay window.
- The DTLS handshake, once per session: a client and a server layer
  (proto/dtls/layer.py) run it in memory; counted are its datagrams,
  handshake messages and bytes each way, and each side's CPU time.
- CoAP with OSCORE (RFC 8613, AES-CCM-16-64-128): the same through the
  OSCORE layers (proto/oscore), whose work on a packet is the CoAP message
  decoded and rebuilt around the AEAD (inner and outer options, the OSCORE
  option, the AAD), the replay window and the request bindings.
- On the device profiles: the same work in AES calls and SHA-256 blocks, as
  the layers count it while they work (proto/crypto_work.py), priced by each
  profile's primitives (DeviceProfile.crypto_s), for the handshake and per
  transaction. The M3's prices come from published software measurements
  of AES-128 and SHA-256 on Cortex-M3 cores; the other profiles scale them
  (proto/ndn/profiles.py). The simulator charges a node's CPU the same way.
- NDN with HMAC-SHA256 signatures: the Interest is not signed (0 bytes
  added), the Data is: the producer computes the HMAC over the signed
  portion, the consumer verifies it. Its KeyLocator names the key by a 16-
  or a 32-byte key identifier (a KeyDigest of that size: S4 gives the sizes,
  not the form). For reference, DigestSha256 (integrity without a key, the
  least an NDN Data carries).

Bytes added per packet: the protected packet's size less the unprotected
one's (for NDN, less the same Data with DigestSha256). CPU time: what the
security layer does to each packet (for NDN, the signature alone: encoding
the rest of the Data is the same with and without it). Each transaction has
its own Message ID, since the layers answer a repeated message from what
they kept, without cryptography. Timing as bench_commands/timing.py says:
the operations take turns batch by batch, best batch.
"""

from __future__ import annotations

import gc
import itertools
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import TypeVar

from iotbench.bench_commands.timing import BATCH_S
from iotbench.proto import crypto_work
from iotbench.proto.coap import codec as coap
from iotbench.proto.coap.secured import DatagramSecurity
from iotbench.proto.crypto_work import Work
from iotbench.proto.dtls.connection import HandshakeDone
from iotbench.proto.dtls.layer import DtlsLayer
from iotbench.proto.dtls.messages import decode_fragments
from iotbench.proto.dtls.params import PskClientCredentials, PskServerCredentials
from iotbench.proto.dtls.record import AAD_LEN, HEADER_LEN, split_records
from iotbench.proto.ndn import make_data
from iotbench.proto.ndn.profiles import PROFILES as ALL_PROFILES
from iotbench.proto.ndn.signing import (
    DigestSha256Signer,
    DigestSha256Verifier,
    HmacSha256Signer,
    HmacSha256Verifier,
)
from iotbench.proto.oscore.context import SecurityContext
from iotbench.proto.oscore.layer import OscoreLayer
from iotbench.scenarios.fields import NDN_DEVICE_PROFILES

# The devices whose cryptography is priced (rm090 and em-host price one stack's
# messages only).
PROFILES = {name: ALL_PROFILES[name] for name in NDN_DEVICE_PROFILES}
READING = b'{"id":"0x12a77af232","val":3000}'
NAME = "/p_1/42"
PSK_IDENTITY, PSK = b"sensor-1", bytes(range(16))
HMAC_KEY = bytes(range(32))
CONSUMER, PRODUCER = ("consumer", 5683), ("producer", 5683)


Seconds = float


@dataclass(frozen=True)
class Variant:
    name: str
    #: bytes the protection adds to the request and to the response
    request_added: int
    response_added: int
    #: one transaction, in the order the packets go; returns the seconds of
    #: protection work it took at the consumer and at the producer
    exchange: Callable[[], tuple[Seconds, Seconds]]
    #: the same work counted in primitives (proto/crypto_work.py), per side
    consumer_work: Work
    producer_work: Work


@dataclass(frozen=True)
class Result:
    variant: str
    request_added: int
    response_added: int
    consumer_us: float
    producer_us: float
    consumer_work: Work
    producer_work: Work

    @property
    def us_per_transaction(self) -> float:
        return self.consumer_us + self.producer_us

    def to_json(self) -> dict:
        return {
            "variant": self.variant,
            "request_bytes_added": self.request_added,
            "response_bytes_added": self.response_added,
            "consumer_us_per_transaction": round(self.consumer_us, 3),
            "producer_us_per_transaction": round(self.producer_us, 3),
            "us_per_transaction": round(self.us_per_transaction, 3),
            "consumer_estimated_s": _rounded(on_profiles(self.consumer_work)),
            "producer_estimated_s": _rounded(on_profiles(self.producer_work)),
        }


def on_profiles(work: Work) -> dict[str, float]:
    """Seconds of `work` on each device profile."""
    return {name: profile.crypto_s(work) for name, profile in PROFILES.items()}


def coap_messages(message_id: int = 0x1234) -> tuple[bytes, bytes]:
    request = coap.Message(coap.Type.CON, coap.Code.GET, message_id, b"\x5a\xa5")
    request.uri_path = "/reading"
    response = coap.Message(coap.Type.ACK, coap.Code.CONTENT, message_id, b"\x5a\xa5")
    response.add_option(coap.Opt.CONTENT_FORMAT, 50)
    response.payload = READING
    return coap.encode(request), coap.encode(response)


_T = TypeVar("_T")


def _timed(fn: Callable[[], _T]) -> tuple[_T, Seconds]:
    start = perf_counter()
    out = fn()
    return out, perf_counter() - start


# --------------------------------------------------------------------------- per transaction


def _established_dtls_pair() -> tuple[DtlsLayer, DtlsLayer]:
    client = DtlsLayer(random.Random(1), client=PskClientCredentials(PSK_IDENTITY, PSK))
    server = DtlsLayer(random.Random(2), server=PskServerCredentials({PSK_IDENTITY: PSK}))
    client.outgoing(0.0, b"", PRODUCER)
    for _ in range(4):
        for data, _ in client.datagrams_to_send():
            server.incoming(0.0, data, CONSUMER)
        for data, _ in server.datagrams_to_send():
            client.incoming(0.0, data, PRODUCER)
    server.plaintexts()
    ours, theirs = client.session(PRODUCER), server.session(CONSUMER)
    if not (ours is not None and ours.established and theirs is not None and theirs.established):
        raise AssertionError("DTLS: the handshake did not complete")
    return client, server


def _through(
    consumer: DatagramSecurity, producer: DatagramSecurity
) -> Callable[[bytes, bytes], tuple[Seconds, Seconds, int, int]]:
    """One transaction through two security layers: the consumer protects the
    request, the producer opens it and protects the response, the consumer
    opens that; returns each side's seconds and the bytes each packet gained."""

    def exchange(request: bytes, response: bytes) -> tuple[Seconds, Seconds, int, int]:
        def protect_request() -> bytes:
            consumer.outgoing(0.0, request, PRODUCER)
            return consumer.datagrams_to_send()[0][0]

        def answer() -> bytes:
            producer.incoming(0.0, sealed, CONSUMER)
            ((opened, _),) = producer.plaintexts()
            assert opened == request
            producer.outgoing(0.0, response, CONSUMER)
            return producer.datagrams_to_send()[0][0]

        def open_response() -> bytes:
            consumer.incoming(0.0, sealed_back, PRODUCER)
            return consumer.plaintexts()[0][0]

        sealed, c1 = _timed(protect_request)
        sealed_back, p = _timed(answer)
        opened, c2 = _timed(open_response)
        assert opened == response
        return c1 + c2, p, len(sealed) - len(request), len(sealed_back) - len(response)

    return exchange


def _layer_variant(name: str, consumer, producer) -> Variant:
    """A variant whose transactions go through two security layers, each with its
    own Message ID: the layers keep what they sent and received to answer
    retransmissions and duplicates, and a repeated message would come from
    there without any cryptography. Each side's work in primitives is what
    its layer counted during the first transaction."""
    through = _through(consumer, producer)
    numbers = itertools.count(1)
    sizes: dict[str, int] = {}

    def exchange() -> tuple[Seconds, Seconds]:
        request, response = coap_messages(next(numbers) & 0xFFFF)
        c, p, sizes["request"], sizes["response"] = through(request, response)
        return c, p

    before = consumer.work, producer.work
    exchange()
    work = consumer.work - before[0], producer.work - before[1]
    return Variant(name, sizes["request"], sizes["response"], exchange, *work)


def dtls_variant() -> Variant:
    return _layer_variant("CoAP + DTLS 1.2 PSK AES-128-CCM-8", *_established_dtls_pair())


def _oscore_pair() -> tuple[OscoreLayer, OscoreLayer]:
    secret, salt = bytes(range(16)), bytes.fromhex("9e7ca92223786340")
    consumer = OscoreLayer(random.Random(1))
    consumer.add_peer(PRODUCER, SecurityContext(secret, b"", b"\x01", master_salt=salt))
    producer = OscoreLayer(random.Random(2))
    producer.add_context(SecurityContext(secret, b"\x01", b"", master_salt=salt))
    return consumer, producer


def oscore_variant() -> Variant:
    return _layer_variant("CoAP + OSCORE AES-CCM-16-64-128", *_oscore_pair())


def ndn_variant(label: str, signer, verifier) -> Variant:
    data = make_data(NAME, READING, signer=signer, freshness_period_ms=10000)
    plain = make_data(NAME, READING, signer=DigestSha256Signer(), freshness_period_ms=10000)
    covered = data.signed_portion

    def exchange() -> tuple[Seconds, Seconds]:
        # The Interest goes unsigned: no work until the producer signs the Data.
        signature, p = _timed(lambda: signer.sign(covered))
        ok, c = _timed(lambda: verifier.verify(covered, signature))
        assert ok, f"{label}: the signature does not verify"
        return c, p

    exchange()
    keyed = isinstance(signer, HmacSha256Signer)
    covered_len = len(covered)
    work = (
        crypto_work.hmac_sha256(covered_len, len(HMAC_KEY))
        if keyed
        else crypto_work.sha256(covered_len)
    )
    return Variant(label, 0, len(data.wire) - len(plain.wire), exchange, work, work)


def variants() -> list[Variant]:
    return [
        dtls_variant(),
        oscore_variant(),
        ndn_variant(
            "NDN + HMAC-SHA256, 16-byte KeyLocator",
            HmacSha256Signer(HMAC_KEY, key_digest=bytes(range(16))),
            HmacSha256Verifier(HMAC_KEY),
        ),
        ndn_variant(
            "NDN + HMAC-SHA256, 32-byte KeyLocator",
            HmacSha256Signer(HMAC_KEY, key_digest=bytes(range(32))),
            HmacSha256Verifier(HMAC_KEY),
        ),
        ndn_variant("NDN + DigestSha256 (reference)", DigestSha256Signer(), DigestSha256Verifier()),
    ]


def side_costs(exchanges: list[Callable[[], tuple[Seconds, Seconds]]], seconds: float):
    """Each exchange's best-batch mean seconds at the consumer and at the producer.

    Batches of about BATCH_S, the exchanges taking turns batch by batch
    (timing.py's method, with each side's share summed inside the batch)."""
    sizes = []
    for exchange in exchanges:
        spent = sum(sum(exchange()) for _ in range(20)) / 20
        sizes.append(max(1, round(BATCH_S / max(spent, 1e-9))))
    best = [[float("inf"), float("inf")] for _ in exchanges]
    deadline = perf_counter() + seconds
    collecting = gc.isenabled()
    while True:
        for i, exchange in enumerate(exchanges):
            gc.disable()
            try:
                consumer = producer = 0.0
                for _ in range(sizes[i]):
                    c, p = exchange()
                    consumer += c
                    producer += p
            finally:
                if collecting:
                    gc.enable()
            best[i][0] = min(best[i][0], consumer / sizes[i])
            best[i][1] = min(best[i][1], producer / sizes[i])
        if perf_counter() >= deadline:
            return best


def run(seconds: float) -> list[Result]:
    vs = variants()
    side_seconds = side_costs([v.exchange for v in vs], seconds * len(vs))
    return [
        Result(
            v.name,
            v.request_added,
            v.response_added,
            1e6 * c,
            1e6 * p,
            v.consumer_work,
            v.producer_work,
        )
        for v, (c, p) in zip(vs, side_seconds, strict=True)
    ]


# --------------------------------------------------------------------------- the handshake


@dataclass(frozen=True)
class HandshakeSide:
    role: str
    datagrams: int
    handshake_messages: int  # ChangeCipherSpec not included (it is not a handshake message)
    bytes_sent: int
    cpu_us: float
    work: Work  # the side's cryptography, as its layer counted it

    def to_json(self) -> dict:
        return {
            "role": self.role,
            "datagrams": self.datagrams,
            "handshake_messages": self.handshake_messages,
            "bytes": self.bytes_sent,
            "cpu_us": round(self.cpu_us, 1),
            "estimated_s": _rounded(on_profiles(self.work)),
        }


def _rounded(seconds: dict[str, float]) -> dict[str, float]:
    return {name: round(s, 7) for name, s in seconds.items()}


def _count_messages(datagram: bytes) -> int:
    count = 0
    for header, record in split_records(datagram):
        if header.content_type == 22:
            # A protected record holds one Finished; a clear one, its fragments.
            count += 1 if header.epoch else len(decode_fragments(record[HEADER_LEN:]))
    return count


def one_handshake(seed: int) -> list[HandshakeSide]:
    """A whole PSK handshake between two layers in memory, with each side's CPU
    time and its work in primitives as its layer counted it up to its end."""
    client = DtlsLayer(random.Random(seed), client=PskClientCredentials(PSK_IDENTITY, PSK))
    server = DtlsLayer(random.Random(~seed), server=PskServerCredentials({PSK_IDENTITY: PSK}))
    spent = {"client": 0.0, "server": 0.0}
    sent: dict[str, list[bytes]] = {"client": [], "server": []}
    work: dict[str, Work] = {}
    _, spent["client"] = _timed(lambda: client.outgoing(0.0, b"", PRODUCER))
    while len(work) < 2:
        for role, layer, peer, source in (
            ("client", client, server, CONSUMER),
            ("server", server, client, PRODUCER),
        ):
            out = layer.datagrams_to_send()
            sent[role] += [d for d, _ in out]
            if any(isinstance(e, HandshakeDone) for e in layer.events()):
                work[role] = layer.work
            other = "server" if role == "client" else "client"
            for data, _ in out:
                start = perf_counter()
                peer.incoming(0.0, data, source)
                spent[other] += perf_counter() - start
    # The client's last datagram is the (empty) application data the handshake
    # waited for: the client sealed it as its handshake ended.
    sent["client"] = sent["client"][:-1]
    work["client"] -= crypto_work.ccm(0, AAD_LEN)
    return [
        HandshakeSide(
            role,
            len(sent[role]),
            sum(_count_messages(d) for d in sent[role]),
            sum(map(len, sent[role])),
            1e6 * spent[role],
            work[role],
        )
        for role in ("client", "server")
    ]


def handshake(seconds: float) -> list[HandshakeSide]:
    """The handshake's figures, each side's CPU the least over repeated handshakes."""
    best = one_handshake(0)
    deadline = perf_counter() + seconds
    seed = 1
    while perf_counter() < deadline:
        sides = one_handshake(seed)
        seed += 1
        best = [b if b.cpu_us <= s.cpu_us else s for b, s in zip(best, sides, strict=True)]
    return best


# --------------------------------------------------------------------------- the command


def main(seconds: float, as_json: bool) -> int:
    """`iotbench bench security`: three tables, or one JSON object per line."""
    from rich.table import Table

    from iotbench.terminal import console, print_table

    if as_json:
        for side in handshake(seconds):
            sys.stdout.write(json.dumps({"dtls_handshake": side.to_json()}) + "\n")
        for r in run(seconds):
            sys.stdout.write(json.dumps(r.to_json()) + "\n")
        return 0
    with console(stderr=True).status("measuring"):
        sides = handshake(seconds)
        results = run(seconds)
    table = Table(
        title="DTLS 1.2 PSK handshake (once per session): ClientHello, HelloVerifyRequest, "
        "ClientHello with the cookie, ServerHello + ServerHelloDone, ClientKeyExchange + "
        "ChangeCipherSpec + Finished, ChangeCipherSpec + Finished",
        caption="no loss, 1,232-byte datagrams; CPU: this machine's, the least over repeated "
        "handshakes; per profile: the AES calls and SHA-256 blocks at the profile's prices",
    )
    columns = ("side", "datagrams", "handshake messages", "bytes", "CPU µs", "AES", "SHA-256")
    for column in (*columns, *(f"{name} ms" for name in PROFILES)):
        table.add_column(column, justify="left" if column == "side" else "right")
    for side in sides:
        table.add_row(
            side.role,
            str(side.datagrams),
            str(side.handshake_messages),
            str(side.bytes_sent),
            f"{side.cpu_us:.0f}",
            str(side.work.aes),
            str(side.work.sha256_blocks),
            *(f"{1e3 * t:.2f}" for t in on_profiles(side.work).values()),
        )
    print_table(console(), table)
    table = Table(
        title="Security per transaction (S4): request for a reading, response with 32 bytes",
        caption=f"bytes the protection adds per packet; CPU: the security layer's work per "
        f"packet (NDN: the signature), best batch of about {BATCH_S * 1000:.0f} ms, variants "
        f"alternating for {seconds:g} s each",
    )
    table.add_column("variant", no_wrap=True)
    for column in (
        "request +bytes",
        "response +bytes",
        "consumer µs",
        "producer µs",
        "µs / transaction",
        "vs DTLS",
    ):
        table.add_column(column, justify="right")
    for r in results:
        table.add_row(
            r.variant,
            str(r.request_added),
            str(r.response_added),
            f"{r.consumer_us:.2f}",
            f"{r.producer_us:.2f}",
            f"{r.us_per_transaction:.2f}",
            f"{r.us_per_transaction / results[0].us_per_transaction:.2f}",
        )
    print_table(console(), table)
    table = Table(
        title="The same protection on the device profiles: µs per transaction",
        caption="AES calls and SHA-256 blocks as the layers count them (proto/crypto_work.py), "
        "priced by each profile's aes_ccm_block and sha256_block (proto/ndn/profiles.py: the "
        "M3's from published Cortex-M3 measurements, the others scaled from it or assumed)",
    )
    table.add_column("variant", no_wrap=True)
    table.add_column("AES + SHA-256 per side", justify="right")
    for name in PROFILES:
        table.add_column(f"{name} consumer", justify="right")
        table.add_column(f"{name} producer", justify="right")
    for r in results:
        consumer = on_profiles(r.consumer_work)
        producer = on_profiles(r.producer_work)
        table.add_row(
            r.variant,
            f"{r.consumer_work.aes} + {r.consumer_work.sha256_blocks}",
            *(f"{1e6 * t:.1f}" for name in PROFILES for t in (consumer[name], producer[name])),
        )
    print_table(console(), table)
    return 0
