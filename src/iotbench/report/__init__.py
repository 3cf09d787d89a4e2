"""Report: summary tables, plots and an HTML page from the results store."""

from iotbench.report.build import build_report
from iotbench.report.tables import Summary, rich_table, summarize

__all__ = ["Summary", "build_report", "rich_table", "summarize"]
