"""A radio network's pairs of nodes: the model its neighbour lists are built
with (net/radio/neighbours.py), and what the interference floor left out.

The build (radio.py) and the measure of what it left out examine the same
pairs with the same arguments and the same shadowing draws, so both take
them from `pair_model`. docs/radio.md ("Who hears whom") says what the
floor leaves out and how much that was in the built-in scenarios and the
large grids.
"""

from __future__ import annotations

import math
from typing import Any

from iotbench.net.radio.energy import STATES
from iotbench.net.radio.neighbours import left_out
from iotbench.net.radio.propagation import GAUSS_MARGIN_SIGMAS, RAYLEIGH_MARGIN_DB, PathLoss
from iotbench.scenarios.settings import required
from iotbench.scenarios.settings_types import (
    NetworkRadioSettings,
    NetworkRadioVariationGaussMarkovSettings,
    NetworkRadioVariationRayleighSettings,
    NetworkSettings,
)
from iotbench.sim import RngStreams
from iotbench.world.networks.base import RadioNetwork
from iotbench.world.networks.topology import Topology


def path_loss_of(radio_cfg: NetworkRadioSettings) -> PathLoss:
    """The path loss `network.radio.path_loss` describes (net/radio/propagation.py)."""
    pl = radio_cfg.path_loss
    return PathLoss(
        exponent=pl.exponent,
        reference_distance_m=pl.reference_distance_m,
        reference_loss_db=pl.reference_loss_db,
        shadowing_db=pl.shadowing_db,
        floor_loss_db=pl.floor_loss_db,
        floor_loss_extra_db=pl.floor_loss_extra_db,
        facade_loss_db=pl.facade_loss_db,
    )


def pair_model(radio_cfg: NetworkRadioSettings, topology: Topology) -> dict[str, Any]:
    """What neighbours.py examines a network's pairs with, besides its radios,
    frequency and random stream: the same for the build and for measuring
    what it left out."""
    v = radio_cfg.variation
    margin_db = 0.0  # the most the links' variation in time adds to a mean power
    if isinstance(v, NetworkRadioVariationRayleighSettings):
        margin_db = RAYLEIGH_MARGIN_DB
    elif isinstance(v, NetworkRadioVariationGaussMarkovSettings):
        margin_db = GAUSS_MARGIN_SIGMAS * v.sigma_db
    index = {n.id: i for i, n in enumerate(topology.nodes)}
    return {
        "positions": [n.position for n in topology.nodes],
        "path_loss": path_loss_of(radio_cfg),
        "floors": [n.floor for n in topology.nodes],
        "buildings": [n.building for n in topology.nodes],
        "margin_db": margin_db,
        "floor_below_noise_db": radio_cfg.interference_floor_db,
        "link_prr": {(index[a], index[b]): p for (a, b), p in topology.link_prr.items()},
    }


def left_out_interference(
    network: NetworkSettings, net: RadioNetwork, now: float | None = None
) -> list[float]:
    """What the interference floor leaves out at each radio of `net`, the
    network `network` built (the first one; topology order): the mean power
    (mW) of the signals below `network.radio.interference_floor_db` that its
    neighbour list does not carry. With `now`, each transmitter weighted by
    its share of [0, now] on the air, which is what those signals would have
    added to the radio's noise on average over a run; without, all of them
    at once. The pairs are examined again as the build examined them, with a
    fresh stream of the network's seed (the same shadowing draws), which
    costs about as much as building the neighbour lists did."""
    radio_cfg = required(network.radio, "network.radio")
    radios = list(net.radios.values())
    if now is None:
        weights = [1.0] * len(radios)
    else:
        tx = STATES.index("tx")
        weights = [r.power.times_s(now)[tx] / now if now > 0 else 0.0 for r in radios]
    return left_out(
        radios,
        frequency_mhz=net.medium.frequency_mhz,
        rng=RngStreams(network.seed).stream("radio/shadowing"),
        weights=weights,
        **pair_model(radio_cfg, net.topology),
    )


def left_out_rise_db(network: NetworkSettings, net: RadioNetwork, now: float) -> dict[str, float]:
    """Over the radios, the median, 99th percentile and largest noise rise (dB)
    that the signals left out would have caused on average over [0, now]
    (left_out_interference)."""
    left = left_out_interference(network, net, now)
    rises = sorted(
        10.0 * math.log10(1.0 + mw / radio.noise_mw)
        for mw, radio in zip(left, net.radios.values(), strict=True)
    )
    return {
        "median": rises[len(rises) // 2],
        "p99": rises[min(len(rises) - 1, int(len(rises) * 0.99))],
        "max": rises[-1],
    }
