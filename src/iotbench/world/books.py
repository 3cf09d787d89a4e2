"""A run's books: counts kept by the media and the MACs that must balance exactly.

The radio model keeps its own counters (each radio's receptions, each MAC's
transmissions, acknowledgments and frames taken up, each radio's time per
state, each node's packet memory) and tells the run's observers of every frame
it carries. Those are two records of the same events, kept by different code;
`Books` listens to the observers and `Books.check` compares them, together
with what every packet's fate and every item's end must satisfy. A difference
is a bug that a plausible result could hide (a frame counted twice, a state's
time lost, memory never given back, an item that neither ended nor stayed
open).

The tests run every built-in radio scenario through it
(tests/world/test_books_balance.py), and `iotbench run --check-books` runs a
campaign's runs with their books kept (`run_one_with_books`): a run whose
books do not balance fails, with every difference named, and is not stored.
The books hold only the frames on the air and a few counts per node, so they
cost little memory however long the run.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from iotbench.metrics.observers import Observer
from iotbench.metrics.result import RunResult
from iotbench.net.lowpan.interface import LowpanInterface
from iotbench.net.mac.contiki_csma import ContikiCsmaMac
from iotbench.net.mac.csma import CsmaMac
from iotbench.net.packet import ACK, IN_FLIGHT, QUEUE_FULL, TRANSMITTED, Packet
from iotbench.net.radio import phy
from iotbench.net.radio.medium import TX, RadioMedium
from iotbench.world.networks.base import RadioNetwork
from iotbench.world.run import World, run_one

# Float sums over a run of an hour's state changes: relative rounding, no more.
_TIME_TOLERANCE = 1e-9
# Packets' problems kept word for word; a run that has more (a rule broken at
# every frame) counts the rest, so that its books stay small.
MAX_KEPT = 100


class UnbalancedBooks(RuntimeError):
    """A run's books do not balance: the model contradicts itself (a bug)."""


