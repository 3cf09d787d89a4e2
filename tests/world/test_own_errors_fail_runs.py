"""A stack's own exception inside a simulation fails the run (proto/errors.py): a fault
injected into each stack's guarded code reaches `run_one`, and a campaign records the
run as failed, with its traceback and the command that runs it again."""

from __future__ import annotations

from pathlib import Path

import pytest
from aioquic.quic.connection import QuicConnection

import iotbench.proto.mqttsn.client as mqttsn_client_module
from iotbench.runner import ResultStore, run_campaign
from iotbench.scenarios import expand, load_scenario
from iotbench.world import run_one
from iotbench.world.protocols import coap as coap_protocol
from iotbench.world.protocols import mqtt as mqtt_protocol
from iotbench.world.protocols import mqttsn as mqttsn_protocol
from iotbench.world.workloads.publish.ndn import NdnPull
from stack_faults import (
    MQTTSN_CLIENT_EVENT,
    BrokenBrokerParams,
    Injected,
    broken_coap_endpoint,
    broken_gateway_params,
    fault,
)

# (scenario, point, what the fault replaces and with what): each is called inside the
# stack's guard (`except Exception`), which counted and swallowed it before. Most
# stacks are compiled and take no patches: the run's builder gets a stack that
# breaks (tests/stack_faults.py) in place of its class or settings.
STACKS = {
    "coap": (
        "s3-robustness",
        {"variant": ["coap-con"]},
        coap_protocol,
        "CoapEndpoint",
        broken_coap_endpoint,
    ),
    "mqtt-broker": (
        "s3-robustness",
        {"variant": ["mqtt-qos0"]},
        mqtt_protocol,
        "MqttBrokerParams",
        BrokenBrokerParams,
    ),
    "mqttsn-gateway": (
        "s3-robustness",
        {"variant": ["mqttsn-qos0"]},
        mqttsn_protocol,
        "MqttSnGatewayParams",
        broken_gateway_params,
    ),
    "mqttsn-client": (
        "s3-robustness",
        {"variant": ["mqttsn-qos1"]},
        mqttsn_client_module,
        MQTTSN_CLIENT_EVENT,
        fault,
    ),
    # aioquic's connection, which the QUIC endpoint guards.
    "quic": ("s3-robustness", {"variant": ["quic"]}, QuicConnection, "receive_datagram", fault),
    # The producer's application, which NDN's forwarder calls inside its guard (the
    # forwarder itself is compiled and takes no patches).
    "ndn-forwarder": (
        "s4-single-hop-scheduled",
        {"variant": ["ndn"]},
        NdnPull,
        "_on_interest",
        fault,
    ),
}


def first_run(name: str, point: dict):
    filters = {**point}
    if name == "s3-robustness":
        filters["condition"] = ["base"]
    else:
        filters["interval"] = ["5s"]
    return expand(load_scenario(name), filters, {"workload.items": 5})[0]


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_a_stacks_own_exception_fails_the_run(stack, monkeypatch):
    name, point, target, attribute, replacement = STACKS[stack]
    run = first_run(name, point)
    assert run_one(run.config, run.seed).metrics["items_delivered"] == 5  # without the fault
    monkeypatch.setattr(target, attribute, replacement)
    with pytest.raises(Injected, match="a bug inside the stack"):
        run_one(run.config, run.seed)


def test_the_campaign_records_the_failed_run_and_goes_on(monkeypatch, tmp_path: Path):
    scenario = load_scenario("s3-robustness")
    runs = expand(
        scenario,
        {"variant": ["coap-con", "mqtt-qos0"], "condition": ["base"]},
        {"workload.items": 5},
    )
    monkeypatch.setattr(mqtt_protocol, "MqttBrokerParams", BrokenBrokerParams)
    overrides = {"workload.items": 5}
    result = run_campaign(scenario, runs, tmp_path, jobs=1, progress=False, overrides=overrides)
    assert [r.run.params["variant"] for r in result.results] == ["coap-con"]
    (failure,) = result.failures
    assert failure.run.params["variant"] == "mqtt-qos0"
    assert failure.error == "Injected: a bug inside the stack"
    assert "passwords" in failure.traceback and "own_error" in failure.traceback
    with ResultStore(tmp_path, read_only=True) as store:
        (recorded,) = store.failures()
    assert recorded.key == failure.run.key and recorded.command == failure.command
    assert recorded.command == (
        f"iotbench run s3-robustness --set workload.items=5 --filter variant=mqtt-qos0 "
        f"--filter condition=base --rep 0 --jobs 1 --out {tmp_path}"
    )
