"""Topologies: generated layouts, the building, node files, roles, and their errors."""

from __future__ import annotations

import math
import random
import re

import pytest

from iotbench.cli import main
from iotbench.scenarios import ScenarioError, expand, parse_scenario
from iotbench.scenarios.fields import validate
from iotbench.scenarios.schema import NETWORK
from iotbench.scenarios.settings import network_settings
from iotbench.world.networks.topology import (
    BuildingPlan,
    TopologyError,
    build_topology,
    building_positions,
)


def topology(text: dict, seed: int = 1):
    network = validate(NETWORK, {**text, "seed": seed})
    return build_topology(network_settings(network), random.Random(seed))


def test_line_star_grid_positions_and_ids():
    line = topology({"topology": "line", "nodes": {"count": 4, "spacing_m": 25.0}})
    assert [n.id for n in line.nodes] == ["n0", "n1", "n2", "n3"]
    assert [n.position for n in line.nodes] == [(25.0 * i, 0.0, 0.0) for i in range(4)]
    star = topology({"topology": "star", "nodes": {"count": 5, "radius_m": 10.0}})
    assert star.nodes[0].position == (0.0, 0.0, 0.0)
    assert all(math.dist(n.position, (0, 0, 0)) == pytest.approx(10.0) for n in star.nodes[1:])
    grid = topology({"topology": "grid", "nodes": {"count": 7, "columns": 3, "spacing_m": 5.0}})
    assert [n.position[:2] for n in grid.nodes] == [
        (0, 0), (5, 0), (10, 0), (0, 5), (5, 5), (10, 5), (0, 10)
    ]  # fmt: skip
    square = topology({"topology": "grid", "nodes": {"count": 9, "spacing_m": 1.0}})
    assert square.nodes[-1].position[:2] == (2.0, 2.0)  # a square grid without `columns`


def test_random_nodes_lie_in_the_area_and_follow_the_seed():
    spec = {"topology": "random", "nodes": {"count": 50, "area_m": [100.0, 40.0]}}
    a, b, c = topology(spec, 1), topology(spec, 1), topology(spec, 2)
    assert a == b and a != c
    assert all(0 <= n.position[0] <= 100 and 0 <= n.position[1] <= 40 for n in a.nodes)


def test_the_building_has_floors_rooms_and_corridors():
    plan = BuildingPlan()
    spots = building_positions(plan)
    assert len(spots) == 360  # about 350 candidate positions
    assert sorted({floor for _, floor, _ in spots}) == [0, 1, 2, 3, 4]
    assert {building for _, _, building in spots} == {0}
    assert all(0 <= p[0] <= plan.length_m and 0 <= p[1] <= plan.depth_m for p, _, _ in spots)
    corridor = [p for p, _, _ in spots if p[1] == plan.depth_m / 2]
    assert len(corridor) == 5 * 8  # one every 8 m of the 64 m corridor, on each floor
    for position, floor, _ in spots:  # each spot is on its floor
        assert floor * plan.floor_height_m <= position[2] < (floor + 1) * plan.floor_height_m
    chosen = topology({"topology": "building", "nodes": {"count": 51}})
    assert len(chosen.nodes) == 51
    assert {n.position for n in chosen.nodes} <= {p for p, _, _ in spots}
    assert chosen != topology({"topology": "building", "nodes": {"count": 51}}, seed=2)


