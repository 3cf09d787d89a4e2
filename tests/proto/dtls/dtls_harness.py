"""Two DTLS layers joined by an in-memory link that can lose and reorder datagrams."""

from __future__ import annotations

import random
from collections.abc import Callable

from iotbench.proto.dtls.layer import DtlsLayer
from iotbench.proto.dtls.params import DtlsParams, PskClientCredentials, PskServerCredentials

IDENTITY, KEY = b"dev1", b"s3cret"
C, S = "client-addr", "server-addr"


def pair(
    params: DtlsParams | None = None,
    client_key: bytes = KEY,
    identity: bytes = IDENTITY,
    hint: bytes | None = None,
) -> tuple[DtlsLayer, DtlsLayer]:
    client = DtlsLayer(random.Random(1), params, client=PskClientCredentials(identity, client_key))
    server = DtlsLayer(
        random.Random(2), params, server=PskServerCredentials({IDENTITY: KEY}, hint=hint)
    )
    return client, server


class Link:
    """Moves datagrams between a client layer (at C) and a server layer (at S).

    `drop(direction, n)` says whether the n-th datagram in that direction
    ("c2s" or "s2c", counted from 0) is lost. Time advances to the next
    timer when nothing is in flight.
    """

    def __init__(
        self,
        client: DtlsLayer,
        server: DtlsLayer,
        drop: Callable[[str, int], bool] = lambda d, n: False,
        client_addr: object = C,
    ) -> None:
        self.client, self.server, self.drop = client, server, drop
        self.client_addr = client_addr
        self.now = 0.0
        self.sent = {"c2s": [], "s2c": []}
        self.received: dict[str, list[bytes]] = {"client": [], "server": []}
        self.events: list[object] = []

    def run(self, until_s: float = 600.0) -> None:
        while True:
            moved = self._move()
            if moved:
                continue
            deadlines = [
                t for t in (self.client.next_timer(), self.server.next_timer()) if t is not None
            ]
            if not deadlines or min(deadlines) > until_s:
                return
            self.now = max(self.now, min(deadlines))
            self.client.handle_timer(self.now)
            self.server.handle_timer(self.now)

    def _move(self) -> bool:
        moved = False
        for src, dst, direction, at in (
            (self.client, self.server, "c2s", self.client_addr),
            (self.server, self.client, "s2c", S),
        ):
            for data, _ in src.datagrams_to_send():
                moved = True
                n = len(self.sent[direction])
                self.sent[direction].append(data)
                if not self.drop(direction, n):
                    dst.incoming(self.now, data, at)
        for layer, side in ((self.client, "client"), (self.server, "server")):
            self.received[side].extend(p for p, _ in layer.plaintexts())
            self.events.extend(layer.events())
        return moved

    def of_type(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]
