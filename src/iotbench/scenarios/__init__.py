"""Scenarios: TOML files -> validated base config + sweep axes -> the list of runs.

    scenario = load_scenario("s3-robustness")          # or a path to a .toml file
    runs = expand(scenario, filters={"variant": ["coap-con"]}, overrides={"workload.items": 50})

docs/scenarios.md is the reference for the file format.
"""

from iotbench.scenarios.errors import ScenarioError, UserError
from iotbench.scenarios.loader import Axis, Scenario, list_builtin, load_scenario, parse_scenario
from iotbench.scenarios.sweep import Run, expand, parse_filter, parse_override

__all__ = [
    "Axis",
    "Run",
    "Scenario",
    "ScenarioError",
    "UserError",
    "expand",
    "list_builtin",
    "load_scenario",
    "parse_filter",
    "parse_override",
    "parse_scenario",
]
