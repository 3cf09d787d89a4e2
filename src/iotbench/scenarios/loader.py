"""Reading scenario files: TOML text -> `Scenario` (base config + sweep axes).

Loading checks everything that can be checked without combining axes: the
base's keys and types, each preset, each value axis, and the report spec.
`expand` (sweep.py) then validates every combination in full.

A file may `extends = "NAME"` another (a built-in scenario, a built-in base
`bases/NAME` or a .toml path relative to it): the chain is read and merged
first, and the merged document is then loaded like any scenario file.
"""

from __future__ import annotations

import datetime
import json
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from iotbench.scenarios.errors import ScenarioError
from iotbench.scenarios.fields import (
    Field,
    Invalid,
    Section,
    Table,
    did_you_mean,
    dotted,
    fmt,
    leaf_keys,
    lookup,
    validate,
)
from iotbench.scenarios.merge import merge, set_path
from iotbench.scenarios.schema import DOCUMENT, RUN_CONFIG, RUN_KEYS

AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
RESERVED_AXIS_NAMES = ("repetition", "seed")
Scalar = str | int | float | bool
# builtin/bases/: files meant only to be extended, which `list_builtin` does not list.
BASES = "bases"
# The TOML writer (`to_toml`): keys it writes unquoted, and the longest
# `key = { ... }` line it writes inline (the project's line length).
BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
INLINE_WIDTH = 100

# The scenario-level keys (everything a run's config does not hold).
META = Section(
    doc="Scenario-level keys.",
    fields={k: v for k, v in DOCUMENT.fields.items() if k not in RUN_KEYS and k != "axes"},
)


@dataclass(frozen=True)
class Axis:
    """One sweep axis: a preset axis (named partial configs) or a value axis (key + values)."""

    name: str
    values: tuple[Scalar, ...]  # preset names, or the values of `key`, in file order
    key: str | None = None  # dotted config key of a value axis; None for a preset axis
    presets: dict[str, Table] = field(default_factory=dict)

    def apply(self, config: Table, value: Scalar) -> Table:
        """`config` with this axis at `value`."""
        if self.key is None:
            assert isinstance(value, str)  # a preset axis's values are preset names
            merged: Table = merge(DOCUMENT, config, self.presets[value])
            return merged
        return set_path(config, self.key, value)

    def to_json(self) -> Table:
        return {"name": self.name, "key": self.key, "values": list(self.values)}


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    study: str | None
    source: str  # the file path, or "builtin:<name>"
    label: str  # how error messages name the file
    # The TOML text as written; for a file that `extends` another, the merged
    # document as TOML, so that this text alone reproduces the runs.
    text: str
    base: Table  # the parsed document (over what it extends) without `axes`; not yet filled
    axes: tuple[Axis, ...]
    report: Table  # the validated `report` section
    quick: Table = field(default_factory=dict)  # the validated `quick` section

    @property
    def base_dir(self) -> Path:
        """Where files the scenario names (a topology file) are looked up."""
        return _folder(self.source)


def builtin_dir() -> Any:
    return resources.files("iotbench.scenarios").joinpath("builtin")


def list_builtin() -> list[str]:
    """Names of the built-in scenarios, sorted."""
    return _toml_stems(builtin_dir())


def _builtin_names() -> list[str]:
    """What `extends` may name among the built-in files: the scenarios, then `bases/NAME`."""
    bases = _toml_stems(builtin_dir().joinpath(BASES))
    return list_builtin() + [f"{BASES}/{name}" for name in bases]


def _toml_stems(folder: Any) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(e.name[: -len(".toml")] for e in folder.iterdir() if e.name.endswith(".toml"))


def _path(source: str) -> Path:
    """The file a scenario's `source` ("builtin:<name>" or a path) names."""
    if source.startswith("builtin:"):
        return Path(str(builtin_dir())) / f"{source.removeprefix('builtin:')}.toml"
    return Path(source)


def _folder(source: str) -> Path:
    """Where a file's relative names are looked up: the files it extends, a topology file."""
    return _path(source).resolve().parent


