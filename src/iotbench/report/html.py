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
tr.verdict-agrees td:nth-child(6) { color: #17702a; font-weight: 600; }
tr.verdict-differs td:nth-child(6) { color: #9a5b00; font-weight: 600; }
tr.verdict-not-run td { color: #888; }
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
class Published:
    """A study's published figures against ours (validation/)."""

    study: str
    summary: str  # "S1: 14 of 18 figures agree (4 differ)"
    table: str  # HTML


@dataclass
class Page:
    sections: list[Section]
    software: list[tuple[str, str]]  # (package, version) of the report's maker
    files: list[tuple[str, str]]  # (relative link, what it is): the DuckDB file, errors.log
    published: list[Published] = field(default_factory=list)


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
        *_summary(page.published),
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
    published = {p.study: p for p in page.published}
    for section in page.sections:
        study = published.pop(section.study, None)
        if study is not None:  # the study's comparison above its scenarios
            parts += _published(study)
        parts += _section(section)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _summary(published: list[Published]) -> list[str]:
    """The front page's first word: how each study's published figures compare."""
    if not published:
        return []
    e = html.escape
    items = "".join(
        f'<li><a href="#published-{e(p.study)}-section">{e(p.summary)}</a></li>' for p in published
    )
    return [
        '<h2 id="published-summary">Published vs ours</h2>',
        '<p class="meta">Each study\'s released figures against ours from these runs: '
        "agrees (within the figure's stated exactness), differs (the study's page in "
        "docs/studies/ explains why), not run.</p>",
        f'<ul class="published-summary">{items}</ul>',
    ]


def _published(study: Published) -> list[str]:
    e = html.escape
    return [
        f'<h2 id="published-{e(study.study)}-section">{e(study.study)}: published vs ours</h2>',
        f'<p class="meta">{e(study.summary)}</p>',
        study.table,
    ]


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
    ]
    for file_name, title in section.images:  # the figures first, then the tables
        parts.append(
            f'<figure><img src="{e(file_name)}" alt="{e(title)}">'
            f"<figcaption>{e(title)}</figcaption></figure>"
        )
    parts.append(section.summary_table)
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
