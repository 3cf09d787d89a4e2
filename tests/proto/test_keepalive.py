"""The keep-alive rule MQTT and MQTT-SN share (proto/keepalive.py)."""

from iotbench.proto.keepalive import given_up_s, ping_due_s


def test_a_client_pings_after_its_period_of_silence():
    assert ping_due_s(10.0, 60.0) == 70.0
    assert ping_due_s(10.0, 0) is None  # keep-alive off


def test_a_server_gives_up_after_a_multiple_of_the_period():
    assert given_up_s(10.0, 60.0, 1.5) == 100.0  # MQTT 3.1.2.10
    assert given_up_s(10.0, 0, 1.5) is None
