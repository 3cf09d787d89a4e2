"""The compiled build (src/iotbench/compiled.py, setup.py): current, and the one CI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from iotbench import compiled


def _tree(tmp_path, module: str, *, built_after_source: bool):
    """A checkout's src/ tree with `module`'s source and a compiled copy beside it."""
    (tmp_path.parent / "pyproject.toml").touch()
    source = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("x = 1\n")
    built = source.with_name(source.stem + EXTENSION_SUFFIXES[0])
    built.write_bytes(b"\0")
    older, newer = 1_000_000_000, 1_000_000_100
    os.utime(source, (older, older) if built_after_source else (newer, newer))
    os.utime(built, (newer, newer) if built_after_source else (older, older))
    return source


def test_a_module_compiled_after_its_source_is_current(tmp_path):
    src = tmp_path / "src"
    for module in compiled.MODULES:
        _tree(src, module, built_after_source=True)
    assert compiled.stale_modules(src) == []
    compiled.check_current(src)


def test_a_source_edited_after_compiling_is_refused_with_the_fix(tmp_path):
    src = tmp_path / "src"
    for module in compiled.MODULES:
        _tree(src, module, built_after_source=module != "iotbench.net.radio.medium")
    assert compiled.stale_modules(src) == ["iotbench.net.radio.medium"]
    with pytest.raises(compiled.StaleBuildError) as err:
        compiled.check_current(src)
    assert "iotbench.net.radio.medium" in str(err.value)
    assert "pip install -e ." in str(err.value)
    assert "IOTBENCH_PURE_PYTHON=1" in str(err.value)


def _group_library(src, module: str, mtime: int) -> None:
    """The compiled library of `module`'s group, as mypyc places it, built at `mtime`."""
    group = compiled.group_of(module)
    library = src.joinpath(*group.split("."))
    library = library.with_name(library.name + "__mypyc" + EXTENSION_SUFFIXES[0])
    library.write_bytes(b"\0")
    os.utime(library, (mtime, mtime))


def test_an_in_place_rebuild_that_kept_a_modules_own_extension_is_current(tmp_path):
    """A rebuild after an edit rewrites the group's library, which holds the code, and
    may leave the module's own extension, which only loads it, with its old time."""
    src = tmp_path / "src"
    for module in compiled.MODULES:
        _tree(src, module, built_after_source=module != "iotbench.net.radio.medium")
    _group_library(src, "iotbench.net.radio.medium", 1_000_000_200)
    assert compiled.stale_modules(src) == []
    compiled.check_current(src)


def test_a_source_edited_after_its_group_library_was_built_is_stale(tmp_path):
    src = tmp_path / "src"
    for module in compiled.MODULES:
        _tree(src, module, built_after_source=module != "iotbench.proto.ndn.pit")
    for modules in compiled.GROUPS.values():
        _group_library(src, modules[0], 1_000_000_000)  # as old as the edited source's build
    assert compiled.stale_modules(src) == ["iotbench.proto.ndn.pit"]
    with pytest.raises(compiled.StaleBuildError):
        compiled.check_current(src)


def test_every_module_is_in_one_group():
    assert len(set(compiled.MODULES)) == len(compiled.MODULES)
    for group, modules in compiled.GROUPS.items():
        assert group.startswith("iotbench.") and group.count(".") == 1
        for module in modules:
            assert compiled.group_of(module) == group


def test_the_lightly_optimised_groups_are_groups():
    # setup.py matches them by name: a misspelt one would be compiled at -O3, unseen.
    assert compiled.LIGHTLY_OPTIMISED <= set(compiled.GROUPS)


def test_an_installed_package_is_not_checked(tmp_path):
    """A wheel unpacks its sources and compiled modules in no meaningful order."""
    site = tmp_path / "site-packages"
    for module in compiled.MODULES:
        _tree(site, module, built_after_source=False)
    (tmp_path / "pyproject.toml").unlink()
    assert len(compiled.stale_modules(site)) == len(compiled.MODULES)
    compiled.check_current(site)  # no error: not a checkout


def test_a_pure_install_has_nothing_to_check(tmp_path):
    for module in compiled.MODULES:
        source = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text("x = 1\n")
        assert compiled.compiled_files(module, tmp_path) == []
    assert compiled.stale_modules(tmp_path) == []


