"""RFC 7641 Observe: registration, notifications, freshness, deregistration, observer removal."""

import pytest
from coap_harness import CLIENT, SERVER, Wire, drain, endpoint, raw, run_timers

from iotbench.proto.coap.codec import Code, Message, Opt, Type
from iotbench.proto.coap.events import NotificationReceived, ResponseReceived
from iotbench.proto.coap.observe import ClientObservation, is_fresh
from iotbench.proto.coap.resources import ResourceResponse


class Sensor:
    def __init__(self):
        self.value = 20
        self.error = False

    def __call__(self, req, addr):
        if self.error:
            return ResourceResponse(code=Code.NOT_FOUND)
        return ResourceResponse(payload=str(self.value).encode(), content_format=0)


def _pair(confirmable_notifications=False, **client_params):
    client, server = endpoint(1, **client_params), endpoint(2)
    sensor = Sensor()
    server.add_resource(
        "/temp", sensor, observable=True, notify_confirmable=confirmable_notifications
    )
    return client, server, sensor, Wire(client, server, delay_s=0.01)


def test_freshness_rule_rfc7641_3_4():
    half = 1 << 23
    assert is_fresh(1, 0.0, 2, 0.0)
    assert not is_fresh(2, 0.0, 1, 0.0)
    assert not is_fresh(5, 0.0, 5, 0.0)
    assert is_fresh(0, 0.0, half - 1, 0.0)  # V2 - V1 < 2^23
    assert not is_fresh(0, 0.0, half, 0.0)
    assert is_fresh(0xFFFFFF, 0.0, 3, 0.0)  # wrapped: V1 - V2 > 2^23
    assert not is_fresh(half, 0.0, 0, 0.0)  # V1 - V2 == 2^23 is not > 2^23
    assert is_fresh(half + 1, 0.0, 0, 0.0)
    assert not is_fresh(10, 0.0, 3, 128.0)
    assert is_fresh(10, 0.0, 3, 128.001)  # 128 s later anything is fresh


def test_client_observation_remembers_latest():
    o = ClientObservation(10, 0.0)
    assert o.accept(11, 1.0) and not o.accept(11, 1.0) and not o.accept(10, 2.0)
    assert o.accept(12, 3.0) and o.notifications == 2


def test_registration_and_notifications():
    client, server, sensor, wire = _pair()
    rid = client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    wire.run(1.0)
    (reg_req,) = [m for _, m in wire.sent_by(CLIENT)]
    assert reg_req.observe == 0
    (ev,) = client.events()
    assert isinstance(ev, ResponseReceived) and ev.request_id == rid
    first_seq = ev.response.observe
    assert first_seq is not None and ev.response.payload == b"20"
    assert server.observers("/temp") == 1
    seqs = []
    for i, t in enumerate((2.0, 3.0, 4.0)):
        sensor.value = 21 + i
        assert server.notify(wire.at(t), "/temp") == 1
        wire.run(t + 0.5)
        (n,) = client.events()
        assert isinstance(n, NotificationReceived) and n.request_id == rid and not n.final
        assert n.message.payload == str(21 + i).encode()
        assert n.message.type == Type.NON  # default: NON notifications
        seqs.append(n.sequence)
    assert first_seq < seqs[0] < seqs[1] < seqs[2]
    # the observation does not hold NSTART: an ordinary request goes straight out
    client.request(wire.at(5.0), SERVER, Code.GET, "/temp")
    wire.run(6.0)
    assert [type(e) for e in client.events()] == [ResponseReceived]


def test_con_notifications_are_acknowledged():
    client, server, _sensor, wire = _pair(confirmable_notifications=True)
    client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    wire.run(1.0)
    client.events()
    server.notify(wire.at(2.0), "/temp")
    wire.run(3.0)
    ((_t, n),) = [(t, m) for t, m in wire.sent_by(SERVER) if t >= 2.0]
    assert n.type == Type.CON
    ((_t, ack),) = [(t, m) for t, m in wire.sent_by(CLIENT) if t >= 2.0]
    assert ack.type == Type.ACK and ack.code == 0 and ack.message_id == n.message_id
    assert server.next_timer() is None  # nothing left to retransmit


