"""Interests per wall second through a chain of NDN forwarders, with Content Store hits and misses.

    python bench/ndn_forwarding.py [--interests N] [--hops H] [--repeat-fraction P]
                                   [--cs-bytes B] [--repeat R]

A consumer, H forwarders (proto/ndn/forwarder.py, default 5) in a line, and
a producer:

    consumer -> F1 -> F2 -> ... -> FH -> producer

Faces are in memory: a face's send callback puts the frame on one delivery
queue, which the loop empties in order, calling the next forwarder's
receive(); there is no simulated link. The consumer injects ready-made
Interests (each with its own nonce) one at a time and waits for the Data;
the producer answers from ready-made Data (100 bytes of content,
DigestSha256), so what is timed is the forwarders' work: decoding, PIT,
FIB, Content Store, strategy (the Interests carry no HopLimit, so nothing
is re-encoded on the way). Time is virtual (1 ms per Interest) and each
forwarder runs its timers when they are due, as a driver would.

Workloads (every forwarder has the same Content Store, S5's 24 KB FIFO
unless --cs-bytes says otherwise):

- hits: 100 names are fetched once first (not timed), then only those are
  asked for: every Interest is answered from F1's Content Store;
- misses: every name is new: every Interest goes through all H forwarders
  to the producer and its Data back, cached on the way (with evictions);
- mix: each Interest repeats, with probability P (default 0.5), one of the
  100 names fetched last (still in every Content Store), and asks for a new
  name otherwise.

For each it prints Interests per wall second, the share answered from F1's
Content Store, and frames handled per wall second by all forwarders
together (an Interest that misses everywhere is 2H frames). --repeat R
keeps the fastest of R runs of each workload.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import deque
from dataclasses import dataclass

from iotbench.proto.ndn import Forwarder, ForwarderConfig, Interest, make_data, make_interest

PREFIX = "/bench"
CONTENT = bytes(100)
HOT_NAMES = 100
#: Virtual seconds between Interests.
STEP_S = 0.001


class Chain:
    """consumer -> F1 -> ... -> FH -> producer, faces in memory."""

    DOWN, UP = 1, 2  # every forwarder's face toward the consumer and toward the producer

    def __init__(self, hops: int, config: ForwarderConfig) -> None:
        self.forwarders = [Forwarder(random.Random(i), config) for i in range(hops)]
        self.queue: deque[tuple[Forwarder, int, bytes]] = deque()
        self.data: dict[bytes, bytes] = {}  # the producer's Data, by name TLV-VALUE
        self.received = 0  # Data that reached the consumer
        first, last = self.forwarders[0], self.forwarders[-1]
        first.add_face(self._to_consumer, local=True, face_id=self.DOWN)
        for left, right in zip(self.forwarders, self.forwarders[1:]):
            left.add_face(self._sender(right, self.DOWN), face_id=self.UP)
            right.add_face(self._sender(left, self.UP), face_id=self.DOWN)
        last.add_face(self._to_producer, local=True, face_id=self.UP)
        for fw in self.forwarders:
            fw.add_route(PREFIX, self.UP)

    def _sender(self, to: Forwarder, face_id: int):
        queue = self.queue
        return lambda wire: queue.append((to, face_id, wire))

    def _to_consumer(self, wire: bytes) -> None:
        self.received += 1

    def _to_producer(self, wire: bytes) -> None:
        data = self.data[Interest(wire).name.value]
        self.queue.append((self.forwarders[-1], self.UP, data))

    def publish(self, names: list[str]) -> None:
        for name in names:
            self.data[make_interest(name).name.value] = make_data(name, CONTENT).wire

    def fetch(self, interests: list[bytes], now: float) -> float:
        """Send each Interest and deliver everything it causes; returns the virtual time."""
        queue = self.queue
        first = self.forwarders[0]
        forwarders = self.forwarders
        for wire in interests:
            now += STEP_S
            queue.append((first, self.DOWN, wire))
            while queue:
                fw, face_id, frame = queue.popleft()
                fw.receive(now, face_id, frame)
            for fw in forwarders:
                deadline = fw.next_timer()
                if deadline is not None and deadline <= now:
                    fw.handle_timer(now)
        return now


@dataclass
class Workload:
    name: str
    warmup: list[bytes]
    timed: list[bytes]


def workloads(
    count: int, repeat_fraction: float, seed: int = 1
) -> tuple[list[str], list[Workload]]:
    """Every name the producer must know, and the three workloads as Interest wires."""
    rng = random.Random(seed)
    nonce = iter(range(1, 1 << 32))

    def interests(names: list[str]) -> list[bytes]:
        return [make_interest(n, nonce=next(nonce), lifetime_ms=4000).wire for n in names]

    hot = [f"{PREFIX}/hot/{i}" for i in range(HOT_NAMES)]
    hits = [hot[i % HOT_NAMES] for i in range(count)]
    misses = [f"{PREFIX}/miss/{i}" for i in range(count)]
    recent = deque(hot, maxlen=HOT_NAMES)
    mix = []
    new = 0
    for _ in range(count):
        if rng.random() < repeat_fraction:
            mix.append(rng.choice(recent))
        else:
            name = f"{PREFIX}/mix/{new}"
            new += 1
            recent.append(name)
            mix.append(name)
    names = hot + misses + [f"{PREFIX}/mix/{i}" for i in range(new)]
    return names, [
        Workload("hits", interests(hot), interests(hits)),
        Workload("misses", [], interests(misses)),
        Workload(f"mix ({repeat_fraction:.0%} repeats)", interests(hot), interests(mix)),
    ]


def run(workload: Workload, names: list[str], hops: int, config: ForwarderConfig):
    """(wall seconds, F1's Content Store hits, frames handled) of the timed part."""
    chain = Chain(hops, config)
    chain.publish(names)
    now = chain.fetch(workload.warmup, 0.0)
    first = chain.forwarders[0].counters
    hits_before = first.cs_hits
    frames_before = sum(fw.counters.packets_in for fw in chain.forwarders)
    received_before = chain.received
    start = time.perf_counter()
    chain.fetch(workload.timed, now)
    wall = time.perf_counter() - start
    if chain.received - received_before != len(workload.timed):
        raise AssertionError(f"{workload.name}: not every Interest got its Data")
    frames = sum(fw.counters.packets_in for fw in chain.forwarders) - frames_before
    return wall, first.cs_hits - hits_before, frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interests", type=int, default=20_000, help="Interests per workload")
    parser.add_argument("--hops", type=int, default=5, help="forwarders in the chain")
    parser.add_argument(
        "--repeat-fraction", type=float, default=0.5, help="share of repeated names in the mix"
    )
    parser.add_argument(
        "--cs-bytes", type=int, default=24 * 1024, help="Content Store bytes per forwarder"
    )
    parser.add_argument("--repeat", type=int, default=3, help="keep the fastest of R runs")
    args = parser.parse_args()
    config = ForwarderConfig(cs_max_bytes=args.cs_bytes)
    names, loads = workloads(args.interests, args.repeat_fraction)
    print(
        f"{args.hops} forwarders in a chain, in-memory faces, {len(CONTENT)}-byte content, "
        f"Content Store {args.cs_bytes} bytes FIFO; {args.interests} Interests per workload, "
        f"best of {args.repeat}"
    )
    header = f"{'workload':<22}{'F1 CS hits':>11}{'wall_s':>9}{'Interests/s':>13}{'frames/s':>11}"
    print(header)
    print("-" * len(header))
    for load in loads:
        wall, hits, frames = min(
            (run(load, names, args.hops, config) for _ in range(args.repeat)),
            key=lambda r: r[0],
        )
        n = len(load.timed)
        print(
            f"{load.name:<22}{hits / n:>11.1%}{wall:>9.3f}{n / wall:>13,.0f}{frames / wall:>11,.0f}"
        )


if __name__ == "__main__":
    main()
