"""Who hears whom: each radio's neighbour list, computed once per run.

A transmission reaches a receiver with the mean power

    P_rx = P_tx - PL(d, floors, facades) - X_shadow          (dBm)

(propagation.py). A receiver is in the transmitter's list when that power,
plus the most temporal variation can add (`margin_db`), is at least its
interference floor: `floor_below_noise_db` under its noise floor. Weaker
signals are left out entirely (one 10 dB under the noise raises it by 0.4
dB); they cost nothing per frame. `left_out` measures what that leaves out
of a run (docs/radio.md, "What the floor leaves out, measured").

To avoid looking at every pair of a 10,000-node network, positions go into a
grid of cells as large as the farthest any signal can matter (the mean loss
at that distance, less three shadowing deviations, exhausts the largest link
budget), and only pairs in neighbouring cells are examined. Shadowing is
drawn once per examined pair, in a fixed order (by node index), so the same
seed gives the same network however it is built. That distance is taken at
channel 26's frequency and without the temporal variation's margin, so that
which pairs get a draw, and so every draw, does not depend on the channel or
the variation model: variants of a campaign on other channels (S4's IP
variants on 11) meet the same walls. (Three shadowing deviations of slack
leave the few tenths of a dB a lower channel reaches further, and the
margin, nothing to include.) Nor does it depend on a floor coarser than the
default 10 dB under the noise: that distance is the default floor's, so a
coarser floor, the opt-in approximation for large dense networks, keeps the
same network (positions, shadowing draws, mean powers) and only leaves more
of its signals out. (Pair ids number the pairs kept, so a link variation
model's draws, keyed by them, differ.)

In a topology of several buildings, a pair in two buildings has a shorter
reach, that of the budget less the two outer walls (propagation.between);
the cells are then as large as that shorter reach, and a node's own
building is examined whole, so that a block of buildings, all within the
reach inside one, does not make every pair a candidate. With one building
(and every other topology) the pairs examined, and their order, are the
same as without buildings.

Links given explicitly (a file topology's packet reception ratios) replace
the model for their pair: the mean power is set so that frames of
`prr_frame_bytes` arrive with that ratio (phy.snr_for_prr_db).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Final

from librt.vecs import append, vec
from mypy_extensions import i64

from iotbench.net.radio import phy
from iotbench.net.radio.medium import Radio
from iotbench.net.radio.propagation import FACADES_BETWEEN_BUILDINGS, PathLoss, box_muller

Position = tuple[float, float, float]

SHADOWING_CUTOFF_SIGMAS: Final = 3.0
REACH_FREQUENCY_MHZ: Final = phy.channel_center_mhz(26)  # see the module doc
REACH_FLOOR_DB: Final = 10.0  # the default interference floor; see the module doc
# A PRR of 1 cannot come from an SNR; links given as 1 get this one.
PRR_CEILING: Final = 1.0 - 1e-9


def connect(
    radios: Sequence[Radio],
    positions: Sequence[Position],
    path_loss: PathLoss,
    frequency_mhz: float,
    rng: random.Random,
    *,
    floors: Sequence[int] | None = None,
    buildings: Sequence[int] | None = None,
    margin_db: float = 0.0,
    floor_below_noise_db: float = 10.0,
    link_prr: Mapping[tuple[int, int], float] | None = None,
    prr_frame_bytes: int = 50,
) -> int:
    """Fill every radio's `neighbours`; return the number of pairs (pair ids 0..n-1)."""
    link_prr = link_prr or {}
    examined = (radios, positions, path_loss, frequency_mhz, rng, floors, buildings)
    lists, pairs, _ = _examine(*examined, margin_db, floor_below_noise_db, link_prr, None)
    noise_dbm = [phy.mw_to_dbm(r.noise_mw) for r in radios]
    given = sorted(_explicit(link_prr))
    for a, b in given:
        got = False
        for src, dst in ((a, b), (b, a)):
            prr = link_prr.get((src, dst), link_prr.get((dst, src), 0.0))
            if prr <= 0.0:
                continue
            snr = phy.snr_for_prr_db(min(prr, PRR_CEILING), prr_frame_bytes)
            lists[src].add(radios[dst], phy.dbm_to_mw(noise_dbm[dst] + snr), pairs)
            got = True
        pairs += got
    place = {id(radio): k for k, radio in enumerate(radios)} if given else {}
    for radio, own in zip(radios, lists, strict=True):
        if given:
            own.sort(place)
        radio.receivers = tuple(own.receivers)
        radio.mean_mws = vec[float](own.mws)
        radio.pairs = vec[i64](own.pairs)
        own.receivers, own.mws, own.pairs = [], vec[float](), vec[i64]()  # (gone now)
    return pairs