def _observing_client():
    client = endpoint(1)
    rid = client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    ((req, _),) = drain(client)
    resp = Message(Type.ACK, Code.CONTENT, req.message_id, req.token, payload=b"0")
    resp.observe = 5
    client.receive(0.1, raw(resp), SERVER)
    drain(client)
    assert [type(e) for e in client.events()] == [ResponseReceived]
    return client, rid, req.token


def _notification(token, seq, mid, type_=Type.NON, code=Code.CONTENT, payload=b"v"):
    m = Message(type_, code, mid, token, payload=payload)
    if seq is not None:
        m.observe = seq
    return raw(m)


def test_reordered_notification_is_dropped():
    client, _rid, token = _observing_client()
    client.receive(1.0, _notification(token, 7, 100), SERVER)
    client.receive(1.1, _notification(token, 6, 101), SERVER)  # overtaken by 7
    client.receive(1.2, _notification(token, 8, 102), SERVER)
    seqs = [e.sequence for e in client.events()]
    assert seqs == [7, 8]
    assert client.stats.stale_notifications == 1


def test_stale_con_notification_is_still_acknowledged():
    client, _rid, token = _observing_client()
    client.receive(1.0, _notification(token, 7, 100, Type.CON), SERVER)
    client.receive(1.1, _notification(token, 6, 101, Type.CON), SERVER)
    acks = drain(client)
    assert [(m.type, m.message_id) for m, _ in acks] == [(Type.ACK, 100), (Type.ACK, 101)]
    assert [e.sequence for e in client.events()] == [7]


def test_sequence_wraparound_and_128_second_rule():
    client, _rid, token = _observing_client()  # registered with Observe 5
    client.receive(0.5, _notification(token, 0xFFFFFE, 1), SERVER)  # 5 + more than 2^23: stale
    client.receive(1.0, _notification(token, 0x800000, 2), SERVER)  # 5 + less than 2^23
    client.receive(1.5, _notification(token, 0xFFFFFE, 3), SERVER)
    client.receive(2.0, _notification(token, 1, 4), SERVER)  # wrapped: fresh
    client.receive(3.0, _notification(token, 0, 5), SERVER)  # older: stale
    client.receive(130.0, _notification(token, 0, 6), SERVER)  # 128 s after 2.0: not yet
    client.receive(130.5, _notification(token, 0, 7), SERVER)  # more than 128 s: fresh
    assert [e.sequence for e in client.events()] == [0x800000, 0xFFFFFE, 1, 0]
    assert client.stats.stale_notifications == 3


def test_duplicate_notification_is_not_reported_twice():
    client, _rid, token = _observing_client()
    data = _notification(token, 9, 50, Type.CON)
    client.receive(1.0, data, SERVER)
    client.receive(3.0, data, SERVER)
    assert len(drain(client)) == 2  # ACK, then the same ACK again
    assert len(client.events()) == 1


def test_error_notification_ends_observation():
    client, server, sensor, wire = _pair()
    client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    wire.run(1.0)
    client.events()
    sensor.error = True
    server.notify(wire.at(2.0), "/temp")
    wire.run(3.0)
    (n,) = client.events()
    assert n.final and n.sequence is None and n.message.code == Code.NOT_FOUND
    assert n.message.observe is None
    assert server.observers("/temp") == 0
    sensor.error = False
    assert server.notify(wire.at(4.0), "/temp") == 0


def test_notification_without_observe_option_ends_observation():
    client, _rid, token = _observing_client()
    client.receive(1.0, _notification(token, None, 77), SERVER)
    (n,) = client.events()
    assert n.final
    client.receive(2.0, _notification(token, 10, 78), SERVER)
    ((rst, _),) = [x for x in drain(client) if x[0].type == Type.RST]
    assert rst.message_id == 78


