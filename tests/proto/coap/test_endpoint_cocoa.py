"""rto="cocoa": the endpoint takes its timeouts from a per-destination CoCoA estimator."""

import itertools

import pytest
from coap_harness import CLIENT, SERVER, Wire, drain, endpoint, raw, run_timers

from iotbench.proto.coap.codec import Code, Message, Type
from iotbench.proto.coap.events import RequestFailed, ResponseReceived
from iotbench.proto.coap.resources import ResourceResponse

OTHER = ("10.0.0.3", 5683)


def _server():
    server = endpoint(2)
    server.add_resource("/t", lambda r, a: b"ok")
    return server


def test_blind_cocoa_behaves_like_rfc7252_at_first():
    for seed in range(30):
        ep = endpoint(seed, rto="cocoa")
        ep.request(0.0, SERVER, Code.GET, "/t")
        drain(ep)
        sent = run_timers(ep, 1000.0)
        times = [0.0] + [t for t, _ in sent]
        first = times[1]
        assert 2.0 <= first <= 3.0
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert gaps == pytest.approx([first, 2 * first, 4 * first, 8 * first])
        assert isinstance(ep.events()[0], RequestFailed)


def test_strong_sample_shortens_the_next_timeout():
    client = endpoint(1, rto="cocoa")
    wire = Wire(client, _server(), delay_s=0.05)  # RTT 0.1 s
    client.request(0.0, SERVER, Code.GET, "/t")
    wire.run(1.0)
    assert [type(e) for e in client.events()] == [ResponseReceived]
    est = client.rto_estimator(SERVER)
    # E_strong = 0.1 + 4 * 0.05 = 0.3 ; RTO = 0.5 * 0.3 + 0.5 * 2 = 1.15
    assert est.strong.rto_s == pytest.approx(0.3)
    assert est.rto_s == pytest.approx(1.15)


def test_first_timeout_comes_from_the_estimator_per_destination():
    client = endpoint(1, rto="cocoa")
    wire = Wire(client, _server(), delay_s=0.05)
    client.request(0.0, SERVER, Code.GET, "/t")
    wire.run(1.0)
    client.events()
    # E_strong = 0.3, RTO = 1.15 towards SERVER; OTHER is still blind (2 s)
    for addr, low, high in [(SERVER, 1.15, 1.15 * 1.5), (OTHER, 2.0, 3.0)]:
        rid = client.request(1.0, addr, Code.GET, "/t")  # into the void
        ((_m, a),) = drain(client)
        assert a == addr
        first = client.next_timer() - 1.0
        assert low <= first <= high, (addr, first)
        client.cancel(1.0, rid)


def test_small_rto_backs_off_by_three():
    client = endpoint(1, rto="cocoa")
    wire = Wire(client, _server(), delay_s=0.005)
    t = 0.0
    for _ in range(30):
        client.request(wire.at(t), SERVER, Code.GET, "/t")
        t += 0.5
    wire.run(t)
    assert len(client.events()) == 30
    rto = client.rto_estimator(SERVER).rto(t)
    assert rto < 1.0
    client.request(t, SERVER, Code.GET, "/t")
    drain(client)
    sent = run_timers(client, t + 1000.0)
    times = [t] + [s for s, _ in sent]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert rto <= gaps[0] <= 1.5 * rto
    assert gaps[1] == pytest.approx(3 * gaps[0])
    assert gaps[2] == pytest.approx(9 * gaps[0])


def test_weak_sample_after_one_retransmission():
    client = endpoint(1, rto="cocoa")
    dropped = []

    def drop_first(t, src, dst, msg):
        if src == CLIENT and not dropped:
            dropped.append(t)
            return True
        return False

    wire = Wire(client, _server(), delay_s=0.05, drop=drop_first)
    client.request(0.0, SERVER, Code.GET, "/t")
    wire.run(10.0)
    (ev,) = client.events()
    assert ev.transmissions == 2
    est = client.rto_estimator(SERVER)
    assert est.strong.samples == 0 and est.weak.samples == 1
    # weak RTT counted from the initial transmission: r = first timeout + 0.1
    r = ev.rtt_s
    assert est.weak.rto_s == pytest.approx(r + 1 * r / 2)
    assert est.rto_s == pytest.approx(0.25 * (1.5 * r) + 0.75 * 2.0)


def test_non_wait_adapts_to_the_estimate():
    client = endpoint(1, rto="cocoa")
    client.request(0.0, SERVER, Code.GET, "/t", confirmable=False)
    drain(client)
    assert client.next_timer() == pytest.approx(93.0)  # blind: MAX_TRANSMIT_WAIT
    client.cancel(0.0, 1)
    wire = Wire(client, _server(), delay_s=0.05)
    client.request(wire.at(1.0), SERVER, Code.GET, "/t", confirmable=False)
    wire.run(2.0)
    assert [type(e) for e in client.events()] == [ResponseReceived]
    est = client.rto_estimator(SERVER)
    assert est.rto_s == pytest.approx(1.15)  # the NON exchange fed the strong estimator
    rid = client.request(wire.at(3.0), SERVER, Code.GET, "/nope", confirmable=False)
    ((_m, _),) = drain(client)
    # ACK_RANDOM_FACTOR * RTO * (1 + 2 + 4 + 8 + 16), as a CON would wait
    assert client.next_timer() - 3.0 == pytest.approx(1.5 * 1.15 * 31)
    client.handle_timer(client.next_timer())
    assert client.events() == [RequestFailed(rid, "timeout")]


def test_explicit_non_timeout_overrides_cocoa_rule():
    client = endpoint(1, rto="cocoa", non_timeout_s=7.0)
    client.request(0.0, SERVER, Code.GET, "/t", confirmable=False)
    drain(client)
    assert client.next_timer() == 7.0


def test_blind_estimate_grows_with_parallel_exchanges():
    client = endpoint(1, rto="cocoa", nstart=3)
    for _ in range(3):
        client.request(0.0, SERVER, Code.GET, "/t")
    mids = [m.message_id for m, _ in drain(client)]
    first_retx = {}
    for t, m in run_timers(client, 20.0):
        first_retx.setdefault(m.message_id, t)
    # draft 4.1: message k (k exchanges already running) starts from 2 s * (k + 1)
    for k, mid in enumerate(mids):
        assert 2.0 * (k + 1) <= first_retx[mid] <= 3.0 * (k + 1)


def test_rfc7252_mode_ignores_rtt():
    client = endpoint(1)
    wire = Wire(client, _server(), delay_s=0.05)
    for i in range(5):
        client.request(wire.at(float(i)), SERVER, Code.GET, "/t")
    wire.run(10.0)
    client.request(10.0, SERVER, Code.GET, "/t")
    assert 2.0 <= client.next_timer() - 10.0 <= 3.0


def test_server_feeds_estimator_from_acked_separate_responses():
    client = endpoint(1)
    server = endpoint(2, rto="cocoa", separate_response_after_s=0.5)
    server.add_resource("/s", lambda r, a: ResourceResponse(payload=b"x", delay_s=2.0))
    wire = Wire(client, server, delay_s=0.05)
    client.request(0.0, SERVER, Code.GET, "/s")
    wire.run(5.0)
    est = server.rto_estimator(CLIENT)
    assert est.strong.samples == 1 and est.strong.srtt_s == pytest.approx(0.1)


def test_rst_bytes_for_reference():
    # A sanity check of the hand-made bytes used above: RST is 0x70 00 mid.
    assert raw(Message.empty(Type.RST, 0x1234)) == b"\x70\x00\x12\x34"
