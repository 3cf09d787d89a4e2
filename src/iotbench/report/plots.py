"""PNG plots from a `[[report.plots]]` spec: metric `y` against axis `x`, one line
(or bar) per value of axis `line`, mean over repetitions with min/max error bars.

Axes that are neither `x` nor `line` but take several values would otherwise be
averaged together silently; instead each of their combinations gets its own panel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The Figure API renders with Agg without touching pyplot's global state or
# needing a display.
from matplotlib.figure import Figure

from iotbench.report.tables import AxisInfo, Group, stats

MAX_COLUMNS = 3


def plot(spec: dict, groups: Sequence[Group], axes: Sequence[AxisInfo], path: Path) -> bool:
    """Draw `spec` into `path`; False (and no file) when no run has the metric."""
    x, line = spec["x"], spec.get("line")
    groups, order = select(spec, groups, axes)
    if not groups:
        return False
    facet_axes = [
        a for a in order if a not in (x, line) and len({_h(g.params.get(a)) for g in groups}) > 1
    ]
    facets = ordered(
        {tuple(g.params.get(a) for a in facet_axes) for g in groups}, facet_axes, order
    )
    columns = min(MAX_COLUMNS, len(facets))
    rows = math.ceil(len(facets) / columns)
    # Many bars or lines per x value need room (and leave room for the legend).
    n_lines = len({_h(g.params.get(line)) for g in groups}) if line else 1
    width = 5.5 if n_lines <= 4 else 8.0
    fig = Figure(figsize=(width * columns, 4.0 * rows), layout="constrained")
    panels = fig.subplots(rows, columns, squeeze=False).flatten()
    error_bars = any(g.n > 1 for g in groups)
    for panel, facet in zip(panels, facets):
        members = [g for g in groups if tuple(g.params.get(a) for a in facet_axes) == facet]
        _draw(panel, spec, members, order, error_bars)
        if facet_axes:
            panel.set_title(", ".join(f"{a}={v}" for a, v in zip(facet_axes, facet)), fontsize=10)
    for panel in panels[len(facets) :]:
        panel.set_visible(False)
    fig.suptitle(spec.get("title") or f"{spec['y']} vs {x}")
    fig.savefig(path, dpi=100)
    return True


def select(
    spec: dict, groups: Sequence[Group], axes: Sequence[AxisInfo]
) -> tuple[list[Group], dict[str, list]]:
    """The groups that have the plot's metric and x value, and each axis's value order.

    `x_values` in the spec keeps only those x values, in its order.
    """
    y, x = spec["y"], spec["x"]
    groups = [g for g in groups if g.values.get(y) and x in g.params]
    order = {axis["name"]: list(axis["values"]) for axis in axes}
    if "x_values" in spec:
        groups = [g for g in groups if g.params[x] in spec["x_values"]]
        order[x] = list(spec["x_values"])
    return groups, order


def _draw(panel: Any, spec: dict, groups: list[Group], order: dict, error_bars: bool) -> None:
    y, x, line, kind = spec["y"], spec["x"], spec.get("line"), spec.get("kind", "line")
    xs = ordered({(g.params[x],) for g in groups}, [x], order)
    x_values = [v[0] for v in xs]
    numeric = kind == "line" and all(_is_number(v) for v in x_values)
    positions = x_values if numeric else list(range(len(x_values)))
    lines = ordered(
        {(g.params.get(line) if line else None,) for g in groups}, [line] if line else [], order
    )
    width = 0.8 / max(len(lines), 1)
    for i, (line_value,) in enumerate(lines) if line else enumerate([(None,)]):
        cell = {g.params[x]: g for g in groups if not line or g.params.get(line) == line_value}
        pts = [(p, stats(cell[v].values[y])) for p, v in zip(positions, x_values) if v in cell]
        px = [p for p, _ in pts]
        mean = [s[0] for _, s in pts]
        yerr = [[s[0] - s[1] for _, s in pts], [s[2] - s[0] for _, s in pts]]
        label = str(line_value) if line else None
        if kind == "bar":
            offset = (i - (len(lines) - 1) / 2) * width
            panel.bar(
                [p + offset for p in px],
                mean,
                width,
                label=label,
                yerr=yerr if error_bars else None,
                capsize=3,
            )
        elif error_bars:
            panel.errorbar(px, mean, yerr=yerr, marker="o", capsize=3, label=label)
        else:
            panel.plot(px, mean, marker="o", label=label)
    if not numeric:
        # Many category names side by side overlap; slant them.
        slant = len(x_values) > 5
        panel.set_xticks(
            positions,
            [str(v) for v in x_values],
            rotation=30 if slant else 0,
            ha="right" if slant else "center",
        )
    if spec.get("log_y"):
        panel.set_yscale("log")
    panel.set_xlabel(x)
    panel.set_ylabel(y)
    panel.grid(True, alpha=0.3)
    if line and len(lines) > 4:
        # Beside the plot: inside, a long legend hides bars.
        panel.legend(title=line, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    elif line:
        panel.legend(title=line, fontsize=8)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _h(value: Any) -> str:
    return repr(value)


def ordered(keys: set[tuple], names: list[str], order: dict) -> list[tuple]:
    """Tuples of axis values sorted as the scenario lists each axis's values."""

    def rank(key: tuple) -> tuple:
        out = []
        for name, value in zip(names, key):
            values = order.get(name, [])
            out.append(values.index(value) if value in values else len(values))
        return tuple(out)

    return sorted(keys, key=lambda k: (rank(k), repr(k)))
