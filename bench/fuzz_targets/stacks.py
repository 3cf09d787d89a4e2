"""The stack targets: a fresh sans-I/O stack per case, fed 32 inputs through its
receive call with time passing, its outputs and limits checked after each."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

from fuzz_targets.codecs import (
    valid_coap,
    valid_dtls,
    valid_ipv6_packet,
    valid_lp,
    valid_mqtt,
    valid_mqttsn,
    valid_name,
    valid_ndn_fragment,
)
from fuzz_targets.common import StackCase, canonical, datagram, mutate, randbytes
from iotbench.codec_agreement import (
    LOWPAN_CONTEXTS,
    lowpan_macs,
)
from iotbench.net.lowpan import codec as lowpan
from iotbench.net.lowpan import fragments as lowpan_frag
from iotbench.proto.coap import codec as coap
from iotbench.proto.mqtt import codec as mqtt
from iotbench.proto.mqttsn import codec as sn
from iotbench.proto.ndn import fragmentation as ndn_frag
from iotbench.proto.ndn.data import Data, make_data
from iotbench.proto.ndn.interest import Interest, make_interest
from iotbench.proto.ndn.lp import LpPacket
from iotbench.proto.ndn.name import Name
from iotbench.proto.ndn.packet import decode_packet
from iotbench.proto.ndn.types import ComponentType

# ---- CoAP endpoints -----------------------------------------------------------------

COAP_CLIENT, COAP_SERVER = ("10.0.0.2", 5683), ("10.0.0.1", 5683)
_COAP_TOKENS = (b"\x01\x02\x03\x04", b"\x05\x06", b"\x07")


def _coap_corpus() -> list[bytes]:
    from iotbench.proto.coap.codec import Code, Message, Opt, Type

    tok = _COAP_TOKENS[0]
    msgs = [
        Message.request(Type.CON, Code.GET, 0x1000, tok, "/t"),
        Message.request(Type.NON, Code.GET, 0x1001, tok, "/slow"),
        Message.request(Type.CON, Code.POST, 0x1002, tok, "/t", payload=b"abc"),
        Message.request(Type.CON, Code.GET, 0x1003, tok, "/.well-known/core", query=["rt=x*"]),
        Message.request(Type.CON, Code.PUT, 0x1010, tok, "/up", payload=b"x" * 16),
        Message(Type.ACK, Code.CONTENT, 0x1004, tok, [(Opt.CONTENT_FORMAT, b"")], b"ok"),
        Message(Type.CON, Code.CONTENT, 0x1005, tok, [(Opt.OBSERVE, b"\x07")], b"n"),
        Message(Type.NON, Code.NOT_FOUND, 0x1006, tok),
        Message.empty(Type.ACK, 0x1004),
        Message.empty(Type.RST, 0x1005),
        Message.empty(Type.CON, 0x1009),
        Message(Type.ACK, Code.CONTENT, 0x1005, _COAP_TOKENS[2], [(Opt.OBSERVE, b"\x02")], b"r"),
        Message(Type.NON, Code.CONTENT, 0x2000, _COAP_TOKENS[1], [], b"non"),
        Message(Type.CON, Code.CONTENT, 0x2002, _COAP_TOKENS[2], [(Opt.OBSERVE, b"\x01")], b"n"),
        Message(Type.ACK, Code.CONTENT, 0x1004, tok, [(Opt.BLOCK2, b"\x0a")], b"b" * 64),
        Message(Type.ACK, Code.CONTINUE, 0x1004, tok, [(Opt.BLOCK1, b"\x0a")]),
    ]
    reg = Message.request(Type.CON, Code.GET, 0x100A, tok, "/obs-con")
    reg.observe = 0
    msgs.append(reg)
    big = Message.request(Type.CON, Code.GET, 0x100B, tok, "/big")
    big.block2 = coap.BlockOption(1, False, 0)
    msgs.append(big)
    return [coap.encode(m) for m in msgs]


_COAP_CORPUS = _coap_corpus()


def run_coap_endpoint_case(case: StackCase, count: int, stats: dict) -> None:
    from iotbench.proto.coap.endpoint import CoapEndpoint
    from iotbench.proto.coap.params import CoapParams
    from iotbench.proto.coap.resources import ResourceResponse

    rng = case.rng
    params = rng.choice(
        (
            CoapParams(),
            CoapParams(rto="cocoa", separate_response_after_s=0.5, token_length=0),
            CoapParams(nstart=3, token_length=1, separate_response_after_s=0.0),
        )
    )
    server = CoapEndpoint(random.Random(7), params)
    server.add_resource("/t", lambda r, a: b"21.5", observable=True, content_format=0)
    server.add_resource("/slow", lambda r, a: ResourceResponse(payload=b"x", delay_s=3.0))
    server.add_resource("/obs-con", lambda r, a: "v", observable=True, notify_confirmable=True)
    server.add_resource("/big", lambda r, a: b"B" * 300)
    client = CoapEndpoint(random.Random(8), params, first_message_id=0x1004)
    client.request(0.0, COAP_SERVER, coap.Code.GET, "/t", token=_COAP_TOKENS[0])
    client.request(0.0, COAP_SERVER, coap.Code.GET, "/t", confirmable=False, token=_COAP_TOKENS[1])
    client.request(0.0, COAP_SERVER, coap.Code.GET, "/t", observe=True, token=_COAP_TOKENS[2])
    now = 0.0

    def drain(ep: CoapEndpoint) -> None:
        for data, addr in ep.datagrams_to_send():
            canonical(coap.decode, coap.encode, data)
            assert addr in (COAP_CLIENT, COAP_SERVER)
        ep.events()
        assert ep.stats.internal_errors == 0, "internal error in the endpoint"

    drain(server)
    drain(client)
    for _ in range(count):
        data = case.note("datagram", datagram(rng, valid_coap, _COAP_CORPUS))
        now += rng.choice((0.0, 0.1, 1.0, 5.0, 30.0))
        server.receive(now, data, COAP_CLIENT)
        client.receive(now, data, COAP_SERVER)
        for ep in (server, client):
            t = ep.next_timer()
            if t is not None and t <= now:
                ep.handle_timer(now)
            drain(ep)
        server.notify(now, "/obs-con")
        drain(server)
        stats["inputs"] += 1


# ---- DTLS layers ---------------------------------------------------------------------

DTLS_CLIENT, DTLS_SERVER = ("10.0.0.2", 5684), ("10.0.0.1", 5684)


def _dtls_corpus() -> list[bytes]:
    """Every datagram of a real handshake and its first data, for mutation."""
    from iotbench.proto.dtls.layer import DtlsLayer
    from iotbench.proto.dtls.params import PskClientCredentials, PskServerCredentials

    client = DtlsLayer(random.Random(1), client=PskClientCredentials(b"id", b"key"))
    server = DtlsLayer(random.Random(2), server=PskServerCredentials({b"id": b"key"}))
    client.outgoing(0.0, b"data", DTLS_SERVER)
    corpus = []
    for _ in range(8):
        for data, _ in client.datagrams_to_send():
            corpus.append(data)
            server.incoming(0.0, data, DTLS_CLIENT)
        for data, _ in server.datagrams_to_send():
            corpus.append(data)
            client.incoming(0.0, data, DTLS_SERVER)
    return corpus


_DTLS_CORPUS = _dtls_corpus()


def run_dtls_layer_case(case: StackCase, count: int, stats: dict) -> None:
    """A client and a server layer fed the same datagrams; their own output must parse."""
    from iotbench.proto.dtls.layer import DtlsLayer
    from iotbench.proto.dtls.params import DtlsParams, PskClientCredentials, PskServerCredentials
    from iotbench.proto.dtls.record import split_records

    rng = case.rng
    params = DtlsParams(max_datagram_bytes=rng.choice((64, 1232)), max_sessions=4)
    client = DtlsLayer(random.Random(1), params, client=PskClientCredentials(b"id", b"key"))
    server = DtlsLayer(random.Random(2), params, server=PskServerCredentials({b"id": b"key"}))
    client.outgoing(0.0, b"data", DTLS_SERVER)
    now = 0.0
    for _ in range(count):
        data = case.note("datagram", datagram(rng, valid_dtls, _DTLS_CORPUS))
        now += rng.choice((0.0, 0.1, 1.0, 5.0))
        server.incoming(now, data, (DTLS_CLIENT[0], rng.randrange(3)))
        client.incoming(now, data, DTLS_SERVER)
        for layer in (client, server):
            t = layer.next_timer()
            if t is not None and t <= now:
                layer.handle_timer(now)
            for out, _ in layer.datagrams_to_send():
                assert len(out) <= params.max_datagram_bytes or out[0] == 23, "datagram too large"
                split_records(out)
            layer.plaintexts()
            layer.events()
        assert len(server._sessions) <= params.max_sessions
        stats["inputs"] += 1


# ---- OSCORE layers --------------------------------------------------------------------

OSCORE_CLIENT, OSCORE_SERVER = ("10.0.0.2", 40000), ("10.0.0.1", 5683)


def _oscore_layers(window_known: bool, **limits):
    """A client and a server OSCORE layer sharing RFC 8613 C.1's context."""
    from iotbench.proto.oscore.context import SecurityContext
    from iotbench.proto.oscore.layer import OscoreLayer

    secret, salt = bytes(range(1, 17)), bytes.fromhex("9e7ca92223786340")
    client = OscoreLayer(random.Random(1), **limits)
    client.add_peer(OSCORE_SERVER, SecurityContext(secret, b"", b"\x01", master_salt=salt))
    server = OscoreLayer(random.Random(2), **limits)
    server.add_context(
        SecurityContext(secret, b"\x01", b"", master_salt=salt, replay_window_known=window_known)
    )
    return client, server


