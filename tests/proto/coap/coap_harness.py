"""Test helpers: a two-endpoint wire with a fake clock, and byte builders.

Nothing here uses the simulator; time is a float the tests advance.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Hashable

from iotbench.proto.coap.codec import Message, Type, decode, encode
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.coap.params import CoapParams

CLIENT = ("10.0.0.1", 40000)
SERVER = ("10.0.0.2", 5683)


def endpoint(seed: int = 1, strict: bool = True, **params) -> CoapEndpoint:
    return CoapEndpoint(random.Random(seed), CoapParams(**params), strict=strict)


def drain(ep: CoapEndpoint) -> list[tuple[Message, Hashable]]:
    """Decoded datagrams the endpoint wants sent (drains them)."""
    return [(decode(data), addr) for data, addr in ep.datagrams_to_send()]


def drain_raw(ep: CoapEndpoint) -> list[tuple[bytes, Hashable]]:
    return ep.datagrams_to_send()


def run_timers(ep: CoapEndpoint, until: float) -> list[tuple[float, Message]]:
    """Fire `ep`'s timers up to `until` with nobody answering; returns (time, message) sent."""
    sent = []
    while True:
        t = ep.next_timer()
        if t is None or t > until:
            return sent
        ep.handle_timer(t)
        sent.extend((t, m) for m, _ in drain(ep))


class Wire:
    """Two endpoints joined by a wire with a fixed one-way delay.

    `drop(time, src, dst, msg)` returning True loses that datagram. Every
    datagram put on the wire is logged as (send time, src, dst, Message).
    """

    def __init__(
        self,
        client: CoapEndpoint,
        server: CoapEndpoint,
        delay_s: float = 0.01,
        drop: Callable[[float, Hashable, Hashable, Message], bool] | None = None,
    ) -> None:
        self.eps = {CLIENT: client, SERVER: server}
        self.client = client
        self.server = server
        self.delay_s = delay_s
        self.drop = drop or (lambda *a: False)
        self.now = 0.0
        self.log: list[tuple[float, Hashable, Hashable, Message]] = []
        self._flight: list[tuple[float, int, Hashable, Hashable, bytes]] = []
        self._seq = 0

    def _collect(self) -> None:
        for src, ep in self.eps.items():
            for data, dst in ep.datagrams_to_send():
                msg = decode(data)
                assert encode(msg) == data, "endpoint emitted non-canonical bytes"
                self.log.append((self.now, src, dst, msg))
                if self.drop(self.now, src, dst, msg):
                    continue
                self._seq += 1
                heapq.heappush(self._flight, (self.now + self.delay_s, self._seq, src, dst, data))

    def run(self, until: float) -> None:
        """Advance virtual time to `until`, delivering datagrams and firing timers."""
        while True:
            self._collect()
            candidates = []
            if self._flight:
                candidates.append(self._flight[0][0])
            for ep in self.eps.values():
                t = ep.next_timer()
                if t is not None:
                    candidates.append(t)
            nxt = min(candidates) if candidates else None
            if nxt is None or nxt > until:
                self.now = until
                return
            self.now = max(self.now, nxt)
            if self._flight and self._flight[0][0] <= self.now:
                _, _, src, dst, data = heapq.heappop(self._flight)
                self.eps[dst].receive(self.now, data, src)
                continue
            for ep in self.eps.values():
                t = ep.next_timer()
                if t is not None and t <= self.now:
                    ep.handle_timer(self.now)

    def at(self, t: float) -> float:
        """Advance to `t` before an application call made at time `t`; returns t."""
        self.run(t)
        return t

    def sent_by(self, src: Hashable) -> list[tuple[float, Message]]:
        return [(t, m) for t, s, _, m in self.log if s == src]


def con_request(mid: int, token: bytes, path: str = "/t", code: int = 1) -> Message:
    return Message.request(Type.CON, code, mid, token, path)


def raw(msg: Message) -> bytes:
    return encode(msg)
