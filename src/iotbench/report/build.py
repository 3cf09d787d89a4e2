"""`iotbench report DIR`: summary tables in the terminal, PNG plots and
DIR/report/index.html, all from DIR/results.duckdb."""

from __future__ import annotations

import csv
import platform
import re
import tomllib
from importlib import metadata
from pathlib import Path

from rich.console import Console

from iotbench import __version__, compiled, terminal
from iotbench.report import html
from iotbench.report.plots import plot
from iotbench.report.series_plots import draw_series
from iotbench.report.tables import html_rows, html_table, rich_table, runs_rows, summarize
from iotbench.report.topology import draw_network
from iotbench.runner.campaign import ERRORS_LOG
from iotbench.runner.store import DB_NAME, ResultStore, StoredScenario, StoreError
from iotbench.scenarios.radio_schema import is_radio
from iotbench.scenarios.sweep import network_key

REPORT_DIR = "report"


def build_report(out_dir: str | Path, console: Console | None = None) -> Path:
    """Write DIR/report/ (PNGs + index.html), print the tables; return the index path."""
    out = Path(out_dir)
    console = console or terminal.console()
    with ResultStore(out, read_only=True) as store:
        scenarios = store.scenarios()
        runs = {s.name: store.runs(scenario=s.name) for s in scenarios}
        versions = {s.name: store.versions(s.name) for s in scenarios}
        points = {s.name: store.series(s.name, _series_names(s.report)) for s in scenarios}
        configs = {s.name: store.configs(s.name) for s in scenarios if s.report.get("topology")}
    if not any(runs.values()):
        raise StoreError(f"{out}: no finished runs to report")
    report_dir = out / REPORT_DIR
    report_dir.mkdir(exist_ok=True)
    for old in [*report_dir.glob("*.png"), *report_dir.glob("*.csv")]:  # from earlier reports
        old.unlink()
    sections = []
    for scenario in scenarios:
        if runs[scenario.name]:
            section = _section(scenario, runs[scenario.name], report_dir, console)
            _series_figures(section, scenario, runs[scenario.name], points, report_dir, console)
            if scenario.name in configs:
                _topology(section, scenario, runs[scenario.name], configs, report_dir)
            section.versions = versions[scenario.name]
            sections.append(section)
    sections.sort(key=lambda s: (s.study or "~", s.name))  # by study; the others last
    files = [(f"../{DB_NAME}", "every run's parameters, seed and metrics (DuckDB)")]
    if (out / ERRORS_LOG).is_file():
        files.append((f"../{ERRORS_LOG}", "tracebacks of the runs that failed"))
    published = _published(runs, {s.study for s in sections if s.study})
    index = report_dir / "index.html"
    html.write(index, html.Page(sections, software_versions(), files, published))
    return index


def _published(runs: dict[str, list], studies: set[str]) -> list[html.Published]:
    """The published figures of the studies these runs belong to, against ours."""
    from iotbench.validation import compare, load_studies
    from iotbench.validation.render import comparison_html

    chosen = [s for s in load_studies() if s.study in studies]
    return [
        html.Published(r.study.study, r.summary(), comparison_html(r))
        for r in compare(chosen, runs)
    ]


def software_versions() -> list[tuple[str, str]]:
    """iotbench, Python, the platform, whether the per-frame modules are compiled,
    and every package iotbench depends on."""
    found = [
        ("iotbench", __version__),
        ("Python", platform.python_version()),
        ("platform", platform.platform()),
        ("per-frame modules", compiled.describe()),
    ]
    for requirement in metadata.requires("iotbench") or []:
        if "extra ==" in requirement:
            continue  # optional extras: test and cluster tools
        name = re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0]
        try:
            found.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            found.append((name, "not installed"))
    return found


def _section(
    scenario: StoredScenario, runs: list, report_dir: Path, console: Console
) -> html.Section:
    pairs = [(r.params, r.metrics) for r in runs]
    summary = summarize(pairs, scenario.axes, scenario.report.get("metrics", []))
    everything = summarize(pairs, scenario.axes)
    title = f"{scenario.name}: {scenario.description}"
    terminal.print_table(console, rich_table(summary, title=title, fit=console.is_terminal))
    ordered = _in_axis_order(runs, scenario.axes)
    header, rows = runs_rows(ordered, everything.axes, summary.metrics)
    all_header, all_rows = runs_rows(ordered, everything.axes, everything.metrics)
    _write_csv(report_dir / f"{scenario.name}-runs.csv", all_header, all_rows)
    document = tomllib.loads(scenario.toml)
    pcaps = [f"../{run.pcap}" if run.pcap else None for run in ordered]
    section = html.Section(
        name=scenario.name,
        description=scenario.description,
        study=str(document.get("study", "")),
        runs=len(runs),
        summary_table=html_table(summary),
        all_metrics_table=html_table(everything),
        runs_table=html_rows(header, rows, len(everything.axes) + 2, ("pcap", pcaps)),
        runs_csv=f"{scenario.name}-runs.csv",
        toml=scenario.toml,
        parameters=_parameters(scenario, document, runs),
        versions=[],
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


def _series_names(report: dict) -> list[str]:
    figures = report.get("series", [])
    return sorted({f[k] for f in figures for k in ("series", "reference", "color_by") if k in f})


def _series_figures(
    section: html.Section,
    scenario: StoredScenario,
    runs: list,
    points: dict,
    report_dir: Path,
    console: Console,
) -> None:
    ordered = _in_axis_order(runs, scenario.axes)
    for i, spec in enumerate(scenario.report.get("series", []), start=1):
        title = spec.get("title") or f"{spec['series']} ({spec['kind']})"
        name = f"{scenario.name}-series-{i}-{_slug(spec['series'])}-{spec['kind']}.png"
        if draw_series(spec, ordered, points[scenario.name], scenario.axes, report_dir / name):
            section.images.append((name, title))
        else:
            note = f"figure {title}: no run has the series {spec['series']!r}"
            section.notes.append(note)
            console.print(f"[yellow]{note}[/yellow]", highlight=False)


def _topology(
    section: html.Section, scenario: StoredScenario, runs: list, configs: dict, report_dir: Path
) -> None:
    """The network of the first run (in axis order) and its routing tree."""
    first = _in_axis_order(runs, scenario.axes)[0]
    config = configs[scenario.name][first.key]
    if not is_radio(config["network"]):
        return
    name = f"{scenario.name}-topology.png"
    summary = draw_network(config, report_dir / name, scenario.name)
    section.images.append((name, f"The network and its routing tree ({summary['routing']})"))
    networks = {network_key(c) for c in configs[scenario.name].values()}
    if len(networks) > 1:
        section.notes.append(
            f"The runs have {len(networks)} different networks; the picture shows the one "
            f"of {', '.join(f'{k}={v}' for k, v in first.params.items()) or first.key} "
            "(`iotbench topology` draws any of them)."
        )


def _parameters(scenario: StoredScenario, document: dict, runs: list) -> list[tuple[str, str]]:
    """What the runs were made of: each axis and its values, the seeds, repetitions."""
    rows = []
    for axis in scenario.axes:
        what = f"axis {axis['name']}" + (f" ({axis['key']})" if axis.get("key") else "")
        rows.append((what, ", ".join(str(v) for v in axis["values"])))
    rows.append(("base seed", f"{document.get('seed', 1)} (each run's seed derives from it)"))
    rows.append(("repetitions", str(len({run.repetition for run in runs}))))
    return rows


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
