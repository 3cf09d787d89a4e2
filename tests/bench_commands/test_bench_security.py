"""`iotbench bench security`: the transactions are right and the bytes added are exact.
Timings are printed, never asserted."""

from __future__ import annotations

import json
import subprocess
import sys

from iotbench.bench_commands import security
from iotbench.proto.dtls.record import OVERHEAD


def test_bytes_added_per_packet():
    rows = {v.name: v for v in security.variants()}
    dtls = rows["CoAP + DTLS 1.2 PSK AES-128-CCM-8"]
    assert (dtls.request_added, dtls.response_added) == (OVERHEAD, OVERHEAD) == (29, 29)
    # A KeyDigest KeyLocator (type, length, and the TLV in it) on top of
    # DigestSha256's SignatureInfo; both SignatureValues are 32 bytes.
    assert rows["NDN + HMAC-SHA256, 16-byte KeyLocator"].response_added == 2 + 2 + 16
    assert rows["NDN + HMAC-SHA256, 32-byte KeyLocator"].response_added == 2 + 2 + 32
    assert rows["NDN + DigestSha256 (reference)"].response_added == 0
    # OSCORE (RFC 8613): the option (flags, Partial IV, kid on the request) and
    # the 8-byte tag; the outer code replaces the inner, the response reuses
    # the request's nonce and so carries an empty option.
    oscore = rows["CoAP + OSCORE AES-CCM-16-64-128"]
    assert (oscore.request_added, oscore.response_added) == (13, 11)
    for v in rows.values():
        consumer_s, producer_s = v.exchange()  # a whole transaction opens and verifies
        assert consumer_s > 0 and producer_s > 0


def test_the_handshake_is_six_flights_in_six_datagrams():
    client, server = security.one_handshake(seed=3)
    # Client: ClientHello twice (the second with the cookie), then
    # ClientKeyExchange, ChangeCipherSpec and Finished in one datagram.
    assert (client.datagrams, client.handshake_messages) == (3, 4)
    # Server: HelloVerifyRequest; ServerHello and ServerHelloDone; then
    # ChangeCipherSpec and Finished.
    assert (server.datagrams, server.handshake_messages) == (3, 4)
    assert client.bytes_sent > server.bytes_sent > 150
    # The server's extra cryptography is its two cookie HMACs.
    assert client.work.aes == server.work.aes
    assert server.work.sha256_blocks > client.work.sha256_blocks


def test_the_command_prints_json_lines():
    done = subprocess.run(
        [sys.executable, "-m", "iotbench", "bench", "security", "--seconds", "0.05", "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    handshake = [line["dtls_handshake"] for line in lines if "dtls_handshake" in line]
    assert [side["role"] for side in handshake] == ["client", "server"]
    per_transaction = [line for line in lines if "variant" in line]
    assert [line["variant"] for line in per_transaction] == [v.name for v in security.variants()]
    assert all(line["us_per_transaction"] > 0 for line in per_transaction)
