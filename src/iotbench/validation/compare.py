"""Published figures against ours: each figure's verdict from stored runs.

`compare(studies, runs)` takes the studies' figures (figures.py) and the
stored runs by scenario name, and gives each figure ours, the difference
and a verdict: `agrees` (within the figure's stated exactness), `differs`,
or `not run` (a scenario or point it needs has no runs; the comparison
names the command that makes them). Nothing here is written down: change a
stored metric and the verdict follows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeAlias

from iotbench.runner.store import DB_NAME, ResultStore, StoredRun, StoreError
from iotbench.validation.figures import (
    ABOUT,
    Check,
    Figure,
    Ratio,
    Study,
    Term,
    printed_tolerance,
)

AGREES, DIFFERS, NOT_RUN = "agrees", "differs", "not run"


class RunLike(Protocol):
    """A stored run as the comparison reads it (StoredRun, or a recorded one)."""

    @property
    def params(self) -> Mapping[str, Any]: ...

    @property
    def metrics(self) -> Mapping[str, float | int]: ...


Runs: TypeAlias = Mapping[str, Sequence[RunLike]]


@dataclass(frozen=True)
class Comparison:
    figure: Figure
    verdict: str
    ours: float | None = None
    difference: float | None = None
    detail: str = ""  # what failed, or the command that makes the missing runs

    def published_text(self) -> str:
        f = self.figure
        unit = f" {f.unit}" if f.unit else ""
        if f.exactness == "finding":
            return "holds"  # the study found it; `what` says what it is
        if f.exactness == "range":
            low, high = f.published
            return f"{_num(low)} to {_num(high)}{unit}"
        prefix = {"about": "about ", "below": "< ", "above": "> ", "at-most": "≤ "}.get(
            f.exactness, ""
        )
        return f"{prefix}{_num(f.published)}{unit}"

    def ours_text(self) -> str:
        if self.verdict == NOT_RUN:
            return "–"
        if self.figure.exactness == "finding":
            return "holds" if self.verdict == AGREES else "does not hold"
        unit = f" {self.figure.unit}" if self.figure.unit else ""
        return f"{_num(self.ours)}{unit}"


@dataclass(frozen=True)
class StudyComparison:
    study: Study
    rows: tuple[Comparison, ...]

    def count(self, verdict: str) -> int:
        return sum(1 for row in self.rows if row.verdict == verdict)

    def summary(self) -> str:
        """One line: 'S1: 14 of 18 figures agree (3 differ, 1 not run)'."""
        total, agree = len(self.rows), self.count(AGREES)
        rest = [
            f"{n} {word}"
            for n, word in ((self.count(DIFFERS), "differ"), (self.count(NOT_RUN), "not run"))
            if n
        ]
        tail = f" ({', '.join(rest)})" if rest else ""
        return f"{self.study.study}: {agree} of {total} figures agree{tail}"


class _Missing(Exception):
    """A term's runs are not stored: the figure is not run."""


def compare(studies: Iterable[Study], runs: Runs) -> list[StudyComparison]:
    return [
        StudyComparison(study, tuple(compare_figure(f, runs) for f in study.figures))
        for study in studies
    ]


def compare_figure(figure: Figure, runs: Runs) -> Comparison:
    try:
        if figure.exactness == "finding":
            failed = [c for c in figure.checks if not _holds(c, runs)]
            detail = "; ".join(_describe(c, runs) for c in failed)
            return Comparison(figure, DIFFERS if failed else AGREES, detail=detail)
        assert figure.ours is not None, "parse_study gives every other figure `ours`"
        ours = _value(figure.ours, runs)
    except _Missing as missing:
        return Comparison(figure, NOT_RUN, detail=str(missing))
    if ours is None or math.isnan(ours):
        return Comparison(figure, DIFFERS, ours, detail="our metric is undefined here")
    published = figure.published
    if figure.exactness == "range":
        low, high = published
        agrees = low <= ours <= high
        difference = None
    elif figure.exactness in ("below", "above", "at-most"):
        agrees = {
            "below": ours < published,
            "above": ours > published,
            "at-most": ours <= published,
        }[figure.exactness]
        difference = None
    else:
        difference = ours - published
        if figure.exactness == "about":
            tolerance = abs(published) * ABOUT
        else:
            tolerance = figure.tolerance
            if tolerance is None:
                tolerance = printed_tolerance(published)
        agrees = abs(difference) <= tolerance + 1e-12
    return Comparison(figure, AGREES if agrees else DIFFERS, ours, difference)


