"""Sweep expansion: a scenario -> the list of runs (axes product x repetitions).

Every combination is merged and validated in full before any run is returned,
so a bad combination stops the command before it produces partial results.
Each run's seed depends only on the base seed, the scenario name, its params
and its repetition, never on run order or on how many processes run it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from iotbench.scenarios.errors import ScenarioError, UserError
from iotbench.scenarios.fields import (
    Invalid,
    Table,
    did_you_mean,
    dotted,
    fmt,
    leaf_keys,
    lookup,
    validate,
)
from iotbench.scenarios.loader import META, Scalar, Scenario
from iotbench.scenarios.merge import set_path
from iotbench.scenarios.schema import DOCUMENT, RUN_KEYS

SETTABLE_META = ("seed", "repetitions")


@dataclass(frozen=True)
class Run:
    scenario: str
    params: dict[str, Scalar]  # axis name -> preset name or value, in axis order
    repetition: int
    seed: int
    config: Table  # the merged, validated config `run_one` gets (the RUN_KEYS sections)
    config_hash: str
    key: str  # identifies the run in the results store; stable across invocations

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.params.items()]
        return " ".join(parts + [f"rep={self.repetition}"])

    def file_stem(self) -> str:
        """A file name (without extension) a person can find the run by: the
        scenario, its axis values, the repetition, then the key that makes it
        unique, e.g. "s1-object-download_variant=spdy_size=10_rep0_3f9c...".
        """
        parts = [self.scenario, *(f"{k}={v}" for k, v in self.params.items())]
        readable = _file_safe("_".join([*parts, f"rep{self.repetition}"]))
        return f"{readable[:MAX_READABLE_STEM]}_{self.key}"


#: The readable part of a run's file name; with the key it stays well under the
#: 255 bytes file systems allow.
MAX_READABLE_STEM = 160


def _file_safe(text: str) -> str:
    """Letters, digits and . _ = + - only: no separators, spaces or shell specials."""
    text = text.replace("%", "pct")
    return re.sub(r"[^A-Za-z0-9._=+-]+", "-", text)


def _digest(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).digest()


def run_seed(base_seed: int, scenario: str, params: Mapping[str, Any], repetition: int) -> int:
    """A 63-bit seed from the base seed, scenario name, sorted params and repetition."""
    digest = _digest([base_seed, scenario, sorted(params.items()), repetition])
    return int.from_bytes(digest[:8], "big") >> 1


def network_seed(base_seed: int, scenario: str, network: Mapping[str, Any], repetition: int) -> int:
    """The seed of a run's network: the same for runs that differ only outside `network`."""
    digest = _digest([base_seed, scenario, network, repetition, "network"])
    return int.from_bytes(digest[:8], "big") >> 1


def network_key(config: Mapping[str, Any]) -> str:
    """A run config's network as text: runs with equal keys simulate the same network."""
    return json.dumps(config["network"], sort_keys=True)


def config_key(config: Mapping[str, Any]) -> str:
    """A whole run config as text: runs with equal keys run the same thing."""
    return json.dumps(config, sort_keys=True)


def one_network(
    runs: Sequence[Run], label: str, key: Callable[[Mapping[str, Any]], str] = network_key
) -> Run:
    """The first of `runs` when they all simulate one network (what `iotbench topology`
    draws and the impairment shim relays); otherwise a UserError naming the axes that
    tell the networks apart and their values, to pick one with --filter. With
    key=config_key, the runs must agree on everything (what `iotbench emulate` builds)."""
    if not runs:
        raise UserError(f"{label}: --filter selects no run")
    networks: dict[str, Run] = {}
    for run in runs:  # each network's first run stands for it
        networks.setdefault(key(run.config), run)
    if len(networks) > 1:
        first = runs[0].params
        differ = sorted(
            {a for run in networks.values() for a, v in run.params.items() if v != first.get(a)}
        )
        choices = "; ".join(
            f"{a}: {', '.join(sorted({str(r.params[a]) for r in networks.values()}))}"
            for a in differ
        )
        raise UserError(
            f"{label}: the selected runs have {len(networks)} different "
            f"{'networks' if key is network_key else 'configurations'}; pick one "
            f"with --filter ({choices})"
        )
    return runs[0]