def test_every_listed_module_has_its_source():
    from pathlib import Path

    root = Path(compiled.__file__).resolve().parent.parent
    for module in compiled.MODULES:
        assert root.joinpath(*module.split(".")).with_suffix(".py").exists(), module


@pytest.mark.skipif(not compiled.is_required(), reason="IOTBENCH_REQUIRE_COMPILED is not set")
def test_ci_runs_the_compiled_modules():
    """CI sets IOTBENCH_REQUIRE_COMPILED=1: the suite must then test the compiled build
    that `pip install` makes, not the sources."""
    assert compiled.running_compiled() == {module: True for module in compiled.MODULES}


def test_reports_say_how_the_per_frame_modules_run(monkeypatch):
    from iotbench.report.build import software_versions

    monkeypatch.setattr(
        compiled, "running_compiled", lambda: dict.fromkeys(compiled.MODULES, False)
    )
    assert ("per-frame modules", "pure Python") in software_versions()
    monkeypatch.setattr(compiled, "running_compiled", lambda: dict.fromkeys(compiled.MODULES, True))
    n = len(compiled.MODULES)
    assert compiled.describe() == f"{n} of {n} compiled with mypyc"


def test_pips_metadata_steps_do_not_generate_the_c(tmp_path):
    """pip runs setup.py for the build's requirements (egg_info) and the metadata
    (dist_info) before it builds; neither needs the extensions, and generating
    their C each time took a third of a fresh install."""
    root = Path(__file__).resolve().parents[1]
    probe = (
        "import sys\n"
        f"sys.argv = ['setup.py', 'egg_info', '--egg-base', {str(tmp_path)!r}]\n"
        "import runpy\n"
        "runpy.run_path('setup.py')\n"
        "assert 'mypyc.build' not in sys.modules, 'the C was generated'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "iotbench.egg-info" / "PKG-INFO").exists()


def test_a_compiled_copy_of_a_module_no_longer_compiled_is_refused(tmp_path):
    """A module taken out of GROUPS keeps the extension an earlier build put beside
    it, and Python would import that instead of the source."""
    src = tmp_path / "src"
    for module in compiled.MODULES:
        _tree(src, module, built_after_source=True)
    for modules in compiled.GROUPS.values():
        _group_library(src, modules[0], 1_000_000_200)
    assert compiled.orphaned_files(src) == []
    compiled.check_current(src)
    _tree(src, "iotbench.proto.ndn.lp", built_after_source=True)  # compiled until 2026-11-29
    orphan = src / "iotbench" / "proto" / "ndn" / ("lp" + EXTENSION_SUFFIXES[0])
    assert compiled.orphaned_files(src) == [orphan]
    with pytest.raises(compiled.StaleBuildError) as err:
        compiled.check_current(src)
    assert "iotbench/proto/ndn/lp" in str(err.value)
    assert "pip install -e ." in str(err.value)


def test_the_build_removes_compiled_copies_of_modules_no_longer_compiled(tmp_path):
    """setup.py clears them before it builds (here in a copy of the checkout's build
    files, with a pure build, which compiles nothing)."""
    _copy_build_files(tmp_path)
    _tree(tmp_path / "src", "iotbench.proto.ndn.lp", built_after_source=True)
    orphan = tmp_path / "src" / "iotbench" / "proto" / "ndn" / ("lp" + EXTENSION_SUFFIXES[0])
    assert compiled.orphaned_files(tmp_path / "src") == [orphan]
    _run_in_copy(tmp_path, "setup.py", "--name")
    assert not orphan.exists()


def test_the_groups_link_one_build_of_mypycs_runtime(tmp_path):
    """mypyc's runtime (its own C files, not the __native_* it generates) leaves every
    group's sources, to be compiled once and linked into each group; groups whose
    runtime files differ are an error, not a silent mix."""
    _copy_build_files(tmp_path)
    probe = (
        "import runpy, sys\n"
        "from setuptools import Extension\n"
        "sys.argv = ['setup.py', '--name']\n"
        "from pathlib import Path\n"
        "share = runpy.run_path('setup.py')['_share_runtime']\n"
        "runtime = ['build/init.c', 'build/int_ops.c']\n"
        "Path('lib-rt').mkdir()\n"
        "for name in runtime:\n"
        "    (Path('lib-rt') / Path(name).name).write_text('the runtime')\n"
        "def group(name, runtime):\n"
        "    return Extension(f'{name}__mypyc', [f'build/{name}/__native_{name}.c', *runtime],\n"
        "                     include_dirs=['lib-rt', 'build'], extra_compile_args=['-O3'])\n"
        "groups = [group('a', runtime), group('b', runtime)]\n"
        "share(groups)\n"
        "assert [g.sources for g in groups] == [['build/a/__native_a.c'], ['build/b/__native_b.c']]\n"
        "shared = share.__globals__['RUNTIME']\n"
        "assert shared.sources == runtime, shared\n"
        "assert shared.include_dirs == ['lib-rt', 'build'] and shared.compile_args == ['-O3']\n"
        "try:\n"
        "    share([group('a', runtime), group('b', runtime[:1])])\n"
        "except RuntimeError as error:\n"
        "    assert 'other runtime files' in str(error)\n"
        "else:\n"
        "    raise AssertionError('groups with other runtime files were accepted')\n"
    )
    _run_in_copy(tmp_path, "-c", probe)


def test_the_cache_key_does_not_change_with_the_runtime_headers_mypyc_lists(tmp_path):
    """mypyc lists its runtime's headers among a group's depends only once an earlier
    build has copied them into build/, so the first build in a checkout listed fewer:
    `pip install -e .` after `pip install .` then found no extension in the cache.
    The key digests the runtime from its own directory, and every other file (the
    generated C and headers, the module shims) by content."""
    _copy_build_files(tmp_path)
    probe = (
        "import runpy, sys, types\n"
        "from pathlib import Path\n"
        "from setuptools import Distribution, Extension\n"
        "sys.argv = ['setup.py', '--name']\n"
        "setup = runpy.run_path('setup.py')\n"
        "for name, text in [('rt/CPy.h', 'rt'), ('rt/bytes_extra_ops.h', 'rt'),\n"
        "                   ('build/bytes_extra_ops.h', 'rt'), ('build/g/__native_g.c', 'c'),\n"
        "                   ('build/g/__native_g.h', 'h'), ('build/g/kernel.c', 'shim')]:\n"
        "    Path(name).parent.mkdir(parents=True, exist_ok=True)\n"
        "    Path(name).write_text(text)\n"
        "build = setup['BuildExt'](Distribution())\n"
        "build.compiler = types.SimpleNamespace(compiler_so=['cc'], linker_so=['cc'])\n"
        "ext = Extension('g__mypyc', ['build/g/__native_g.c'], include_dirs=['rt', 'build'],\n"
        "                depends=['build/g/__native_g.h'])\n"
        "first = build._cache_key(ext)\n"
        "ext.depends.insert(0, 'build/bytes_extra_ops.h')\n"
        "assert build._cache_key(ext) == first, 'a listed runtime header changed the key'\n"
        "Path('build/g/__native_g.h').write_text('h, generated again otherwise')\n"
        "assert build._cache_key(ext) != first, 'a generated header was not in the key'\n"
        "Path('build/g/__native_g.h').write_text('h')\n"
        "Path('rt/CPy.h').write_text('another runtime')\n"
        "assert build._cache_key(ext) != first, 'the runtime was not in the key'\n"
        "shim = Extension('g.kernel', ['build/g/kernel.c'], include_dirs=['rt', 'build'])\n"
        "before = build._cache_key(shim)\n"
        "Path('build/g/kernel.c').write_text('a shim that loads another group')\n"
        "assert build._cache_key(shim) != before, 'a module shim was not in the key'\n"
    )
    _run_in_copy(tmp_path, "-c", probe)


def _copy_build_files(tmp_path: Path) -> None:
    """setup.py and compiled.py in a directory of their own: setup.py, run as a pure
    build, would clear the checkout's compiled modules."""
    root = Path(__file__).resolve().parents[1]
    (tmp_path / "src" / "iotbench").mkdir(parents=True)
    (tmp_path / "setup.py").write_bytes((root / "setup.py").read_bytes())
    compiled_py = root / "src" / "iotbench" / "compiled.py"
    (tmp_path / "src" / "iotbench" / "compiled.py").write_bytes(compiled_py.read_bytes())


def _run_in_copy(tmp_path: Path, *args: str) -> None:
    """Python with `args` in the copy, as a pure build."""
    env = dict(os.environ, **{compiled.PURE_PYTHON_ENV: "1"})
    done = subprocess.run(
        [sys.executable, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
