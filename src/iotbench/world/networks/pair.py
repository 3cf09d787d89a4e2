"""A pair network (`network.topology = "pair"`, or none): two nodes, `client`
(role client) and `server` (role producer), joined by one point-to-point link
whose two directions carry their own impairments (`to_server`, `to_client`;
`both` applies to each direction with independent random streams). The nodes
are IP hosts, or (network.link.layer = "ieee802154") nodes that put their
protocol straight into 802.15.4 frames. Every other topology is a radio
network (radio.py).
"""

from __future__ import annotations

import random

from iotbench.metrics.observers import Observers
from iotbench.net import ieee802154
from iotbench.net.impairments import (
    BernoulliLoss,
    ConstantDelay,
    GilbertElliottLoss,
    Impairment,
    NormalDelay,
    Outages,
    Redraw,
    UniformDelay,
    random_outages,
)
from iotbench.net.l2 import L2Interface, L2Node
from iotbench.net.link import PointToPointLink
from iotbench.net.node import Interface, Node
from iotbench.scenarios.settings_types import (
    NetworkImpairDirectionDelayConstantSettings,
    NetworkImpairDirectionDelayNoneSettings,
    NetworkImpairDirectionDelayNormalSettings,
    NetworkImpairDirectionDelayUniformSettings,
    NetworkImpairDirectionLossBernoulliSettings,
    NetworkImpairDirectionLossGilbertElliottSettings,
    NetworkImpairDirectionLossNoneSettings,
    NetworkImpairDirectionOutagesNoneSettings,
    NetworkImpairDirectionOutagesRandomItemsSettings,
    NetworkImpairDirectionOutagesRandomSettings,
    NetworkImpairDirectionOutagesScheduledSettings,
    NetworkImpairDirectionSettings,
    NetworkImpairSettings,
    NetworkSettings,
    RedrawSettings,
)
from iotbench.sim import RngStreams
from iotbench.sim.clock import Clock
from iotbench.world.networks.base import ItemFollower, PairNetwork, Streams

ADDRESSES = {4: ("10.0.0.1", "10.0.0.2"), 6: ("fd00::1", "fd00::2")}
DIRECTIONS = ("to_server", "to_client")

# The models of network.impair's parts (settings_types.py), one type per `model`.
LossSpec = (
    NetworkImpairDirectionLossNoneSettings
    | NetworkImpairDirectionLossBernoulliSettings
    | NetworkImpairDirectionLossGilbertElliottSettings
)
DelaySpec = (
    NetworkImpairDirectionDelayNoneSettings
    | NetworkImpairDirectionDelayConstantSettings
    | NetworkImpairDirectionDelayUniformSettings
    | NetworkImpairDirectionDelayNormalSettings
)
OutagesSpec = (
    NetworkImpairDirectionOutagesNoneSettings
    | NetworkImpairDirectionOutagesScheduledSettings
    | NetworkImpairDirectionOutagesRandomSettings
    | NetworkImpairDirectionOutagesRandomItemsSettings
)
LossModel = BernoulliLoss | GilbertElliottLoss
DelayModel = ConstantDelay | UniformDelay | NormalDelay


