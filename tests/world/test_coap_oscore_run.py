"""CoAP with OSCORE in a simulated run (protocol.coap.security.mode = "oscore"):
the same exchanges as plain CoAP, each message a little longer, every item
delivered through loss (a retransmission is the same protected message)."""

from __future__ import annotations

from iotbench.scenarios import expand, load_scenario
from iotbench.world import run_one


def _s3(condition: str, oscore: bool) -> dict:
    overrides = {"workload.items": 30}
    if oscore:
        overrides["protocol.coap.security.mode"] = "oscore"
    (run,) = expand(
        load_scenario("s3-robustness"),
        {"variant": ["coap-con"], "condition": [condition]},
        overrides,
    )
    assert (run.config["protocol"]["coap"].get("security") is not None) == oscore
    return run_one(run.config, run.seed).metrics


def test_oscore_costs_bytes_not_packets():
    plain, oscore = _s3("base", False), _s3("base", True)
    assert oscore["items_delivered"] == plain["items_delivered"] == 30
    assert oscore["packets_total"] == plain["packets_total"] == 60  # no handshake
    # Per message: the OSCORE option, the 8-byte tag and the inner code, less what
    # moved inside; never more than a few tens of bytes.
    extra = (oscore["bytes_total"] - plain["bytes_total"]) / 60
    assert 8 < extra < 30


def test_oscore_delivers_through_loss():
    m = _s3("loss-10", True)
    assert m["items_delivered"] == 30 and m["packets_total"] > 60
