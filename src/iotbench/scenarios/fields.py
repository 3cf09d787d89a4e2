"""A small declarative field-spec system: describe a config tree once, then
validate it, fill in defaults, merge into it and document it from that one
description.

Three node kinds make up a schema:
- `Field`: one value (int, float, str, bool, list, table) with default, range,
  choices and doc;
- `Section`: a table with a fixed set of keys, each a node; cross-field rules
  go in `checks`;
- `Tagged`: a table whose `tag` key (e.g. `model`) picks which `Section`
  describes the rest of it.

Validation returns a new tree with defaults filled in and ints widened to float
where a float is expected, so equal configs hash equally. It raises `Invalid`
with the dotted path and a message that names what is allowed.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from iotbench.scenarios.settings_base import Settings

Path = tuple[str | int, ...]
#: A table of a config as TOML (or JSON) gives it: keys, and values of any kind.
Table = dict[str, Any]


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


REQUIRED = _Marker("REQUIRED")  # must be given
OPTIONAL = _Marker("OPTIONAL")  # may be absent, and then stays absent

#: The device profiles (proto/ndn/profiles.py PROFILES) a scenario may name for an
#: IP stack's node or host; NDN's forwarder needs a profile that prices every NDN
#: operation, which rm090 (measured for Contiki's IP stack only) does not.
DEVICE_PROFILES = ("m3", "samr21", "a8", "host", "rm090", "em-host")
NDN_DEVICE_PROFILES = ("m3", "samr21", "a8", "host")
#: The profiles with a measured spread of their costs (proto/ndn/profiles.py
#: MEASURED_SPREADS), which network.uplink.cost_spread draws from.
SPREAD_DEVICE_PROFILES = ("a8",)


class Invalid(Exception):
    """A validation failure at `path` (relative to where it was raised)."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass(frozen=True)
class Field:
    type: str  # "int" | "float" | "str" | "bool" | "list" | "table"
    doc: str
    default: Any = REQUIRED
    choices: tuple[object, ...] = ()
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    pattern: str | None = None
    pattern_doc: str = ""
    item: Node | None = None  # element spec of a list; of a table, its values' (settings)
    length: int | None = None  # exact length of a list
    redraw: bool = False  # may instead be a redraw table (see REDRAW)


@dataclass(frozen=True)
class Section:
    doc: str
    fields: Mapping[str, Node]
    optional: bool = False  # absent stays absent (else it is filled with defaults)
    checks: tuple[Callable[[Table], None], ...] = ()
    # Runs on the raw table before full validation (not on partial configs).
    prepare: Callable[[Table], Table] | None = None
    # Where its settings type is named from (dotted) when it sits at several places;
    # otherwise the place it sits.
    name: str = ""


@dataclass(frozen=True)
class Tagged:
    doc: str
    tag: str
    variants: Mapping[str, Section]
    optional: bool = True
    tag_doc: str = ""


Node = Field | Section | Tagged


# --- value descriptions, shared by error messages and the docs ---------------

TYPE_NAMES = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "a boolean",
    "list": "a list",
    "table": "a table",
}


