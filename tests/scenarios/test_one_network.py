"""One rule says whether a network is a radio network, and one helper picks the one
network a set of runs simulates (iotbench topology, the impairment shim, the report)."""

from __future__ import annotations

import pytest

from iotbench.scenarios import UserError, expand, load_scenario
from iotbench.scenarios.radio_schema import is_radio, is_radio_topology
from iotbench.scenarios.settings import run_settings
from iotbench.scenarios.sweep import network_key, one_network
from iotbench.world.networks import is_radio_network


def test_any_topology_but_pair_is_a_radio_network_and_absent_is_a_pair():
    assert not is_radio_topology(None) and not is_radio_topology("pair")
    assert all(is_radio_topology(t) for t in ("line", "star", "grid", "random", "building"))
    assert not is_radio({}) and not is_radio({"topology": "pair"})
    assert is_radio({"topology": "grid"})
    # The config rule and the settings' agree on the built-in scenarios.
    for name, radio in (("s1-object-download", False), ("s4-multi-hop", True)):
        run = expand(load_scenario(name), {}, {})[0]
        assert is_radio(run.config["network"]) is radio
        assert is_radio_network(run_settings(run.config).network) is radio


def test_one_network_names_the_axes_that_tell_the_networks_apart():
    runs = expand(load_scenario("s3-robustness"), {}, {}, reps=1)
    with pytest.raises(UserError) as err:
        one_network(runs, "s3-robustness")
    text = str(err.value)
    assert "have 9 different networks; pick one with --filter (condition: " in text
    assert "variant" not in text  # the variants share each condition's network
    picked = expand(load_scenario("s3-robustness"), {"condition": ["loss-5"]}, {}, reps=1)
    assert one_network(picked, "s3") is picked[0]
    assert len({network_key(r.config) for r in picked}) == 1
    with pytest.raises(UserError, match="selects no run"):
        one_network([], "s3")