def _oscore_corpus() -> list[bytes]:
    """Protected requests, answers and notifications of one exchange, for mutation."""
    from iotbench.proto.coap.codec import Code, Message, Type

    client, server = _oscore_layers(True)
    corpus = []
    requests = [
        Message.request(Type.CON, Code.GET, 0x10, b"tk", "/t"),
        Message.request(Type.NON, Code.PUT, 0x11, b"t2", "/t", payload=b"v"),
    ]
    requests[0].observe = 0
    for request in requests:
        client.outgoing(0.0, coap.encode(request), OSCORE_SERVER)
        for data, _ in client.datagrams_to_send():
            corpus.append(data)
            server.incoming(0.0, data, OSCORE_CLIENT)
        server.plaintexts()
    for mtype, mid, observe in ((Type.ACK, 0x10, 1), (Type.CON, 0x99, 2), (Type.NON, 0x11, None)):
        answer = Message(mtype, Code.CONTENT, mid, b"tk" if observe else b"t2", payload=b"21")
        if observe is not None:
            answer.observe = observe
        server.outgoing(0.0, coap.encode(answer), OSCORE_CLIENT)
        corpus += [data for data, _ in server.datagrams_to_send()]
    return corpus


_OSCORE_CORPUS = _oscore_corpus()


def _is_coap(data: bytes) -> bool:
    try:
        coap.decode(data)
    except coap.CoapDecodeError:
        return False
    return True


