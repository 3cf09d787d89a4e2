"""Radio networks end to end: the existing stacks over 6LoWPAN, NDN over frames,
multi-hop forwarding, static routes, SMRF multicast, the uplink, interferers."""

from __future__ import annotations

import math

import pytest

from iotbench.metrics.observers import Observers, PacketRecorder  # noqa: F401
from iotbench.net import ip
from iotbench.scenarios import expand, parse_scenario
from iotbench.scenarios.settings import run_settings
from iotbench.sim import Simulator
from iotbench.world import run_one
from iotbench.world.networks import build_network
from iotbench.world.networks.topology import TopologyError

BASE = """
name = "radio"
description = "a radio network"
[network]
topology = "line"
[network.nodes]
count = 5
spacing_m = 40.0
[network.roles]
producers = ["n4"]
[network.radio.path_loss]
# No shadowing: powers follow from the distances alone, whatever the seed
# (40 m: -84 dBm, 80 m: -94 dBm, 120 m: -99 dBm, 160 m: -103 dBm).
shadowing_db = 0.0
[network.routing]
protocol = "static"
[workload]
kind = "sequential"
items = 10
[protocol]
name = "{protocol}"
"""


def config(protocol: str = "coap", extra: str = "", **overrides) -> tuple[dict, int]:
    text = BASE.format(protocol=protocol) + extra
    (run,) = expand(parse_scenario(text), {}, overrides)
    return run.config, run.seed


def network(cfg: dict, seed: int = 1, recorder: PacketRecorder | None = None):
    sim = Simulator(seed)
    observers = Observers(*([recorder] if recorder else []))
    settings = run_settings(cfg)
    net = build_network(sim, settings.network, observers, settings.protocol)
    return sim, net


def test_static_routes_follow_the_tree():
    cfg, _ = config()
    sim, net = network(cfg)
    tree, ids = net.tree, list(net.hosts)
    gateway = net.hosts["n0"]
    for name in ids[1:]:
        route = gateway.route(net.address(net.hosts[name]))
        assert route is not None and route[1] is not None  # via a neighbour
    for i, name in enumerate(ids):
        parent = tree.parent[i]
        default = net.hosts[name].default_route
        if parent is None:
            assert name == "n0"
        else:  # up through the parent, by its link-local address
            assert default[1] == net.interfaces[ids[parent]].link_local
    assert tree.depth() >= 2  # 160 m is too far for one hop at these powers


@pytest.mark.parametrize("protocol", ["coap", "mqttsn", "ndn"])
def test_every_stack_crosses_the_multi_hop_line(protocol):
    cfg, seed = config(protocol)
    m = run_one(cfg, seed).metrics
    assert m["items_delivered"] == 10, m
    assert m["tree_depth"] >= 2
    # Every hop is a frame and its acknowledgment, and nodes in between forward.
    assert m["packets_ack"] > 0 and m["mac_frames"] >= 10 * 2 * m["tree_depth"]
    assert m["energy_j_total"] > 0


def test_a_radio_run_is_deterministic_in_metrics_and_pcap(tmp_path):
    cfg, seed = config()
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    assert (
        run_one(cfg, seed, pcap_path=str(a)).metrics == run_one(cfg, seed, pcap_path=str(b)).metrics
    )
    assert a.read_bytes() == b.read_bytes() and len(a.read_bytes()) > 1000
    assert run_one(cfg, seed + 1).metrics != run_one(cfg, seed).metrics


def test_layers_of_forwarded_frames_add_up():
    """A CoAP request crosses hops as the same IPv6 packet: each frame carries it
    whole (uncompressed dispatch), split into link, IP, UDP, CoAP and payload."""
    cfg, seed = config(**{"workload.items": 1})
    m = run_one(cfg, seed).metrics
    assert m["bytes_total"] == (
        m["bytes_link_header"]
        + m["bytes_ip_header"]
        + m["bytes_transport_header"]
        + m["bytes_app_header"]
        + m["bytes_payload"]
    )
    data_frames = m["packets_data"]
    # 40 bytes of IPv6 and 8 of UDP in every data frame; the dispatch byte, MAC
    # header and FCS below them.
    assert m["bytes_ip_header"] == 40 * data_frames
    assert m["bytes_transport_header"] == 8 * data_frames
    assert m["bytes_link_header"] == (1 + 21 + 2) * data_frames + 5 * m["packets_ack"]


