"""Consoles for the command line: fitted to a terminal, every character when piped.

On a terminal, rich fits tables to its width (long headers stack, see
report/tables.py). Output that goes to a pipe or a file has no width to fit,
and rich's fallback of 80 columns would squeeze tables until headers break
mid-word and numbers lose digits; there, tables print at their natural width.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

# Wider than any table we print: rich then never squeezes one.
UNBOUNDED_WIDTH = 100_000


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich would exit(1) on its own; the command line ends every closed
        # pipe the same way instead (cli.main).
        raise BrokenPipeError


def console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr) for what a command prints."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        terminal = False
    if terminal:
        return _Console(stderr=stderr)
    return _Console(stderr=stderr, width=UNBOUNDED_WIDTH)


def print_table(out: Console, table: Table) -> None:
    """Print `table` with its title and caption on lines of their own: rich would
    cut or fold them to the table's width, and they often say the most."""
    title, caption = table.title, table.caption
    table.title = table.caption = None
    if title:
        out.print(Text(str(title), style="bold"), soft_wrap=True)
    out.print(table)
    if caption:
        out.print(Text(str(caption), style="dim"), soft_wrap=True)
