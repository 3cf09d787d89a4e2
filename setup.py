"""Build: the simulator's per-frame modules compiled with mypyc (src/iotbench/compiled.py).

`pip install .` and `pip install -e .` compile the modules listed in
`iotbench.compiled.GROUPS` into C extensions (mypy comes as a build
requirement; the C compiler Python was built with must be on the PATH).
`IOTBENCH_PURE_PYTHON=1 pip install ...` skips compiling, and so does a
machine without that compiler: the same sources then run as plain Python,
with the same results, and compiled copies an earlier editable install left
beside them are removed so that they cannot shadow the sources.

Each group of modules is one C extension, and the groups compile in parallel,
one compiler per core. mypyc's runtime library, which each group links, is
compiled once for all of them (mypyc would #include it in every group's C).
`pip install -v` shows a line as each group finishes.
They compile without debug information; `IOTBENCH_C_DEBUG=1 pip install ...`
adds mypyc's usual `-g1` (file and line for a profiler or debugger). Each
compiles at mypyc's `-O3` but those `compiled.LIGHTLY_OPTIMISED` names, at `-O1`;
on Linux with hidden symbols and `-fno-plt`, and with GCC with link-time
optimisation (`_linkage_args`).
A compiled extension is kept in build/ext-cache/ under a hash of everything
that went into it (its C sources and the headers they include, mypyc's runtime,
the compiler and its flags, the Python version): `pip install -e .` after
`pip install .` in the same checkout, or a reinstall after an edit to one
group's modules, reuses the extensions whose inputs did not change.
"""

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from setuptools import setup
from setuptools.command.build_ext import build_ext

SRC = Path(__file__).parent / "src"
# In the build directory pip builds in (the checkout's own build/).
CACHE = Path("build") / "ext-cache"


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
C_DEBUG_ENV = "IOTBENCH_C_DEBUG"


def _remove_compiled_copies(*, keep_groups: bool = False) -> None:
    # Those of modules an earlier build compiled and this one does not.
    for path in compiled.orphaned_files(SRC):
        path.unlink()
    if not keep_groups:
        for module in compiled.MODULES:
            for path in compiled.compiled_files(module, SRC):
                path.unlink()
        for group in compiled.GROUPS:
            for path in compiled.group_library_files(group, SRC):
                path.unlink()
    # The shared library of the single group earlier builds made, named by a hash.
    for runtime in SRC.glob("*__mypyc.*"):
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


def _digest_files(h, paths, root: Path | None = None) -> None:
    for path in paths:
        name = Path(path).relative_to(root) if root else Path(path)
        h.update(str(name).encode() + b"\0")
        h.update(Path(path).read_bytes())


# Where mypyc writes the C it generates (mypycify's default target_dir).
MYPYC_OUTPUT = Path("build")


def _runtime_copy(path: str, ext) -> bool:
    """Whether `path` is mypyc's copy of a file of its runtime library: mypyc puts
    those in its output directory under their paths in the runtime's own
    directory (one of `ext`'s include directories), librt's in subdirectories
    (vecs/librt_vecs_api.c). Compiled once per group, such a file was written to
    the same object by groups compiling at once: a race, which link-time
    optimisation turned into a compiler error."""
    if MYPYC_OUTPUT not in Path(path).parents:
        return False
    inside = Path(path).relative_to(MYPYC_OUTPUT)
    return any(
        (Path(folder) / inside).is_file()
        for folder in ext.include_dirs
        if Path(folder) != MYPYC_OUTPUT
    )