def test_proactive_deregistration_rfc7641_3_6():
    client, server, _sensor, wire = _pair()
    rid = client.request(0.0, SERVER, Code.GET, "/temp", observe=True, query=["u=c"])
    wire.run(1.0)
    client.events()
    reg = wire.sent_by(CLIENT)[0][1]
    dereg_id = client.cancel_observe(wire.at(2.0), rid)
    wire.run(3.0)
    ((_t, dereg),) = [(t, m) for t, m in wire.sent_by(CLIENT) if t >= 2.0]
    assert dereg.code == Code.GET and dereg.observe == 1
    assert dereg.token == reg.token
    assert dereg.uri_path == reg.uri_path and dereg.uri_query == reg.uri_query
    (ev,) = client.events()
    assert isinstance(ev, ResponseReceived) and ev.request_id == dereg_id
    assert ev.response.observe is None
    assert server.observers("/temp") == 0
    assert server.notify(wire.at(4.0), "/temp") == 0


def test_reactive_cancellation_rsts_next_notification_and_server_forgets():
    client, server, _sensor, wire = _pair()
    rid = client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    wire.run(1.0)
    client.events()
    assert client.cancel_observe(wire.at(2.0), rid, proactive=False) is None
    server.notify(wire.at(3.0), "/temp")
    wire.run(4.0)
    ((_t, rst),) = [(t, m) for t, m in wire.sent_by(CLIENT) if t >= 3.0]
    assert rst.type == Type.RST
    assert client.events() == []
    assert server.observers("/temp") == 0


def test_rst_to_con_notification_removes_observer():
    client, server, _sensor, wire = _pair(confirmable_notifications=True)
    rid = client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    wire.run(1.0)
    client.cancel(wire.at(1.5), rid)
    server.notify(wire.at(2.0), "/temp")
    wire.run(3.0)
    assert server.observers("/temp") == 0
    assert server.next_timer() is None


def test_con_notification_timeout_removes_observer():
    client, server, _sensor, wire = _pair(confirmable_notifications=True)
    client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    wire.run(1.0)
    # the client disappears: the server keeps retransmitting into the void
    server.notify(2.0, "/temp")
    sent = [m for m, _ in drain(server)]
    sent += [m for _, m in run_timers(server, 500.0)]
    assert len(sent) == 5  # 1 + MAX_RETRANSMIT
    assert server.observers("/temp") == 0
    assert server.stats.retransmissions == 4


def test_non_notifications_do_not_time_out_observers():
    client, server, _sensor, wire = _pair()
    client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    wire.run(1.0)
    server.notify(2.0, "/temp")
    drain(server)
    run_timers(server, 500.0)
    assert server.observers("/temp") == 1


def test_new_state_replaces_in_flight_con_notification_rfc7641_4_5_2():
    client, server, sensor, wire = _pair(confirmable_notifications=True)
    client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    wire.run(1.0)
    sensor.value = 30
    server.notify(2.0, "/temp")
    ((first, _),) = drain(server)  # lost: never delivered
    sensor.value = 31
    server.notify(2.1, "/temp")
    assert drain(server) == []  # not sent in parallel
    t = server.next_timer()
    assert 4.0 <= t <= 5.0  # the first notification's retransmission timer
    server.handle_timer(t)
    ((second, _),) = drain(server)
    assert second.payload == b"31" and second.observe > first.observe
    assert second.message_id != first.message_id and second.type == Type.CON
    # the client acknowledges the replacement; nothing more is pending
    client.receive(t, raw(second), SERVER)
    ((ack, _),) = drain(client)
    server.receive(t + 0.01, raw(ack), CLIENT)
    assert server.next_timer() is None
    assert server.observers("/temp") == 1


def test_state_change_after_ack_is_sent_immediately():
    client, server, _sensor, wire = _pair(confirmable_notifications=True)
    client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    wire.run(1.0)
    server.notify(wire.at(2.0), "/temp")
    server.notify(wire.at(2.0), "/temp")  # queued behind the first
    wire.run(3.0)
    notes = [m for t, m in wire.sent_by(SERVER) if t >= 2.0]
    assert len(notes) == 2 and notes[0].observe < notes[1].observe
    assert len(client.events()) == 3  # registration response + two notifications


