"""The settings types are generated from the schema into checked-in source
(scenarios/settings_gen.py writes scenarios/settings_types.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from iotbench.scenarios import expand, list_builtin, load_scenario
from iotbench.scenarios.fields import Settings
from iotbench.scenarios.settings import run_settings
from iotbench.scenarios.settings_gen import TARGET, source


def test_the_checked_in_types_are_what_the_schema_makes():
    assert TARGET.read_text() == source(), (
        "settings_types.py is out of date: python -m iotbench.scenarios.settings_gen"
    )


def _settings_in(value):
    if isinstance(value, Settings):
        yield value
        for f in dataclasses.fields(value):
            yield from _settings_in(getattr(value, f.name))
    elif isinstance(value, tuple):
        for v in value:
            yield from _settings_in(v)
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _settings_in(v)


def test_every_builtin_run_is_made_of_the_generated_classes():
    """No section of any built-in scenario falls back to a class made at run time."""
    seen = set()
    for name in list_builtin():
        for run in expand(load_scenario(name), reps=1):
            for settings in _settings_in(run_settings(run.config)):
                seen.add(type(settings))
    assert seen and all(cls.__module__ == "iotbench.scenarios.settings_types" for cls in seen), (
        sorted(c.__name__ for c in seen if c.__module__ != "iotbench.scenarios.settings_types")
    )
    assert len(seen) >= 30  # the built-in scenarios use 37 of the sections today
