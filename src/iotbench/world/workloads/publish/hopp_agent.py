"""HoPP on one node (S4's `hopp`): the tree's upkeep, NAMs up, pulls down.

world/workloads/publish/hopp.py describes the protocol and builds an agent
on every node; this module is the agent itself, which runs for every HoPP
message a node hears and every Data its forwarder gets from a neighbour (it
is one of the modules a normal install compiles, src/iotbench/compiled.py).

The NAM cache is keyed by a name's wire value (its Name TLV's value): what
a Data, an Interest and the Content Store give without turning the name
into text. A NAM carries the name as text (hopp.nam_text), which is parsed
once, when the NAM arrives.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial
from typing import Final, Protocol

from mypy_extensions import mypyc_attr

from iotbench.apps.ndn import NdnNode
from iotbench.net import ieee802154 as mac
from iotbench.net.l2 import L2Interface, OnFrame
from iotbench.net.packet import CONTROL, DATA
from iotbench.proto.ndn import hopp
from iotbench.proto.ndn.app import NdnApp
from iotbench.proto.ndn.data import Data
from iotbench.proto.ndn.interest import Interest
from iotbench.proto.ndn.name import Name
from iotbench.proto.ndn.tlv import NdnDecodeError
from iotbench.sim import Simulator
from iotbench.sim.kernel import Timer


@dataclass(frozen=True)
class HoppParams:
    """HoPP's timers and tables (`protocol.ndn.hopp`). The defaults are the reference
    implementation's (RIOT's sys/include/net/hopp/hopp.h and COMPAS); S4's ndn_hopp
    app sets its own in its Makefile (the scenario cites them)."""

    trickle_imin_s: float = 0.064  # HOPP_TRICKLE_IMIN (ms there)
    trickle_doublings: int = 16  # HOPP_TRICKLE_IMAX
    trickle_k: int = 5  # HOPP_TRICKLE_REDCONST
    sol_period_s: tuple[float, float] = (4.0, 5.0)  # HOPP_SOL_PERIOD: base + jitter
    nam_period_s: tuple[float, float] = (1.0, 1.5)  # HOPP_NAM_PERIOD: base + jitter
    parent_timeout_s: tuple[float, float] = (30.0, 35.0)  # HOPP_PARENT_TIMEOUT_PERIOD
    nam_retries: int = 3  # COMPAS_NAM_CACHE_RETRIES
    nam_stale_s: float = 10.0  # HOPP_NAM_STALE_TIME
    nam_cache_entries: int = 20  # COMPAS_NAM_CACHE_LEN of examples/hopp


UNICAST_SOLS: Final = 4
SOLS_BEFORE_TRICKLE: Final = 3


def uniform(rng: random.Random, low: float, high: float) -> float:
    """`rng.uniform(low, high)`: its formula (CPython's Lib/random.py), so the same
    draws, here in compiled code instead of a Python call per NAM."""
    return low + (high - low) * rng.random()


class Advertised:
    """A name in the NAM cache."""

    def __init__(self, text: str, source: bytes | None, retries: int) -> None:
        self.text = text  # the name as a NAM carries it (hopp.nam_text)
        self.source = source  # who advertised it to us (None: we published it)
        self.retries = retries  # NAMs still to send
        self.requested = False  # we hold its Data and advertise it upwards
        self.heard = 0.0  # when its last NAM came
        self.timer: Timer | None = None


class Trickle:
    """RFC 6206's timer as the reference implementation runs it for PAMs."""

    def __init__(self, rng: random.Random, params: HoppParams) -> None:
        self.rng = rng
        self.imin_s = params.trickle_imin_s
        self.imax_s = params.trickle_imin_s * 2**params.trickle_doublings
        self.interval = 0.0
        self.t = 0.0
        self.heard = 0

    def start(self) -> float:
        """(Re)start: I and t drawn from [Imin, 4 Imin), as the reference does; the
        delay to the first transmission."""
        self.heard = 0
        self.interval = self.t = uniform(self.rng, self.imin_s, 4 * self.imin_s)
        return self.t

    def next(self) -> float:
        """After a firing: the delay to the next one, in the second half of the next
        (doubled, at most Imax) interval."""
        rest = self.interval - self.t
        doubled = min(2 * self.interval, self.imax_s)
        low = self.interval if doubled > self.interval else doubled / 2
        self.interval = doubled
        self.heard = 0
        self.t = uniform(self.rng, low, doubled)
        return self.t + rest


class Receive:
    """What an agent puts in front of each of its interface's receivers: HoPP frames go
    to the agent, everything else to the NDN face as before."""

    def __init__(self, agent: HoppAgent, ndn_receive: OnFrame | None) -> None:
        self.agent = agent
        self.ndn_receive = ndn_receive

    def __call__(self, src: bytes, payload: bytes) -> None:
        agent = self.agent
        if hopp.is_hopp(payload):
            node = agent.node
            node.cpu.run(node.forward_cost_s, partial(agent.on_message_cb, src, payload))
            return
        if self.ndn_receive is not None:  # (None: a node outside the tree, no face)
            self.ndn_receive(src, payload)


class HoppOwner(Protocol):
    """What the agents of a run share (hopp.py's NdnHopp): the run's clock,
    parameters and prefix, and its rare counters (each agent keeps its frequent
    ones: compiled, the owner's are read and written through Python's generic
    attribute lookup)."""

    sim: Simulator
    params: HoppParams
    prefix_uri: str
    lifetime_ms: int
    nam_drops: int
    decode_errors: int

    def delivered(self, data: Data) -> None: ...


@mypyc_attr(allow_interpreted_subclasses=True)  # tests probe it through a subclass
class HoppAgent:
    """HoPP on one node: tree upkeep, NAMs up, pulls down."""

    def __init__(
        self,
        owner: HoppOwner,
        name: str,
        node: NdnNode,
        iface: L2Interface,
        parent: bytes | None,
        rng: random.Random,
        faces: dict[bytes, int],
    ) -> None:
        self.owner = owner
        self.sim = owner.sim
        self.name = name
        self.node = node
        self.iface = iface
        self.tree_parent = parent  # the shared tree's parent (None: the root)
        self.faces = faces  # the node's NDN face to each neighbour, by its address
        self.rng = rng
        self.params = owner.params
        self.lifetime_ms = owner.lifetime_ms
        self.messages_sent = 0  # HoPP messages (SOL, PAM, NAM)
        self.pulls = 0
        self.app = NdnApp.create(node.forwarder)
        self.root = parent is None
        self.rank = 1 if self.root else hopp.RANK_UNDEFINED
        self.parent_alive = self.root
        self.floating = False
        self.sols = 0
        self.names: dict[bytes, Advertised] = {}  # by the name's wire value
        self.trickle = Trickle(rng, owner.params)
        self._trickle_timer: Timer | None = None
        self._sol_timer: Timer | None = None
        self._parent_timer: Timer | None = None
        # The callbacks that timers and the CPU call, bound once (compiled, a bound
        # method is made through Python's attribute lookup each time it is read).
        self.on_message_cb = self.on_message
        self._express_cb = self._express
        self._nam_due_cb = self._nam_due
        iface.intercept(self._receiver)
        # CCN-lite's callbacks, which HoPP sets (hopp.c: content_requested and
        # content_send): Data from a neighbour, and our Content Store answering one.
        forwarder = node.forwarder
        forwarder.data_received = self._on_data_received
        forwarder.cache_answered = self._on_cache_answered

    def _receiver(self, ndn_receive: OnFrame | None) -> OnFrame:
        return Receive(self, ndn_receive)

    def send(self, dst: bytes, message: hopp.Sol | hopp.Pam | hopp.Nam) -> None:
        """PAMs and SOLs keep the tree (control traffic); a NAM is part of publishing."""
        wire = message.encode()
        kind = DATA if isinstance(message, hopp.Nam) else CONTROL
        self.iface.send(dst, wire, 0, len(wire), kind=kind)
        self.messages_sent += 1

    def _send_up(self, message: hopp.Sol | hopp.Nam) -> None:
        parent = self.tree_parent
        assert parent is not None, "the root has no parent to send to"
        self.send(parent, message)

    # ---- start ------------------------------------------------------------------------------

    def start(self) -> None:
        if self.root:
            self._start_trickle()
        else:
            self._sol_timer = self.sim.schedule(
                self._jitter(self.params.sol_period_s), self._sol_round
            )

    def _jitter(self, bounds: tuple[float, float]) -> float:
        return uniform(self.rng, bounds[0], bounds[1])

    # ---- the tree ---------------------------------------------------------------------------

    def _pam(self) -> hopp.Pam:
        return hopp.Pam(self.rank, self.owner.prefix_uri, self.floating)

    def _start_trickle(self) -> None:
        """Start (or restart) the PAM timer at Imin."""
        if self._trickle_timer is not None:
            self._trickle_timer.cancel()
        self._trickle_timer = self.sim.schedule(self.trickle.start(), self._trickle_fires)

    def _trickle_fires(self) -> None:
        if self.rank != hopp.RANK_UNDEFINED and self.trickle.heard < self.params.trickle_k:
            self.send(mac.BROADCAST, self._pam())
        self._trickle_timer = self.sim.schedule(self.trickle.next(), self._trickle_fires)

    def _sol_round(self) -> None:
        """The SOL timer: while without a live parent, solicit; re-armed every 4-5 s."""
        self._sol_timer = None
        if self.root or (self.rank != hopp.RANK_UNDEFINED and self.parent_alive):
            return
        if self.rank != hopp.RANK_UNDEFINED and self.sols < UNICAST_SOLS:
            self._send_up(hopp.Sol())
        else:
            self.floating = True
            self.send(mac.BROADCAST, hopp.Sol())
        self.sols += 1
        if self.sols == SOLS_BEFORE_TRICKLE and self._trickle_timer is None:
            self.floating = True
            self._start_trickle()
        self._sol_timer = self.sim.schedule(self._jitter(self.params.sol_period_s), self._sol_round)

    def _parent_lost(self) -> None:
        """No PAM from the parent for 30-35 s (or NAMs unanswered): ask it again."""
        self._parent_timer = None
        self.parent_alive = False
        if self._sol_timer is not None:
            self._sol_timer.cancel()
        self._sol_round()

    def _on_pam(self, src: bytes, pam: hopp.Pam) -> None:
        if self.root or src != self.tree_parent:
            if self.rank != hopp.RANK_UNDEFINED and self.rank >= pam.rank:
                self.trickle.heard += 1  # a consistent PAM
            return
        changed = self.rank != pam.rank + 1
        self.rank = pam.rank + 1
        self.floating = pam.floating
        if changed:
            self.send(mac.BROADCAST, hopp.Sol())
            self.send(mac.BROADCAST, self._pam())
        if not self.parent_alive:
            # The parent is back: every name we advertise gets its NAMs again, the
            # first one a NAM period from now (hopp.c, hopp_handle_pam).
            self.parent_alive = True
            for value, entry in self.names.items():
                if entry.requested:
                    entry.retries = self.params.nam_retries
                    self._arm_nam(value, entry, self._jitter(self.params.nam_period_s))
        self.sols = 0
        if self._sol_timer is not None:
            self._sol_timer.cancel()
            self._sol_timer = None
        if self._parent_timer is not None:
            self._parent_timer.cancel()
        self._parent_timer = self.sim.schedule(
            self._jitter(self.params.parent_timeout_s), self._parent_lost
        )

    def on_sol(self, src: bytes, sol: hopp.Sol) -> None:
        if self.rank == hopp.RANK_UNDEFINED or self.floating or self.names_full():
            return
        if sol.reset_trickle and self._trickle_timer is not None:
            self._start_trickle()
        else:
            self.send(src, self._pam())

    def on_message(self, src: bytes, payload: bytes) -> None:
        try:
            message = hopp.decode(payload)
        except hopp.HoppDecodeError:
            self.owner.decode_errors += 1
            return
        if isinstance(message, hopp.Pam):
            self._on_pam(src, message)
        elif isinstance(message, hopp.Sol):
            self.on_sol(src, message)
        else:
            for text in message.names:
                self._on_nam(src, text)

    # ---- names up, Data down ------------------------------------------------------------------

    def names_full(self) -> bool:
        return len(self.names) >= self.params.nam_cache_entries

    def _remember(self, value: bytes, text: str, source: bytes | None) -> Advertised | None:
        entry = self.names.get(value)
        if entry is not None:
            return entry
        if self.names_full() and not self._make_room():
            self.owner.nam_drops += 1
            return None
        entry = self.names[value] = Advertised(text, source, self.params.nam_retries)
        return entry

    def _make_room(self) -> bool:
        """Drop a stale name: one not advertised upwards first, then any."""
        stale = self.sim.now - self.params.nam_stale_s
        for upward in (False, True):
            for value, entry in self.names.items():
                if entry.requested == upward and entry.heard < stale:
                    self._forget(value)
                    return True
        return False

    def _forget(self, value: bytes) -> None:
        entry = self.names.pop(value, None)
        if entry is not None and entry.timer is not None:
            entry.timer.cancel()

    def publish(self, data: Data) -> None:
        """A reading of this producer: into the Content Store, its name up to the parent."""
        name = data.name
        value = name.value
        entry = self._remember(value, hopp.nam_text(name), None)
        if entry is None:
            return  # the NAM cache is full: the reading stays here, unannounced
        entry.requested = True
        entry.heard = self.sim.now
        self.app.put_data(data, now=self.sim.now)
        self.node.pump()
        self._arm_nam(value, entry, 0.0)

    def _on_nam(self, src: bytes, text: str) -> None:
        try:
            name = Name.from_uri(text)  # (Name(text) adds a trip through the class's __new__)
        except (ValueError, NdnDecodeError):
            self.owner.decode_errors += 1
            return
        entry = self._remember(name.value, text, src)
        if entry is None:
            return
        entry.heard = self.sim.now
        self._pull(name, src)

    def _pull(self, name: Name, src: bytes) -> None:
        """An Interest for the advertised name, straight to the NAM's sender (hopp.c,
        hopp_request: CCN-lite's `pkt->to`, no FIB). What it brings is seen where it
        arrives (_on_data_received); one our own Content Store answers (a repeated
        NAM's) ends there."""
        self.pulls += 1
        node = self.node
        node.cpu.run(node.interest_cost_s, partial(self._express_cb, name, self.faces[src]))

    def _express(self, name: Name, face_id: int) -> None:
        self.app.express_interest(name, self.lifetime_ms, now=self.sim.now, upstream=face_id)
        self.node.pump()

    def _on_data_received(self, face_id: int, data: Data) -> None:
        """A Data from a neighbour whose name we hold (hopp.c, content_requested): the
        proxy has the reading; any other node advertises the name to its parent, its
        NAMs starting again now (also when the Data came before)."""
        value = data.name.value
        entry = self.names.get(value)
        if entry is None:
            return
        if self.root:
            self._forget(value)  # the proxy keeps the Data; the subscriber has it
            self.owner.delivered(data)
            return
        entry.requested = True
        entry.retries = self.params.nam_retries
        self._arm_nam(value, entry, 0.0)

    def _on_cache_answered(self, face_id: int, interest: Interest) -> None:
        """Our Content Store answers a neighbour's Interest (hopp.c, content_send): the
        name is being pulled, so we stop advertising it."""
        self._forget(interest.name.value)

    def _arm_nam(self, value: bytes, entry: Advertised, delay: float) -> None:
        if entry.timer is not None:
            entry.timer.cancel()
        entry.timer = self.sim.schedule(delay, self._nam_due_cb, value)

    def _nam_due(self, value: bytes) -> None:
        entry = self.names.get(value)
        if entry is None:
            return
        entry.timer = None
        if self.rank == hopp.RANK_UNDEFINED or not self.parent_alive or not entry.requested:
            return  # waits until a parent takes us in
        if entry.retries > 0:
            entry.retries -= 1
            self._send_up(hopp.Nam((entry.text,)))
            entry.timer = self.sim.schedule(
                self._jitter(self.params.nam_period_s), self._nam_due_cb, value
            )
            return
        # Nobody pulled: keep the name if its Data is still cached, and check on the
        # parent (its PAM re-arms the NAMs). The study's node floats here and
        # broadcasts its SOL, and takes the first PAM of any neighbour not floating
        # as its new parent (hopp.c, check_nce; COMPAS's compas_pam_check): a path
        # switch, which S4's shared tree does not make (docs/ndn.md).
        if value not in self.node.forwarder.cs:
            self._forget(value)
        self._parent_lost()