class BuildExt(build_ext):
    """Parallel build_ext, with a line per finished group and a cache of built extensions."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1
        # build_ext would keep an in-place extension newer than its C even when the
        # flags changed, and the cache below would file it under the new flags. The
        # cache is what skips unchanged work here.
        self.force = True

    def build_extensions(self) -> None:
        # The group libraries first, largest first, then the small per-module ones:
        # the longest compilations start before the cores are shared out.
        def order(ext):
            return (not ext.name.endswith("__mypyc"), -sum(map(os.path.getsize, ext.sources)))

        self.extensions.sort(key=order)
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._done = 0
        self._reused = 0
        groups = [ext for ext in self.extensions if ext.name.endswith("__mypyc")]
        self._announce(
            f"compiling {len(groups)} groups of {len(compiled.MODULES)} modules, "
            f"{self.parallel} at a time (cache: {CACHE})"
        )
        if RUNTIME is not None and not all(self._cached(ext).exists() for ext in groups):
            self._build_runtime(groups)
        super().build_extensions()
        self._announce(
            f"{len(self.extensions)} extensions ready, {self._reused} of them from the cache, "
            f"in {time.monotonic() - self._started:.0f} s"
        )

    def _announce(self, line: str) -> None:
        print(f"iotbench: {line}", file=sys.stderr, flush=True)

    def _cache_key(self, ext) -> str:
        h = hashlib.sha256()
        h.update(repr((ext.name, ext.extra_compile_args, ext.define_macros)).encode())
        h.update(repr(ext.extra_link_args).encode())
        h.update(repr((sys.version, sysconfig.get_paths()["include"])).encode())
        h.update(repr(sysconfig.get_config_var("EXT_SUFFIX")).encode())
        h.update(repr((self.compiler.compiler_so, self.compiler.linker_so)).encode())
        # The C and headers mypyc generated. Its runtime's copies beside them are the
        # runtime directory's files, digested below; mypyc lists those headers among
        # the depends only once an earlier build has copied them, which would give
        # the first build in a checkout a key of its own.
        inputs = set(ext.sources) | set(ext.depends)
        _digest_files(h, sorted(p for p in inputs if not _runtime_copy(p, ext)))
        # mypyc's runtime, by content: pip builds in a new temporary environment each
        # time. Its C only: the bytecode caches Python writes there carry their
        # sources' times, new in every environment, and made every group's key new.
        for include in map(Path, ext.include_dirs):
            if include != Path("build"):  # the generated headers are in depends
                files = sorted(p for p in include.rglob("*") if p.suffix in (".c", ".h"))
                _digest_files(h, files, include)
        return h.hexdigest()[:32]

    def _cached(self, ext) -> Path:
        target = Path(self.get_ext_fullpath(ext.name))
        return CACHE / self._cache_key(ext) / target.name

    def _build_runtime(self, groups) -> None:
        """mypyc's runtime, compiled once for every group that links it."""
        started = time.monotonic()
        output = Path(self.build_temp) / "mypyc-runtime"

        def compile_one(source: str) -> list[str]:
            return self.compiler.compile(
                [source],
                output_dir=str(output),
                include_dirs=RUNTIME.include_dirs,
                extra_postargs=RUNTIME.compile_args,
            )

        with ThreadPoolExecutor(self.parallel) as pool:
            objects = [obj for objs in pool.map(compile_one, RUNTIME.sources) for obj in objs]
        for ext in groups:
            ext.extra_objects = [*ext.extra_objects, *objects]
        self._announce(
            f"mypyc's runtime ({len(RUNTIME.sources)} files) compiled once for the groups, "
            f"{time.monotonic() - started:.0f} s"
        )

    def build_extension(self, ext) -> None:
        target = Path(self.get_ext_fullpath(ext.name))
        cached = self._cached(ext)
        if cached.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(cached, target)
            with self._lock:
                self._reused += 1
            how = "from the cache"
        else:
            super().build_extension(ext)
            cached.parent.mkdir(parents=True, exist_ok=True)
            partial = cached.with_name(cached.name + ".part")
            shutil.copyfile(target, partial)
            partial.replace(cached)
            how = "compiled"
        with self._lock:
            self._done += 1
            if ext.name.endswith("__mypyc"):
                group = ext.name.removesuffix("__mypyc")
                self._announce(
                    f"[{self._done}/{len(self.extensions)}] {group} "
                    f"({len(compiled.GROUPS[group])} modules) {how}, "
                    f"{time.monotonic() - self._started:.0f} s"
                )


# What pip asks for before it builds (the build's requirements, the metadata) runs
# this file with one of these commands alone; generating the C for them too took
# a third of a fresh install's time, three generations where one is used.
METADATA_COMMANDS = {"egg_info", "dist_info"}
BUILD_COMMANDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "install", "develop"}


def _metadata_only() -> bool:
    words = set(sys.argv[1:])
    return bool(words & METADATA_COMMANDS) and not words & BUILD_COMMANDS


class Runtime(NamedTuple):
    """mypyc's runtime library: the C files every group library links."""

    sources: list[str]
    include_dirs: list[str]
    compile_args: list[str]


# Set by ext_modules() when there is C to compile.
RUNTIME: Runtime | None = None


