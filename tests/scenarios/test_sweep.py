"""Sweep expansion: counts, order, seeds, filters, overrides and repetitions."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from iotbench.scenarios import (
    ScenarioError,
    expand,
    load_scenario,
    parse_filter,
    parse_override,
    parse_scenario,
)
from iotbench.scenarios.sweep import run_seed

EXAMPLE = Path(__file__).with_name("example.toml")


@pytest.fixture
def scenario():
    return load_scenario(EXAMPLE)


def test_product_of_axes_times_repetitions(scenario) -> None:
    runs = expand(scenario)
    assert len(runs) == 2 * 3 * 2
    # First axis outermost, repetition innermost.
    assert [(r.params["variant"], r.params["size"], r.repetition) for r in runs[:4]] == [
        ("con", 10, 0),
        ("con", 10, 1),
        ("con", 100, 0),
        ("con", 100, 1),
    ]
    assert list(runs[0].params) == ["variant", "size"]  # axis order
    assert runs[0].config["workload"]["object_size_bytes"] == 10
    assert runs[6].config["protocol"]["coap"]["type"] == "non"
    assert len({r.key for r in runs}) == len(runs)
    assert len({r.seed for r in runs}) == len(runs)


def test_seeds_are_stable_and_independent_of_selection(scenario) -> None:
    runs = expand(scenario)
    again = expand(load_scenario(EXAMPLE))
    assert [(r.key, r.seed) for r in runs] == [(r.key, r.seed) for r in again]
    # Filtering (or any other order of execution) does not change a run's seed.
    subset = expand(scenario, filters={"size": ["100"]})
    by_key = {r.key: r.seed for r in runs}
    assert all(by_key[r.key] == r.seed for r in subset)
    # Pinned: a change here silently changes every stored result's seed.
    # seed = first 8 bytes of sha256([base seed, name, sorted params, repetition]) >> 1
    text = json.dumps([7, "example", [["size", 10], ["variant", "con"]], 0], separators=(",", ":"))
    expected = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1
    assert run_seed(7, "example", {"variant": "con", "size": 10}, 0) == expected
    assert expected == 765108530392911569
    assert 0 <= runs[0].seed < 2**63


def test_seed_depends_on_base_seed_and_params(scenario) -> None:
    base = run_seed(7, "example", {"variant": "con", "size": 10}, 0)
    assert run_seed(8, "example", {"variant": "con", "size": 10}, 0) != base
    assert run_seed(7, "example", {"variant": "non", "size": 10}, 0) != base
    assert run_seed(7, "example", {"size": 10, "variant": "con"}, 0) == base  # sorted params
    seeded = expand(scenario, overrides={"seed": 8})
    assert seeded[0].seed == run_seed(8, "example", {"variant": "con", "size": 10}, 0)


def test_filters(scenario) -> None:
    runs = expand(scenario, filters={"variant": ["non"], "size": ["10", "1000"]})
    assert {(r.params["variant"], r.params["size"]) for r in runs} == {("non", 10), ("non", 1000)}
    assert len(runs) == 4
    # Typed values work too (the API, not only the CLI's strings).
    assert len(expand(scenario, filters={"size": [100]})) == 4


def test_filter_errors(scenario) -> None:
    with pytest.raises(
        ScenarioError,
        match=r"--filter sise: no such axis \(did you mean 'size'\?\); "
        r"axes: variant, size",
    ):
        expand(scenario, filters={"sise": ["10"]})
    with pytest.raises(
        ScenarioError, match=r"--filter size=11: no such value; size is one of 10, 100, 1000"
    ):
        expand(scenario, filters={"size": ["11"]})


def test_parse_filter_and_override() -> None:
    assert parse_filter("variant=a,b") == ("variant", ["a", "b"])
    assert parse_override("workload.items=50") == ("workload.items", 50)
    assert parse_override("network.link.delay_s=0.5") == ("network.link.delay_s", 0.5)
    assert parse_override('protocol.coap.type="non"') == ("protocol.coap.type", "non")
    assert parse_override("protocol.coap.type=non") == ("protocol.coap.type", "non")
    assert parse_override("x=[1, 2]") == ("x", [1, 2])
    for bad in ("variant", "=a", "variant="):
        with pytest.raises(ScenarioError, match="--filter"):
            parse_filter(bad)
    with pytest.raises(ScenarioError, match="--set"):
        parse_override("novalue")


def test_overrides_change_the_base(scenario) -> None:
    runs = expand(scenario, overrides={"workload.items": 5, "protocol.coap.ack_timeout_s": 1})
    assert all(r.config["workload"]["items"] == 5 for r in runs)
    assert all(r.config["protocol"]["coap"]["ack_timeout_s"] == 1.0 for r in runs)
    # Presets still apply over the overridden base.
    assert {r.config["protocol"]["coap"]["type"] for r in runs} == {"con", "non"}
    # A different config is a different run key, but the same seed.
    plain = expand(scenario)
    assert runs[0].key != plain[0].key and runs[0].seed == plain[0].seed


def test_override_errors(scenario) -> None:
    with pytest.raises(
        ScenarioError,
        match=r"--set workload\.itemz: not a scenario key "
        r"\(did you mean 'workload\.items'\?\)",
    ):
        expand(scenario, overrides={"workload.itemz": 5})
    with pytest.raises(
        ScenarioError,
        match=r"example\.toml: workload\.items: 0 is out of range: "
        r"must be >= 1 \(set by --set\)",
    ):
        expand(scenario, overrides={"workload.items": 0})
    with pytest.raises(
        ScenarioError,
        match=r"--set workload\.object_size_bytes: the axis 'size' "
        r"sweeps workload\.object_size_bytes; use --filter size=VALUE",
    ):
        expand(scenario, overrides={"workload.object_size_bytes": 5})
    with pytest.raises(ScenarioError, match="--set name: only seed, repetitions and keys under"):
        expand(scenario, overrides={"name": "other"})


def test_repetitions(scenario) -> None:
    assert len(expand(scenario, reps=1)) == 6
    assert len(expand(scenario, reps=5)) == 30
    assert len(expand(scenario, overrides={"repetitions": 3})) == 18
    with pytest.raises(ScenarioError, match="must be >= 1"):
        expand(scenario, reps=0)


def test_all_combinations_are_validated_even_when_filtered() -> None:
    text = EXAMPLE.read_text().replace(
        '[axes.variant.non]\nprotocol = { coap = { type = "non" } }',
        '[axes.variant.non]\nprotocol = { coap = { type = "non" } }\n'
        '[axes.variant.bad]\nworkload = { kind = "periodic" }',
    )
    scenario = parse_scenario(text, label="example.toml")
    with pytest.raises(
        ScenarioError, match=r"workload\.interval_s: .*\(in the run variant=bad, size=10\)"
    ):
        expand(scenario, filters={"variant": ["con"]})


def test_scenario_without_axes() -> None:
    text = 'name = "single"\ndescription = "d"\n[workload]\nkind = "sequential"\n[protocol]\nname = "coap"\n'
    runs = expand(parse_scenario(text))
    assert len(runs) == 1 and runs[0].params == {} and runs[0].label() == "rep=0"