def fmt(value: Any) -> str:
    """A value as a user wrote it in TOML (strings quoted, 1.0 not 1.000)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def range_text(f: Field) -> str:
    low = f"> {f.gt:g}" if f.gt is not None else f">= {f.ge:g}" if f.ge is not None else ""
    if f.le is not None and f.ge is not None:
        return f"between {f.ge:g} and {f.le:g}"
    if f.le is not None:
        return f"<= {f.le:g}" + (f" and {low}" if low else "")
    return low


def describe(node: Node) -> str:
    """What a node accepts, in words: 'an integer >= 1', 'one of con, non'."""
    if isinstance(node, Section):
        return "a table"
    if isinstance(node, Tagged):
        return f"a table with {node.tag} = one of {', '.join(node.variants)}"
    if node.choices:
        return "one of " + ", ".join(str(c) for c in node.choices)
    text = TYPE_NAMES[node.type]
    if node.type == "list" and node.item is not None:
        text = f"a list of {_plural(describe(node.item))}"
        if node.length:
            text = f"a list of {node.length} {_plural(describe(node.item))}"
    if node.pattern_doc:
        text += f" of {node.pattern_doc}"
    rng = range_text(node)
    if rng:
        text += f" {rng}"
    if node.redraw:
        text += ", or a redraw table"
    return text


def _plural(text: str) -> str:
    for article in ("an ", "a "):
        if text.startswith(article):
            head, _, rest = text[len(article) :].partition(" ")
            return f"{head}s {rest}".strip()
    return text


def describe_value(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean ({fmt(value)})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({fmt(value)})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def dotted(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def did_you_mean(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# --- validation ---------------------------------------------------------------


def validate(node: Node, value: Any, path: Path = (), partial: bool = False) -> Any:
    """Validate `value` against `node`; return it with defaults filled in.

    `partial` checks a fragment (a preset or the base before the sweep is
    applied): keys present must be right, but required keys may be missing and
    no defaults or cross-field checks apply. A `Tagged` table is always checked
    whole, because merging replaces it whole (see merge.py).
    """
    if isinstance(node, Section):
        return _section(node, value, path, partial)
    if isinstance(node, Tagged):
        return _tagged(node, value, path)
    return _field(node, value, path)


def _section(
    node: Section, value: Any, path: Path, partial: bool, tag: tuple[str, str] | None = None
) -> Table:
    if not isinstance(value, dict):
        raise Invalid(path, f"expected a table, got {describe_value(value)}")
    if node.prepare is not None and not partial:
        try:
            value = node.prepare(value)
        except Invalid as exc:
            raise Invalid(path + exc.path, exc.message) from None
    allowed = ([tag[0]] if tag else []) + list(node.fields)
    for key in value:
        if key not in node.fields:
            where = f" for {tag[0]} = {tag[1]}" if tag else ""
            raise Invalid(
                path + (key,),
                f"unknown key {key!r}{did_you_mean(key, allowed)}; "
                f"allowed keys{where}: {', '.join(allowed) or '(none)'}",
            )
    out: Table = {}
    for name, child in node.fields.items():
        if name in value:
            out[name] = validate(child, value[name], path + (name,), partial)
        elif partial:
            continue
        elif isinstance(child, Section):
            if not child.optional:
                out[name] = validate(child, {}, path + (name,))
        elif isinstance(child, Tagged):
            if not child.optional:
                raise Invalid(path + (name,), f"missing required key: {describe(child)}")
        elif child.default is REQUIRED:
            raise Invalid(path + (name,), f"missing required key: {describe(child)}")
        elif child.default is not OPTIONAL:
            out[name] = copy.deepcopy(child.default)
    if not partial:
        for check in node.checks:
            try:
                check(out)
            except Invalid as exc:
                raise Invalid(path + exc.path, exc.message) from None
    return out


def _tagged(node: Tagged, value: Any, path: Path) -> Table:
    if not isinstance(value, dict):
        raise Invalid(path, f"expected {describe(node)}, got {describe_value(value)}")
    choices = ", ".join(node.variants)
    if node.tag not in value:
        raise Invalid(path + (node.tag,), f"missing required key: one of {choices}")
    tag = value[node.tag]
    if tag not in node.variants:
        raise Invalid(path + (node.tag,), f"{fmt(tag)} is not one of {choices}")
    rest = {k: v for k, v in value.items() if k != node.tag}
    body = _section(node.variants[tag], rest, path, partial=False, tag=(node.tag, tag))
    return {node.tag: tag, **body}


def _field(f: Field, value: Any, path: Path) -> Any:
    if f.redraw and isinstance(value, dict):
        return _redraw(f, value, path)
    value = _typed(f, value, path)
    if f.choices and value not in f.choices:
        choices = ", ".join(str(c) for c in f.choices)
        raise Invalid(path, f"{fmt(value)} is not one of {choices}")
    if f.type in ("int", "float") and not _in_range(f, value):
        raise Invalid(path, f"{fmt(value)} is out of range: must be {range_text(f)}")
    if f.pattern and not re.fullmatch(f.pattern, value):
        raise Invalid(path, f"{fmt(value)} is not valid: must be {f.pattern_doc or f.pattern}")
    return value


def _typed(f: Field, value: Any, path: Path) -> Any:
    def wrong() -> Invalid:
        return Invalid(path, f"expected {describe(f)}, got {describe_value(value)}")

    if f.type == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong()
        return value
    if f.type == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong()
        if not math.isfinite(value):
            raise Invalid(path, f"{fmt(value)} is not allowed: must be a finite number")
        return float(value)
    if f.type == "str":
        if not isinstance(value, str):
            raise wrong()
        return value
    if f.type == "bool":
        if not isinstance(value, bool):
            raise wrong()
        return value
    if f.type == "table":
        if not isinstance(value, dict):
            raise wrong()
        return copy.deepcopy(value)
    if not isinstance(value, list):
        raise wrong()
    if f.length is not None and len(value) != f.length:
        raise Invalid(path, f"expected {describe(f)}, got {len(value)} elements")
    if f.item is None:
        return copy.deepcopy(value)
    return [validate(f.item, v, path + (i,)) for i, v in enumerate(value)]


def _in_range(f: Field, value: float) -> bool:
    return not (
        (f.ge is not None and value < f.ge)
        or (f.gt is not None and value <= f.gt)
        or (f.le is not None and value > f.le)
    )


def _one_schedule(table: Table) -> None:
    given = [k for k in ("every_items", "every_s") if k in table]
    if len(given) != 1:
        raise Invalid((), "a redraw table needs exactly one of every_items, every_s")


# A numeric parameter whose value is redrawn uniformly from [a, b] at a fixed
# period, measured in workload items or in virtual seconds.
REDRAW = Section(
    doc="Redraw table: the value is drawn uniformly from `uniform` = [a, b] at the start and "
    "again every `every_items` workload items or every `every_s` seconds.",
    fields={
        "uniform": Field(
            "list",
            "[a, b], the range the value is drawn from",
            item=Field("float", "bound"),
            length=2,
        ),
        "every_items": Field("int", "redraw period in workload items", OPTIONAL, ge=1),
        "every_s": Field("float", "redraw period in virtual seconds", OPTIONAL, gt=0),
    },
    checks=(_one_schedule,),
)


def _redraw(f: Field, value: Table, path: Path) -> Table:
    out = _section(REDRAW, value, path, partial=False)
    plain = Field(f.type, f.doc, ge=f.ge, gt=f.gt, le=f.le)
    low, high = (_field(plain, v, path + ("uniform", i)) for i, v in enumerate(out["uniform"]))
    if low > high:
        raise Invalid(path + ("uniform",), f"[{fmt(low)}, {fmt(high)}] is empty: need a <= b")
    return out


# --- lookup -------------------------------------------------------------------


def lookup(node: Node, path: list[str]) -> Node | None:
    """The node a dotted path leads to; inside a Tagged table any variant's key counts."""
    for i, part in enumerate(path):
        if isinstance(node, Section):
            child = node.fields.get(part)
        elif isinstance(node, Tagged):
            if part == node.tag:
                if i < len(path) - 1:
                    return None
                return Field("str", node.tag_doc, choices=tuple(node.variants))
            child = next((v.fields[part] for v in node.variants.values() if part in v.fields), None)
        else:
            return None
        if child is None:
            return None
        node = child
    return node


