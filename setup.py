"""Build: the simulator's per-frame modules compiled with mypyc (src/iotbench/compiled.py).

`pip install .` and `pip install -e .` compile the modules listed in
`iotbench.compiled.MODULES` into C extensions (mypy comes as a build
requirement; the C compiler Python was built with must be on the PATH).
`IOTBENCH_PURE_PYTHON=1 pip install ...` skips compiling, and so does a
machine without that compiler: the same sources then run as plain Python,
with the same results, and compiled copies an earlier editable install left
beside them are removed so that they cannot shadow the sources.
"""

import importlib.util
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import setup

SRC = Path(__file__).parent / "src"


def _load_compiled():
    """src/iotbench/compiled.py alone: the package's dependencies are not installed yet."""
    spec = importlib.util.spec_from_file_location(
        "_iotbench_compiled", SRC / "iotbench" / "compiled.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


compiled = _load_compiled()
PURE = os.environ.get(compiled.PURE_PYTHON_ENV) == "1"


def _remove_compiled_copies() -> None:
    for module in compiled.MODULES:
        for path in compiled.compiled_files(module, SRC):
            path.unlink()
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

    paths = [str(compiled.source_file(m, SRC).relative_to(SRC.parent)) for m in compiled.MODULES]
    # The modules they import run as Python: their types inform the compiled code,
    # and their own type errors are no reason to fail a build.
    return mypycify([*paths, "--follow-imports=silent"], opt_level="3")


setup(ext_modules=ext_modules())