def test_buildings_stand_side_by_side_in_rows_a_street_apart():
    one = building_positions(BuildingPlan())
    plan = BuildingPlan(buildings=5, building_gap_m=20.0)  # 3 in a row: rows of 3 and 2
    spots = building_positions(plan)
    assert len(spots) == 5 * 360
    # Building by building, each the single building moved by its place in the block.
    for b in range(5):
        dx = (b % 3) * (plan.length_m + 20.0)
        dy = (b // 3) * (plan.depth_m + 20.0)
        own = spots[b * 360 : (b + 1) * 360]
        assert {building for _, _, building in own} == {b}
        assert [floor for _, floor, _ in own] == [floor for _, floor, _ in one]
        moved = [(p[0] + dx, p[1] + dy, p[2]) for p, _, _ in one]
        assert [p for p, _, _ in own] == [pytest.approx(p, abs=1e-9) for p in moved]
    # The nearest spots of two neighbouring buildings: across the street.
    a = [p for p, _, building in spots if building == 0]
    b = [p for p, _, building in spots if building == 3]
    assert min(math.dist(p, q) for p in a for q in b) == pytest.approx(20.0 + 2 * 1.0)
    rows = BuildingPlan(buildings=4, buildings_per_row=4)
    assert {p[1] for p, _, _ in building_positions(rows)} == {p[1] for p, _, _ in one}
    # As a topology: nodes know their building; more nodes than one building holds.
    campus = topology(
        {"topology": "building", "nodes": {"count": 1000, "building": {"buildings": 3}}}
    )
    assert {n.building for n in campus.nodes} == {0, 1, 2}
    # The gateway in the middle of the block's ground.
    grid = topology({"topology": "grid", "nodes": {"count": 9}, "roles": {"gateway": "centre"}})
    assert grid.roles["gateway"] == ("n4",)
    block = topology(
        {"topology": "building", "nodes": {"count": 3000, "building": {"buildings": 9}},
         "roles": {"gateway": "centre"}}
    )  # fmt: skip
    (gateway,) = (n for n in block.nodes if n.id == block.roles["gateway"][0])
    assert gateway.building == 4 and gateway.floor == 0
    with pytest.raises(TopologyError, match="1081 nodes do not fit the building's 1080"):
        topology({"topology": "building", "nodes": {"count": 1081, "building": {"buildings": 3}}})


def test_roles_gateway_producers_client():
    t = topology({"topology": "line", "nodes": {"count": 4}})
    assert t.roles["gateway"] == ("n0",) and t.roles["client"] == ("n0",)
    assert t.roles["producer"] == ("n1", "n2", "n3")
    t = topology(
        {"topology": "line", "nodes": {"count": 4}, "roles": {"gateway": "n2", "producers": ["n0"]}}
    )
    assert (t.roles["gateway"], t.roles["producer"]) == (("n2",), ("n0",))
    t = topology(
        {"topology": "random", "nodes": {"count": 20, "area_m": [50.0, 50.0]},
         "roles": {"producer_count": 5}}
    )  # fmt: skip
    assert len(t.roles["producer"]) == 5 and t.roles["gateway"][0] not in t.roles["producer"]


@pytest.mark.parametrize(
    ("roles", "message"),
    [
        ({"gateway": "n9"}, "roles.gateway: unknown node id 'n9'"),
        ({"producers": ["n1", "x"]}, "roles.producers: unknown node id 'x'"),
        ({"producers": ["n0"]}, "the gateway 'n0' is listed"),
        ({"producers": ["n1", "n1"]}, "listed twice"),
        ({"producer_count": 9}, "9 producers, but only 3 nodes"),
        ({"producers": ["n1"], "producer_count": 1}, "not both"),
        ({"client": "zz"}, "roles.client: unknown node id 'zz'"),
    ],
)
def test_role_errors_name_the_key_and_the_node(roles, message):
    with pytest.raises(TopologyError, match=message):
        topology({"topology": "line", "nodes": {"count": 4}, "roles": roles})


# ---------------------------------------------------------------- files through scenarios

SCENARIO = """
name = "f"
description = "a file topology"
[network]
topology = "file"
[network.nodes]
file = "{file}"
{extra}
[workload]
kind = "sequential"
[protocol]
name = "coap"
"""


def runs_of(tmp_path, file: str, extra: str = ""):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(file=file, extra=extra))
    from iotbench.scenarios import load_scenario

    return expand(load_scenario(path))


def test_csv_nodes_and_links_end_up_in_the_run_config(tmp_path):
    (tmp_path / "n.csv").write_text("id,x,y,z,floor\ngw,0,0,0,0\na,10,0,0,0\nb,20,5,3.5,1\n")
    (tmp_path / "l.csv").write_text("from,to,prr\ngw,a,0.9\na,b,1\n")
    (run,) = runs_of(tmp_path, "n.csv", 'links_file = "l.csv"')
    layout = run.config["network"]["nodes"]["layout"]
    assert [n["id"] for n in layout["nodes"]] == ["gw", "a", "b"]
    assert layout["nodes"][2] == {"id": "b", "position": [20.0, 5.0, 3.5], "floor": 1}
    assert layout["links"] == [
        {"from": "gw", "to": "a", "prr": 0.9},
        {"from": "a", "to": "b", "prr": 1.0},
    ]
    t = build_topology(network_settings(run.config["network"]), random.Random(0))
    assert t.link_prr == {("gw", "a"): 0.9, ("a", "b"): 1.0}
    # The file's content is part of the run: another file, another config hash.
    (tmp_path / "l.csv").write_text("from,to,prr\ngw,a,0.5\n")
    (other,) = runs_of(tmp_path, "n.csv", 'links_file = "l.csv"')
    assert other.config_hash != run.config_hash


