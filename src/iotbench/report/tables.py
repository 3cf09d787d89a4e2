"""Summary tables: one row per combination of axis values, means over repetitions.

Used both at the end of `iotbench run` and by `iotbench report` (terminal and HTML).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.table import Table

AxisInfo = Mapping[str, Any]  # {"name": ..., "values": [...]} as the store keeps axes


@dataclass
class Group:
    """The runs of one combination of axis values (its repetitions)."""

    params: dict[str, Any]
    values: dict[str, list[float]] = field(default_factory=dict)  # metric -> one value per run
    n: int = 0


@dataclass
class Summary:
    axes: list[str]
    metrics: list[str]
    groups: list[Group]


def stats(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, min, max); NaN when there are no values. A NaN value (a run that could
    not measure it) makes the mean NaN rather than silently dropping that run."""
    if not values:
        return math.nan, math.nan, math.nan
    if any(math.isnan(v) for v in values):
        finite = [v for v in values if not math.isnan(v)]
        return math.nan, min(finite, default=math.nan), max(finite, default=math.nan)
    return sum(values) / len(values), min(values), max(values)


def summarize(
    runs: Iterable[tuple[Mapping[str, Any], Mapping[str, float | int]]],
    axes: Sequence[AxisInfo],
    metrics: Sequence[str] = (),
) -> Summary:
    """Group (params, metrics) pairs by params; order groups as the axes list their values.

    `metrics` picks the columns (the scenario's report.metrics); empty = every
    metric seen, in first-seen order.
    """
    groups: dict[str, Group] = {}
    seen: dict[str, None] = {}
    for params, values in runs:
        group = groups.setdefault(_key(params), Group(dict(params)))
        group.n += 1
        for name, value in values.items():
            seen.setdefault(name)
            group.values.setdefault(name, []).append(float(value))
    names = [axis["name"] for axis in axes]
    for group in groups.values():
        names += [k for k in group.params if k not in names]
    ordered = sorted(groups.values(), key=lambda g: _order(g.params, axes))
    return Summary(names, list(metrics) or list(seen), ordered)


def _key(params: Mapping[str, Any]) -> str:
    return json.dumps(params, sort_keys=True)


def _order(params: Mapping[str, Any], axes: Sequence[AxisInfo]) -> tuple:
    out = []
    for axis in axes:
        values = list(axis["values"])
        value = params.get(axis["name"])
        out.append(values.index(value) if value in values else len(values))
    return tuple(out)


def format_value(value: float) -> str:
    if math.isnan(value):
        return "–"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    if abs(value) >= 1000:
        return f"{value:.1f}"
    return f"{value:.4g}"


def cells(summary: Summary) -> tuple[list[str], list[list[str]]]:
    """Header and rows as text: axes, n, then the mean of each metric."""
    header = summary.axes + ["n"] + summary.metrics
    rows = []
    for group in summary.groups:
        row = [str(group.params.get(axis, "")) for axis in summary.axes] + [str(group.n)]
        row += [format_value(stats(group.values.get(m, []))[0]) for m in summary.metrics]
        rows.append(row)
    return header, rows


def stacked(name: str) -> str:
    """ "object_download_time_s" -> "object_\\ndownload_\\ntime_s" (a unit stays attached)."""
    parts = name.split("_")
    if len(parts) >= 2 and parts[-1] in UNITS:
        parts[-2:] = [parts[-2] + "_" + parts[-1]]
    return "_\n".join(parts)


UNITS = {"s", "ms", "bps"}


def rich_table(summary: Summary, title: str | None = None, fit: bool = True) -> Table:
    """`fit`: stack long metric names so that the table fits a terminal; off for
    output to a pipe or file, where every header stays on one line."""
    header, rows = cells(summary)
    table = Table(
        title=title,
        caption="means over repetitions; n = runs",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    n_axes = len(summary.axes)
    for i, name in enumerate(header):
        # A value is never split (min_width); long names are stacked at their
        # underscores instead, so that a wide table still fits the terminal.
        widest = max((len(row[i]) for row in rows), default=1)
        table.add_column(
            stacked(name) if fit else name,
            justify="left" if i < n_axes else "right",
            overflow="fold",
            min_width=widest,
        )
    for row in rows:
        table.add_row(*row)
    return table


def html_table(summary: Summary) -> str:
    header, rows = cells(summary)
    return html_rows(header, rows, len(summary.axes))


def runs_rows(
    runs: Sequence, axes: Sequence[str], metrics: Sequence[str]
) -> tuple[list[str], list[list[str]]]:
    """Header and one row per stored run (its axis values, repetition, seed, metrics),
    in the order the axes list their values."""
    header = [*axes, "rep", "seed", *metrics]
    rows = []
    for run in runs:
        row = [str(run.params.get(a, "")) for a in axes] + [str(run.repetition), str(run.seed)]
        row += [format_value(float(run.metrics.get(m, math.nan))) for m in metrics]
        rows.append(row)
    return header, rows


def html_rows(
    header: list[str],
    rows: list[list[str]],
    n_axes: int,
    links: tuple[str, list[str | None]] | None = None,
) -> str:
    """An HTML table; `links` = (column name, one href or None per row) adds a last
    column of links (a run's pcap, say)."""

    def row_html(row: list[str], tag: str, href: str | None = None) -> str:
        tds = "".join(
            f'<{tag} class="{"axis" if i < n_axes else "num"}">{html.escape(c)}</{tag}>'
            for i, c in enumerate(row)
        )
        if links is not None and tag == "td":
            shown = f'<a href="{html.escape(href)}">{html.escape(href)}</a>' if href else ""
            tds += f"<td>{shown}</td>"
        return f"<tr>{tds}</tr>"

    head = row_html([*header, links[0]] if links else header, "th")
    hrefs = links[1] if links else [None] * len(rows)
    body = "\n".join(row_html(r, "td", h) for r, h in zip(rows, hrefs, strict=True))
    return f"<table>\n<thead>{head}</thead>\n<tbody>\n{body}\n</tbody>\n</table>"
