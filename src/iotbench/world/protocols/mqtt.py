"""MQTT in a run (S3's publish-subscribe set-up).

The broker and a subscriber sit at the sink (the `client` node; the
subscriber on the broker's host, subscribed before the first item), and the
sensor (the `server` node, next to the impaired link) publishes each item on
a connection of its own.
"""

from __future__ import annotations

from iotbench.apps.mqtt import BrokerApp, LocalClient, PerItemPublisher
from iotbench.apps.requesters import ItemClient
from iotbench.apps.sensors import make_resource
from iotbench.net.tcp import TcpStack
from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.params import MqttBrokerParams, MqttClientParams
from iotbench.scenarios.settings import RunSettings, required
from iotbench.sim import Simulator
from iotbench.world.networks import Network
from iotbench.world.protocols.tcp import tcp_params


def build_mqtt(sim: Simulator, net: Network, config: RunSettings) -> ItemClient:
    cfg = required(config.protocol.mqtt, "protocol.mqtt")
    workload = config.workload
    params = tcp_params(required(config.protocol.tcp, "protocol.tcp"))
    sink = net.ip_node("client")
    sink_stack = TcpStack(sim, sink, params)
    sensor_stack = TcpStack(sim, net.ip_node("producer"), params)
    broker = BrokerApp(
        sim, sink_stack, cfg.port, MqttBroker(sim.rng("mqtt/broker"), MqttBrokerParams())
    )
    sensor = make_resource(workload.resource, sim.rng("sensor"), workload.object_size_bytes)
    publisher = PerItemPublisher(
        sim,
        sensor_stack,
        net.address(sink),
        cfg.port,
        cfg.topic,
        cfg.qos,
        sensor,
        MqttClientParams(
            client_id=cfg.client_id,
            keep_alive_s=cfg.keep_alive_s,
            retry_interval_s=cfg.retry_interval_s,
        ),
        sim.rng("mqtt/publisher"),
    )
    subscriber = MqttClient(
        sim.rng("mqtt/subscriber"), MqttClientParams(client_id="sink", keep_alive_s=0)
    )
    subscriber.subscribe(sim.now, [(cfg.topic, cfg.qos)])
    LocalClient(sim, broker, subscriber, publisher.deliveries.on_event, name="subscriber")
    return publisher
