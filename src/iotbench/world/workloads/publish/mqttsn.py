"""The publish workload over MQTT-SN (S4's `mqttsn-qos0`, `mqttsn-qos1`).

As S4's code runs it (5G-I3/ACM-ICN-2018, apps/mqtt_pub_cli/main.c, RIOT's
asymcute): each producer connects to the gateway 0 to 2 ms after publishing
starts (clean session, its client id the hex of its link-layer address),
registers the topic `protocol.mqttsn.topic` (S4: /i3/gasval), and from the
REGACK on publishes each reading under the topic id with
`protocol.mqttsn.qos`. A reading taken before that, or while the client
connects again, is not taken (the study's publishing timer runs only once
the topic is registered). A CONNECT or REGISTER that gets no answer after
Nretry re-sends is started again 0 to 2 ms later; a session the gateway
ends is connected again the same way.

The broker is on the `client` node (S4: rsmb on the gateway's host, here
the transparent MQTT-SN gateway beside an MQTT broker, world/protocols/mqttsn.py); a
subscriber there receives the readings. A QoS 0 reading is handed over when
it is sent; a QoS 1 one is given up when its PUBLISH is (its Nretry
re-sends unanswered).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from iotbench.apps.driver import DatagramDriver
from iotbench.apps.mqtt import LocalClient
from iotbench.net.ip import address_text
from iotbench.net.lowpan.interface import LowpanInterface
from iotbench.net.node import Node
from iotbench.proto.mqtt import events as mqtt_ev
from iotbench.proto.mqtt.client import MqttClient
from iotbench.proto.mqtt.params import MqttClientParams
from iotbench.proto.mqttsn import events as sn_ev
from iotbench.proto.mqttsn.client import MqttSnClient, QueueFull
from iotbench.proto.mqttsn.codec import header_length as sn_header_length
from iotbench.proto.mqttsn.params import MqttSnClientParams
from iotbench.proto.ndn.forwarder import Forwarder
from iotbench.scenarios.settings import required
from iotbench.scenarios.settings_types import RunSettings
from iotbench.sim import Simulator
from iotbench.sim.cpu import Cpu
from iotbench.world.networks import Network
from iotbench.world.protocols.mqttsn import give_up, retry_settings, sink_broker

if TYPE_CHECKING:
    from iotbench.world.workloads.publish.sender import Publisher

#: mqtt_pub_cli: the wait before each (re)connection and re-registration.
RECONNECT_S = (0.0, 0.002)


class MqttSnPublish:
    """One MQTT-SN session per producer; every reading a PUBLISH under the topic id."""

    drives = "push"
    schedule = "per-source"
    requests: int | None = None

    def __init__(self, work: Publisher, sim: Simulator, net: Network, config: RunSettings) -> None:
        cfg = required(config.protocol.mqttsn, "protocol.mqttsn")
        self.work = work
        self.sim = sim
        self.topic = cfg.topic
        self.qos = cfg.qos
        self.start_s = config.workload.start_s
        sink = net.ip_node("client")
        broker = sink_broker(sim, sink, cfg)
        subscriber = MqttClient(
            sim.rng("mqtt/subscriber"), MqttClientParams(client_id="gateway-app", keep_alive_s=0)
        )
        subscriber.subscribe(sim.now, [(self.topic, self.qos)])
        LocalClient(sim, broker, subscriber, self._received, name="subscriber")
        self.gateway = (address_text(net.address(sink)), cfg.port)
        self._rng = sim.rng("workload/mqttsn")
        retry = retry_settings(cfg)
        ending = give_up(cfg)
        self.producers = [
            _SnProducer(
                self,
                node,
                MqttSnClientParams(
                    client_id=link_layer_id(net, node),
                    keep_alive_s=cfg.keep_alive_s,
                    max_inflight=cfg.max_inflight,
                    give_up=ending,
                    **retry,
                ),
            )
            for node in net.ip_nodes("producer")
        ]

    def start(self) -> None:
        for producer in self.producers:
            self.sim.at(self.start_s + self._rng.uniform(*RECONNECT_S), producer.connect)

    def ready(self, producer: int) -> bool:
        return self.producers[producer].ready()

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        self.producers[producer].publish(rid, payload)

    def app_retransmissions(self) -> int:
        return sum(producer.client.stats.retransmissions for producer in self.producers)

    def forwarders(self) -> dict[str, Forwarder]:
        return {}

    def protocol_metrics(self) -> dict[str, float | int]:
        return {}

    def producer_cpus(self) -> list[Cpu | None]:
        return [producer.driver.node.cpu for producer in self.producers]

    def later(self, action: Callable[[], None]) -> None:
        """Run `action` after asymcute's short random wait."""
        self.sim.schedule(self._rng.uniform(*RECONNECT_S), action)

    def _received(self, event: object) -> None:
        if isinstance(event, mqtt_ev.MessageReceived):
            self.work.arrived(event.payload)