def _with_network_seed(config: Table, base_seed: int, scenario: str, rep: int) -> Table:
    """`config` with network.seed filled in, unless the scenario fixes it."""
    network = config["network"]
    if "seed" in network:
        return config
    seed = network_seed(base_seed, scenario, network, rep)
    return {**config, "network": {**network, "seed": seed}}


def config_hash(config: Table) -> str:
    return _digest(config).hex()[:16]


def run_key(scenario: str, cfg_hash: str, params: Mapping[str, Any], rep: int, seed: int) -> str:
    return _digest([scenario, cfg_hash, sorted(params.items()), rep, seed]).hex()[:16]


def expand(
    scenario: Scenario,
    filters: Mapping[str, Sequence[Any]] | None = None,
    overrides: Mapping[str, Any] | None = None,
    reps: int | None = None,
) -> list[Run]:
    """The runs of `scenario`: the product of its axes (first axis outermost) x repetitions.

    `filters` maps an axis name to the values to keep (preset names or values;
    strings are matched against values as TOML would read them). `overrides`
    maps a dotted key of the base config to a new value (as `--set` does).
    `reps` replaces the scenario's `repetitions`.
    """
    overrides = dict(overrides or {})
    base = _apply_overrides(scenario, overrides)
    meta = _validated(scenario, overrides, lambda: validate(META, _meta_part(base)))
    repetitions = meta["repetitions"] if reps is None else reps
    if repetitions < 1:
        raise ScenarioError(f"--reps {repetitions}: must be >= 1")
    combos = _validated_combinations(scenario, base, overrides)
    keep = _parse_filters(scenario, filters or {})
    runs = []
    for params, config in combos:
        if not all(params[axis] in values for axis, values in keep.items()):
            continue
        cfg_hash = config_hash(config)
        for rep in range(repetitions):
            seed = run_seed(meta["seed"], scenario.name, params, rep)
            key = run_key(scenario.name, cfg_hash, params, rep, seed)
            run_config = _with_network_seed(config, meta["seed"], scenario.name, rep)
            runs.append(Run(scenario.name, params, rep, seed, run_config, cfg_hash, key))
    return runs


def _meta_part(base: Table) -> Table:
    return {k: v for k, v in base.items() if k in META.fields}


def _apply_overrides(scenario: Scenario, overrides: Mapping[str, Any]) -> Table:
    base = scenario.base
    swept = {axis.key: axis.name for axis in scenario.axes if axis.key}
    for key, value in overrides.items():
        parts = key.split(".")
        if parts[0] not in RUN_KEYS + SETTABLE_META:
            raise ScenarioError(
                f"--set {key}: only {', '.join(SETTABLE_META)} and keys under "
                f"{', '.join(RUN_KEYS)} can be set"
            )
        if lookup(DOCUMENT, parts) is None:
            hint = did_you_mean(key, leaf_keys(DOCUMENT))
            raise ScenarioError(f"--set {key}: not a scenario key{hint}")
        for swept_key, axis in swept.items():
            if key == swept_key or swept_key.startswith(key + "."):
                raise ScenarioError(
                    f"--set {key}: the axis {axis!r} sweeps {swept_key}; use --filter {axis}=VALUE"
                )
        try:
            base = set_path(base, key, value)
        except ValueError as exc:
            raise ScenarioError(f"--set {key}: {exc}") from None
    _validated(scenario, overrides, lambda: validate(DOCUMENT, base, partial=True))
    return base


def _validated(scenario: Scenario, overrides: Mapping[str, Any], step: Any, where: str = "") -> Any:
    try:
        return step()
    except Invalid as exc:
        key = dotted(exc.path)
        if not where and any(key == k or key.startswith(k + ".") for k in overrides):
            where = " (set by --set)"
        raise ScenarioError(f"{scenario.label}: {key}: {exc.message}{where}") from None


