"""The group-query workload (S6) on a radio network: the Entity Manager on the gateway,
members on the producers, the client behind the uplink; unicast and multicast."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from iotbench.proto.coap.group import leisure_lower_bound_s
from iotbench.proto.ndn.profiles import PROFILES
from iotbench.scenarios import ScenarioError, expand, load_scenario, parse_scenario
from iotbench.world import run_one
from iotbench.world.workloads.group_query import member_response_bytes, pick_members

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
    return run_one(r.config, r.seed).metrics


def test_unicast_queries_reach_every_member_delay_apart():
    fast, slow = run("unicast"), run("unicast", delay=200)
    for m in (fast, slow):
        assert (m["group_size"], m["queries"], m["items_delivered"]) == (6, 6, 6)
        assert m["member_reliability"] == 1.0 and m["group_reliability"] == 1.0
    # Five gaps of 200 ms between the six requests to members; without a delay the
    # six requests queue at the gateway's MAC instead, which costs a little too (and
    # the six answers coming back at once may collide: a CoAP retransmission 2 to 3
    # s later, so compare the quickest queries).
    gained = slow["response_time_min_s"] - fast["response_time_min_s"]
    assert 0.85 < gained < 1.0
    assert slow["response_time_max_s"] < 1.1
    assert (
        fast["response_time_min_s"] <= fast["response_time_p25_s"] <= fast["response_time_median_s"]
    )
    assert (
        fast["response_time_median_s"] <= fast["response_time_p75_s"] <= fast["response_time_max_s"]
    )


def test_multicast_queries_wait_for_the_leisure_and_send_fewer_messages():
    # A network where no RPL upkeep (DAOs after the joins) falls into the six queries'
    # window, which would weigh more than the queries themselves.
    seed = {"network.seed": 3}
    uni, multi = run("unicast", **seed), run("multicast", **seed)
    assert multi["member_reliability"] == 1.0 and multi["items_delivered"] == 6
    # The time runs to the last member's reply at the EM: within the 2 s leisure.
    assert 0.0 < multi["response_time_max_s"] <= 2.0 + 0.1
    assert multi["radio_messages_per_query"] < uni["radio_messages_per_query"]


def test_runs_are_deterministic():
    assert run("multicast") == run("multicast")


def test_group_query_needs_coap_and_the_uplink_client():
    text = SCENARIO.format(mode="unicast", delay=0).replace(
        'client = "uplink"', 'client = "gateway"'
    )
    with pytest.raises(ScenarioError, match="group-query: the client is the host behind"):
        expand(parse_scenario(text, "s6.toml"), {}, {})


def test_members_picked_by_hop_count_average_the_asked_hops():
    # Four hops deep; network 2's RPL tree has six nodes one hop from the gateway.
    weak = {"network.radio.tx_power_dbm": -25.0, "network.seed": 2}
    near = run("unicast", **weak, **{"workload.member_hops_mean": 1.0})
    far = run("unicast", **weak, **{"workload.member_hops_mean": 2.0})
    assert near["group_size"] == far["group_size"] == 6
    assert near["member_hops_mean"] == pytest.approx(1.0)
    assert far["member_hops_mean"] == pytest.approx(2.0)
    assert far["member_reliability"] == 1.0


def test_an_entity_the_em_refuses_is_asked_for_again_then_the_run_says_it_failed():
    # A Wi-Fi transmitter on the gateway's channel, on without a pause from just before
    # the client asks: no member hears the EM's request to join, so the EM refuses;
    # the client (on the Ethernet side) asks five times, a minute apart, then stops.
    jam = (
        "[{ position = [0.0, 0.0], rate_bps = 54e6, frame_bytes = 100000000, "
        "channel = 6, start_s = 110.0 }]"
    )
    text = (
        SCENARIO.format(mode="multicast", delay=0)
        .replace('topology = "grid"', f'topology = "grid"\ninterferers = {jam}')
        .replace("[network.roles]", "[network.radio]\nchannel = 17\n\n[network.roles]")
    )
    (r,) = expand(parse_scenario(text, "s6.toml"), {}, {})
    m = run_one(r.config, r.seed).metrics
    assert (m["entity_created"], m["entity_create_attempts"], m["queries"]) == (0, 5, 0)
    assert m["member_reliability"] == 0.0 and m["group_reliability"] == 0.0


NESTED = {"network.second": {"channel": 20}}


def test_nested_entities_on_two_gateways_gather_in_parallel():
    """Six members on each of two networks: the top entity asks the two entities 200
    ms apart, and each gathers its members in parallel with the other, so a query
    takes one network's five 200 ms gaps and one more, not eleven."""
    flat = run("unicast", delay=200, **NESTED)
    nested = run("unicast", delay=200, **NESTED, **{"workload.entity": "nested"})
    assert flat["group_size"] == 6 and nested["group_size"] == 12
    for m in (flat, nested):
        assert m["member_reliability"] == 1.0 and m["group_reliability"] == 1.0
        assert m["entity_created"] == 1 and m["entity_create_attempts"] == 1
    # The second network is a twin: its six members sit where the first's do.
    assert nested["member_hops_mean"] == flat["member_hops_mean"]
    assert 1.2 < nested["response_time_median_s"] < 1.2 + 0.2
    assert 0.15 < nested["response_time_median_s"] - flat["response_time_median_s"] < 0.25
    # Both networks' frames count, the Ethernet links' do not.
    assert nested["radio_messages_per_query"] > 1.8 * flat["radio_messages_per_query"]