def test_smrf_carries_a_group_down_to_its_members_only():
    cfg, seed = config()
    sim, net = network(cfg, seed)
    group = ip.address_bytes("ff1e::89:1")
    got: dict[str, list[bytes]] = {}
    for name, host in net.hosts.items():
        host.udp_bind(
            5683,
            lambda payload, src, sp, dp, dst, name=name: got.setdefault(name, []).append(payload),
        )
    net.hosts["n4"].join(group)
    gateway = net.hosts["n0"]
    sim.at(1.0, gateway.udp_send, 5683, group, 5683, b"to the group")
    sim.run(until=10.0)
    assert got == {"n4": [b"to the group"]}
    smrf = {name: host.multicast_forwarder for name, host in net.hosts.items()}
    path = net.tree_path("n0", "n4")
    # Exactly the nodes between the gateway and the member passed it on.
    assert [n for n in path[1:-1] if smrf[n].forwarded] == path[1:-1]
    assert all(smrf[n].forwarded == 0 for n in net.hosts if n not in path[1:-1])
    # After the member leaves, nobody forwards the group any more.
    net.hosts["n4"].leave(group)
    sim.at(20.0, gateway.udp_send, 5683, group, 5683, b"again")
    sim.run(until=30.0)
    assert got == {"n4": [b"to the group"]}


def test_a_client_behind_the_uplink_reaches_a_producer_through_the_gateway(tmp_path):
    extra = "\n[network.uplink]\ndelay_s = 0.01\n"
    cfg, seed = config(extra=extra, **{"network.roles.client": "uplink"})
    pcap = tmp_path / "run.pcapng"
    m = run_one(cfg, seed, pcap_path=str(pcap)).metrics
    assert m["items_delivered"] == 10
    # Two 10 ms uplink crossings in every round trip.
    assert m["latency_min_s"] > 0.02
    head = pcap.read_bytes()[:4]
    assert head == bytes.fromhex("0a0d0d0a")  # a pcapng section: two media, two interfaces


def test_an_interferer_beside_the_gateway_costs_deliveries():
    # Wi-Fi channel 1 (2412 MHz) covers 802.15.4 channel 11 (2405 MHz).
    extra = (
        "\n[[network.interferers]]\nposition = [2.0, 1.0]\nrate_bps = 20e6\nchannel = 1\n"
        "tx_power_dbm = 15.0\n"
    )
    quiet, seed = config(**{"workload.items": 30})
    noisy, _ = config(extra=extra, **{"workload.items": 30, "network.radio.channel": 11})
    a, b = run_one(quiet, seed).metrics, run_one(noisy, seed).metrics
    assert b["mac_cca_busy"] > 10 * max(1, a["mac_cca_busy"])
    assert b["items_delivered"] < a["items_delivered"]


def test_an_interferer_on_another_channel_bothers_far_less():
    """Wi-Fi channel 1 covers 802.15.4 channels 11-14; channel 26 gets only the
    mask's -50 dB skirt. 22 m from the gateway a 20 dBm transmitter arrives at about
    -69 dBm in channel 11 and -109 dBm in channel 26."""
    extra = "\n[[network.interferers]]\nposition = [20.0, 10.0]\nrate_bps = 20e6\nchannel = 1\n"
    same, seed = config(extra=extra, **{"network.radio.channel": 11})
    other, _ = config(extra=extra, **{"network.radio.channel": 26})
    a, b = run_one(same, seed).metrics, run_one(other, seed).metrics
    assert a["mac_cca_busy"] > 5 * b["mac_cca_busy"]
    assert a["items_delivered"] < b["items_delivered"]


def test_an_interferer_in_another_building_is_two_outer_walls_weaker():
    from iotbench.net.radio import phy
    from iotbench.net.radio.propagation import o2i_low_loss_db

    station = "\n[[network.interferers]]\nposition = [2.0, 1.0]\nrate_bps = 1e6\nchannel = 1\n"
    powers = {}
    for building in (0, 1):
        cfg, seed = config(
            extra=station + f"building = {building}\n", **{"network.radio.channel": 11}
        )
        _, net = network(cfg, seed)
        (interferer,) = net.interferers
        powers[building] = {
            key: {radio.name: mw for radio, mw in targets}
            for key, targets in interferer.targets.items()
        }
    wall_db = 2 * o2i_low_loss_db(phy.channel_center_mhz(11))
    for key, inside in powers[0].items():
        outside = powers[1][key]
        assert outside and set(outside) <= set(inside)  # the weakest fall under the floor
        for name, mw in outside.items():
            assert phy.mw_to_dbm(inside[name]) - phy.mw_to_dbm(mw) == pytest.approx(wall_db)


def test_a_node_out_of_reach_is_a_clear_error():
    cfg, seed = config(**{"network.nodes.spacing_m": 2000.0})
    with pytest.raises(TopologyError, match="reaches no other node"):
        run_one(cfg, seed)


