"""Checks of parameter dataclasses (MQTT, MQTT-SN): one error message shape,
"<Class>.<field> must be <what>, got <value>", raised as ValueError."""

from __future__ import annotations

import math
from typing import TypeGuard


def check(cls: str, name: str, ok: bool, what: str, value: object) -> None:
    if not ok:
        raise ValueError(f"{cls}.{name} must be {what}, got {value!r}")


def is_int(value: object) -> TypeGuard[int]:
    """An int that is not a bool (a TypeGuard: a False says nothing about the type)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_seconds(value: object, *, positive: bool = True) -> bool:
    """A finite number of seconds, > 0 (or >= 0 with positive=False); bools are not."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return False
    return value > 0 if positive else value >= 0