@dataclass
class Books(Observer):
    """What the observers heard, by packet and by (medium, node); a `RunWatch`
    (world/run.py). `strict`: `ended` raises `UnbalancedBooks` when the books do
    not balance; otherwise the caller reads `check(world)`."""

    strict: bool = True
    world: World | None = None  # the run's, once built
    # Transmitted and not yet finished (the packet held while it is on the air,
    # so that no other packet can take its id meanwhile).
    on_air: dict[int, Packet] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # the first MAX_KEPT, as they came
    unkept: int = 0  # and how many more
    sent_data: Counter[tuple[int, str]] = field(default_factory=Counter)
    sent_acks: Counter[tuple[int, str]] = field(default_factory=Counter)
    heard: Counter[tuple[int, str]] = field(default_factory=Counter)  # received intact
    heard_data: Counter[tuple[int, str]] = field(default_factory=Counter)  # of them, not ACKs
    sending: dict[tuple[int, str], Packet] = field(default_factory=dict)  # on the air, by sender
    # Of finished frames, by sender.
    airtime_s: defaultdict[tuple[int, str], float] = field(
        default_factory=lambda: defaultdict(float)
    )

    def built(self, world: World) -> None:
        self.world = world
        world.observers.add(self)

    def ended(self, world: World) -> None:
        problems = self.check(world)
        if problems and self.strict:
            shown = "; ".join(problems[:10])
            more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
            raise UnbalancedBooks(f"the run's books do not balance: {shown}{more}")

    def _note(self, problem: str) -> None:
        if len(self.problems) < MAX_KEPT:
            self.problems.append(problem)
        else:
            self.unkept += 1

    def transmitted(self, pkt: Packet) -> None:
        if id(pkt) in self.on_air:
            self._note(f"{pkt!r} transmitted twice")
        self.on_air[id(pkt)] = pkt
        medium = pkt.medium
        if isinstance(medium, RadioMedium):
            key = (id(medium), str(pkt.src))
            sending = self.sending.get(key)
            if sending is not None:
                self._note(
                    f"{pkt.src} starts {pkt!r} ({pkt.kind}) while its {sending!r} "
                    f"({sending.kind}) is on the air"
                )
            self.sending[key] = pkt
            if pkt.kind == ACK:
                self.sent_acks[key] += 1
            else:
                self.sent_data[key] += 1

    def received(self, pkt: Packet, node: str) -> None:
        if id(pkt) not in self.on_air:
            self._note(f"{pkt!r} received by {node} but not on the air")
        medium = pkt.medium
        if isinstance(medium, RadioMedium):
            self.heard[(id(medium), node)] += 1
            if pkt.kind != ACK:
                self.heard_data[(id(medium), node)] += 1

    def finished(self, pkt: Packet) -> None:
        # A packet finished twice is no longer on the air the second time.
        if self.on_air.pop(id(pkt), None) is None and pkt.fate != QUEUE_FULL:
            self._note(f"{pkt!r} finished ({pkt.fate}) but not on the air")
        if pkt.fate == IN_FLIGHT or (pkt.fate != QUEUE_FULL and pkt.fate not in TRANSMITTED):
            self._note(f"{pkt!r} finished with fate {pkt.fate!r}")
        medium = pkt.medium
        if isinstance(medium, RadioMedium) and pkt.fate != QUEUE_FULL:
            key = (id(medium), str(pkt.src))
            if self.sending.get(key) is pkt:
                del self.sending[key]
            self.airtime_s[key] += pkt.t_done - pkt.t_sent
            airtime = (len(pkt.data) + phy.PHY_HEADER_BYTES) * phy.BYTE_S
            if not math.isclose(pkt.t_done - pkt.t_sent, airtime, rel_tol=1e-9, abs_tol=1e-12):
                self._note(f"{pkt!r} took {pkt.t_done - pkt.t_sent} s on the air, not {airtime} s")

    def check(self, world: World) -> list[str]:
        """Every difference between the two records, and every rule broken."""
        problems = list(self.problems)
        if self.unkept:
            problems.append(f"and {self.unkept} more problems of packets like those")
        net = world.net
        now = world.sim.now
        items = world.items
        stats = items.stats
        still_open = len(items.open)
        if stats.started != stats.delivered + stats.given_up + still_open:
            problems.append(
                f"items: {stats.started} started, {stats.delivered} delivered, "
                f"{stats.given_up} given up, {still_open} open"
            )
        if not isinstance(net, RadioNetwork):
            return problems
        radio_on_air: Counter[int] = Counter()
        airtime_s = defaultdict(float, self.airtime_s)
        for pkt in self.on_air.values():
            if isinstance(pkt.medium, RadioMedium):
                radio_on_air[id(pkt.medium)] += 1
                airtime_s[(id(pkt.medium), str(pkt.src))] += now - pkt.t_sent
        for network in net.networks():
            medium = network.medium
            m = id(medium)
            if radio_on_air[m] != medium.on_air:
                problems.append(
                    f"{medium.name}: {medium.on_air} frames on the air at the end, "
                    f"{radio_on_air[m]} transmitted and not finished"
                )
            for name, radio in network.radios.items():
                got = radio.counters.received
                if got != self.heard[(m, radio.name)]:
                    problems.append(
                        f"{name}: the radio counts {got} frames received, the observers "
                        f"{self.heard[(m, radio.name)]}"
                    )
                times = radio.power.times_s(now)
                spent = sum(times)
                if not math.isclose(spent, now, rel_tol=_TIME_TOLERANCE, abs_tol=1e-9):
                    problems.append(f"{name}: its states' times add up to {spent} s of {now} s")
                # The radio is in TX exactly while a frame of its own is on the air.
                sent_s = airtime_s[(m, radio.name)]
                if not math.isclose(times[TX], sent_s, rel_tol=_TIME_TOLERANCE, abs_tol=1e-9):
                    problems.append(
                        f"{name}: {times[TX]} s in TX, but its frames took {sent_s} s on the air"
                    )
            for name, mac in network.macs.items():
                c = mac.counters
                key = (m, mac.name)
                if c.frames + c.retries != self.sent_data[key]:
                    problems.append(
                        f"{name}: the MAC counts {c.frames} frames and {c.retries} retries, "
                        f"the medium carried {self.sent_data[key]} of its data frames"
                    )
                if c.acks_sent != self.sent_acks[key]:
                    problems.append(
                        f"{name}: the MAC counts {c.acks_sent} ACKs sent, the medium "
                        f"carried {self.sent_acks[key]}"
                    )
                problem = _packet_memory_problem(mac, network.interfaces.get(name))
                if problem:
                    problems.append(f"{name}: {problem}")
                taken = c.delivered_up + c.duplicates + c.overwritten
                held, dropped = _held_by_the_cpu(mac)
                if taken + held + dropped != self.heard_data[key]:
                    problems.append(
                        f"{name}: {self.heard_data[key]} data frames received intact, the "
                        f"MAC took {c.delivered_up} up, {c.duplicates} as duplicates, lost "
                        f"{c.overwritten} in the chip's buffer, its waiting CPU holds {held} "
                        f"and lost {dropped}"
                    )
        return problems


def _packet_memory_problem(mac: CsmaMac, interface: object) -> str | None:
    """Whether a node's packet memory (net/pktbuf.py) holds exactly what waits on
    it: the frames its MAC has queued or is sending and the datagrams 6LoWPAN is
    reassembling."""
    memory = mac.pktbuf
    if memory is None:
        return None
    reserved = 0
    if isinstance(interface, LowpanInterface) and interface.reassembler.pktbuf is memory:
        reserved = interface.reassembler.reserved_bytes
    queued, current = mac.frame_bytes()
    if memory.used == reserved + queued + current:
        return None
    return (
        f"its packet memory holds {memory.used} bytes, but {queued} wait in the MAC's "
        f"queue (and {current} in its hands) and {reserved} in reassembly"
    )


def _held_by_the_cpu(mac: CsmaMac) -> tuple[int, int]:
    """Received frames a Contiki border router's CPU, waiting for its serial line
    (net/busy_wait.py), has yet to take, and those its radio's FIFO lost meanwhile."""
    gate = mac.gate if isinstance(mac, ContikiCsmaMac) else None
    if gate is None:
        return 0, 0
    return gate.held("radio"), gate.fifo_drops


def run_one_with_books(
    config: dict[str, Any],
    seed: int,
    pcap_path: str | None = None,
    series_path: str | None = None,
) -> RunResult:
    """`run_one` with the run's books kept: it raises `UnbalancedBooks` if they do
    not balance (`iotbench run --check-books`)."""
    return run_one(config, seed, pcap_path, series_path, watch=Books())
