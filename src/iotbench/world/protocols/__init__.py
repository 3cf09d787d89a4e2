"""Protocol set-ups: a server on the server node, and an item client on the client node.

`build_client` reads `protocol.name` and returns an object with
`start(item, done)` that carries out one workload item with that protocol.
Each protocol's module adds its builder to `BUILDERS`.
"""

from __future__ import annotations

from collections.abc import Callable

from iotbench.apps.requesters import ItemClient
from iotbench.scenarios.settings import RunSettings
from iotbench.sim import Simulator
from iotbench.world.networks import Network
from iotbench.world.protocols.coap import build_coap
from iotbench.world.protocols.http import build_http
from iotbench.world.protocols.mqtt import build_mqtt
from iotbench.world.protocols.mqttsn import build_mqttsn
from iotbench.world.protocols.ndn import build_ndn
from iotbench.world.protocols.quic import build_quic

BUILDERS: dict[str, Callable[[Simulator, Network, RunSettings], ItemClient]] = {
    "coap": build_coap,
    "http": build_http,
    "mqtt": build_mqtt,
    "quic": build_quic,
    "ndn": build_ndn,
    "mqttsn": build_mqttsn,
}


def build_client(sim: Simulator, net: Network, config: RunSettings) -> ItemClient:
    return BUILDERS[config.protocol.name](sim, net, config)
