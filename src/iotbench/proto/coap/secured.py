"""A CoAP endpoint behind a security layer (DTLS or OSCORE), driven like a plain one.

Security sits between the endpoint and the driver, one datagram at a time:

    driver  --receive-->  layer.incoming  --plaintexts-->  endpoint.receive
    driver  <--datagrams_to_send--  layer  <--outgoing--  endpoint.datagrams_to_send

so the CoAP endpoint is the same object with and without security, and the
simulator's and the real-socket drivers drive a `SecuredEndpoint` exactly as
they drive a `CoapEndpoint` (receive, handle_timer, next_timer,
datagrams_to_send, events). A layer adds its own datagrams (DTLS handshake
flights, alerts, OSCORE's error replies) and its own timers and events.

Every call that takes `now` moves the endpoint's new datagrams into the layer
with that time, because a layer's work depends on it (a DTLS client starts its
handshake, and its retransmission timer, when the first datagram to a peer is
queued). Every other call (add_resource, observers, stats, ...) goes to the
endpoint unchanged.

Datagrams to or from a multicast group pass the layer untouched: neither DTLS
nor OSCORE (RFC 8613) protects group communication (Group OSCORE is a
separate specification, not built).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Protocol

from iotbench.proto.crypto_work import Work
from iotbench.proto.timers import earliest

from .endpoint import CoapEndpoint


class DatagramSecurity(Protocol):
    """What a security layer offers: a sans-I/O datagram transform with its own timers."""

    def outgoing(self, now: float, data: bytes, addr: Hashable) -> None:
        """A plaintext CoAP datagram the endpoint sends to `addr`."""

    def incoming(self, now: float, data: bytes, addr: Hashable) -> None:
        """A datagram from the wire (never raises for any bytes)."""

    def datagrams_to_send(self) -> list[tuple[bytes, Hashable]]:
        """Datagrams for the wire, protected or the layer's own (drains)."""

    def plaintexts(self) -> list[tuple[bytes, Hashable]]:
        """Opened datagrams for the endpoint (drains)."""

    def events(self) -> list[object]:
        """The layer's own events: handshakes done or failed, refusals (drains)."""

    def next_timer(self) -> float | None: ...

    def handle_timer(self, now: float) -> None: ...

    @property
    def work(self) -> Work:
        """The cryptography done so far, in primitives (proto/crypto_work.py)."""

    #: Told (plaintext, what went on the wire) for each datagram the layer
    #: protected: how an observer recognises protected content.
    on_sealed: Callable[[bytes, bytes], None] | None


class SecuredEndpoint:
    """`endpoint` whose datagrams all pass through `layer`."""

    def __init__(self, endpoint: CoapEndpoint, layer: DatagramSecurity) -> None:
        self.endpoint = endpoint
        self.layer = layer
        self._now = 0.0
        self._multicast_out: list[tuple[bytes, Hashable]] = []
        self._groups: set[Hashable] = set()  # group addresses requests went to

    # -- the driver's calls

    def receive(self, now: float, data: bytes, addr: Hashable, *, multicast: bool = False) -> None:
        self._now = now
        if multicast:
            self.endpoint.receive(now, data, addr, multicast=True)
        else:
            self.layer.incoming(now, data, addr)
            for plain, source in self.layer.plaintexts():
                self.endpoint.receive(now, plain, source)
        self._flush(now)

    def handle_timer(self, now: float) -> None:
        self._now = now
        self.layer.handle_timer(now)
        for plain, source in self.layer.plaintexts():
            self.endpoint.receive(now, plain, source)
        self.endpoint.handle_timer(now)
        self._flush(now)

    def next_timer(self) -> float | None:
        deadlines = [
            t for t in (self.endpoint.next_timer(), self.layer.next_timer()) if t is not None
        ]
        return earliest(deadlines)

    def datagrams_to_send(self, now: float | None = None) -> list[tuple[bytes, Hashable]]:
        self._flush(self._now if now is None else now)
        out = self._multicast_out + self.layer.datagrams_to_send()
        self._multicast_out = []
        return out

    def events(self) -> list[object]:
        return [*self.layer.events(), *self.endpoint.events()]

    @property
    def crypto_work(self) -> Work:
        """What the layer's cryptography has cost so far: a driver on a node with a
        CPU charges it (apps/driver.py)."""
        return self.layer.work

    # -- the application's calls that take `now`

    def request(self, now: float, addr: Hashable, *args, **kwargs) -> int:
        if kwargs.get("multicast"):
            self._groups.add(addr)
        return self._then_flush(now, self.endpoint.request(now, addr, *args, **kwargs))

    def respond(self, now: float, *args, **kwargs) -> None:
        self.endpoint.respond(now, *args, **kwargs)
        self._then_flush(now, None)

    def cancel(self, now: float, *args, **kwargs):
        return self._then_flush(now, self.endpoint.cancel(now, *args, **kwargs))

    def cancel_observe(self, now: float, *args, **kwargs):
        return self._then_flush(now, self.endpoint.cancel_observe(now, *args, **kwargs))

    def notify(self, now: float, *args, **kwargs):
        return self._then_flush(now, self.endpoint.notify(now, *args, **kwargs))

    def peer_unreachable(self, now: float, addr: Hashable) -> int:
        return self._then_flush(now, self.endpoint.peer_unreachable(now, addr))

    def __getattr__(self, name: str):
        # Everything without a time (add_resource, observers, stats, params, ...).
        return getattr(self.endpoint, name)

    # -- internals

    def _then_flush(self, now: float, result):
        self._now = now
        self._flush(now)
        return result

    def _flush(self, now: float) -> None:
        for data, addr in self.endpoint.datagrams_to_send():
            if addr in self._groups:
                self._multicast_out.append((data, addr))
            else:
                self.layer.outgoing(now, data, addr)
