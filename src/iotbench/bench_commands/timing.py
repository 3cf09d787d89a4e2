"""How the `iotbench bench` commands time an operation: best batch, batches alternating.

Each operation runs in batches of about BATCH_S seconds, the operations of
one comparison taking turns batch by batch so that all meet the same
machine conditions; the rate reported is the best batch's (the least
disturbed). The garbage collector is off during a batch, as in timeit.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from itertools import repeat
from time import perf_counter

#: Seconds one timed batch of calls takes, about.
BATCH_S = 0.02


def timed(fn: Callable[[], object], calls: int) -> float:
    """Seconds `calls` calls of fn take, with the garbage collector off."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        start = perf_counter()
        for _ in repeat(None, calls):
            fn()
        return perf_counter() - start
    finally:
        if collecting:
            gc.enable()


def batch_size(fn: Callable[[], object]) -> int:
    """Calls per batch so that a batch takes about BATCH_S."""
    calls = 1
    while True:
        elapsed = timed(fn, calls)
        if elapsed >= BATCH_S / 4:
            return max(1, round(calls * BATCH_S / elapsed))
        calls *= 4


def best_rates(fns: Sequence[Callable[[], object]], seconds: float) -> list[float]:
    """Calls per second of each fn: the best of its batches, for about `seconds` in all."""
    sizes = [batch_size(fn) for fn in fns]
    best = [0.0] * len(fns)
    deadline = perf_counter() + seconds
    while True:
        for i, fn in enumerate(fns):
            best[i] = max(best[i], sizes[i] / timed(fn, sizes[i]))
        if perf_counter() >= deadline:
            return best
