"""Counting the primitives of the security operations (security_costs.py)."""

from __future__ import annotations

import pytest

from iotbench.bench_commands import security_costs as costs
from iotbench.proto.ndn.profiles import PROFILES


@pytest.mark.parametrize(("length", "blocks"), [(0, 1), (55, 1), (56, 2), (119, 2), (120, 3)])
def test_sha256_pads_with_nine_bytes(length, blocks):
    assert costs.sha256(length).sha256_blocks == blocks


def test_hmac_is_an_inner_and_an_outer_hash():
    # 64-byte key block + 32 bytes -> 2 blocks; outer: key block + hash -> 2.
    assert costs.hmac_sha256(32).sha256_blocks == 4
    assert costs.hmac_sha256(100).sha256_blocks == 3 + 2


def test_ccm_counts_the_mac_and_the_counter_mode():
    # B0, one AAD block (13 + 2 bytes), one plaintext block twice, S0.
    assert costs.ccm(16, 13).aes == 2 + 1 + 2
    assert costs.ccm(17, 13).aes == 2 + 1 + 4
    assert costs.ccm(0, 15).aes == 2 + 2


def test_the_prf_takes_two_hmacs_per_32_bytes():
    one_round = costs.hmac_sha256(32) + costs.hmac_sha256(32 + 77)
    assert costs.prf(77, 40).sha256_blocks == 2 * one_round.sha256_blocks
    assert costs.prf(77, 32).sha256_blocks == one_round.sha256_blocks


def test_a_handshake_side_and_its_price():
    client = costs.dtls_handshake_side(400, server=False, cookie_input=60)
    server = costs.dtls_handshake_side(400, server=True, cookie_input=60)
    assert server.aes == client.aes == 2 * costs.ccm(24, 13).aes
    assert server.sha256_blocks - client.sha256_blocks == 2 * costs.hmac_sha256(60).sha256_blocks
    m3 = PROFILES["m3"]
    expected = client.aes * m3.cost_s("aes_ccm_block") / 2
    expected += client.sha256_blocks * m3.cost_s("sha256_block")
    assert costs.on_profiles(client)["m3"] == pytest.approx(expected)