def test_a_tree_that_misses_nodes_is_a_clear_error(tmp_path):
    """Two pairs of nodes, 2 km apart: every node reaches another, but the
    gateway's tree cannot reach the far pair."""
    (tmp_path / "n.csv").write_text("id,x,y\ngw,0,0\na,20,0\nb,2000,0\nc,2020,0\n")
    text = (
        BASE.format(protocol="coap")
        .replace('topology = "line"', 'topology = "file"')
        .replace("count = 5\nspacing_m = 40.0", 'file = "n.csv"')
        .replace('["n4"]', '["c"]\ngateway = "gw"')
    )
    path = tmp_path / "s.toml"
    path.write_text(text)
    from iotbench.scenarios import load_scenario

    (run,) = expand(load_scenario(path))
    with pytest.raises(TopologyError, match="from the gateway 'gw' does not reach b, c"):
        run_one(run.config, run.seed)


def test_publish_workload_counts_every_reading_once():
    extra = "\n"
    cfg, seed = config(
        extra=extra,
        **{
            "network.nodes.count": 6,
            "network.roles.producers": [],
            "workload.kind": "publish",
            "workload.interval_s": 5.0,
            "workload.items": 8,
            "protocol.coap.type": "con",
        },
    )
    m = run_one(cfg, seed).metrics
    assert m["items"] == 5 * 8
    assert m["items_delivered"] + m["items_given_up"] == 40
    assert m["items_delivered"] >= 38
    assert math.isfinite(m["latency_p99_s"]) and m["latency_min_s"] > 0


def publish_config(protocol: str = "coap", **sets):
    return config(
        protocol,
        **{
            "network.nodes.count": 6,
            "network.roles.producers": [],
            "workload.kind": "publish",
            "workload.interval_s": 5.0,
            "workload.items": 8,
            **sets,
        },
    )


def _recording(init, made: list):
    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    return recording


@pytest.mark.parametrize("qos", [0, 1])
def test_mqttsn_publish_registers_once_then_publishes_every_reading(qos, monkeypatch):
    """S4's MQTT-SN: one session per producer, the topic registered once, then
    every reading published under its topic id to the gateway beside the broker."""
    from iotbench.proto.mqttsn import events as sn_ev

    # The clients' events as they are made (the events are Python classes; the
    # client and the publisher are compiled, so a patched method of theirs would
    # not be seen): a REGISTER asked again, after a failure or a lost session,
    # would show as a failed request or a disconnection.
    made: list = []
    for cls in (sn_ev.Registered, sn_ev.RequestFailed, sn_ev.Disconnected):
        monkeypatch.setattr(cls, "__init__", _recording(cls.__init__, made))
    cfg, seed = publish_config(
        "mqttsn",
        **{
            "protocol.mqttsn.qos": qos,
            "protocol.mqttsn.retry_interval_s": 2.0,
            "protocol.mqttsn.max_retries": 4,
        },
    )
    m = run_one(cfg, seed).metrics
    # A producer takes readings once its topic is registered (S4's publishing timer
    # starts at the REGACK): 8 per producer, the early ones not taken.
    assert m["items"] + m["readings_skipped"] == 40
    assert m["items_delivered"] + m["items_given_up"] == m["items"]
    assert m["items_delivered"] >= m["items"] - 2
    registered = [e.topic for e in made if isinstance(e, sn_ev.Registered)]
    assert registered == ["sensor/reading"] * 5  # once per producer
    assert [e for e in made if not isinstance(e, sn_ev.Registered)] == []  # none lost
    assert m["latency_p50_s"] < 0.05  # a reading is a PUBLISH, not a session


def test_coap_get_asks_for_the_current_value_or_polls_the_latest_reading():
    """Scheduled (S4's code): the gateway's GET is the item, the producer answers with
    the value it takes then. Polled (poll_interval_s): the producer keeps its latest
    reading, and one a newer replaced before any poll fetched it is lost; a poll that
    finds the same reading again fetches a duplicate."""
    scheduled = run_one(*publish_config(**{"workload.coap_exchange": "get"})).metrics
    assert scheduled["items"] == 40 and scheduled["items_delivered"] == 40
    assert scheduled["requests_per_item"] == 1.0 and scheduled["latency_max_s"] < 0.1
    every = {}
    for poll in (1.0, 10.0):
        cfg, seed = publish_config(
            **{"workload.coap_exchange": "get", "workload.poll_interval_s": poll}
        )
        every[poll] = m = run_one(cfg, seed).metrics
        assert m["items"] == 40 and m["items_delivered"] + m["items_given_up"] == 40
        assert m["items_unfinished"] == 0 and m["hit_time_limit"] == 0
    assert every[1.0]["items_delivered"] == 40
    assert every[1.0]["requests_per_item"] > 4  # five polls per reading
    # Polling every 10 s while readings come every 5 s: about every other one is
    # replaced before a poll fetches it.
    assert 12 <= every[10.0]["items_given_up"] <= 28


