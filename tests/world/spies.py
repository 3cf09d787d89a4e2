"""Watching a run from a test: the instances a class builds, the calls a method gets,
the packets a run sends."""

from __future__ import annotations


def instances(monkeypatch, cls) -> list:
    """Every instance of `cls` built from now on, in order."""
    built: list = []
    init = cls.__init__

    def keep(self, *args):
        init(self, *args)
        built.append(self)

    monkeypatch.setattr(cls, "__init__", keep)
    return built


def spy(monkeypatch, cls, method: str) -> list:
    """Record the arguments of every call of cls.method (which still runs)."""
    calls: list = []
    original = getattr(cls, method)

    def recording(self, *args):
        calls.append(args)
        return original(self, *args)

    monkeypatch.setattr(cls, method, recording)
    return calls


def recorded_packets(monkeypatch) -> list:
    """Every packet of the runs made from now on (iotbench.world.run's observers,
    with a PacketRecorder added)."""
    import iotbench.world.run as world
    from iotbench.metrics.observers import Observers, PacketRecorder

    recorder = PacketRecorder()

    class Recording(Observers):
        def __init__(self, *observers):
            super().__init__(*observers, recorder)

    monkeypatch.setattr(world, "Observers", Recording)
    return recorder.packets
