"""The group-query workload (S6): a client queries a group of CoAP members through
the Entity Manager on the gateway.

`workload.kind = "group-query"`:

- the Entity Manager (apps/em) serves on the gateway's CoAP port; the
  `producer` nodes are the members (with `workload.member_hops_mean`, as
  many nodes picked by their hop count instead, see `pick_members`): each a
  CoAP server with a reading at
  `workload.path` ("21.7 Cel", a new one per request) and the /mc resource
  (proto/coap/group.py), whose joins make the node a member of the group
  (RPL announces it; SMRF carries group requests down to it);
- at `workload.start_s` the client (`network.roles.client`, the host behind
  the gateway's uplink, as the study's client sat on the Ethernet side)
  creates one entity of all members with the settings of `protocol.coap.em`
  (mode unicast or multicast, delay, message type); a multicast entity is
  ready when every member joined. When the EM refuses (a member that could
  not be reached to join), the client tries again a minute later, five
  times in all; a run whose entity never exists has no queries, and says
  so (`entity_created` 0, reliabilities 0);
- then `workload.queries` GETs of the entity, the first at
  `workload.query_start_s` (absent: as soon as the entity exists; a
  scenario that turns interference on for the measurement creates the
  entity before), one after the other, the next `workload.interval_s` after
  the previous answer. Each query is an item:
  delivered when the EM answers 2.05, given up otherwise.

`workload.entity = "nested"` (with `network.second`, a second radio network
whose gateway is joined to the first's by Ethernet): an EM on each gateway;
the client creates on the second gateway's EM an entity of that network's
members, on the first's an entity of its own members, then the entity it
queries there, whose two members are those entities (the local one is asked
directly, the other over Ethernet). The top entity inserts the configured
delay between its two requests, as the study's nested entity did, and each
subgroup's entity the same delay between its members: the two radio
networks gather their members in parallel, which is what nesting buys. Each network has
`producer_count` members, picked alike (the second network is a twin).

A stepped sweep (S6's: "we gradually increased the Wi-Fi interference in
steps of 5 Mb/s", 50 queries at each step): when the interferers have
`earlier_rates_bps`, the run makes `workload.queries` queries at each
earlier rate first, one network living through them all (its RPL state,
link statistics and neighbour tables carry on), each interferer taking the
next step's rate when the step's last query is answered; only the last
step's queries are items and measured. The network's own counters
(mac_*, phy_*, energy, packets) count the whole run; the per-query ones
below, the measured step's.

Per-query measurements (metrics below): the members whose value the answer
holds, whether all did, and the response time of every query, answered or
not: from the client's request to the EM's answer at the client (a failed
query's error answer, or the client's CoAP give-up); for a multicast entity
the study's, to the arrival of the last member's reply at the EM (the EM's
answer when no member replied). Min, mean, max and the five-number summary. Messages and bytes in the radio network count every
802.15.4 frame sent (data, MAC ACKs, routing; on both radio networks, not
the Ethernet links) from the first query to the last answer, per query, and
so do the MACs' retries (`mac_retries_per_query`).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Hashable
from dataclasses import replace

from iotbench.apps.driver import DatagramDriver
from iotbench.apps.em.manager import EmParams, EntityManager, QueryAnswered
from iotbench.metrics.items import DELIVERED, GIVEN_UP, Item, ItemLog
from iotbench.metrics.observers import Observer, Observers
from iotbench.metrics.result import RunMeasures
from iotbench.metrics.traffic import TrafficMeter
from iotbench.net.ip import address_text
from iotbench.net.l2 import L2Node
from iotbench.net.node import Node
from iotbench.net.packet import Packet
from iotbench.net.radio.medium import RadioMedium
from iotbench.proto.coap import codec
from iotbench.proto.coap.endpoint import (
    CoapEndpoint,
    ResourceResponse,
    ResponseReceived,
)
from iotbench.proto.coap.group import leisure_lower_bound_s, serve_membership
from iotbench.scenarios.settings import em_settings, required
from iotbench.scenarios.settings_types import ProtocolCoapSettings, RunSettings
from iotbench.sim import Simulator
from iotbench.world.networks import Network, RadioNetwork
from iotbench.world.networks.base import ip_hosts
from iotbench.world.protocols.coap import COAP_PORT, coap_params
from iotbench.world.workloads.base import Workload
from iotbench.world.workloads.publish.coap import COAP_MESSAGE

ENTITY = "group"
#: A nested query's entities: each network's members, on its own gateway.
FIRST_ENTITY, SECOND_ENTITY = "first", "second"
CT_JSON = 50
#: A client whose entity could not be created (a multicast member that did not
#: join: every one must) tries again after CREATE_RETRY_S, CREATE_ATTEMPTS in all.
CREATE_RETRY_S = 60.0
CREATE_ATTEMPTS = 5


def member_response_bytes(token_length: int) -> int:
    """S of RFC 7252 8.2: the CoAP size of a member's answer (a 2.05 with a
    text/plain reading such as "21.7 Cel")."""
    answer = codec.Message(
        codec.Type.NON,
        codec.Code.CONTENT,
        0,
        bytes(token_length),
        [(codec.Opt.CONTENT_FORMAT, b"")],
        b"21.7 Cel",
    )
    return len(codec.encode(answer))


class Member:
    """One member node: its reading at `path`, and /mc."""

    def __init__(
        self, sim: Simulator, node: Node, cfg: ProtocolCoapSettings, path: str, leisure_s: float
    ) -> None:
        self.node = node
        self.rng = sim.rng(f"member/{node.name}")
        params = replace(coap_params(cfg), default_leisure_s=leisure_s)
        self.endpoint = CoapEndpoint(sim.rng(f"coap/{node.name}"), params)
        self.endpoint.add_resource(path, self._reading, methods={codec.Code.GET})
        # A node with a device (network.device.profile) spends its CPU time on each
        # message in and out: Erbium on the MSP430 (docs/studies/s6.md).
        self.driver = DatagramDriver(
            sim, node, self.endpoint, _ignore, codec.header_length, COAP_PORT, COAP_MESSAGE
        )
        serve_membership(self.endpoint, self._join, self._leave, lambda: sorted(node.groups))

    def _reading(self, request: codec.Message, addr: Hashable) -> ResourceResponse:
        return ResourceResponse(
            codec.Code.CONTENT, f"{self.rng.uniform(18, 26):.1f} Cel".encode(), 0
        )

    def _join(self, group: bytes) -> None:
        self.node.join(group)
        # Forwarders on the way split the group's CoAP datagrams into layers too.
        self.node.app_layers[(group, COAP_PORT)] = codec.header_length

    def _leave(self, group: bytes) -> None:
        self.node.leave(group)


class RadioFrames(Observer):
    """Frames sent on the radio (every 802.15.4 medium; not the Ethernet links)."""

    def __init__(self) -> None:
        self.frames = 0
        self.bytes = 0

    def transmitted(self, pkt: Packet) -> None:
        if isinstance(pkt.medium, RadioMedium):
            self.frames += 1
            self.bytes += len(pkt.data)


class GroupQueryWorkload(Workload):
    """`workload.kind = "group-query"` (see the module doc)."""

    def __init__(
        self,
        sim: Simulator,
        network: Network,
        config: RunSettings,
        items: ItemLog,
        observers: Observers,
        traffic: TrafficMeter | None = None,
    ) -> None:
        if not isinstance(network, RadioNetwork):
            raise TypeError("group-query runs on a radio network (S6's)")
        net = network
        workload = config.workload
        self.radio = RadioFrames()
        observers.add(self.radio)
        cfg = required(config.protocol.coap, "protocol.coap")
        em = em_settings(cfg)
        self.sim = sim
        self.items = items
        self.queries = workload.queries
        self.planned_items = workload.queries
        # A stepped sweep (network.interferers' earlier_rates_bps): the run lives
        # through every step, `queries` queries each, and measures the last.
        self.interferers = net.all_interferers()
        self.steps = len(self.interferers[0].steps) if self.interferers else 1
        self.warmup_queries = (self.steps - 1) * self.queries
        self.gap_s = workload.interval_s if workload.interval_s is not None else 1.0
        self.start_s = workload.start_s
        self.query_start_s = workload.query_start_s
        path = workload.path
        self.em_settings = em
        # Where the EMs run: on the gateways (the radio border routers), or on the
        # gateways' hosts behind them, as the study ran them (`workload.em_on`).
        self.em_role = workload.em_on or "gateway"
        em_node = net.node(self.em_role)
        self.gateway_host = address_text(net.address(em_node))
        networks = [net]
        second = net.second
        nested = workload.entity == "nested"
        if nested:
            if second is None:
                raise ValueError("workload.entity = nested: needs network.second")
            networks.append(second)
        target = workload.member_hops_mean
        target_max = workload.member_hops_max
        chosen_per_network: list[list[Node]] = []
        for each in networks:
            chosen = each.nodes("producer")
            if target is not None:
                # The network's stream: every run of a scenario (whatever its
                # axes) has the same members, as it has the same nodes and tree.
                members_rng = each.streams("workload/members")
                chosen = pick_members(each, len(chosen), target, members_rng, target_max)
            chosen_per_network.append(ip_hosts(chosen))
        leisure = em.leisure_s
        if em.leisure_rate_bps is not None:
            # RFC 7252 8.2's lower bound for the group each EM addresses.
            size = member_response_bytes(coap_params(cfg).token_length)
            group = len(chosen_per_network[0])
            leisure = leisure_lower_bound_s(size, group, em.leisure_rate_bps)
        self.leisure_s = leisure
        self.em_params = replace(
            coap_params(cfg),
            default_leisure_s=leisure,
            separate_response_after_s=em.separate_response_after_s,
        )
        self._answered: list[QueryAnswered] = []  # the EMs' answers since the last answer
        self.em, self.em_driver = self._entity_manager(net, "coap/em")
        self.members: list[Member] = []
        self.member_hops: list[int] = []
        member_uris: list[list[str]] = []
        for each, hosts in zip(networks, chosen_per_network, strict=True):
            tree = each.tree
            ids = list(each.hosts)
            self.member_hops += [tree.hops[ids.index(node.name)] for node in hosts]
            self.members += [Member(sim, node, cfg, path, leisure) for node in hosts]
            member_uris.append(
                [f"coap://[{address_text(each.address(node))}]{path}" for node in hosts]
            )
        # The EM as the client sees it: the gateway's address on the client's link
        # (its uplink), which is also where its answers come from; on the client's
        # own host, its address there.
        client_prefix = net.address(net.node("client"))[:8]
        facing = [i.address for i in em_node.interfaces if i.address[:8] == client_prefix]
        em_host = address_text(facing[0]) if facing else self.gateway_host
        self.em_addr = (em_host, COAP_PORT)
        # The entities to create, in order: (EM address, profile).
        if not nested:
            self.to_create = [(self.em_addr, self._profile(ENTITY, member_uris[0]))]
        else:
            assert second is not None  # nested: checked above
            self.second_em, self.second_em_driver = self._entity_manager(second, "coap/em2")
            # The second EM as the first reaches it: its address on the interface that
            # leads to the first (where its answers come from).
            second_em = second.ip_node(self.em_role)
            towards_first = second_em.interface_for(net.address(em_node))
            second_host = address_text(towards_first.address)
            top = [
                f"coap://[{self.gateway_host}]/e/{FIRST_ENTITY}",
                f"coap://[{second_host}]/e/{SECOND_ENTITY}",
            ]
            self.to_create = [
                ((second_host, COAP_PORT), self._profile(SECOND_ENTITY, member_uris[1])),
                (self.em_addr, self._profile(FIRST_ENTITY, member_uris[0])),
                (self.em_addr, self._profile(ENTITY, top, mode="unicast")),
            ]
        self.client = CoapEndpoint(sim.rng("coap/client"), coap_params(cfg))
        self.client_driver = DatagramDriver(
            sim,
            net.ip_node("client"),
            self.client,
            self._on_event,
            codec.header_length,
            operation=COAP_MESSAGE,
        )
        self._pending: dict[int, tuple[int, Item | None]] = {}  # request: (query, item)
        self._create_request: int | None = None
        self._created_count = 0  # of to_create
        self.created = False
        self.create_attempts = 0
        self.values: list[int] = []  # member values per answered query
        self.response_times: list[float] = []
        self.macs = net.all_macs()
        self.done = False  # every query made, or the entity refused for good
        self._start_counts = (0, 0, 0)
        self._end_counts: tuple[int, int, int] | None = None

    def _entity_manager(self, net: Network, stream: str) -> tuple[EntityManager, DatagramDriver]:
        """An EM on `net`'s gateway (or its host), on the CoAP port."""
        gateway = net.ip_node(self.em_role)
        em = EntityManager(
            CoapEndpoint(self.sim.rng(stream), self.em_params),
            EmParams(
                max_members=max(64, len(net.ids("producer"))),
                multicast_margin_s=self.em_settings.multicast_margin_s,
                local_hosts=tuple(address_text(i.address) for i in gateway.interfaces),
            ),
        )
        driver = DatagramDriver(
            self.sim,
            gateway,
            em,
            self._on_em_event,
            codec.header_length,
            COAP_PORT,
            COAP_MESSAGE,
        )
        return em, driver

    def _on_em_event(self, event: object) -> None:
        if isinstance(event, QueryAnswered):  # the only event an EM reports
            self._answered.append(event)

    def _profile(self, name: str, uris: list[str], mode: str | None = None) -> dict[str, object]:
        em = self.em_settings
        profile: dict[str, object] = {
            "name": name,
            "er": uris,
            "ect": mode or em.mode,
            "delay": em.delay_ms,
        }
        if profile["ect"] == "unicast":
            profile["emt"] = em.emt
        return profile

    def start(self) -> None:
        self.sim.at(self.start_s, self._create)

    # ---- the entity, then the queries ---------------------------------------------------

    def _create(self, attempt: bool = True) -> None:
        """Ask for the next entity of `to_create` (a new attempt, or its next step)."""
        if attempt:
            self.create_attempts += 1
        em_addr, profile = self.to_create[self._created_count]
        payload = json.dumps(profile, separators=(",", ":")).encode()
        self._create_request = self.client.request(
            self.sim.now, em_addr, codec.Code.POST, "/e", payload=payload,
            options=[(codec.Opt.CONTENT_FORMAT, CT_JSON)],
        )  # fmt: skip
        self.client_driver.pump()

    def _query(self, index: int) -> None:
        """Query `index` of the run: the earlier steps' first (no items, not
        measured), then the measured step's."""
        item = None
        if index >= self.warmup_queries:
            if index == self.warmup_queries:
                self._start_counts = self._radio_counts()
            item = self.items.start(self.sim.now)
        rid = self.client.request(self.sim.now, self.em_addr, codec.Code.GET, f"/e/{ENTITY}")
        self._pending[rid] = (index, item)
        self.client_driver.pump()

    def _next_query(self, index: int) -> None:
        """After query `index - 1`'s answer: the next query, a gap later; at a step's
        end the interferers take the next step's rate first (the study raised the
        Wi-Fi rate between steps of 50 queries)."""
        if index == self.warmup_queries + self.queries:
            self._end_counts = self._radio_counts()
            self.done = True
            self.sim.stop()
            return
        if index % self.queries == 0:
            for interferer in self.interferers:
                interferer.enter_step(self.sim.now, index // self.queries)
        self.sim.schedule(self.gap_s, self._query, index)

    def _on_event(self, event: object) -> None:
        rid = getattr(event, "request_id", None)
        if rid == self._create_request:
            self._created(event)
            return
        pending = self._pending.pop(rid, None) if isinstance(rid, int) else None
        if pending is None:
            return
        index, item = pending
        now = self.sim.now
        if item is None:  # an earlier step's query: measured by no one
            self._answered.clear()
        else:
            self.response_times.append(self._response_time(item.t_start, now))
            if isinstance(event, ResponseReceived) and event.response.code == codec.Code.CONTENT:
                text = event.response.payload.decode("utf-8", "replace")
                values = sum(1 for line in text.splitlines() if line and " error: " not in line)
                self.values.append(values)
                self.items.finish(item, now, DELIVERED, len(event.response.payload))
            else:
                self.values.append(0)
                self.items.finish(item, now, GIVEN_UP)
        self._next_query(index + 1)

    def _response_time(self, started: float, now: float) -> float:
        """A query's time, answered or failed: from the client's request to the EM's
        answer at the client; for a multicast entity, to the arrival of the last
        member's reply at the EM (the study's), or the answer when none replied."""
        mine = [e for e in self._answered if e.name == ENTITY]
        self._answered.clear()
        if self.em_settings.mode == "multicast" and mine and mine[-1].last_reply is not None:
            return mine[-1].last_reply - started
        return now - started

    def _created(self, event: object) -> None:
        ok = isinstance(event, ResponseReceived) and event.response.code == codec.Code.CREATED
        if ok:
            self._created_count += 1
            if self._created_count < len(self.to_create):
                self._create(attempt=False)  # the next entity of a nested query
                return
            self.created = True
            if self.query_start_s is not None and self.sim.now < self.query_start_s:
                self.sim.at(self.query_start_s, self._query, 0)
            else:
                self._query(0)
        elif self.create_attempts < CREATE_ATTEMPTS:
            self.sim.schedule(CREATE_RETRY_S, self._create)
        else:
            self.done = True
            self.sim.stop()  # no entity, no queries: the metrics say so

    # ---- measurements ---------------------------------------------------------------------

    def unfinished(self) -> bool:
        """The time limit came first: queries (a stepped sweep's measured step, all of
        them) were never made."""
        return not self.done

    def _radio_counts(self) -> tuple[int, int, int]:
        """Frames and bytes on the radio, and MAC retries, so far."""
        return self.radio.frames, self.radio.bytes, sum(m.counters.retries for m in self.macs)

    def metrics(self, measures: RunMeasures) -> dict[str, float | int]:
        g = len(self.members)
        answered = self.values
        n = len(answered)
        hops = self.member_hops
        out: dict[str, float | int] = {
            "group_size": g,
            "entity_created": int(self.created),
            "entity_create_attempts": self.create_attempts,
            "member_hops_mean": sum(hops) / len(hops) if hops else math.nan,
            "member_hops_max": max(hops) if hops else math.nan,
            "queries": n,
            "sweep_steps": self.steps,
            "member_reliability": sum(answered) / (n * g) if n and g else 0.0,
            "group_reliability": sum(1 for v in answered if v == g) / n if n else 0.0,
        }
        if self._end_counts is not None and n:
            out["radio_messages_per_query"] = (self._end_counts[0] - self._start_counts[0]) / n
            out["radio_bytes_per_query"] = (self._end_counts[1] - self._start_counts[1]) / n
            out["mac_retries_per_query"] = (self._end_counts[2] - self._start_counts[2]) / n
        # Every query's time, the failed ones' included (at the EM's answer, or the
        # client's give-up): dropping them would average the rare survivors.
        times = sorted(self.response_times)
        out["queries_failed"] = sum(1 for v in answered if v == 0)
        out["response_time_mean_s"] = sum(times) / len(times) if times else math.nan
        for label, q in (("min", 0.0), ("p25", 0.25), ("median", 0.5), ("p75", 0.75), ("max", 1.0)):
            out[f"response_time_{label}_s"] = _quantile(times, q)
        return out


def pick_members(
    net: RadioNetwork,
    count: int,
    hops_mean: float,
    rng: random.Random,
    hops_max: int | None = None,
) -> list[Node | L2Node]:
    """`count` members whose hop counts (in the least-ETX tree from the link model,
    which RPL's routes follow on stable links) average `hops_mean` and reach
    `hops_max` at most and at least once, as closely as the network allows: S6's
    Table 7 gives both per group size (EXPERIMENTS.md).

    One member is placed `hops_max` out, the others at the fewest hops; then, while
    the sum of hops is short of the mean's, the member on the lowest level that can
    move goes one level out (never past `hops_max`). So the hop counts stay as close
    together as the mean and the maximum allow, rather than the mean being met with
    members on the nearest and the farthest levels. Within a level the nodes are
    drawn by `rng`; the gateway and the uplink host are never members. Without
    `hops_max` the farthest level the network has is the bound, and nobody is
    placed there first."""
    tree = net.tree
    ids = list(net.hosts)
    gateway = net.ids("gateway")[0]
    levels: dict[int, list[str]] = {}
    for i, name in enumerate(ids):
        if name in (gateway, "uplink") or i >= len(tree.hops) or tree.hops[i] < 1:
            continue
        levels.setdefault(tree.hops[i], []).append(name)
    bound = max(levels) if hops_max is None else hops_max
    usable = sorted(h for h in levels if h <= bound)
    if sum(len(levels[h]) for h in usable) < count:
        raise ValueError(
            f"group-query: {count} members wanted within {bound} hops, the network has fewer"
        )
    if hops_max is not None and hops_max not in levels:
        raise ValueError(
            f"group-query: no node is {hops_max} hops from the gateway (the network's levels: "
            f"{', '.join(map(str, sorted(levels)))})"
        )
    taken = dict.fromkeys(usable, 0)
    if hops_max is not None:
        taken[hops_max] = 1
    left = count - sum(taken.values())
    for h in usable:  # the fewest hops first
        n = min(left, len(levels[h]) - taken[h])
        taken[h] += n
        left -= n
    goal = round(hops_mean * count)
    total = sum(h * n for h, n in taken.items())
    while total < goal:
        movable = [
            h
            for h in usable
            if taken[h] > (1 if h == hops_max else 0)
            and h + 1 in taken
            and taken[h + 1] < len(levels[h + 1])
        ]
        if not movable:
            break
        low = min(movable)
        taken[low] -= 1
        taken[low + 1] += 1
        total += 1
    chosen = []
    for h in usable:
        names = sorted(levels[h])
        rng.shuffle(names)
        chosen.extend(sorted(names[: taken[h]]))
    return [net.hosts[name] for name in chosen]


def _quantile(values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    if not values:
        return math.nan
    pos = q * (len(values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def _ignore(event: object) -> None:
    pass
