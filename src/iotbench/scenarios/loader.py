"""Reading scenario files: TOML text -> `Scenario` (base config + sweep axes).

Loading checks everything that can be checked without combining axes: the
base's keys and types, each preset, each value axis, and the report spec.
`expand` (sweep.py) then validates every combination in full.
"""

from __future__ import annotations

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
    presets: dict[str, dict] = field(default_factory=dict)

    def apply(self, config: dict, value: Scalar) -> dict:
        """`config` with this axis at `value`."""
        if self.key is None:
            return merge(DOCUMENT, config, self.presets[value])
        return set_path(config, self.key, value)

    def to_json(self) -> dict:
        return {"name": self.name, "key": self.key, "values": list(self.values)}


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    study: str | None
    source: str  # the file path, or "builtin:<name>"
    label: str  # how error messages name the file
    text: str  # the TOML text as written
    base: dict  # the parsed document without `axes` (not yet merged or filled)
    axes: tuple[Axis, ...]
    report: dict  # the validated `report` section
    quick: dict = field(default_factory=dict)  # the validated `quick` section

    @property
    def base_dir(self) -> Path:
        """Where files the scenario names (a topology file) are looked up."""
        if self.source.startswith("builtin:"):
            return Path(str(builtin_dir()))
        return Path(self.source).resolve().parent


def builtin_dir() -> Any:
    return resources.files("iotbench.scenarios").joinpath("builtin")


def list_builtin() -> list[str]:
    """Names of the built-in scenarios, sorted."""
    return sorted(
        entry.name[: -len(".toml")]
        for entry in builtin_dir().iterdir()
        if entry.name.endswith(".toml")
    )


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
    """A `Scenario` from TOML text; `label` names the file in error messages."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{label}: invalid TOML: {exc}") from None
    base = {k: v for k, v in document.items() if k != "axes"}
    meta = _checked(label, lambda: _validate_base(base))
    axes = _checked(label, lambda: _parse_axes(document.get("axes", {})))
    _checked(label, lambda: _check_plots(meta["report"], axes))
    return Scenario(
        name=meta["name"],
        description=meta["description"],
        study=meta.get("study"),
        source=source or label,
        label=label,
        text=text,
        base=base,
        axes=axes,
        report=meta["report"],
        quick=meta["quick"],
    )


def _checked(label: str, step: Any) -> Any:
    try:
        return step()
    except Invalid as exc:
        raise ScenarioError(f"{label}: {dotted(exc.path)}: {exc.message}") from None


def _validate_base(base: dict) -> dict:
    """Check the base's keys and types; return the validated scenario-level keys."""
    validate(DOCUMENT, base, partial=True)
    return validate(META, {k: v for k, v in base.items() if k in META.fields})


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


def _value_axis(name: str, body: dict) -> Axis:
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


def _check_plots(report: dict, axes: tuple[Axis, ...]) -> None:
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


def _check_series_plot(figure: dict, path: tuple, axes: tuple[Axis, ...], allowed: str) -> None:
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