def test_coap_observe_notifies_every_reading_at_once():
    cfg, seed = publish_config(**{"workload.coap_exchange": "observe"})
    m = run_one(cfg, seed).metrics
    assert m["items_delivered"] == 40
    assert m["latency_max_s"] < 0.05  # a NON notification per reading, no poll to wait for


def test_publish_is_a_workload_of_coap_mqttsn_and_ndn_only():
    from iotbench.scenarios import ScenarioError

    with pytest.raises(
        ScenarioError, match="publish is a workload of coap, mqttsn, ndn; protocol 'http'"
    ):
        config("http", **{"workload.kind": "publish", "workload.interval_s": 5.0})


# ---------------------------------------------------------------- RPL


def rpl_config(**sets):
    sets = {"network.routing.protocol": "rpl", "workload.start_s": 60.0, **sets}
    return config(**sets)


def test_rpl_builds_the_routes_the_traffic_takes():
    cfg, seed = rpl_config()
    m = run_one(cfg, seed).metrics
    assert m["items_delivered"] == 10
    assert m["rpl_dio_sent"] > 0 and m["rpl_dao_sent"] >= 4 and m["rpl_dao_ack_sent"] > 0
    # RPL's messages are control traffic, counted apart from the data.
    assert m["packets_control"] >= m["rpl_dio_sent"] + m["rpl_dao_sent"]
    sim, net = network(cfg, seed)
    sim.run(until=60.0)
    rpl = {r.link_local: r for r in net.rpl}
    root = net.rpl[0]
    assert all(r.joined for r in rpl.values()) and root.root
    # Storing mode: the root has a route to every node; each node's default route
    # is its preferred parent.
    assert set(root.routes) == {net.address(h) for n, h in net.hosts.items() if n != "n0"}
    for name, host in net.hosts.items():
        r = next(x for x in net.rpl if x.global_address == net.address(host))
        if name != "n0":
            assert host.default_route[1] == r.preferred_parent


def test_before_rpl_has_built_routes_requests_find_no_route():
    """A request at t = 0 finds no route (the gateway drops it); CoAP's
    retransmissions carry it once RPL has built the routes."""
    cfg, seed = rpl_config(**{"workload.start_s": 0.0, "workload.items": 3})
    m = run_one(cfg, seed).metrics
    assert m["items_delivered"] == 3
    assert m["latency_max_s"] >= 2.0  # at least one ACK_TIMEOUT lost to the missing route


def test_smrf_over_rpl_learns_the_group_from_daos():
    cfg, seed = rpl_config()
    sim, net = network(cfg, seed)
    group = ip.address_bytes("ff1e::89:7")
    got = []
    net.hosts["n4"].udp_bind(5683, lambda payload, *rest: got.append(payload))
    sim.at(30.0, net.hosts["n4"].join, group)
    sim.at(90.0, net.hosts["n0"].udp_send, 5683, group, 5683, b"hello group")
    sim.run(until=100.0)
    assert got == [b"hello group"]
    root = net.rpl[0]
    assert root.next_hop(group) is not None  # learned from a DAO with the group as target


def test_series_of_energy_and_counters_per_node(tmp_path):
    cfg, seed = config(**{"network.radio.series_interval_s": 0.05})
    path = tmp_path / "series.csv"
    m = run_one(cfg, seed, series_path=str(path)).metrics
    assert m == run_one(cfg, seed).metrics  # the series only reads the run
    lines = path.read_text().splitlines()
    assert lines[0].startswith("time_s,node,energy_j,tx_s")
    rows = [line.split(",") for line in lines[1:]]
    nodes = {row[1] for row in rows}
    assert nodes == {"n0", "n1", "n2", "n3", "n4"}
    # Running totals: never decreasing, node by node; the last rows add up to the metrics.
    for node in nodes:
        energy = [float(r[2]) for r in rows if r[1] == node]
        assert energy == sorted(energy) and energy[0] == 0.0
    last_time = rows[-1][0]
    last = [r for r in rows if r[0] == last_time]
    assert len(last) == 5
    assert sum(float(r[2]) for r in last) == pytest.approx(m["energy_j_total"])
    assert sum(int(r[6]) for r in last) == m["mac_frames"]
    assert sum(int(r[-1]) for r in last) == m["phy_collisions"]
    # Per link: who sent unicast frames to whom, and their fate.
    links = (tmp_path / "series.links.csv").read_text().splitlines()
    assert links[0] == "node,neighbour,frames,retries,acked,no_ack,channel_access_failures"
    rows = [line.split(",") for line in links[1:]]
    assert rows and all(r[0] in nodes and r[1] in nodes and r[0] != r[1] for r in rows)
    assert sum(int(r[2]) for r in rows) <= m["mac_frames"] - m["mac_broadcasts"]
    assert sum(int(r[3]) for r in rows) == m["mac_retries"]
    # Per link and message type: every frame and retry, CoAP and acknowledgments here.
    frames = (tmp_path / "series.frames.csv").read_text().splitlines()
    assert frames[0] == "node,neighbour,type,frames,retries,bytes,queue_drops"
    rows = [line.split(",") for line in frames[1:]]
    assert sum(int(r[3]) + int(r[4]) for r in rows if r[2] != "ack") == (
        m["mac_frames"] + m["mac_retries"]
    )
    assert {r[2] for r in rows} >= {"coap-con", "coap-ack", "ack"}
    assert sum(int(r[5]) for r in rows) == m["bytes_total"]
    assert not list(tmp_path.glob("*.tmp"))


