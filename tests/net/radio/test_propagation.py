"""Mean path loss between buildings: 3GPP TR 38.901's outer wall, crossed twice.

Hand-computed vectors: at 2.4 GHz standard glass costs 2 + 0.2 x 2.4 = 2.48
dB and concrete 5 + 4 x 2.4 = 14.6 dB; the low-loss wall (30 % glass, 70 %
concrete) 5 - 10 log10(0.3 x 10^-0.248 + 0.7 x 10^-1.46) = 5 - 10
log10(0.169481 + 0.024272) = 12.128 dB. At 868 MHz: 2.1736 and 8.472 dB,
5 - 10 log10(0.181927 + 0.099465) = 10.507 dB.
"""

from __future__ import annotations

import math
import random

import pytest

from iotbench.metrics.observers import Observers
from iotbench.net.radio import phy
from iotbench.net.radio.medium import Radio, RadioMedium
from iotbench.net.radio.neighbours import connect
from iotbench.net.radio.propagation import PathLoss, between, o2i_low_loss_db
from iotbench.sim import Simulator


def test_the_low_loss_outer_wall_of_38_901():
    assert o2i_low_loss_db(2400.0) == pytest.approx(12.128, abs=0.001)
    assert o2i_low_loss_db(868.0) == pytest.approx(10.507, abs=0.001)
    # Concrete's share grows with the frequency: the wall costs more.
    assert o2i_low_loss_db(2480.0) > o2i_low_loss_db(2405.0)


def test_floors_within_a_building_two_walls_between_buildings():
    assert between(0, 1, 0, 4) == (3, 0)
    assert between(2, 0, 2, 0) == (0, 0)
    assert between(0, 0, 1, 3) == (0, 2)  # the facades, not the floors


def test_the_mean_loss_adds_each_facade():
    loss = PathLoss(shadowing_db=0.0)
    f = 2405.0
    inside = loss.mean_loss_db(30.0, f)
    assert loss.mean_loss_db(30.0, f, 0, 2) == pytest.approx(inside + 2 * o2i_low_loss_db(f))
    assert loss.mean_loss_db(30.0, f, 2, 0) == pytest.approx(inside + 15.0 + 4.0)
    given = PathLoss(shadowing_db=0.0, facade_loss_db=7.0)
    assert given.mean_loss_db(30.0, f, 0, 2) == pytest.approx(inside + 14.0)


def test_neighbour_lists_take_the_walls_between_buildings():
    # Three radios 22 m apart in a row: n0 and n1 in one building on different
    # floors, n2 in the next building. No shadowing: the powers are the model's.
    sim = Simulator(1)
    medium = RadioMedium(sim, 26, sim.rng("medium"), Observers())
    radios = []
    for i in range(3):
        radio = Radio(
            medium, i, f"n{i}", tx_power_dbm=3.0, sensitivity_dbm=-101.0, cca_threshold_dbm=-91.0
        )
        medium.add_radio(radio)
        radios.append(radio)
    positions = [(0.0, 0.0, 0.8), (22.0, 0.0, 4.3), (44.0, 0.0, 0.8)]
    loss = PathLoss(shadowing_db=0.0)
    f = medium.frequency_mhz
    connect(radios, positions, loss, f, random.Random(1), floors=[0, 1, 0], buildings=[0, 0, 1])
    got = {(a.index, b.index): mw for a in radios for b, mw, _ in a.neighbours}
    for (i, j), mw in got.items():
        floors, facades = between([0, 0, 1][i], [0, 1, 0][i], [0, 0, 1][j], [0, 1, 0][j])
        d = math.dist(positions[i], positions[j])
        expected = phy.dbm_to_mw(3.0 - loss.mean_loss_db(d, f, floors, facades))
        assert mw == pytest.approx(expected, rel=1e-12)
    assert (0, 2) in got and (1, 2) in got  # above the interference floor, walls and all
    # The walls cost what the model says: n0 -> n2 against the same distance inside.
    inside = phy.dbm_to_mw(3.0 - loss.mean_loss_db(44.0, f))
    assert phy.mw_to_dbm(inside) - phy.mw_to_dbm(got[0, 2]) == pytest.approx(2 * o2i_low_loss_db(f))