def test_reregistration_with_same_token_replaces_entry():
    client, server, _sensor, wire = _pair()
    rid = client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    wire.run(1.0)
    token = wire.sent_by(CLIENT)[0][1].token
    client.events()
    rid2 = client.request(wire.at(2.0), SERVER, Code.GET, "/temp", observe=True, token=token)
    wire.run(3.0)
    assert server.observers("/temp") == 1
    (ev,) = client.events()
    assert ev.request_id == rid2
    server.notify(wire.at(4.0), "/temp")
    wire.run(5.0)
    (n,) = client.events()
    assert n.request_id == rid2 and rid2 != rid


def test_two_clients_observe_with_one_sequence_per_state_change():
    server = endpoint(2)
    server.add_resource("/temp", Sensor(), observable=True)
    toks = []
    for i, peer in enumerate([("c1", 1), ("c2", 2)]):
        req = Message.request(Type.CON, Code.GET, 10 + i, bytes([i]), "/temp")
        req.observe = 0
        server.receive(0.0, raw(req), peer)
        toks.append(drain(server)[0][0].observe)
    assert toks[0] != toks[1]
    assert server.notify(1.0, "/temp") == 2
    notes = drain(server)
    assert {a for _, a in notes} == {("c1", 1), ("c2", 2)}
    assert notes[0][0].observe == notes[1][0].observe > max(toks)


def test_observe_on_non_observable_resource_is_plain_get():
    server = endpoint(2)
    server.add_resource("/plain", lambda r, a: b"x")
    req = Message.request(Type.CON, Code.GET, 1, b"\x01", "/plain")
    req.observe = 0
    server.receive(0.0, raw(req), CLIENT)
    ((resp, _),) = drain(server)
    assert resp.observe is None and server.observers("/plain") == 0


def test_client_registration_without_observe_in_response_completes_request():
    client = endpoint(1)
    client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    ((req, _),) = drain(client)
    client.receive(0.1, raw(Message(Type.ACK, Code.CONTENT, req.message_id, req.token)), SERVER)
    assert [type(e) for e in client.events()] == [ResponseReceived]
    client.receive(0.2, _notification(req.token, 3, 900), SERVER)
    assert [m.type for m, _ in drain(client)] == [Type.RST]


def test_notify_unknown_path_raises():
    server = endpoint(2)
    with pytest.raises(KeyError):
        server.notify(0.0, "/missing")


def test_observe_option_value_reaches_24_bits_and_wraps():
    server = endpoint(2)
    res = server.add_resource("/w", Sensor(), observable=True)
    res.seq = 0xFFFFFE
    req = Message.request(Type.CON, Code.GET, 1, b"\x01", "/w")
    req.observe = 0
    server.receive(0.0, raw(req), CLIENT)
    assert drain(server)[0][0].observe == 0xFFFFFF
    server.notify(1.0, "/w")
    assert drain(server)[0][0].observe == 0
    assert Opt.OBSERVE == 6


def test_late_notification_during_deregistration_is_acked_not_taken_as_response():
    client, rid, token = _observing_client()
    dereg = client.cancel_observe(1.0, rid)
    ((req, _),) = drain(client)
    assert req.observe == 1 and req.token == token
    client.receive(1.1, _notification(token, 9, 300, Type.CON), SERVER)
    ((ack, _),) = drain(client)
    assert ack.type == Type.ACK and ack.message_id == 300
    assert client.events() == []
    assert client.next_timer() is not None  # the deregistration is still retransmitted
    client.receive(1.2, raw(Message(Type.ACK, Code.CONTENT, req.message_id, token)), SERVER)
    (ev,) = client.events()
    assert ev.request_id == dereg


