"""The senders of the publish workload, by exchange."""

from __future__ import annotations

from collections.abc import Callable

from iotbench.world.workloads.publish.coap import CoapGet, CoapObserve, CoapPut
from iotbench.world.workloads.publish.hopp import NdnHopp
from iotbench.world.workloads.publish.mqttsn import MqttSnPublish
from iotbench.world.workloads.publish.ndn import NdnInterestNotification, NdnPull
from iotbench.world.workloads.publish.sender import Sender

#: The sender of each exchange: for CoAP by workload.coap_exchange, for NDN by
#: workload.ndn_exchange, otherwise by protocol name.
SENDERS: dict[str, Callable[..., Sender]] = {
    "put": CoapPut,
    "get": CoapGet,
    "observe": CoapObserve,
    "mqttsn": MqttSnPublish,
    "pull": NdnPull,
    "inot": NdnInterestNotification,
    "hopp": NdnHopp,
}