def test_run_series_writes_one_csv_per_radio_run(tmp_path, capsys):
    from iotbench.cli import main

    scenario = tmp_path / "s.toml"
    scenario.write_text(BASE.format(protocol="coap"))
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--series", "--jobs", "1"]) == 0
    files = sorted(p.name for p in (out / "series").iterdir())
    (csv, frames, links) = files  # and no temporary file left
    assert links == csv.replace(".csv", ".links.csv") and csv.startswith("radio_rep0_")
    assert frames == csv.replace(".csv", ".frames.csv")
    assert (out / "series" / csv).read_text().startswith("time_s,node,energy_j")
    assert (out / "series" / links).read_text().startswith("node,neighbour,frames")
    (out / "series" / csv).unlink()  # a missing series makes the run run again
    assert main(["run", str(scenario), "--out", str(out), "--series", "--jobs", "1"]) == 0
    assert "1 executed" in capsys.readouterr().err
    assert sorted(p.name for p in (out / "series").iterdir()) == files


def test_per_node_radio_settings():
    cfg, seed = config()
    cfg["network"]["radio"]["nodes"] = {"n4": {"tx_power_dbm": -10.0, "sensitivity_dbm": -90.0}}
    sim, net = network(cfg, seed)
    radios = net.radios
    assert radios["n4"].tx_power_dbm == -10.0 and radios["n3"].tx_power_dbm == 3.0
    # Its own sensitivity; the chip's CCA threshold (AT86RF231: -77 dBm) as for all.
    assert radios["n4"].sensitivity_mw == pytest.approx(1e-9)
    assert radios["n4"].cca_threshold_mw == pytest.approx(10 ** (-7.7))
    # Its transmit current follows its power (AT86RF231's datasheet points).
    assert radios["n4"].power.profile.tx_ma == pytest.approx(7.2 + (11.6 - 7.2) * 7 / 17)
    assert radios["n3"].power.profile.tx_ma == 14.0
    cfg["network"]["radio"]["nodes"] = {"zz": {"tx_power_dbm": 0.0}}
    with pytest.raises(TopologyError, match="unknown node id 'zz'"):
        network(cfg, seed)


def test_per_node_radio_settings_are_validated():
    with pytest.raises(Exception, match="network.radio.nodes.n1.tx_power: unknown key"):
        config(extra="\n[network.radio.nodes.n1]\ntx_power = 3.0\n")
    with pytest.raises(Exception, match="out of range"):
        config(extra="\n[network.radio.nodes.n1]\ntx_power_dbm = 99.0\n")


def test_fewest_hops_are_breadth_first_over_the_trees_links():
    """S4's yardstick for link stress: the fewest hops to the gateway over the links
    the tree may use; never more than the tree's own hops, and 1 for a neighbour."""
    cfg, _ = config()
    sim, net = network(cfg)
    tree = net.tree
    hops = net.fewest_hops()
    assert hops[tree.root] == 0
    assert all(0 < h <= t for i, (h, t) in enumerate(zip(hops, tree.hops)) if i != tree.root)
    for i, parent in enumerate(tree.parent):
        if parent == tree.root:
            assert hops[i] == 1
    # n4 at 160 m: too far for one hop (the tree needs at least two), so at least 2.
    assert hops[4] >= 2


