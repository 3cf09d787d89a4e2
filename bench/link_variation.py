"""How static 802.15.4 links in FIT IoT-LAB's buildings vary in time: the parameters of
the `gauss-markov` link variation model (docs/radio.md), from the Mercator connectivity datasets.

    python bench/link_variation.py DATASET_DIR [--site grenoble] [--files N ...]

Mercator (Brun-Laguna, Gomes, Minet, Watteyne, "Moving Beyond Testbeds? Lessons (We)
Learned about Connectivity", IEEE Pervasive Computing 2018; the datasets in the
GitHub repository keomabrun/dense_connectivity_datasets, files <site>/<site>_<n>.k7.gz)
recorded FIT IoT-LAB M3 nodes (the AT86RF231 of S4's nodes, 0 dBm) taking turns to
send bursts of 100 frames on each channel 11 to 26 while every other node listened,
for a day or more: one row per burst and receiver, with the mean RSSI of the frames
received. S4 ran on the Grenoble site of the same testbed in 2018.

The script takes the link-channels that stay well inside the radio's range (mean RSSI
at least -80 dBm, never a burst under -88 dBm, a burst at least 90 % of the rounds) so
that the receiver's floor (-91 dBm) cuts nothing off, and prints, over them:

- sigma: the deviation in time of a link-channel's burst means about its own mean
  (its static shadowing and per-channel fading removed): the size of the variation;
- the autocorrelation of those deviations against the time between the bursts: the
  time scale (a burst averages its frames over one to ten seconds, so what varies
  faster than that does not show here);
- working hours (Monday to Friday, 8 to 19 h) against the rest: whether people in
  the building make a difference.

No dataset ships with iotbench; the numbers docs/radio.md quotes are this script's
on the repository at commit 2b4b6daec879483f3f156ccab0128ff9f62e8002.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

GOOD_MEAN_DBM = -80.0
GOOD_MIN_DBM = -88.0
PRESENT_SHARE = 0.9
LAG_BINS_H = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


def k7_header(path: Path) -> dict:
    """A K7 file's header (its first line): tx_length, channels, start_date, ..."""
    with gzip.open(path, "rt") as lines:
        return json.loads(next(lines))


def k7_bursts(path: Path) -> Iterator[dict[str, str]]:
    """A K7 file's rows, one per burst and receiver (datetime, src, dst, channel,
    mean_rssi, pdr, tx_count), each a dict of the row's text cells."""
    with gzip.open(path, "rt") as lines:
        next(lines)  # the header
        columns = next(lines).strip().split(",")
        for line in lines:
            yield dict(zip(columns, line.rstrip("\n").split(",")))


def read_k7(path: Path) -> tuple[dict, dict[tuple[int, int, int], list[tuple[float, float]]]]:
    """The header and, per (src, dst, channel), the (time s, mean RSSI dBm) of each burst."""
    series: dict[tuple[int, int, int], list[tuple[float, float]]] = defaultdict(list)
    for row in k7_bursts(path):
        if not row.get("mean_rssi") or not row.get("channel"):
            continue  # no frame received in that burst, or a row without its channel
        when = datetime.fromisoformat(row["datetime"]).timestamp()
        key = (int(row["src"]), int(row["dst"]), int(float(row["channel"])))
        series[key].append((when, float(row["mean_rssi"])))
    return k7_header(path), series


def good(samples: list[tuple[float, float]], rounds: int) -> bool:
    values = [rssi for _, rssi in samples]
    return (
        len(values) >= PRESENT_SHARE * rounds
        and statistics.fmean(values) >= GOOD_MEAN_DBM
        and min(values) >= GOOD_MIN_DBM
    )


def working_hours(when: float) -> bool:
    moment = datetime.fromtimestamp(when)
    return moment.weekday() < 5 and 8 <= moment.hour < 19


def analyse(paths: list[Path]) -> None:
    sigmas: list[float] = []
    acf = [[0.0, 0] for _ in LAG_BINS_H[1:]]
    steps: dict[bool, list[float]] = {True: [], False: []}
    for path in paths:
        _, series = read_k7(path)
        if not series:
            print(f"{path.name}: no row names its channel; left out")
            continue
        rounds = max(len(s) for s in series.values())
        kept = [s for s in series.values() if good(s, rounds)]
        print(f"{path.name}: {len(series)} link-channels, {rounds} rounds, {len(kept)} kept")
        for samples in kept:
            times = [t for t, _ in samples]
            values = [v for _, v in samples]
            mean = statistics.fmean(values)
            dev = [v - mean for v in values]
            var = statistics.fmean([d * d for d in dev])
            if var <= 0:
                continue
            sigmas.append(var**0.5)
            for i in range(len(dev)):
                for j in range(i + 1, len(dev)):
                    lag_h = (times[j] - times[i]) / 3600.0
                    for b, (low, high) in enumerate(zip(LAG_BINS_H, LAG_BINS_H[1:])):
                        if low <= lag_h < high:
                            acf[b][0] += dev[i] * dev[j] / var
                            acf[b][1] += 1
                            break
            for (t0, v0), (_, v1) in zip(samples, samples[1:]):
                steps[working_hours(t0)].append(abs(v1 - v0))
    sigmas.sort()
    q = [sigmas[int(f * (len(sigmas) - 1))] for f in (0.25, 0.5, 0.75)]
    print(
        f"\nsigma over {len(sigmas)} link-channels: median {q[1]:.2f} dB (IQR {q[0]:.2f}-{q[2]:.2f})"
    )
    print("autocorrelation of the deviations against the time between bursts:")
    for (low, high), (total, count) in zip(zip(LAG_BINS_H, LAG_BINS_H[1:]), acf):
        if count:
            print(f"  {low:4.0f} to {high:4.0f} h: {total / count:5.2f}  ({count} pairs)")
    for busy, label in ((True, "working hours"), (False, "nights and weekends")):
        if steps[busy]:
            print(
                f"change between consecutive rounds, {label}: median "
                f"{statistics.median(steps[busy]):.2f} dB over {len(steps[busy])} steps"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path, help="a clone of dense_connectivity_datasets")
    parser.add_argument("--site", default="grenoble")
    parser.add_argument(
        "--files",
        nargs="+",
        default=None,
        help="which of the site's files (default: all)",
    )
    args = parser.parse_args()
    folder = args.dataset / args.site
    names = args.files or sorted(p.name for p in folder.glob("*.k7.gz"))
    analyse([folder / name for name in names])


if __name__ == "__main__":
    main()
