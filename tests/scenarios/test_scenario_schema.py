"""Scenario validation: defaults, merging, and one clear message per kind of error."""

from __future__ import annotations

import pytest

from iotbench.scenarios import ScenarioError, expand, parse_scenario

BASE = """\
name = "t"
description = "a test scenario"

[workload]
kind = "sequential"
items = 10

[protocol]
name = "coap"
"""


def error_of(text: str, label: str = "s3.toml", **expand_args) -> str:
    with pytest.raises(ScenarioError) as info:
        expand(parse_scenario(text, label=label), **expand_args)
    return str(info.value)


def config_of(text: str) -> dict:
    runs = expand(parse_scenario(text, label="t.toml"))
    return runs[0].config


def test_defaults_are_filled_in() -> None:
    config = config_of(BASE)
    assert set(config) == {"max_sim_time_s", "network", "workload", "protocol"}
    assert config["max_sim_time_s"] == 86400.0
    assert config["network"]["ip_version"] == 4
    assert config["network"]["link"] == {
        "layer": "ip",
        "rate_bps": 0,
        "delay_s": 0.0,
        "mtu_bytes": 1500,
        "queue_packets": 100,
    }
    coap = config["protocol"]["coap"]
    assert coap["type"] == "con" and coap["ack_timeout_s"] == 2.0 and coap["token_length"] == 2
    assert config["workload"]["start_s"] == 0.0
    # No impairment section is invented: absent means no impairment.
    assert "impair" not in config["network"]


def test_non_timeout_is_left_to_the_endpoint_unless_given() -> None:
    # Absent, the endpoint derives it: MAX_TRANSMIT_WAIT, or the adaptive wait with CoCoA.
    assert "non_timeout_s" not in config_of(BASE)["protocol"]["coap"]
    text = BASE + "[protocol.coap]\nnon_timeout_s = 10\n"
    assert config_of(text)["protocol"]["coap"]["non_timeout_s"] == 10.0


def test_ints_are_widened_to_floats() -> None:
    config = config_of(BASE + "[network.link]\ndelay_s = 1\n")
    assert config["network"]["link"]["delay_s"] == 1.0
    assert isinstance(config["network"]["link"]["delay_s"], float)


def test_bad_choice_names_file_key_and_choices() -> None:
    msg = error_of(BASE + '[protocol.coap]\ntype = "cn"\n')
    assert msg == "s3.toml: protocol.coap.type: 'cn' is not one of con, non"


def test_unknown_key_with_hint() -> None:
    msg = error_of(BASE + '[protocol.coap]\ntyp = "con"\n')
    assert msg.startswith("s3.toml: protocol.coap.typ: unknown key 'typ' (did you mean 'type'?)")
    assert "allowed keys: type, ack_timeout_s" in msg


def test_unknown_top_level_key() -> None:
    msg = error_of("seeed = 3\n" + BASE)
    assert msg.startswith("s3.toml: seeed: unknown key 'seeed' (did you mean 'seed'?)")


def test_wrong_type() -> None:
    msg = error_of(BASE.replace("items = 10", 'items = "10"'))
    assert msg == "s3.toml: workload.items: expected an integer >= 1, got a string ('10')"
    msg = error_of(BASE + "[network.link]\ndelay_s = true\n")
    assert msg == "s3.toml: network.link.delay_s: expected a number >= 0, got a boolean (true)"
    msg = error_of(BASE + "[network]\nlink = 5\n")
    assert msg == "s3.toml: network.link: expected a table, got an integer (5)"


def test_out_of_range() -> None:
    msg = error_of(BASE + "[protocol.coap]\ntoken_length = 9\n")
    assert msg == "s3.toml: protocol.coap.token_length: 9 is out of range: must be between 0 and 8"
    msg = error_of(BASE.replace("items = 10", "items = 0"))
    assert msg == "s3.toml: workload.items: 0 is out of range: must be >= 1"


def test_mtu_depends_on_ip_version() -> None:
    ok = BASE + "[network]\nip_version = 4\n[network.link]\nmtu_bytes = 128\n"
    assert config_of(ok)["network"]["link"]["mtu_bytes"] == 128
    msg = error_of(ok.replace("ip_version = 4", "ip_version = 6"))
    assert msg == "s3.toml: network.link.mtu_bytes: 128 is out of range: must be >= 1280 for IPv6"


def test_missing_required_key() -> None:
    msg = error_of(BASE.replace('kind = "sequential"\n', ""))
    assert msg == (
        "s3.toml: workload.kind: missing required key: one of object-download, periodic, "
        "poisson, sequential, publish, group-query"
    )
    for kind in ("periodic", "poisson"):
        msg = error_of(BASE.replace('kind = "sequential"', f'kind = "{kind}"'))
        assert f"workload.interval_s: missing required key for kind = {kind}" in msg
    msg = error_of(BASE.replace('name = "t"\n', ""))
    assert msg.startswith("s3.toml: name: missing required key")