def build_two_node_network(
    sim: Clock, network: NetworkSettings, observers: Observers
) -> PairNetwork:
    """The pair network of `network` (a scenario's section, as settings). Its
    per-item impairments (random-items outages, parameters redrawn every n items)
    are its item_followers: Network.follow_items connects them to a run's items."""
    link_cfg = network.link
    client: Node | L2Node
    server: Node | L2Node
    client_if: Interface | L2Interface
    server_if: Interface | L2Interface
    if link_cfg.layer == "ieee802154":
        # Nodes whose protocol (NDN) goes straight into 802.15.4 frames.
        l2_client, l2_server = L2Node(sim, "client", 1), L2Node(sim, "server", 2)
        client_if = l2_client.add_interface(link_cfg.mtu_bytes)
        server_if = l2_server.add_interface(link_cfg.mtu_bytes)
        client, server = l2_client, l2_server
        overhead = ieee802154.PHY_OVERHEAD_BYTES
    else:
        client_addr, server_addr = ADDRESSES[network.ip_version]
        ip_client, ip_server = Node(sim, "client"), Node(sim, "server")
        client_if = ip_client.add_interface(client_addr, link_cfg.mtu_bytes)
        server_if = ip_server.add_interface(server_addr, link_cfg.mtu_bytes)
        client, server = ip_client, ip_server
        overhead = 0
    # The network draws from streams of its own seed (network.seed), so runs that
    # differ only in protocol meet the same losses, delays and outages.
    streams: Streams = RngStreams(network.seed).stream if network.seed is not None else sim.rng
    impair = network.impair
    both = impair.both if impair is not None else None
    # An outage takes the whole link down: under `both`, the two directions share one.
    followers: list[ItemFollower] = []
    shared_outages = _outages(sim, streams, "link/both", _outages_of(both), followers)
    # (section, part, key) -> the models whose `key` is redrawn, with its redraw table
    redraw_targets: dict[tuple[str, str, str], list[tuple[object, RedrawSettings]]] = {}
    impairments = {}
    for direction in DIRECTIONS:
        own = _direction(impair, direction)
        name = f"link/{direction}"
        own_loss, own_delay = _loss_of(own), _delay_of(own)
        loss_spec = own_loss or _loss_of(both)
        delay_spec = own_delay or _delay_of(both)
        loss = _loss(streams, name, loss_spec)
        delay = _delay(streams, name, delay_spec)
        own_outages = _outages_of(own)
        outages = (
            _outages(sim, streams, name, own_outages, followers)
            if own_outages is not None
            else shared_outages
        )
        impairments[direction] = Impairment(loss=loss, delay=delay, outages=outages)
        parts: tuple[tuple[str, object, LossSpec | DelaySpec | None, bool], ...] = (
            ("loss", loss, loss_spec, own_loss is not None),
            ("delay", delay, delay_spec, own_delay is not None),
        )
        for part, model, spec, owned in parts:
            section = direction if owned else "both"
            for key in spec.keys() if spec is not None else ():
                value = getattr(spec, key)
                if isinstance(value, RedrawSettings):
                    redraw_targets.setdefault((section, part, key), []).append((model, value))
    # A parameter redrawn under `both` takes the same value in each direction.
    redraws = []
    for (section, part, key), targets in redraw_targets.items():
        value = targets[0][1]
        redraw = Redraw(
            streams(f"link/{section}/{part}/{key}/redraw"),
            [model for model, _ in targets],
            key,
            *value.uniform,
        )
        _schedule_redraw(sim, redraw, value, followers)
        redraws.append(redraw)
    link = PointToPointLink(
        sim,
        client_if,
        server_if,
        rate_bps=link_cfg.rate_bps,
        delay_s=link_cfg.delay_s,
        queue_packets=link_cfg.queue_packets,
        impair_a_to_b=impairments["to_server"],
        impair_b_to_a=impairments["to_client"],
        observers=observers,
        overhead_bytes=overhead,
    )
    return PairNetwork(
        hosts={"client": client, "server": server},
        roles={"client": ("client",), "producer": ("server",)},
        interfaces={"client": client_if, "server": server_if},
        redraws=redraws,
        item_followers=followers,
        link=link,
    )


def _direction(
    impair: NetworkImpairSettings | None, direction: str
) -> NetworkImpairDirectionSettings | None:
    """The impairments of one direction (to_server, to_client), if it has its own."""
    if impair is None:
        return None
    return impair.to_server if direction == "to_server" else impair.to_client


# One part of a direction's impairments, if it has one.


def _loss_of(direction: NetworkImpairDirectionSettings | None) -> LossSpec | None:
    return direction.loss if direction is not None else None


def _delay_of(direction: NetworkImpairDirectionSettings | None) -> DelaySpec | None:
    return direction.delay if direction is not None else None


def _outages_of(direction: NetworkImpairDirectionSettings | None) -> OutagesSpec | None:
    return direction.outages if direction is not None else None