def test_cancel_observe_of_queued_or_plain_request():
    client = endpoint(1)
    client.request(0.0, SERVER, Code.GET, "/busy")
    plain = client.request(0.0, SERVER, Code.GET, "/t")
    obs = client.request(0.0, SERVER, Code.GET, "/t", observe=True)
    assert client.cancel_observe(0.0, plain) is None  # not an observation: untouched
    assert client.cancel_observe(0.0, obs) is None  # queued: simply dropped
    assert len(drain(client)) == 1
    assert client.cancel(0.0, plain)


def test_rst_to_non_notification_expires_after_non_lifetime():
    server = endpoint(2)
    server.add_resource("/temp", Sensor(), observable=True)
    for i, peer in enumerate([("c1", 1), ("c2", 2)]):
        req = Message.request(Type.CON, Code.GET, 10 + i, bytes([i]), "/temp")
        req.observe = 0
        server.receive(0.0, raw(req), peer)
    drain(server)
    server.notify(1.0, "/temp")
    (n1, a1), (n2, a2) = drain(server)
    server.receive(2.0, raw(Message.empty(Type.RST, n1.message_id)), a1)
    assert server.observers("/temp") == 1  # RST within NON_LIFETIME removes the observer
    server.receive(1.0 + 145.1, raw(Message.empty(Type.RST, n2.message_id)), a2)
    assert server.observers("/temp") == 1  # too late to match
    assert server.stats.unexpected == 1


def test_replacing_a_resource_drops_its_observers():
    server = endpoint(2)
    server.add_resource("/temp", Sensor(), observable=True)
    req = Message.request(Type.CON, Code.GET, 1, b"\x01", "/temp")
    req.observe = 0
    server.receive(0.0, raw(req), CLIENT)
    assert server.observers("/temp") == 1
    server.add_resource("/temp", Sensor(), observable=True)
    assert server.observers("/temp") == 0


# ---- RFC 7641 4.5 and 4.1: gone observers are detected, the list is bounded ----------


def _register(server, peer, token: bytes, mid: int, path: str = "/temp", now: float = 0.0):
    req = Message.request(Type.CON, Code.GET, mid, token, path)
    req.observe = 0
    server.receive(now, raw(req), peer)
    ((resp, _),) = drain(server)
    return resp


def _server(**params):
    server = endpoint(2, **params)
    server.add_resource("/temp", Sensor(), observable=True)
    server.add_resource("/hum", Sensor(), observable=True)
    return server


def test_every_nth_notification_is_confirmable():
    server = _server(observe_con_every=3)
    _register(server, CLIENT, b"\x01", 1)
    types = []
    for i in range(7):
        server.notify(1.0 + i, "/temp")
        ((msg, _),) = drain(server)
        types.append(msg.type)
        if msg.type == Type.CON:  # the client acknowledges it
            server.receive(1.0 + i, raw(Message(Type.ACK, Code.EMPTY, msg.message_id)), CLIENT)
    N, C = Type.NON, Type.CON
    assert types == [N, N, C, N, N, C, N]


def test_a_confirmable_notification_at_least_every_interval():
    server = _server(observe_con_interval_s=60.0)
    _register(server, CLIENT, b"\x01", 1, now=0.0)
    types = []
    for t in (10.0, 59.0, 60.0, 70.0, 119.0, 125.0):
        server.notify(t, "/temp")
        ((msg, _),) = drain(server)
        types.append(msg.type)
        if msg.type == Type.CON:
            server.receive(t, raw(Message(Type.ACK, Code.EMPTY, msg.message_id)), CLIENT)
    N, C = Type.NON, Type.CON
    assert types == [N, N, C, N, N, C]  # 60 s after the registration, then after that CON


def test_default_is_one_confirmable_notification_a_day():
    server = _server()
    _register(server, CLIENT, b"\x01", 1)
    server.notify(86399.0, "/temp")
    assert drain(server)[0][0].type == Type.NON
    server.notify(86400.0, "/temp")
    assert drain(server)[0][0].type == Type.CON