def run_oscore_layer_case(case: StackCase, count: int, stats: dict) -> None:
    """A client and a server layer fed the same datagrams, answering what they let
    through; what they send must be canonical CoAP, their tables within bounds."""
    from iotbench.proto.coap.codec import Code, Message, Type

    rng = case.rng
    limits = {"max_bindings": 4, "cache_entries": 8, "cache_bytes": 4096}
    client, server = _oscore_layers(rng.random() < 0.5, **limits)
    request = Message.request(Type.CON, Code.GET, 0x10, b"tk", "/t")
    request.observe = 0
    client.outgoing(0.0, coap.encode(request), OSCORE_SERVER)
    client.datagrams_to_send()
    now = 0.0
    for _ in range(count):
        data = case.note("datagram", datagram(rng, valid_coap, _OSCORE_CORPUS))
        now += rng.choice((0.0, 0.1, 1.0, 30.0, 300.0))
        server.incoming(now, data, OSCORE_CLIENT)
        client.incoming(now, data, OSCORE_SERVER)
        for layer, peer in ((client, OSCORE_SERVER), (server, OSCORE_CLIENT)):
            for plain, _ in layer.plaintexts():
                # As if the endpoint sent back what it got (it only ever sends CoAP;
                # bytes it would reject pass the layer untouched).
                if _is_coap(plain):
                    layer.outgoing(now, plain, peer)
            for out, _ in layer.datagrams_to_send():
                canonical(coap.decode, coap.encode, out)
            layer.events()
            assert len(layer._clients) <= limits["max_bindings"], "client bindings grow"
            assert len(layer._servers) <= limits["max_bindings"], "server bindings grow"
            for cache in (layer._sent, layer._received):
                assert len(cache) <= limits["cache_entries"], "a cache grows"
                assert cache.size_bytes <= limits["cache_bytes"] or len(cache) == 1
        stats["inputs"] += 1


