"""The base of every section's settings type (settings_types.py, generated from the
schema): kept apart from fields.py, which picks those types, so that neither
module imports the other."""

from __future__ import annotations

import dataclasses
from typing import Any


class Settings:
    """The base of every section's settings type: a frozen dataclass whose fields
    are the section's keys (an absent optional key reads as None), nested sections
    their own types, lists tuples, free tables (per-node values) read-only
    mappings."""

    __slots__ = ()

    def keys(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self)]  # type: ignore[arg-type]

    def as_kwargs(self, *omit: str) -> dict[str, Any]:
        """Its values by key (not nested), to build a parameter object from."""
        return {k: getattr(self, k) for k in self.keys() if k not in omit}
