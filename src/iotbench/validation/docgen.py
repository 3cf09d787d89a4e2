"""The study pages' "published vs ours" tables, generated from a full campaign.

    python -m iotbench.validation.docgen --record results/reproduce
        keeps, of every run of the scenarios the figures use, its parameters and
        the metrics the figures read: docs/studies/published-runs.json
    python -m iotbench.validation.docgen --write
        renders each study's table from that file into docs/studies/<study>.md,
        between the markers <!-- published-vs-ours --> and <!-- /published-vs-ours -->
    python -m iotbench.validation.docgen --check
        exits 1 if a page's table is not what the recorded runs give (the tests run it)

The tables come from the same comparison as `iotbench compare`, over the
recorded runs: a page cannot say a figure agrees unless the runs do.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from iotbench.validation.compare import compare, stored_runs
from iotbench.validation.figures import Study, load_studies
from iotbench.validation.render import comparison_markdown

DOCS = Path(__file__).resolve().parents[3] / "docs" / "studies"
RECORD = "published-runs.json"
BEGIN, END = "<!-- published-vs-ours -->", "<!-- /published-vs-ours -->"


def record(results: list[Path], studies: list[Study]) -> dict[str, list[dict[str, Any]]]:
    """{scenario: [{"params": ..., "metrics": {only what the figures read}}]}."""
    wanted: dict[str, set[str]] = {}
    for study in studies:
        for figure in study.figures:
            for term in figure.terms():
                wanted.setdefault(term.scenario, set()).add(term.metric)
    kept: dict[str, list[dict[str, Any]]] = {}
    for folder in results:
        for scenario, runs in stored_runs(folder).items():
            if scenario not in wanted:
                continue
            for run in runs:
                metrics = {k: run.metrics[k] for k in sorted(wanted[scenario]) if k in run.metrics}
                kept.setdefault(scenario, []).append({"params": run.params, "metrics": metrics})
    for recorded in kept.values():
        recorded.sort(key=lambda r: json.dumps(r["params"], sort_keys=True))
    return dict(sorted(kept.items()))


def recorded_runs(path: Path) -> dict[str, list[SimpleNamespace]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        scenario: [SimpleNamespace(params=r["params"], metrics=r["metrics"]) for r in runs]
        for scenario, runs in data.items()
    }


def render_pages(docs: Path, studies: list[Study]) -> dict[Path, str]:
    """Each study page's text with its table rendered from the recorded runs."""
    runs = recorded_runs(docs / RECORD)
    pages = {}
    for result in compare(studies, runs):
        page = docs / result.study.page
        text = page.read_text(encoding="utf-8")
        if BEGIN not in text or END not in text:
            raise SystemExit(f"{page}: no {BEGIN} ... {END} markers for the table")
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        table = f"{result.summary()}.\n\n{comparison_markdown(result)}"
        pages[page] = f"{head}{BEGIN}\n{table}\n{END}{tail}"
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--record", nargs="+", type=Path, metavar="RESULTS")
    what.add_argument("--write", action="store_true")
    what.add_argument("--check", action="store_true")
    parser.add_argument("--docs", type=Path, default=DOCS)
    args = parser.parse_args(argv)
    studies = load_studies()
    if args.record:
        data = record(args.record, studies)
        (args.docs / RECORD).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"recorded {sum(len(r) for r in data.values())} runs of {len(data)} scenarios")
        return 0
    pages = render_pages(args.docs, studies)
    stale = [p for p, text in pages.items() if p.read_text(encoding="utf-8") != text]
    if args.write:
        for page in stale:
            page.write_text(pages[page], encoding="utf-8")
        print(f"wrote {len(stale)} pages")
        return 0
    for page in stale:
        print(f"{page}: its published-vs-ours table is out of date", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