class _Neighbours:
    """One radio's neighbour list as `_examine` fills it, in the receivers'
    order: the receivers, the mean powers and the pair ids (no tuple per
    entry: a 10,000-node block of buildings has nine million entries). The
    powers are doubles in a vector, not float objects (made pair by pair, a
    radio's float objects lay apart in memory, and the medium's loops walk
    them at every frame: the 10,000-node block ran 1.5 times as long); `connect`
    gives each radio a copy of its own size."""

    def __init__(self) -> None:
        self.receivers: list[Radio] = []
        self.mws = vec[float]()
        self.pairs = vec[i64]()

    def add(self, receiver: Radio, mw: float, pair: i64) -> None:
        self.receivers.append(receiver)
        self.mws = append(self.mws, mw)
        self.pairs = append(self.pairs, pair)

    def sort(self, place: dict[int, int]) -> None:
        """In the receivers' order (`place`: by id) once the links a file
        gives are added after the model's."""
        order = sorted(range(len(self.receivers)), key=lambda k: place[id(self.receivers[k])])
        self.receivers = [self.receivers[k] for k in order]
        self.mws = vec[float]([self.mws[k] for k in order])
        self.pairs = vec[i64]([self.pairs[k] for k in order])


def left_out(
    radios: Sequence[Radio],
    positions: Sequence[Position],
    path_loss: PathLoss,
    frequency_mhz: float,
    rng: random.Random,
    weights: Sequence[float],
    *,
    floors: Sequence[int] | None = None,
    buildings: Sequence[int] | None = None,
    margin_db: float = 0.0,
    floor_below_noise_db: float = 10.0,
    link_prr: Mapping[tuple[int, int], float] | None = None,
) -> list[float]:
    """What the neighbour lists leave out: for each receiver, the sum over the
    transmitters examined but left out of its list of `weights[transmitter]`
    times the mean power (mW) it would get from them.

    Called with the arguments `connect` had and a fresh random stream of the
    same seed, it examines the same pairs with the same shadowing draws. With
    every weight 1 the sum is what the left-out signals would add to the
    receiver's noise were they all sent at once; with each transmitter's share
    of time on the air, what they add on average over a run. Pairs beyond the
    reach (module doc) are not examined, and so not counted: each of them is
    at least three shadowing deviations under the floor."""
    examined = (radios, positions, path_loss, frequency_mhz, rng, floors, buildings)
    _, _, left = _examine(*examined, margin_db, floor_below_noise_db, link_prr, list(weights))
    return left


def _explicit(link_prr: Mapping[tuple[int, int], float] | None) -> set[tuple[int, int]]:
    """The pairs a topology file gives link qualities for, each once (lower index first)."""
    return {(min(a, b), max(a, b)) for a, b in (link_prr or {})}


