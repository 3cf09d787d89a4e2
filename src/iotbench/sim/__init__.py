"""Simulation kernel: virtual clock, event queue, cancellable timers, seeded RNG streams."""

from iotbench.sim.kernel import Simulator, Timer
from iotbench.sim.rng import RngStreams, derive_seed

__all__ = ["Simulator", "Timer", "RngStreams", "derive_seed"]
