"""A client's side of gateway advertisement and discovery (MQTT-SN 1.2 section 6.1).

- Gateways become known from ADVERTISE (with a Duration until the next one)
  and from GWINFO, sent by a gateway (its id; the address is the sender's)
  or by another client (id and GwAdd). A gateway known from ADVERTISE is lost
  after Nadv of its ADVERTISE periods without one.
- search(): SEARCHGW is broadcast after a random delay in [0, Tsearchgw],
  so that clients switched on together do not all search at once; a
  SEARCHGW heard from another client during the delay replaces ours (we
  wait for the GWINFO it will bring). With no answer, SEARCHGW is repeated,
  the wait doubling each time (the project's BackoffSchedule), up to
  `search_retries` times; then GatewaySearchFailed.
- Answering other clients (optional): with `gwinfo_broadcast_addr` set, a
  SEARCHGW from another client is answered with GWINFO (gateway id and
  address) after a random delay in [0, Tgwinfo], unless a GWINFO is heard
  first.

Sans-I/O like the client that owns it: datagrams go to `send(data, addr)`,
events to `emit(event)`, randomness comes from the owner's rng.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from iotbench.proto.retransmit import BackoffSchedule, Retransmission
from iotbench.proto.timers import earliest

from .codec import Advertise, GwInfo, SearchGw, encode, pack_udp_address, unpack_udp_address
from .events import ClientEvent, GatewayFound, GatewayLost, GatewaySearchFailed
from .params import MqttSnClientParams

__all__ = ["Discovery", "KnownGateway"]


@dataclass(slots=True)
class KnownGateway:
    """A gateway this client heard of; expires_s is None unless it advertises."""

    gw_id: int
    addr: Hashable
    expires_s: float | None = None


class _Search:
    __slots__ = ("addr", "radius", "retx", "send_at")

    def __init__(self, addr: Hashable, radius: int, send_at: float) -> None:
        self.addr = addr
        self.radius = radius
        self.send_at: float | None = send_at  # None once sent (or replaced)
        self.retx: Retransmission | None = None


class Discovery:
    def __init__(
        self,
        rng: random.Random,
        params: MqttSnClientParams,
        send: Callable[[bytes, Hashable], None],
        emit: Callable[[ClientEvent], None],
    ) -> None:
        self.rng = rng
        self.params = params
        self._send = send
        self._emit = emit
        self.gateways: dict[int, KnownGateway] = {}
        self._search: _Search | None = None
        self._schedule = BackoffSchedule(
            base_timeout_s=params.search_delay_s,
            max_retransmissions=params.search_retries,
            backoff_factor=2.0,
        )
        self._answer_at: float | None = None

    @property
    def searching(self) -> bool:
        return self._search is not None

    def search(self, now: float, broadcast_addr: Hashable, radius: int) -> None:
        if not 0 <= radius <= 0xFF:
            raise ValueError(f"radius must be 0..255, got {radius}")
        delay = self.rng.uniform(0.0, self.params.search_delay_s)
        self._search = _Search(broadcast_addr, radius, now + delay)

    # ---- what the client hears --------------------------------------------------------

    def on_advertise(self, now: float, msg: Advertise, addr: Hashable) -> None:
        # A Duration of 0 announces no next ADVERTISE: the gateway never expires.
        expires = now + msg.duration_s * self.params.advertise_misses if msg.duration_s else None
        self._found(msg.gw_id, addr, expires)

    def on_gwinfo(self, now: float, msg: GwInfo, addr: Hashable) -> None:
        self._answer_at = None  # someone answered already (6.1)
        if msg.gw_add:
            addr = unpack_udp_address(msg.gw_add)
            if addr is None:
                return  # an address format we cannot use
        known = self.gateways.get(msg.gw_id)
        self._found(msg.gw_id, addr, known.expires_s if known is not None else None)

    def on_searchgw(self, now: float, msg: SearchGw, addr: Hashable) -> None:
        search = self._search
        if search is not None and search.send_at is not None:
            # Another client's SEARCHGW will bring the GWINFO we want: wait as if we sent it.
            search.send_at = None
            search.retx = Retransmission(self._schedule, self.rng)
            search.retx.start(now)
        if self.params.gwinfo_broadcast_addr is not None and self._answerable() is not None:
            if self._answer_at is None:
                self._answer_at = now + self.rng.uniform(0.0, self.params.gwinfo_delay_s)

    def _found(self, gw_id: int, addr: Hashable, expires_s: float | None) -> None:
        known = self.gateways.get(gw_id)
        self.gateways[gw_id] = KnownGateway(gw_id, addr, expires_s)
        self._search = None
        if known is None or known.addr != addr:
            self._emit(GatewayFound(gw_id, addr))

    def _answerable(self) -> tuple[int, bytes] | None:
        for gw in self.gateways.values():
            try:
                return gw.gw_id, pack_udp_address(gw.addr)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue  # not a (host, port) address: nothing to tell others
        return None

    # ---- timers ------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        deadlines = [g.expires_s for g in self.gateways.values() if g.expires_s is not None]
        search = self._search
        if search is not None:
            if search.send_at is not None:
                deadlines.append(search.send_at)
            elif search.retx is not None:
                deadlines.append(search.retx.deadline_s)
        if self._answer_at is not None:
            deadlines.append(self._answer_at)
        return earliest(deadlines)

    def handle_timer(self, now: float) -> None:
        for gw in list(self.gateways.values()):
            if gw.expires_s is not None and gw.expires_s <= now:
                del self.gateways[gw.gw_id]
                self._emit(GatewayLost(gw.gw_id, gw.addr))
        search = self._search
        if search is not None:
            if search.send_at is not None and search.send_at <= now:
                search.send_at = None
                search.retx = Retransmission(self._schedule, self.rng)
                search.retx.start(now)
                self._send(encode(SearchGw(search.radius)), search.addr)
            elif search.retx is not None and search.retx.deadline_s <= now:
                if search.retx.on_timeout(now):
                    self._send(encode(SearchGw(search.radius)), search.addr)
                else:
                    self._search = None
                    self._emit(GatewaySearchFailed())
        if self._answer_at is not None and self._answer_at <= now:
            self._answer_at = None
            answer = self._answerable()
            if answer is not None:
                gw_id, gw_add = answer
                self._send(encode(GwInfo(gw_id, gw_add)), self.params.gwinfo_broadcast_addr)
