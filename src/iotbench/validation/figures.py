"""The studies' released figures, as data: `published/<study>.toml`.

Each file holds one study's figures (from `../shared/published.toml`), each
with where it stands in the paper, what it says, its unit and how exact it
is, and how to compute ours from the runs of a built-in scenario:

- `number`: a value as printed; ours agrees within half a unit of its last
  printed digit (0.08 s: 0.075 to 0.085), or within `tolerance` if given;
- `about`: within 10 % of the value (the word's reading here, once for all);
- `range`: `published = [low, high]`, ours inside it;
- `below`, `above`, `at-most`: a bound;
- `finding`: a direction or an ordering, written as `checks` over our
  metrics, every one of which must hold.

A term names a scenario, a point (axis values; a list means any of them)
and a metric; its value is the mean over the matching runs, or with
`reduce` the min or max of the points' means, or the axis value (`axis`)
of the point with the least (`argmin`) or greatest (`argmax`) mean.
`{ ratio = [A, B] }` divides two terms; `scale` and `offset` map a term's
value (`1 - delivery_ratio`: scale -1, offset 1).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from iotbench.scenarios.errors import UserError

EXACTNESS = ("number", "about", "range", "below", "above", "at-most", "finding")
CHECK_OPS = ("<", ">", "about", "between")
REDUCE = ("mean", "min", "max", "argmin", "argmax")
ABOUT = 0.10  # "about": within 10 % either way


class FiguresError(UserError):
    """A published-figures file does not say what it must."""


@dataclass(frozen=True)
class Term:
    scenario: str
    point: dict[str, list[str]]  # axis -> accepted values, as text
    metric: str
    reduce: str = "mean"
    axis: str | None = None
    scale: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class Ratio:
    numerator: Term
    denominator: Term


@dataclass(frozen=True)
class Check:
    left: Term | Ratio
    op: str
    right: Term | Ratio | None = None
    factor: float = 1.0
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Figure:
    study: str
    id: str
    where: str
    what: str
    exactness: str
    why: str
    published: Any = None
    unit: str = ""
    tolerance: float | None = None
    ours: Term | Ratio | None = None
    checks: tuple[Check, ...] = ()

    def scenarios(self) -> list[str]:
        """The scenarios whose runs this figure needs, in first-use order."""
        found: list[str] = []
        for term in self.terms():
            if term.scenario not in found:
                found.append(term.scenario)
        return found

    def terms(self) -> list[Term]:
        parts = [self.ours] if self.ours is not None else []
        for check in self.checks:
            parts += [check.left] + ([check.right] if check.right is not None else [])
        out: list[Term] = []
        for part in parts:
            out += [part.numerator, part.denominator] if isinstance(part, Ratio) else [part]
        return out


@dataclass(frozen=True)
class Study:
    study: str
    title: str
    page: str
    figures: tuple[Figure, ...] = field(default_factory=tuple)


def load_studies() -> list[Study]:
    """Every study's released figures, S1 first."""
    folder = resources.files("iotbench.validation") / "published"
    studies = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            with entry.open("rb") as fh:
                studies.append(parse_study(tomllib.load(fh), entry.name))
    return studies


def parse_study(data: dict[str, Any], source: str) -> Study:
    study = _text(data, "study", source)
    figures = data.get("figure", [])
    if not isinstance(figures, list) or not figures:
        raise FiguresError(f"{source}: no [[figure]] tables")
    parsed = tuple(_figure(f, study, f"{source} figure {i + 1}") for i, f in enumerate(figures))
    ids = [f.id for f in parsed]
    if len(set(ids)) != len(ids):
        raise FiguresError(f"{source}: figure ids repeat")
    return Study(study, _text(data, "title", source), _text(data, "page", source), parsed)


def _figure(data: dict[str, Any], study: str, where: str) -> Figure:
    exactness = _text(data, "exactness", where)
    if exactness not in EXACTNESS:
        raise FiguresError(f"{where}: exactness {exactness!r}; allowed: {', '.join(EXACTNESS)}")
    figure = Figure(
        study=study,
        id=_text(data, "id", where),
        where=_text(data, "where", where),
        what=_text(data, "what", where),
        exactness=exactness,
        why=_text(data, "why", where),
        published=data.get("published"),
        unit=str(data.get("unit", "")),
        tolerance=data.get("tolerance"),
        ours=_part(data["ours"], f"{where} ours") if "ours" in data else None,
        checks=tuple(
            _check(c, f"{where} check {i + 1}") for i, c in enumerate(data.get("checks", []))
        ),
    )
    if exactness == "finding":
        if not figure.checks:
            raise FiguresError(f"{where}: a finding needs checks")
    else:
        if figure.ours is None:
            raise FiguresError(f"{where}: a {exactness} figure needs `ours`")
        range_like = isinstance(figure.published, list)
        if (exactness == "range") != range_like or (range_like and len(figure.published) != 2):
            raise FiguresError(f"{where}: `published` must be [low, high] exactly for a range")
        if not range_like and not isinstance(figure.published, (int, float)):
            raise FiguresError(f"{where}: `published` must be a number")
    return figure


def _check(data: dict[str, Any], where: str) -> Check:
    op = _text(data, "op", where)
    if op not in CHECK_OPS:
        raise FiguresError(f"{where}: op {op!r}; allowed: {', '.join(CHECK_OPS)}")
    if op == "between":
        if "low" not in data or "high" not in data:
            raise FiguresError(f"{where}: `between` needs low and high")
        return Check(_part(data["left"], where), op, low=data["low"], high=data["high"])
    if "right" not in data:
        raise FiguresError(f"{where}: {op!r} needs `right`")
    return Check(
        _part(data["left"], where),
        op,
        _part(data["right"], where),
        factor=float(data.get("factor", 1.0)),
    )


def _part(data: object, where: str) -> Term | Ratio:
    if not isinstance(data, dict):
        raise FiguresError(f"{where}: a term is a table")
    if "ratio" in data:
        pair = data["ratio"]
        if not isinstance(pair, list) or len(pair) != 2:
            raise FiguresError(f"{where}: ratio = [numerator, denominator]")
        return Ratio(_term(pair[0], where), _term(pair[1], where))
    return _term(data, where)


def _term(data: dict[str, Any], where: str) -> Term:
    reduce = data.get("reduce", "mean")
    if reduce not in REDUCE:
        raise FiguresError(f"{where}: reduce {reduce!r}; allowed: {', '.join(REDUCE)}")
    axis = data.get("axis")
    if reduce.startswith("arg") and not axis:
        raise FiguresError(f"{where}: {reduce} needs `axis`")
    point = data.get("point", {})
    if not isinstance(point, dict):
        raise FiguresError(f"{where}: point is a table of axis values")
    return Term(
        scenario=_text(data, "scenario", where),
        point={k: [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in point.items()},
        metric=_text(data, "metric", where),
        reduce=reduce,
        axis=axis,
        scale=float(data.get("scale", 1.0)),
        offset=float(data.get("offset", 0.0)),
    )


def _text(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise FiguresError(f"{where}: `{key}` (text) is missing")
    return value


def printed_tolerance(value: float | int) -> float:
    """Half a unit of the last digit a number was printed with: 0.08 -> 0.005."""
    text = repr(value)
    if isinstance(value, int) or "." not in text:
        return 0.5
    if "e" in text:
        return abs(value) * 0.005  # only very small or large values print so
    decimals = len(text.split(".")[1])
    return 0.5 * 10.0**-decimals