def test_jittered_readings_come_at_random_intervals_within_the_bounds(monkeypatch):
    """workload.jitter (S4's code: 0.5): every wait uniform in [m/2, 3m/2]."""
    from iotbench.world.workloads.publish import PublishWorkload

    taken: list[tuple[int, float]] = []
    publish = PublishWorkload._publish

    def record(self, producer, counter):
        taken.append((producer, self.sim.now))
        return publish(self, producer, counter)

    monkeypatch.setattr(PublishWorkload, "_publish", record)
    cfg, seed = publish_config(
        **{"workload.interval_s": 2.0, "workload.jitter": 0.5, "workload.items": 30}
    )
    m = run_one(cfg, seed).metrics
    assert m["items"] == 5 * 30
    by_producer = [[t for q, t in taken if q == p] for p in range(5)]
    gaps = [b - a for times in by_producer for a, b in zip(times, times[1:], strict=False)]
    assert len(gaps) == 5 * 29 and min(gaps) >= 1.0 and max(gaps) <= 3.0
    assert 1.7 < sum(gaps) / len(gaps) < 2.3  # uniform: a mean of 2 s
    assert len({round(g, 6) for g in gaps}) > 100  # drawn, not fixed
    # The first reading after one such wait too (the study's loop sleeps first).
    assert all(1.0 <= times[0] <= 3.0 for times in by_producer)


def test_a_duration_sets_how_long_producers_publish():
    cfg, seed = publish_config(**{"workload.duration_s": 60.0, "workload.interval_s": 5.0})
    m = run_one(cfg, seed).metrics
    assert 5 * 11 <= m["items"] <= 5 * 12  # a random phase, then every 5 s for 60 s
    cfg, seed = publish_config(
        **{"workload.duration_s": 60.0, "workload.interval_s": 2.0, "workload.jitter": 0.5}
    )
    assert 5 * 25 <= run_one(cfg, seed).metrics["items"] <= 5 * 35  # waits of 2 s on average


def test_jitter_and_duration_are_checked():
    from iotbench.scenarios import ScenarioError

    with pytest.raises(ScenarioError, match="jitter"):
        publish_config(**{"workload.jitter": 1.0})
    with pytest.raises(ScenarioError, match="jitter: only the publish workload"):
        config(**{"workload.jitter": 0.2})
    with pytest.raises(ScenarioError, match="duration_s: only the publish workload"):
        config(**{"workload.duration_s": 10.0})


def test_a_device_profile_makes_nodes_spend_cpu_time_per_packet():
    """network.device: each CoAP message costs its end host 300 us on an M3 and each
    forwarded packet 200 us."""
    free = run_one(*publish_config(**{"protocol.coap.type": "con"})).metrics
    m3 = run_one(
        *publish_config(**{"protocol.coap.type": "con", "network.device.profile": "m3"})
    ).metrics
    a8 = run_one(
        *publish_config(
            **{
                "protocol.coap.type": "con",
                "network.device.profile": "m3",
                "network.device.gateway_profile": "a8",
            }
        )
    ).metrics
    # The reading's PUT is handled by the CPUs on its way (200 us a hop) before it
    # reaches the gateway's radio, where its time ends; the gateway's own handling
    # (300 us on an M3, 12 ms on an A8) comes after. (Its answer then leaves at
    # another moment and can meet another producer's reading: one collision with
    # the A8 here, so the medians are compared.)
    assert m3["tta_mean_s"] - free["tta_mean_s"] > 0.00015
    assert abs(a8["tta_p50_s"] - m3["tta_p50_s"]) < 0.0002
    assert m3["delivery_ratio"] == a8["delivery_ratio"] == 1.0


@pytest.mark.parametrize("coap_type", ["con", "non"])
def test_the_gateway_host_pays_once_per_put_answered(monkeypatch, coap_type):
    """The a8's costs were measured per message handled with its answer
    (bench/gateway_costs.py): the host's aiocoap spends 12 ms per PUT, nothing more
    for the 2.04 it sends; an M3 producer pays for its PUT out and the answer in."""
    from spies import instances

    from iotbench.apps.driver import DatagramDriver
    from iotbench.proto.ndn.profiles import get_profile
    from iotbench.scenarios import load_scenario

    drivers = instances(monkeypatch, DatagramDriver)
    runs = expand(
        load_scenario("s4-single-hop-scheduled"),
        {"variant": [f"coap-put-{coap_type}"], "interval": ["5s"]},
        {"workload.items": 10},
    )
    metrics = run_one(runs[0].config, runs[0].seed).metrics
    assert metrics["delivery_ratio"] == 1.0
    (host,) = [d.node for d in drivers if d.node.profile.name == "a8"]
    (producer,) = [d.node for d in drivers if d.node.profile.name == "m3"]
    assert host.cpu.busy_s == pytest.approx(10 * get_profile("a8").cost_s("coap_message"))
    assert producer.cpu.busy_s == pytest.approx(20 * get_profile("m3").cost_s("coap_message"))


