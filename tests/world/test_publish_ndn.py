"""The publish workload over NDN: S4's `ndn` (the gateway pulls /<prefix>/<n>) and
`ndn-inot` (each reading rides an Interest to the gateway)."""

from __future__ import annotations

import pytest
from spies import instances, spy
from test_radio_network import publish_config

from iotbench.proto.ndn.interest import Interest
from iotbench.proto.ndn.name import ComponentType
from iotbench.scenarios import ScenarioError, expand, parse_scenario
from iotbench.world import run_one
from iotbench.world.publish_ndn import NdnInterestNotification, NdnPull, producer_prefix

S4_NDN = {
    "protocol.ndn.retx_max": 4,
    "protocol.ndn.retx_interval_s": 2.0,
    "protocol.ndn.interest_lifetime_ms": 10_000,
    "protocol.ndn.pit_max_entries": 10,
    "protocol.ndn.cs_max_bytes": 10_240,
    "protocol.ndn.fib_max_entries": 50,
    "protocol.ndn.signature": "hmac",
}


def ndn_run(exchange: str, **sets):
    cfg, seed = publish_config("ndn", **{"workload.ndn_exchange": exchange, **S4_NDN, **sets})
    return run_one(cfg, seed)


def test_a_producer_prefix_is_one_component_of_the_configured_size():
    prefix = producer_prefix(7, 24)
    assert len(prefix) == 1 and len(prefix[0].value) == 24
    assert prefix[0].value == b"p" + b"0" * 22 + b"7"
    assert producer_prefix(7, 24) != producer_prefix(70, 24)
    with pytest.raises(ValueError, match="cannot name producer 1000"):
        producer_prefix(1000, 4)


def test_pull_fetches_every_reading_by_its_name(monkeypatch):
    asked = spy(monkeypatch, NdnPull, "_ask")
    m = ndn_run("pull")
    assert m["items"] == 40 and m["items_delivered"] == 40
    assert m["items_unfinished"] == 0 and m["hit_time_limit"] == 0
    # Each producer polled in turn; a poll before the reading was taken finds nothing
    # and asks again at the next one.
    assert {p for (p,) in asked} == set(range(5))
    assert m["requests_per_item"] == len(asked) / 40 >= 1.0
    # A reading waits for the next poll: up to a poll interval (5 s).
    assert 0.5 < m["tta_mean_s"] < 4.5 and m["tta_p99_s"] < 5.5


def test_pull_polls_find_nothing_before_a_reading_and_a_late_gateway_catches_up():
    """Polling every second: most polls come before the next reading and get a
    `not-yet` Nack at once (no PIT holds them); MustBeFresh keeps cached Nacks
    from answering later polls, so every reading arrives within about a poll.
    Polling every 10 s while readings come every 5 s: CoAP GET loses about every
    other reading (the producer keeps only its latest); NDN's unique names and the
    producer's Content Store keep them, and each owed poll fetches one more."""
    fast = ndn_run("pull", **{"workload.poll_interval_s": 1.0})
    assert fast["items_delivered"] == 40
    assert fast["latency_max_s"] < 1.2
    assert fast["requests_per_item"] > 3  # five polls per reading, one finds it
    assert fast["pit_occupancy_max"] <= 2  # nothing waits in a PIT
    slow = ndn_run("pull", **{"workload.poll_interval_s": 10.0})
    assert slow["items_delivered"] == 40 and slow["items_given_up"] == 0
    assert slow["requests_per_item"] < 1.5


def test_pull_gives_up_a_reading_the_producer_no_longer_holds(monkeypatch):
    """Without a Content Store the producer keeps no reading: one asked for after it
    was taken gets an application Nack, the reading is lost, the gateway moves on."""
    nacked = spy(monkeypatch, NdnPull, "_on_interest")
    m = ndn_run("pull", **{"protocol.ndn.cs_max_bytes": 0, "workload.poll_interval_s": 10.0})
    assert m["items_given_up"] > 0 and nacked
    assert m["items_delivered"] + m["items_given_up"] == 40
    assert m["items_unfinished"] == 0 and m["hit_time_limit"] == 0


def test_inot_carries_each_reading_in_an_interest_and_caches_nothing(monkeypatch):
    calls = spy(monkeypatch, NdnInterestNotification, "_on_interest")
    built = instances(monkeypatch, NdnInterestNotification)
    m = ndn_run("inot")
    seen: list[Interest] = [interest for (interest,) in calls]
    assert m["items_delivered"] == 40
    assert m["latency_max_s"] < 0.5  # pushed at once: no poll to wait for
    assert len({bytes(i.app_parameters) for i in seen}) == 40
    first = seen[0]
    assert first.app_parameters.startswith(b'{"id":"0x')
    assert first.name[-1].type == ComponentType.PARAMETERS_SHA256_DIGEST
    assert len(first.name[0].value) == 24
    (tree,) = [b.tree for b in built]
    assert all(n.forwarder.counters.cs_inserts == 0 for n in tree.nodes.values())


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
    assert ndn_run("pull") == ndn_run("pull")
    assert ndn_run("inot") == ndn_run("inot")


def test_an_interest_lives_its_lifetime_from_when_it_is_sent():
    """The consumer's first Interest at start_s = 10 s, on a forwarder that had seen
    nothing yet: its lifetime counts from 10 s, not from the forwarder's last event
    (time 0), or it would expire before it left."""
    from test_radio_network import config

    cfg, seed = config(
        "ndn", **{"workload.start_s": 10.0, "workload.items": 3, "protocol.ndn.signature": "hmac"}
    )
    m = run_one(cfg, seed)
    assert m["items_delivered"] == 3


def test_the_gateway_keeps_its_interests_within_its_own_pit(monkeypatch):
    """Five producers polled every second, each answer taking an M3 270 ms to sign
    (ECDSA), through a PIT of one entry: the gateway asks one at a time and the
    others wait their turn; its own forwarder never drops one of its Interests
    for want of room."""
    built = instances(monkeypatch, NdnPull)
    waited: list[int] = []
    serve = NdnPull._serve

    def watch(self):
        waited.append(len(self.queue))
        return serve(self)

    monkeypatch.setattr(NdnPull, "_serve", watch)
    m = ndn_run(
        "pull",
        **{
            "protocol.ndn.pit_max_entries": 1,
            "protocol.ndn.signature": "ecdsa",
            "workload.poll_interval_s": 1.0,
        },
    )
    (pull,) = built
    assert m["items_delivered"] == 40
    assert max(waited) >= 2  # asks did wait for the one Interest
    assert pull.tree.gateway.forwarder.counters.pit_full_drops == 0
    assert pull.tree.gateway.forwarder.pit.peak == 1
    assert pull.out == 0 and not pull.queue
