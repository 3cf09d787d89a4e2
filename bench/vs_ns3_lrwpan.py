"""iotbench's 802.15.4 radio and MAC against ns-3's lr-wpan, on the same star workload.

    python bench/vs_ns3_lrwpan.py                  # N = 10 and 40, 0.1 s interval, 20 s
    python bench/vs_ns3_lrwpan.py --n 5 10 20 40 --interval 0.1 --duration 20 --repeat 3

The workload is ns-3's side as the project's reference script defines it
(`bench/peers/ns3_lrwpan_star.py`, run unchanged): N sensors evenly on a 10 m
circle around a sink (PAN coordinator) at the origin, 2.4 GHz O-QPSK on
channel 11, TX power 0 dBm, log-distance path loss with exponent 3 and
46.6777 dB at 1 m (no shadowing or fading), short addresses in PAN 5. Each
sensor sends a 50-byte payload to the sink with an acknowledgment request
every `interval` seconds, starting at a uniformly random offset in
[0, interval); requests stop at `duration`, and the run drains for 1 s more.
Default MAC: macMinBE 3, macMaxBE 5, macMaxCSMABackoffs 4,
macMaxFrameRetries 3, an unbounded transmit queue. The iotbench side builds
the same network from its own parts (net/radio, net/mac) with ns-3's
receiver numbers: sensitivity -106.58 dBm (so iotbench's noise floor comes
out at -106.98 dBm, ns-3's -106.99) and a CCA threshold 10 dB above it.

Printed per N, one JSON line:
  {"n": N, "iotbench": {"delivery_ratio", "latency_ms": {"mean", "p99"},
   "retransmissions", "wall_s_run"}, "ns3": {the same keys}}
with the same definitions on both sides: delivered = distinct frames the
sink's MAC passed up; latency = request to that first indication, queueing
included, percentiles by nearest rank; retransmissions = data-frame
transmissions minus distinct frames transmitted; wall_s_run = the simulation
run alone (building the network and imports excluded). With --repeat R each
side runs R times and the best wall time is reported (metrics are the same
every time: both simulators are deterministic for a seed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NS3_SCRIPT = os.path.join(HERE, "peers", "ns3_lrwpan_star.py")

CHANNEL = 11
PAN_ID = 5
TX_POWER_DBM = 0.0
EXPONENT = 3.0
REFERENCE_LOSS_DB = 46.6777
SENSITIVITY_DBM = -106.58
CCA_ABOVE_SENSITIVITY_DB = 10.0
RADIUS_M = 10.0
DRAIN_S = 1.0


def run_iotbench(n: int, interval: float, payload: int, duration: float, seed: int) -> dict:
    from iotbench.metrics.observers import Observers
    from iotbench.net import ieee802154 as mac
    from iotbench.net.mac.csma import CsmaMac, MacParams
    from iotbench.net.radio.medium import Radio, RadioMedium
    from iotbench.net.radio.neighbours import connect
    from iotbench.net.radio.propagation import PathLoss
    from iotbench.sim import Simulator

    sim = Simulator(seed)
    observers = Observers()  # ns-3's side keeps no packet trace either
    medium = RadioMedium(sim, CHANNEL, sim.rng("medium"), observers)
    positions = [(0.0, 0.0, 0.0)] + [
        (RADIUS_M * math.cos(2 * math.pi * k / n), RADIUS_M * math.sin(2 * math.pi * k / n), 0.0)
        for k in range(n)
    ]
    radios = []
    for i in range(n + 1):
        radio = Radio(
            medium,
            i,
            f"n{i}",
            tx_power_dbm=TX_POWER_DBM,
            sensitivity_dbm=SENSITIVITY_DBM,
            cca_threshold_dbm=SENSITIVITY_DBM + CCA_ABOVE_SENSITIVITY_DB,
        )
        medium.add_radio(radio)
        radios.append(radio)
    path_loss = PathLoss(exponent=EXPONENT, reference_loss_db=REFERENCE_LOSS_DB, shadowing_db=0.0)
    connect(radios, positions, path_loss, medium.frequency_mhz, sim.rng("shadowing"))
    params = MacParams(queue_frames=10**9, pan_id=PAN_ID)
    macs = [
        CsmaMac(sim, radio, mac.short_address(i), sim.rng(f"mac/{i}"), params, observers)
        for i, radio in enumerate(radios)
    ]
    sink = mac.short_address(0)
    requested_at: dict[bytes, float] = {}
    latencies_ms: list[float] = []
    body = bytes(payload - 4)
    requests = 0

    def send(sensor: int, k: int) -> None:
        nonlocal requests
        requests += 1
        tag = sensor.to_bytes(2, "big") + k.to_bytes(2, "big")  # identifies the request
        requested_at[tag] = sim.now
        macs[sensor].send(sink, tag + body)
        if sim.now + interval < duration:
            sim.schedule(interval, send, sensor, k + 1)

    def indication(data: bytes, src: bytes, dst: bytes, pkt) -> None:
        t = requested_at.pop(data[:4], None)
        if t is not None:  # the first indication of this request
            latencies_ms.append((sim.now - t) * 1e3)

    macs[0].on_receive = indication
    offsets = sim.rng("offsets")
    for sensor in range(1, n + 1):
        sim.at(offsets.uniform(0.0, interval), send, sensor, 0)
    t0 = time.perf_counter()
    sim.run(until=duration + DRAIN_S)
    wall = time.perf_counter() - t0
    sent = sum(m.counters.frames for m in macs[1:])
    retries = sum(m.counters.retries for m in macs[1:])
    lat = sorted(latencies_ms)
    return {
        "requested": requests,
        "delivered": len(lat),
        "delivery_ratio": round(len(lat) / requests, 6) if requests else None,
        "latency_ms": {
            "mean": round(sum(lat) / len(lat), 4) if lat else None,
            "p50": _nearest_rank(lat, 0.5),
            "p99": _nearest_rank(lat, 0.99),
        },
        "retransmissions": retries,
        "data_tx_attempts": sent + retries,
        "channel_access_failures": sum(m.counters.channel_access_failures for m in macs[1:]),
        "no_ack": sum(m.counters.no_ack for m in macs[1:]),
        "unconfirmed": sum(m.queued for m in macs[1:]),
        "wall_s_run": round(wall, 4),
        "events": sim.events_processed,
    }


def _nearest_rank(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(math.ceil(q * len(values))) - 1)], 4)


def run_ns3(n: int, interval: float, payload: int, duration: float, seed: int) -> dict:
    args = [
        sys.executable,
        NS3_SCRIPT,
        f"--n={n}",
        f"--interval={interval}",
        f"--payload={payload}",
        f"--duration={duration}",
        f"--seed={seed}",
    ]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"ns-3 failed ({done.returncode}); is the `ns3` package installed? "
            f"pip install '.[bench]'\n{done.stderr[-2000:]}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _side(result: dict, walls: list[float]) -> dict:
    return {
        "delivery_ratio": result["delivery_ratio"],
        "latency_ms": {"mean": result["latency_ms"]["mean"], "p99": result["latency_ms"]["p99"]},
        "retransmissions": result["retransmissions"],
        "wall_s_run": round(min(walls), 4),
    }


def _child(args: argparse.Namespace) -> None:
    """--side iotbench: one run in a fresh process, printed as JSON for the parent."""
    print(
        json.dumps(run_iotbench(args.n[0], args.interval, args.payload, args.duration, args.seed))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10, 40], help="sensors (10 40)")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between requests")
    parser.add_argument("--payload", type=int, default=50, help="payload bytes (50)")
    parser.add_argument("--duration", type=float, default=20.0, help="simulated seconds (20)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="runs per side; best wall time")
    parser.add_argument("--details", action="store_true", help="also print both sides' counts")
    parser.add_argument("--side", choices=["iotbench"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        _child(args)
        return
    for n in args.n:
        ours, theirs = [], []
        for _ in range(args.repeat):  # alternate, so both meet the same machine
            cmd = [sys.executable, os.path.abspath(__file__), "--side", "iotbench", "--n", str(n)]
            cmd += [f"--interval={args.interval}", f"--payload={args.payload}"]
            cmd += [f"--duration={args.duration}", f"--seed={args.seed}"]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            ours.append(json.loads(done.stdout.strip().splitlines()[-1]))
            try:
                theirs.append(run_ns3(n, args.interval, args.payload, args.duration, args.seed))
            except RuntimeError as exc:
                print(exc, file=sys.stderr)
                sys.exit(1)
        line = {
            "n": n,
            "iotbench": _side(ours[-1], [r["wall_s_run"] for r in ours]),
            "ns3": _side(theirs[-1], [r["wall_s_run"] for r in theirs]),
        }
        print(json.dumps(line), flush=True)
        if args.details:
            print(json.dumps({"n": n, "iotbench_details": ours[-1]}), file=sys.stderr)
            print(json.dumps({"n": n, "ns3_details": theirs[-1]}), file=sys.stderr)


if __name__ == "__main__":
    main()
