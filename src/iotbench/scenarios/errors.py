"""Errors a user can fix: a bad scenario file, option or results directory.

The CLI prints these as one line on stderr and exits with code 2; anything else
that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem in what the user asked for, with a message that says how to fix it."""


class ScenarioError(UserError):
    """A scenario file (or an option applied to it) that does not validate."""
