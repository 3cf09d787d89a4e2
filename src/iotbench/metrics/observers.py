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
`Observers` is bound once to the observers that implement it, so a medium
pays one call per hook and packet when one observer listens and nothing
when none does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from mypy_extensions import mypyc_attr

from iotbench.net.packet import QUEUE_FULL, Packet

HOOKS: Final = ("transmitted", "received", "finished")


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


def _nothing(*_args: object) -> None:
    pass


def _fan_out(name: str, hooks: list[Callable[..., None]]) -> Callable[..., None]:
    if not hooks:
        return _nothing
    if len(hooks) == 1:
        return hooks[0]
    each = tuple(hooks)
    # One function per hook's arguments, not one taking *args: compiled, *args
    # built a tuple for every packet and called each hook through it.
    if name == "received":

        def call_all_received(pkt: Packet, node: str) -> None:
            for hook in each:
                hook(pkt, node)

        return call_all_received

    def call_all(pkt: Packet) -> None:
        for hook in each:
            hook(pkt)

    return call_all


# Tests extend it with a recorder of their own.
@mypyc_attr(allow_interpreted_subclasses=True)
class Observers:
    """The observers of one run, as the media call them."""

    transmitted: Callable[[Packet], None]
    received: Callable[[Packet, str], None]
    finished: Callable[[Packet], None]

    def __init__(self, *observers: Observer) -> None:
        self._observers: list[Observer] = []
        for observer in observers:
            self.add(observer)
        self._bind()

    def add(self, observer: Observer) -> None:
        self._observers.append(observer)
        self._bind()

    def _bind(self) -> None:
        for hook in HOOKS:
            own = [
                getattr(o, hook)
                for o in self._observers
                if getattr(type(o), hook, None) is not getattr(Observer, hook)
            ]
            setattr(self, hook, _fan_out(hook, own))


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
