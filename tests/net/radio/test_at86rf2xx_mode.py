"""The MAC's extended mode: the AT86RF231 running CSMA-CA and retries itself
(TX_ARET) under RIOT's at86rf2xx driver, with its one frame buffer."""

from __future__ import annotations

import dataclasses

import pytest
from radio_harness import RadioNet

from iotbench.metrics.publish import GatewayArrivals
from iotbench.net.mac.csma import SENT, MacParams
from iotbench.net.packet import DATA, DELIVERED, MISSED
from iotbench.net.radio import phy
from iotbench.scenarios import expand, load_scenario
from iotbench.world import run_one

EXTENDED = MacParams(extended_mode=True)
ABSENT = b"\x02\x00\x00\xff\xfe\x00\x00\x63"  # an address no radio has: no ACK ever


def transaction_and_intruder(params: MacParams, seed: int):
    """n1 sends to an absent address (four attempts, each waiting for its ACK);
    5 ms into that, n0 sends to n1. Returns the net, n1's transaction (its start
    and the moment it gave up) and n0's data frames."""
    net = RadioNet([(0, 0, 0), (10, 0, 0)], seed=seed, params=params)
    net.sim.at(1.0, net.macs[1].send, ABSENT, b"y" * 50)
    net.send_at(1.005, 0, 1)
    net.sim.run()
    gave_up = [t for t, node, _dst, status, _n in net.sent if node == "n1"]
    frames = [p for p in net.frames(0) if p.kind == DATA]
    return net, (1.0, gave_up[0]), frames


def test_while_its_chip_sends_a_node_takes_no_frame_but_its_ack():
    missed = delivered_during = 0
    for seed in range(20):
        net, (start, end), frames = transaction_and_intruder(EXTENDED, seed)
        for frame in frames:
            if frame.t_sent <= end:  # (n0 starts sending after n1's transaction began)
                assert frame.fate == MISSED  # n1's chip is in TX_ARET: not locked on
                missed += 1
            else:
                assert frame.fate == DELIVERED  # nothing else on the air
        # n1 takes n0's frame once if n0 tried again after n1's transaction was over.
        landed = [f for f in frames if f.fate == DELIVERED]
        assert [node for _t, node, _src, _p in net.received] == ["n1"] * len(landed)
    assert missed > 0
    # The standard's MAC listens during its backoffs: some of the same frames land.
    for seed in range(20):
        net, (start, end), frames = transaction_and_intruder(MacParams(), seed)
        delivered_during += sum(
            f.fate == DELIVERED for f in frames if start <= f.t_sent and f.t_done <= end
        )
    assert delivered_during > 0


def test_acks_reach_a_chip_in_its_transaction():
    net = RadioNet([(0, 0, 0), (10, 0, 0)], params=EXTENDED)
    net.send_at(1.0, 0, 1)
    net.sim.run()
    assert [status for _t, _node, _dst, status, _n in net.sent] == [SENT]
    assert not net.radios[0].frames_off  # the transaction is over
    assert net.macs[0].counters.acks_received == 1


def frame_start(seed: int) -> float:
    net = RadioNet([(0, 0, 0), (10, 0, 0)], seed=seed, params=EXTENDED)
    net.send_at(1.0, 0, 1)
    net.sim.run()
    return net.frames(0)[0].t_sent


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_frame_arriving_as_the_next_is_loaded_is_acknowledged_then_lost(seed):
    """n0 sends to n1; halfway through that frame n1's upper layer hands its MAC
    a frame. The driver waits for the reception and its ACK, then loads its
    frame into the one buffer over the received one: n0 saw its ACK, n1's upper
    layer never sees the frame, and n1's own frame starts after the ACK."""
    t0 = frame_start(seed)  # the same seed draws the same backoff for n0
    airtime = (50 + 25 + phy.PHY_HEADER_BYTES) * phy.BYTE_S
    for params, lost in ((EXTENDED, True), (MacParams(), False)):
        net = RadioNet([(0, 0, 0), (10, 0, 0)], seed=seed, params=params)
        net.send_at(1.0, 0, 1)
        net.sim.at(t0 + airtime / 2, net.macs[1].send, net.address(0), b"z" * 20)
        net.sim.run()
        n0_first = net.frames(0)[0]
        assert n0_first.t_sent == pytest.approx(t0) and n0_first.fate == DELIVERED
        assert ("n0", net.address(1), SENT, 1) == net.sent[0][1:]  # acknowledged at once
        got_n0_frame = [p for _t, node, _s, p in net.received if node == "n1"]
        assert got_n0_frame == ([] if lost else [b"x" * 50])
        assert net.macs[1].counters.overwritten == (1 if lost else 0)
        if lost:
            ack = next(p for p in net.frames(1) if p.kind != DATA)
            n1_data = next(p for p in net.frames(1) if p.kind == DATA)
            assert n1_data.t_sent > ack.t_done  # loaded only after its ACK went out


