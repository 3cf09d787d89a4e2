"""Faults put into a stack's guarded code, for the tests of what a stack does with an
exception of its own (proto/errors.py). Most stacks are compiled, and a compiled
class takes no patches: each fault sits in something the stack calls (a layer,
its settings, an event it makes) and breaks when the stack calls it."""

from __future__ import annotations

from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.mqtt.params import MqttBrokerParams
from iotbench.proto.mqttsn.params import MqttSnGatewayParams


class Injected(RuntimeError):
    """The fault a test puts into a stack."""


def fault(*_args, **_kwargs):
    raise Injected("a bug inside the stack")


class BrokenServerLayer:
    """A server layer that breaks as the message layer hands it a request (inside
    the message layer's guard): the message layer takes any object for the layers
    above it."""

    receive_request = staticmethod(fault)


# The MQTT-SN client's Connected event, which it makes on a CONNACK: the compiled
# module looks the class up in its globals at each call, so a test may replace it
# there (monkeypatch.setattr(iotbench.proto.mqttsn.client, "Connected", fault)).
MQTTSN_CLIENT_EVENT = "Connected"


def broken_coap_endpoint(*args, **kwargs) -> CoapEndpoint:
    """A CoAP endpoint whose server layer breaks (BrokenServerLayer)."""
    endpoint = CoapEndpoint(*args, **kwargs)
    endpoint.message_layer.connect(endpoint.client_layer, BrokenServerLayer())
    return endpoint


class BrokenBrokerParams(MqttBrokerParams):
    """An MQTT broker's settings that break as it checks a CONNECT's credentials."""

    @property
    def passwords(self):
        fault()


class _BrokenGatewayParams(MqttSnGatewayParams):
    @property
    def max_new_clients(self):
        fault()


def broken_gateway_params(**settings) -> MqttSnGatewayParams:
    """An MQTT-SN gateway's settings that break as it makes room for a new client's
    CONNECT, made from valid ones (their own checks run first)."""
    params = MqttSnGatewayParams(**settings)
    object.__setattr__(params, "__class__", _BrokenGatewayParams)  # (frozen)
    return params
