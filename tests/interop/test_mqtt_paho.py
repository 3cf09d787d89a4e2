"""paho-mqtt (an MQTT client we did not write) publishes and subscribes through
`iotbench serve mqtt`, started as a user would start it."""

from __future__ import annotations

import pytest
from paho_client import Paho

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_paho_publish_and_subscribe(iotbench_mqtt_server, qos):
    sub = Paho(iotbench_mqtt_server, "paho-sub")
    pub = Paho(iotbench_mqtt_server, "paho-pub")
    try:
        assert sub.subscribe("sensors/#", 2) == [2]
        for i in range(3):
            pub.publish(f"sensors/t{i}", b"21.%d" % i, qos)
        got = sub.receive(3)
        assert [(m.topic, m.payload, m.qos, m.retain) for m in got] == [
            (f"sensors/t{i}", b"21.%d" % i, qos, False) for i in range(3)
        ]
    finally:
        pub.close()
        sub.close()


def test_paho_qos_downgrade_and_wildcards(iotbench_mqtt_server):
    sub = Paho(iotbench_mqtt_server, "paho-sub")
    pub = Paho(iotbench_mqtt_server, "paho-pub")
    try:
        assert sub.subscribe("a/+/c", 1) == [1]
        pub.publish("a/b/c", b"m", 2)
        pub.publish("a/b/d", b"no", 2)
        (msg,) = sub.receive()
        assert (msg.topic, msg.qos) == ("a/b/c", 1)
        assert sub.nothing_more()
    finally:
        pub.close()
        sub.close()


def test_paho_retained_message(iotbench_mqtt_server):
    pub = Paho(iotbench_mqtt_server, "paho-pub")
    try:
        pub.publish("state/lamp", b"on", 1, retain=True)
        late = Paho(iotbench_mqtt_server, "paho-late")
        try:
            late.subscribe("state/#", 1)
            (msg,) = late.receive()
            assert (msg.topic, msg.payload, msg.retain, msg.qos) == ("state/lamp", b"on", True, 1)
            pub.publish("state/lamp", b"", 0, retain=True)  # deletes it; live copy has retain 0
            (msg,) = late.receive()
            assert (msg.payload, msg.retain) == (b"", False)
        finally:
            late.close()
        later = Paho(iotbench_mqtt_server, "paho-later")
        try:
            later.subscribe("state/#", 1)
            assert later.nothing_more()
        finally:
            later.close()
    finally:
        pub.close()


def test_paho_will_on_abnormal_disconnect(iotbench_mqtt_server):
    watcher = Paho(iotbench_mqtt_server, "watcher")
    try:
        watcher.subscribe("status/#", 1)
        polite = Paho(iotbench_mqtt_server, "polite", will=("status/polite", b"gone", 1, False))
        polite.close()  # DISCONNECT: the will is discarded
        assert watcher.nothing_more()
        dev = Paho(iotbench_mqtt_server, "dev", will=("status/dev", b"offline", 1, False))
        dev.drop()
        (msg,) = watcher.receive()
        assert (msg.topic, msg.payload, msg.qos) == ("status/dev", b"offline", 1)
    finally:
        watcher.close()


def test_paho_persistent_session_gets_queued_messages(iotbench_mqtt_server):
    sub = Paho(iotbench_mqtt_server, "keeper", clean_session=False)
    assert sub.session_present is False
    sub.subscribe("q/#", 1)
    sub.close()
    pub = Paho(iotbench_mqtt_server, "paho-pub")
    try:
        for i in range(3):
            pub.publish("q/x", b"%d" % i, 1)
    finally:
        pub.close()
    sub = Paho(iotbench_mqtt_server, "keeper", clean_session=False)
    try:
        assert sub.session_present is True
        assert [m.payload for m in sub.receive(3)] == [b"0", b"1", b"2"]
    finally:
        sub.close()


def test_paho_with_an_empty_client_id(iotbench_mqtt_server):
    anon = Paho(iotbench_mqtt_server, "")  # the broker assigns one (3.1.3.1)
    try:
        anon.subscribe("x", 0)
        anon.publish("x", b"me", 0)
        assert anon.receive()[0].payload == b"me"
    finally:
        anon.close()