def test_an_observer_that_is_gone_ends_with_its_unacknowledged_con():
    server = _server(observe_con_every=2)
    _register(server, CLIENT, b"\x01", 1)
    server.notify(1.0, "/temp")
    server.notify(2.0, "/temp")  # a CON that nobody acknowledges
    assert [m.type for m, _ in drain(server)] == [Type.NON, Type.CON]
    run_timers(server, 200.0)
    assert server.observers("/temp") == 0


def test_unreachable_peer_loses_every_observation_at_once():
    server = _server()
    other = ("10.0.0.9", 5683)
    _register(server, CLIENT, b"\x01", 1)
    _register(server, CLIENT, b"\x02", 2, "/hum")
    _register(server, other, b"\x01", 3)
    assert server.peer_unreachable(1.0, CLIENT) == 2
    assert server.observers("/temp") == 1 and server.observers("/hum") == 0
    assert server.stats.observers_unreachable == 2
    assert server.notify(2.0, "/temp") == 1
    assert [addr for _, addr in drain(server)] == [other]
    assert server.peer_unreachable(3.0, ("10.0.0.7", 1)) == 0


def test_observers_are_bounded_per_resource_and_per_peer():
    server = _server(max_observers_per_resource=3, max_observations_per_peer=2)
    # Per peer: a third registration of one endpoint is answered without Observe.
    assert _register(server, CLIENT, b"\x01", 1).observe is not None
    assert _register(server, CLIENT, b"\x02", 2, "/hum").observe is not None
    refused = _register(server, CLIENT, b"\x03", 3)
    assert refused.code == Code.CONTENT and refused.payload == b"20"  # a plain GET's answer
    assert refused.observe is None and server.stats.observers_refused == 1
    # Re-registering an existing observation is not a new observer.
    assert _register(server, CLIENT, b"\x01", 4).observe is not None
    # Per resource: three observers of /temp at most, whoever they are.
    for i, mid in ((1, 5), (2, 6)):
        assert _register(server, (f"10.0.1.{i}", 1), b"\x01", mid).observe is not None
    assert _register(server, ("10.0.1.3", 1), b"\x01", 7).observe is None
    assert server.observers("/temp") == 3 and server.stats.observers_refused == 2
    # Room again once an observation ends.
    server.peer_unreachable(1.0, ("10.0.1.1", 1))
    assert _register(server, ("10.0.1.3", 1), b"\x01", 8).observe is not None


@pytest.mark.parametrize(
    "bad",
    [
        {"observe_con_every": -1},
        {"observe_con_interval_s": 0.0},
        {"max_observers_per_resource": 0},
        {"max_observations_per_peer": 1.5},
    ],
)
def test_observe_bounds_are_validated(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        endpoint(1, **bad)


@pytest.mark.parametrize("one_per_peer, observers", [(False, 2), (True, 1)])
def test_a_new_registration_replaces_the_peers_old_one_when_asked(one_per_peer, observers):
    """RFC 7641 keys observations by (endpoint, token): two registrations of one peer
    under two tokens are two observers. RIOT's gcoap keeps one per observer and
    resource (observe_one_per_peer): the newer replaces the older."""
    client = endpoint(1)
    server = endpoint(2, observe_one_per_peer=one_per_peer)
    server.add_resource("/temp", Sensor(), observable=True)
    wire = Wire(client, server, delay_s=0.01)
    client.request(0.0, SERVER, Code.GET, "/temp", observe=True, token=b"\x01")
    wire.run(1.0)
    newer = client.request(wire.at(2.0), SERVER, Code.GET, "/temp", observe=True, token=b"\x02")
    wire.run(3.0)
    client.events()
    assert server.observers("/temp") == observers
    assert server.notify(wire.at(4.0), "/temp") == observers
    wire.run(5.0)
    tokens = [m.token for _, m in wire.sent_by(SERVER) if m.observe is not None]
    assert tokens[-1] == b"\x02"
    if one_per_peer:
        (event,) = client.events()
        assert event.request_id == newer