def _examine(
    radios: Sequence[Radio],
    positions: Sequence[Position],
    path_loss: PathLoss,
    frequency_mhz: float,
    rng: random.Random,
    floors: Sequence[int] | None,
    buildings: Sequence[int] | None,
    margin_db: float,
    floor_below_noise_db: float,
    link_prr: Mapping[tuple[int, int], float] | None,
    weights: list[float] | None,
) -> tuple[list[_Neighbours], int, list[float]]:
    """Every pair within reach, once, in node order, with its shadowing draw
    (the pairs `link_prr` gives are `connect`'s to add): each radio's neighbour
    list (by receiver index: a radio meets the lower indices first, as the
    other end of their pairs, then the higher ones, in order), the number of
    pairs, and, with `weights`, what `left_out` returns (else a list of zeros)."""
    n = len(radios)
    floors = floors if floors is not None else [0] * n
    buildings = buildings if buildings is not None else [0] * n
    explicit = _explicit(link_prr)
    noise_dbm = [phy.mw_to_dbm(r.noise_mw) for r in radios]
    floor_dbm = [noise - floor_below_noise_db for noise in noise_dbm]
    reach_floor = max(floor_below_noise_db, REACH_FLOOR_DB)  # see the module doc
    budget = max(r.tx_power_dbm for r in radios) - min(noise - reach_floor for noise in noise_dbm)
    budget += SHADOWING_CUTOFF_SIGMAS * path_loss.shadowing_db
    reach = max(path_loss.max_distance_m(budget, REACH_FREQUENCY_MHZ), 1e-6)
    # Between two buildings the two outer walls shorten the reach (at channel
    # 26's frequency, as the reach itself). The cells are then that small, and
    # a node's own building is examined whole: a block of buildings lies within
    # the reach inside one, so cells of that size would examine every pair.
    walls = FACADES_BETWEEN_BUILDINGS * path_loss.facade_db(REACH_FREQUENCY_MHZ)
    across = max(path_loss.max_distance_m(budget - walls, REACH_FREQUENCY_MHZ), 1e-6)
    own_building: dict[int, list[int]] = {}
    for i, building in enumerate(buildings):
        own_building.setdefault(building, []).append(i)
    several = len(own_building) > 1
    cell = across if several else reach

    cells: dict[tuple[int, int, int], list[int]] = {}
    for i, (x, y, z) in enumerate(positions):
        cells.setdefault((int(x // cell), int(y // cell), int(z // cell)), []).append(i)

    lists = [_Neighbours() for _ in range(n)]
    left = [0.0] * n
    pairs = 0
    # The mean loss written out (path_loss.mean_loss_db): this loop meets every
    # pair of nodes within reach, a few million in a 10,000-node network.
    reference = path_loss.reference_db(frequency_mhz)
    d0 = path_loss.reference_distance_m
    per_ln = 10.0 * path_loss.exponent / math.log(10.0)
    sigma = path_loss.shadowing_db
    floors_db = path_loss.floors_db
    facades_db = FACADES_BETWEEN_BUILDINGS * path_loss.facade_db(frequency_mhz)
    tx_dbm = [r.tx_power_dbm for r in radios]
    # random.Random.gauss written out (box_muller; the second value kept for
    # the next draw in the generator's own `gauss_next`): compiled, it costs a
    # fraction of the library's Python-level call, a few million of which
    # build a large network.
    uniform = rng.random
    spare: float | None = rng.gauss_next  # type: ignore[attr-defined]
    # Most candidates from neighbouring cells are out of reach: a squared
    # distance clearly beyond it (by more than rounding could explain) rules
    # them out cheaply; math.dist decides the others, as it always has.
    points: list[tuple[float, float, float]] = [(p[0], p[1], p[2]) for p in positions]
    clearly_out = reach * reach * (1.0 + 1e-9)
    clearly_out_across = across * across * (1.0 + 1e-9)
    for i in range(n):
        x, y, z = points[i]
        cx, cy, cz = int(x // cell), int(y // cell), int(z // cell)
        candidates: list[int] = []
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for dz in (-1, 0, 1):
                    for j in cells.get((cx + dx, cy + dy, cz + dz), ()):
                        if j > i:
                            candidates.append(j)
        here, floor_i, building_i = points[i], floors[i], buildings[i]
        if several:  # the cells' nodes and the whole own building, each once
            seen = set(candidates)
            candidates.extend(j for j in own_building[building_i] if j > i and j not in seen)
        candidates.sort()
        for j in candidates:
            there = points[j]
            inside = buildings[j] == building_i
            ddx, ddy, ddz = x - there[0], y - there[1], z - there[2]
            if ddx * ddx + ddy * ddy + ddz * ddz > (clearly_out if inside else clearly_out_across):
                continue
            d = math.dist(here, there)
            if d > (reach if inside else across) or (explicit and (i, j) in explicit):
                continue
            loss = reference + per_ln * math.log(d / d0) if d > d0 else reference
            if not inside:
                loss += facades_db
            elif floors[j] != floor_i:
                loss += floors_db(abs(floors[j] - floor_i))
            # Shadowing: one draw per pair (rng.gauss(0.0, sigma)).
            if spare is None:
                normal, spare = box_muller(uniform(), uniform())
            else:
                normal = spare
                spare = None
            loss += 0.0 + normal * sigma
            got = False
            rx_dbm = tx_dbm[i] - loss
            if rx_dbm + margin_db >= floor_dbm[j]:
                lists[i].add(radios[j], phy.dbm_to_mw(rx_dbm), pairs)
                got = True
            elif weights is not None:
                left[j] += weights[i] * phy.dbm_to_mw(rx_dbm)
            rx_dbm = tx_dbm[j] - loss
            if rx_dbm + margin_db >= floor_dbm[i]:
                lists[j].add(radios[i], phy.dbm_to_mw(rx_dbm), pairs)
                got = True
            elif weights is not None:
                left[i] += weights[j] * phy.dbm_to_mw(rx_dbm)
            pairs += got
    rng.gauss_next = spare  # type: ignore[attr-defined]
    return lists, pairs, left