def test_bad_scenario_name() -> None:
    msg = error_of(BASE.replace('name = "t"', 'name = "My Scenario"'))
    assert msg.startswith("s3.toml: name: 'My Scenario' is not valid: must be")


def test_model_tables() -> None:
    impair = BASE + "[network.impair.to_server]\n"
    msg = error_of(impair + 'loss = { model = "bernouli", p = 0.1 }\n')
    assert msg == (
        "s3.toml: network.impair.to_server.loss.model: "
        "'bernouli' is not one of none, bernoulli, gilbert-elliott"
    )
    msg = error_of(impair + 'loss = { model = "bernoulli", q = 0.1 }\n')
    assert msg == (
        "s3.toml: network.impair.to_server.loss.q: unknown key 'q'; "
        "allowed keys for model = bernoulli: model, p"
    )
    msg = error_of(impair + 'loss = { model = "bernoulli" }\n')
    assert "network.impair.to_server.loss.p: missing required key" in msg
    msg = error_of(impair + 'loss = { model = "bernoulli", p = 1.5 }\n')
    assert msg.endswith("loss.p: 1.5 is out of range: must be between 0 and 1")
    msg = error_of(BASE + "[network.impair.sideways]\n")
    assert "network.impair.sideways: unknown key 'sideways'; allowed keys: to_server" in msg


def test_gilbert_elliott_defaults() -> None:
    text = BASE + (
        "[network.impair.both]\n"
        'loss = { model = "gilbert-elliott", p_good_to_bad = 0.1, p_bad_to_good = 0.5 }\n'
    )
    loss = config_of(text)["network"]["impair"]["both"]["loss"]
    assert loss == {
        "model": "gilbert-elliott",
        "p_good_to_bad": 0.1,
        "p_bad_to_good": 0.5,
        "loss_good": 0.0,
        "loss_bad": 1.0,
    }


def test_redraw_tables() -> None:
    impair = BASE + "[network.impair.both]\n"
    table = "{ uniform = [0.0, 0.05], every_items = 100 }"
    loss = config_of(impair + f'loss = {{ model = "bernoulli", p = {table} }}\n')
    assert loss["network"]["impair"]["both"]["loss"]["p"] == {
        "uniform": [0.0, 0.05],
        "every_items": 100,
    }
    msg = error_of(
        impair + 'loss = { model = "bernoulli", p = { uniform = [0.0, 2.0], every_s = 1 } }'
    )
    assert msg.endswith("loss.p.uniform[1]: 2 is out of range: must be between 0 and 1")
    msg = error_of(impair + 'delay = { model = "constant", s = { uniform = [0.0, 1.0] } }')
    assert msg.endswith("delay.s: a redraw table needs exactly one of every_items, every_s")
    msg = error_of(
        impair + 'delay = { model = "constant", s = { uniform = [2.0, 1.0], every_s = 1 } }'
    )
    assert msg.endswith("delay.s.uniform: [2, 1] is empty: need a <= b")


def test_outage_models() -> None:
    impair = BASE + "[network.impair.both]\n"
    config = config_of(
        impair + 'outages = { model = "scheduled", start_s = [1, 5], duration_s = 2 }'
    )
    assert config["network"]["impair"]["both"]["outages"]["start_s"] == [1.0, 5.0]
    msg = error_of(
        impair + 'outages = { model = "random", count = 1, duration_s = 2, window_s = [0.0] }'
    )
    assert msg.endswith("outages.window_s: expected a list of 2 numbers >= 0, got 1 elements")


def test_preset_errors_name_the_preset() -> None:
    text = BASE + '[axes.variant.coap-x]\nprotocol = { coap = { type = "cn" } }\n'
    msg = error_of(text)
    assert msg == "s3.toml: axes.variant.coap-x.protocol.coap.type: 'cn' is not one of con, non"
    text = BASE + "[axes.variant.a]\nseed = 3\n"
    msg = error_of(text)
    assert msg.startswith("s3.toml: axes.variant.a.seed: unknown key 'seed'; allowed keys: max_sim")


def test_value_axis_errors() -> None:
    msg = error_of(BASE + '[axes.size]\nkey = "workload.object_size_byte"\nvalues = [1]\n')
    assert msg == (
        "s3.toml: axes.size.key: 'workload.object_size_byte' is not a config key "
        "(did you mean 'workload.object_size_bytes'?)"
    )
    msg = error_of(BASE + '[axes.size]\nkey = "workload.object_size_bytes"\nvalues = [1, -2]\n')
    assert msg == "s3.toml: axes.size.values[1]: -2 is out of range: must be >= 0"
    msg = error_of(BASE + '[axes.size]\nkey = "workload.items"\nvalues = [1, 1]\n')
    assert msg == "s3.toml: axes.size.values: values must be distinct"
    msg = error_of(BASE + '[axes.size]\nkey = "workload.items"\nvalues = [1]\nextra = 2\n')
    assert "axes.size: a value axis has exactly the keys key and values" in msg


