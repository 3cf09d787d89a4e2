"""Combining config fragments: presets over the base, dotted-key assignments.

Merging follows the schema: fixed-key sections merge key by key, while a
model table (`loss = { model = ... }`) or any other value replaces what was
there whole. So a preset that switches `loss` from gilbert-elliott to
bernoulli does not inherit the old model's parameters.
"""

from __future__ import annotations

import copy
from typing import Any

from iotbench.scenarios.fields import Node, Section, Table


def merge(node: Node | None, base: Any, overlay: Any) -> Any:
    """`overlay` deep-merged over `base` (neither is modified)."""
    merges = node is None or isinstance(node, Section)
    if not (merges and isinstance(base, dict) and isinstance(overlay, dict)):
        return copy.deepcopy(overlay)
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        # Unknown keys merge generically; validation reports them afterwards.
        child = node.fields.get(key) if isinstance(node, Section) else None
        out[key] = merge(child, base[key], value) if key in base else copy.deepcopy(value)
    return out


def set_path(config: Table, path: str, value: Any) -> Table:
    """A copy of `config` with the dotted `path` set to `value` (tables created on the way)."""
    out = copy.deepcopy(config)
    parts = path.split(".")
    table = out
    for i, part in enumerate(parts[:-1]):
        child = table.get(part)
        if child is None:
            child = table[part] = {}
        elif not isinstance(child, dict):
            raise ValueError(f"{'.'.join(parts[: i + 1])} is a value, not a table")
        table = child
    table[parts[-1]] = copy.deepcopy(value)
    return out


def nest(path: str, value: Any) -> Table:
    """'a.b.c', v -> {'a': {'b': {'c': v}}}"""
    return set_path({}, path, value)
