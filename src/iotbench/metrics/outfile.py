"""An output file that appears under its name only once it is complete.

Captures and time series are written while a run goes: into `path`.tmp,
renamed to `path` by `commit()` when the run finished, removed by
`discard()` when it failed. A reader never sees a half-written file, and a
failed run leaves none.
"""

from __future__ import annotations

import os


class OutFile:
    def __init__(self, path: str, mode: str = "wb") -> None:
        self.path = path
        self._tmp = f"{path}.tmp"
        encoding = None if "b" in mode else "utf-8"
        self._file = open(self._tmp, mode, encoding=encoding)  # noqa: SIM115 - see commit()

    def write(self, data: bytes | str) -> None:
        self._file.write(data)

    def commit(self) -> None:
        self._file.close()
        os.replace(self._tmp, self.path)

    def discard(self) -> None:
        self._file.close()
        if os.path.exists(self._tmp):
            os.remove(self._tmp)