def leaf_keys(node: Node, prefix: str = "") -> list[str]:
    """Every dotted key that leads to a Field (used for did-you-mean hints)."""
    if isinstance(node, Field):
        return [prefix]
    if isinstance(node, Tagged):
        keys = [f"{prefix}.{node.tag}"]
        for variant in node.variants.values():
            keys += [k for k in leaf_keys(variant, prefix) if k not in keys]
        return keys
    out: list[str] = []
    for name, child in node.fields.items():
        out += leaf_keys(child, f"{prefix}.{name}" if prefix else name)
    return out


# --- typed settings -------------------------------------------------------------
#
# What the simulator's builders read instead of raw dicts: every section of the
# schema is its own frozen dataclass, generated from the section into checked-in
# source (settings_gen.py writes settings_types.py), so the schema stays the one
# description of a key (its type, range, default, doc) and a test keeps the
# types from drifting from it.


_TYPES: dict[tuple[int, str], type] = {}


def settings_type(node: Section, name: str, tag: tuple[str, str] | None = None) -> type:
    """The settings type of section `node` (of a Tagged's variant `tag` = (key, value)),
    made once; `name` is its class name when it is made."""
    key = (id(node), tag[1] if tag else "")
    cls = _TYPES.get(key)
    if cls is None:
        # The checked-in class of that name (settings_gen.py writes them from the
        # schema); a section the schema does not reach (none today) gets one made
        # here, with the same fields.
        from iotbench.scenarios import settings_types

        names = ([tag[0]] if tag else []) + list(node.fields)
        cls = getattr(settings_types, name, None)
        if cls is None or [f.name for f in dataclasses.fields(cls)] != names:
            cls = dataclasses.make_dataclass(
                name, [(n, Any) for n in names], bases=(Settings,), frozen=True, slots=True
            )
            cls.__module__ = __name__
            cls.__doc__ = node.doc
        _TYPES[key] = cls
    return cls


