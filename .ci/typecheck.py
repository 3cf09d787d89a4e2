"""The type check CI runs: mypy (.ci/mypy.ini) against an allowlist that only shrinks.

    python .ci/typecheck.py            check: exit 1 if a file has more errors than allowed
    python .ci/typecheck.py --shrink   lower the allowlist to today's counts

The code base predates the type check, so .ci/mypy-allowlist.txt holds, per file,
how many errors it may still have. A file with more than its allowance fails
the check, with its errors printed; a new file has an allowance of 0. When a
file has fewer errors than allowed, the check says so and `--shrink` lowers
the allowance (never raises it): fixing types ratchets the list down, and
raising an allowance is an edit a reviewer sees.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / ".ci" / "mypy.ini"
ALLOWLIST = ROOT / ".ci" / "mypy-allowlist.txt"
ERROR = re.compile(r"^(?P<file>[^:\s]+\.py):\d+(?::\d+)?: error: ")


def mypy_errors() -> tuple[Counter[str], dict[str, list[str]]]:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(CONFIG), "--no-error-summary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):  # 2: mypy itself failed (a crash, a bad config)
        sys.exit(f"typecheck: mypy failed (exit {done.returncode}):\n{done.stderr}{done.stdout}")
    counts: Counter[str] = Counter()
    lines: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        match = ERROR.match(line)
        if match:
            counts[match["file"]] += 1
            lines.setdefault(match["file"], []).append(line)
    return counts, lines


def read_allowlist() -> dict[str, int]:
    allowed = {}
    for number, line in enumerate(ALLOWLIST.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        path, _, count = line.rpartition(" ")
        if not path or not count.isdigit():
            sys.exit(f"{ALLOWLIST.name}:{number}: expected 'path count', got {line!r}")
        allowed[path] = int(count)
    return allowed


def write_allowlist(allowed: dict[str, int]) -> None:
    kept = {path: n for path, n in allowed.items() if n > 0}
    header = (
        "# Type errors each file may still have (.ci/typecheck.py): lower only.\n"
        f"# {sum(kept.values())} errors in {len(kept)} files.\n"
    )
    body = "".join(f"{path} {n}\n" for path, n in sorted(kept.items()))
    ALLOWLIST.write_text(header + body)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shrink", action="store_true", help="lower allowances to today's")
    args = parser.parse_args()
    counts, lines = mypy_errors()
    allowed = read_allowlist()
    over = {f: n for f, n in counts.items() if n > allowed.get(f, 0)}
    under = {f: n for f, n in allowed.items() if counts.get(f, 0) < n}
    if args.shrink:
        write_allowlist({f: min(n, counts.get(f, 0)) for f, n in allowed.items()})
        print(f"typecheck: {len(under)} allowances lowered")
    for path in sorted(over):
        print(f"{path}: {counts[path]} type errors, {allowed.get(path, 0)} allowed:")
        print("\n".join(lines[path]))
    if under and not args.shrink:
        print(
            f"typecheck: {len(under)} files have fewer errors than allowed; "
            "run `python .ci/typecheck.py --shrink` to lower their allowances"
        )
    total = sum(counts.values())
    print(f"typecheck: {total} errors in {len(counts)} files; {len(over)} files over allowance")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
