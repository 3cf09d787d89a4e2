"""Published vs ours as a terminal table, JSON lines, HTML and Markdown.

One set of columns everywhere: the figure (what, where in the paper), the
published value, ours, the difference, the verdict, and for a figure that
differs or is not run, why (the study page's explanation, what failed, or
the command that makes the runs).
"""

from __future__ import annotations

from html import escape
from typing import Any

from rich.table import Table

from iotbench.validation.compare import AGREES, DIFFERS, NOT_RUN, Comparison, StudyComparison

COLUMNS = ("figure", "where", "published", "ours", "difference", "verdict", "why")
_STYLE = {AGREES: "green", DIFFERS: "yellow", NOT_RUN: "dim"}


def difference_text(row: Comparison) -> str:
    if row.difference is None:
        return ""
    return f"{row.difference:+.3g}" if row.difference else "0"


def why_text(row: Comparison) -> str:
    """Empty when the figure agrees: the page's explanation, what failed, or how to run it."""
    if row.verdict == AGREES:
        return ""
    if row.verdict == NOT_RUN:
        return row.detail
    page = f"docs/studies/{row.figure.why}"
    return f"{page}: {row.detail}" if row.detail else page


def _cells(row: Comparison, why: str) -> tuple[str, ...]:
    """One row's cells, in COLUMNS' order."""
    return (
        row.figure.what,
        row.figure.where,
        row.published_text(),
        row.ours_text(),
        difference_text(row),
        row.verdict,
        why,
    )


def comparison_table(result: StudyComparison) -> Table:
    table = Table(title=f"{result.study.study}: published vs ours — {result.study.title}")
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for row in result.rows:
        style = _STYLE[row.verdict]
        cells = list(_cells(row, why_text(row)))
        cells[5] = f"[{style}]{row.verdict}[/{style}]"
        table.add_row(*cells)
    return table


def comparison_json(results: list[StudyComparison]) -> list[dict[str, Any]]:
    out = []
    for result in results:
        for row in result.rows:
            f = row.figure
            out.append(
                {
                    "study": f.study,
                    "figure": f.id,
                    "what": f.what,
                    "where": f.where,
                    "exactness": f.exactness,
                    "published": f.published,
                    "unit": f.unit,
                    "ours": row.ours,
                    "difference": row.difference,
                    "verdict": row.verdict,
                    "why": why_text(row),
                }
            )
    return out


def comparison_html(result: StudyComparison) -> str:
    """The study's table for the report: a verdict class per row for the eye."""
    head = "".join(f"<th>{escape(c)}</th>" for c in COLUMNS)
    rows = []
    for row in result.rows:
        body = "".join(f"<td>{escape(c)}</td>" for c in _cells(row, why_text(row)))
        rows.append(f'<tr class="verdict-{row.verdict.replace(" ", "-")}">{body}</tr>')
    return (
        f'<table class="published" id="published-{result.study.study}">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def comparison_markdown(result: StudyComparison) -> str:
    """The study page's table (docs/studies/), the same rows as the report's."""
    lines = [
        "| " + " | ".join(COLUMNS) + " |",
        "| " + " | ".join("---" for _ in COLUMNS) + " |",
    ]
    for row in result.rows:
        why = why_text(row)
        if row.verdict == DIFFERS:
            why = f"[{row.figure.why}]({row.figure.why})" + (
                f": {row.detail}" if row.detail else ""
            )
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(row, why)) + " |")
    return "\n".join(lines)