def test_the_second_network_reaches_the_first_only_through_the_rejection():
    """Its own channel (6 away: the AT86RF231 rejects it by 54 dB), its own streams:
    the first network's queries keep their reliability and take about the same time,
    though each node's twin, a metre's loss away, still leaks in as noise."""
    seed = {"network.seed": 3}
    alone = run("unicast", delay=100, **seed)
    beside = run("unicast", delay=100, **NESTED, **seed)
    assert beside["member_reliability"] == alone["member_reliability"] == 1.0
    assert beside["radio_messages_per_query"] == alone["radio_messages_per_query"]
    assert beside["response_time_mean_s"] == pytest.approx(alone["response_time_mean_s"], abs=0.01)
    assert beside["mac_frames"] > alone["mac_frames"]  # the second network's RPL


def test_nested_needs_a_second_network_on_its_own_channel():
    with pytest.raises(ScenarioError, match=r"workload\.entity.*nested needs a second radio"):
        run("unicast", **{"workload.entity": "nested"})
    with pytest.raises(ScenarioError, match=r"network\.second\.channel.*first network's channel"):
        run("unicast", **{"network.second": {"channel": 26}})


def test_the_leisure_can_be_the_rfcs_lower_bound_for_the_group():
    """S x G / R: six members' 18-byte answers at 1 kbit/s is 0.86 s, not 2 s."""
    size = member_response_bytes(4)
    assert size == 4 + 4 + 1 + 1 + len("21.7 Cel")  # header, token, Content-Format, marker
    bound = leisure_lower_bound_s(size, 6, 1000.0)
    assert bound == pytest.approx(0.864)
    m = run("multicast", **{"protocol.coap.em.leisure_rate_bps": 1000.0})
    assert m["member_reliability"] == 1.0
    # The EM waits the bound (plus its margin) instead of the 2 s leisure_s.
    assert m["response_time_max_s"] <= bound + 1.0 + 0.05
    assert m["response_time_max_s"] < 2.0