def _share_runtime(groups) -> None:
    """Take the runtime's C files, the same in every group, out of each group's
    sources: BuildExt compiles them once and links the objects into every group.
    mypyc would #include them in each group's C and so compile them once per group
    (docs/performance.md, "mypyc's runtime compiled once")."""
    global RUNTIME
    if not groups:
        return
    first = groups[0]
    sources = [source for source in first.sources if _runtime_copy(source, first)]
    for ext in groups:
        if [source for source in ext.sources if _runtime_copy(source, ext)] != sources:
            raise RuntimeError(f"mypyc gave {ext.name} other runtime files than {first.name}")
        ext.sources = [source for source in ext.sources if not _runtime_copy(source, ext)]
    RUNTIME = Runtime(sources, list(first.include_dirs), list(first.extra_compile_args))


# How a group's functions call each other, mypyc's runtime and Python (on Linux;
# elsewhere the compiler's defaults). mypyc's C functions are global symbols,
# and in a shared library a global function may be replaced at load time
# (interposed): the compiler calls it through the PLT and never inlines it,
# though only the modules' init functions leave the library (PyMODINIT_FUNC
# keeps them visible). Hidden, they are called directly and inlined where it
# pays; -fno-plt calls Python's own functions through the GOT without the PLT's
# extra jump. With GCC, link-time optimisation also lets the runtime's small
# helpers (list and dict access, float boxing), compiled once for all groups, be
# inlined into the groups that call them on every frame (Clang's needs a linker
# plugin a machine may lack). Together about 5 % fewer instructions per frame of
# S4's runs, for about 10 s more compiling (docs/performance.md, "Calls inside
# the libraries"). None changes what the code computes: no floating-point
# contraction or reassociation comes with them.
def _linkage_args() -> tuple[list[str], list[str]]:
    """(compile arguments, link arguments) for every extension."""
    if not sys.platform.startswith("linux"):
        return [], []
    compile_args, link_args = ["-fvisibility=hidden", "-fno-plt"], []
    if _compiler_is_gcc():
        compile_args.append("-flto")
        link_args.append("-flto=1")  # one job per library: the libraries build in parallel
    return compile_args, link_args


def _compiler_is_gcc() -> bool:
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    try:
        version = subprocess.run(
            [compiler, "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "Free Software Foundation" in version and "clang" not in version


def ext_modules():
    if _metadata_only():
        return []
    if PURE or _no_compiler():
        _remove_compiled_copies()
        return []
    _remove_compiled_copies(keep_groups=True)
    from mypyc.build import mypycify

    def path(module: str) -> str:
        return str(compiled.source_file(module, SRC).relative_to(SRC.parent))

    groups = [([path(m) for m in modules], group) for group, modules in compiled.GROUPS.items()]
    # The modules they import run as Python: their types inform the compiled code,
    # and their own type errors are no reason to fail a build. No mypy cache: from
    # one, mypyc would regenerate only some groups' C, and the others' tables of
    # exports can then lack what the regenerated ones call (a build error); each
    # build generates all the C afresh, and build/ext-cache/ skips compiling what
    # came out the same.
    options = ["--follow-imports=silent", f"--cache-dir={os.devnull}"]
    # No debug information by default: mypyc's `-g1` took about a tenth of the
    # compiler's time and none of the code it makes (GCC's code is the same with
    # and without -g). The symbol table stays, so a profiler still names every
    # function; IOTBENCH_C_DEBUG=1 adds file and line for one (docs/performance.md).
    debug = "1" if os.environ.get(C_DEBUG_ENV) == "1" else "0"
    extensions = mypycify(
        [*(p for paths, _ in groups for p in paths), *options],
        opt_level="3",
        debug_level=debug,
        separate=groups,
        # The runtime as C files of its own instead of #included in every group's
        # C: compiled once and linked into each group (BuildExt._build_runtime).
        include_runtime_files=False,
    )
    compile_args, link_args = _linkage_args()
    for ext in extensions:
        ext.extra_compile_args = [*ext.extra_compile_args, *compile_args]
        ext.extra_link_args = [*ext.extra_link_args, *link_args]
    _share_runtime([ext for ext in extensions if ext.name.endswith("__mypyc")])
    for ext in extensions:
        if ext.name.removesuffix("__mypyc") in compiled.LIGHTLY_OPTIMISED:
            # The last -O on the command line wins; mypyc's comes after Python's own.
            ext.extra_compile_args = [*ext.extra_compile_args, "-O1"]
    return extensions


setup(ext_modules=ext_modules(), cmdclass={"build_ext": BuildExt})
