"""bench/coap_server.py loads the three servers and reports what it measured, at a tiny
size (no timings asserted): a generator's closed loop, the malicious datagram's answers.

libcoap's coap-server-notls is an interop peer: the test skips when it is missing,
and fails instead under IOTBENCH_REQUIRE_PEERS=1. aiocoap is a test dependency.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "bench" / "coap_server.py"


def load():
    spec = importlib.util.spec_from_file_location("coap_server", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = load()


@pytest.mark.interop
def test_three_servers_measured_in_rounds_with_ratios_and_the_malicious_datagram(
    capsys, monkeypatch, require_peer
):
    require_peer("coap-server-notls")
    monkeypatch.setattr(bench, "WARMUP_REQUESTS", 50)
    argv = ["--rounds", "2", "--seconds", "0.2", "--window", "4", "--malicious", "3", "--json"]
    assert bench.main(argv) == 0
    result = json.loads(capsys.readouterr().out)

    assert result["config"] | {"cpus": None} == {
        "rounds": 2,
        "window": 4,
        "seconds": 0.2,
        "requests": None,
        "malicious_datagrams": 3,
        "malicious_bytes": 65_408,
        "malicious_options": 32_700,
        "cpus": None,
    }
    assert set(result["versions"]) == {"python", "aiocoap", "libcoap"}
    assert list(result["throughput"]) == ["iotbench", "aiocoap", "libcoap"]
    for name, t in result["throughput"].items():
        assert len(t["rates"]) == len(t["server_cpu_us"]) == len(t["generator_cpu"]) == 2
        assert all(rate > 0 for rate in t["rates"]), name
        assert t["median"] > 0 and t["errors"] == 0, name
    assert set(result["ratios"]) == {"iotbench/aiocoap", "iotbench/libcoap"}

    attacked = result["malicious"]
    assert list(attacked) == ["iotbench", "aiocoap", "libcoap", "iotbench, no bound"]
    # The bound: RST after 64 options; without it, the 32,700-segment path is not found.
    assert attacked["iotbench"]["answer"] == "RST"
    assert attacked["iotbench, no bound"]["answer"] == "4.04"
    for name, m in attacked.items():
        assert m["answer"], name
        assert isinstance(m["cpu_s_per_datagram"], float), name

    bench.report(result)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("closed loop: 4 CON GETs in flight, runs of 0.2 s, 2 rounds")
    assert [line.split()[0] for line in lines[4:7]] == ["iotbench", "aiocoap", "libcoap"]
    assert [line.split(":")[0] for line in lines[7:9]] == ["iotbench/aiocoap", "iotbench/libcoap"]
    assert lines[-1].startswith("iotbench, no bound") and "4.04" in lines[-1]


def test_the_malicious_datagram_is_the_issue_s_and_requests_are_well_formed():
    from iotbench.proto.coap.codec import Code, Opt, Type, decode

    msg = decode(bench.malicious_datagram(0x0102))
    assert len(bench.malicious_datagram(0)) == 65_408
    assert (msg.type, msg.code, msg.message_id, len(msg.options)) == (
        Type.CON,
        Code.GET,
        0x0102,
        32_700,
    )
    assert {number for number, _ in msg.options} == {Opt.URI_PATH}
    probe = decode(bench.get(7, "/a/bc"))
    assert (probe.type, probe.code, probe.message_id, probe.uri_path) == (
        Type.CON,
        Code.GET,
        7,
        "/a/bc",
    )