def _initial(value: float | RedrawSettings) -> float:
    # A redrawn parameter gets its first value when its schedule first fires (at
    # the first item or at t=0); until then the low end is a placeholder.
    return value.uniform[0] if isinstance(value, RedrawSettings) else value


def _loss(streams: Streams, name: str, spec: LossSpec | None) -> LossModel | None:
    if spec is None or isinstance(spec, NetworkImpairDirectionLossNoneSettings):
        return None
    rng = streams(f"{name}/loss")
    if isinstance(spec, NetworkImpairDirectionLossBernoulliSettings):
        return BernoulliLoss(rng, _initial(spec.p))
    return GilbertElliottLoss(
        rng,
        _initial(spec.p_good_to_bad),
        _initial(spec.p_bad_to_good),
        _initial(spec.loss_good),
        _initial(spec.loss_bad),
    )


def _delay(streams: Streams, name: str, spec: DelaySpec | None) -> DelayModel | None:
    if spec is None or isinstance(spec, NetworkImpairDirectionDelayNoneSettings):
        return None
    rng = streams(f"{name}/delay")
    if isinstance(spec, NetworkImpairDirectionDelayConstantSettings):
        return ConstantDelay(_initial(spec.s))
    if isinstance(spec, NetworkImpairDirectionDelayUniformSettings):
        return UniformDelay(rng, _initial(spec.low_s), _initial(spec.high_s))
    return NormalDelay(rng, _initial(spec.mean_s), _initial(spec.stddev_s))


def _outages(
    sim: Clock,
    streams: Streams,
    name: str,
    spec: OutagesSpec | None,
    followers: list[ItemFollower],
) -> Outages:
    if spec is None or isinstance(spec, NetworkImpairDirectionOutagesNoneSettings):
        return Outages()
    rng = streams(f"{name}/outages")
    if isinstance(spec, NetworkImpairDirectionOutagesScheduledSettings):
        outages = Outages()
        for start in spec.start_s:
            outages.add(start, spec.duration_s)
        return outages
    if isinstance(spec, NetworkImpairDirectionOutagesRandomSettings):
        return random_outages(rng, spec.count, spec.duration_s, spec.window_s)
    # random-items: each outage begins when a randomly chosen item starts, so every
    # protocol meets the same number of outages however fast it works.
    outages = Outages()
    followers.append(OutagesAtItems(sim, rng, outages, spec.count, spec.duration_s))
    return outages


class OutagesAtItems:
    """random-items outages: `count` of the run's items, drawn once the workload has
    said how many it starts, each begin an outage of `duration_s` as they start."""

    def __init__(
        self, sim: Clock, rng: random.Random, outages: Outages, count: int, duration_s: float
    ) -> None:
        self.sim, self.rng, self.outages = sim, rng, outages
        self.count, self.duration_s = count, duration_s
        self.chosen: set[int] = set()

    def plan(self, total_items: int) -> None:
        self.chosen = set(self.rng.sample(range(total_items), min(self.count, total_items)))

    def item_started(self, index: int) -> None:
        if index in self.chosen:
            self.outages.add(self.sim.now, self.duration_s)


class RedrawEveryItems:
    """A parameter redrawn when every `every`-th item (0, every, 2 every, ...) starts."""

    def __init__(self, redraw: Redraw, every: int) -> None:
        self.redraw, self.every = redraw, every

    def plan(self, total_items: int) -> None:
        pass

    def item_started(self, index: int) -> None:
        if index % self.every == 0:
            self.redraw.fire()


def _schedule_redraw(
    sim: Clock, redraw: Redraw, value: RedrawSettings, followers: list[ItemFollower]
) -> None:
    if value.every_items is not None:
        followers.append(RedrawEveryItems(redraw, value.every_items))
    else:
        every_s = value.every_s
        assert every_s is not None  # a redraw table has one of the two (fields._one_schedule)

        def tick() -> None:
            redraw.fire()
            sim.schedule(every_s, tick)

        sim.at(sim.now, tick)
