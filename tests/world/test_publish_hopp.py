"""HoPP (S4's `hopp`): the tree from PAMs and SOLs, names up by NAMs, Data pulled hop
by hop to the gateway's content proxy."""

from __future__ import annotations

import random

from spies import instances, spy
from test_publish_ndn import S4_NDN
from test_radio_network import publish_config

import iotbench.world.run as world_run
from iotbench.metrics.observers import Observer, Observers
from iotbench.net import ieee802154 as mac
from iotbench.proto.ndn import hopp
from iotbench.world import run_one
from iotbench.world.workloads.publish.hopp import NdnHopp
from iotbench.world.workloads.publish.hopp_agent import HoppAgent, HoppParams, Trickle, uniform

TRICKLE_IMIN_S = HoppParams().trickle_imin_s


# apps/ndn_hopp/Makefile: CCNL_CACHE_SIZE=50.
HOPP = {"workload.ndn_exchange": "hopp", "protocol.ndn.cs_max_entries": 50}


def hopp_run(monkeypatch=None, **sets):
    built = instances(monkeypatch, NdnHopp) if monkeypatch is not None else []
    cfg, seed = publish_config("ndn", **{**HOPP, **S4_NDN, **sets})
    return run_one(cfg, seed).metrics, built


def test_agents_draw_as_random_uniform():
    """The agents' compiled `uniform` gives random.Random.uniform's draws and leaves the
    generator where it would."""
    for seed in range(20):
        ours, library = random.Random(seed), random.Random(seed)
        for low, high in ((0.064, 0.256), (1.0, 1.5), (4.0, 5.0), (30.0, 35.0), (2.0, 2.0)):
            assert [uniform(ours, low, high) for _ in range(50)] == [
                library.uniform(low, high) for _ in range(50)
            ]
        assert ours.random() == library.random()


def test_trickle_doubles_from_imin_and_fires_in_each_second_half():
    trickle = Trickle(random.Random(1), HoppParams())
    first = trickle.start()
    assert TRICKLE_IMIN_S <= first < 4 * TRICKLE_IMIN_S
    at, end = first, trickle.interval
    for _ in range(20):
        at += trickle.next()
        start, end = end, end + trickle.interval
        assert trickle.interval <= TRICKLE_IMIN_S * 2**16
        # The next firing lies in the second half of the next interval, or anywhere in
        # its second half once the interval stops growing.
        assert start - 1e-9 <= at + (trickle.interval - trickle.t) <= end + 1e-9


def test_every_reading_climbs_the_tree_once(monkeypatch):
    m, (run,) = hopp_run(monkeypatch)
    assert m["items"] == 40 and m["delivery_ratio"] == 1.0
    # Each hop pulls the Data once: it crosses each link of the path once.
    assert m["link_stress_mean"] == 1.0
    # Pushed at once, no poll to wait for; a lost frame costs a NAM repeat or a
    # hop-by-hop retransmission (about 2 s) now and then.
    assert m["tta_p50_s"] < 0.1 and m["tta_p99_s"] < 3.0
    assert math_isnan(m["requests_per_item"])
    # The tree is the shared one: rank = hops + 1, and every parent is alive.
    tree = run.tree.net.tree
    ids = list(run.tree.net.hosts)
    for name, agent in run.agents.items():
        assert agent.rank == tree.hops[ids.index(name)] + 1
        assert agent.parent_alive
    # A pull per hop per reading (a NAM sent again before the pull came may add one).
    hops = sum(tree.hops[ids.index(n)] for n in run.tree.producer_names)
    assert 8 * hops <= run.pulls <= 8 * hops * 1.2
    assert m["control_bytes"] > 0 and run.decode_errors == 0


def test_the_gateway_ends_with_the_data_and_the_names_are_forgotten(monkeypatch):
    m, (run,) = hopp_run(monkeypatch)
    gateway = run.agents[run.tree.gateway_name]
    assert gateway.root and gateway.rank == 1
    # Every name was pulled by the parent, which ends its advertisement.
    assert all(not agent.names for agent in run.agents.values())
    assert m["cs_bytes_max"] > 0


class HoppFrames(Observer):
    """Every HoPP message put on the air: (time, type, broadcast)."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, str, bool]] = []

    def transmitted(self, pkt) -> None:
        frame = mac.decode(pkt.data)
        if isinstance(frame, mac.Frame) and hopp.is_hopp(frame.payload) and pkt.attempt == 1:
            message = hopp.decode(frame.payload)
            self.sent.append((pkt.t_sent, type(message).__name__, frame.dst == mac.BROADCAST))


def test_the_tree_is_kept_alive_by_sols_and_pams(monkeypatch):
    """After the tree forms, a node hears from its parent only when it asks: every
    30 to 35 s it sends its parent a SOL, and the parent answers with a PAM."""
    frames = HoppFrames()

    class WithFrames(Observers):  # (a compiled Observers takes no patches)
        def __init__(self, *observers):
            super().__init__(*observers, frames)

    monkeypatch.setattr(world_run, "Observers", WithFrames)
    hopp_run(**{"workload.items": 30, "workload.interval_s": 5.0})
    late = [(kind, bcast) for t, kind, bcast in frames.sent if t > 40.0]
    sols = late.count(("Sol", False))
    pams = late.count(("Pam", False))
    # Five nodes for about 110 s after the first 40: three or four rounds each.
    assert 10 <= sols <= 25 and pams >= 0.8 * sols
    assert late.count(("Nam", False)) >= 5 * 22  # names go up all the while


def test_lossy_hops_are_bridged_by_nam_repeats_and_hop_by_hop_retransmission():
    lossy = {
        "network.nodes.spacing_m": 85.0,
        "network.mac.max_frame_retries": 0,
        "workload.items": 10,
    }
    m, _ = hopp_run(**lossy)
    assert m["delivery_ratio"] >= 0.9
    assert m["mac_retries"] == 0 and m["packets_lost"] > 0


def test_the_studys_hopp_settings_reach_every_agent(monkeypatch):
    """apps/ndn_hopp/Makefile's values, given as protocol.ndn.hopp."""
    study = {
        "trickle_imin_s": 0.128,
        "trickle_k": 3,
        "nam_period_s": [2.0, 2.5],
        "nam_retries": 4,
        "parent_timeout_s": [1800.0, 1980.0],
        "nam_cache_entries": 45,
    }
    m, (run,) = hopp_run(monkeypatch, **{"protocol.ndn.hopp": study})
    params = run.params
    assert params.trickle_imin_s == 0.128 and params.trickle_k == 3
    assert params.nam_period_s == (2.0, 2.5) and params.parent_timeout_s == (1800.0, 1980.0)
    assert all(agent.params is params for agent in run.agents.values())
    assert m["delivery_ratio"] == 1.0


