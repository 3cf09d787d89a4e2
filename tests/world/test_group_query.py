"""The group-query workload (S6) on a radio network: the Entity Manager on the gateway,
members on the producers, the client behind the uplink; unicast and multicast."""

from __future__ import annotations

import pytest

from iotbench.scenarios import ScenarioError, expand, parse_scenario
from iotbench.world import run_one

SCENARIO = """
name = "s6-test"
description = "a small group"
seed = 1
max_sim_time_s = 2000.0

[network]
topology = "grid"

[network.nodes]
count = 16
spacing_m = 12.0

[network.roles]
gateway = "n5"
producer_count = 6
client = "uplink"

[network.uplink]

[workload]
kind = "group-query"
queries = 6
start_s = 120.0
path = "/s/t"

[protocol]
name = "coap"

[protocol.coap.em]
mode = "{mode}"
delay_ms = {delay}
leisure_s = 2.0
"""


def run(mode: str, delay: float = 0.0, **overrides) -> dict:
    (r,) = expand(parse_scenario(SCENARIO.format(mode=mode, delay=delay), "s6.toml"), {}, overrides)
    return run_one(r.config, r.seed)


def test_unicast_queries_reach_every_member_delay_apart():
    fast, slow = run("unicast"), run("unicast", delay=200)
    for m in (fast, slow):
        assert (m["group_size"], m["queries"], m["items_delivered"]) == (6, 6, 6)
        assert m["member_reliability"] == 1.0 and m["group_reliability"] == 1.0
    # Five gaps of 200 ms between the six requests to members; without a delay the
    # six requests queue at the gateway's MAC instead, which costs a little too.
    gained = slow["response_time_median_s"] - fast["response_time_median_s"]
    assert 0.85 < gained < 1.0
    assert (
        fast["response_time_min_s"] <= fast["response_time_p25_s"] <= fast["response_time_median_s"]
    )
    assert (
        fast["response_time_median_s"] <= fast["response_time_p75_s"] <= fast["response_time_max_s"]
    )


def test_multicast_queries_wait_for_the_leisure_and_send_fewer_messages():
    uni, multi = run("unicast"), run("multicast")
    assert multi["member_reliability"] == 1.0 and multi["items_delivered"] == 6
    # The answer comes with the last member's reply: within the 2 s leisure.
    assert 0.0 < multi["response_time_max_s"] <= 2.0 + 0.5
    assert multi["radio_messages_per_query"] < uni["radio_messages_per_query"]


def test_runs_are_deterministic():
    assert run("multicast") == run("multicast")


def test_group_query_needs_coap_and_the_uplink_client():
    text = SCENARIO.format(mode="unicast", delay=0).replace(
        'client = "uplink"', 'client = "gateway"'
    )
    with pytest.raises(ScenarioError, match="group-query: the client is the host behind"):
        expand(parse_scenario(text, "s6.toml"), {}, {})
