"""Verdicts are computed from stored runs: change a stored metric and the verdict
follows; a missing scenario is `not run` with the command that makes it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pytest

from iotbench import cli
from iotbench.validation import AGREES, DIFFERS, NOT_RUN, compare, load_studies, stored_runs
from iotbench.validation.figures import parse_study


def run(metrics: dict, **params) -> SimpleNamespace:
    return SimpleNamespace(params=params, metrics=metrics)


def study(*figures: dict):
    base = {"where": "Table 1", "why": "s9.md#why"}
    return parse_study(
        {"study": "S9", "title": "t", "page": "s9.md", "figure": [{**base, **f} for f in figures]},
        "s9.toml",
    )


def term(**point) -> dict:
    return {"scenario": "sc", "point": point, "metric": "t"}


def verdicts(s, runs) -> list[str]:
    (result,) = compare([s], runs)
    return [row.verdict for row in result.rows]


def test_a_printed_number_agrees_to_its_last_digit() -> None:
    s = study(
        {"id": "a", "what": "w", "exactness": "number", "published": 0.08, "ours": term(v="x")}
    )
    assert verdicts(s, {"sc": [run({"t": 0.0849}, v="x")]}) == [AGREES]
    assert verdicts(s, {"sc": [run({"t": 0.0732}, v="x")]}) == [DIFFERS]


def test_about_range_and_bounds() -> None:
    s = study(
        {"id": "a", "what": "w", "exactness": "about", "published": 1.48, "ours": term(v="x")},
        {
            "id": "b",
            "what": "w",
            "exactness": "range",
            "published": [1.1, 1.3],
            "ours": term(v="x"),
        },
        {"id": "c", "what": "w", "exactness": "below", "published": 1.5, "ours": term(v="x")},
        {"id": "d", "what": "w", "exactness": "above", "published": 1.5, "ours": term(v="x")},
    )
    assert verdicts(s, {"sc": [run({"t": 1.4}, v="x")]}) == [AGREES, DIFFERS, AGREES, DIFFERS]
    assert verdicts(s, {"sc": [run({"t": 1.2}, v="x")]}) == [DIFFERS, AGREES, AGREES, DIFFERS]


def test_terms_average_repetitions_and_reduce_over_points() -> None:
    runs = {
        "sc": [
            run({"t": 1.0}, v="x", d=0),
            run({"t": 3.0}, v="x", d=0),  # a repetition: the point's mean is 2
            run({"t": 0.5}, v="x", d=50),
            run({"t": 0.9}, v="x", d=100),
        ]
    }
    s = study(
        {"id": "mean", "what": "w", "exactness": "number", "published": 1.13, "ours": term(v="x")},
        {
            "id": "min",
            "what": "w",
            "exactness": "number",
            "published": 0.5,
            "ours": {**term(v="x"), "reduce": "min"},
        },
        {
            "id": "at",
            "what": "w",
            "exactness": "number",
            "published": 50,
            "ours": {**term(v="x"), "reduce": "argmin", "axis": "d"},
        },
        {
            "id": "ratio",
            "what": "w",
            "exactness": "number",
            "published": 4.0,
            "ours": {"ratio": [term(d="0"), term(d="50")]},
        },
        {
            "id": "loss",
            "what": "w",
            "exactness": "number",
            "published": 0.1,
            "ours": {**term(d="100"), "scale": -1.0, "offset": 1.0},
        },
    )
    assert verdicts(s, runs) == [AGREES] * 5


def test_a_finding_lists_the_checks_that_fail() -> None:
    s = study(
        {
            "id": "f",
            "what": "NON takes far longer than CON",
            "exactness": "finding",
            "checks": [
                {"left": term(v="non"), "op": ">", "factor": 2.0, "right": term(v="con")},
                {"left": {**term(), "reduce": "max"}, "op": "between", "low": 0, "high": 10},
            ],
        }
    )
    (result,) = compare([s], {"sc": [run({"t": 5.0}, v="non"), run({"t": 3.0}, v="con")]})
    (row,) = result.rows
    assert row.verdict == DIFFERS and row.ours_text() == "does not hold"
    assert "t (v=non) = 5 is not > 2 × t (v=con) = 3" in row.detail
    (result,) = compare([s], {"sc": [run({"t": 7.0}, v="non"), run({"t": 3.0}, v="con")]})
    assert result.rows[0].verdict == AGREES


def test_missing_runs_are_not_run_with_the_command() -> None:
    s = study({"id": "a", "what": "w", "exactness": "number", "published": 1, "ours": term(v="y")})
    (result,) = compare([s], {})
    assert result.rows[0].verdict == NOT_RUN and "`iotbench run sc`" in result.rows[0].detail
    (result,) = compare([s], {"sc": [run({"t": 1}, v="x")]})
    assert result.rows[0].verdict == NOT_RUN and "v=y" in result.rows[0].detail
    assert result.summary() == "S9: 0 of 1 figures agree (1 not run)"


def test_a_change_in_a_stored_result_changes_the_verdict(tmp_path: Path, capsys) -> None:
    """S5 run for real and stored; then its stored round trip is edited, and the
    comparison (terminal, JSON and report) follows the stored value."""
    out = tmp_path / "s5"
    assert cli.main(["run", "s5-ndn-rtt", "--out", str(out), "--jobs", "1"]) == 0
    s5 = [s for s in load_studies() if s.study == "S5"]
    (before,) = compare(s5, stored_runs(out))
    local = next(r for r in before.rows if r.figure.id == "local-cache")
    assert local.verdict == AGREES  # < 1 ms from the node's own cache

    con = duckdb.connect(str(out / "results.duckdb"))
    rows = con.execute("SELECT run_key, metrics FROM runs WHERE params->>'case' = 'local-cache'")
    for key, metrics in rows.fetchall():
        changed = {**json.loads(metrics), "rtt_mean_ms": 5.0}
        con.execute("UPDATE runs SET metrics = ? WHERE run_key = ?", [json.dumps(changed), key])
    con.close()

    (after,) = compare(s5, stored_runs(out))
    local = next(r for r in after.rows if r.figure.id == "local-cache")
    assert local.verdict == DIFFERS and local.ours == pytest.approx(5.0)
    capsys.readouterr()
    assert cli.main(["compare", str(out), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {line["study"] for line in lines} == {"S1", "S3", "S4", "S5", "S6"}
    (mine,) = [line for line in lines if line["figure"] == "local-cache"]
    assert mine["verdict"] == DIFFERS and mine["ours"] == pytest.approx(5.0)
    assert mine["why"].startswith("docs/studies/s5.md")
    others = [line for line in lines if line["study"] == "S1"]
    assert others and all(line["verdict"] == NOT_RUN for line in others)


def test_compare_on_a_folder_without_results_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert cli.main(["compare", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no results here" in err and "iotbench reproduce" in err and "Traceback" not in err
    assert cli.main(["compare", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_compare_reads_a_folder_of_results_folders(tmp_path: Path, capsys) -> None:
    assert cli.main(["run", "s5-ndn-rtt", "--out", str(tmp_path / "a"), "--jobs", "1"]) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(tmp_path), "--study", "s5"]) == 0
    out = capsys.readouterr().out
    assert "S5: published vs ours" in out and "S5: " in out and "figures agree" in out
    assert "S1" not in out
