"""`extends`: a scenario file merged over a base (a file beside it or a built-in base)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotbench import cli
from iotbench.scenarios import (
    Scenario,
    ScenarioError,
    expand,
    list_builtin,
    load_scenario,
    loader,
    parse_scenario,
)
from iotbench.scenarios.loader import to_toml

EXAMPLE = Path(__file__).with_name("example.toml")

# A base that is no scenario by itself: no name, no description.
BASE = """\
seed = 3
repetitions = 2

[network.link]
rate_bps = 20000
delay_s = 0.02

[network.impair.to_server]
loss = { model = "gilbert-elliott", p_good_to_bad = 0.01, p_bad_to_good = 0.3 }

[workload]
kind = "object-download"
resource = "object"
object_size_bytes = 100
path = "/o"

[protocol]
name = "coap"

[protocol.coap]
type = "con"
token_length = 4

[report]
metrics = ["time_s"]

[[report.plots]]
x = "size"
y = "time_s"
line = "variant"

[axes.variant.con]
protocol = { coap = { type = "con" } }

[axes.variant.non]
protocol = { coap = { type = "non" } }

[axes.size]
key = "workload.object_size_bytes"
values = [10, 100]
"""

HEAD = """\
extends = "base.toml"
name = "child"
description = "a scenario on a shared base"
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load_child(tmp_path: Path, body: str = "") -> Scenario:
    """child.toml (HEAD + body) over base.toml (BASE), both in tmp_path."""
    write(tmp_path, "base.toml", BASE)
    return load_scenario(write(tmp_path, "child.toml", HEAD + body))


def error_of(path: Path) -> str:
    with pytest.raises(ScenarioError) as info:
        expand(load_scenario(path))
    return str(info.value)


@pytest.fixture
def builtin(tmp_path: Path, monkeypatch) -> Path:
    """A folder standing in for the built-in scenarios, with one scenario and bases/."""
    folder = tmp_path / "builtin"
    write(folder, "bases/b.toml", BASE)
    write(folder, "s-one.toml", HEAD.replace('"base.toml"', '"bases/b"').replace("child", "s-one"))
    monkeypatch.setattr(loader, "builtin_dir", lambda: folder)
    return folder


# --- merging ------------------------------------------------------------------


def test_sections_merge_key_by_key_and_the_childs_scalars_win(tmp_path: Path) -> None:
    body = 'seed = 9\n[protocol.coap]\ntype = "non"\n[network.link]\ndelay_s = 0.5\n'
    scenario = load_child(tmp_path, body)
    assert scenario.name == "child" and scenario.base["seed"] == 9
    assert scenario.base["repetitions"] == 2
    assert scenario.base["protocol"] == {"name": "coap", "coap": {"type": "non", "token_length": 4}}
    assert scenario.base["network"]["link"] == {"rate_bps": 20000, "delay_s": 0.5}
    assert "extends" not in scenario.base


def test_model_tables_and_arrays_of_tables_are_replaced_whole(tmp_path: Path) -> None:
    body = """\
[network.impair.to_server]
loss = { model = "bernoulli", p = 0.1 }

[[report.plots]]
x = "size"
y = "bytes"
"""
    scenario = load_child(tmp_path, body)
    # The Gilbert-Elliott parameters are not inherited by the Bernoulli model.
    assert scenario.base["network"]["impair"]["to_server"]["loss"] == {
        "model": "bernoulli",
        "p": 0.1,
    }
    assert [plot["y"] for plot in scenario.report["plots"]] == ["bytes"]
    assert scenario.report["metrics"] == ["time_s"]


def test_axes_merge_by_name(tmp_path: Path) -> None:
    body = """\
[axes.size]
key = "workload.object_size_bytes"
values = [1, 2, 3]

[axes.token]
key = "protocol.coap.token_length"
values = [0, 8]
"""
    scenario = load_child(tmp_path, body)
    # `size` is replaced whole and keeps its place; the new axis comes last.
    assert [(axis.name, axis.values) for axis in scenario.axes] == [
        ("variant", ("con", "non")),
        ("size", (1, 2, 3)),
        ("token", (0, 8)),
    ]
    assert len(expand(scenario)) == 2 * 3 * 2 * 2


