"""Comparing two runs' metrics."""

from __future__ import annotations

import math


def same_metrics(a: dict, b: dict) -> bool:
    """Equal metrics, a NaN equal to a NaN. (Dict equality takes two NaNs as equal
    only when they are the same object, and compiled code boxes each NaN anew.)"""
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k]))
        for k in a
    )