# ---- MQTT broker and client ----------------------------------------------------------


def _mqtt_chunk(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.15:
        return randbytes(rng, rng.randrange(60))
    wire = b"".join(valid_mqtt(rng) for _ in range(rng.randint(1, 3)))
    return mutate(wire, rng) if r < 0.6 else wire


def _check_mqtt_output(data: bytes) -> None:
    for raw in mqtt.split_packets(data):
        canonical(mqtt.decode, mqtt.encode, raw)


#: The broker's security for half the cases: user "x" (password "p") and anonymous
#: clients, an ACL with every kind of entry over the fuzzer's topic characters.
_MQTT_ACL = """\
topic readwrite #
topic deny +/+
topic read a/#
user x
topic write #
topic deny $
pattern readwrite %c/#
pattern read %u
"""


def run_mqtt_broker_case(case: StackCase, count: int, stats: dict) -> None:
    from iotbench.proto.mqtt.acl import Acl
    from iotbench.proto.mqtt.broker import MqttBroker
    from iotbench.proto.mqtt.params import MqttBrokerParams

    rng = case.rng
    secured = rng.random() < 0.5
    security = {"users": {"x": b"p"}, "allow_anonymous": True, "acl": Acl.parse(_MQTT_ACL)}
    params = MqttBrokerParams(
        **(security if secured else {}),
        max_packet_size_bytes=256,
        max_inflight=2,
        max_queued_messages=3,
        max_sessions=3,
        max_subscriptions_per_session=4,
        max_retained_messages=5,
        retry_interval_s=1.0,
        connect_timeout_s=20.0,
    )
    b = MqttBroker(random.Random(3), params)
    for conn in range(3):
        b.connection_made(0.0, conn)
    now = 0.0
    for _ in range(count):
        conn = rng.randrange(3)
        action = rng.random()
        now += rng.choice((0.0, 0.3, 2.0, 8.0))
        if action < 0.85:
            data = _mqtt_chunk(rng)
            if rng.random() < 0.3:  # a CONNECT first, to reach the connected states
                user = "x" if secured and rng.random() < 0.5 else None
                connect = mqtt.Connect(
                    f"c{conn}", rng.random() < 0.5, 10, username=user, password=user and b"p"
                )
                data = mqtt.encode(connect) + data
            b.receive_data(now, conn, case.note(f"conn{conn}", data))
        elif action < 0.93:
            case.note(f"lost{conn}", b"")
            b.connection_lost(now, conn)
        else:
            case.note(f"made{conn}", b"")
            b.connection_made(now, conn)
        t = b.next_timer()
        if t is not None and t <= now:
            b.handle_timer(now)
        for _, out in b.data_to_send():
            _check_mqtt_output(out)
        b.connections_to_close()
        b.events()
        assert b.stats.internal_errors == 0, "internal error in the broker"
        assert len(b.sessions) <= params.max_sessions
        assert len(b.retained) <= params.max_retained_messages
        stats["inputs"] += 1


def run_mqtt_client_case(case: StackCase, count: int, stats: dict) -> None:
    from iotbench.proto.mqtt.client import MqttClient
    from iotbench.proto.mqtt.params import MqttClientParams

    rng = case.rng
    params = MqttClientParams(
        client_id="c",
        keep_alive_s=5,
        max_packet_size_bytes=256,
        max_inflight=2,
        max_queued_messages=3,
        retry_interval_s=1.0,
    )
    c = MqttClient(random.Random(4), params)
    c.publish(0.0, "t/q", b"queued", 1)
    c.connect(0.0)
    c.subscribe(0.0, [("t/#", 2)])
    now = 0.0
    first = True
    for i in range(count):
        now += rng.choice((0.0, 0.5, 2.0, 6.0))
        data = _mqtt_chunk(rng)
        if first or rng.random() < 0.1:
            data = mqtt.encode(mqtt.ConnAck(False, 0)) + data
            first = False
        c.receive_data(now, case.note("data", data))
        if i % 4 == 3 and c.queued < params.max_queued_messages:
            c.publish(now, "t/x", b"%d" % i, i % 3)
        t = c.next_timer()
        if t is not None and t <= now:
            c.handle_timer(now)
        if c.close_requested and not c.connected:
            c.connection_lost(now)
            c.connect(now)
        _check_mqtt_output(c.data_to_send())
        c.events()
        assert c.in_flight <= params.max_inflight and c.queued <= params.max_queued_messages
        stats["inputs"] += 1


# ---- MQTT-SN gateway and client --------------------------------------------------------

SN_GW = ("10.0.0.1", 1884)
SN_SENDERS = [(f"sn-{n}", 1000) for n in "xyzw"]


def _sn_corpus() -> list[bytes]:
    tit = sn.TopicIdType
    msgs = [
        sn.Connect("x", 5),
        sn.Connect("y", 0, False, True),
        sn.WillTopic("w/a", 1, True),
        sn.WillMsg(b"gone"),
        sn.Register(0, 1, "t/a"),
        sn.RegAck(1, 1, 0),
        sn.Publish(1, 0, b"x", 0),
        sn.Publish(1, 4, b"y", 1),
        sn.Publish(2, 5, b"z", 2, dup=True),
        sn.Publish(1, 0, b"p", -1, topic_id_type=tit.PREDEFINED),
        sn.Publish(0x6162, 0, b"s", -1, topic_id_type=tit.SHORT),
        sn.PubAck(1, 4, 0),
        sn.PubRec(5),
        sn.PubRel(5),
        sn.PubComp(5),
        sn.Subscribe(8, 1, tit.NORMAL, "t/+"),
        sn.Subscribe(10, 0, tit.PREDEFINED, topic_id=1),
        sn.Unsubscribe(12, tit.NORMAL, "t/+"),
        sn.PingReq(),
        sn.PingReq("x"),
        sn.Disconnect(),
        sn.Disconnect(30),
        sn.WillTopicUpd("w/b", 0, False),
        sn.WillMsgUpd(b"bye"),
        sn.SearchGw(1),
    ]
    wires = [sn.encode(m) for m in msgs]
    return wires + [sn.encode(sn.Encapsulated(0, b"\x07", w)) for w in wires[:6]]


_SN_CORPUS = _sn_corpus()


class _SnPipe:
    """A gateway joined to an in-memory MQTT broker, delivering everything at once."""

    def __init__(self) -> None:
        from iotbench.proto.mqtt.broker import MqttBroker
        from iotbench.proto.mqtt.params import MqttBrokerParams
        from iotbench.proto.mqttsn.gateway import MqttSnGateway
        from iotbench.proto.mqttsn.params import MqttSnGatewayParams

        self.limits = MqttSnGatewayParams(
            max_clients=3,
            max_buffered_messages=3,
            max_topics_per_client=3,
            max_stored_wills=2,
            predefined_topics={1: "p/1"},
            keep_alive_factor=1.5,
        )
        self.gw = MqttSnGateway(random.Random(1), self.limits)
        self.broker = MqttBroker(random.Random(2), MqttBrokerParams())
        self.open: set[int] = set()

    def pump(self, now: float) -> None:
        gw, broker = self.gw, self.broker
        for _ in range(200):
            moved = False
            for data, _addr in gw.datagrams_to_send():
                message = sn.decode(data)
                assert sn.encode(message) == data, "the gateway emitted non-canonical bytes"
            for stream in gw.streams_to_open():
                moved = True
                self.open.add(stream)
                broker.connection_made(now, ("gw", stream))
                gw.stream_connected(now, stream)
            for stream, data in gw.stream_data_to_send():
                if stream in self.open:
                    moved = True
                    broker.receive_data(now, ("gw", stream), data)
            for stream in gw.streams_to_close():
                if stream in self.open:
                    self.open.discard(stream)
                    broker.connection_lost(now, ("gw", stream))
            for conn, data in broker.data_to_send():
                if conn[1] in self.open:
                    moved = True
                    gw.stream_receive(now, conn[1], data)
            for conn in broker.connections_to_close():
                if conn[1] in self.open:
                    self.open.discard(conn[1])
                    gw.stream_lost(now, conn[1])
            gw.events()
            broker.events()
            if not moved:
                return

    def advance(self, now: float) -> None:
        for stack in (self.gw, self.broker):
            t = stack.next_timer()
            if t is not None and t <= now:
                stack.handle_timer(now)
        self.pump(now)


def run_mqttsn_gateway_case(case: StackCase, count: int, stats: dict) -> None:
    rng = case.rng
    pipe = _SnPipe()
    gw = pipe.gw
    now = 0.0
    for addr in SN_SENDERS[:3]:
        gw.receive(now, sn.encode(sn.Connect(addr[0], 5)), addr)
        gw.receive(now, sn.encode(sn.Subscribe(1, 2, sn.TopicIdType.NORMAL, "#")), addr)
        pipe.pump(now)
    for _ in range(count):
        addr = rng.choice(SN_SENDERS)
        data = case.note(addr[0], datagram(rng, valid_mqttsn, _SN_CORPUS))
        gw.receive(now, data, addr)
        pipe.pump(now)
        now += rng.choice((0.0, 0.01, 1.0, 12.0))
        pipe.advance(now)
        assert gw.stats.internal_errors == 0, "internal error in the gateway"
        assert pipe.broker.stats.internal_errors == 0, "internal error in the broker"
        assert gw.clients <= pipe.limits.max_clients
        stats["inputs"] += 1


def run_mqttsn_client_case(case: StackCase, count: int, stats: dict) -> None:
    from iotbench.proto.mqttsn.client import MqttSnClient
    from iotbench.proto.mqttsn.params import MqttSnClientParams

    rng = case.rng
    c = MqttSnClient(
        random.Random(10), MqttSnClientParams(client_id="dev", keep_alive_s=5, max_topics=3)
    )
    now = 0.0
    state = rng.randrange(4)
    if state >= 1:
        c.connect(now, SN_GW)
    replies = [
        sn.encode(sn.ConnAck(0)),
        sn.encode(sn.SubAck(0, 1, 0, 1)),
        sn.encode(sn.RegAck(3, 2, 0)),
    ]
    for i in range(count):
        if state >= 2 and i < len(replies) and rng.random() < 0.7:
            data = replies[i]
        else:
            data = datagram(rng, valid_mqttsn, _SN_CORPUS)
        case.note("datagram", data)
        c.receive(now, data, SN_GW)
        c.receive(now, data, ("elsewhere", 1))
        if c.connected and rng.random() < 0.2:
            c.subscribe(now, "t/#", 1) if c.queued < 2 else None
        now += rng.choice((0.0, 0.01, 1.0, 12.0))
        t = c.next_timer()
        if t is not None and t <= now:
            c.handle_timer(now)
        for out, _addr in c.datagrams_to_send():
            canonical(sn.decode, sn.encode, out)
        c.events()
        assert c.stats.internal_errors == 0, "internal error in the client"
        stats["inputs"] += 1


# ---- NDN forwarder ------------------------------------------------------------------


def _ndn_frame(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.1:
        return randbytes(rng, rng.randrange(64))
    if r < 0.2:
        return valid_ndn_fragment(rng)
    if r < 0.55:
        name = (
            Name("/a").append(bytes((rng.randrange(4),))) if rng.random() < 0.7 else valid_name(rng)
        )
        wire = make_interest(
            Name([c for c in name if c.type != ComponentType.PARAMETERS_SHA256_DIGEST]),
            can_be_prefix=rng.random() < 0.3,
            nonce=rng.randrange(4),
            lifetime_ms=rng.choice((None, 10, 1000)),
            hop_limit=rng.choice((None, 0, 1, 5)),
        ).wire
    elif r < 0.85:
        name = (
            Name("/a").append(bytes((rng.randrange(4),))) if rng.random() < 0.7 else valid_name(rng)
        )
        wire = make_data(name, b"v", freshness_period_ms=rng.choice((None, 0, 100))).wire
    else:
        wire = valid_lp(rng)
    return mutate(wire, rng) if rng.random() < 0.5 else wire


def run_ndn_forwarder_case(case: StackCase, count: int, stats: dict) -> None:
    from iotbench.proto.ndn.forwarder import Forwarder, ForwarderConfig

    rng = case.rng
    config = rng.choice(
        (
            ForwarderConfig(),
            ForwarderConfig(pit_max_entries=4, cs_max_bytes=300, retx_max=2, strategy="multicast"),
            ForwarderConfig(send_nacks=False, unsolicited_data="admit-all", cs_policy="lru"),
        )
    )
    fw = Forwarder(random.Random(5), config)
    sent: list[bytes] = []
    faces = [
        fw.add_face(sent.append, local=True),
        fw.add_face(sent.append, mtu=rng.choice((None, 40, 100))),
        fw.add_face(sent.append, s5_fragments=False),
    ]
    fw.add_route("/a", faces[1].face_id)
    fw.add_route("/", faces[2].face_id)
    now = 0.0
    for _ in range(count):
        face = rng.choice(faces)
        data = case.note(f"face{face.face_id}", _ndn_frame(rng))
        fw.receive(now, face.face_id, data)
        now += rng.choice((0.0, 0.005, 0.5, 5.0))
        t = fw.next_timer()
        if t is not None and t <= now:
            fw.handle_timer(now)
        for wire in sent:
            # Fields are decoded lazily (interest.py, data.py): a forwarder vets the
            # structure and what it reads (the name; for a Data also its SignatureInfo,
            # as NFD does), and passes the rest on as it came.
            if ndn_frag.is_fragment(wire):
                ndn_frag.FragmentHeader.decode(wire)
            else:
                packet = decode_packet(wire)
                if isinstance(packet, LpPacket) and packet.nack is not None:
                    packet = Interest(packet.fragment)
                if not isinstance(packet, LpPacket):
                    assert packet.name is not None
                if isinstance(packet, Data):
                    assert packet.signature_info is not None
        sent.clear()
        assert fw.counters.internal_errors == 0, f"internal error: {fw.last_internal_error!r}"
        stats["inputs"] += 1


# ---- 6LoWPAN reassembler -------------------------------------------------------------


def run_lowpan_reassembler_case(case: StackCase, count: int, stats: dict) -> None:
    rng = case.rng
    r = lowpan_frag.Reassembler(
        timeout_s=rng.choice((1.0, 60.0)), max_datagrams=2, max_bytes=1500, contexts=LOWPAN_CONTEXTS
    )
    pending: list[tuple[bytes, bytes, bytes]] = []
    now = 0.0
    for _ in range(count):
        if not pending or rng.random() < 0.3:
            selector = rng.randrange(16)
            src_mac, dst_mac = lowpan_macs(selector)
            packet = valid_ipv6_packet(rng, src_mac, dst_mac) + randbytes(rng, rng.randrange(300))
            packet = packet[:4] + struct.pack("!H", len(packet) - 40) + packet[6:]
            c = lowpan.compress(
                packet,
                src_mac,
                dst_mac,
                mode=rng.choice(("iphc", "none")),
                contexts=LOWPAN_CONTEXTS,
            )
            pieces = lowpan_frag.fragment(c, rng.randrange(0x10000), rng.choice((60, 100, 127)))
            rng.shuffle(pieces)
            pending = [(src_mac, dst_mac, p) for p in pieces]
        src_mac, dst_mac, piece = pending.pop()
        if rng.random() < 0.3:
            piece = mutate(piece, rng)
        case.note(f"{src_mac.hex()}>{dst_mac.hex()}", piece)
        packet = r.add(now, src_mac, dst_mac, piece)
        if packet is not None:
            assert packet[0] >> 4 == 6, "not an IPv6 packet"
            assert struct.unpack_from("!H", packet, 4)[0] == len(packet) - 40, "payload length"
        assert len(r) <= r.max_datagrams and r.held_bytes <= r.max_bytes
        now += rng.choice((0.0, 0.01, 0.5, 2.0))
        stats["inputs"] += 1


STACKS: dict[str, Callable[[StackCase, int, dict], None]] = {
    "coap-endpoint": run_coap_endpoint_case,
    "dtls-layer": run_dtls_layer_case,
    "oscore-layer": run_oscore_layer_case,
    "mqtt-broker": run_mqtt_broker_case,
    "mqtt-client": run_mqtt_client_case,
    "mqttsn-gateway": run_mqttsn_gateway_case,
    "mqttsn-client": run_mqttsn_client_case,
    "ndn-forwarder": run_ndn_forwarder_case,
    "6lowpan-reassembler": run_lowpan_reassembler_case,
}
