"""S4's security micro-benchmark: what protecting a transaction adds in bytes and CPU time.

    iotbench bench security [--seconds S] [--json]

One transaction is S4's: a request for a reading and a response carrying
its 32-byte JSON object ({"id":"0x12a77af232","val":3000}).

- CoAP over DTLS 1.2 with a pre-shared key and AES-128-CCM-8 (RFC 6655;
  TLS_PSK_WITH_AES_128_CCM_8, mandatory for CoAP PSK mode, RFC 7252
  9.1.3.1): both datagrams travel as protected records (proto/dtls). CPU
  per transaction: protect and open the request, protect and open the
  response. The handshake, once per session, is not part of it.
- NDN with HMAC-SHA256 signatures: the Interest is not signed (0 bytes
  added), the Data is.
  Its KeyLocator names the key by a 16- or a 32-byte key identifier (a
  KeyDigest of that size: S4 gives the sizes, not the form). CPU per
  transaction: the producer's HMAC over the signed portion and the
  consumer's verification. For reference, DigestSha256 (integrity without a
  key, the least an NDN Data carries).

Bytes added per packet: the protected packet's size less the unprotected
one's (for NDN, less the same Data with DigestSha256). Encoding the CoAP
message or the rest of the Data is the same with and without protection,
so it is left out of the CPU time. Timing as bench_commands/timing.py says:
the variants take turns batch by batch, best batch.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass

from iotbench.bench_commands.timing import BATCH_S, best_rates
from iotbench.proto.coap import codec as coap
from iotbench.proto.dtls.record import Ccm8Protection
from iotbench.proto.ndn import make_data
from iotbench.proto.ndn.signing import (
    DigestSha256Signer,
    DigestSha256Verifier,
    HmacSha256Signer,
    HmacSha256Verifier,
)

READING = b'{"id":"0x12a77af232","val":3000}'
NAME = "/p_1/42"
PSK_KEYS = {  # what a PSK handshake would derive (fixed: the benchmark needs no secrecy)
    "client": (bytes(range(16)), bytes.fromhex("a0a1a2a3")),
    "server": (bytes(range(16, 32)), bytes.fromhex("b0b1b2b3")),
}
HMAC_KEY = bytes(range(32))


@dataclass(frozen=True)
class Variant:
    name: str
    #: bytes the protection adds to the request and to the response
    request_added: int
    response_added: int
    transaction: Callable[[], object]


@dataclass(frozen=True)
class Result:
    variant: str
    request_added: int
    response_added: int
    per_s: float

    @property
    def us_per_transaction(self) -> float:
        return 1e6 / self.per_s

    def to_json(self) -> dict:
        return {
            "variant": self.variant,
            "request_bytes_added": self.request_added,
            "response_bytes_added": self.response_added,
            "transactions_per_s": round(self.per_s, 1),
            "us_per_transaction": round(self.us_per_transaction, 3),
        }


def coap_messages() -> tuple[bytes, bytes]:
    request = coap.Message(coap.Type.CON, coap.Code.GET, 0x1234, b"\x5a\xa5")
    request.uri_path = "/reading"
    response = coap.Message(coap.Type.ACK, coap.Code.CONTENT, 0x1234, b"\x5a\xa5")
    response.add_option(coap.Opt.CONTENT_FORMAT, 50)
    response.payload = READING
    return coap.encode(request), coap.encode(response)


def dtls_variant() -> Variant:
    request, response = coap_messages()
    client_tx, server_rx = (Ccm8Protection(*PSK_KEYS["client"]) for _ in range(2))
    server_tx, client_rx = (Ccm8Protection(*PSK_KEYS["server"]) for _ in range(2))
    sequence = itertools.count(1)

    def transaction() -> bytes:
        seq = next(sequence)
        _, got = server_rx.unprotect(client_tx.protect(request, 1, seq))
        _, back = client_rx.unprotect(server_tx.protect(response, 1, seq))
        return got + back

    sealed_request = client_tx.protect(request, 1, 0)
    sealed_response = server_tx.protect(response, 1, 0)
    if transaction() != request + response:
        raise AssertionError("DTLS: a record did not open to what was sealed")
    return Variant(
        "CoAP + DTLS 1.2 PSK AES-128-CCM-8",
        len(sealed_request) - len(request),
        len(sealed_response) - len(response),
        transaction,
    )


def ndn_variant(label: str, signer, verifier) -> Variant:
    data = make_data(NAME, READING, signer=signer, freshness_period_ms=10000)
    plain = make_data(NAME, READING, signer=DigestSha256Signer(), freshness_period_ms=10000)
    covered = data.signed_portion

    def transaction() -> bool:
        return verifier.verify(covered, signer.sign(covered))

    if not transaction():
        raise AssertionError(f"{label}: the signature does not verify")
    return Variant(label, 0, len(data.wire) - len(plain.wire), transaction)


def variants() -> list[Variant]:
    return [
        dtls_variant(),
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


def run(seconds: float) -> list[Result]:
    vs = variants()
    rates = best_rates([v.transaction for v in vs], seconds * len(vs))
    return [
        Result(v.name, v.request_added, v.response_added, r) for v, r in zip(vs, rates, strict=True)
    ]


def main(seconds: float, as_json: bool) -> int:
    """`iotbench bench security`: a table, or one JSON object per variant."""
    from rich.table import Table

    from iotbench.terminal import console, print_table

    if as_json:
        for r in run(seconds):
            sys.stdout.write(json.dumps(r.to_json()) + "\n")
        return 0
    with console(stderr=True).status("measuring"):
        results = run(seconds)
    table = Table(
        title="Security per transaction (S4): request for a reading, response with 32 bytes",
        caption=f"bytes the protection adds per packet; CPU of the protection only, best batch of "
        f"about {BATCH_S * 1000:.0f} ms, variants alternating for {seconds:g} s each",
    )
    table.add_column("variant", no_wrap=True)
    table.add_column("request +bytes", justify="right")
    table.add_column("response +bytes", justify="right")
    table.add_column("µs / transaction", justify="right")
    table.add_column("transactions / s", justify="right")
    table.add_column("vs DTLS", justify="right")
    for r in results:
        table.add_row(
            r.variant,
            str(r.request_added),
            str(r.response_added),
            f"{r.us_per_transaction:.2f}",
            f"{r.per_s:,.0f}",
            f"{r.us_per_transaction / results[0].us_per_transaction:.2f}",
        )
    print_table(console(), table)
    return 0