def test_toml_nodes_and_links(tmp_path):
    (tmp_path / "t.toml").write_text(
        '[[node]]\nid = "gw"\nposition = [0, 0]\n[[node]]\nid = "s"\nposition = [5, 5, 1]\n'
        '[[link]]\nfrom = "s"\nto = "gw"\nprr = 0.75\n'
    )
    (run,) = runs_of(tmp_path, "t.toml")
    t = build_topology(network_settings(run.config["network"]), random.Random(0))
    assert [(n.id, n.position) for n in t.nodes] == [("gw", (0, 0, 0)), ("s", (5, 5, 1))]
    assert t.link_prr == {("s", "gw"): 0.75}


@pytest.mark.parametrize(
    ("files", "extra", "message"),
    [
        ({"n.csv": "id,x,y\ngw,0,0\na,1,zz\n"}, "", "n.csv: line 3: y = 'zz' is not a number"),
        ({"n.csv": "id,x\ngw,0\n"}, "", "n.csv: line 2 (gw): missing y"),
        ({"n.csv": "id,x,y,w\ngw,0,0,1\n"}, "", "unknown key 'w'"),
        ({"n.csv": ""}, "", "empty file"),
        ({}, "", "n.csv: no such topology file"),
        ({"n.csv": "id,x,y\ngw,0,0\na,5,5\n", "l.csv": "from,to,prr\ngw,a,2\n"},
         'links_file = "l.csv"', "prr = 2 is out of range"),
        ({"n.toml": '[[node]]\nid = "gw"\nposition = [0]\n'}, "", "position must be"),
        ({"n.toml": "[[nodes]]\n"}, "", "unknown key 'nodes'"),
        ({"n.toml": "[[node\n"}, "", "invalid TOML"),
    ],
)  # fmt: skip
def test_file_errors_name_the_file_the_line_and_the_key(tmp_path, files, extra, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    name = next((n for n in files if n.startswith("n.")), "n.csv")
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        runs_of(tmp_path, name, extra)


@pytest.mark.parametrize(
    ("nodes", "links", "message"),
    [
        ("id,x,y\ngw,0,0\na,5,0\na,9,0\n", None, "s.toml: n.csv: duplicate node id 'a'"),
        ("id,x,y\ngw,0,0\na,5,0\n", "from,to,prr\ngw,b,0.5\n", "gw -> b: unknown node id 'b'"),
        ("id,x,y\ngw,0,0\na,5,0\n", "from,to,prr\na,a,0.5\n", "a link needs two nodes"),
        ("id,x,y\ngw,0,0\na,500,0\n", None, "'a' at \\[500.0, 0.0, 0.0\\] is outside the area"),
        ("id,x,y\ngw,0,0\n", None, "at least 2 nodes"),
    ],
)
def test_topology_errors_stop_the_run_command_before_any_run(
    tmp_path, capsys, nodes, links, message
):
    (tmp_path / "n.csv").write_text(nodes)
    extra = "area_m = [100.0, 100.0]"
    if links is not None:
        (tmp_path / "l.csv").write_text(links)
        extra += '\nlinks_file = "l.csv"'
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(file="n.csv", extra=extra))
    code = main(["run", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and re.search(message, err), err
    assert "Traceback" not in err
    assert not (tmp_path / "out" / "results.duckdb").exists()


def test_radio_keys_are_refused_on_a_pair_and_link_keys_on_a_radio():
    with pytest.raises(ScenarioError, match="network.radio: only radio networks have it"):
        expand(
            parse_scenario(
                'name = "x"\ndescription = "d"\n[network.radio]\nchannel = 11\n'
                '[workload]\nkind = "sequential"\n[protocol]\nname = "coap"\n'
            )
        )
    with pytest.raises(ScenarioError, match="network.link: a radio network has no point"):
        expand(
            parse_scenario(
                'name = "x"\ndescription = "d"\n[network]\ntopology = "line"\n'
                "[network.link]\nrate_bps = 1\n"
                '[workload]\nkind = "sequential"\n[protocol]\nname = "coap"\n'
            )
        )


# ---------------------------------------------------------------- the picture


def test_the_topology_command_draws_the_network(tmp_path, capsys):
    out = tmp_path / "net.png"
    code = main(["topology", "docs/examples/multihop-coap.toml", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0 and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "30 nodes" in printed and "routing tree depth" in printed


def test_the_topology_command_refuses_a_pair(tmp_path, capsys):
    code = main(["topology", "s3-robustness", "--out", str(tmp_path / "x.png")])
    assert code == 2 and "not a radio network" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_a_corner_gateway_is_the_node_nearest_the_layouts_origin():
    chosen = topology(
        {"topology": "building", "nodes": {"count": 51}, "roles": {"gateway": "corner"}}
    )
    (gateway,) = chosen.roles["gateway"]
    nearest = min(chosen.nodes, key=lambda n: math.dist(n.position, (0.0, 0.0, 0.0)))
    assert gateway == nearest.id
    assert gateway not in chosen.roles["producer"]
