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


def test_a_hook_calls_only_the_observers_that_implement_it():
    heard: list[tuple[str, str, object]] = []
    only = FinishedOnly(heard)
    observers = Observers(only)
    pkt = Packet(b"x", 0, 0, 0, 1)
    observers.transmitted(pkt)  # nobody listens
    observers.received(pkt, "n1")
    observers.finished(pkt)
    assert heard == [("f", "finished", pkt)]
    assert observers._finished == [only] and observers._transmitted == []


def test_an_observer_written_in_python_is_called_through_the_compiled_hooks():
    heard: list[tuple[str, str, object]] = []

    class Late(Observer):  # a subclass the compiled class did not know
        def transmitted(self, pkt: Packet) -> None:
            heard.append(("late", "transmitted", pkt))

    class Extended(Log):  # overrides one hook of its base, keeps the other
        def received(self, pkt: Packet, node: str) -> None:
            heard.append(("extended", "received", node))

    observers = Observers(Late(), Extended("e", heard))
    pkt = Packet(b"x", 0, 0, 0, 1)
    observers.transmitted(pkt)
    observers.received(pkt, "n2")
    assert heard == [
        ("late", "transmitted", pkt),
        ("e", "transmitted", pkt),
        ("extended", "received", "n2"),
    ]
