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
    for v in rows.values():
        assert v.transaction()  # a full transaction opens and verifies


def test_the_command_prints_json_lines():
    done = subprocess.run(
        [sys.executable, "-m", "iotbench", "bench", "security", "--seconds", "0.05", "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["variant"] for line in lines] == [v.name for v in security.variants()]
    assert all(line["transactions_per_s"] > 0 for line in lines)
