"""A run's settings: typed, frozen values made from the schema (scenarios/settings.py)."""

from __future__ import annotations

import dataclasses

import pytest

from iotbench.scenarios import expand, load_scenario, parse_scenario
from iotbench.scenarios.fields import Settings
from iotbench.scenarios.settings import em_settings, network_settings, run_settings

PAIR = """
name = "pair"
description = "A pair with a redrawn loss."
[network.link]
rate_bps = 250000
[network.impair.to_server.loss]
model = "bernoulli"
p = { uniform = [0.1, 0.2], every_items = 10 }
[workload]
kind = "sequential"
items = 5
[protocol]
name = "coap"
"""


def _run(text: str):
    (run,) = expand(parse_scenario(text), {}, {})
    return run.config


def test_every_section_has_its_own_frozen_type():
    settings = run_settings(_run(PAIR))
    assert type(settings).__name__ == "RunSettings"
    assert type(settings.network).__name__ == "NetworkSettings"
    assert type(settings.network.link).__name__ == "NetworkLinkSettings"
    assert type(settings.protocol.coap).__name__ == "ProtocolCoapSettings"
    assert type(settings.workload).__name__ == "WorkloadSettings"
    for value in (settings, settings.network, settings.protocol.coap, settings.workload):
        assert isinstance(value, Settings) and dataclasses.is_dataclass(value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.workload.items = 6  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings.network["link"]  # type: ignore[index]  # not a dict


def test_values_absent_sections_tagged_tables_and_redraws():
    settings = run_settings(_run(PAIR))
    assert settings.workload.items == 5 and settings.network.link.rate_bps == 250000.0
    assert settings.network.topology is None  # absent optional key
    assert settings.protocol.mqtt is None  # another protocol's section
    loss = settings.network.impair.to_server.loss
    assert type(loss).__name__ == "NetworkImpairDirectionLossBernoulliSettings"
    assert loss.model == "bernoulli"
    redraw = loss.p
    assert isinstance(redraw, Settings) and redraw.uniform == (0.1, 0.2)
    assert redraw.every_items == 10 and redraw.every_s is None
    assert settings.network.impair.to_client is None
    # A section that sits at several places has one type, named once.
    assert type(settings.network.impair.to_server).__name__ == "NetworkImpairDirectionSettings"


def test_lists_are_tuples_and_tables_read_only():
    config = expand(load_scenario("s6-office"), {}, {})[0].config
    network = network_settings(config["network"])
    assert isinstance(network.nodes.area_m, tuple) or network.nodes.area_m is None
    layout = network.nodes.layout
    if layout is not None:
        with pytest.raises(TypeError):
            layout["nodes"] = []  # type: ignore[index]


def test_settings_are_equal_when_their_configs_are():
    config = _run(PAIR)
    assert run_settings(config) == run_settings(config)
    other = _run(PAIR.replace("items = 5", "items = 6"))
    assert run_settings(other) != run_settings(config)


def test_the_entity_manager_gets_the_schemas_defaults_when_absent():
    coap = run_settings(_run(PAIR)).protocol.coap
    em = em_settings(coap)
    assert (em.mode, em.emt, em.leisure_s, em.leisure_rate_bps) == ("unicast", "con", 5.0, None)


def test_as_kwargs_gives_a_sections_own_values():
    link = run_settings(_run(PAIR)).network.link
    kwargs = link.as_kwargs("layer")
    assert "layer" not in kwargs and kwargs["rate_bps"] == 250000.0
    assert set(kwargs) | {"layer"} == set(link.keys())


def test_per_node_radio_overrides_are_settings_by_node_id():
    text = """
name = "radio"
description = "Three nodes, the gateway's radio louder."
[network]
topology = "line"
nodes = { count = 3, spacing_m = 20.0 }
roles = { gateway = "n0", producers = ["n1", "n2"] }
radio = { nodes = { n0 = { tx_power_dbm = 0 } } }
[workload]
kind = "publish"
items = 1
interval_s = 5.0
[protocol]
name = "coap"
"""
    nodes = run_settings(_run(text)).network.radio.nodes
    assert list(nodes) == ["n0"]
    assert nodes["n0"].tx_power_dbm == 0 and nodes["n0"].sensitivity_dbm is None
    with pytest.raises(TypeError):
        nodes["n1"] = nodes["n0"]  # type: ignore[index]
