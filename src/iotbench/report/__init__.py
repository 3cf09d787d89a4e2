"""Report: summary tables, plots and an HTML page from the results store.

The tables (tables.py) need only rich; the plots need matplotlib, which takes
about a second to import. `iotbench run` prints a table at its end and must
not pay for the plots, so the package imports build_report (and with it
matplotlib) only when it is asked for.
"""

from typing import Any

from iotbench.report.tables import Summary, rich_table, summarize

__all__ = ["Summary", "build_report", "rich_table", "summarize"]


def __getattr__(name: str) -> Any:
    if name == "build_report":
        from iotbench.report.build import build_report

        return build_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