def typed(node: Node, value: Any, name: str = "") -> Any:
    """`value` (validated against `node`) as settings, tuples and plain values.
    `name`: where it sits in a run's config (dotted; "" is the whole config),
    which names the types made for it (network.radio: NetworkRadioSettings)."""
    if isinstance(node, Tagged):
        if value is None:
            return None
        variant = value[node.tag]
        section = node.variants[variant]
        cls = settings_type(section, class_name(f"{name}.{variant}"), (node.tag, variant))
        return cls(variant, **_typed_fields(section, value, name))
    if isinstance(node, Section):
        if value is None:
            return None
        name = node.name or name
        return settings_type(node, class_name(name))(**_typed_fields(node, value, name))
    if isinstance(value, dict):
        if node.redraw:
            return typed(REDRAW, value, "redraw")
        if isinstance(node.item, Section):  # a table keyed by id, of one section's values
            return MappingProxyType({k: typed(node.item, v, name) for k, v in value.items()})
        return MappingProxyType(copy.deepcopy(value))
    if isinstance(value, list):
        item = node.item
        return tuple(typed(item, v, name) if item is not None else v for v in value)
    return value


def class_name(dotted: str) -> str:
    """The settings type's name of the section at `dotted` (network.radio:
    NetworkRadioSettings; the whole config: RunSettings)."""
    if not dotted:
        return "RunSettings"
    words = [w for part in dotted.split(".") for w in part.replace("-", "_").split("_") if w]
    return "".join(w[:1].upper() + w[1:] for w in words) + "Settings"


def _typed_fields(node: Section, value: Table, name: str) -> dict[str, Any]:
    return {
        key: typed(child, _stored(child, value, key), f"{name}.{key}" if name else key)
        for key, child in node.fields.items()
    }


def _stored(child: Node, value: Table, name: str) -> Any:
    """A validated value's key; a key it lacks (a configuration stored by an earlier
    version, before the key existed) gets the key's default."""
    if name in value:
        return value[name]
    if isinstance(child, Field) and child.default not in (REQUIRED, OPTIONAL):
        return child.default
    return None