def test_a_failed_query_keeps_its_time():
    """Jammed after the entity exists: no member answers, every query fails, and each
    one's time (to the EM's 5.04, after the members' CoAP give-up) is counted."""
    jam = (
        "[{ position = [18.0, 18.0], rate_bps = 54e6, frame_bytes = 100000000, "
        'channel = 6, start_s = 125.0, pattern = "poisson" }]'
    )
    text = (
        SCENARIO.format(mode="unicast", delay=0)
        .replace('topology = "grid"', f'topology = "grid"\ninterferers = {jam}')
        .replace("[network.roles]", "[network.radio]\nchannel = 17\n\n[network.roles]")
        .replace("queries = 6", "queries = 2\nquery_start_s = 126.0")
    )
    (r,) = expand(parse_scenario(text, "s6.toml"), {}, {"network.seed": 3})
    m = run_one(r.config, r.seed).metrics
    assert m["entity_created"] == 1 and m["queries"] == 2 and m["queries_failed"] == 2
    assert m["member_reliability"] == 0.0
    # CON to each member: 2 s, doubling, four retransmissions: 93 s at most (RFC 7252).
    assert 30.0 < m["response_time_min_s"] <= m["response_time_max_s"] < 100.0
    assert m["response_time_mean_s"] == pytest.approx(
        (m["response_time_min_s"] + m["response_time_max_s"]) / 2
    )


SLIP_HOST = {
    "network.uplink": {"kind": "serial", "framing": "slip", "baud": 115200},
    "workload.em_on": "uplink",
}


def test_the_em_on_the_gateways_host_behind_slip():
    """S6's EM ran on a Linux host behind Contiki's rpl-border-router on a 115,200 baud
    SLIP line: every request to a member and its answer cross the line (about 6 ms
    for a 70-byte datagram), and a multicast request goes down the DODAG from the
    border router as if it had sent it."""
    seed = {"network.seed": 3}
    on_gateway = run("unicast", delay=100, **seed, **{**SLIP_HOST, "workload.em_on": "gateway"})
    on_host = run("unicast", delay=100, **seed, **SLIP_HOST)
    assert on_host["member_reliability"] == on_gateway["member_reliability"] == 1.0
    # On the host: five 100 ms gaps, and the last member's request and answer cross
    # the line (10 ms or more). On the gateway, the client's request and the EM's
    # six-line answer (about 300 bytes, 26 ms) cross it instead.
    assert on_host["response_time_min_s"] > 0.5 + 2 * 60 / 11520
    assert on_gateway["response_time_min_s"] > on_host["response_time_min_s"] + 0.01
    multi = run("multicast", **seed, **SLIP_HOST)
    assert multi["entity_created"] == 1 and multi["member_reliability"] == 1.0
    nested = run(
        "unicast", delay=100, **seed, **SLIP_HOST, **NESTED, **{"workload.entity": "nested"}
    )
    assert nested["group_size"] == 12 and nested["member_reliability"] == 1.0


def test_time_on_the_nodes_lengthens_every_exchange():
    """With S6's devices (network.device rm090, the EM's host em-host) the last
    member's exchange takes the gateway's two forwardings (1.81 ms each) and the
    member's request in and response out (1.14 ms each), about 5.9 ms, less what
    overlaps the radios' own acknowledgements, which the CC2520 sends while the
    MSP430 reads the frame; the EM's 21.5 us per message adds a little."""
    devices = {"network.device.profile": "rm090", "network.uplink.profile": "em-host"}
    free, timed = run("unicast", delay=100), run("unicast", delay=100, **devices)
    assert free["member_hops_max"] == timed["member_hops_max"] == 1
    gained = timed["response_time_min_s"] - free["response_time_min_s"]
    assert 0.0045 < gained < 0.0065
    assert timed["member_reliability"] == 1.0


def test_a_host_that_works_through_its_messages_one_at_a_time_spaces_the_burst():
    """s6.md's what-if: an EM host at 2 ms a message still sends the no-delay burst
    together, which meets a busy channel and waits for CoAP's retransmission (2 to
    3 s); at 10 ms a message its own pace spaces the requests, the burst is gone,
    and 100 ms between requests stays short of the study's 0.55 s (the two ends of
    the sweep s6.md tabulates)."""
    scenario = load_scenario("s6-delay-sweep")
    times = {}
    for per_message_s in (0.002, 0.010):
        slowdown = per_message_s / PROFILES["em-host"].cost_s("coap_message")
        for delay in (0, 100):
            (r,) = expand(
                scenario,
                {"group_size": ["5"], "delay_ms": [str(delay)]},
                {"workload.queries": 10, "network.uplink.cpu_slowdown": slowdown},
            )
            metrics = run_one(r.config, r.seed).metrics
            assert metrics["member_reliability"] == 1.0
            times[per_message_s, delay] = metrics["response_time_mean_s"]
    assert times[0.002, 0] > 2.0 and times[0.010, 0] < 1.0
    assert times[0.002, 100] < times[0.010, 100] < 0.5


