"""A run's time series and distributions, which the results store keeps in its
`series` table beside the run's metrics (docs/metrics.md, "Time series").

Each row is one point: (series, node, x, y, n). `series` names what it is
(`energy_j`, `goodput_per_s`, `tta_cdf`, ...), `node` the node it belongs to
(-1: the whole network), `x` and `y` its coordinates (x is the virtual time
for a series over time), `n` how many observations the point stands for (the
link-stress scatter's multiplicity; 1 elsewhere). The rows are kept in
columns of machine numbers, so 100,000 of them cost about 4 MB.

A run returns the rows as its result's `series` (metrics/result.py).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Final

NETWORK: Final = -1  # `node` of a point that belongs to the whole network

SeriesRow = tuple[str, int, float, float, int]


class SeriesTable:
    """Rows of points, column by column."""

    __slots__ = ("names", "node", "x", "y", "n")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.node = array("i")
        self.x = array("d")
        self.y = array("d")
        self.n = array("q")

    def add(self, series: str, node: int, x: float, y: float, n: int = 1) -> None:
        self.names.append(series)
        self.node.append(node)
        self.x.append(x)
        self.y.append(y)
        self.n.append(n)

    def add_rows(self, names: list[str], nodes: list[int], x: float, ys: list[float]) -> None:
        """`add(name, node, x, y)` for each name, node and y in turn: a bin's points
        of every node at once. One extend a column, where each point's `add`
        called an array's `append` through Python five times (about 2,800
        instructions a point, compiled)."""
        count = len(names)
        if len(nodes) != count or len(ys) != count:
            raise ValueError(f"{count} names, {len(nodes)} nodes and {len(ys)} values")
        self.names.extend(names)
        self.node.extend(nodes)
        self.x.extend([x] * count)
        self.y.extend(ys)
        self.n.extend([1] * count)

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[SeriesRow]:
        return zip(self.names, self.node, self.x, self.y, self.n, strict=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SeriesTable) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # mutable
