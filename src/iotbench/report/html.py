"""The report page: DIR/report/index.html, one self-contained file (inline CSS,
images linked relatively so the folder can be moved or zipped as it is)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

from iotbench import __version__

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.25rem; margin-top: 2.5rem; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.5rem; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1rem 0; } img { max-width: 100%; border: 1px solid #eee; }
.meta, .note { color: #666; font-size: 0.85rem; }
details { margin: 0.5rem 0 1rem; } summary { cursor: pointer; }
"""


@dataclass
class Section:
    name: str
    description: str
    runs: int
    summary_table: str  # HTML
    all_metrics_table: str  # HTML
    runs_table: str  # HTML: one row per run
    runs_csv: str  # file name of every run with every metric
    images: list[tuple[str, str]] = field(default_factory=list)  # (file name, title)
    notes: list[str] = field(default_factory=list)


def render(sections: list[Section]) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>iotbench report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>iotbench report</h1>",
        (
            f'<p class="meta">iotbench {html.escape(__version__)}; '
            "tables show means over repetitions (n = runs); plots show means with min/max "
            "error bars when there are repetitions.</p>"
        ),
    ]
    for section in sections:
        parts += [
            f'<h2 id="{html.escape(section.name)}">{html.escape(section.name)}</h2>',
            f"<p>{html.escape(section.description)}</p>",
            f'<p class="meta">{section.runs} runs</p>',
            section.summary_table,
            "<details><summary>All metrics</summary>",
            section.all_metrics_table,
            "</details>",
            "<details><summary>Every run</summary>",
            section.runs_table,
            f'<p class="meta">Every run with every metric: '
            f'<a href="{html.escape(section.runs_csv)}">{html.escape(section.runs_csv)}</a></p>',
            "</details>",
        ]
        for file_name, title in section.images:
            parts.append(
                f'<figure><img src="{html.escape(file_name)}" alt="{html.escape(title)}">'
                f"<figcaption>{html.escape(title)}</figcaption></figure>"
            )
        parts += [f'<p class="note">{html.escape(note)}</p>' for note in section.notes]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write(path: Path, sections: list[Section]) -> None:
    temp = path.with_suffix(".html.tmp")
    temp.write_text(render(sections), encoding="utf-8")
    temp.replace(path)
