"""How often CPython's cyclic garbage collector runs during a simulation.

A run allocates and frees millions of short-lived containers (events,
frames, closures). At CPython's default pace, a young-generation pass every
700 net allocations, the collector scanned the young generation 1,541 times
and the whole heap 12 times in one simulated hour of S4's `hopp`: 1.8 s,
about 10 % of the run's wall time, and its passes during the run found no
garbage at all. Other runs do make cyclic garbage: a CoAP request and the
message it sent refer to each other (proto/coap/exchange.py), and nearly
everything S3's point-to-point runs allocate ends in a cycle, which only
the collector frees; a rarer pace there would only hold more memory.

So the pace follows what the passes find. After a pass that freed (almost)
nothing the next one comes after twice as many allocations, up to
`MAX_YOUNG_THRESHOLD`; the first pass whose garbage is more than 1 % of its
allocations brings the process's own pace back for the rest of the run. S4's
NDN variants (`ndn`, `ndn-inot`, `hopp`) run at the raised pace, with the
same peak memory (72 MB for an hour of `hopp`); its CoAP and MQTT-SN
variants and S3's runs fall back within their first few passes and keep
their memory. The collector's timing changes no result (no simulator object
has a finaliser or a weak reference).

Building a network is another matter: its millions of objects (a large
radio network's neighbour lists, routes and nodes) all live to the run's
end, and the full passes their growth sets off find nothing among them. A
10,000-node grid spent 1.6 s of its 7.5 s build in 11 full passes; so no
pass runs while a network is built (`no_collections`). Nor while the
workload is built on it: its apps and endpoints (about 60 objects a node)
live to the end as well, and with the collector on, the passes their
allocations set off scanned the whole network just built (3.2 s of a
10,000-node grid's build, in four full passes and about a thousand young
ones; 1.1 s when the first pass comes after both).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

MAX_YOUNG_THRESHOLD = 50_000


@contextmanager
def paced_collections() -> Iterator[None]:
    """Within the block, space the young-generation passes out while they find
    (almost) no garbage; the process's own thresholds come back after it."""
    before = gc.get_threshold()
    floor, older = before[0], before[1:]

    def follow(phase: str, info: dict[str, int]) -> None:
        if phase != "stop":
            return
        young = gc.get_threshold()[0]
        if info["collected"] * 100 > young:
            # This run makes cyclic garbage: the usual pace for the rest of it.
            gc.callbacks.remove(follow)
            gc.set_threshold(floor, *older)
        else:
            gc.set_threshold(min(2 * young, MAX_YOUNG_THRESHOLD), *older)

    gc.callbacks.append(follow)
    try:
        yield
    finally:
        if follow in gc.callbacks:
            gc.callbacks.remove(follow)
        gc.set_threshold(*before)


@contextmanager
def no_collections() -> Iterator[None]:
    """Within the block, no collector passes (cyclic garbage it makes is freed by
    the first pass after it); the collector's state comes back after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
