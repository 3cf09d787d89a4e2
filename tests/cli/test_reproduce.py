"""`iotbench reproduce`: studies to scenarios, --quick versions, one folder and one report."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iotbench import cli
from iotbench.runner import ResultStore
from iotbench.runner.reproduce import builtin_studies, parse_studies, study_plan
from iotbench.scenarios import UserError, expand, list_builtin, load_scenario


def test_every_builtin_study_has_its_scenarios() -> None:
    studies = builtin_studies()
    assert set(studies) >= {"S1", "S2", "S3", "S5"}
    covered = {s.name for members in studies.values() for s in members}
    assert covered == {n for n in list_builtin() if load_scenario(n).study}


def test_quick_is_the_same_sweep_with_less_work() -> None:
    full = {step.scenario.name: step.runs for step in study_plan()}
    quick = {step.scenario.name: step.runs for step in study_plan(quick=True)}
    assert full.keys() == quick.keys()
    for name, runs in quick.items():
        # Every combination of the axis values [quick] keeps, once; no more
        # items than the full run.
        scenario = load_scenario(name)
        kept = scenario.quick["filter"]
        wanted = {tuple(r.params.items()) for r in full[name]}
        if kept:
            wanted = {
                p for p in wanted if all(str(dict(p)[a]) in map(str, v) for a, v in kept.items())
            }
            assert len(wanted) < len({tuple(r.params.items()) for r in full[name]})
        assert {tuple(r.params.items()) for r in runs} == wanted
        assert len(runs) == len(expand(scenario, filters=kept, reps=1))
        by_params = {tuple(f.params.items()): f for f in full[name]}
        for q in runs:
            f = by_params[tuple(q.params.items())]
            assert q.config["workload"]["items"] <= f.config["workload"]["items"]
    assert quick["s3-robustness"][0].config["workload"]["items"] == 100


def test_study_names() -> None:
    known = ["S1", "S2", "S3"]
    assert parse_studies(None, known) == known
    assert parse_studies("s3, S1,s3", known) == ["S3", "S1"]
    with pytest.raises(UserError, match="unknown study S9; the built-in studies are S1, S2, S3"):
        parse_studies("S1,S9", known)
    with pytest.raises(UserError, match="empty"):
        parse_studies(",", known)


def test_reproduce_one_study_then_resume(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    argv = ["reproduce", "--study", "S5", "--quick", "--out", str(out), "--jobs", "1"]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "s5-ndn-rtt" in captured.out and "report:" in captured.err
    assert (out / "report" / "index.html").is_file()
    with ResultStore(out, read_only=True) as store:
        assert [s.name for s in store.scenarios()] == ["s5-ndn-rtt"]
        assert len(store.runs()) == 6
    assert cli.main(argv) == 0
    # runs, executed, stored before, failed
    assert re.search(r"S5\W+s5-ndn-rtt\W+6\W+0\W+6\W+0\W", capsys.readouterr().out)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["reproduce", "--study", "S42"], "unknown study S42"),
        (["reproduce", "--address", "h:1"], "--address is the Ray cluster's"),
    ],
)
def test_usage_errors(argv, message, capsys) -> None:
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_reproduce_check_books_runs_every_run_with_its_books(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    from iotbench.world import books

    checked = []
    check = books.Books.check

    def counting(self, world):  # type: ignore[no-untyped-def]
        checked.append(world)
        return check(self, world)

    monkeypatch.setattr(books.Books, "check", counting)
    out = tmp_path / "out"
    argv = ["reproduce", "--study", "S5", "--quick", "--check-books", "--out", str(out)]
    assert cli.main([*argv, "--jobs", "1"]) == 0
    assert len(checked) == 6  # every run of the study, its books balanced
    capsys.readouterr()
