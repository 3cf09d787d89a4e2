"""Observers: how metrics and writers hear of packets as they pass.

Media (point-to-point channels, the radio medium) tell the run's `Observers`
three things about every packet they carry:

- `transmitted(pkt)`: it was put on the wire or the air (`pkt.t_sent` is set;
  on a queued link it may lie in the near future);
- `received(pkt, node)`: `node` received it intact and takes it;
- `finished(pkt)`: its fate is final (`pkt.fate`): delivered, lost, dropped
  at a queue, corrupted ... A packet still in flight when a run ends is
  never finished.

An observer implements the hooks it needs (see `Observer`). Each hook of
`Observers` calls only the observers that implement it.
"""

from __future__ import annotations

from mypy_extensions import mypyc_attr

from iotbench.net.packet import QUEUE_FULL, Packet


# Compiled (src/iotbench/compiled.py); every run's metrics and writers derive from it.
@mypyc_attr(allow_interpreted_subclasses=True)
class Observer:
    """Base class: override the hooks you need; the others cost nothing."""

    def transmitted(self, pkt: Packet) -> None:
        pass

    def received(self, pkt: Packet, node: str) -> None:
        pass

    def finished(self, pkt: Packet) -> None:
        pass


def _implements(observer: Observer, hook: str) -> bool:
    """Whether `observer`'s class has its own `hook`, not the base class's no-op."""
    return getattr(type(observer), hook) is not getattr(Observer, hook)


# Tests extend it with a recorder of their own.
@mypyc_attr(allow_interpreted_subclasses=True)
class Observers:
    """The observers of one run, as the media call them.

    Each hook calls, in the order they were added, the observers whose class
    implements it. Compiled, the media's call and each observer's are method
    calls through the classes' tables (an observer written in Python is called
    through them too); bound methods called through Python's protocol, which
    this class used before, cost about twice as much per hook and frame.
    """

    def __init__(self, *observers: Observer) -> None:
        self._transmitted: list[Observer] = []
        self._received: list[Observer] = []
        self._finished: list[Observer] = []
        for observer in observers:
            self.add(observer)

    def add(self, observer: Observer) -> None:
        if _implements(observer, "transmitted"):
            self._transmitted.append(observer)
        if _implements(observer, "received"):
            self._received.append(observer)
        if _implements(observer, "finished"):
            self._finished.append(observer)

    def transmitted(self, pkt: Packet) -> None:
        for observer in self._transmitted:
            observer.transmitted(pkt)

    def received(self, pkt: Packet, node: str) -> None:
        for observer in self._received:
            observer.received(pkt, node)

    def finished(self, pkt: Packet) -> None:
        for observer in self._finished:
            observer.finished(pkt)


class PacketRecorder(Observer):
    """Keeps every packet offered to a medium (transmitted, or dropped at its
    queue), in the order they were offered: for tests and small tools, never
    for a simulation run, since its memory grows with the run."""

    def __init__(self, packets: list[Packet] | None = None) -> None:
        self.packets: list[Packet] = [] if packets is None else packets

    def transmitted(self, pkt: Packet) -> None:
        self.packets.append(pkt)

    def finished(self, pkt: Packet) -> None:
        if pkt.fate == QUEUE_FULL:  # never transmitted, so not seen above
            self.packets.append(pkt)
