"""The publish workload over HoPP (S4's `hopp`): names pushed up the tree, Data pulled hop by hop.

HoPP (HoP-and-Pull, Gündoğan et al.) as its reference implementation does
it (RIOT's `sys/net/routing/hopp` with COMPAS; docs/ndn.md lists what it
leaves open and what iotbench chose), on every node of the radio network:

Its timers and tables are `protocol.ndn.hopp` (HoppParams below); the
defaults are the reference's, the values in parentheses here, and S4's
scenarios set those of the study's ndn_hopp app.

- Tree. The gateway is the root and content proxy (rank 1). It advertises
  its prefix in PAMs on a Trickle timer (Imin 64 ms, 16 doublings, k = 5).
  A node that hears its parent's PAM takes rank + 1 and, when its rank
  changed, broadcasts a SOL and a PAM of its own. A node without a parent
  sends a SOL every 4 to 5 s, unicast to its parent four times, then
  broadcast. After its third SOL it also runs Trickle, and it floats
  (ignores SOLs) until a PAM takes it in. A neighbour with a rank answers a
  SOL with a unicast PAM. A parent not heard from for 30 to 35 s is asked
  again with a SOL. S4 shares one routing tree between all variants, so a
  node takes the PAMs of its parent in the shared tree only; every other
  PAM is heard and counted, as the reference counts those of its Trickle.
- Publishing. A producer puts each reading as a Data into its Content Store
  and sends a NAM with its name to its parent. A node that gets a NAM pulls
  the Data at once with an Interest to the sender. When the Data comes, it
  is in the puller's Content Store, and the puller sends its own NAM to its
  parent. So the name goes up hop by hop, each hop pulling, until the
  gateway has the Data. A NAM is sent again every 1 to 1.5 s until the
  parent pulls, 3 NAMs in all; then the node asks its parent with a SOL.
  A node forgets a name once a neighbour's Interest for it is answered from
  its Content Store. A full NAM cache makes room by dropping a name not heard
  of for 10 s, else drops the new one, and does not answer SOLs.
- Subscribing. The subscriber runs on the gateway, beside the proxy. A
  reading is delivered when the proxy's pull brings its Data in.

PAMs and SOLs are control traffic (`control_bytes`); NAMs, the pulls'
Interests and their Data are the publishing (`data_bytes`). The pulls are
retransmitted hop by hop by the forwarders
(`protocol.ndn.retx_max`, `retx_interval_s`). Each message costs the node
a forwarding decision of CPU time (its device profile).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from iotbench.apps.ndn import NdnNode
from iotbench.apps.readings import reading_counter
from iotbench.net import ieee802154 as mac
from iotbench.net.l2 import L2Interface
from iotbench.net.packet import CONTROL, DATA
from iotbench.proto.ndn import hopp
from iotbench.proto.ndn.app import NdnApp
from iotbench.proto.ndn.data import Data
from iotbench.proto.ndn.interest import Interest
from iotbench.proto.ndn.name import Name
from iotbench.proto.ndn.tlv import NdnDecodeError
from iotbench.proto.ndn.types import TT
from iotbench.scenarios.settings import Settings
from iotbench.sim import Simulator
from iotbench.sim.kernel import Timer
from iotbench.world.networks import Network
from iotbench.world.workloads.publish.ndn import NdnSender, NdnTree

if TYPE_CHECKING:
    from iotbench.world.workloads.publish.sender import Publisher


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


UNICAST_SOLS = 4
_INTEREST_TYPE = bytes((TT.INTEREST,))  # an NDN Interest's first byte
SOLS_BEFORE_TRICKLE = 3


@dataclass
class _Advertised:
    """A name in the NAM cache."""

    source: bytes | None  # who advertised it to us (None: we published it)
    retries: int  # NAMs still to send
    requested: bool = False  # we hold its Data and advertise it upwards
    heard: float = 0.0  # when its last NAM came
    timer: Timer | None = field(default=None, repr=False)


class _Trickle:
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
        self.interval = self.t = self.rng.uniform(self.imin_s, 4 * self.imin_s)
        return self.t

    def next(self) -> float:
        """After a firing: the delay to the next one, in the second half of the next
        (doubled, at most Imax) interval."""
        rest = self.interval - self.t
        doubled = min(2 * self.interval, self.imax_s)
        low = self.interval if doubled > self.interval else doubled / 2
        self.interval = doubled
        self.heard = 0
        self.t = self.rng.uniform(low, doubled)
        return self.t + rest


class HoppAgent:
    """HoPP on one node: tree upkeep, NAMs up, pulls down."""

    def __init__(
        self,
        owner: NdnHopp,
        name: str,
        node: NdnNode,
        iface: L2Interface,
        parent: bytes | None,
        rng: random.Random,
    ) -> None:
        self.owner = owner
        self.sim = owner.sim
        self.name = name
        self.node = node
        self.iface = iface
        self.tree_parent = parent  # the shared tree's parent (None: the root)
        self.rng = rng
        self.params = owner.params
        self.app = NdnApp.create(node.forwarder)
        self.root = parent is None
        self.rank = 1 if self.root else hopp.RANK_UNDEFINED
        self.parent_alive = self.root
        self.floating = False
        self.sols = 0
        self.names: dict[str, _Advertised] = {}
        self.trickle = _Trickle(rng, owner.params)
        self._trickle_timer: Timer | None = None
        self._sol_timer: Timer | None = None
        self._parent_timer: Timer | None = None
        iface.intercept(self._receiver)

    # ---- wiring ---------------------------------------------------------------------------

    def _receiver(self, ndn_receive):
        """HoPP frames go to this agent, everything else to the NDN face as before; an
        Interest from a neighbour is looked at on its way (see _on_remote_interest)."""
        node = self.node

        def receive(src: bytes, payload: bytes) -> None:
            if hopp.is_hopp(payload):
                cost = node.profile.cost_s("forward_packet")
                node.cpu.run(cost, lambda: self._on_message(src, payload))
                return
            if ndn_receive is None:
                return  # NDN from a node outside the tree: no face for it
            if payload[:1] == _INTEREST_TYPE:
                self._on_remote_interest(payload)
            ndn_receive(src, payload)

        return receive

    def send(self, dst: bytes, message: hopp.Sol | hopp.Pam | hopp.Nam) -> None:
        """PAMs and SOLs keep the tree (control traffic); a NAM is part of publishing."""
        wire = message.encode()
        kind = DATA if isinstance(message, hopp.Nam) else CONTROL
        self.iface.send(dst, wire, 0, len(wire), kind=kind)
        self.owner.messages_sent += 1

    # ---- start ------------------------------------------------------------------------------

    def start(self) -> None:
        if self.root:
            self._start_trickle()
        else:
            self._sol_timer = self.sim.schedule(
                self._jitter(self.params.sol_period_s), self._sol_round
            )

    def _jitter(self, bounds: tuple[float, float]) -> float:
        return self.rng.uniform(*bounds)

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
            self.send(self.tree_parent, hopp.Sol())
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
            self.parent_alive = True
            for name, entry in self.names.items():
                if entry.requested:
                    entry.retries = self.params.nam_retries
                    self._arm_nam(name, entry, 0.0)
        self.sols = 0
        if self._sol_timer is not None:
            self._sol_timer.cancel()
            self._sol_timer = None
        if self._parent_timer is not None:
            self._parent_timer.cancel()
        self._parent_timer = self.sim.schedule(
            self._jitter(self.params.parent_timeout_s), self._parent_lost
        )

    def _on_sol(self, src: bytes, sol: hopp.Sol) -> None:
        if self.rank == hopp.RANK_UNDEFINED or self.floating or self._names_full():
            return
        if sol.reset_trickle and self._trickle_timer is not None:
            self._start_trickle()
        else:
            self.send(src, self._pam())

    def _on_message(self, src: bytes, payload: bytes) -> None:
        try:
            message = hopp.decode(payload)
        except hopp.HoppDecodeError:
            self.owner.decode_errors += 1
            return
        if isinstance(message, hopp.Pam):
            self._on_pam(src, message)
        elif isinstance(message, hopp.Sol):
            self._on_sol(src, message)
        else:
            for name in message.names:
                self._on_nam(src, name)

    # ---- names up, Data down ------------------------------------------------------------------

    def _names_full(self) -> bool:
        return len(self.names) >= self.params.nam_cache_entries

    def _remember(self, name: str, source: bytes | None) -> _Advertised | None:
        entry = self.names.get(name)
        if entry is not None:
            return entry
        if self._names_full() and not self._make_room():
            self.owner.nam_drops += 1
            return None
        entry = self.names[name] = _Advertised(source, self.params.nam_retries)
        return entry

    def _make_room(self) -> bool:
        """Drop a stale name: one not advertised upwards first, then any."""
        stale = self.sim.now - self.params.nam_stale_s
        for upward in (False, True):
            for name, entry in self.names.items():
                if entry.requested == upward and entry.heard < stale:
                    self._forget(name)
                    return True
        return False

    def _forget(self, name: str) -> None:
        entry = self.names.pop(name, None)
        if entry is not None and entry.timer is not None:
            entry.timer.cancel()

    def publish(self, data: Data) -> None:
        """A reading of this producer: into the Content Store, its name up to the parent."""
        name = data.name.to_uri()
        entry = self._remember(name, None)
        if entry is None:
            return  # the NAM cache is full: the reading stays here, unannounced
        entry.requested = True
        entry.heard = self.sim.now
        self.app.put_data(data, now=self.sim.now)
        self.node.pump()
        self._arm_nam(name, entry, 0.0)

    def _on_nam(self, src: bytes, name: str) -> None:
        entry = self._remember(name, src)
        if entry is None:
            return
        entry.heard = self.sim.now
        self._pull(name)

    def _pull(self, name: str) -> None:
        """An Interest for the advertised name (the tree's routes lead to its sender)."""
        try:
            interest_name = Name(name)
        except (ValueError, NdnDecodeError):
            self.owner.decode_errors += 1
            return
        self.owner.pulls += 1

        def express() -> None:
            self.app.express_interest(
                interest_name,
                self.owner.lifetime_ms,
                self._pulled,
                _not_pulled,
                now=self.sim.now,
            )
            self.node.pump()

        self.node.cpu.run(NdnTree.create_interest_s(self.node), express)

    def _pulled(self, interest: Interest, data: Data) -> None:
        name = data.name.to_uri()
        entry = self.names.get(name)
        if entry is None:
            return
        if self.root:
            self._forget(name)  # the proxy keeps the Data; the subscriber has it
            self.owner.delivered(data)
            return
        if entry.requested:
            return  # a repeated NAM's pull, answered by our own cache: already upward
        entry.requested = True
        entry.retries = self.params.nam_retries
        self._arm_nam(name, entry, 0.0)

    def _arm_nam(self, name: str, entry: _Advertised, delay: float) -> None:
        if entry.timer is not None:
            entry.timer.cancel()
        entry.timer = self.sim.schedule(delay, self._nam_due, name)

    def _nam_due(self, name: str) -> None:
        entry = self.names.get(name)
        if entry is None:
            return
        entry.timer = None
        if self.rank == hopp.RANK_UNDEFINED or not self.parent_alive or not entry.requested:
            return  # waits until a parent takes us in
        if entry.retries > 0:
            entry.retries -= 1
            self.send(self.tree_parent, hopp.Nam((name,)))
            entry.timer = self.sim.schedule(
                self._jitter(self.params.nam_period_s), self._nam_due, name
            )
            return
        # Nobody pulled: keep the name if its Data is still cached, and check on the
        # parent (its PAM re-arms the NAMs).
        if not self._cached(name):
            self._forget(name)
        self._parent_lost()

    def _cached(self, name: str) -> bool:
        return Name(name).value in self.node.forwarder.cs

    def _on_remote_interest(self, payload: bytes) -> None:
        """A neighbour's Interest for a name we advertise, which our Content Store holds:
        it is being pulled, so stop advertising it (the reference's content_send)."""
        if not self.names:
            return
        try:
            interest_name = Interest(payload).name
            name = interest_name.to_uri()
        except NdnDecodeError:
            return
        entry = self.names.get(name)
        # The Interest's own name is the one _cached(name) would parse back.
        if entry is not None and entry.requested and interest_name.value in self.node.forwarder.cs:
            self._forget(name)


def _not_pulled(interest: Interest) -> None:
    pass  # the next NAM of the sender pulls again


HOPP_KEYS = {f.name for f in fields(HoppParams)}


def hopp_params(cfg: Settings | None) -> HoppParams:
    """`protocol.ndn.hopp` as HoppParams (absent keys, or no section: the reference's
    defaults)."""
    if cfg is None:
        return HoppParams()
    given = cfg.as_kwargs()
    return HoppParams(**{k: v for k, v in given.items() if v is not None and k in HOPP_KEYS})


class NdnHopp(NdnSender):
    """hopp: HoPP on every node; the gateway is the content proxy and the subscriber."""

    drives = "push"

    def __init__(self, work: Publisher, sim: Simulator, net: Network, config: Settings) -> None:
        self.work = work
        self.sim = sim
        self.tree = tree = NdnTree(sim, net, config)
        self.params = hopp_params(config.protocol.ndn.hopp)
        self.lifetime_ms = tree.lifetime_ms
        self.prefix_uri = tree.prefix.to_uri()  # the content proxy's: the gateway's
        self.producers = tree.producers
        self.messages_sent = 0  # HoPP messages (SOL, PAM, NAM)
        self.pulls = 0
        self.nam_drops = 0
        self.decode_errors = 0
        shared = net.parts["tree"]
        ids = list(net.hosts)
        index = {name: i for i, name in enumerate(ids)}
        self.agents: dict[str, HoppAgent] = {}
        for name, node in tree.nodes.items():
            parent = shared.parent[index[name]]
            parent_address = None if parent is None else net.address(net.hosts[ids[parent]])
            iface = net.interface(net.hosts[name])
            self.agents[name] = HoppAgent(
                self, name, node, iface, parent_address, sim.rng(f"hopp/{name}")
            )
        # A node pulls from the NAM's sender (the reference addresses it directly);
        # the tree's routes lead there, and /<prefix> up to the parent, as HoPP sets.
        tree.hopp_routes()
        tree.pump_all()

    def start(self) -> None:
        for agent in self.agents.values():
            agent.start()

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        tree = self.tree
        data = tree.data(producer, tree.reading_name(producer, reading_counter(rid)), payload)
        agent = self.agents[tree.producer_names[producer]]
        node = tree.producers[producer]
        node.cpu.run(tree.create_data_s(node), lambda: agent.publish(data))

    def delivered(self, data: Data) -> None:
        self.work.arrived(data.content)
