"""Background Wi-Fi at S4's site: what the Mercator measurements show on each 802.15.4
channel, and the office Wi-Fi of `s4-wifi` (docs/studies/s4.md), probed the same way.

    python bench/wifi_site.py measured DATASET_DIR [--files ...]
    python bench/wifi_site.py probe [--load-mbps L] [--channels 11 12 ...]
    python bench/wifi_site.py calibrate DATASET_DIR [--channel 12]

Mercator (Brun-Laguna, Gomes, Minet, Watteyne, IEEE Pervasive Computing 2018; the
datasets in keomabrun/dense_connectivity_datasets) had FIT IoT-LAB's M3 nodes in
Grenoble, S4's site, take turns to send bursts of 100 frames of 100 bytes on every
channel 11 to 26, no acknowledgement, no retry, while the others counted what they
received. `measured` takes, per file, the links whose every burst on channels 15 to 22
got through (links no Wi-Fi reaches there, and strong enough that nothing else loses
a frame) and prints their mean delivery on each channel: what the building's Wi-Fi
costs a good link on each.

`probe` does Mercator's measurement inside the model: S4's building (s4-multi-hop's
network 8, its path loss, shadowing and link variation), every node in turn sending
100 frames of 100 bytes 10 ms apart with nothing else on the air but the Wi-Fi of
`s4-wifi`'s `office` preset (its access points, channel, power and pattern; the load
per access point `--load-mbps`), and prints, per channel, the mean delivery over the
links that lose nothing without the Wi-Fi.

`calibrate` finds the load per access point at which the probe's delivery on one
channel (`--channel`, 11 by default: the channel S4's IP variants use, so that the
Wi-Fi costs them what the building's cost channel 11) is the measured one, by
bisection, and prints the other channels beside the measurement: those are not
fitted, they test the Wi-Fi's spectrum and the model. The load it gives is the
`office` preset's rate_bps, declared CALIBRATED there.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from link_variation import k7_bursts, k7_header

from iotbench.metrics.observers import Observers
from iotbench.net.packet import Packet
from iotbench.net.radio.medium import FrameReceiver
from iotbench.scenarios import expand, load_scenario
from iotbench.scenarios.settings import run_settings
from iotbench.sim import RngStreams, Simulator
from iotbench.world.networks.radio import build_interferers, build_radio
from iotbench.world.networks.topology import build_topology

CHANNELS = tuple(range(11, 27))
CLEAN = tuple(range(15, 23))  # the channels no Wi-Fi of the building reaches (measured)
FRAMES, FRAME_BYTES, GAP_S = 100, 100, 0.010  # a Mercator burst
SCENARIO, NETWORK_SEED = "s4-wifi", 8


# ---- the measurement ----------------------------------------------------------------


def measured(paths: list[Path]) -> dict[int, float]:
    """Mean delivery per channel over the link-files (a directed link in one file, its
    bursts averaged) that delivered every frame on every channel in CLEAN."""
    per_file = []
    for path in paths:
        header = k7_header(path)
        if header.get("node_count", 0) < 10:
            print(f"{path.name}: {header.get('node_count')} nodes; left out")
            continue
        sums: dict[tuple[int, int, int], list[float]] = defaultdict(list)
        for row in k7_bursts(path):
            if not row.get("channel") or not row.get("pdr"):
                continue
            sums[(int(row["src"]), int(row["dst"]), int(float(row["channel"])))].append(
                float(row["pdr"])
            )
        if not sums:
            print(f"{path.name}: no row names its channel; left out")
            continue
        links = {(s, d) for s, d, _ in sums}
        rounds = max(len(v) for v in sums.values())
        good = [
            (s, d)
            for s, d in links
            if all(
                len(sums.get((s, d, c), ())) == rounds and min(sums[(s, d, c)]) >= 1.0
                for c in CLEAN
            )
        ]
        if not good:
            print(f"{path.name}: no link perfect on 15-22 in all {rounds} rounds; left out")
            continue
        # A round whose burst left no row delivered nothing: the sum over `rounds`.
        mean = {
            c: statistics.fmean(sum(sums.get((s, d, c), ())) / rounds for s, d in good)
            for c in CHANNELS
        }
        print(
            f"{path.name} ({header.get('start_date', '?')[:10]}): {len(good)} of {len(links)} links "
            "perfect on 15-22; " + " ".join(f"{c}:{100 * mean[c]:.1f}" for c in CHANNELS)
        )
        per_file.append((len(good), mean))
    total = sum(n for n, _ in per_file)
    return {c: sum(n * m[c] for n, m in per_file) / total for c in CHANNELS}


# ---- the probe ----------------------------------------------------------------------


def network_settings(channel: int, load_bps: float | None):
    """s4-wifi's network (network 8, the `ndn` variant, whose radio section is the
    base's) on `channel`, with the `office` preset's access points at `load_bps` each,
    or none."""
    wifi = "office" if load_bps is not None else "none"
    (run,) = expand(
        load_scenario(SCENARIO),
        filters={"variant": ["ndn"], "wifi": [wifi], "ip_channel": ["study"]},
        overrides={"network.radio.channel": channel},
        reps=1,
    )
    config = dict(run.config)
    network = dict(config["network"], seed=NETWORK_SEED)
    if load_bps is not None:
        network["interferers"] = [dict(i, rate_bps=load_bps) for i in network["interferers"]]
    config["network"] = network
    return run_settings(config).network


def office_load_bps() -> float:
    """The `office` preset's load per access point (the calibrated one)."""
    (run,) = expand(
        load_scenario(SCENARIO),
        filters={"variant": ["ndn"], "wifi": ["office"], "ip_channel": ["study"]},
        reps=1,
    )
    return run.config["network"]["interferers"][0]["rate_bps"]