def _holds(check: Check, runs: Runs) -> bool:
    left = _value(check.left, runs)
    if check.op == "between":
        assert check.low is not None and check.high is not None, "parse_study requires them"
        return check.low <= left <= check.high
    assert check.right is not None, "parse_study requires `right` for every other op"
    right = _value(check.right, runs)
    if check.op == "<":
        return left < check.factor * right
    if check.op == ">":
        return left > check.factor * right
    return abs(left - right) <= ABOUT * abs(right)  # "about"


def _describe(check: Check, runs: Runs) -> str:
    left = _value(check.left, runs)
    if check.op == "between":
        return f"{_label(check.left)} = {_num(left)}, not between {check.low} and {check.high}"
    assert check.right is not None, "parse_study requires `right` for every other op"
    right = _value(check.right, runs)
    factor = f"{_num(check.factor)} × " if check.factor != 1.0 else ""
    return (
        f"{_label(check.left)} = {_num(left)} is not {check.op} "
        f"{factor}{_label(check.right)} = {_num(right)}"
    )


def _label(part: Term | Ratio) -> str:
    if isinstance(part, Ratio):
        return f"{_label(part.numerator)} / {_label(part.denominator)}"
    point = ", ".join(f"{k}={'|'.join(v)}" for k, v in part.point.items())
    reduce = f"{part.reduce} " if part.reduce != "mean" else ""
    return f"{reduce}{part.metric} ({point})" if point else f"{reduce}{part.metric}"


def _value(part: Term | Ratio, runs: Runs) -> float:
    if isinstance(part, Ratio):
        denominator = _value(part.denominator, runs)
        return _value(part.numerator, runs) / denominator if denominator else math.nan
    return _term(part, runs)


def _term(term: Term, runs: Runs) -> float:
    stored = runs.get(term.scenario)
    if not stored:
        raise _Missing(f"no runs of {term.scenario}: `iotbench run {term.scenario}`")
    points: dict[tuple[tuple[str, str], ...], list[float]] = {}
    for run in stored:
        if all(str(run.params.get(axis)) in values for axis, values in term.point.items()):
            value = run.metrics.get(term.metric)
            if value is not None:
                key = tuple(sorted((k, str(v)) for k, v in run.params.items()))
                points.setdefault(key, []).append(float(value))
    if not points:
        where = ", ".join(f"{k}={'|'.join(v)}" for k, v in term.point.items())
        raise _Missing(
            f"no runs of {term.scenario} at {where} with {term.metric}: "
            f"`iotbench run {term.scenario}`"
        )
    means = {key: sum(v) / len(v) for key, v in points.items()}
    if term.reduce in ("argmin", "argmax"):
        pick = min if term.reduce == "argmin" else max
        best = pick(means, key=means.__getitem__)
        assert term.axis is not None, "parse_study requires `axis` for argmin and argmax"
        return float(dict(best)[term.axis])
    reduce = _REDUCE[term.reduce]
    return term.offset + term.scale * reduce(list(means.values()))


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


_REDUCE: dict[str, Callable[[list[float]], float]] = {"mean": _mean, "min": min, "max": max}


def _num(value: float | int | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 10:
        return f"{int(value):,}"
    return f"{value:.3g}"


# ------------------------------------------------------------ stored results


def results_dirs(path: str | Path) -> list[Path]:
    """The results folders at PATH: PATH itself if it holds results.duckdb, else
    its subfolders that do (`results/` after several `iotbench run`s)."""
    root = Path(path)
    if not root.is_dir():
        raise StoreError(f"{root}: no such folder")
    if (root / DB_NAME).is_file():
        return [root]
    found = sorted(p.parent for p in root.glob(f"*/{DB_NAME}"))
    if not found:
        raise StoreError(
            f"{root}: no results here ({DB_NAME} in it or in a folder below it); "
            "run `iotbench reproduce` or `iotbench run NAME` first"
        )
    return found


def stored_runs(path: str | Path) -> dict[str, list[StoredRun]]:
    """Every stored run under PATH, by scenario name."""
    runs: dict[str, list[StoredRun]] = {}
    for folder in results_dirs(path):
        with ResultStore(folder, read_only=True) as store:
            for run in store.runs():
                runs.setdefault(run.scenario, []).append(run)
    return runs
