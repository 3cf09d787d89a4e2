"""s4-security: S4's exchanges behind DTLS and OSCORE, and NDN with HMAC, on 802.15.4.

What the secured variants add on the air (6LoWPAN fragments, a DTLS handshake
per producer) and on the nodes' CPUs (the cryptography each layer counted,
priced by the m3 profile) is checked here against the mechanisms.
"""

from __future__ import annotations

import pytest
from spies import instances, recorded_packets

import iotbench.world.run as world
from iotbench.net import ieee802154 as mac
from iotbench.net.radio.medium import RadioMedium
from iotbench.proto.coap.secured import SecuredEndpoint
from iotbench.proto.ndn.profiles import get_profile
from iotbench.scenarios import expand, load_scenario

FRAG1, FRAGN = 0xC0, 0xE0  # RFC 4944 5.3: the first bits of a fragment header


def run(monkeypatch, variant: str, hops: str = "1", items: int = 4):
    """The variant's run: (its metrics, the radio frames' MAC payloads, the
    secured endpoints built, in order)."""
    packets = recorded_packets(monkeypatch)
    secured = instances(monkeypatch, SecuredEndpoint)
    (one,) = expand(
        load_scenario("s4-security"),
        {"variant": [variant], "hops": [hops]},
        {"workload.items": items},
        reps=1,
    )
    metrics = world.run_one(one.config, one.seed).metrics
    frames = [
        frame.payload
        for frame in (mac.decode(p.data) for p in packets if isinstance(p.medium, RadioMedium))
        if not isinstance(frame, mac.Ack)
    ]
    return metrics, frames, secured


@pytest.mark.parametrize("hops", ["1", "3"])
@pytest.mark.parametrize(
    "variant",
    [
        "coap-put-con-dtls",
        "coap-put-con-oscore",
        "coap-get-con-dtls",
        "coap-get-con-oscore",
        "ndn-hmac",
    ],
)
def test_every_secured_variant_delivers_over_its_hops(monkeypatch, variant, hops):
    metrics, _, _ = run(monkeypatch, variant, hops)
    assert metrics["delivery_ratio"] == 1.0
    assert metrics["tree_depth"] == int(hops)


def test_the_plain_put_fits_a_frame_and_the_secured_ones_are_fragmented(monkeypatch):
    # The PUT fills 122 of a frame's 127 bytes (tests/world/test_s4_exchanges.py);
    # OSCORE's 13 bytes and a DTLS record's 29 push it over.
    _, plain, _ = run(monkeypatch, "coap-put-con")
    assert not any(f[0] & 0xF8 in (FRAG1, FRAGN) for f in plain)
    for variant in ("coap-put-con-oscore", "coap-put-con-dtls"):
        _, frames, _ = run(monkeypatch, variant)
        assert sum(f[0] & 0xF8 == FRAG1 for f in frames) >= 4, variant


def test_dtls_shakes_hands_once_per_producer_before_its_first_reading(monkeypatch):
    metrics, _, secured = run(monkeypatch, "coap-put-con-dtls", items=6)
    assert metrics["dtls_handshakes"] == 1 and metrics["dtls_handshake_failures"] == 0
    # ClientHello, HelloVerifyRequest, ClientHello, the server's flight, the
    # client's, the server's Finished: three datagrams each way on a clean path.
    assert metrics["dtls_handshake_packets"] == 6
    assert metrics["dtls_handshake_retransmissions"] == 0
    # The first reading waited for the handshake; the others did not.
    assert metrics["tta_p99_s"] > metrics["dtls_handshake_time_mean_s"] > metrics["tta_p50_s"]
    server, producer = secured
    assert producer.layer.stats.handshakes_done == server.layer.stats.handshakes_done == 1


@pytest.mark.parametrize("mode", ["dtls", "oscore"])
def test_the_producers_cpu_pays_for_the_cryptography_its_layer_counted(monkeypatch, mode):
    items = 4
    plain, _, _ = run(monkeypatch, "coap-put-con", items=items)
    metrics, _, secured = run(monkeypatch, f"coap-put-con-{mode}", items=items)
    producer = secured[1]  # after the server on the gateway's host
    crypto_ms = 1e3 * get_profile("m3").crypto_s(producer.crypto_work) / items
    extra_ms = metrics["cpu_producer_ms_per_item"] - plain["cpu_producer_ms_per_item"]
    if mode == "oscore":  # the same messages, each sealed or opened
        assert producer.crypto_work.aes > 0
        assert extra_ms == pytest.approx(crypto_ms)
    else:  # also the handshake's six datagrams, each a message to handle
        message_ms = 1e3 * get_profile("m3").cost_s("coap_message")
        assert extra_ms == pytest.approx(crypto_ms + 6 * message_ms / items)


def test_a_sealed_readings_arrival_is_its_last_frame_at_the_gateways_radio(monkeypatch):
    # The PUT's reading is readable once its last fragment is at the gateway:
    # later than the plain PUT's single frame, and well before the host's
    # aiocoap (12 ms of the a8's CPU behind the serial line) would see it.
    plain, _, _ = run(monkeypatch, "coap-put-con", items=6)
    sealed, _, _ = run(monkeypatch, "coap-put-con-oscore", items=6)
    assert sealed["delivery_ratio"] == 1.0
    assert plain["tta_mean_s"] < sealed["tta_mean_s"] < plain["tta_mean_s"] + 0.012


def test_every_producer_pair_has_its_own_oscore_ids():
    from iotbench.world.protocols.coap import oscore_context

    ids = {oscore_context("client", i).sender_id for i in range(300)}
    ids |= {oscore_context("server", i).sender_id for i in range(300)}
    assert len(ids) == 600 and max(map(len, ids)) <= 7
    ctx = oscore_context("server", 260)
    assert ctx.recipient_id == oscore_context("client", 260).sender_id
