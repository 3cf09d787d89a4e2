"""MQTT-SN in the simulator: the transparent gateway beside the broker, and a
sensor that publishes each item in a session of its own.

S3's set-up: the sensor talks MQTT-SN over UDP (across the impaired link) to
a gateway co-located with the MQTT broker; the gateway's MQTT connections to
the broker stay on that host (LocalLink), as a clean link would. Each item is
a session: CONNECT, REGISTER, PUBLISH, (PUBACK), DISCONNECT. It is handed
over when the message has left the sensor for good (QoS 0: sent; QoS 1:
PUBACK) and delivered when the subscriber receives it; the next session
starts once this one has ended (the gateway answered DISCONNECT, or the
client gave it up).
"""

from __future__ import annotations

import functools

from iotbench.apps.driver import DatagramDriver
from iotbench.apps.mqtt import BrokerApp, Deliveries, LocalLink
from iotbench.apps.requesters import Done, HandedOver
from iotbench.metrics.items import Item
from iotbench.net.node import Node
from iotbench.proto.mqttsn import events as ev
from iotbench.proto.mqttsn.client import MqttSnClient
from iotbench.proto.mqttsn.codec import header_length
from iotbench.proto.mqttsn.gateway import MqttSnGateway
from iotbench.sim import Simulator


class GatewayDriver(DatagramDriver):
    """An MqttSnGateway on a node's UDP port, its broker connections on LocalLinks."""

    def __init__(
        self, sim: Simulator, node: Node, gateway: MqttSnGateway, port: int, broker: BrokerApp
    ) -> None:
        super().__init__(
            sim, node, gateway, lambda event: None, header_length, port, "mqttsn_message"
        )
        self.broker = broker
        self._links: dict[int, LocalLink] = {}

    def _flush(self) -> None:
        super()._flush()  # datagrams to the clients
        gw, sim = self.stack, self.sim
        for stream in gw.streams_to_open():
            self._links[stream] = LocalLink(
                sim,
                self.broker,
                ("mqttsn-gateway", stream),
                functools.partial(self._from_broker, stream),
                functools.partial(self._lost, stream),
            )
            sim.call_soon(self._connected, stream)
        for stream, data in gw.stream_data_to_send():
            link = self._links.get(stream)
            if link is not None:
                link.write(data)
        for stream in gw.streams_to_close():
            link = self._links.pop(stream, None)
            if link is not None:
                link.hang_up()

    def _connected(self, stream: int) -> None:
        if stream in self._links:
            self.stack.stream_connected(self.sim.now, stream)
            self.pump()

    def _from_broker(self, stream: int, data: bytes) -> None:
        if stream in self._links:
            self.stack.stream_receive(self.sim.now, stream, data)
            self.pump()

    def _lost(self, stream: int) -> None:
        if self._links.pop(stream, None) is not None:
            self.stack.stream_lost(self.sim.now, stream)
            self.pump()


class PerItemSnPublisher:
    """Publishes each item in an MQTT-SN session of its own (an ItemClient)."""

    hands_over = True

    def __init__(
        self,
        sim: Simulator,
        node: Node,
        client: MqttSnClient,
        gateway: tuple[str, int],
        topic: str,
        qos: int,
        sensor,
    ) -> None:
        self.sim = sim
        self.client = client
        self.gateway = gateway
        self.topic = topic
        self.qos = qos
        self.sensor = sensor
        self.driver = DatagramDriver(sim, node, client, self._on_event, header_length)
        self.deliveries = Deliveries()
        self._current: tuple[Item, Done, HandedOver] | None = None
        self._waiting: tuple[Item, Done, HandedOver] | None = None
        self._handed = False

    def start(self, item: Item, done: Done, handed_over: HandedOver) -> None:
        self.deliveries.expect(item, done)
        if self._current is not None:
            self._waiting = (item, done, handed_over)  # after the last session ends
            return
        self._begin(item, done, handed_over)

    def _begin(self, item: Item, done: Done, handed_over: HandedOver) -> None:
        self._current = (item, done, handed_over)
        self._handed = False
        self.client.connect(self.sim.now, self.gateway)
        self.driver.pump()

    def _on_event(self, event: object) -> None:
        if self._current is None:
            return
        item, done, handed_over = self._current
        now = self.sim.now
        if isinstance(event, ev.Connected):
            self.client.register(now, self.topic)
        elif isinstance(event, ev.Registered):
            payload = f"{item.index} ".encode() + self.sensor.read()
            self.client.publish(now, event.topic_id, payload, qos=self.qos)
        elif isinstance(event, ev.Published):
            self.client.disconnect(now)
            self._hand_over()
        elif isinstance(event, (ev.RequestFailed, ev.ConnectionRefused)):
            done(item, False, 0)
            self._hand_over()
            if self.client.connected:
                self.client.disconnect(now)
        elif isinstance(event, ev.Disconnected):
            if not self._handed:  # the session ended before the message left
                done(item, False, 0)
                self._hand_over()
            self._current = None
            if self._waiting is not None:
                waiting, self._waiting = self._waiting, None
                self.sim.call_soon(self._begin, *waiting)

    def _hand_over(self) -> None:
        if not self._handed and self._current is not None:
            self._handed = True
            item, _, handed_over = self._current
            handed_over(item)
