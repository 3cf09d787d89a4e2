"""iotbench: IoT application protocols under modelled network conditions, in virtual time."""

__version__ = "0.1.0"

# A compiled module older than its source would run instead of it (compiled.py).
from iotbench.compiled import check_current as _check_current  # noqa: E402

_check_current()