def load_scenario(name_or_path: str | Path) -> Scenario:
    """A built-in scenario by name, or a scenario file by path."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or text.endswith(".toml") or "/" in text or "\\" in text:
        path = Path(name_or_path)
        if not path.is_file():
            raise ScenarioError(f"{path}: no such scenario file")
        return parse_scenario(path.read_text(encoding="utf-8"), label=str(path), source=str(path))
    names = list_builtin()
    if text not in names:
        raise ScenarioError(
            f"unknown scenario {text!r}{did_you_mean(text, names)}; built-in scenarios: "
            f"{', '.join(names)} (or give the path of a .toml file)"
        )
    body = builtin_dir().joinpath(f"{text}.toml").read_text(encoding="utf-8")
    return parse_scenario(body, label=f"{text}.toml", source=f"builtin:{text}")


def parse_scenario(text: str, label: str = "<scenario>", source: str = "") -> Scenario:
    """A `Scenario` from TOML text; `label` names the file in error messages, and
    `source` (its path, or "builtin:<name>") is where a relative `extends` is found."""
    document, chain = _resolved(_File(text, label, source or label), ())
    base = _without_axes(document)
    meta = _checked(label, lambda: _validate_base(base))
    axes = _checked(label, lambda: _parse_axes(document.get("axes", {})))
    _checked(label, lambda: _check_plots(meta["report"], axes))
    return Scenario(
        name=meta["name"],
        description=meta["description"],
        study=meta.get("study"),
        source=source or label,
        label=label,
        text=text if len(chain) == 1 else _resolved_text(document, chain),
        base=base,
        axes=axes,
        report=meta["report"],
        quick=meta["quick"],
    )


@dataclass(frozen=True)
class _File:
    """One file of an `extends` chain."""

    text: str
    label: str  # how error messages name it
    source: str  # its path, or "builtin:<name>"


def _resolved(file: _File, extended_by: tuple[_File, ...]) -> tuple[Table, tuple[str, ...]]:
    """`file`'s document with what it extends merged in, and the labels of the chain
    (`file` first). `extended_by` are the files that extend `file`, nearest first."""
    label = file.label
    if extended_by:
        by = ", itself extended by ".join(f.label for f in extended_by)
        label = f"{file.label} (extended by {by})"
    try:
        document = tomllib.loads(file.text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{label}: invalid TOML: {exc}") from None
    if "extends" in document or extended_by:
        # Each file of a chain is checked alone before the merge, so that a bad key
        # is reported in the file that has it; the merged result is checked as a whole.
        _checked(label, lambda: _check_alone(document))
    name = document.pop("extends", None)
    if name is None:
        return document, (file.label,)
    chain = (file, *extended_by)
    base = _base_file(name, file, label)
    # Files are compared by their resolved paths: a built-in base may also be
    # reached by a relative path.
    if _path(base.source).resolve() in {_path(f.source).resolve() for f in chain}:
        cycle = " -> ".join(f.label for f in reversed(chain)) + f" -> {base.label}"
        raise ScenarioError(f"{label}: extends: {name!r} makes a cycle: {cycle}")
    base_document, base_chain = _resolved(base, chain)
    return _extend(base_document, document), (file.label, *base_chain)


def _check_alone(document: Table) -> None:
    """What one file can get wrong by itself: its keys and their types, its axes."""
    validate(DOCUMENT, _without_axes(document), partial=True)
    _parse_axes(document.get("axes", {}))


def _base_file(name: str, child: _File, label: str) -> _File:
    """The file `extends = name` in `child` names: a .toml path relative to the
    child's folder, or else a built-in scenario or base."""
    if name.endswith(".toml"):
        path = _folder(child.source) / name
        if not path.is_file():
            raise ScenarioError(f"{label}: extends: no such file {name!r} (looked for {path})")
        shown = str(Path(child.label).parent / name)
        return _File(path.read_text(encoding="utf-8"), shown, str(path))
    names = _builtin_names()
    if name not in names:
        raise ScenarioError(
            f"{label}: extends: no built-in scenario or base {name!r}{did_you_mean(name, names)}; "
            f"built-in: {', '.join(names)} (or a .toml path relative to this file)"
        )
    text = builtin_dir().joinpath(f"{name}.toml").read_text(encoding="utf-8")
    return _File(text, f"{name}.toml", f"builtin:{name}")


