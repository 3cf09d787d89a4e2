"""bench/gateway_costs.py measures what it reports, at tiny sizes (no timings asserted).

The aiocoap programs always run (aiocoap is a test dependency); mosquitto is an
interop peer: its tests skip when it is missing, and fail instead under
IOTBENCH_REQUIRE_PEERS=1.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "bench" / "gateway_costs.py"


def load():
    spec = importlib.util.spec_from_file_location("gateway_costs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = load()


def tiny(name: str, operation: str, start):
    """Two busy runs of 50 messages and two paced runs of 0.1 s, at most 200/s."""
    result = bench.measure(
        name,
        operation,
        start,
        repeat=2,
        seconds=0.1,
        max_rate=200,
        saturation_messages=50,
        idle_seconds=0.05,
    )
    assert len(result.busy_s) == len(result.paced_s) == len(result.saturation) == 2
    assert all(cost > 0 for cost in result.busy_s + result.paced_s)
    assert all(rate > 0 for rate in result.saturation)
    assert 0 < result.rate <= 200
    return result


@pytest.mark.interop
@pytest.mark.parametrize("confirmable", [True, False], ids=["CON", "NON"])
def test_aiocoap_server_cpu_per_put(confirmable):
    tiny("PUT", "coap_message", lambda: bench.CoapServer(confirmable))


@pytest.mark.interop
def test_aiocoap_observe_client_cpu_per_notification():
    tiny("notification", "coap_message", lambda: bench.ObserveClient())


@pytest.mark.interop
@pytest.mark.parametrize("qos", [0, 1])
def test_mosquitto_cpu_per_publish(qos, require_peer):
    if bench.find_mosquitto() is None:
        require_peer("mosquitto")  # skips, or fails under IOTBENCH_REQUIRE_PEERS=1
    tiny("PUBLISH", "mqttsn_message", lambda: bench.Mosquitto(qos))


def test_the_a8_figures_are_the_medians_times_the_coremark_ratio():
    a8_coremark = bench.A8_COREMARK_PER_MHZ * bench.A8_MHZ
    assert bench.a8_ratio(a8_coremark) == pytest.approx(1.0)
    ratio = bench.a8_ratio(2 * a8_coremark)
    assert ratio == pytest.approx(2.0)
    result = bench.Result(
        "aiocoap server, PUT CON",
        "coap_message",
        rate=100.0,
        paced_s=[3e-6, 1e-6, 2e-6],
        busy_s=[1e-6, 1e-6, 4e-6],
        saturation=[1000.0, 1000.0, 1000.0],
    )
    assert bench.a8_us(result, ratio) == pytest.approx((2.0, 4.0))
    assert bench.row(result, ratio).split() == [
        "aiocoap", "server,", "PUT", "CON", "1,000",
        "1.0", "(1.0", "to", "4.0)", "2",
        "100", "2.0", "(1.0", "to", "3.0)", "4",
    ]  # fmt: skip


def test_the_share_still_busy_is_the_chance_the_wait_is_shorter():
    # The study's wait is uniform over 25 to 75 ms.
    assert bench.share_still_busy([0.010, 0.025]) == 0.0
    assert bench.share_still_busy([0.050]) == pytest.approx(0.5)
    assert bench.share_still_busy([0.075, 0.200]) == 1.0
    assert bench.share_still_busy([0.010, 0.050, 0.100]) == pytest.approx(0.5)


def test_a_row_of_answer_times_scales_them_to_the_a8():
    times = [0.001] * 9 + [0.004]  # seconds here
    line = bench.answers_row("aiocoap server, PUT NON", times, 10.0).split()
    # PUTs; p50, p90, p99, p99.9, max here in us; the same on the A8 in ms; busy share
    # (nearest rank: p90 of ten values is the tenth; 40 ms outlasts 30 % of the waits)
    assert line[4:] == ["10", "1,000"] + ["4,000"] * 4 + ["10.0"] + ["40.0"] * 4 + ["3.00%"]


def test_quantiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert bench.quantile(values, 0.5) == 51.0
    assert bench.quantile(values, 0.99) == 100.0
    assert bench.quantile(values, 0.999) == 100.0


@pytest.mark.interop
def test_each_put_is_timed_at_the_study_pace(monkeypatch):
    monkeypatch.setattr(bench, "STUDY_WAIT_S", (0.001, 0.002))  # a tiny run
    peer = bench.CoapServer(True)
    try:
        times = bench.answer_times(peer, 20, seed=1)
    finally:
        peer.close()
    assert len(times) == 20 and all(t > 0 for t in times)
    assert peer.handled >= 20
    line = bench.answers_row("aiocoap server, PUT CON", times, 14.0).split()
    assert line[:5] == ["aiocoap", "server,", "PUT", "CON", "20"]
    assert line[-1].endswith("%")