def test_a_childs_preset_axis_replaces_all_the_bases_presets(tmp_path: Path) -> None:
    body = '[axes.variant.only-non]\nprotocol = { coap = { type = "non" } }\n'
    scenario = load_child(tmp_path, body)
    assert scenario.axes[0].values == ("only-non",)
    assert {run.config["protocol"]["coap"]["type"] for run in expand(scenario)} == {"non"}


# --- finding the base ---------------------------------------------------------


def test_a_relative_path_is_found_beside_the_file_that_names_it(tmp_path: Path) -> None:
    # child.toml -> shared/mid.toml -> ../base.toml (relative to shared/)
    write(tmp_path, "base.toml", BASE)
    write(tmp_path, "shared/mid.toml", 'extends = "../base.toml"\nrepetitions = 5\n')
    head = HEAD.replace("base.toml", "shared/mid.toml")
    scenario = load_scenario(write(tmp_path, "child.toml", head))
    assert scenario.base["repetitions"] == 5 and scenario.base["seed"] == 3
    assert len(expand(scenario)) == 2 * 2 * 5


def test_a_chain_merges_nearest_last(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", BASE)
    write(tmp_path, "mid.toml", 'extends = "base.toml"\nseed = 4\n[protocol.coap]\ntype = "non"\n')
    head = HEAD.replace("base.toml", "mid.toml") + "seed = 5\n"
    scenario = load_scenario(write(tmp_path, "child.toml", head))
    assert scenario.base["seed"] == 5
    assert scenario.base["protocol"]["coap"] == {"type": "non", "token_length": 4}
    assert scenario.text.startswith(
        f"# {tmp_path / 'child.toml'} with the files it extends merged in: "
        f"{tmp_path / 'child.toml'} -> {tmp_path / 'mid.toml'} -> {tmp_path / 'base.toml'}\n"
    )


def test_builtin_bases_are_found_by_name_and_not_listed(builtin: Path, capsys) -> None:
    assert loader.list_builtin() == ["s-one"]
    scenario = load_scenario("s-one")
    assert scenario.source == "builtin:s-one" and scenario.base["seed"] == 3
    assert len(expand(scenario)) == 2 * 2 * 2
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "s-one" in out and "bases" not in out
    # A base is not a scenario to run.
    with pytest.raises(ScenarioError, match="no such scenario file"):
        load_scenario("bases/b")


def test_a_file_may_extend_a_builtin_scenario_or_base(builtin: Path, tmp_path: Path) -> None:
    write(tmp_path, "x.toml", 'extends = "s-one"\nname = "x"\n')
    write(tmp_path, "y.toml", HEAD.replace('"base.toml"', '"bases/b"'))
    assert expand(load_scenario(tmp_path / "x.toml"))
    assert expand(load_scenario(tmp_path / "y.toml"))


# --- errors -------------------------------------------------------------------


def test_a_cycle_is_an_error_naming_the_files(tmp_path: Path) -> None:
    write(tmp_path, "a.toml", 'extends = "b.toml"\n')
    write(tmp_path, "b.toml", 'extends = "a.toml"\n')
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    assert error_of(a) == (
        f"{b} (extended by {a}): extends: 'a.toml' makes a cycle: {a} -> {b} -> {a}"
    )
    write(tmp_path, "self.toml", 'extends = "self.toml"\n')
    assert "makes a cycle" in error_of(tmp_path / "self.toml")


def test_a_cycle_through_a_builtin_reached_by_name_and_by_path(builtin: Path) -> None:
    write(builtin, "bases/c.toml", 'extends = "bases/d"\n')
    write(builtin, "bases/d.toml", 'extends = "c.toml"\n')
    with pytest.raises(ScenarioError) as info:
        parse_scenario('extends = "bases/c"\n', "e.toml", "builtin:e")
    assert str(info.value).endswith(
        "'c.toml' makes a cycle: e.toml -> bases/c.toml -> bases/d.toml -> bases/c.toml"
    )


def test_a_missing_base_file_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "child.toml", HEAD)
    assert error_of(path) == (
        f"{path}: extends: no such file 'base.toml' (looked for {tmp_path / 'base.toml'})"
    )


def test_an_unknown_builtin_base_lists_the_builtin_names(builtin: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario('extends = "bases/bb"\n', "x.toml")
    assert str(info.value) == (
        "x.toml: extends: no built-in scenario or base 'bases/bb' (did you mean 'bases/b'?); "
        "built-in: s-one, bases/b (or a .toml path relative to this file)"
    )


def test_extends_must_be_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, "child.toml", "extends = 3\n")
    assert error_of(path) == f"{path}: extends: expected a string, got an integer (3)"