def test_a_stepped_sweep_lives_through_every_step_and_measures_the_last():
    """S6 raised the Wi-Fi rate step by step over one network: with earlier rates the
    run makes its queries at each of them first, then measures its own step."""

    def wifi(**kw):
        spec = {"position": [18.0, 18.0], "rate_bps": 2e6, "channel": 13, "start_s": 110.0}
        return {"network.interferers": [{**spec, **kw}], "network.radio.channel": 26}

    alone = run("unicast", delay=100, **wifi())
    stepped = run("unicast", delay=100, **wifi(earlier_rates_bps=[0.0, 1e6]))
    assert (alone["sweep_steps"], stepped["sweep_steps"]) == (1, 3)
    for m in (alone, stepped):  # six measured queries, the earlier twelve not items
        assert m["queries"] == m["items_delivered"] + m["items_given_up"] == 6
    # The earlier steps' twelve queries took their time and their frames: the run
    # is longer and its network counters larger, its per-query ones its own step's.
    assert stepped["sim_time_s"] > alone["sim_time_s"] + 12 * 0.5  # 1 s apart, or more
    assert stepped["mac_frames"] > alone["mac_frames"]
    assert stepped["radio_messages_per_query"] < stepped["mac_frames"] / 6
    uneven = wifi(earlier_rates_bps=[0.0])
    uneven["network.interferers"].append({**uneven["network.interferers"][0], "channel": 1})
    uneven["network.interferers"][1].pop("earlier_rates_bps")
    with pytest.raises(ScenarioError, match="as many earlier rates as the others"):
        run("unicast", **uneven)


class _Tree:
    def __init__(self, hops):
        self.hops = hops


class _Net:
    """What pick_members reads of a network: its hosts, its gateway and its tree."""

    def __init__(self, levels: dict[int, int]):
        hops = [0]  # the gateway
        for h, n in sorted(levels.items()):
            hops += [h] * n
        self.hosts = {f"n{i}": f"n{i}" for i in range(len(hops))}
        self.tree = _Tree(hops)

    def ids(self, role):
        return ["n0"]


# The S6 room's levels (network 3 from GW1: docs/studies/s6.md).
ROOM = {1: 11, 2: 19, 3: 14, 4: 13, 5: 2}


@pytest.mark.parametrize(
    ("size", "mean", "most", "histogram"),
    [  # S6's Table 7: the members' mean and maximum hop count per group size
        (5, 1.0, 1, {1: 5}),
        (10, 1.4, 2, {1: 6, 2: 4}),
        (20, 1.7, 3, {1: 7, 2: 12, 3: 1}),
        (29, 1.8, 3, {1: 8, 2: 19, 3: 2}),
        (40, 2.4, 5, {1: 5, 2: 18, 3: 14, 4: 2, 5: 1}),
    ],
)
def test_groups_meet_table_7s_mean_and_maximum(size, mean, most, histogram):
    net = _Net(ROOM)
    chosen = pick_members(net, size, mean, random.Random(1), most)
    hops = [net.tree.hops[int(name[1:])] for name in chosen]
    assert len(set(chosen)) == size and "n0" not in chosen
    assert max(hops) == most
    assert sum(hops) / size == pytest.approx(mean, abs=0.5 / size)
    # As close together as the mean and the maximum allow: one member on the farthest
    # level, the others on neighbouring levels, filled from the gateway out.
    assert dict(sorted(Counter(hops).items())) == histogram


def test_the_picker_says_when_the_network_cannot_give_the_group():
    with pytest.raises(ValueError, match="no node is 6 hops"):
        pick_members(_Net(ROOM), 10, 1.4, random.Random(1), 6)
    with pytest.raises(ValueError, match="30 members wanted within 1 hops"):
        pick_members(_Net(ROOM), 30, 1.0, random.Random(1), 1)
