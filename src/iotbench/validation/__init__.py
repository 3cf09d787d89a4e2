"""Published vs ours: the studies' released figures (figures.py, published/)
and their comparison with stored runs (compare.py)."""

from iotbench.validation.compare import (
    AGREES,
    DIFFERS,
    NOT_RUN,
    Comparison,
    StudyComparison,
    compare,
    stored_runs,
)
from iotbench.validation.figures import Figure, FiguresError, Study, load_studies

__all__ = [
    "AGREES",
    "DIFFERS",
    "NOT_RUN",
    "Comparison",
    "Figure",
    "FiguresError",
    "Study",
    "StudyComparison",
    "compare",
    "load_studies",
    "stored_runs",
]
