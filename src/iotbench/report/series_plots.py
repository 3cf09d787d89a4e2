"""PNG figures from the runs' time series and distributions (the store's `series`
table), one per `[[report.series]]` spec.

Kinds:
  cdf      a distribution per value of `line` (its x against the share y), the
           repetitions' quantiles averaged (Vincent averaging)
  box      the series' y values (every point of every repetition) as one box per
           value of `line`; with `reference`, that series' mean drawn across
           each box (the optimum), and only the points where the reference is
           above zero (the spans in which readings were taken)
  time     y over x, one line per value of `line`, the mean over repetitions
           at each x; with `reference`, that series' mean as a dashed line
  scatter  x against y per value of `line`, a dot's area by its `n` (how many
           observations it stands for), summed over repetitions, beside the
           diagonal y = x
  nodes    y over x for every node, one panel per value of `line`, coloured by
           the node's value in the `color_by` series (the first repetition);
           with `relative`, each node's y minus the mean of all nodes at that x
           (energy differs little between nodes whose radios always listen:
           this shows which consume more)

Axes other than `line` with several values among the runs get a panel per
combination (so nothing is averaged across them silently); `filter` keeps only
some values of an axis, as `iotbench run --filter` does.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib import colormaps
from matplotlib.figure import Figure

from iotbench.report.plots import ordered
from iotbench.report.tables import AxisInfo

KINDS = ("cdf", "box", "time", "scatter", "nodes")
MAX_COLUMNS = 5

# Axis labels of the series iotbench writes (docs/metrics.md, "Time series").
LABELS = {
    "tta_cdf": ("time to content arrival (s)", "share of the delivered readings"),
    "goodput_per_s": ("virtual time (s)", "readings arrived per second"),
    "offered_per_s": ("virtual time (s)", "readings taken per second"),
    "energy_j": ("virtual time (s)", "energy since t = 0 (J)"),
    "pit_entries": ("virtual time (s)", "most PIT entries held"),
    "cs_bytes": ("virtual time (s)", "most Content Store bytes held"),
    "link_stress": ("fewest hops to the gateway", "link traversals of a reading"),
}

Point = tuple[str, int | None, float | None, float | None, int]


def draw_series(
    spec: Mapping[str, Any],
    runs: Sequence[Any],
    points: Mapping[str, Sequence[Point]],
    axes: Sequence[AxisInfo],
    path: Path,
) -> bool:
    """Draw `spec` from `runs` (StoredRun) and their points (by run key) into
    `path`; False (and no file) when no run has the series."""
    name, line, kind = spec["series"], spec.get("line"), spec["kind"]
    keep = spec.get("filter", {})
    order = {axis["name"]: list(axis["values"]) for axis in axes}
    runs = [
        r
        for r in runs
        if all(r.params.get(a) in values for a, values in keep.items())
        and any(p[0] == name for p in points.get(r.key, ()))
    ]
    if not runs:
        return False
    facet_axes = [a for a in order if a != line and len({repr(r.params.get(a)) for r in runs}) > 1]
    lines = ordered({(r.params.get(line),) for r in runs}, [line] if line else [], order)
    panels = []  # (title, {line value: runs})
    for facet in ordered({_values(r, facet_axes) for r in runs}, facet_axes, order):
        members = [r for r in runs if _values(r, facet_axes) == facet]
        title = ", ".join(f"{a}={v}" for a, v in zip(facet_axes, facet))
        by_line = {value: [r for r in members if r.params.get(line) == value] for (value,) in lines}
        by_line = {v: rs for v, rs in by_line.items() if rs}
        if kind in ("scatter", "nodes"):  # a panel per line value
            for value, rs in by_line.items():
                label = f"{line}={value}" if line else ""
                panels.append((", ".join(t for t in (label, title) if t), {value: rs}))
        else:
            panels.append((title, by_line))
    columns = min(MAX_COLUMNS, len(panels))
    rows = math.ceil(len(panels) / columns)
    size = (4.2, 3.4) if kind in ("scatter", "nodes") else (6.5, 4.2)
    fig = Figure(figsize=(size[0] * columns, size[1] * rows), layout="constrained")
    axes_grid = fig.subplots(rows, columns, squeeze=False).flatten()
    x_label, y_label = LABELS.get(name, ("x", name))
    draw = {"cdf": _cdf, "box": _box, "time": _time, "scatter": _scatter, "nodes": _nodes}[kind]
    scale = _largest_n(points, runs, name)
    for panel, (title, by_line) in zip(axes_grid, panels):
        draw(panel, spec, by_line, points, line, scale)
        panel.set_title(title, fontsize=9)
        panel.set_xlabel(spec.get("x_label") or ("" if kind == "box" else x_label), fontsize=8)
        panel.set_ylabel(spec.get("y_label") or y_label, fontsize=8)
        if spec.get("log_x"):
            panel.set_xscale("log")
        if spec.get("log_y"):
            panel.set_yscale("log")
        panel.grid(True, alpha=0.3)
    for panel in axes_grid[len(panels) :]:
        panel.set_visible(False)
    fig.suptitle(spec.get("title") or f"{name} ({kind})")
    fig.savefig(path, dpi=90)
    return True


def _values(run: Any, names: Sequence[str]) -> tuple:
    return tuple(run.params.get(a) for a in names)


def _of(points: Mapping[str, Sequence[Point]], run: Any, name: str) -> list[Point]:
    return [p for p in points.get(run.key, ()) if p[0] == name]


def _largest_n(points: Mapping[str, Sequence[Point]], runs: Sequence[Any], name: str) -> int:
    sums: dict[tuple, int] = defaultdict(int)
    for run in runs:
        for _, _, x, y, n in _of(points, run, name):
            sums[(repr(run.params), x, y)] += n
    return max(sums.values(), default=1)


def _legend(panel: Any, line: str | None, count: int) -> None:
    if count > 4:  # beside the plot: inside, a long legend hides the lines
        panel.legend(title=line, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    elif count:
        panel.legend(title=line, fontsize=7)


def _cdf(panel, spec, by_line, points, line, scale) -> None:
    for value, runs in by_line.items():
        curves = [_by_share(_of(points, r, spec["series"])) for r in runs]
        curves = [c for c in curves if c]
        if not curves:
            continue
        length = min(len(c) for c in curves)
        xs = [_mean([c[i][2] for c in curves]) for i in range(length)]
        ys = [curves[0][i][3] for i in range(length)]
        panel.step(xs, ys, where="post", label=str(value) if line else None)
    _legend(panel, line, len(by_line) if line else 0)


def _by_share(points: list[Point]) -> list[Point]:
    """A run's CDF points in order of their share y (a point without one, stored
    for a value that was not finite, has no place on the curve)."""
    present = [(y, p) for p in points if (y := p[3]) is not None]
    return [p for _, p in sorted(present, key=lambda yp: yp[0])]


def _box(panel, spec, by_line, points, line, scale) -> None:
    reference = spec.get("reference")
    data, labels, optimum = [], [], []
    for value, runs in by_line.items():
        values, ref = [], []
        for run in runs:
            taken = {p[2]: p[3] for p in _of(points, run, reference)} if reference else {}
            for _, _, x, y, _ in _of(points, run, spec["series"]):
                if y is None or (reference and not (taken.get(x) or 0) > 0):
                    continue
                values.append(y)
                if reference:
                    ref.append(taken[x])
        data.append(values)
        labels.append(str(value))
        optimum.append(_mean(ref) if ref else math.nan)
    positions = list(range(1, len(data) + 1))
    panel.boxplot(data, positions=positions, widths=0.6, showfliers=True, flierprops={"ms": 2})
    if reference:
        for i, level in zip(positions, optimum):
            label = f"optimum ({reference})" if i == 1 else None
            panel.hlines(level, i - 0.4, i + 0.4, colors="tab:red", linestyles="--", label=label)
        panel.legend(fontsize=7)
    slant = len(labels) > 5
    panel.set_xticks(
        positions, labels, rotation=30 if slant else 0, ha="right" if slant else "center"
    )


def _time(panel, spec, by_line, points, line, scale) -> None:
    for value, runs in by_line.items():
        xs, ys = _mean_over_runs(points, runs, spec["series"])
        panel.plot(xs, ys, lw=1.2, label=str(value) if line else None)
    reference = spec.get("reference")
    if reference:
        every = [r for runs in by_line.values() for r in runs]
        xs, ys = _mean_over_runs(points, every, reference)
        panel.plot(xs, ys, color="black", ls="--", lw=1.0, label=f"optimum ({reference})")
    _legend(panel, line, len(by_line) + (1 if reference else 0))


def _mean_over_runs(points, runs, name) -> tuple[list[float], list[float]]:
    at: dict[float, list[float]] = defaultdict(list)
    for run in runs:
        for _, _, x, y, _ in _of(points, run, name):
            if x is not None and y is not None:
                at[x].append(y)
    xs = sorted(at)
    return xs, [_mean(at[x]) for x in xs]


def _scatter(panel, spec, by_line, points, line, scale) -> None:
    sums: dict[tuple[float, float], int] = defaultdict(int)
    for runs in by_line.values():
        for run in runs:
            for _, _, x, y, n in _of(points, run, spec["series"]):
                if x is not None and y is not None:
                    sums[(x, y)] += n
    if not sums:
        return
    xs = [x for x, _ in sums]
    ys = [y for _, y in sums]
    area = [8 + 400 * n / scale for n in sums.values()]
    panel.scatter(xs, ys, s=area, alpha=0.55, color="tab:blue", edgecolors="none")
    top = max(max(xs), max(ys))
    panel.plot([0, top], [0, top], color="0.4", ls=":", lw=1.0, label="shortest path")
    panel.legend(fontsize=7, loc="upper left")


def _nodes(panel, spec, by_line, points, line, scale) -> None:
    (runs,) = by_line.values()
    run = min(runs, key=lambda r: r.repetition)
    colour_of = {p[1]: p[3] for p in _of(points, run, spec.get("color_by", ""))}
    lines: dict[int, list[tuple[float, float]]] = defaultdict(list)
    # Points without a finite x or y are left out, as the other kinds do.
    rows = [
        (node, x, y)
        for _, node, x, y, _ in _of(points, run, spec["series"])
        if node is not None and x is not None and y is not None
    ]
    for node, x, y in rows:
        lines[node].append((x, y))
    if spec.get("relative"):  # each node against the mean of all at the same x
        at: dict[float, list[float]] = defaultdict(list)
        for _, x, y in rows:
            at[x].append(y)
        mean = {x: _mean(ys) for x, ys in at.items()}
        lines = {node: [(x, y - mean[x]) for x, y in xy] for node, xy in lines.items()}
    levels = sorted({v for v in colour_of.values() if v is not None and v >= 0})
    cmap = colormaps["viridis"]
    shade: dict[float | None, Any] = {
        v: cmap(i / max(1, len(levels) - 1)) for i, v in enumerate(levels)
    }
    labelled: set = set()
    for node, xy in sorted(lines.items()):
        level = colour_of.get(node)
        colour = shade.get(level, "0.6")
        label = None
        if level not in labelled:
            labelled.add(level)
            label = f"{spec.get('color_by')} {level:g}" if level in shade else "other"
        panel.plot([x for x, _ in xy], [y for _, y in xy], color=colour, lw=0.8, label=label)
    if labelled:
        handles, labels = panel.get_legend_handles_labels()
        ranked = sorted(zip(labels, handles), key=lambda lh: (lh[0] == "other", lh[0]))
        panel.legend([h for _, h in ranked], [lb for lb, _ in ranked], fontsize=6)


def _mean(values: Sequence[float | None]) -> float:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else math.nan
