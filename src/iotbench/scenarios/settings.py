"""A run's settings as typed, frozen values: what everything below the loader reads.

The loader and the sweep keep a run's config as the JSON-like dict the results
store keeps (runner/store.py); the world turns it into settings once, at the
start of a run (`run_settings`), and never indexes a dict of settings after
that. Each section of the schema has its own type, generated from the schema
into settings_types.py (settings_gen.py): `settings.network.radio.tx_power_dbm`
is a float with its doc, `settings.protocol.coap` a ProtocolCoapSettings.
"""

from __future__ import annotations

from typing import Any, TypeVar

from iotbench.scenarios.errors import ScenarioError
from iotbench.scenarios.fields import typed, validate
from iotbench.scenarios.protocol_schema import COAP_EM
from iotbench.scenarios.schema import NETWORK, RUN_CONFIG
from iotbench.scenarios.settings_base import Settings
from iotbench.scenarios.settings_types import (
    NetworkSettings,
    ProtocolCoapEmSettings,
    ProtocolCoapSettings,
    RunSettings,
)

__all__ = [
    "NetworkSettings",
    "RunSettings",
    "Settings",
    "em_settings",
    "network_settings",
    "required",
    "run_settings",
]

_T = TypeVar("_T")


def required(value: _T | None, key: str) -> _T:
    """The value of `key` (dotted), which the schema always fills in where it is read
    though its type allows None elsewhere: a radio network's sections
    (radio_schema.fill_radio_sections) and the keys its topology needs, the
    selected protocol's section and protocol.tcp under a protocol over TCP
    (protocol_schema._fill_selected_protocol)."""
    if value is None:
        raise ScenarioError(f"{key}: missing, though a validated config has it")
    return value


def run_settings(config: dict[str, Any]) -> RunSettings:
    """A run's validated config (max_sim_time_s, network, workload, protocol)."""
    settings: RunSettings = typed(RUN_CONFIG, config)
    return settings


def network_settings(network: dict[str, Any]) -> NetworkSettings:
    """A validated `network` section on its own (the report's maps, the shim)."""
    settings: NetworkSettings = typed(NETWORK, network, "network")
    return settings


def em_settings(coap: ProtocolCoapSettings) -> ProtocolCoapEmSettings:
    """protocol.coap.em, with the schema's defaults when the scenario has none."""
    if coap.em is not None:
        return coap.em
    settings: ProtocolCoapEmSettings = typed(COAP_EM, validate(COAP_EM, {}), "protocol.coap.em")
    return settings
