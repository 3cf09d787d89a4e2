"""Build: the simulator's per-frame modules compiled with mypyc (src/iotbench/compiled.py).

`pip install .` and `pip install -e .` compile the modules listed in
`iotbench.compiled.MODULES` into C extensions (mypy comes as a build
requirement; the C compiler Python was built with must be on the PATH).
`IOTBENCH_PURE_PYTHON=1 pip install ...` skips compiling, and so does a
machine without that compiler: the same sources then run as plain Python,
with the same results, and compiled copies an earlier editable install left
beside them are removed so that they cannot shadow the sources.
"""

import ast
import os
import shutil
import sys
import sysconfig
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from setuptools import setup

SRC = Path(__file__).parent / "src"


def _constant(path: Path, name: str):
    """A module-level constant of a source file, read without importing the package."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise LookupError(f"{path}: no {name}")


COMPILED_PY = SRC / "iotbench" / "compiled.py"
MODULES = _constant(COMPILED_PY, "MODULES")
PURE = os.environ.get(_constant(COMPILED_PY, "PURE_PYTHON_ENV")) == "1"


def _remove_compiled_copies() -> None:
    for module in MODULES:
        base = SRC.joinpath(*module.split("."))
        for suffix in EXTENSION_SUFFIXES:
            base.with_name(base.name + suffix).unlink(missing_ok=True)
    for runtime in SRC.glob("*__mypyc.*"):  # the compiled modules' shared library
        runtime.unlink()


def _no_compiler() -> bool:
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler):
        return False
    print(
        f"iotbench: no C compiler ({compiler}) found: installing the pure-Python modules "
        "(the same results, slower; see src/iotbench/compiled.py)",
        file=sys.stderr,
    )
    return True


def ext_modules():
    if PURE or _no_compiler():
        _remove_compiled_copies()
        return []
    from mypyc.build import mypycify

    paths = [
        str(SRC.joinpath(*m.split(".")).with_suffix(".py").relative_to(SRC.parent)) for m in MODULES
    ]
    # The modules they import run as Python: their types inform the compiled code,
    # and their own type errors are no reason to fail a build.
    return mypycify([*paths, "--follow-imports=silent"], opt_level="3")


setup(ext_modules=ext_modules())