def test_combination_errors_name_the_run() -> None:
    # Each preset is fine alone; the combination lacks interval_s.
    text = BASE + (
        '[axes.variant.a]\nworkload = { kind = "periodic" }\n'
        '[axes.variant.b]\nworkload = { kind = "sequential" }\n'
    )
    msg = error_of(text)
    assert msg.startswith("s3.toml: workload.interval_s: missing required key")
    assert msg.endswith("(in the run variant=a)")


def test_plot_spec_must_name_axes() -> None:
    text = BASE + '[[report.plots]]\nx = "size"\ny = "m"\n[axes.variant.a]\n'
    msg = error_of(text)
    assert msg == "s3.toml: report.plots[0].x: 'size' is not a sweep axis; axes: variant"


def test_plot_x_values_must_be_values_of_the_x_axis() -> None:
    text = BASE + (
        '[[report.plots]]\nx = "variant"\nx_values = ["a", "c"]\ny = "m"\n'
        "[axes.variant.a]\n[axes.variant.b]\n"
    )
    msg = error_of(text)
    assert msg == (
        "s3.toml: report.plots[0].x_values[1]: 'c' is not a value of axis 'variant'; values: a, b"
    )


@pytest.mark.parametrize(
    ("figure", "message"),
    [
        (
            'series = "energy_j"\nkind = "nodes"\nline = "size"',
            "report.series[0].line: 'size' is not a sweep axis; axes: variant",
        ),
        (
            'series = "energy_j"\nkind = "pie"',
            "report.series[0].kind: 'pie' is not one of cdf, box, time, scatter, nodes",
        ),
        (
            'series = "tta_cdf"\nkind = "cdf"\nreference = "offered_per_s"',
            "report.series[0].reference: only kind box or time uses it",
        ),
        (
            'series = "tta_cdf"\nkind = "cdf"\ncolor_by = "tree_hops"',
            "report.series[0].color_by: only kind nodes uses it",
        ),
        (
            'series = "tta_cdf"\nkind = "cdf"\nrelative = true',
            "report.series[0].relative: only kind nodes uses it",
        ),
        (
            'series = "tta_cdf"\nkind = "cdf"\nfilter = { variant = ["c"] }',
            "report.series[0].filter.variant[0]: 'c' is not a value of axis 'variant'; "
            "values: a, b",
        ),
        (
            'series = "tta_cdf"\nkind = "cdf"\nfilter = { size = ["a"] }',
            "report.series[0].filter.size: 'size' is not a sweep axis; axes: variant",
        ),
    ],
)
def test_series_figures_are_checked(figure: str, message: str) -> None:
    text = BASE + f"[[report.series]]\n{figure}\n[axes.variant.a]\n[axes.variant.b]\n"
    assert error_of(text) == f"s3.toml: {message}"


def test_protocol_and_link_layer_must_match() -> None:
    text = BASE + '[network.link]\nlayer = "ieee802154"\nmtu_bytes = 102\n'
    assert error_of(text) == (
        "s3.toml: network.link.layer: protocol 'coap' needs layer = 'ip', not 'ieee802154'"
    )
    ndn = BASE.replace('name = "coap"', 'name = "ndn"')
    assert error_of(ndn).endswith("protocol 'ndn' needs layer = 'ieee802154', not 'ip'")
    big = ndn + '[network.link]\nlayer = "ieee802154"\nmtu_bytes = 120\n'
    assert error_of(big) == (
        "s3.toml: network.link.mtu_bytes: 120 is out of range: an 802.15.4 frame carries at "
        "most 104 payload bytes"
    )


def test_invalid_toml() -> None:
    assert error_of("name = ").startswith("s3.toml: invalid TOML:")


def test_model_table_replaces_base_table_whole() -> None:
    text = BASE + (
        "[network.impair.both]\n"
        'loss = { model = "gilbert-elliott", p_good_to_bad = 0.1, p_bad_to_good = 0.5 }\n'
        '[axes.loss.bern]\nnetwork = { impair = { both = { loss = { model = "bernoulli", p = 0.2 } } } }\n'
    )
    loss = config_of(text)["network"]["impair"]["both"]["loss"]
    assert loss == {"model": "bernoulli", "p": 0.2}


def test_fixed_sections_merge_key_by_key() -> None:
    text = BASE + (
        "[protocol.coap]\nack_timeout_s = 3.0\n"
        '[axes.variant.non]\nprotocol = { coap = { type = "non" } }\n'
    )
    coap = config_of(text)["protocol"]["coap"]
    assert coap["type"] == "non" and coap["ack_timeout_s"] == 3.0


def test_value_axis_can_set_a_model_parameter() -> None:
    text = BASE + (
        '[network.impair.both]\nloss = { model = "bernoulli", p = 0.0 }\n'
        '[axes.p]\nkey = "network.impair.both.loss.p"\nvalues = [0.01, 0.02]\n'
    )
    runs = expand(parse_scenario(text))
    assert [r.config["network"]["impair"]["both"]["loss"] for r in runs] == [
        {"model": "bernoulli", "p": 0.01},
        {"model": "bernoulli", "p": 0.02},
    ]