def _a8_host_after_puts(monkeypatch, tmp_path, a8_time: str, slowdown: float = 1.0):
    """The a8 host after 10 PUTs NON of s4-gateway-speed, 5 s apart (so that each
    arrives and the host has handled each when the run ends)."""
    from spies import instances

    from iotbench.apps.driver import DatagramDriver
    from iotbench.scenarios import load_scenario

    path = tmp_path / "unhurried.toml"
    path.write_text(
        'extends = "s4-gateway-speed"\nname = "unhurried"\n'
        "[axes.interval.5s]\nworkload = { interval_s = 5.0 }\n"
    )
    drivers = instances(monkeypatch, DatagramDriver)
    (run, *_) = expand(
        load_scenario(path),
        {"variant": ["coap-put-non"], "a8_time": [a8_time], "a8_slowdown": [slowdown]},
        {"workload.items": 10},
    )
    metrics = run_one(run.config, run.seed).metrics
    assert metrics["delivery_ratio"] == 1.0
    (host,) = [d.node for d in drivers if d.node.profile.name == "a8"]
    return host


def test_the_gateway_host_draws_each_puts_time_from_its_measured_spread(monkeypatch, tmp_path):
    """network.uplink.cost_spread: each PUT costs the a8's median times a factor drawn
    from the measured spread, seeded with the run: the same run charges the same."""
    from iotbench.proto.ndn.profiles import MEASURED_SPREADS, get_profile

    median_s = get_profile("a8").cost_s("coap_message")
    knots = MEASURED_SPREADS["a8"]["coap_message"].knots
    busy = [_a8_host_after_puts(monkeypatch, tmp_path, "spread").cpu.busy_s for _ in range(2)]
    assert busy[0] == busy[1]
    assert busy[0] != pytest.approx(10 * median_s, rel=1e-6)
    assert 10 * knots[0] * median_s < busy[0] < 10 * knots[-1] * median_s
    # Without it, the median every time.
    host = _a8_host_after_puts(monkeypatch, tmp_path, "median")
    assert host.cpu.busy_s == pytest.approx(10 * median_s)


def test_the_gateway_host_can_run_slower_than_its_profile(monkeypatch, tmp_path):
    from iotbench.proto.ndn.profiles import get_profile

    host = _a8_host_after_puts(monkeypatch, tmp_path, "median", slowdown=1.5)
    assert host.cpu.busy_s == pytest.approx(10 * 1.5 * get_profile("a8").cost_s("coap_message"))


def test_a_spread_the_profile_was_not_measured_for_is_a_clear_error(tmp_path):
    """Found when the scenario is read, before any run: the key, what it needs."""
    from iotbench.scenarios import load_scenario
    from iotbench.scenarios.errors import ScenarioError

    path = tmp_path / "slow.toml"
    path.write_text(
        'extends = "s4-single-hop-scheduled"\nname = "slow"\n'
        "[axes.variant.put]\n"
        'network = { roles = { client = "uplink" }, uplink = { kind = "serial", '
        'profile = "m3", cost_spread = true } }\n'
    )
    with pytest.raises(ScenarioError, match=r"uplink\.cost_spread.*profile = 'a8'.*not 'm3'"):
        expand(load_scenario(path), {}, {})
    path.write_text(
        path.read_text().replace('profile = "m3", cost_spread = true', "cpu_slowdown = 2.0")
    )
    with pytest.raises(ScenarioError, match=r"uplink\.cpu_slowdown.*set network\.uplink\.profile"):
        expand(load_scenario(path), {}, {})


def test_a_busy_node_queues_its_work():
    from iotbench.sim import Simulator
    from iotbench.sim.cpu import Cpu

    sim = Simulator(1)
    cpu = Cpu(sim)
    done: list[tuple[str, float]] = []
    sim.at(1.0, lambda: [cpu.run(0.2, lambda n=n: done.append((n, sim.now))) for n in "abc"])
    sim.run()
    assert done == [("a", 1.2), ("b", pytest.approx(1.4)), ("c", pytest.approx(1.6))]
    assert cpu.busy_s == pytest.approx(0.6)


def test_the_ndn_gateway_takes_the_gateway_profile(monkeypatch):
    from spies import instances
    from test_publish_ndn import S4_NDN

    from iotbench.world.workloads.publish.ndn import NdnPull

    built = instances(monkeypatch, NdnPull)
    cfg, seed = publish_config("ndn", **{**S4_NDN, "network.device.gateway_profile": "a8"})
    run_one(cfg, seed)
    (pull,) = built
    assert pull.tree.gateway.profile.name == "a8"
    assert {n.profile.name for n in pull.tree.producers} == {"m3"}


