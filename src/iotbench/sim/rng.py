"""Seeded, independent random streams, one per named component.

Each component (a link direction's loss model, a CoAP endpoint's message IDs,
an application's readings ...) draws from its own `random.Random`, seeded from
the run seed and the component's name. Adding a component or changing how often
one of them draws therefore never shifts the numbers another one sees.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any parts, stable across processes and Python versions."""
    text = "\x1f".join(repr(p) for p in parts).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 1


class RngStreams:
    # None is a seed too (derive_seed reads its repr): a radio network's section
    # without network.seed, which the sweep fills in for every run, draws from it.
    def __init__(self, seed: int | None) -> None:
        self.seed = seed
        self._streams: dict[str, random.Random] = {}

    def stream(self, name: str) -> random.Random:
        rng = self._streams.get(name)
        if rng is None:
            rng = random.Random(derive_seed(self.seed, name))
            self._streams[name] = rng
        return rng
