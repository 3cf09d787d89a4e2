"""Start a server as a user would, on a port the kernel picks (`--port 0`,
`--listen 127.0.0.1:0`), and read the port from its banner. No free port is
probed first, so no other process can take it between the probe and the bind."""

from __future__ import annotations

import re
import subprocess
import sys

_BANNER_PORT = re.compile(r"127\.0\.0\.1:(\d+)")


def start_listening(*argv: str, banner: str) -> tuple[subprocess.Popen, int, str]:
    """`python -m iotbench ARGV` once its first stderr line holds `banner`:
    (the process, the port that line names, the line)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "iotbench", *argv], stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None  # piped above
    line = proc.stderr.readline()
    match = _BANNER_PORT.search(line)
    if banner not in line or match is None:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"iotbench {' '.join(argv)} did not start: {line}{err}")
    return proc, int(match.group(1)), line
