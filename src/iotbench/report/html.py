"""The report page: DIR/report/index.html, one self-contained file (inline CSS, no
script, images and files linked relatively) so that the folder opens from disk,
without a server, and can be moved or zipped with its output directory."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.25rem; margin-top: 2.5rem; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.5rem 0 1rem;
        display: block; overflow-x: auto; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.5rem; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1rem 0; } img { max-width: 100%; border: 1px solid #eee; }
.meta, .note { color: #666; font-size: 0.85rem; }
details { margin: 0.5rem 0 1rem; } summary { cursor: pointer; }
pre { background: #f7f7f7; padding: 0.75rem; overflow-x: auto; font-size: 0.8rem; }
"""


@dataclass
class Section:
    name: str
    description: str
    study: str  # "" when the scenario belongs to no study
    runs: int
    summary_table: str  # HTML
    all_metrics_table: str  # HTML
    runs_table: str  # HTML: one row per run, with its seed and pcap
    runs_csv: str  # file name of every run with every metric
    toml: str  # the scenario file as it was run
    parameters: list[tuple[str, str]]  # (what, value): axes, seed, repetitions
    versions: list[str]  # iotbench versions that made the runs
    images: list[tuple[str, str]] = field(default_factory=list)  # (file name, title)
    notes: list[str] = field(default_factory=list)


@dataclass
class Page:
    sections: list[Section]
    software: list[tuple[str, str]]  # (package, version) of the report's maker
    files: list[tuple[str, str]]  # (relative link, what it is): the DuckDB file, errors.log


def render(page: Page) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>iotbench report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>iotbench report</h1>",
        '<p class="meta">Tables show means over repetitions (n = runs); plots show means '
        "with min/max error bars when there are repetitions.</p>",
        _contents(page.sections),
        '<h2 id="files">Files and software</h2>',
        "<ul>",
        *(f'<li><a href="{e(href)}">{e(href)}</a>: {e(what)}</li>' for href, what in page.files),
        "</ul>",
        "<table><thead><tr><th>software</th><th>version</th></tr></thead><tbody>",
        *(
            f'<tr><td>{e(name)}</td><td class="num">{e(version)}</td></tr>'
            for name, version in page.software
        ),
        "</tbody></table>",
    ]
    for section in page.sections:
        parts += _section(section)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _contents(sections: list[Section]) -> str:
    """A list of the studies and their scenarios, each linking to its section."""
    e = html.escape
    by_study: dict[str, list[Section]] = {}
    for section in sections:
        by_study.setdefault(section.study or "Other scenarios", []).append(section)
    items = []
    for study, members in by_study.items():
        links = ", ".join(f'<a href="#{e(s.name)}">{e(s.name)}</a>' for s in members)
        items.append(f"<li>{e(study)}: {links}</li>")
    return '<nav><ul id="contents">' + "".join(items) + "</ul></nav>"


def _section(section: Section) -> list[str]:
    e = html.escape
    study = f"{section.study}: " if section.study else ""
    parts = [
        f'<h2 id="{e(section.name)}">{e(study)}{e(section.name)}</h2>',
        f"<p>{e(section.description)}</p>",
        f'<p class="meta">{section.runs} runs, made with iotbench '
        f"{e(', '.join(section.versions))}</p>",
        "<table><tbody>",
        *(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in section.parameters),
        "</tbody></table>",
        section.summary_table,
    ]
    for file_name, title in section.images:
        parts.append(
            f'<figure><img src="{e(file_name)}" alt="{e(title)}">'
            f"<figcaption>{e(title)}</figcaption></figure>"
        )
    parts += [f'<p class="note">{e(note)}</p>' for note in section.notes]
    parts += [
        "<details><summary>All metrics</summary>",
        section.all_metrics_table,
        "</details>",
        "<details><summary>Every run (seeds, pcaps)</summary>",
        section.runs_table,
        f'<p class="meta">Every run with every metric: '
        f'<a href="{e(section.runs_csv)}">{e(section.runs_csv)}</a></p>',
        "</details>",
        "<details><summary>Scenario file</summary>",
        f"<pre>{e(section.toml)}</pre>",
        "</details>",
    ]
    return parts


def write(path: Path, page: Page) -> None:
    temp = path.with_suffix(".html.tmp")
    temp.write_text(render(page), encoding="utf-8")
    temp.replace(path)
