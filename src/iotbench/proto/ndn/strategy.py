"""Forwarding strategies: where an Interest goes, decided at three hook points (S5, NFD).

The forwarder calls

- `after_receive_interest` once an Interest has a PIT entry and missed the
  Content Store: the strategy forwards it (`fw.send_interest`), rejects it
  (`fw.reject_pending_interest`, which Nacks the downstreams), or leaves it
  aggregated;
- `before_satisfy_interest` just before a Data satisfies an entry (for
  measurements; the forwarder sends the Data itself);
- `before_expire_pending_interest` just before an unsatisfied entry is
  removed at the end of its lifetime;

and, for NDNLPv2 Nacks, `after_receive_nack` when an upstream rejects an
Interest.

Two strategies ship, as in S5:

- `BestRoute`: the lowest-cost FIB next hop (other than the face the Interest
  came from); on a Nack, the next one not yet tried.
- `Multicast`: every FIB next hop other than the incoming face.

Both forward a new entry at once. An Interest that joins an entry already
forwarded is aggregated, except a downstream's retransmission when the
forwarder does no hop-by-hop retransmission of its own: that is sent again
if at least `retx_suppression_s` passed since the last transmission (with
hop-by-hop retransmission on, the forwarder's timer retransmits and a
downstream retransmission would only double the traffic).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Protocol

from mypy_extensions import mypyc_attr

from .fib import NextHop
from .interest import Interest
from .pit import PitEntry
from .types import NackReason

if TYPE_CHECKING:
    from .data import Data

__all__ = ["STRATEGIES", "BestRoute", "Multicast", "Strategy", "make_strategy"]

# Least severe first: when every upstream Nacked, the downstream hears the mildest reason.
_SEVERITY: Final[dict[int, int]] = {
    NackReason.CONGESTION: 0,
    NackReason.DUPLICATE: 1,
    NackReason.NO_ROUTE: 2,
}


def least_severe(reasons: list[int]) -> int:
    return min(reasons, key=lambda r: _SEVERITY.get(r, 3)) if reasons else NackReason.NONE


class StrategySettings(Protocol):
    """The forwarder settings a strategy reads (ForwarderConfig's, frozen)."""

    @property
    def retx_max(self) -> int: ...

    @property
    def retx_suppression_s(self) -> float: ...


class Forwarder(Protocol):
    """What a strategy may ask of the forwarder that calls it (forwarder.py): its
    side of the hooks, so that strategies need not import the forwarder."""

    @property
    def config(self) -> StrategySettings:
        """The forwarder's settings (read-only here)."""

    def next_hops(self, interest: Interest) -> list[NextHop]:
        """FIB next hops for `interest`, best first."""

    def send_interest(
        self, now: float, entry: PitEntry, face_id: int, interest: Interest | None = None
    ) -> bool:
        """Forward the entry's Interest to one upstream face and record it."""

    def reject_pending_interest(self, now: float, entry: PitEntry, reason: int) -> None:
        """Give up on `entry`: Nack its downstreams and remove it."""


# Strategies may be written outside this module (a test's, a user's).
@mypyc_attr(allow_interpreted_subclasses=True)
class Strategy:
    name = "strategy"

    def after_receive_interest(
        self, fw: Forwarder, now: float, entry: PitEntry, ingress: int, interest: Interest
    ) -> None:
        raise NotImplementedError

    def before_satisfy_interest(
        self, fw: Forwarder, now: float, entry: PitEntry, ingress: int, data: Data
    ) -> None:
        """Hook: `data` from face `ingress` is about to satisfy `entry`."""

    def before_expire_pending_interest(self, fw: Forwarder, now: float, entry: PitEntry) -> None:
        """Hook: `entry` reached the end of its lifetime unsatisfied."""

    def after_receive_nack(
        self, fw: Forwarder, now: float, entry: PitEntry, ingress: int, reason: int
    ) -> None:
        """Default: once every upstream has Nacked, Nack the downstreams and drop the entry."""
        if entry.all_out_records_nacked():
            reasons = [o.nack for o in entry.out_records.values() if o.nack is not None]
            fw.reject_pending_interest(now, entry, least_severe(reasons))

    # ---- shared helpers -----------------------------------------------------------------

    @staticmethod
    def _should_resend(fw: Forwarder, now: float, entry: PitEntry, ingress: int) -> bool:
        """A downstream retransmission that the forwarder is not already retransmitting."""
        rec = entry.in_records.get(ingress)
        if rec is None or rec.arrivals < 2 or fw.config.retx_max > 0:
            return False
        last = max((o.last_sent_s for o in entry.out_records.values()), default=None)
        return last is None or now - last >= fw.config.retx_suppression_s

    @staticmethod
    def _eligible(fw: Forwarder, ingress: int, interest: Interest) -> list[NextHop]:
        return [nh for nh in fw.next_hops(interest) if nh.face_id != ingress]

    def _hops_or_no_route(
        self, fw: Forwarder, now: float, entry: PitEntry, ingress: int, interest: Interest
    ) -> list[NextHop]:
        """The next hops other than the ingress face. With none, the downstream gets
        a Nack (no route), unless an Interest sent earlier may still bring Data."""
        hops = self._eligible(fw, ingress, interest)
        if not hops and not entry.has_pending_out_records(now):
            fw.reject_pending_interest(now, entry, NackReason.NO_ROUTE)
        return hops


class BestRoute(Strategy):
    name = "best-route"

    def after_receive_interest(
        self, fw: Forwarder, now: float, entry: PitEntry, ingress: int, interest: Interest
    ) -> None:
        hops = self._hops_or_no_route(fw, now, entry, ingress, interest)
        if not hops:
            return
        if not entry.has_pending_out_records(now):
            fw.send_interest(now, entry, hops[0].face_id)
        elif self._should_resend(fw, now, entry, ingress):
            untried = [nh for nh in hops if nh.face_id not in entry.out_records]
            fw.send_interest(now, entry, (untried or hops)[0].face_id)

    def after_receive_nack(
        self, fw: Forwarder, now: float, entry: PitEntry, ingress: int, reason: int
    ) -> None:
        hops = self._eligible(fw, -1, entry.interest)
        downstream = set(entry.in_records)
        untried = [
            nh
            for nh in hops
            if nh.face_id not in entry.out_records and nh.face_id not in downstream
        ]
        if untried:
            fw.send_interest(now, entry, untried[0].face_id)
            return
        super().after_receive_nack(fw, now, entry, ingress, reason)


class Multicast(Strategy):
    name = "multicast"

    def after_receive_interest(
        self, fw: Forwarder, now: float, entry: PitEntry, ingress: int, interest: Interest
    ) -> None:
        hops = self._hops_or_no_route(fw, now, entry, ingress, interest)
        if not hops:
            return
        if not entry.has_pending_out_records(now) or self._should_resend(fw, now, entry, ingress):
            for nh in hops:
                fw.send_interest(now, entry, nh.face_id)


STRATEGIES: dict[str, type[Strategy]] = {"best-route": BestRoute, "multicast": Multicast}


def make_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; known: {sorted(STRATEGIES)}") from None
