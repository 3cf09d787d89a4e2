"""Two TcpConnections joined by a wire with a fake clock (no simulator).

Every segment is encoded and decoded on its way, so the wire format carries
every field the connections rely on. `drop(t, src, seg)` returning True loses
a segment; `log` records (time, "c"/"s", Segment) for everything sent.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

from iotbench.net.tcp import segment as wire
from iotbench.net.tcp.connection import TcpConnection
from iotbench.net.tcp.params import TcpParams
from iotbench.net.tcp.segment import SYN, Segment

A = bytes([10, 0, 0, 1])
B = bytes([10, 0, 0, 2])
CLIENT_PORT, SERVER_PORT = 40000, 80


class Wire:
    def __init__(
        self,
        client_params: TcpParams | None = None,
        server_params: TcpParams | None = None,
        *,
        delay_s: float = 0.05,
        mss: int = 1460,
        drop: Callable[[float, str, Segment], bool] | None = None,
        seed: int = 1,
    ) -> None:
        self.client = TcpConnection(
            client_params or TcpParams(), random.Random(seed), CLIENT_PORT, SERVER_PORT, mss
        )
        self.server_params = server_params or TcpParams()
        self.server: TcpConnection | None = None
        self.server_mss = mss
        self.seed = seed
        self.delay_s = delay_s
        self.drop = drop or (lambda t, src, seg: False)
        self.now = 0.0
        self.log: list[tuple[float, str, Segment]] = []
        self.events: dict[str, list] = {"c": [], "s": []}
        self.received: dict[str, bytearray] = {"c": bytearray(), "s": bytearray()}
        self._flight: list = []
        self._seq = 0
        self.on_server_created: Callable[[TcpConnection], None] | None = None

    # ---- sending and delivering -----------------------------------------------------

    def _collect(self) -> None:
        for name, conn in (("c", self.client), ("s", self.server)):
            if conn is None:
                continue
            for seg, _ in conn.segments_to_send():
                src, dst = (A, B) if name == "c" else (B, A)
                decoded = wire.decode(wire.encode(seg, src, dst), src, dst)
                self.log.append((self.now, name, decoded))
                if self.drop(self.now, name, decoded):
                    continue
                self._seq += 1
                heapq.heappush(self._flight, (self.now + self.delay_s, self._seq, name, decoded))
            for event in conn.events():
                self.events[name].append((self.now, event))
                data = getattr(event, "data", None)
                if data is not None:
                    self.received[name].extend(data)

    def _deliver(self, src: str, seg: Segment) -> None:
        if src == "c":
            if self.server is None:
                if seg.flags & SYN:
                    self.server = TcpConnection(
                        self.server_params,
                        random.Random(self.seed + 1),
                        SERVER_PORT,
                        CLIENT_PORT,
                        self.server_mss,
                    )
                    if self.on_server_created is not None:
                        self.on_server_created(self.server)
                    self.server.listen_accept(self.now, seg)
                return
            self.server.receive(self.now, seg)
        else:
            self.client.receive(self.now, seg)

    def run(self, until: float) -> None:
        while True:
            self._collect()
            times = [self._flight[0][0]] if self._flight else []
            for conn in (self.client, self.server):
                t = conn.next_timer() if conn is not None else None
                if t is not None:
                    times.append(t)
            if not times or min(times) > until:
                self.now = until
                return
            self.now = max(self.now, min(times))
            if self._flight and self._flight[0][0] <= self.now:
                _, _, src, seg = heapq.heappop(self._flight)
                self._deliver(src, seg)
                continue
            for conn in (self.client, self.server):
                if conn is not None:
                    t = conn.next_timer()
                    if t is not None and t <= self.now:
                        conn.handle_timer(self.now)

    def at(self, t: float) -> float:
        self.run(t)
        return t

    # ---- reading the log --------------------------------------------------------------

    def sent(self, side: str) -> list[tuple[float, Segment]]:
        return [(t, s) for t, who, s in self.log if who == side]

    def event_names(self, side: str) -> list[str]:
        return [type(e).__name__ for _, e in self.events[side]]


def flags_of(seg: Segment) -> str:
    names = [(0x02, "S"), (0x01, "F"), (0x04, "R"), (0x10, ".")]
    return "".join(n for bit, n in names if seg.flags & bit)
