"""The S5 application API (RIOT's ndn_app) as a sans-I/O object over a Forwarder.

    app = NdnApp.create(forwarder)                        # create: attaches a local face
    app.register_prefix("/p", on_interest)                # producer
    app.express_interest("/p/1", 4000, on_data, on_timeout)   # consumer
    app.schedule(callback, 1.5)                           # a timer, seconds from now
    app.put_data(make_data("/p/1", b"..."))               # answer (or pre-fill the cache)
    app.run(now)                                          # driven externally
    app.destroy()

"run" is driven by whoever drives the forwarder: an application's timers
live in the forwarder's timer heap, so `app.run(now)` is
`forwarder.handle_timer(now)` and `app.next_timer()` is the forwarder's.
API calls made from a callback take the time of the event being handled;
calls from outside may pass `now` explicitly (the default is the forwarder's
latest time). Nothing here reads a clock.

Callbacks:
- on_interest(interest): the producer answers with put_data(...) (now or
  later). Interests whose parameters digest does not match their
  ApplicationParameters are dropped before they reach it (the spec asks
  producers to check).
- on_data(interest, data): the first Data matching a pending Interest.
- on_timeout(interest): no Data within the Interest lifetime.
- on_nack(interest, reason): an NDNLPv2 Nack arrived; without an on_nack the
  Interest ends at once through on_timeout (the network said it will not
  answer, so there is nothing left to wait for).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from .data import Data, received_data
from .forwarder import Forwarder, Timer
from .interest import DEFAULT_INTEREST_LIFETIME_MS, Interest, make_interest, received_interest
from .lp import LpPacket
from .name import Name, NameLike, ends_with_digest
from .signing import Signer
from .tlv import NdnDecodeError
from .types import TT, LpType

# Plain ints, which compiled code reads without an enum attribute lookup.
_TT_INTEREST: Final = int(TT.INTEREST)
_TT_DATA: Final = int(TT.DATA)
_LP_PACKET: Final = int(LpType.LP_PACKET)

__all__ = ["AppStats", "NdnApp", "PendingInterest"]

OnInterest = Callable[[Interest], None]
OnData = Callable[[Interest, Data], None]
OnTimeout = Callable[[Interest], None]
OnNack = Callable[[Interest, int], None]


@dataclass(slots=True)
class AppStats:
    interests_expressed: int = 0
    data_received: int = 0
    timeouts: int = 0
    nacks: int = 0
    interests_received: int = 0
    data_put: int = 0
    bad_parameters_digest: int = 0
    unmatched: int = 0
    decode_errors: int = 0


_GONE: Final = object()


def _exact_only(interest: Interest) -> bool:
    """Only a Data of this very name satisfies the Interest (no prefix, no digest)."""
    if interest.can_be_prefix:
        return False
    name = interest.name
    return not ends_with_digest(name)


class PendingInterest:
    """An expressed Interest waiting for Data; `cancel()` forgets it silently."""

    __slots__ = ("_app", "interest", "on_data", "on_nack", "on_timeout", "seq", "timer")

    def __init__(
        self,
        app: NdnApp,
        interest: Interest,
        on_data: OnData | None,
        on_timeout: OnTimeout | None,
        on_nack: OnNack | None,
    ) -> None:
        self._app = app
        self.interest = interest
        self.on_data = on_data
        self.on_timeout = on_timeout
        self.on_nack = on_nack
        self.timer: Timer | None = None
        self.seq = 0  # its place in the order Interests were expressed

    def cancel(self) -> None:
        self._app._forget(self)


class NdnApp:
    """One application on one forwarder, talking to it through a local face."""

    def __init__(self, forwarder: Forwarder, rng: random.Random | None = None) -> None:
        self.forwarder = forwarder
        self.rng = rng if rng is not None else forwarder.rng
        self.stats = AppStats()
        self.face = forwarder.add_face(self._on_packet, local=True)
        # Expressed Interests in the order they went out; the ones only a Data of
        # their exact name can satisfy are also indexed by it, so a Data is matched
        # without looking at every Interest still waiting.
        self._pending: dict[PendingInterest, None] = {}
        self._exact: dict[bytes, list[PendingInterest]] = {}
        self._loose: dict[PendingInterest, None] = {}  # the others (CanBePrefix, digest)
        self._expressed = 0
        self._handlers: dict[bytes, OnInterest] = {}
        self._timers: set[Timer] = set()
        self._destroyed = False

    # ---- S5: create / run / destroy -------------------------------------------------

    @classmethod
    def create(cls, forwarder: Forwarder, rng: random.Random | None = None) -> NdnApp:
        return cls(forwarder, rng)

    def run(self, now: float) -> float | None:
        """Run what is due at `now`; returns when to call again (None: nothing scheduled)."""
        self.forwarder.handle_timer(now)
        return self.forwarder.next_timer()

    def next_timer(self) -> float | None:
        return self.forwarder.next_timer()

    def destroy(self) -> None:
        """Detach from the forwarder: no callback runs after this."""
        if self._destroyed:
            return
        self._destroyed = True
        for pi in self._pending:
            if pi.timer is not None:
                pi.timer.cancel()
        self._pending.clear()
        self._exact.clear()
        self._loose.clear()
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        self._handlers.clear()
        self.forwarder.remove_face(self.face.face_id)

    @property
    def now(self) -> float:
        return self.forwarder.now

    # ---- S5: schedule ------------------------------------------------------------------

    def schedule(
        self, callback: Callable[[], None], delay_s: float, now: float | None = None
    ) -> Timer:
        """Call `callback()` `delay_s` seconds after now."""
        if delay_s < 0:
            raise ValueError(f"delay_s must be >= 0, got {delay_s}")
        self._check_alive()
        start = self.now if now is None else now
        holder: list[Timer] = []

        def fire() -> None:
            self._timers.discard(holder[0])
            callback()

        timer = self.forwarder.call_at(start + delay_s, fire)
        holder.append(timer)
        self._timers.add(timer)
        return timer

    # ---- S5: consumer --------------------------------------------------------------------

    def express_interest(
        self,
        name: NameLike | Interest,
        lifetime_ms: int = DEFAULT_INTEREST_LIFETIME_MS,
        on_data: OnData | None = None,
        on_timeout: OnTimeout | None = None,
        *,
        on_nack: OnNack | None = None,
        can_be_prefix: bool = False,
        must_be_fresh: bool = False,
        hop_limit: int | None = None,
        forwarding_hint: Iterable[NameLike] = (),
        app_parameters: bytes | None = None,
        signer: Signer | None = None,
        now: float | None = None,
        upstream: int | None = None,
    ) -> PendingInterest:
        """Send an Interest (with a fresh nonce) and wait for its Data, Nack or timeout.

        `name` may also be a ready Interest, sent as it is (its own lifetime applies).
        `upstream`: the face to send it to, whatever the FIB says (Forwarder.receive).
        """
        self._check_alive()
        if isinstance(name, Interest):
            interest = name
            if interest.nonce is None:
                interest = interest.with_nonce(self.rng.getrandbits(32))
        else:
            interest = make_interest(
                name,
                can_be_prefix=can_be_prefix,
                must_be_fresh=must_be_fresh,
                forwarding_hint=forwarding_hint,
                nonce=self.rng.getrandbits(32),
                lifetime_ms=lifetime_ms,
                hop_limit=hop_limit,
                app_parameters=app_parameters,
                signer=signer,
            )
        start = self.now if now is None else now
        pi = PendingInterest(self, interest, on_data, on_timeout, on_nack)
        pi.timer = self.forwarder.call_at(
            start + interest.lifetime_ms / 1000.0, lambda: self._on_timeout(pi)
        )
        self._pending[pi] = None
        pi.seq = self._expressed
        self._expressed += 1
        if _exact_only(interest):
            self._exact.setdefault(interest.name.value, []).append(pi)
        else:
            self._loose[pi] = None
        self.stats.interests_expressed += 1
        self.forwarder.receive(
            start, self.face.face_id, interest.wire, -1 if upstream is None else upstream
        )
        return pi

    # ---- S5: producer ----------------------------------------------------------------------

    def register_prefix(self, prefix: NameLike, on_interest: OnInterest, cost: int = 0) -> bool:
        """Receive Interests under `prefix`; False when the forwarder's FIB is full."""
        self._check_alive()
        prefix = prefix if isinstance(prefix, Name) else Name(prefix)
        if not self.forwarder.add_route(prefix, self.face.face_id, cost):
            return False
        self._handlers[prefix.value] = on_interest
        return True

    def unregister_prefix(self, prefix: NameLike) -> None:
        prefix = prefix if isinstance(prefix, Name) else Name(prefix)
        self._handlers.pop(prefix.value, None)
        self.forwarder.remove_route(prefix, self.face.face_id)

    def put_data(self, data: Data | bytes, now: float | None = None) -> None:
        """Hand a Data to the forwarder: it satisfies pending Interests, or is cached."""
        self._check_alive()
        wire = data.wire if isinstance(data, Data) else bytes(data)
        self.stats.data_put += 1
        self.forwarder.receive(self.now if now is None else now, self.face.face_id, wire)

    # ---- from the forwarder -----------------------------------------------------------------

    def _check_alive(self) -> None:
        if self._destroyed:
            raise RuntimeError("this NdnApp was destroyed")

    def _forget(self, pi: PendingInterest) -> None:
        if pi.timer is not None:
            pi.timer.cancel()
            pi.timer = None
        if self._pending.pop(pi, _GONE) is _GONE:
            return
        if self._loose.pop(pi, _GONE) is _GONE:
            key = pi.interest.name.value
            same = self._exact[key]
            same.remove(pi)
            if not same:
                del self._exact[key]

    def _on_timeout(self, pi: PendingInterest) -> None:
        if pi not in self._pending:
            return
        pi.timer = None
        self._forget(pi)
        self.stats.timeouts += 1
        if pi.on_timeout is not None:
            pi.on_timeout(pi.interest)

    def _on_packet(self, wire: bytes) -> None:
        """The local face's send callback: a packet the forwarder delivers to this app."""
        if self._destroyed:
            return
        try:
            first = wire[0]
            if first == _TT_DATA:
                self._on_data(received_data(wire))
            elif first == _TT_INTEREST:
                self._on_interest(received_interest(wire))
            elif first == _LP_PACKET:
                packet = LpPacket.decode(wire)
                if packet.nack is not None and packet.fragment is not None:
                    self._on_nack(received_interest(packet.fragment), packet.nack)
        except NdnDecodeError:
            self.stats.decode_errors += 1

    def _on_data(self, data: Data) -> None:
        matched = list(self._exact.get(data.name.value, ()))
        if self._loose:
            loose = [pi for pi in self._loose if pi.interest.matches_data(data)]
            if loose:  # in the order they were expressed
                matched = sorted(matched + loose, key=lambda pi: pi.seq)
        if not matched:
            self.stats.unmatched += 1
            return
        for pi in matched:
            self._forget(pi)
            self.stats.data_received += 1
            if pi.on_data is not None:
                pi.on_data(pi.interest, data)

    def _on_nack(self, interest: Interest, reason: int) -> None:
        for pi in list(self._pending):
            if pi.interest.nonce == interest.nonce and pi.interest.name == interest.name:
                self._forget(pi)
                self.stats.nacks += 1
                if pi.on_nack is not None:
                    pi.on_nack(pi.interest, reason)
                elif pi.on_timeout is not None:
                    pi.on_timeout(pi.interest)
                return
        self.stats.unmatched += 1

    def _on_interest(self, interest: Interest) -> None:
        self.stats.interests_received += 1
        if not interest.parameters_digest_valid():
            self.stats.bad_parameters_digest += 1
            return
        handlers = self._handlers
        for key in interest.name.prefix_values():
            handler = handlers.get(key)
            if handler is not None:
                handler(interest)
                return
        self.stats.unmatched += 1
