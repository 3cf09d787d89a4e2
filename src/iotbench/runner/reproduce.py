"""`iotbench reproduce`: every built-in scenario of the chosen studies into one
folder, then one report that links them all.

    plan = study_plan(["S1", "S3"], quick=True)
    for step in plan: run_campaign(step.scenario, step.runs, out, ...)

`--quick` runs each scenario's `[quick]` version (its `set` overrides and
`repetitions`, see docs/scenarios.md): the same axes with fewer items or a
shorter run, for a first look in about two minutes on two cores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from iotbench.scenarios import Run, Scenario, UserError, expand, list_builtin, load_scenario


@dataclass(frozen=True)
class Step:
    study: str
    scenario: Scenario
    runs: list[Run]
    overrides: dict[str, Any] = field(default_factory=dict)  # the `--set`s they were made with


def builtin_studies() -> dict[str, list[Scenario]]:
    """Study name ("S1") -> its built-in scenarios, in name order."""
    studies: dict[str, list[Scenario]] = {}
    for name in list_builtin():
        scenario = load_scenario(name)
        if scenario.study:
            studies.setdefault(scenario.study.upper(), []).append(scenario)
    return dict(sorted(studies.items()))


def parse_studies(text: str | None, known: Sequence[str]) -> list[str]:
    """ "s1,S3" -> ["S1", "S3"]; None -> every study. Unknown names are an error."""
    if text is None:
        return list(known)
    wanted = [part.strip().upper() for part in text.split(",") if part.strip()]
    unknown = [s for s in wanted if s not in known]
    if unknown or not wanted:
        raise UserError(
            f"--study {text!r}: {'unknown study ' + ', '.join(unknown) if unknown else 'empty'}; "
            f"the built-in studies are {', '.join(known)}"
        )
    return list(dict.fromkeys(wanted))


def study_plan(studies: Sequence[str] | None = None, quick: bool = False) -> list[Step]:
    """The campaigns to run, study by study; `studies` None means all of them."""
    by_study = builtin_studies()
    steps = []
    for study in studies if studies is not None else list(by_study):
        for scenario in by_study[study]:
            overrides = dict(scenario.quick["set"]) if quick else {}
            if quick:
                runs = expand(
                    scenario,
                    filters=scenario.quick["filter"],
                    overrides=overrides,
                    reps=scenario.quick["repetitions"],
                )
            else:
                runs = expand(scenario)
            steps.append(Step(study, scenario, runs, overrides))
    return steps
