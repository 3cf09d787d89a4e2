"""The study pages' published-vs-ours tables are what the recorded campaign gives,
and the recorded runs are real: S1's and S5's, re-run here in full, match them."""

from __future__ import annotations

from iotbench.scenarios import expand, load_scenario
from iotbench.validation.docgen import DOCS, RECORD, main, recorded_runs
from iotbench.world import run_one


def test_every_study_page_shows_what_the_recorded_runs_give() -> None:
    assert main(["--check"]) == 0, (
        "a docs/studies page's published-vs-ours table is out of date: run "
        "`python -m iotbench.validation.docgen --write`"
    )


def test_the_recorded_runs_are_the_campaigns_runs() -> None:
    recorded = recorded_runs(DOCS / RECORD)
    for name in ("s1-object-download", "s5-ndn-rtt"):
        runs = expand(load_scenario(name), {}, {})
        assert len(recorded[name]) == len(runs)
        by_params = {tuple(sorted(r.params.items())): r.metrics for r in recorded[name]}
        for run in runs:
            got = run_one(run.config, run.seed).metrics
            want = by_params[tuple(sorted(run.params.items()))]
            assert {k: got[k] for k in want} == want, run.params
