"""Links that vary in time (net/radio/propagation.py): the Gauss-Markov model keeps the
statistics of the measurements it comes from (docs/radio.md), and the Gilbert-Elliott
chain its own law, whenever frames come."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from librt.vecs import vec
from mypy_extensions import i64

from iotbench.metrics.observers import Observers
from iotbench.net.radio.medium import Radio, RadioMedium
from iotbench.net.radio.propagation import (
    GAUSS_MARGIN_SIGMAS,
    GaussMarkovLinks,
    GilbertElliottLinks,
    LinkVariation,
    RayleighFading,
    box_muller,
    pair_uniform,
)
from iotbench.net.routing.tree import least_etx_tree, reception_ratio
from iotbench.sim import Simulator

# The Mercator datasets' static links in FIT IoT-LAB's Grenoble building (S4's site):
# a deviation of 0.4 dB about a link's mean, decorrelated within hours.
SIGMA_DB, TAU_S = 0.4, 3600.0


def powers(model: LinkVariation, means: list[float], pairs: list[int], now: float) -> list[float]:
    """model.powers with lists in and out (the medium passes librt vectors)."""
    return list(model.powers(vec[float](means), vec[i64](pairs), now))


def sample(model: GaussMarkovLinks, times: list[float], pair: int = 0) -> list[float]:
    """The link's deviation from its mean (dB) at each of these frame times."""
    return [10 * math.log10(powers(model, [1.0], [pair], t)[0]) for t in times]


def frame_times(rng: random.Random, n: int, mean_gap_s: float) -> list[float]:
    times, t = [], 0.0
    for _ in range(n):
        t += rng.expovariate(1.0 / mean_gap_s)  # irregular, as frames come
        times.append(t)
    return times


def test_the_variation_has_the_measured_deviation_whatever_the_frames_spacing():
    rng = random.Random(1)
    for gap_s in (60.0, 10 * TAU_S):  # many frames per time constant, or far apart
        model = GaussMarkovLinks(random.Random(2), 1, SIGMA_DB, TAU_S)
        xs = sample(model, frame_times(rng, 60_000, gap_s))
        assert statistics.pstdev(xs) == pytest.approx(SIGMA_DB, rel=0.05)
        assert abs(statistics.fmean(xs)) < 0.05


@pytest.mark.parametrize("lag_over_tau", [0.1, 0.5, 1.0, 2.0])
def test_the_autocorrelation_decays_as_e_to_the_minus_lag_over_tau(lag_over_tau):
    """Pairs of frames `lag` apart on many independent links: their correlation is
    e^-(lag / tau), however the link's frames fell before."""
    rng = random.Random(3)
    model = GaussMarkovLinks(random.Random(4), 20_000, SIGMA_DB, TAU_S)
    lag = lag_over_tau * TAU_S
    first, second = [], []
    for pair in range(20_000):
        start = rng.uniform(0, 5 * TAU_S)
        a, b = sample(model, [start, start + lag], pair)
        first.append(a)
        second.append(b)
    r = statistics.correlation(first, second)
    assert r == pytest.approx(math.exp(-lag_over_tau), abs=0.02)
    assert statistics.pstdev(first) == pytest.approx(SIGMA_DB, rel=0.03)


def test_pairs_are_independent_and_both_directions_share_one():
    model = GaussMarkovLinks(random.Random(5), 2, SIGMA_DB, TAU_S)
    a = sample(model, [0.0, 0.001], pair=0)
    b = sample(model, [0.002], pair=1)
    # Frames a millisecond apart on one pair see (nearly) the same link.
    assert a[1] == pytest.approx(a[0], abs=SIGMA_DB * 0.01)
    assert b[0] != pytest.approx(a[1], abs=1e-9)
    assert model.margin_db == GAUSS_MARGIN_SIGMAS * SIGMA_DB


def test_the_same_seed_gives_the_same_draws():
    times = frame_times(random.Random(6), 1000, 5.0)
    runs = [sample(GaussMarkovLinks(random.Random(7), 1, SIGMA_DB, TAU_S), times) for _ in range(2)]
    assert runs[0] == runs[1]


def test_the_normal_draws_are_random_gauss_s_own():
    """The model draws its normals with random.Random.gauss's algorithm, written out in
    compiled code: the same numbers as gauss(0, 1) on the same stream, so a link is the
    same process, to the last bit, as when the model called gauss."""
    rng = random.Random(11)
    model = GaussMarkovLinks(rng, 3, SIGMA_DB, TAU_S)
    reference = random.Random(11)
    reference.getrandbits(64)  # the model's key for the links at time 0
    x = [SIGMA_DB * statistics.NormalDist().inv_cdf(pair_uniform(model._key, p)) for p in range(3)]
    since = [0.0] * 3
    db = math.log(10.0) / 10.0
    for k, now in enumerate(frame_times(random.Random(2), 300, 3.0)):
        pairs = list(range(k % 3 + 1))  # one to three receivers a frame
        got = powers(model, [2.0] * len(pairs), pairs, now)
        want = []
        for p in pairs:
            mean_mw = 2.0
            z = reference.gauss(0.0, 1.0)
            a = math.exp((-1.0 / TAU_S) * (now - since[p]))
            x[p] = a * x[p] + SIGMA_DB * math.sqrt(1.0 - a * a) * z
            since[p] = now
            want.append(mean_mw * math.exp(x[p] * db))
        assert got == want