def _extend(base: Table, child: Table) -> Table:
    """`child` merged over `base`: tables as a preset merges over a config, and axes
    name by name (a child's axis replaces the base's of that name, in its place;
    new axes follow the base's)."""
    merged = merge(DOCUMENT, _without_axes(base), _without_axes(child))
    axes = {**base.get("axes", {}), **child.get("axes", {})}
    return {**merged, "axes": axes} if axes else merged


def _without_axes(document: Table) -> Table:
    return {k: v for k, v in document.items() if k != "axes"}


def _resolved_text(document: Table, chain: tuple[str, ...]) -> str:
    """The merged document of an `extends` chain as TOML, keys in the schema's order."""
    ordered = {key: document[key] for key in DOCUMENT.fields if key in document}
    return (
        f"# {chain[0]} with the files it extends merged in: {' -> '.join(chain)}\n"
        '# (docs/scenarios.md, "Sharing a base: extends"). This text alone gives the same runs.\n'
        + to_toml(ordered)
    )


def to_toml(document: Table) -> str:
    """`document` as TOML text that `tomllib` reads back equal: tables as [headers]
    (nested ones inline when they fit on a line), lists of tables as [[headers]]."""
    lines: list[str] = []
    _toml_table(lines, (), document)
    return "\n".join(lines).lstrip("\n") + "\n"


def _toml_table(lines: list[str], path: tuple[str, ...], table: Table) -> None:
    def table_list(value: Any) -> bool:
        return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)

    tables = {k: v for k, v in table.items() if isinstance(v, dict)}
    # A table's sub-tables are all inline or all under headers, never mixed, so
    # that they keep their order (an axis's place, a preset's).
    if path and all(
        len(f"{_toml_key(k)} = {_toml_value(v)}") <= INLINE_WIDTH for k, v in tables.items()
    ):
        tables = {}
    lists = {k: v for k, v in table.items() if table_list(v)}
    plain = {k: v for k, v in table.items() if k not in tables and k not in lists}
    # TOML wants a table's own keys before its sub-tables; a table holding only
    # sub-tables needs no header of its own.
    if path and (plain or not (tables or lists)):
        lines += ["", f"[{'.'.join(map(_toml_key, path))}]"]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in plain.items()]
    for key, value in tables.items():
        _toml_table(lines, (*path, key), value)
    for key, items in lists.items():
        for item in items:
            lines += ["", f"[[{'.'.join(map(_toml_key, (*path, key)))}]]"]
            lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in item.items()]


def _toml_key(key: str) -> str:
    return key if BARE_KEY.fullmatch(key) else _toml_value(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)  # Python's float repr (0.1, 1e-05, inf) is valid TOML
    if isinstance(value, str):
        # A JSON string is a TOML basic string, but for DEL, which TOML wants escaped.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml_value, value)) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return f"{{ {items} }}" if items else "{}"
    if isinstance(value, (datetime.date, datetime.time)):  # as tomllib reads them
        return value.isoformat()
    raise TypeError(f"not a TOML value: {value!r}")


def _checked(label: str, step: Any) -> Any:
    try:
        return step()
    except Invalid as exc:
        raise ScenarioError(f"{label}: {dotted(exc.path)}: {exc.message}") from None


def _validate_base(base: Table) -> Table:
    """Check the base's keys and types; return the validated scenario-level keys."""
    validate(DOCUMENT, base, partial=True)
    meta: Table = validate(META, {k: v for k, v in base.items() if k in META.fields})
    return meta


def _parse_axes(raw: Any) -> tuple[Axis, ...]:
    if not isinstance(raw, dict):
        raise Invalid(("axes",), "expected a table of sweep axes")
    return tuple(_parse_axis(name, body) for name, body in raw.items())


