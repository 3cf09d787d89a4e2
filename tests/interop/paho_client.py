"""A paho-mqtt client (an implementation we did not write) for the interop tests."""

from __future__ import annotations

import queue
import threading

import paho.mqtt.client as paho

WAIT_S = 20


class Paho:
    """A paho client in its own network thread, with what it received in a queue."""

    def __init__(
        self,
        port: int,
        client_id: str = "",
        clean_session: bool = True,
        will=None,
        username: str | None = None,
        password: str | None = None,
    ):
        self.client = paho.Client(
            paho.CallbackAPIVersion.VERSION2,
            client_id=client_id,
            protocol=paho.MQTTv311,
            clean_session=clean_session,
        )
        self.messages: queue.Queue = queue.Queue()
        self.connected = threading.Event()
        self.subscribed = threading.Event()
        self.session_present: bool | None = None
        self.granted: list[int] = []
        self.client.on_connect = self._on_connect
        self.client.on_message = lambda client, userdata, msg: self.messages.put(msg)
        self.client.on_subscribe = self._on_subscribe
        if will is not None:
            self.client.will_set(*will)
        if username is not None:
            self.client.username_pw_set(username, password)
        self.client.connect("127.0.0.1", port, keepalive=30)
        self.client.loop_start()
        assert self.connected.wait(WAIT_S), "no CONNACK"

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        assert not reason_code.is_failure, reason_code
        self.session_present = flags.session_present
        self.connected.set()

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        self.granted = [rc.value for rc in reason_codes]
        self.subscribed.set()

    def subscribe(self, topic: str, qos: int) -> list[int]:
        self.subscribed.clear()
        self.client.subscribe(topic, qos)
        assert self.subscribed.wait(WAIT_S), "no SUBACK"
        return self.granted

    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> None:
        info = self.client.publish(topic, payload, qos, retain)
        info.wait_for_publish(WAIT_S)
        assert info.is_published()

    def receive(self, n: int = 1) -> list:
        return [self.messages.get(timeout=WAIT_S) for _ in range(n)]

    def nothing_more(self, wait_s: float = 0.3) -> bool:
        try:
            self.messages.get(timeout=wait_s)
        except queue.Empty:
            return True
        return False

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    def drop(self) -> None:
        """End the connection abnormally: no DISCONNECT, just the socket closing."""
        self.client.loop_stop()
        self.client.socket().close()


#: paho reports a 3.1.1 CONNACK's return code as the MQTT 5 reason code of the same
#: meaning (paho.mqtt.reasoncodes); these are 3.1.1's codes again (3.2.2.3).
CONNACK_RETURN_CODES = {0: 0, 132: 1, 133: 2, 136: 3, 134: 4, 135: 5}


def connack_code(
    port: int, client_id: str, username: str | None = None, password: str | None = None
) -> int:
    """The return code of the CONNACK that a CONNECT with these credentials gets."""
    codes: queue.Queue = queue.Queue()
    client = paho.Client(
        paho.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=paho.MQTTv311
    )
    client.on_connect = lambda client, userdata, flags, reason_code, props: codes.put(
        reason_code.value
    )
    if username is not None:
        client.username_pw_set(username, password)
    client.connect("127.0.0.1", port, keepalive=30)
    client.loop_start()
    try:
        return CONNACK_RETURN_CODES[codes.get(timeout=WAIT_S)]
    finally:
        client.disconnect()
        client.loop_stop()