def test_a_pair_network_has_no_device_section():
    from iotbench.scenarios import ScenarioError

    text = """
name = "pair"
description = "two nodes"
[network]
topology = "pair"
[network.device]
profile = "m3"
[workload]
kind = "sequential"
[protocol]
name = "coap"
"""
    with pytest.raises(ScenarioError, match="device"):
        expand(parse_scenario(text))


def test_an_unanswered_observe_registration_is_sent_again(monkeypatch):
    """S4's Observe client (coap_observe_cli): a NON GET with Observe 0, given 5 to
    10 s for its answer and sent again when none came. With every producer deaf for
    the first 4 s, the first registrations are lost, the second ones observe them;
    a producer takes readings only while it is observed."""
    from spies import spy

    from iotbench.world.networks import radio as radio_network
    from iotbench.world.workloads.publish.coap import CoapObserve

    make = radio_network.Radio  # wrapped, not patched: the class may be compiled

    def deaf_at_first(medium, index, name, **settings):
        radio = make(medium, index, name, **settings)
        if name != "n0":
            hearing = radio.sensitivity_mw
            medium.sim.at(0.0, setattr, radio, "sensitivity_mw", float("inf"))
            medium.sim.at(4.0, setattr, radio, "sensitivity_mw", hearing)
        return radio

    monkeypatch.setattr(radio_network, "Radio", deaf_at_first)
    calls = spy(monkeypatch, CoapObserve, "_register")
    cfg, seed = publish_config(**{"workload.coap_exchange": "observe", "workload.items": 20})
    m = run_one(cfg, seed).metrics
    registered = [producer for (producer,) in calls]
    assert sorted(registered) == sorted(list(range(5)) * 2)  # each one twice
    assert m["readings_skipped"] > 0 and m["items"] + m["readings_skipped"] == 100
    assert m["delivery_ratio"] == 1.0


def test_a_devices_packet_memory_bounds_what_it_queues():
    """network.device gives every node packet memory (net/pktbuf.py): RIOT's 6,144
    bytes on an M3 hold what a line of six nodes queues; 128 bytes hold one frame
    at a time, so the forwarders' queues overflow."""
    device = {
        "network.device.profile": "m3",
        "workload.interval_s": 0.02,
        "protocol.coap.type": "non",  # no retransmission makes up for a drop
    }
    roomy = run_one(*publish_config(**device)).metrics
    tight = run_one(*publish_config(**device, **{"network.device.pktbuf_bytes": 128})).metrics
    assert roomy["pktbuf_drops"] == 0 and 0 < roomy["pktbuf_peak_bytes"] <= 6144
    assert tight["pktbuf_drops"] > 0 and tight["pktbuf_peak_bytes"] <= 128
    # A frame refused memory is dropped as a full queue would drop it.
    assert tight["mac_queue_drops"] == roomy["mac_queue_drops"] + tight["pktbuf_drops"]
    plain = run_one(*publish_config()).metrics
    assert "pktbuf_peak_bytes" not in plain  # no device, no packet memory


def test_a_second_network_leaks_into_the_first_through_the_receivers_rejection():
    """The second network (a twin on channel 25) and the first (26): each radio hears
    the other network's radios within reach as interferers, at the power the path
    loss gives less the AT86RF231's rejection of a channel 5 MHz above (35 dB) or
    below (32 dB), plus 3 dB and the sensitivity SNR (chips.leak_db)."""
    from iotbench.net.radio import phy
    from iotbench.net.radio.chips import leak_db
    from iotbench.net.radio.propagation import free_space_loss_db

    cfg, seed = config(
        "coap",
        extra="[network.uplink]\n[network.second]\nchannel = 25\n",
        **{
            "network.roles.client": "uplink",
            "workload.kind": "group-query",
            "workload.path": "/s/t",
        },
    )
    cfg["network"]["radio"]["channel"] = 26
    _, net = network(cfg, seed)
    first = net.radios
    second = net.second.radios
    # n2 and its twin b.n2 share a place: 1 m's free-space loss (the reference).
    reference = free_space_loss_db(1.0, 2480.0)
    heard = {itf.name: mw for itf, mw in first["n2"].interferers}
    # 40 m away, 48 dB more loss puts the others under the interference floor.
    assert set(heard) == {"b.n2 into channel 26"}
    expected = 3.0 - reference - leak_db(32.0)  # b.n2 on 25 is 5 MHz below n2 on 26
    assert phy.mw_to_dbm(heard["b.n2 into channel 26"]) == pytest.approx(expected)
    twin = {itf.name: mw for itf, mw in second["b.n2"].interferers}
    assert phy.mw_to_dbm(twin["n2 into channel 25"]) == pytest.approx(
        3.0 - reference - leak_db(35.0)
    )
    assert second["b.n2"].leak.name == "b.n2 into channel 26"