def test_a_sol_gets_a_pam_only_from_a_node_in_the_tree_with_room():
    sent = []

    class Owner:
        prefix_uri = "/i3"

    class Probe(HoppAgent):  # the agent's state without a network (a compiled class
        # takes no patches, so the probe overrides what it watches)
        def __init__(self) -> None:
            self.owner = Owner()
            self.rank, self.floating, self.names, self._trickle_timer = 3, False, {}, None
            self.full = False

        def send(self, dst, message):
            sent.append((dst, message))

        def names_full(self):
            return self.full

    agent = Probe()
    agent.on_sol(b"\x01" * 8, hopp.Sol())
    assert sent == [(b"\x01" * 8, hopp.Pam(3, "/i3"))]
    agent.floating = True
    agent.on_sol(b"\x01" * 8, hopp.Sol())
    agent.floating, agent.full = False, True
    agent.on_sol(b"\x01" * 8, hopp.Sol())
    assert len(sent) == 1  # floating, then full: no answer


def math_isnan(x: float) -> bool:
    return x != x


def test_a_relays_pull_against_a_full_pit_is_dropped_and_counted_where_it_happens(monkeypatch):
    """Readings 0.2 s apart from five producers up a line: each relay pulls from its
    child while its own earlier pulls still wait. A PIT of one entry drops the pull (no
    trace but the node's counter, the child repeats its NAM 2 to 2.5 s later); the
    heap of the study's CCN-lite holds them all."""
    busy = {"workload.interval_s": 0.2, "workload.items": 40}
    small, (run,) = hopp_run(monkeypatch, **busy, **{"protocol.ndn.pit_max_entries": 1})
    dropped = {n: node.forwarder.counters.pit_full_drops for n, node in run.tree.nodes.items()}
    assert small["pit_full_drops"] == sum(dropped.values()) > 0
    relays = {run.tree.net.tree.parent[i] for i in range(1, len(dropped))}
    ids = list(run.tree.net.hosts)
    assert any(dropped[ids[r]] for r in relays if r not in (None, 0))  # at a relay
    assert small["delivery_ratio"] < 0.9 and small["tta_p50_s"] > 2.0
    study, (run,) = hopp_run(monkeypatch, **busy)
    assert all(node.forwarder.heap.failures == 0 for node in run.tree.nodes.values())
    assert study["pit_full_drops"] == 0 and study["delivery_ratio"] == 1.0
    assert study["pit_occupancy_max"] > 1 and study["tta_p50_s"] < 0.1


def test_a_repeated_nam_after_the_data_passed_goes_no_further(monkeypatch):
    """A child's NAM repeated after its parent already pulled the Data and passed it up:
    the parent pulls again, its own Content Store answers, and that is all (CCN-lite
    gives a cache hit on the loopback face to the application, never to HoPP's
    data-received callback): no NAM goes up, the gateway delivers nothing again."""
    delivered = spy(monkeypatch, NdnHopp, "delivered")
    frames = HoppFrames()

    class WithFrames(Observers):  # (a compiled Observers takes no patches)
        def __init__(self, *observers):
            super().__init__(*observers, frames)

    monkeypatch.setattr(world_run, "Observers", WithFrames)
    m, (run,) = hopp_run(monkeypatch)
    assert m["delivery_ratio"] == 1.0 and len(delivered) == m["items"]
    tree, net = run.tree.net.tree, run.tree.net
    ids = list(net.hosts)
    # A relay and a child of it, and a reading of that child which passed the relay.
    child = next(i for i in range(len(ids)) if tree.parent[i] not in (None, 0))
    relay = run.agents[ids[tree.parent[child]]]
    prefix = run.tree.prefixes[run.tree.producer_names.index(ids[child])]
    data = next(args[0] for args in delivered if prefix.is_prefix_of(args[0].name))
    assert data.name.value in relay.node.forwarder.cs and data.name.value not in relay.names
    pulls, hits, sent = run.pulls, relay.node.forwarder.counters.cs_hits, len(frames.sent)
    nam = hopp.Nam((hopp.nam_text(data.name),)).encode()
    relay.on_message(net.address(net.hosts[ids[child]]), nam)
    run.sim.run(until=run.sim.now + 30.0)
    assert run.pulls == pulls + 1 and relay.node.forwarder.counters.cs_hits == hits + 1
    assert not relay.names[data.name.value].requested  # held, not advertised
    assert ("Nam", False) not in [(kind, b) for _, kind, b in frames.sent[sent:]]
    assert len(delivered) == m["items"]