class _Counter(FrameReceiver):
    """Where a radio's MAC would be: the medium hands it every frame it decoded."""

    def __init__(self, index: int, counts: dict[tuple[int, int], int]) -> None:
        self.index = index
        self.counts = counts

    def frame_received(self, packet, sender) -> None:
        key = (sender.index, self.index)
        self.counts[key] = self.counts.get(key, 0) + 1


def probe(channel: int, load_bps: float | None) -> dict[tuple[int, int], float]:
    """Delivery per (sender, receiver) of every node's burst in turn, on `channel`."""
    cfg = network_settings(channel, load_bps)
    streams = RngStreams(cfg.seed).stream  # the network's own streams, as radio_layout
    topology = build_topology(cfg, streams("topology"))
    sim = Simulator(cfg.seed)
    medium, radios = build_radio(sim, cfg, topology, streams, Observers())
    build_interferers(cfg, medium, streams, topology.nodes)
    counts: dict[tuple[int, int], int] = {}
    for radio in radios:
        radio.mac = _Counter(radio.index, counts)
    body = bytes(FRAME_BYTES)

    def send(radio) -> None:
        packet = Packet(body, 0, 0, 0, FRAME_BYTES)
        packet.src = radio.name
        medium.transmit(radio, packet, None, lambda *_: None)  # no CCA, no ACK

    t = 1.0  # the Wi-Fi under way
    for radio in radios:
        for k in range(FRAMES):
            sim.at(t + k * GAP_S, send, radio)
        t += FRAMES * GAP_S + 0.1
    sim.run(until=t + 1.0)
    return {
        (radio.index, receiver.index): counts.get((radio.index, receiver.index), 0) / FRAMES
        for radio in radios
        for receiver, _mw, _pair in radio.neighbours
    }


def probed(channel: int, load_bps: float) -> float:
    """Mean delivery with the Wi-Fi over the links that lose nothing without it."""
    clean = probe(channel, None)
    perfect = [link for link, p in clean.items() if p >= 1.0]
    with_wifi = probe(channel, load_bps)
    return statistics.fmean(with_wifi[link] for link in perfect)


def calibrate(target: float, channel: int, low: float = 0.0, high: float = 20e6) -> float:
    """The load per access point at which the probe's delivery on `channel` is `target`
    (bisection: delivery falls as the load grows)."""
    for _ in range(12):
        mid = (low + high) / 2
        got = probed(channel, mid)
        print(f"  {mid / 1e6:7.3f} Mbit/s per access point: {100 * got:.1f} % on {channel}")
        if got > target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measured", help="the Mercator datasets' delivery per channel")
    p = sub.add_parser("probe", help="the model's delivery per channel")
    c = sub.add_parser("calibrate", help="the load per access point that meets one channel")
    for parser_ in (m, c):
        parser_.add_argument("dataset", type=Path, help="a clone of dense_connectivity_datasets")
        parser_.add_argument("--files", nargs="+", help="grenoble files (default: all)")
    p.add_argument("--load-mbps", type=float, help="per access point (default: the preset's)")
    for parser_ in (p, c):
        parser_.add_argument("--channels", type=int, nargs="+", default=[11, 12, 13, 14, 20, 26])
    c.add_argument("--channel", type=int, default=11, help="the channel fitted")
    args = parser.parse_args()

    if args.command in ("measured", "calibrate"):
        folder = args.dataset / "grenoble"
        names = args.files or sorted(p.name for p in folder.glob("*.k7.gz"))
        measurement = measured([folder / name for name in names])
        print("all files: " + " ".join(f"{c}:{100 * v:.1f}" for c, v in measurement.items()))
        if args.command == "measured":
            return 0
        load = calibrate(measurement[args.channel], args.channel)
        print(f"calibrated: {load / 1e6:.3f} Mbit/s per access point")
    else:
        load = args.load_mbps * 1e6 if args.load_mbps is not None else office_load_bps()
        measurement = None
    print(f"channel  probe (load {load / 1e6:.3f} Mbit/s per access point)  measured")
    for channel in args.channels:
        got = probed(channel, load)
        seen = f"{100 * measurement[channel]:.1f} %" if measurement else "-"
        print(f"{channel:7d}  {100 * got:5.1f} %  {seen}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
