"""The released figures load, and each names a built-in scenario, its axes and values."""

from __future__ import annotations

import pytest

from iotbench.scenarios import list_builtin, load_scenario
from iotbench.validation import FiguresError, load_studies
from iotbench.validation.figures import parse_study, printed_tolerance


def test_every_study_with_released_figures_is_there() -> None:
    studies = load_studies()
    assert [s.study for s in studies] == ["S1", "S3", "S4", "S5", "S6"]
    assert all(s.figures for s in studies)


def test_every_term_names_a_builtin_scenario_and_its_axis_values() -> None:
    builtin = set(list_builtin())
    for study in load_studies():
        for figure in study.figures:
            for term in figure.terms():
                assert term.scenario in builtin, (figure.id, term.scenario)
                scenario = load_scenario(term.scenario)
                axes = {a.name: [str(v) for v in a.values] for a in scenario.axes}
                for axis, values in term.point.items():
                    assert axis in axes, (figure.id, axis)
                    assert set(values) <= set(axes[axis]), (figure.id, axis, values)
                if term.axis is not None:
                    assert term.axis in axes, (figure.id, term.axis)


@pytest.mark.parametrize(
    ("value", "tolerance"), [(0.08, 0.005), (3.0, 0.05), (286, 0.5), (0.998, 0.0005), (11, 0.5)]
)
def test_a_printed_number_is_as_exact_as_its_last_digit(value, tolerance) -> None:
    assert printed_tolerance(value) == pytest.approx(tolerance)


def _one(**figure) -> dict:
    base = {"id": "x", "where": "Table 1", "what": "a time", "why": "s1.md#x"}
    return {"study": "S9", "title": "t", "page": "s9.md", "figure": [{**base, **figure}]}


TERM = {"scenario": "s1-object-download", "point": {"variant": "coap"}, "metric": "packets"}


@pytest.mark.parametrize(
    ("figure", "message"),
    [
        ({"exactness": "roughly", "published": 1, "ours": TERM}, "exactness 'roughly'"),
        ({"exactness": "number", "ours": TERM}, "must be a number"),
        ({"exactness": "range", "published": 1, "ours": TERM}, "[low, high]"),
        ({"exactness": "number", "published": 1}, "needs `ours`"),
        ({"exactness": "finding"}, "needs checks"),
        (
            {"exactness": "finding", "checks": [{"left": TERM, "op": "~", "right": TERM}]},
            "op '~'",
        ),
        ({"exactness": "number", "published": 1, "ours": {"metric": "m"}}, "`scenario`"),
    ],
)
def test_a_bad_figure_is_a_clear_error(figure, message) -> None:
    with pytest.raises(FiguresError, match="s9.toml figure 1") as caught:
        parse_study(_one(**figure), "s9.toml")
    assert message in str(caught.value)
