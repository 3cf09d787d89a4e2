"""The publish workload over NDN: S4's `ndn` (the gateway asks each producer for a
reading by name) and `ndn-inot` (each reading rides an Interest to the gateway),
on a small radio network (test_radio_network.publish_config: 5 producers, 8 items
each)."""

from __future__ import annotations

import pytest
from spies import instances, spy
from test_radio_network import publish_config

from iotbench.proto.ndn.interest import Interest
from iotbench.scenarios import ScenarioError, expand, parse_scenario
from iotbench.world import run_one
from iotbench.world.workloads.publish.ndn import NdnInterestNotification, NdnPull, address_text
from same_metrics import same_metrics

S4_NDN = {
    "protocol.ndn.retx_max": 4,
    "protocol.ndn.retx_interval_s": 2.0,
    "protocol.ndn.interest_lifetime_ms": 10_000,
    "protocol.ndn.heap_bytes": 40_960,
    "protocol.ndn.cs_max_bytes": 10_240,
    "protocol.ndn.fib_max_entries": 50,
    "protocol.ndn.signature": "none",
    "protocol.ndn.prefix": "/i3",
    "protocol.ndn.nonce_check": "ccn-lite",
    "workload.path": "/i3/gasval",
}


def ndn_run(exchange: str, **sets):
    cfg, seed = publish_config("ndn", **{"workload.ndn_exchange": exchange, **S4_NDN, **sets})
    return run_one(cfg, seed).metrics


def test_names_carry_the_producers_link_layer_address_as_riot_prints_it():
    assert address_text(bytes.fromhex("0200000000000102")) == "02:00:00:00:00:00:01:02"


def test_pull_asks_each_producer_in_turn_and_the_producer_answers_at_once(monkeypatch):
    asked = spy(monkeypatch, NdnPull, "request")
    m = ndn_run("pull")
    assert m["items"] == 40 and m["items_delivered"] == 40
    assert m["items_unfinished"] == 0 and m["hit_time_limit"] == 0
    # One loop over the producers: 0, 1, ..., 4, 0, 1, ... (vanilla's FIB walk).
    producers = [p for (p, _rid) in asked]
    assert producers == [k % 5 for k in range(40)]
    assert m["requests_per_item"] == 1.0
    # The producer creates the Data when asked: an answer takes milliseconds.
    assert m["tta_p99_s"] < 0.2


def test_polled_pull_interests_wait_in_the_pits_for_readings_not_taken_yet():
    """Polling every second while readings come every 5 s: the gateway asks for the
    next readings before they exist, its Interests wait in the PITs on the way until
    the reading's Data satisfies them (or they expire), and the PITs fill."""
    m = ndn_run("pull", **{"workload.poll_interval_s": 1.0})
    assert m["items_delivered"] == 40
    assert m["requests_per_item"] > 1.0
    assert m["pit_occupancy_max"] >= 3  # Interests waiting for future readings
    # A reading's time runs from the first Interest for its name, which waited for it.
    assert m["tta_mean_s"] > 0.5


def test_a_polled_readings_time_runs_from_the_first_interest_for_its_name():
    """Interests that live 1 s for readings 5 s apart expire and are asked again: the
    reading's transaction began with the first of them (S4's definition), so its time
    to content arrival exceeds one Interest's lifetime."""
    m = ndn_run(
        "pull", **{"workload.poll_interval_s": 1.0, "protocol.ndn.interest_lifetime_ms": 1000}
    )
    assert m["items_delivered"] == 40
    assert m["requests_per_fresh_reading"] > 2.0  # the same name asked again
    assert m["tta_mean_s"] > 1.0 and m["tta_p99_s"] > 2.0


def test_inot_carries_each_reading_as_the_last_name_component(monkeypatch):
    calls = spy(monkeypatch, NdnInterestNotification, "_on_interest")
    m = ndn_run("inot")
    seen: list[Interest] = [interest for (interest,) in calls]
    assert m["items_delivered"] == 40
    assert m["latency_max_s"] < 0.5  # pushed at once: no poll to wait for
    readings = {bytes(i.name[-1].value) for i in seen}
    assert len(readings) == 40 and all(r.startswith(b'{"id":"0x') for r in readings)
    assert all(i.app_parameters is None for i in seen)  # no ParametersSha256Digest
    assert all(len(i.wire) <= 102 for i in seen)  # one frame with extended addresses


def test_hop_by_hop_retransmission_rescues_readings_on_a_lossy_link():
    """Long hops and no MAC retries: frames get lost, and the forwarders'
    retransmissions (S4: 2 s, 4 times) deliver what a single try loses."""
    lossy = {
        "network.nodes.spacing_m": 85.0,
        "network.mac.max_frame_retries": 0,
        "workload.items": 10,
    }
    once = ndn_run("inot", **lossy, **{"protocol.ndn.retx_max": 0})
    again = ndn_run("inot", **lossy)
    assert once["items_given_up"] > 0
    assert again["items_delivered"] > once["items_delivered"]


def test_the_content_store_is_bounded_in_entries_as_ccn_lite_counts_it(monkeypatch):
    built = instances(monkeypatch, NdnPull)
    m = ndn_run("pull", **{"protocol.ndn.cs_max_entries": 3})
    (pull,) = built
    assert m["items_delivered"] == 40
    assert max(n.forwarder.cs.peak_entries for n in pull.tree.nodes.values()) == 3
    assert m["cs_entries_max"] == 3


def test_publish_with_ndn_needs_a_radio_network():
    text = """
name = "pair"
description = "two nodes on one link"
[network]
topology = "pair"
[network.link]
layer = "ieee802154"
mtu_bytes = 100
[workload]
kind = "publish"
interval_s = 5.0
[protocol]
name = "ndn"
"""
    with pytest.raises(ScenarioError, match="publish with ndn runs on a radio network"):
        expand(parse_scenario(text))


def test_the_exchange_is_one_of_pull_and_inot():
    with pytest.raises(ScenarioError, match="ndn_exchange.*pull.*inot"):
        publish_config("ndn", **{"workload.ndn_exchange": "push"})


def test_runs_are_deterministic():
    assert same_metrics(ndn_run("pull"), ndn_run("pull"))
    assert same_metrics(ndn_run("inot"), ndn_run("inot"))


def test_an_interest_lives_its_lifetime_from_when_it_is_sent():
    """The consumer's first Interest at start_s = 10 s, on a forwarder that had seen
    nothing yet: its lifetime counts from 10 s, not from the forwarder's last event
    (time 0), or it would expire before it left."""
    from test_radio_network import config

    cfg, seed = config(
        "ndn", **{"workload.start_s": 10.0, "workload.items": 3, "protocol.ndn.signature": "hmac"}
    )
    m = run_one(cfg, seed).metrics
    assert m["items_delivered"] == 3
