"""A tiny deterministic network of forwarders for tests: links with delay, a fake clock.

    net = Net()
    a, b = net.node("a"), net.node("b")
    fa, fb = net.link(a, b, delay_s=0.01)
    net.run(until=5.0)
    net.log  -> [(time, sender, receiver, wire), ...] for every frame on a link

A link may drop frames by predicate (`drop=lambda t, wire: ...`) to model loss.
Nothing reads the wall clock; ties are broken by scheduling order.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

from iotbench.proto.ndn.forwarder import Face, Forwarder, ForwarderConfig
from iotbench.proto.ndn.packet import decode_packet


class Net:
    def __init__(self, seed: int = 1) -> None:
        self.seed = seed
        self.now = 0.0
        self.nodes: dict[str, Forwarder] = {}
        self.names: dict[int, str] = {}
        self._events: list = []
        self._seq = 0
        self.log: list[tuple[float, str, str, bytes]] = []

    def node(self, name: str, **config) -> Forwarder:
        fw = Forwarder(random.Random(f"{self.seed}-{name}"), ForwarderConfig(**config))
        self.nodes[name] = fw
        self.names[id(fw)] = name
        return fw

    def link(
        self,
        a: Forwarder,
        b: Forwarder,
        delay_s: float = 0.01,
        mtu: int | None = None,
        drop: Callable[[float, bytes], bool] | None = None,
    ) -> tuple[Face, Face]:
        faces: list[Face] = []

        def sender(src: Forwarder, dst: Forwarder, dst_face: Callable[[], Face]):
            def send(wire: bytes) -> None:
                self.log.append((self.now, self.names[id(src)], self.names[id(dst)], wire))
                if drop is not None and drop(self.now, wire):
                    return
                self._push(self.now + delay_s, dst, dst_face().face_id, wire)

            return send

        fa = a.add_face(sender(a, b, lambda: faces[1]), mtu=mtu)
        fb = b.add_face(sender(b, a, lambda: faces[0]), mtu=mtu)
        faces.extend([fa, fb])
        return fa, fb

    def _push(self, t: float, fw: Forwarder, face_id: int, wire: bytes) -> None:
        self._seq += 1
        heapq.heappush(self._events, (t, self._seq, fw, face_id, wire))

    def run(self, until: float) -> None:
        while True:
            t_event = self._events[0][0] if self._events else None
            t_timer = None
            timer_fw = None
            for fw in self.nodes.values():
                t = fw.next_timer()
                if t is not None and (t_timer is None or t < t_timer):
                    t_timer, timer_fw = t, fw
            candidates = [t for t in (t_event, t_timer) if t is not None]
            if not candidates or min(candidates) > until:
                break
            if t_event is not None and (t_timer is None or t_event <= t_timer):
                t, _, fw, face_id, wire = heapq.heappop(self._events)
                self.now = t
                fw.receive(t, face_id, wire)
            else:
                self.now = t_timer
                timer_fw.handle_timer(t_timer)
        self.now = max(self.now, until)

    def frames(self, src: str | None = None, dst: str | None = None) -> list[tuple[float, object]]:
        """Decoded frames on links, optionally filtered by sender/receiver name."""
        out = []
        for t, s, d, wire in self.log:
            if (src is None or s == src) and (dst is None or d == dst):
                out.append((t, decode_packet(wire)))
        return out


class Recorder:
    """A face send callback that keeps what it was given."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def __call__(self, wire: bytes) -> None:
        self.sent.append(wire)

    def packets(self) -> list[object]:
        return [decode_packet(w) for w in self.sent]

    def clear(self) -> None:
        self.sent.clear()
