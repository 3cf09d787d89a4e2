"""Observers: each hook reaches every observer that implements it, in order."""

from __future__ import annotations

from iotbench.metrics.observers import Observer, Observers
from iotbench.net.packet import Packet


class Log(Observer):
    def __init__(self, name: str, heard: list[tuple[str, str, object]]) -> None:
        self.name = name
        self.heard = heard

    def transmitted(self, pkt: Packet) -> None:
        self.heard.append((self.name, "transmitted", pkt))

    def received(self, pkt: Packet, node: str) -> None:
        self.heard.append((self.name, "received", (pkt, node)))


class FinishedOnly(Observer):
    def __init__(self, heard: list[tuple[str, str, object]]) -> None:
        self.heard = heard

    def finished(self, pkt: Packet) -> None:
        self.heard.append(("f", "finished", pkt))


def test_every_hook_reaches_the_observers_that_have_it_in_the_order_they_were_added():
    heard: list[tuple[str, str, object]] = []
    observers = Observers(Log("a", heard), FinishedOnly(heard))
    observers.add(Log("b", heard))
    pkt = Packet(b"x", 0, 0, 0, 1)
    observers.transmitted(pkt)
    observers.received(pkt, "n1")
    observers.finished(pkt)
    assert heard == [
        ("a", "transmitted", pkt),
        ("b", "transmitted", pkt),
        ("a", "received", (pkt, "n1")),
        ("b", "received", (pkt, "n1")),
        ("f", "finished", pkt),
    ]


def test_no_observer_costs_nothing_and_one_is_called_directly():
    heard: list[tuple[str, str, object]] = []
    only = FinishedOnly(heard)
    observers = Observers(only)
    pkt = Packet(b"x", 0, 0, 0, 1)
    observers.transmitted(pkt)  # nobody listens
    assert observers.finished == only.finished
    observers.finished(pkt)
    assert heard == [("f", "finished", pkt)]