def n0s_reading(data: bytes) -> int | None:
    """Reading 7 in n0's frame (RadioNet's payload), nothing in any other."""
    return 7 if b"x" * 50 in data else None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_frame_the_chip_loses_never_counts_as_arrived_at_the_gateway(seed):
    """S4's time to content arrival ends where the study's packet counter saw a
    frame: in the gateway's network stack, which an overwritten frame never reaches
    (metrics/publish.py's GatewayArrivals asks the gateway's MAC)."""
    t0 = frame_start(seed)
    airtime = (50 + 25 + phy.PHY_HEADER_BYTES) * phy.BYTE_S
    for params, counted in ((EXTENDED, []), (MacParams(), [7])):
        net = RadioNet([(0, 0, 0), (10, 0, 0)], seed=seed, params=params)
        arrived: list[int] = []
        net.observers.add(
            GatewayArrivals("n1", (net.medium,), n0s_reading, arrived.append, net.macs[1])
        )
        net.send_at(1.0, 0, 1)
        net.sim.at(t0 + airtime / 2, net.macs[1].send, net.address(0), b"z" * 20)
        net.sim.run()
        assert net.frames(0)[0].fate == DELIVERED  # on the air, it reached n1's radio
        assert arrived == counted


def two_frames(params: MacParams, seed: int, probe_after: float | None = None):
    """n1 queues two frames for n0 at once; with `probe_after`, whether n1's radio
    takes frames that long after its first transaction ended."""
    net = RadioNet([(0, 0, 0), (10, 0, 0)], seed=seed, params=params)
    for payload in (b"a" * 30, b"b" * 30):
        net.sim.at(1.0, net.macs[1].send, net.address(0), payload)
    listening: list[bool] = []
    if probe_after is not None:
        net.sim.at(probe_after, lambda: listening.append(not net.radios[1].frames_off))
    net.sim.run()
    return net, listening


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_queued_frames_follow_each_other_with_the_chip_deaf_in_between(seed):
    """With a second frame queued, the driver loads it as the first transaction
    ends and the chip stays in TX_ARET: no interframe space, and no moment in
    which it takes a frame. The standard's MAC listens through its IFS."""
    net, _ = two_frames(EXTENDED, seed)
    first_done = net.sent[0][0]
    gap = 0.5 * phy.SIFS_S
    for params, listens in ((EXTENDED, False), (MacParams(), True)):
        net, listening = two_frames(params, seed, probe_after=first_done + gap)
        assert [status for _t, _n, _d, status, _x in net.sent] == [SENT, SENT]
        assert net.sent[0][0] == first_done  # the same first transaction
        assert listening == [listens]


def test_the_scenario_kind_at86rf2xx_runs_the_extended_mode():
    # S4's scenarios run their nodes' AT86RF231 as it is (bases/s4.toml).
    (run,) = expand(
        load_scenario("s4-single-hop-scheduled"),
        {"variant": ["coap-put-non"], "interval": ["5s"]},
        {"workload.duration_s": 30.0},
    )
    assert run.config["network"]["mac"]["kind"] == "at86rf2xx"
    metrics = run_one(run.config, run.seed).metrics
    # RPL's first DIOs come fast enough to meet a load now and then; readings
    # every 5 s do not, and all of them arrive.
    assert isinstance(metrics["mac_overwritten"], int)
    assert metrics["delivery_ratio"] == 1.0
    (plain,) = expand(
        load_scenario("s4-single-hop-scheduled"),
        {"variant": ["coap-put-non"], "interval": ["5s"]},
        {"network.mac.kind": "ieee802154", "workload.duration_s": 30.0},
    )
    assert "mac_overwritten" not in run_one(plain.config, plain.seed).metrics


def test_the_extended_mode_is_off_unless_asked_for():
    assert dataclasses.replace(MacParams()).extended_mode is False
