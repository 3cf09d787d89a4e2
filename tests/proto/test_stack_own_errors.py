"""What each stack does with an exception of its own (proto/errors.py): a strict stack
(the default, every simulation's) raises it; a lenient one (a server on real sockets)
counts it, logs its traceback and carries on."""

from __future__ import annotations

import logging
import random

import pytest
from aioquic.quic.connection import QuicConnection

import iotbench.proto.mqttsn.client as mqttsn_client_module
from iotbench.proto.coap.codec import Code, Message, Type, decode, encode
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.codec import Connect
from iotbench.proto.mqtt.codec import encode as mqtt_encode
from iotbench.proto.mqttsn.client import MqttSnClient
from iotbench.proto.mqttsn.codec import ConnAck
from iotbench.proto.mqttsn.codec import Connect as SnConnect
from iotbench.proto.mqttsn.codec import encode as mqttsn_encode
from iotbench.proto.mqttsn.gateway import MqttSnGateway
from iotbench.proto.ndn.forwarder import Forwarder
from iotbench.proto.ndn.interest import make_interest
from iotbench.proto.quic.certs import certificate_pem, make_certificate
from iotbench.proto.quic.endpoint import QuicClient, QuicServer
from iotbench.proto.quic.params import QuicParams
from stack_faults import (
    MQTTSN_CLIENT_EVENT,
    BrokenBrokerParams,
    BrokenServerLayer,
    Injected,
    broken_gateway_params,
    fault,
)

PEER = ("10.0.0.1", 5683)


def coap(strict, monkeypatch):
    ep = CoapEndpoint(random.Random(1), strict=strict)
    ep.message_layer.connect(ep.client_layer, BrokenServerLayer())
    ep.receive(0.0, encode(Message.request(Type.CON, Code.GET, 1, b"t", "/x")), PEER)
    return ep.stats.internal_errors


def coap_handler(strict, monkeypatch):
    ep = CoapEndpoint(random.Random(1), strict=strict)
    ep.add_resource("/x", fault)
    ep.receive(0.0, encode(Message.request(Type.CON, Code.GET, 1, b"t", "/x")), PEER)
    ((data, _),) = ep.datagrams_to_send()
    assert decode(data).code == Code.INTERNAL_SERVER_ERROR  # what a real client gets
    return ep.stats.handler_errors


def ndn(strict, monkeypatch):
    fw = Forwarder(random.Random(1), strict=strict)
    down = fw.add_face(lambda wire: None)
    up = fw.add_face(fault)  # a face that breaks as the forwarder sends on it
    fw.add_route("/p", up.face_id)
    fw.receive(0.0, down.face_id, make_interest("/p/1", nonce=1).wire)
    return fw.counters.internal_errors


def mqtt_broker(strict, monkeypatch):
    broker = MqttBroker(random.Random(1), BrokenBrokerParams(), strict=strict)
    broker.connection_made(0.0, "c")
    broker.receive_data(0.0, "c", mqtt_encode(Connect("c1")))
    return broker.stats.internal_errors


def mqttsn_gateway(strict, monkeypatch):
    gateway = MqttSnGateway(random.Random(1), broken_gateway_params(), strict=strict)
    gateway.receive(0.0, mqttsn_encode(SnConnect("dev", 60)), PEER)
    return gateway.stats.internal_errors


def mqttsn_client(strict, monkeypatch):
    monkeypatch.setattr(mqttsn_client_module, MQTTSN_CLIENT_EVENT, fault)
    client = MqttSnClient(random.Random(1), strict=strict)
    client.connect(0.0, PEER)
    client.receive(0.1, mqttsn_encode(ConnAck(0)), PEER)
    return client.stats.internal_errors


def quic(strict, monkeypatch):
    cert, key = make_certificate(1)
    server = QuicServer(QuicParams(), cert, key, lambda request: b"", strict)
    client = QuicClient(QuicParams(), certificate_pem(cert), "sensor.iotbench")
    client.request(0.0, PEER, b"/x")
    (initial, _), *_ = client.datagrams_to_send()
    monkeypatch.setattr(QuicConnection, "receive_datagram", fault)
    server.receive(0.0, initial, PEER)
    return server.internal_errors


STACKS = [coap, coap_handler, ndn, mqtt_broker, mqttsn_gateway, mqttsn_client, quic]


@pytest.mark.parametrize("stack", STACKS, ids=lambda f: f.__name__)
def test_a_strict_stack_raises_its_own_exception(stack, monkeypatch):
    with pytest.raises(Injected, match="a bug inside the stack"):
        stack(True, monkeypatch)


@pytest.mark.parametrize("stack", STACKS, ids=lambda f: f.__name__)
def test_a_lenient_stack_counts_it_and_logs_the_traceback(stack, monkeypatch, caplog):
    with caplog.at_level(logging.ERROR, logger="iotbench.proto"):
        assert stack(False, monkeypatch) == 1
    (record,) = caplog.records
    assert "internal error" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is Injected
