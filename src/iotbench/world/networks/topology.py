"""Topologies: where the nodes of a radio network are, what they are called, what they do.

A `Topology` is a plain value computed from the scenario's `network` section
before anything is simulated: node ids, positions (metres; z up) and floors,
optional per-link packet reception ratios, and roles. The kinds:

- `line`: `count` nodes `spacing_m` apart on the x axis (n0 first);
- `star`: n0 at the origin, the others evenly on a circle of `radius_m`;
- `grid`: `count` nodes row by row, `columns` per row, `spacing_m` apart
  (rows `row_spacing_m` apart, if given);
- `random`: uniform in `area_m` = [width, depth] (drawn by the network seed);
- `building`: a generated office building, or several side by side (see
  `building_positions`), whose candidate positions the network seed draws
  `count` nodes from;
- `file`: node ids and positions, and optional links with their packet
  reception ratios, read from a CSV or TOML file (see docs/scenarios.md).

Roles: one `gateway` (the border router, the root of routing), `producer`s,
and `client`, where the workload's client runs (by default the gateway).
Every node forwards (`forwarder`) when routing says so; a node may forward
while it produces.
"""

from __future__ import annotations

import csv
import io
import math
import random
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from iotbench.scenarios.errors import ScenarioError
from iotbench.scenarios.settings import required
from iotbench.scenarios.settings_types import (
    NetworkNodesSettings,
    NetworkRolesSettings,
    NetworkSettings,
)

Position = tuple[float, float, float]
#: A node or link of a layout file, as the scenario config holds it.
Row = dict[str, Any]

KINDS = ("pair", "line", "star", "grid", "random", "building", "file")
ROLES = ("gateway", "producer", "client", "member", "forwarder")


class TopologyError(ScenarioError):
    """A topology that cannot be built: names the file or key and the node."""


@dataclass(frozen=True)
class NodeSpec:
    id: str
    position: Position
    floor: int = 0
    building: int = 0  # which of a building topology's buildings (propagation.between)


@dataclass(frozen=True)
class Topology:
    kind: str
    nodes: tuple[NodeSpec, ...]
    roles: dict[str, tuple[str, ...]]
    link_prr: dict[tuple[str, str], float] = field(default_factory=dict)

    def index(self, node_id: str) -> int:
        for i, node in enumerate(self.nodes):
            if node.id == node_id:
                return i
        raise KeyError(node_id)

    def shifted(self, offset: tuple[float, ...]) -> Topology:
        """The same topology with every node moved by `offset` (metres)."""
        dx, dy, dz = (tuple(offset) + (0.0, 0.0, 0.0))[:3]
        return replace(
            self,
            nodes=tuple(
                replace(n, position=(n.position[0] + dx, n.position[1] + dy, n.position[2] + dz))
                for n in self.nodes
            ),
        )

    def renamed(self, prefix: str) -> Topology:
        """The same topology with `prefix` before every node id (a second network's)."""

        def name(node_id: str) -> str:
            return node_id if node_id == "uplink" else prefix + node_id

        return Topology(
            self.kind,
            tuple(replace(n, id=name(n.id)) for n in self.nodes),
            {role: tuple(name(i) for i in ids) for role, ids in self.roles.items()},
            {(name(a), name(b)): prr for (a, b), prr in self.link_prr.items()},
        )

    def ids(self, role: str) -> tuple[str, ...]:
        return self.roles.get(role, ())


# --------------------------------------------------------------------- building


@dataclass(frozen=True)
class BuildingPlan:
    """An office building: floors, each a corridor with a row of rooms on each side.

    The corridor runs along x through the middle of each floor; rooms of
    `room_width_m` x `room_depth_m` line both sides. Candidate node positions:
    `per_room` spots in each room (spread along its width, 1 m from its outer
    wall, at desk height) and one every `corridor_step_m` along the corridor
    (at ceiling height, where testbeds hang their corridor nodes). The
    defaults give 5 floors x (2 x 16 rooms x 2 + 8) = 360 positions.

    `buildings` of this plan stand in rows of `buildings_per_row` (absent: as
    many rows as buildings in a row, a square block), `building_gap_m` of open
    ground between neighbours (3GPP TR 38.901's average street width, 20 m).
    """

    floors: int = 5
    rooms_per_side: int = 16
    room_width_m: float = 4.0
    room_depth_m: float = 7.0
    corridor_width_m: float = 2.5
    floor_height_m: float = 3.5
    per_room: int = 2
    corridor_step_m: float = 8.0
    desk_height_m: float = 0.8
    buildings: int = 1
    buildings_per_row: int | None = None
    building_gap_m: float = 20.0

    @property
    def length_m(self) -> float:
        return self.rooms_per_side * self.room_width_m

    @property
    def depth_m(self) -> float:
        return 2 * self.room_depth_m + self.corridor_width_m


