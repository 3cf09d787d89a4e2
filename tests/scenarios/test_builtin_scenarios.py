"""The built-in scenarios load and expand; docs/scenarios.md agrees with the schema."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iotbench.scenarios import (
    ScenarioError,
    docgen,
    expand,
    list_builtin,
    load_scenario,
    parse_scenario,
)

DOCS = Path(__file__).parents[2] / "docs" / "scenarios.md"


def test_builtins_are_listed() -> None:
    names = list_builtin()
    assert {"s1-object-download", "s2-coap-vs-http", "s3-robustness"} <= set(names)
    assert names == sorted(names)


@pytest.mark.parametrize("name", list_builtin())
def test_builtin_loads_and_expands(name: str) -> None:
    scenario = load_scenario(name)
    assert scenario.name == name
    assert scenario.source == f"builtin:{name}"
    assert expand(scenario)


def test_quick_versions_are_a_subset_of_the_full_runs() -> None:
    from iotbench.runner.reproduce import study_plan

    full = {step.scenario.name: step.runs for step in study_plan()}
    for step in study_plan(quick=True):
        params = {tuple(sorted(r.params.items())) for r in full[step.scenario.name]}
        assert step.runs and len(step.runs) <= len(full[step.scenario.name])
        assert {tuple(sorted(r.params.items())) for r in step.runs} <= params
    quick = {step.scenario.name: step.runs for step in study_plan(["S6"], quick=True)}
    # [quick] filter: s6-interference keeps 3 of 7 loads, 2 of 3 group sizes.
    assert {r.params["wifi_mbps"] for r in quick["s6-interference"]} == {"0", "10", "28.5"}
    assert len(quick["s6-interference"]) == 3 * 2 * 2


def test_a_quick_filter_naming_no_axis_is_a_clear_error() -> None:
    text = load_scenario("s1-object-download").text
    text = text.replace("[quick]", "[quick]\nfilter = { nope = [1] }", 1)
    scenario = parse_scenario(text, "q.toml")
    with pytest.raises(ScenarioError, match="nope: no such axis"):
        expand(scenario, filters=scenario.quick["filter"])


def test_unknown_name_lists_builtins() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario("s3-robustnes")
    msg = str(info.value)
    assert "unknown scenario 's3-robustnes' (did you mean 's3-robustness'?)" in msg
    assert "s1-object-download" in msg


def test_missing_file() -> None:
    with pytest.raises(ScenarioError, match="no-such.toml: no such scenario file"):
        load_scenario("no-such.toml")


def test_docs_key_reference_matches_schema() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert docgen.current_block(text) == docgen.render(), (
        "docs/scenarios.md is out of date: run "
        "`python -m iotbench.scenarios.docgen --write docs/scenarios.md`"
    )


def test_docs_examples_are_valid_scenarios() -> None:
    blocks = re.findall(r"```toml\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) >= 2
    for block in blocks:
        assert expand(parse_scenario(block, label="docs example"))
