"""Who hears whom in a block of buildings, against every pair examined by hand.

neighbours.py examines a pair in two buildings only within the reach that
the two outer walls leave, and finds them through smaller cells and each
node's own building. Here a block of nine buildings, large enough for pairs
beyond that reach, is built both ways: by `connect`, and by the plain
definition (every pair in node order, within the reach inside a building or
the shorter one between two, one shadowing draw each, `rng.gauss`). The
neighbour lists must be the same, entry for entry.
"""

from __future__ import annotations

import math
import random

from iotbench.metrics.observers import Observers
from iotbench.net.radio import phy
from iotbench.net.radio.medium import Radio, RadioMedium
from iotbench.net.radio.neighbours import REACH_FREQUENCY_MHZ, SHADOWING_CUTOFF_SIGMAS, connect
from iotbench.net.radio.propagation import PathLoss, between
from iotbench.sim import Simulator
from iotbench.world.networks.topology import BuildingPlan, building_positions


def _radios(count: int) -> tuple[RadioMedium, list[Radio]]:
    medium = RadioMedium(Simulator(1), 26, random.Random(1), Observers())
    radios = []
    for i in range(count):
        radio = Radio(
            medium, i, f"n{i}", tx_power_dbm=3.0, sensitivity_dbm=-101.0, cca_threshold_dbm=-91.0
        )
        medium.add_radio(radio)
        radios.append(radio)
    return medium, radios


def _by_hand(radios, places, loss: PathLoss, f: float, rng: random.Random):
    floor_dbm = [phy.mw_to_dbm(r.noise_mw) - 10.0 for r in radios]
    budget = 3.0 - min(floor_dbm) + SHADOWING_CUTOFF_SIGMAS * loss.shadowing_db
    reach = loss.max_distance_m(budget, REACH_FREQUENCY_MHZ)
    walls = 2 * loss.facade_db(REACH_FREQUENCY_MHZ)
    across = loss.max_distance_m(budget - walls, REACH_FREQUENCY_MHZ)
    lists: list[list[tuple[int, float, int]]] = [[] for _ in radios]
    pairs = 0
    beyond = 0
    for i, (p, floor_i, building_i) in enumerate(places):
        for j in range(i + 1, len(places)):
            q, floor_j, building_j = places[j]
            d = math.dist(p, q)
            if d > (reach if building_i == building_j else across):
                beyond += building_i != building_j and d <= reach
                continue
            floors, facades = between(building_i, floor_i, building_j, floor_j)
            pl = loss.mean_loss_db(d, f, floors, facades) + rng.gauss(0.0, loss.shadowing_db)
            got = False
            for a, b in ((i, j), (j, i)):
                if 3.0 - pl >= floor_dbm[b]:
                    lists[a].append((b, phy.dbm_to_mw(3.0 - pl), pairs))
                    got = True
            pairs += got
    return [sorted(own) for own in lists], pairs, beyond


def test_a_block_of_buildings_examines_the_pairs_the_definition_gives():
    plan = BuildingPlan(floors=2, buildings=9)
    places = building_positions(plan)[::3]  # 480 nodes, every building and floor
    medium, radios = _radios(len(places))
    loss = PathLoss(shadowing_db=6.0)
    f = medium.frequency_mhz
    pairs = connect(
        radios,
        [p for p, _, _ in places],
        loss,
        f,
        random.Random(7),
        floors=[floor for _, floor, _ in places],
        buildings=[building for _, _, building in places],
    )
    expected, expected_pairs, beyond = _by_hand(radios, places, loss, f, random.Random(7))
    assert beyond > 1000  # pairs within the reach inside a building, not between two
    assert pairs == expected_pairs
    for radio, own in zip(radios, expected, strict=True):
        got = [(rcv.index, mw, pair) for rcv, mw, pair in radio.neighbours]
        assert len(got) == len(own)
        for (j, mw, pair), (j2, mw2, pair2) in zip(got, own, strict=True):
            assert (j, pair) == (j2, pair2)
            assert mw == mw2 or math.isclose(mw, mw2, rel_tol=1e-12)


def test_a_coarser_floor_keeps_the_network_and_leaves_more_of_it_out():
    plan = BuildingPlan(floors=2, buildings=4)
    places = building_positions(plan)[::2]
    loss = PathLoss(shadowing_db=6.0)
    lists = {}
    for floor_db in (10.0, 0.0):
        medium, radios = _radios(len(places))
        connect(
            radios,
            [p for p, _, _ in places],
            loss,
            medium.frequency_mhz,
            random.Random(3),
            floors=[floor for _, floor, _ in places],
            buildings=[building for _, _, building in places],
            floor_below_noise_db=floor_db,
        )
        lists[floor_db] = [[(rcv.index, mw) for rcv, mw, _ in radio.neighbours] for radio in radios]
    noise_mw = radios[0].noise_mw
    # The same pairs and draws: the coarse lists are the fine ones, less what
    # is under the noise (each mean power the same number). (The pair ids,
    # which number the pairs kept, may differ.)
    for fine, coarse in zip(lists[10.0], lists[0.0], strict=True):
        assert coarse == [entry for entry in fine if entry[1] >= noise_mw]
    kept = sum(map(len, lists[0.0])) / sum(map(len, lists[10.0]))
    assert 0.05 < kept < 0.9