def test_a_bad_key_in_the_base_is_reported_in_the_base(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", BASE.replace("token_length = 4", "token_lenght = 4"))
    child = write(tmp_path, "child.toml", HEAD)
    message = error_of(child)
    assert message.startswith(
        f"{tmp_path / 'base.toml'} (extended by {child}): protocol.coap.token_lenght: "
        "unknown key 'token_lenght' (did you mean 'token_length'?)"
    )
    write(tmp_path, "base.toml", BASE.replace('type = "non"', 'type = "nn"'))
    assert error_of(child) == (
        f"{tmp_path / 'base.toml'} (extended by {child}): "
        "axes.variant.non.protocol.coap.type: 'nn' is not one of con, non"
    )


def test_a_bad_key_deep_in_a_chain_names_the_whole_chain(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", BASE.replace("seed = 3", "seed = -1"))
    write(tmp_path, "mid.toml", 'extends = "base.toml"\n')
    child = write(tmp_path, "child.toml", HEAD.replace("base.toml", "mid.toml"))
    assert error_of(child) == (
        f"{tmp_path / 'base.toml'} (extended by {tmp_path / 'mid.toml'}, itself extended by "
        f"{child}): seed: -1 is out of range: must be >= 0"
    )


def test_what_only_the_merged_scenario_lacks_is_reported_in_the_child(tmp_path: Path) -> None:
    write(tmp_path, "base.toml", BASE)
    child = write(tmp_path, "child.toml", 'extends = "base.toml"\ndescription = "d"\n')
    assert error_of(child).startswith(f"{child}: name: missing required key")


# --- what is recorded ---------------------------------------------------------


def test_a_file_without_extends_keeps_its_text() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert load_scenario(EXAMPLE).text == text


def test_show_prints_the_resolved_scenario(tmp_path: Path, capsys) -> None:
    write(tmp_path, "base.toml", BASE)
    path = write(tmp_path, "child.toml", HEAD + '[protocol.coap]\ntype = "non"\n')
    assert cli.main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert 'name = "child"\n' in out and "token_length = 4" in out and "extends =" not in out
    assert "child: 8 runs" in out


def assert_same_runs(original: Scenario, child_path: Path) -> None:
    child = load_scenario(child_path)
    runs = expand(child)
    assert runs == expand(original)
    assert (child.name, child.description, child.study, child.axes) == (
        original.name,
        original.description,
        original.study,
        original.axes,
    )
    assert (child.report, child.quick) == (original.report, original.quick)
    # The recorded text is a scenario on its own, with the same runs.
    resolved = parse_scenario(child.text, "resolved.toml")
    assert (resolved.study, expand(resolved)) == (original.study, runs)


@pytest.mark.parametrize("name", list_builtin())
def test_an_empty_extending_file_runs_exactly_the_builtin(name: str, tmp_path: Path) -> None:
    assert_same_runs(load_scenario(name), write(tmp_path, "child.toml", f'extends = "{name}"\n'))


def test_an_empty_extending_file_runs_exactly_the_file_beside_it(tmp_path: Path) -> None:
    write(tmp_path, "example.toml", EXAMPLE.read_text(encoding="utf-8"))
    child = write(tmp_path, "child.toml", 'extends = "example.toml"\n')
    assert_same_runs(load_scenario(EXAMPLE), child)


# --- the TOML writer ------------------------------------------------------------

scalars = (
    st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
)
keys = st.text(st.characters(exclude_categories=("Cs",)), max_size=6)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=12,
)


@given(st.dictionaries(keys, values, max_size=5))
def test_to_toml_reads_back_equal(document: dict) -> None:
    assert tomllib.loads(to_toml(document)) == document


def test_to_toml_keeps_axis_order_and_writes_tables_as_by_hand() -> None:
    document = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    text = to_toml(document)
    assert tomllib.loads(text) == document
    assert list(tomllib.loads(text)["axes"]) == ["variant", "size"]
    assert "[network.impair.to_server]" not in text  # short tables are inline
    assert 'to_server = { loss = { model = "bernoulli", p = 0.01 } }' in text
    assert text.count("[[report.plots]]") == 2
