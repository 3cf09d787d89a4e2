"""MQTT-SN in a run (S3's set-up): the sensor's MQTT-SN client talks over UDP
to a transparent gateway co-located with the MQTT broker at the sink, where a
subscriber (subscribed before the first item) receives."""

from __future__ import annotations

from typing import Literal, TypedDict

from iotbench.apps.mqtt import BrokerApp, LocalClient
from iotbench.apps.mqttsn import GatewayDriver, PerItemSnPublisher
from iotbench.apps.requesters import ItemClient
from iotbench.apps.sensors import make_resource
from iotbench.net.ip import address_text
from iotbench.net.node import Node
from iotbench.net.tcp import TcpStack
from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.params import MqttBrokerParams, MqttClientParams
from iotbench.proto.mqttsn.client import MqttSnClient
from iotbench.proto.mqttsn.gateway import MqttSnGateway
from iotbench.proto.mqttsn.params import MqttSnClientParams, MqttSnGatewayParams
from iotbench.scenarios.settings import required
from iotbench.scenarios.settings_types import ProtocolMqttsnSettings, RunSettings
from iotbench.sim import Simulator
from iotbench.world.networks import Network

BROKER_PORT = 1883  # the broker also takes MQTT over TCP on the sink


class Retry(TypedDict):
    """Tretry and Nretry (spec 6.13), as the client's and the gateway's parameters
    name them."""

    retry_interval_s: float
    max_retries: int


def retry_settings(cfg: ProtocolMqttsnSettings) -> Retry:
    """Tretry and Nretry (spec 6.13) from protocol.mqttsn."""
    return {"retry_interval_s": cfg.retry_interval_s, "max_retries": cfg.max_retries}


def give_up(cfg: ProtocolMqttsnSettings) -> Literal["disconnect", "request"]:
    """protocol.mqttsn.give_up, one of the values the schema allows."""
    if cfg.give_up == "request":
        return "request"
    if cfg.give_up == "disconnect":
        return "disconnect"
    raise ValueError(f"protocol.mqttsn.give_up: {cfg.give_up!r} is not disconnect or request")


def sink_broker(sim: Simulator, sink: Node, cfg: ProtocolMqttsnSettings) -> BrokerApp:
    """The MQTT broker on the sink (MQTT over TCP on BROKER_PORT) and the transparent
    MQTT-SN gateway beside it on protocol.mqttsn.port."""
    broker = BrokerApp(
        sim,
        TcpStack(sim, sink),
        BROKER_PORT,
        MqttBroker(sim.rng("mqtt/broker"), MqttBrokerParams()),
    )
    gateway = MqttSnGateway(sim.rng("mqttsn/gateway"), MqttSnGatewayParams(**retry_settings(cfg)))
    GatewayDriver(sim, sink, gateway, cfg.port, broker)
    return broker


def build_mqttsn(sim: Simulator, net: Network, config: RunSettings) -> ItemClient:
    cfg = required(config.protocol.mqttsn, "protocol.mqttsn")
    workload = config.workload
    sink, sensor_node = net.ip_node("client"), net.ip_node("producer")
    retry = retry_settings(cfg)
    broker = sink_broker(sim, sink, cfg)
    if not cfg.retransmit:
        # S3's studied client: one transmission each; a reply that does not come
        # within its wait timer (the keep-alive) abandons the session.
        wait = cfg.keep_alive_s or cfg.retry_interval_s
        client_retry: Retry = {"retry_interval_s": float(wait), "max_retries": 0}
    else:
        client_retry = retry
    client = MqttSnClient(
        sim.rng("mqttsn/client"),
        MqttSnClientParams(client_id=cfg.client_id, keep_alive_s=cfg.keep_alive_s, **client_retry),
    )
    sensor = make_resource(workload.resource, sim.rng("sensor"), workload.object_size_bytes)
    publisher = PerItemSnPublisher(
        sim,
        sensor_node,
        client,
        (address_text(net.address(sink)), cfg.port),
        cfg.topic,
        cfg.qos,
        sensor,
    )
    subscriber = MqttClient(
        sim.rng("mqtt/subscriber"), MqttClientParams(client_id="sink", keep_alive_s=0)
    )
    subscriber.subscribe(sim.now, [(cfg.topic, max(cfg.qos, 0))])
    LocalClient(sim, broker, subscriber, publisher.deliveries.on_event, name="subscriber")
    return publisher
