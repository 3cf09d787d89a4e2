"""Test helpers: RFC 8613's test contexts, and two OSCORE-secured endpoints on a
wire with a fake clock (nothing here uses the simulator)."""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Hashable

from iotbench.proto.coap.codec import Message, decode
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.coap.params import CoapParams
from iotbench.proto.coap.resources import ResourceResponse
from iotbench.proto.coap.secured import SecuredEndpoint
from iotbench.proto.oscore.context import SecurityContext
from iotbench.proto.oscore.events import OscoreFailure
from iotbench.proto.oscore.layer import OscoreLayer

h = bytes.fromhex
CLIENT = ("10.0.0.1", 40000)
SERVER = ("10.0.0.2", 5683)
#: RFC 8613 C.1's input parameters.
SECRET = h("0102030405060708090a0b0c0d0e0f10")
SALT = h("9e7ca92223786340")


def contexts(**kwargs) -> tuple[SecurityContext, SecurityContext]:
    """A client's and a server's context of C.1 (client Sender ID empty, server 0x01)."""
    server_kwargs = {k: v for k, v in kwargs.items() if k != "sender_sequence_number"}
    client = SecurityContext(SECRET, b"", b"\x01", master_salt=SALT, **kwargs)
    server = SecurityContext(SECRET, b"\x01", b"", master_salt=SALT, **server_kwargs)
    return client, server


class Pair:
    """A client and a server endpoint, each behind its OSCORE layer, on one wire.

    `wire(src, dst, data)` returns what arrives instead of `data` (None: it is
    lost); every datagram sent is logged as (time, src, dst, bytes)."""

    def __init__(
        self,
        client_ctx: SecurityContext | None = None,
        server_ctx: SecurityContext | None = None,
        delay_s: float = 0.01,
        wire: Callable[[Hashable, Hashable, bytes], bytes | None] | None = None,
        client_params: CoapParams | None = None,
        **layer_kwargs,
    ) -> None:
        if client_ctx is None and server_ctx is None:
            client_ctx, server_ctx = contexts()
        self.client_layer = OscoreLayer(random.Random(1), **layer_kwargs)
        self.server_layer = OscoreLayer(random.Random(2), **layer_kwargs)
        if client_ctx is not None:
            self.client_layer.add_peer(SERVER, client_ctx)
        if server_ctx is not None:
            self.server_layer.add_context(server_ctx)
        self.client = SecuredEndpoint(
            CoapEndpoint(random.Random(3), client_params or CoapParams()), self.client_layer
        )
        self.server = SecuredEndpoint(CoapEndpoint(random.Random(4)), self.server_layer)
        self.value = 20
        self.server.add_resource("/temp", self._temp, observable=True)
        self.eps = {CLIENT: self.client, SERVER: self.server}
        self.delay_s = delay_s
        self.wire = wire or (lambda src, dst, data: data)
        self.now = 0.0
        self.log: list[tuple[float, Hashable, Hashable, bytes]] = []
        self._flight: list[tuple[float, int, Hashable, Hashable, bytes]] = []
        self._seq = 0
        self.client_events: list[object] = []
        self.server_events: list[object] = []

    def _temp(self, request, addr):
        return ResourceResponse(payload=f"{self.value} C".encode(), content_format=0)

    def inject(self, src: Hashable, dst: Hashable, data: bytes) -> None:
        """Put `data` on the wire as if `src` had sent it."""
        self._seq += 1
        heapq.heappush(self._flight, (self.now + self.delay_s, self._seq, src, dst, data))

    def _collect(self) -> None:
        for src, ep in self.eps.items():
            for data, dst in ep.datagrams_to_send():
                self.log.append((self.now, src, dst, data))
                arriving = self.wire(src, dst, data)
                if arriving is not None:
                    self.inject(src, dst, arriving)
        self.client_events += self.client.events()
        self.server_events += self.server.events()

    def run(self, until: float) -> None:
        """Advance virtual time to `until`, delivering datagrams and firing timers."""
        while True:
            self._collect()
            candidates = [self._flight[0][0]] if self._flight else []
            candidates += [t for t in (ep.next_timer() for ep in self.eps.values()) if t]
            if not candidates or min(candidates) > until:
                self.now = until
                return
            self.now = max(self.now, min(candidates))
            if self._flight and self._flight[0][0] <= self.now:
                _, _, src, dst, data = heapq.heappop(self._flight)
                self.eps[dst].receive(self.now, data, src)
                continue
            for ep in self.eps.values():
                t = ep.next_timer()
                if t is not None and t <= self.now:
                    ep.handle_timer(self.now)

    def sent(self, src: Hashable) -> list[Message]:
        return [decode(d) for _, s, _, d in self.log if s == src]

    def events_of(self, side: str, kind: type) -> list:
        events = self.client_events if side == "client" else self.server_events
        return [e for e in events if isinstance(e, kind)]

    def failures(self, side: str) -> list[str]:
        return [e.reason for e in self.events_of(side, OscoreFailure)]
