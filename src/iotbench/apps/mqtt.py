"""MQTT in the simulator: a broker behind a TCP port, a publisher that opens a
connection per item, and a subscriber on the broker's own host.

The stacks are the sans-I/O MqttBroker and MqttClient of proto/mqtt; this
module moves their bytes over simulated TCP sockets (or, for the local
subscriber, straight to the broker: the two share a host, so nothing crosses
a link), runs their timers, and turns their events into workload items.

S3's publish-subscribe item: the sensor connects (TCP, CONNECT/CONNACK),
publishes, and disconnects (DISCONNECT, then the TCP close). The item is
handed over when the message has left the publisher for good (QoS 0: written
to the connection; QoS 1/2: acknowledged) and the next one starts; it is
delivered when the subscriber receives it. A message carries its item number
before the reading (`"17 49.5 V"`), as a sensor numbers its readings, so the
subscriber can tell which item arrived.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from typing import Protocol

from iotbench.apps.requesters import Done, HandedOver
from iotbench.metrics.items import Item
from iotbench.net.tcp import Closed, Connected, DataReceived, PeerClosed, TcpSocket, TcpStack
from iotbench.proto.mqtt import events as ev
from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.codec import header_length, split_packets
from iotbench.proto.mqtt.params import MqttClientParams
from iotbench.proto.sansio import drain_with
from iotbench.sim import Simulator
from iotbench.sim.deadline import DeadlineTimer


def header_bytes(data: bytes) -> int:
    """Fixed and variable header bytes of a run of whole MQTT packets."""
    return sum(header_length(packet) for packet in split_packets(data))


class Transport(Protocol):
    """The broker's side of a connection: a TcpSocket or a LocalLink."""

    def send(self, data: bytes, header_len: int) -> None: ...

    def close(self) -> None: ...


class BrokerApp:
    """An MqttBroker serving TCP connections on `port` (and local clients)."""

    def __init__(self, sim: Simulator, stack: TcpStack, port: int, broker: MqttBroker) -> None:
        self.sim = sim
        self.broker = broker
        self._transports: dict[Hashable, Transport] = {}
        self._timer = DeadlineTimer(sim, self._on_timer)
        stack.listen(port, self._accept)

    def _accept(self, sock: TcpSocket) -> None:
        conn = sock.key
        self._transports[conn] = sock
        sock.on_event = lambda event: self._on_tcp(conn, sock, event)
        self.broker.connection_made(self.sim.now, conn)
        self.pump()

    def attach(self, conn: Hashable, transport: Transport) -> None:
        """A connection that does not cross the network (see LocalLink)."""
        self._transports[conn] = transport
        self.broker.connection_made(self.sim.now, conn)
        self.pump()

    def _on_tcp(self, conn: Hashable, sock: TcpSocket, event: object) -> None:
        now = self.sim.now
        if isinstance(event, DataReceived):
            self.broker.receive_data(now, conn, event.data)
        elif isinstance(event, PeerClosed):
            sock.close()
        elif isinstance(event, Closed):
            if self._transports.pop(conn, None) is not None:
                self.broker.connection_lost(now, conn)
        self.pump()

    def receive_local(self, conn: Hashable, data: bytes) -> None:
        if conn in self._transports:
            self.broker.receive_data(self.sim.now, conn, data)
            self.pump()

    def detach(self, conn: Hashable) -> None:
        """A local connection ended from its far side."""
        if self._transports.pop(conn, None) is not None:
            self.broker.connection_lost(self.sim.now, conn)
            self.pump()

    def pump(self) -> None:
        self._timer.set(drain_with(self.broker, self._flush, lambda event: None))

    def _flush(self) -> None:
        transports = self._transports
        for conn, data in self.broker.data_to_send():
            transport = transports.get(conn)
            if transport is not None:
                transport.send(data, header_bytes(data))
        for conn in self.broker.connections_to_close():
            transport = transports.pop(conn, None)
            if transport is not None:
                transport.close()

    def _on_timer(self) -> None:
        self.broker.handle_timer(self.sim.now)
        self.pump()


class ClientDriver:
    """Runs one MqttClient over whatever carries its bytes (a TCP socket or a local link)."""

    def __init__(
        self,
        sim: Simulator,
        client: MqttClient,
        write: Callable[[bytes, int], None],
        close: Callable[[], None],
        on_event: Callable[[object], None],
    ) -> None:
        self.sim = sim
        self.client = client
        self._write = write
        self._close = close
        self.on_event = on_event
        self._closed = False
        self._timer = DeadlineTimer(sim, self._on_timer)

    def receive(self, data: bytes) -> None:
        self.client.receive_data(self.sim.now, data)
        self.pump()

    def lost(self) -> None:
        if not self._closed:
            self._closed = True
            self.client.connection_lost(self.sim.now)
            self.pump()

    def pump(self) -> None:
        self._timer.set(drain_with(self.client, self._flush, self.on_event))

    def _flush(self) -> None:
        data = self.client.data_to_send()
        if data:
            self._write(data, header_bytes(data))
        if self.client.close_requested and not self._closed:
            self._closed = True
            self._close()

    def _on_timer(self) -> None:
        self.client.handle_timer(self.sim.now)
        self.pump()