def building_positions(plan: BuildingPlan) -> list[tuple[Position, int, int]]:
    """Every candidate position with its floor and building, in a fixed order:
    building by building (row by row), floor by floor."""
    out: list[tuple[Position, int, int]] = []
    half = plan.corridor_width_m / 2
    centre_y = plan.depth_m / 2
    per_row = plan.buildings_per_row or math.ceil(math.sqrt(plan.buildings))
    for building in range(plan.buildings):
        x_at = (building % per_row) * (plan.length_m + plan.building_gap_m)
        y_at = (building // per_row) * (plan.depth_m + plan.building_gap_m)
        for floor in range(plan.floors):
            base_z = floor * plan.floor_height_m
            for side in (-1, 1):
                # y of the spots: 1 m from the room's outer wall.
                y = y_at + centre_y + side * (half + plan.room_depth_m - 1.0)
                for room in range(plan.rooms_per_side):
                    x0 = x_at + room * plan.room_width_m
                    for k in range(plan.per_room):
                        x = x0 + plan.room_width_m * (k + 1) / (plan.per_room + 1)
                        out.append(((x, y, base_z + plan.desk_height_m), floor, building))
            steps = int(plan.length_m // plan.corridor_step_m)
            for k in range(steps):
                x = x_at + (k + 0.5) * plan.corridor_step_m
                out.append(
                    ((x, y_at + centre_y, base_z + plan.floor_height_m - 0.3), floor, building)
                )
    return out


# --------------------------------------------------------------------- generators


def build_topology(
    network: NetworkSettings, rng: random.Random, where: str = "network"
) -> Topology:
    """The topology of a validated `network` section (not for kind = pair)."""
    kind = required(network.topology, "network.topology")
    nodes_cfg = required(network.nodes, "network.nodes")
    links: dict[tuple[str, str], float]
    if kind == "file":
        nodes, links = _from_layout(nodes_cfg)
        where = nodes_cfg.file or where
    else:
        nodes = _generate(kind, nodes_cfg, rng)
        links = {}
    _check_unique(nodes, where)
    area = nodes_cfg.area_m
    if area is not None:
        _check_area(nodes, area, nodes_cfg.file or where)
    roles = _roles(required(network.roles, "network.roles"), nodes, kind, rng, where)
    return Topology(kind, tuple(nodes), roles, links)


def _generate(kind: str, cfg: NetworkNodesSettings, rng: random.Random) -> list[NodeSpec]:
    count = cfg.count
    if kind == "line":
        step = cfg.spacing_m
        return [NodeSpec(f"n{i}", (i * step, 0.0, 0.0)) for i in range(count)]
    if kind == "star":
        r = cfg.radius_m
        others = count - 1
        ring = [
            (r * math.cos(2 * math.pi * k / others), r * math.sin(2 * math.pi * k / others), 0.0)
            for k in range(others)
        ]
        return [NodeSpec("n0", (0.0, 0.0, 0.0))] + [
            NodeSpec(f"n{i + 1}", p) for i, p in enumerate(ring)
        ]
    if kind == "grid":
        columns = cfg.columns or math.ceil(math.sqrt(count))
        step = cfg.spacing_m
        row_step = cfg.row_spacing_m or step
        return [
            NodeSpec(f"n{i}", ((i % columns) * step, (i // columns) * row_step, 0.0))
            for i in range(count)
        ]
    if kind == "random":
        width, depth = required(cfg.area_m, "network.nodes.area_m")[:2]
        return [
            NodeSpec(f"n{i}", (rng.uniform(0, width), rng.uniform(0, depth), 0.0))
            for i in range(count)
        ]
    # building: draw `count` of the candidate positions, kept in plan order.
    building = cfg.building
    plan = BuildingPlan(**building.as_kwargs()) if building is not None else BuildingPlan()
    candidates = building_positions(plan)
    if count > len(candidates):
        raise TopologyError(
            f"network.nodes.count: {count} nodes do not fit the building's "
            f"{len(candidates)} positions"
        )
    chosen = sorted(rng.sample(range(len(candidates)), count))
    return [NodeSpec(f"n{i}", *candidates[c]) for i, c in enumerate(chosen)]


def _check_unique(nodes: list[NodeSpec], where: str) -> None:
    seen: set[str] = set()
    for node in nodes:
        if node.id in seen:
            raise TopologyError(f"{where}: duplicate node id {node.id!r}")
        seen.add(node.id)
    if len(nodes) < 2:
        raise TopologyError(f"{where}: a network needs at least 2 nodes, got {len(nodes)}")


def _check_area(nodes: list[NodeSpec], area: Sequence[float], where: str) -> None:
    bounds = list(area) + [math.inf] * (3 - len(area))
    for node in nodes:
        for axis, (value, limit) in enumerate(zip(node.position, bounds, strict=True)):
            if not 0.0 <= value <= limit:
                raise TopologyError(
                    f"{where}: node {node.id!r} at {list(node.position)} is outside the area "
                    f"network.nodes.area_m = {list(area)} ({'xyz'[axis]} must be in [0, {limit:g}])"
                )


def _roles(
    cfg: NetworkRolesSettings, nodes: list[NodeSpec], kind: str, rng: random.Random, where: str
) -> dict[str, tuple[str, ...]]:
    ids = [n.id for n in nodes]
    known = set(ids)

    def check(node_id: str, key: str) -> str:
        if node_id not in known:
            sample = ", ".join(ids[:8]) + (" ..." if len(ids) > 8 else "")
            raise TopologyError(
                f"{where}.roles.{key}: unknown node id {node_id!r}; the nodes are {sample}"
            )
        return node_id

    gateway = cfg.gateway
    if gateway == "auto":
        # The centre of a star, the first of a line or grid; drawn elsewhere.
        gateway = ids[0] if kind in ("line", "star", "grid") else rng.choice(ids)
    elif gateway == "corner":
        # The node nearest the layout's origin: a building's west end, ground floor.
        gateway = min(nodes, key=lambda n: sum(c * c for c in n.position)).id
    elif gateway == "centre":
        # The node nearest the middle of the layout's ground (the first of equals).
        xs, ys, zs = zip(*(n.position for n in nodes), strict=True)
        middle = ((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2, min(zs))
        gateway = min(nodes, key=lambda n: math.dist(n.position, middle)).id
    check(gateway, "gateway")
    others = [i for i in ids if i != gateway]
    listed, count = cfg.producers, cfg.producer_count
    if listed and count is not None:
        raise TopologyError(f"{where}.roles: give producers or producer_count, not both")
    if listed:
        chosen = [check(p, "producers") for p in listed]
        if gateway in chosen:
            raise TopologyError(f"{where}.roles.producers: the gateway {gateway!r} is listed")
        if len(set(chosen)) != len(chosen):
            raise TopologyError(f"{where}.roles.producers: a node is listed twice")
    elif count is not None:
        if count > len(others):
            raise TopologyError(
                f"{where}.roles.producer_count: {count} producers, but only {len(others)} "
                "nodes besides the gateway"
            )
        chosen = sorted(rng.sample(others, count), key=ids.index)
    else:
        chosen = others
    client = cfg.client
    if client == "gateway":
        client = gateway
    elif client != "uplink":  # the uplink host is not a radio node
        client = check(client, "client")
    return {
        "gateway": (gateway,),
        "producer": tuple(chosen),
        "client": (client,),
        "forwarder": tuple(ids),
    }


# --------------------------------------------------------------------- files


def load_layout(path: Path, label: str) -> dict[str, list[Row]]:
    """A node file (CSV or TOML) as a table the scenario config can hold.

    CSV: a header row with `id`, `x`, `y` and optionally `z` and `floor`, then
    one node per row; a second CSV (`links_file`) may give links: `from`, `to`,
    `prr`. TOML: `[[node]]` tables (`id`, `position = [x, y, z]`, `floor`) and
    `[[link]]` tables (`from`, `to`, `prr`).
    """
    if not path.is_file():
        raise TopologyError(f"{label}: no such topology file")
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".toml":
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise TopologyError(f"{label}: invalid TOML: {exc}") from None
        unknown = set(doc) - {"node", "link"}
        if unknown:
            raise TopologyError(f"{label}: unknown key {sorted(unknown)[0]!r}; allowed: node, link")
        nodes = [_node_row(label, f"node[{i}]", row) for i, row in enumerate(doc.get("node", []))]
        links = [_link_row(label, f"link[{i}]", row) for i, row in enumerate(doc.get("link", []))]
    else:
        nodes = [_node_row(label, f"line {n}", row) for n, row in _csv_rows(text, label)]
        links = []
    return {"nodes": nodes, "links": links}


def load_links(path: Path, label: str) -> list[Row]:
    if not path.is_file():
        raise TopologyError(f"{label}: no such links file")
    text = path.read_text(encoding="utf-8")
    return [_link_row(label, f"line {n}", row) for n, row in _csv_rows(text, label)]


def _csv_rows(text: str, label: str) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None:
        raise TopologyError(f"{label}: empty file (expected a header row)")
    for n, row in enumerate(reader, start=2):
        if None in row:
            raise TopologyError(f"{label}: line {n}: more fields than the header has")
        yield n, {k.strip(): v.strip() for k, v in row.items() if v is not None}


def _number(label: str, where: str, key: str, value: Any) -> float:
    # `value`: a file's field as read, text from a CSV file or any TOML value.
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TopologyError(f"{label}: {where}: {key} = {value!r} is not a number") from None
    if not math.isfinite(number):
        raise TopologyError(f"{label}: {where}: {key} = {value!r} is not a finite number")
    return number


def _node_row(label: str, where: str, row: object) -> Row:
    if not isinstance(row, dict):
        raise TopologyError(f"{label}: {where}: expected a table")
    allowed = {"id", "x", "y", "z", "floor", "position"}
    unknown = set(row) - allowed
    if unknown:
        raise TopologyError(
            f"{label}: {where}: unknown key {sorted(unknown)[0]!r}; allowed: id, x, y, z, "
            "floor (CSV) or id, position, floor (TOML)"
        )
    node_id = str(row.get("id", "")).strip()
    if not node_id:
        raise TopologyError(f"{label}: {where}: missing node id")
    if "position" in row:
        pos = row["position"]
        if not isinstance(pos, list) or len(pos) not in (2, 3):
            raise TopologyError(
                f"{label}: {where} ({node_id}): position must be [x, y] or [x, y, z]"
            )
        xyz = [_number(label, where, "position", v) for v in pos] + [0.0] * (3 - len(pos))
    else:
        for key in ("x", "y"):
            if row.get(key) in (None, ""):
                raise TopologyError(f"{label}: {where} ({node_id}): missing {key}")
        xyz = [_number(label, where, k, row.get(k) or 0.0) for k in ("x", "y", "z")]
    floor = row.get("floor", 0) or 0
    floor_value = _number(label, where, "floor", floor)
    if floor_value != int(floor_value) or floor_value < 0:
        raise TopologyError(f"{label}: {where} ({node_id}): floor must be an integer >= 0")
    return {"id": node_id, "position": xyz, "floor": int(floor_value)}


def _link_row(label: str, where: str, row: object) -> Row:
    if not isinstance(row, dict):
        raise TopologyError(f"{label}: {where}: expected a table")
    unknown = set(row) - {"from", "to", "prr"}
    if unknown:
        raise TopologyError(
            f"{label}: {where}: unknown key {sorted(unknown)[0]!r}; allowed: from, to, prr"
        )
    for key in ("from", "to", "prr"):
        if row.get(key) in (None, ""):
            raise TopologyError(f"{label}: {where}: missing {key}")
    prr = _number(label, where, "prr", row["prr"])
    if not 0.0 <= prr <= 1.0:
        raise TopologyError(f"{label}: {where}: prr = {prr:g} is out of range: must be in [0, 1]")
    return {"from": str(row["from"]).strip(), "to": str(row["to"]).strip(), "prr": prr}


def _from_layout(
    cfg: NetworkNodesSettings,
) -> tuple[list[NodeSpec], dict[tuple[str, str], float]]:
    layout = required(cfg.layout, "network.nodes.layout")
    label = cfg.file or "network.nodes.layout"
    nodes = [NodeSpec(n["id"], tuple(n["position"]), n.get("floor", 0)) for n in layout["nodes"]]
    ids = {n.id for n in nodes}
    links: dict[tuple[str, str], float] = {}
    for link in layout.get("links", []):
        for end in ("from", "to"):
            if link[end] not in ids:
                raise TopologyError(
                    f"{label}: link {link['from']} -> {link['to']}: unknown node id {link[end]!r}"
                )
        if link["from"] == link["to"]:
            raise TopologyError(
                f"{label}: link {link['from']} -> {link['to']}: a link needs two nodes"
            )
        links[(link["from"], link["to"])] = link["prr"]
    return nodes, links