def link_layer_id(net: Network, node: Node) -> str:
    """The client id asymcute's users give: the node's link-layer address in hex."""
    iface = net.interface(node)
    if not isinstance(iface, LowpanInterface):
        raise TypeError(f"{node.name!r}: MQTT-SN's publish exchange runs over 6LoWPAN")
    return iface.mac.address.hex()


class _SnProducer:
    """One producer's MQTT-SN client and session."""

    def __init__(self, owner: MqttSnPublish, node: Node, params: MqttSnClientParams) -> None:
        self.owner = owner
        self.sim = owner.sim
        self.client = MqttSnClient(self.sim.rng(f"mqttsn/{node.name}"), params)
        self.driver = DatagramDriver(
            self.sim,
            node,
            self.client,
            self._on_event,
            sn_header_length,
            operation="mqttsn_message",
        )
        self.topic_id: int | None = None
        self.in_flight: dict[int, int] = {}  # QoS 1 MsgId -> reading id
        self.registering = False

    def ready(self) -> bool:
        return self.topic_id is not None and self.client.connected

    def connect(self) -> None:
        if self.client.state == "disconnected":
            self.client.connect(self.sim.now, self.owner.gateway)
            self.driver.pump()

    def register(self) -> None:
        if self.client.connected and self.topic_id is None:
            self.client.register(self.sim.now, self.owner.topic)
            self.driver.pump()

    def publish(self, rid: int, payload: bytes) -> None:
        work = self.owner.work
        topic_id = self.topic_id
        if topic_id is None:  # the workload publishes only when ready()
            raise RuntimeError("a PUBLISH before the topic was registered")
        try:
            msg_id = self.client.publish(self.sim.now, topic_id, payload, qos=self.owner.qos)
        except (QueueFull, RuntimeError):
            work.failed(rid)  # the client cannot take it: lost at the producer
            return
        if msg_id is None:
            work.handed_over(rid)
        else:
            self.in_flight[msg_id] = rid
        self.driver.pump()

    def _on_event(self, event: object) -> None:
        work, owner = self.owner.work, self.owner
        if isinstance(event, sn_ev.Connected):
            self.register()
        elif isinstance(event, sn_ev.Registered):
            self.topic_id = event.topic_id
        elif isinstance(event, sn_ev.Published):
            if event.msg_id is not None:
                self.in_flight.pop(event.msg_id, None)
        elif isinstance(event, sn_ev.RequestFailed):
            if event.kind == "register" and event.reason == "timeout":
                owner.later(self.register)
            rid = self.in_flight.pop(event.msg_id, None) if event.msg_id is not None else None
            if rid is not None:
                work.failed(rid)
        elif isinstance(event, sn_ev.Disconnected):
            # The session is gone (a CONNECT never answered, the gateway ended it):
            # what the client still held is lost; connect again.
            for rid in self.in_flight.values():
                work.failed(rid)
            self.in_flight.clear()
            self.topic_id = None
            owner.later(self.connect)