class LocalLink:
    """A connection to the broker from its own host: no packets, no link.

    Each direction is delivered with call_soon (at the same instant, after the
    current event), as a loopback connection would. The broker side sees a
    transport (`send`, `close`); the other side writes with `write` and ends
    the connection with `hang_up`, and hears `on_data` and `on_close`.
    """

    def __init__(
        self,
        sim: Simulator,
        app: BrokerApp,
        name: Hashable,
        on_data: Callable[[bytes], None],
        on_close: Callable[[], None],
    ) -> None:
        self.sim = sim
        self.app = app
        self.conn = ("local", name)
        self.on_data = on_data
        self.on_close = on_close
        app.attach(self.conn, self)

    # the broker's side
    def send(self, data: bytes, header_len: int) -> None:
        self.sim.call_soon(self.on_data, data)

    def close(self) -> None:
        self.sim.call_soon(self.on_close)

    # the other side
    def write(self, data: bytes) -> None:
        self.sim.call_soon(self.app.receive_local, self.conn, data)

    def hang_up(self) -> None:
        self.sim.call_soon(self.app.detach, self.conn)


class LocalClient:
    """An MqttClient on the broker's host, over a LocalLink."""

    def __init__(
        self, sim: Simulator, app: BrokerApp, client: MqttClient, on_event, name: str = "local"
    ) -> None:
        self.driver = ClientDriver(
            sim, client, lambda data, header_len: self.link.write(data), self._hang_up, on_event
        )
        self.link = LocalLink(sim, app, name, self.driver.receive, self.driver.lost)
        client.connect(sim.now)
        self.driver.pump()

    def _hang_up(self) -> None:
        self.link.hang_up()


class PerItemPublisher:
    """Publishes each item on a connection of its own: connect, CONNECT, PUBLISH,
    (PUBACK), DISCONNECT, close (an ItemClient)."""

    hands_over = True

    def __init__(
        self,
        sim: Simulator,
        stack: TcpStack,
        broker: bytes,
        port: int,
        topic: str,
        qos: int,
        sensor,
        params: MqttClientParams,
        rng: random.Random,
    ) -> None:
        self.sim = sim
        self.stack = stack
        self.broker = broker
        self.port = port
        self.topic = topic
        self.qos = qos
        self.sensor = sensor
        self.params = params
        self.rng = rng
        self.deliveries = Deliveries()

    def start(self, item: Item, done: Done, handed_over: HandedOver) -> None:
        self.deliveries.expect(item, done)
        _Publication(self, item, done, handed_over)


class Deliveries:
    """Items whose message the subscriber may still receive.

    `on_event` is the subscriber's event handler: a received message (a
    reading after its item number, "17 49.5 V") delivers its item.
    """

    def __init__(self) -> None:
        self.pending: dict[int, tuple[Item, Done]] = {}

    def expect(self, item: Item, done: Done) -> None:
        self.pending[item.index] = (item, done)

    def on_event(self, event: object) -> None:
        if isinstance(event, ev.MessageReceived):
            number, _, reading = event.payload.partition(b" ")
            entry = self.pending.pop(int(number), None) if number.isdigit() else None
            if entry is not None:
                item, done = entry
                done(item, True, len(reading))


class _Publication:
    """One item's connection."""

    def __init__(
        self, pub: PerItemPublisher, item: Item, done: Done, handed_over: HandedOver
    ) -> None:
        self.pub = pub
        self.item = item
        self.done = done
        self.handed_over = handed_over
        self.over = False
        self.client = MqttClient(pub.rng, pub.params)
        self.sock = pub.stack.connect(pub.broker, pub.port, self._on_tcp)
        self.driver = ClientDriver(
            pub.sim, self.client, self.sock.send, self.sock.close, self._on_mqtt
        )

    def _on_tcp(self, event: object) -> None:
        if isinstance(event, Connected):
            self.client.connect(self.pub.sim.now)
            self.driver.pump()
        elif isinstance(event, DataReceived):
            self.driver.receive(event.data)
        elif isinstance(event, PeerClosed):
            self.sock.close()
            self.driver.lost()
        elif isinstance(event, Closed):
            if event.reason != "closed":
                self._give_up()
            self.driver.lost()

    def _on_mqtt(self, event: object) -> None:
        now = self.pub.sim.now
        if isinstance(event, ev.Connected):
            payload = f"{self.item.index} ".encode() + self.pub.sensor.read()
            self.client.publish(now, self.pub.topic, payload, self.pub.qos)
        elif isinstance(event, ev.Published):
            self.client.disconnect(now)
            self._hand_over()
        elif isinstance(event, (ev.ConnectionRefused, ev.ProtocolError, ev.PublishFailed)):
            self._give_up()
        elif isinstance(event, ev.ConnectionClosed) and not self.over:
            self._give_up()

    def _hand_over(self) -> None:
        if not self.over:
            self.over = True
            self.handed_over(self.item)

    def _give_up(self) -> None:
        # A message handed over on a connection that then failed may not have
        # reached the broker; if it did, the subscriber's delivery came first
        # and this changes nothing (an item's first outcome counts).
        self.done(self.item, False, 0)
        self._hand_over()
        if self.sock.state != "CLOSED":
            self.sock.abort()
