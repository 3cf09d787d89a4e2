"""The interference floor's error, measured against the exact sum.

A receiver's neighbour lists leave out every signal weaker than
`network.radio.interference_floor_db` under its noise (neighbours.py):
those cost nothing per frame, and the medium never adds them to the
receiver's noise. `left_out_interference` measures what that leaves out.
Here, in a grid small enough for every pair of nodes to be within the
lists' reach, it is checked against the sum over every pair, computed apart
from the build, and the error itself against the bounds docs/radio.md gives
("Who hears whom").
"""

from __future__ import annotations

import math

import pytest
from scale_grid import scale_grid

from iotbench.net.radio.medium import TX
from iotbench.sim import RngStreams
from iotbench.world.networks.pairs import (
    left_out_interference,
    left_out_rise_db,
    path_loss_of,
)


def _run(sample_every_s: float | None = None):
    # bench/scale.py's grid, 12 x 12 nodes 60 m apart: 933 m corner to corner,
    # within the reach of every pair (1,172 m), three readings a node.
    grid = scale_grid(144, 3)
    sim, net = grid.sim, grid.net
    radios = list(net.radios.values())
    samples: list[list[int]] = []  # who was on the air at each sampled instant

    def sample() -> None:
        samples.append([i for i, r in enumerate(radios) if r.state == TX])
        sim.schedule(sample_every_s, sample)

    if sample_every_s is not None:
        sim.schedule(sample_every_s, sample)
    sim.run(until=grid.end_s)
    return grid.network, net, sim.now, samples


def _exact_powers(network, net) -> list[list[float]]:
    """mw[tx][rx]: every pair's mean power, computed apart from the build: the
    distance's loss and the pair's shadowing draw, one per pair in node order
    from the network's stream (neighbours.py: the whole grid is within reach,
    and its cells are neighbours, so every pair is examined, in that order)."""
    radio_cfg = network.radio
    path_loss = path_loss_of(radio_cfg)
    nodes = net.topology.nodes
    radios = list(net.radios.values())
    f = net.medium.frequency_mhz
    shadowing = RngStreams(network.seed).stream("radio/shadowing")
    mw = [[0.0] * len(nodes) for _ in nodes]
    for i, a in enumerate(nodes):
        for j in range(i + 1, len(nodes)):
            loss = path_loss.mean_loss_db(math.dist(a.position, nodes[j].position), f)
            loss += shadowing.gauss(0.0, path_loss.shadowing_db)
            mw[i][j] = 10.0 ** ((radios[i].tx_power_dbm - loss) / 10.0)
            mw[j][i] = 10.0 ** ((radios[j].tx_power_dbm - loss) / 10.0)
    return mw


def _carried(net) -> list[list[float]]:
    """mw[tx][rx] of the pairs the neighbour lists carry (0 for the others)."""
    radios = list(net.radios.values())
    at = {id(r): i for i, r in enumerate(radios)}
    carried = [[0.0] * len(radios) for _ in radios]
    for i, r in enumerate(radios):
        for receiver, mw, _pair in r.neighbours:
            carried[i][at[id(receiver)]] = mw
    return carried


def _rise_db(left_mw: float, noise_mw: float) -> float:
    return 10.0 * math.log10(1.0 + left_mw / noise_mw)


def test_what_the_floor_leaves_out_is_the_exact_sum_less_what_the_lists_carry():
    network, net, now, _ = _run()
    radios = list(net.radios.values())
    n = len(radios)
    exact, carried = _exact_powers(network, net), _carried(net)
    on_air = [r.power.times_s(now)[TX] / now for r in radios]
    assert sum(share > 0 for share in on_air) > n / 2  # the run sent frames
    at_once = left_out_interference(network, net)
    averaged = left_out_interference(network, net, now)
    floor_db = network.radio.interference_floor_db
    for rx in range(n):
        left_pairs = [tx for tx in range(n) if tx != rx and carried[tx][rx] == 0.0]
        assert left_pairs  # the grid's far corners are beyond each other's floor
        for tx in range(n):
            if carried[tx][rx]:
                assert math.isclose(carried[tx][rx], exact[tx][rx], rel_tol=1e-9)
        # Every signal left out is under the floor, every one carried is not.
        noise = radios[rx].noise_mw
        under = noise * 10 ** (-floor_db / 10)
        assert all(exact[tx][rx] < under for tx in left_pairs)
        assert all(carried[tx][rx] >= under for tx in range(n) if carried[tx][rx])
        # All at once and weighted by time on the air: the exact sum less what
        # the lists carry.
        all_of_them = sum(exact[tx][rx] for tx in range(n))
        listed = sum(carried[tx][rx] for tx in range(n))
        assert math.isclose(at_once[rx], all_of_them - listed, rel_tol=1e-9)
        weighted = sum(on_air[tx] * (exact[tx][rx] - carried[tx][rx]) for tx in range(n))
        assert math.isclose(averaged[rx], weighted, rel_tol=1e-9, abs_tol=1e-30)


def test_the_floors_error_stays_within_the_bounds_the_radio_page_gives():
    # docs/radio.md ("Who hears whom"): one signal left out raises a
    # receiver's noise by at most 0.41 dB (it is 10 dB under it); in this grid,
    # averaged over the run, what the floor leaves out raises no receiver's
    # noise by a hundredth of a dB, and at the instants when signals left out
    # are on the air, by under 1 dB (0.73 dB at most: two at once).
    network, net, now, samples = _run(sample_every_s=0.005)
    radios = list(net.radios.values())
    n = len(radios)
    exact, carried = _exact_powers(network, net), _carried(net)
    averaged = left_out_interference(network, net, now)
    assert max(_rise_db(averaged[rx], radios[rx].noise_mw) for rx in range(n)) < 0.01
    left_out = [[tx for tx in range(n) if tx != rx and not carried[tx][rx]] for rx in range(n)]
    single = max(
        _rise_db(exact[tx][rx], radios[rx].noise_mw) for rx in range(n) for tx in left_out[rx]
    )
    assert 0.3 < single <= 10 * math.log10(1.1)
    # The sampled instants: the signals left out that were on the air, summed.
    assert len(samples) >= now / 0.005 - 1
    worst = 0.0
    busy = 0
    for senders in samples:
        if not senders:
            continue
        busy += 1
        on_air = set(senders)
        for rx in range(n):
            left = sum(exact[tx][rx] for tx in left_out[rx] if tx in on_air)
            worst = max(worst, _rise_db(left, radios[rx].noise_mw))
    assert busy > 1000
    assert single < worst < 1.0


def test_the_figures_are_the_measures_median_and_largest_over_the_radios():
    network, net, now, _ = _run()
    radios = list(net.radios.values())
    rises = sorted(
        _rise_db(mw, r.noise_mw)
        for mw, r in zip(left_out_interference(network, net, now), radios, strict=True)
    )
    figures = left_out_rise_db(network, net, now)
    assert figures["max"] == pytest.approx(rises[-1], rel=1e-12)
    assert figures["median"] == pytest.approx(rises[len(rises) // 2], rel=1e-12)
    assert 0.0 < figures["median"] <= figures["p99"]
    assert figures["p99"] <= figures["max"] < 0.01
