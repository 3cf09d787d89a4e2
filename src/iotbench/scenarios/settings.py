"""A run's settings as typed, frozen values: what everything below the loader reads.

The loader and the sweep keep a run's config as the JSON-like dict the results
store keeps (runner/store.py); the world turns it into settings once, at the
start of a run (`run_settings`), and never indexes a dict of settings after
that. Each section of the schema has its own type (fields.py makes them from
the schema): `settings.network.radio.tx_power_dbm`, `settings.protocol.coap`.
"""

from __future__ import annotations

from iotbench.scenarios.fields import Settings, typed, validate
from iotbench.scenarios.protocol_schema import COAP_EM
from iotbench.scenarios.schema import NETWORK, RUN_CONFIG

__all__ = ["Settings", "em_settings", "network_settings", "run_settings"]


def run_settings(config: dict) -> Settings:
    """A run's validated config (max_sim_time_s, network, workload, protocol)."""
    return typed(RUN_CONFIG, config)


def network_settings(network: dict) -> Settings:
    """A validated `network` section on its own (the report's maps, the shim)."""
    return typed(NETWORK, network, "network")


def em_settings(coap: Settings) -> Settings:
    """protocol.coap.em, with the schema's defaults when the scenario has none."""
    if coap.em is not None:
        return coap.em
    return typed(COAP_EM, validate(COAP_EM, {}), "protocol.coap.em")
