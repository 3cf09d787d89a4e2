"""SecuredEndpoint: every unicast datagram through the layer, group traffic untouched,
the layer told the time of each call."""

from __future__ import annotations

import random

from iotbench.proto.coap import codec
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.coap.secured import SecuredEndpoint
from iotbench.proto.sansio import DrainedQueues

SERVER, GROUP = ("10.0.0.1", 5683), ("ff02::fd", 5683)


class Reversing(DrainedQueues):
    """A toy layer: 'protects' a datagram by reversing it; records the times it saw."""

    def __init__(self) -> None:
        self._out, self._plain, self._events = [], [], []
        self.times: list[float] = []

    def outgoing(self, now, data, addr):
        self.times.append(now)
        self._out.append((data[::-1], addr))

    def incoming(self, now, data, addr):
        self.times.append(now)
        self._plain.append((data[::-1], addr))

    def next_timer(self):
        return None

    def handle_timer(self, now):
        pass


def pair() -> tuple[SecuredEndpoint, SecuredEndpoint]:
    server = SecuredEndpoint(CoapEndpoint(random.Random(1)), Reversing())
    server.add_resource("/t", lambda request, addr: b"21.5")  # delegated to the endpoint
    client = SecuredEndpoint(CoapEndpoint(random.Random(2)), Reversing())
    return client, server


def test_an_exchange_goes_through_both_layers_at_the_calls_time():
    client, server = pair()
    client.request(3.0, SERVER, codec.Code.GET, "/t")
    ((wire, _),) = client.datagrams_to_send()
    assert codec.decode(wire[::-1]).code == codec.Code.GET  # the layer's form on the wire
    server.receive(4.0, wire, ("10.0.0.2", 5683))
    ((answer, _),) = server.datagrams_to_send()
    client.receive(5.0, answer, SERVER)
    (event,) = client.events()
    assert event.response.payload == b"21.5"
    assert client.layer.times == [3.0, 5.0] and server.layer.times == [4.0, 4.0]


def test_group_requests_and_multicast_datagrams_pass_untouched():
    client, server = pair()
    client.request(0.0, GROUP, codec.Code.GET, "/t", multicast=True)
    ((wire, addr),) = client.datagrams_to_send()
    assert addr == GROUP and codec.decode(wire).code == codec.Code.GET
    assert client.layer.times == []
    server.receive(1.0, wire, ("10.0.0.2", 5683), multicast=True)
    assert server.layer.times == []