def _parse_axis(name: str, body: Any) -> Axis:
    path = ("axes", name)
    if not AXIS_NAME.fullmatch(name) or name in RESERVED_AXIS_NAMES:
        raise Invalid(
            path,
            "an axis name must be letters, digits, '_' and '-', starting with a letter or '_', "
            f"and not one of {', '.join(RESERVED_AXIS_NAMES)}",
        )
    if not isinstance(body, dict) or not body:
        raise Invalid(path, "expected a table of presets, or a table with `key` and `values`")
    if "key" in body or "values" in body:
        return _value_axis(name, body)
    for preset, overlay in body.items():
        if "," in preset or not preset:
            raise Invalid(path + (preset,), "a preset name must be non-empty and without ','")
        if not isinstance(overlay, dict):
            raise Invalid(
                path + (preset,), f"expected a table (a partial config), got {fmt(overlay)}"
            )
        validate(RUN_CONFIG, overlay, path + (preset,), partial=True)
    return Axis(name=name, values=tuple(body), presets=body)


def _value_axis(name: str, body: Table) -> Axis:
    path = ("axes", name)
    if set(body) != {"key", "values"}:
        extra = ", ".join(sorted(set(body) - {"key", "values"})) or "key or values missing"
        raise Invalid(path, f"a value axis has exactly the keys key and values ({extra})")
    key, values = body["key"], body["values"]
    node = lookup(RUN_CONFIG, key.split(".")) if isinstance(key, str) else None
    if not isinstance(node, Field):
        hint = did_you_mean(str(key), leaf_keys(RUN_CONFIG))
        raise Invalid(path + ("key",), f"{fmt(key)} is not a config key{hint}")
    if not isinstance(values, list) or not values:
        raise Invalid(path + ("values",), "expected a non-empty list of values")
    for i, value in enumerate(values):
        if not isinstance(value, Scalar):
            raise Invalid(path + ("values", i), "expected a string, number or boolean")
        validate(node, value, path + ("values", i))
    if len({repr(v) for v in values}) != len(values):
        raise Invalid(path + ("values",), "values must be distinct")
    return Axis(name=name, values=tuple(values), key=key)


def _check_plots(report: Table, axes: tuple[Axis, ...]) -> None:
    names = [axis.name for axis in axes]
    allowed = ", ".join(names) if names else "(the scenario has no sweep axes)"
    for i, figure in enumerate(report["series"]):
        _check_series_plot(figure, ("report", "series", i), axes, allowed)
    for i, plot in enumerate(report["plots"]):
        for key in ("x", "line"):
            if key in plot and plot[key] not in names:
                raise Invalid(
                    ("report", "plots", i, key),
                    f"{fmt(plot[key])} is not a sweep axis; axes: {allowed}",
                )
        x_axis = next(axis for axis in axes if axis.name == plot["x"])
        for j, value in enumerate(plot.get("x_values", [])):
            if value not in x_axis.values:
                raise Invalid(
                    ("report", "plots", i, "x_values", j),
                    f"{fmt(value)} is not a value of axis {x_axis.name!r}; values: "
                    + ", ".join(str(v) for v in x_axis.values),
                )


def _check_series_plot(
    figure: Table, path: tuple[str | int, ...], axes: tuple[Axis, ...], allowed: str
) -> None:
    by_name = {axis.name: axis for axis in axes}
    if "line" in figure and figure["line"] not in by_name:
        raise Invalid(
            path + ("line",), f"{fmt(figure['line'])} is not a sweep axis; axes: {allowed}"
        )
    for key, kinds in (("reference", ("box", "time")), ("color_by", ("nodes",))):
        if figure.get(key) and figure["kind"] not in kinds:
            raise Invalid(path + (key,), f"only kind {' or '.join(kinds)} uses it")
    if figure["relative"] and figure["kind"] != "nodes":
        raise Invalid(path + ("relative",), "only kind nodes uses it")
    for name, values in figure["filter"].items():
        axis = by_name.get(name)
        if axis is None:
            raise Invalid(
                path + ("filter", name), f"{fmt(name)} is not a sweep axis; axes: {allowed}"
            )
        if not isinstance(values, list) or not values:
            raise Invalid(path + ("filter", name), "a list of the axis's values to keep")
        for j, value in enumerate(values):
            if value not in axis.values:
                raise Invalid(
                    path + ("filter", name, j),
                    f"{fmt(value)} is not a value of axis {name!r}; values: "
                    + ", ".join(str(v) for v in axis.values),
                )