def _radios(count: int) -> list[Radio]:
    """Radios of -101 dBm sensitivity on one medium, without links yet (the routing
    tree reads their sensitivity, noise and neighbours)."""
    medium = RadioMedium(Simulator(1), 26, random.Random(1), Observers())
    return [
        Radio(medium, i, f"r{i}", tx_power_dbm=0.0, sensitivity_dbm=-101.0, cca_threshold_dbm=-77.0)
        for i in range(count)
    ]


def _link(a: Radio, b: Radio, dbm: float) -> None:
    mw = 10 ** (dbm / 10)
    a.neighbours = [*a.neighbours, (b, mw, 0)]
    b.neighbours = [*b.neighbours, (a, mw, 0)]


def test_a_links_expected_reception_averages_its_variation():
    """Just above the sensitivity a link receives nearly all at its mean and nothing
    below it: varying by 0.4 dB it receives about half the time; well above it, all."""
    spread = GaussMarkovLinks(random.Random(1), 1, SIGMA_DB, TAU_S).spread()
    assert sum(w for w, _ in spread) == pytest.approx(1.0)
    a, b = _radios(2)
    edge, strong = 10 ** (-100.96 / 10), 10 ** (-90.0 / 10)
    steady = reception_ratio(a, b, edge, 50)
    assert steady > 0.95
    below = 0.5 * (1 + math.erf(-0.04 / SIGMA_DB / math.sqrt(2)))  # P(x < -0.04 dB)
    assert reception_ratio(a, b, edge, 50, spread) == pytest.approx(steady * (1 - below), abs=0.02)
    assert reception_ratio(a, b, strong, 50, spread) == pytest.approx(1.0)
    # Rayleigh fading and Gilbert-Elliott states average the same way.
    rayleigh = RayleighFading(random.Random(1)).spread()
    assert sum(w * f for w, f in rayleigh) == pytest.approx(1.0, abs=0.01)
    ge = GilbertElliottLinks(random.Random(1), 1, 9.0, 1.0, 30.0).spread()
    assert reception_ratio(a, b, strong, 50, ge) == pytest.approx(0.9)


def test_the_tree_of_least_expected_transmissions_avoids_a_link_at_the_sensitivity():
    """One hop at the sensitivity's edge or two strong ones: at the mean power the
    one hop costs fewer transmissions; over links that vary, the two."""
    root, relay, leaf = _radios(3)
    _link(leaf, root, -100.96)
    _link(leaf, relay, -85.0)
    _link(relay, root, -85.0)
    radios = [root, relay, leaf]
    assert least_etx_tree(radios, 0).parent[2] == 0
    spread = GaussMarkovLinks(random.Random(1), 1, SIGMA_DB, TAU_S).spread()
    varying = least_etx_tree(radios, 0, spread=spread)
    assert varying.parent[2] == 1 and varying.hops[2] == 2


def test_every_variant_starts_from_the_same_links_whatever_frames_come_first():
    """A link's value at time 0 depends on the network's stream and the pair alone:
    two runs whose first frames come in other orders meet the same links at first,
    and over many pairs those values have the measured deviation."""
    a = GaussMarkovLinks(random.Random(5), 2000, SIGMA_DB, TAU_S)
    b = GaussMarkovLinks(random.Random(5), 2000, SIGMA_DB, TAU_S)
    powers(b, [1.0], [7], 1e-9)  # b's first frame is another pair's, and earlier
    first_a = sample(a, [1e-9], pair=3)[0]
    first_b = sample(b, [1e-9], pair=3)[0]
    assert first_a == pytest.approx(first_b, abs=1e-3)
    starts = [sample(a, [1e-9], pair=p)[0] for p in range(10, 2000)]
    assert statistics.pstdev(starts) == pytest.approx(SIGMA_DB, rel=0.05)
    ge_a = GilbertElliottLinks(random.Random(5), 10, 30.0, 3.0, 10.0)
    ge_b = GilbertElliottLinks(random.Random(5), 10, 30.0, 3.0, 10.0)
    powers(ge_b, [1.0], [9], 0.0)
    assert [powers(ge_a, [1.0], [p], 0.0) for p in range(9)] == [
        powers(ge_b, [1.0], [p], 0.0) for p in range(9)
    ]


def test_box_muller_gives_random_gauss_s_pair():
    # One call: the value gauss returns and the one it keeps, from the same draws.
    ours, library = random.Random(7), random.Random(7)
    for _ in range(1000):
        first, second = box_muller(ours.random(), ours.random())
        assert (first, second) == (library.gauss(0.0, 1.0), library.gauss(0.0, 1.0))
    assert ours.random() == library.random()  # the same stream consumed
