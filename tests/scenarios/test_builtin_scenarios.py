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