def _validated_combinations(
    scenario: Scenario, base: Table, overrides: Mapping[str, Any]
) -> list[tuple[dict[str, Scalar], Table]]:
    """(params, run config) for every combination of axis values, all validated."""
    out = []
    for values in itertools.product(*(axis.values for axis in scenario.axes)):
        params = {axis.name: value for axis, value in zip(scenario.axes, values)}
        config = base
        for axis, value in zip(scenario.axes, values):
            config = axis.apply(config, value)
        where = ""
        if params:
            where = " (in the run " + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"
        full = _validated(scenario, overrides, lambda c=config: validate(DOCUMENT, c), where)
        run_config = {key: full[key] for key in RUN_KEYS}
        out.append((params, _with_layout(scenario, run_config, where)))
    return out


def _with_layout(scenario: Scenario, config: Table, where: str) -> Table:
    """A file topology's nodes and links, read once and carried in the run's config,
    so a run needs no file and its config hash changes when the file does."""
    from iotbench.world.networks.topology import load_layout, load_links

    network = config["network"]
    nodes = network.get("nodes") or {}
    if network.get("topology") != "file" or "file" not in nodes:
        return config
    base = scenario.base_dir
    try:
        layout = load_layout(base / nodes["file"], nodes["file"])
        if "links_file" in nodes:
            layout["links"] = layout["links"] + load_links(
                base / nodes["links_file"], nodes["links_file"]
            )
    except ScenarioError as exc:
        raise ScenarioError(f"{scenario.label}: network.nodes: {exc}{where}") from None
    return {**config, "network": {**network, "nodes": {**nodes, "layout": layout}}}


# --- filters and overrides as the CLI gives them ------------------------------


def parse_filter(text: str) -> tuple[str, list[str]]:
    """'variant=coap-con,coap-non' -> ('variant', ['coap-con', 'coap-non'])"""
    axis, sep, values = text.partition("=")
    items = [v.strip() for v in values.split(",")]
    if not sep or not axis.strip() or not all(items):
        raise ScenarioError(f"--filter {text!r}: expected AXIS=VALUE[,VALUE...]")
    return axis.strip(), items


def parse_override(text: str) -> tuple[str, Any]:
    """'workload.items=50' -> ('workload.items', 50); the value is read as a TOML value,
    and taken as a plain string when it is not one (so `type=non` needs no quotes)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ScenarioError(f"--set {text!r}: expected DOTTED.KEY=VALUE")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return key, value


def _parse_filters(
    scenario: Scenario, filters: Mapping[str, Sequence[Any]]
) -> dict[str, list[Scalar]]:
    """Axis name -> the axis values to keep; unknown axes or values are errors."""
    axes = {axis.name: axis for axis in scenario.axes}
    keep: dict[str, list[Scalar]] = {}
    for name, wanted in filters.items():
        if name not in axes:
            known = ", ".join(axes) or "(the scenario has no sweep axes)"
            raise ScenarioError(
                f"--filter {name}: no such axis{did_you_mean(name, list(axes))}; axes: {known}"
            )
        axis = axes[name]
        for value in wanted:
            matches = [v for v in axis.values if _matches(v, value)]
            if not matches:
                allowed = ", ".join(str(v) for v in axis.values)
                raise ScenarioError(
                    f"--filter {name}={value}: no such value; {name} is one of {allowed}"
                )
            keep.setdefault(name, []).extend(m for m in matches if m not in keep.get(name, []))
    return keep


def _matches(axis_value: Scalar, wanted: Any) -> bool:
    if not isinstance(wanted, str) or isinstance(axis_value, str):
        return _same(axis_value, wanted) or str(axis_value) == str(wanted)
    if wanted == fmt(axis_value) or wanted == str(axis_value):
        return True
    try:
        return _same(axis_value, tomllib.loads(f"v = {wanted}")["v"])
    except tomllib.TOMLDecodeError:
        return False


def _same(a: Any, b: Any) -> bool:
    # True == 1 in Python; a filter for 1 must not select the boolean true.
    return isinstance(a, bool) == isinstance(b, bool) and a == b
