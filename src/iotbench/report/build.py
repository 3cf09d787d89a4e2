"""`iotbench report DIR`: summary tables in the terminal, PNG plots and
DIR/report/index.html, all from DIR/results.duckdb."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from rich.console import Console

from iotbench import terminal
from iotbench.report import html
from iotbench.report.plots import plot
from iotbench.report.tables import html_rows, html_table, rich_table, runs_rows, summarize
from iotbench.runner.store import ResultStore, StoredScenario, StoreError

REPORT_DIR = "report"


def build_report(out_dir: str | Path, console: Console | None = None) -> Path:
    """Write DIR/report/ (PNGs + index.html), print the tables; return the index path."""
    out = Path(out_dir)
    console = console or terminal.console()
    with ResultStore(out, read_only=True) as store:
        scenarios = store.scenarios()
        runs = {s.name: store.runs(scenario=s.name) for s in scenarios}
    if not any(runs.values()):
        raise StoreError(f"{out}: no finished runs to report")
    report_dir = out / REPORT_DIR
    report_dir.mkdir(exist_ok=True)
    for old in [*report_dir.glob("*.png"), *report_dir.glob("*.csv")]:  # from earlier reports
        old.unlink()
    sections = []
    for scenario in scenarios:
        if runs[scenario.name]:
            sections.append(_section(scenario, runs[scenario.name], report_dir, console))
    index = report_dir / "index.html"
    html.write(index, sections)
    return index


def _section(
    scenario: StoredScenario, runs: list, report_dir: Path, console: Console
) -> html.Section:
    pairs = [(r.params, r.metrics) for r in runs]
    summary = summarize(pairs, scenario.axes, scenario.report.get("metrics", []))
    everything = summarize(pairs, scenario.axes)
    title = f"{scenario.name}: {scenario.description}"
    console.print(rich_table(summary, title=title, fit=console.is_terminal))
    ordered = _in_axis_order(runs, scenario.axes)
    header, rows = runs_rows(ordered, everything.axes, summary.metrics)
    all_header, all_rows = runs_rows(ordered, everything.axes, everything.metrics)
    _write_csv(report_dir / f"{scenario.name}-runs.csv", all_header, all_rows)
    section = html.Section(
        scenario.name,
        scenario.description,
        len(runs),
        html_table(summary),
        html_table(everything),
        html_rows(header, rows, len(everything.axes) + 2),
        f"{scenario.name}-runs.csv",
    )
    for i, spec in enumerate(scenario.report.get("plots", []), start=1):
        title = spec.get("title") or f"{spec['y']} vs {spec['x']}"
        name = f"{scenario.name}-{i}-{_slug(spec['y'])}-vs-{_slug(spec['x'])}.png"
        if plot(spec, everything.groups, scenario.axes, report_dir / name):
            section.images.append((name, title))
        else:
            note = f"plot {i} ({title}): no run has the metric {spec['y']!r}"
            section.notes.append(note)
            console.print(f"[yellow]{note}[/yellow]", highlight=False)
    return section


def _in_axis_order(runs: list, axes: list) -> list:
    order = {axis["name"]: list(axis["values"]) for axis in axes}

    def rank(run) -> tuple:
        key = []
        for name, values in order.items():
            value = run.params.get(name)
            key.append(values.index(value) if value in values else len(values))
        return (*key, run.repetition)

    return sorted(runs, key=rank)


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    """Every run with every metric, for spreadsheets and scripts (written atomically)."""
    temp = path.with_suffix(".csv.tmp")
    with temp.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    temp.replace(path)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"
