"""RFC 7252 section 4 timing rules, one test per rule, with a fake clock.

Defaults: ACK_TIMEOUT 2 s, ACK_RANDOM_FACTOR 1.5, MAX_RETRANSMIT 4, NSTART 1,
MAX_LATENCY 100 s, PROCESSING_DELAY = ACK_TIMEOUT.
"""

import itertools

import pytest
from coap_harness import CLIENT, SERVER, Wire, drain, endpoint, raw, run_timers

from iotbench.proto.coap.codec import Code, Message, Type
from iotbench.proto.coap.events import RequestFailed, ResponseReceived
from iotbench.proto.coap.params import CoapParams


def _con_schedule(seed: int, **params):
    """Send one CON GET into the void; return (send times, events)."""
    ep = endpoint(seed, **params)
    ep.request(0.0, SERVER, Code.GET, "/t")
    assert len(drain(ep)) == 1
    times = [0.0] + [t for t, _ in run_timers(ep, 1000.0)]
    return times, ep.events(), ep


def test_first_timeout_is_random_in_ack_timeout_times_random_factor():
    firsts = []
    for seed in range(200):
        ep = endpoint(seed)
        ep.request(0.0, SERVER, Code.GET, "/t")
        drain(ep)
        firsts.append(ep.next_timer())
    assert all(2.0 <= t <= 3.0 for t in firsts)
    # uniformly spread over the interval, not pinned to one end
    assert min(firsts) < 2.1 and max(firsts) > 2.9
    assert len(set(firsts)) == len(firsts)


def test_timeout_doubles_with_each_retransmission():
    times, _, _ = _con_schedule(3)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    first = gaps[0]
    assert 2.0 <= first <= 3.0
    assert gaps[:4] == pytest.approx([first, 2 * first, 4 * first, 8 * first])


def test_exactly_max_retransmit_retransmissions_then_failure():
    ep = endpoint(5)
    rid = ep.request(0.0, SERVER, Code.GET, "/t")
    first = drain(ep)
    sent = run_timers(ep, 1000.0)
    assert len(sent) == 4  # MAX_RETRANSMIT
    assert all(m.message_id == first[0][0].message_id for _, m in sent)  # same message
    assert all(m.type == Type.CON for _, m in sent)
    assert ep.events() == [RequestFailed(rid, "max-retransmit")]
    assert ep.stats.retransmissions == 4
    assert ep.next_timer() is None


@pytest.mark.parametrize("max_retransmit", [0, 1, 2, 4, 6])
def test_max_retransmit_is_configurable(max_retransmit):
    ep = endpoint(2, max_retransmit=max_retransmit)
    ep.request(0.0, SERVER, Code.GET, "/t")
    drain(ep)
    assert len(run_timers(ep, 10_000.0)) == max_retransmit


def test_give_up_time_equals_the_schedule_span():
    # Without randomisation the numbers are exact: 2 + 4 + 8 + 16 + 32 = 62 s.
    ep = endpoint(1, ack_random_factor=1.0)
    ep.request(0.0, SERVER, Code.GET, "/t")
    drain(ep)
    sent = run_timers(ep, 62.0 - 1e-9)
    assert [t for t, _ in sent] == [2.0, 6.0, 14.0, 30.0]
    assert not ep.events()
    run_timers(ep, 62.0)
    assert [type(e) for e in ep.events()] == [RequestFailed]


@pytest.mark.parametrize("seed", range(20))
def test_give_up_within_max_transmit_wait_and_last_send_within_span(seed):
    times, events, _ep = _con_schedule(seed)
    first = times[1] - times[0]
    p = CoapParams()
    give_up = first * 31  # initial timeout * (2 ** (MAX_RETRANSMIT + 1) - 1)
    last = times[-1]
    assert last == pytest.approx(first * 15)
    assert last <= p.max_transmit_span_s == 45.0
    assert give_up <= p.max_transmit_wait_s == 93.0
    assert isinstance(events[0], RequestFailed)
    # the failure happened exactly at give_up: rerun and stop just before it
    ep2 = endpoint(seed)
    ep2.request(0.0, SERVER, Code.GET, "/t")
    run_timers(ep2, give_up - 1e-6)
    assert ep2.events() == []
    run_timers(ep2, give_up + 1e-6)
    assert len(ep2.events()) == 1


def test_nstart_queues_requests_and_sends_them_as_others_complete():
    ep = endpoint(1)
    ids = [ep.request(0.0, SERVER, Code.GET, f"/r{i}") for i in range(3)]
    out = drain(ep)
    assert [m.uri_path for m, _ in out] == ["/r0"]  # NSTART = 1
    # answer the first with a piggybacked response
    m0 = out[0][0]
    ep.receive(0.5, raw(Message(Type.ACK, Code.CONTENT, m0.message_id, m0.token)), SERVER)
    out = drain(ep)
    assert [m.uri_path for m, _ in out] == ["/r1"]
    assert [type(e) for e in ep.events()] == [ResponseReceived]
    # the second fails (RST): the third goes out, nothing was dropped
    m1 = out[0][0]
    ep.receive(0.6, raw(Message.empty(Type.RST, m1.message_id)), SERVER)
    assert [m.uri_path for m, _ in drain(ep)] == ["/r2"]
    assert ep.events() == [RequestFailed(ids[1], "reset")]


def test_nstart_is_per_destination_and_configurable():
    ep = endpoint(1, nstart=2)
    for i in range(3):
        ep.request(0.0, SERVER, Code.GET, f"/a{i}")
    ep.request(0.0, ("10.0.0.9", 5683), Code.GET, "/b")
    paths = sorted(m.uri_path for m, _ in drain(ep))
    assert paths == ["/a0", "/a1", "/b"]


def test_empty_ack_ends_the_outstanding_interaction():
    # RFC 7252 4.7: after the empty ACK the request no longer counts against NSTART.
    ep = endpoint(1)
    ep.request(0.0, SERVER, Code.GET, "/slow")
    ep.request(0.0, SERVER, Code.GET, "/next")
    ((m0, _),) = drain(ep)
    ep.receive(0.1, raw(Message.empty(Type.ACK, m0.message_id)), SERVER)
    assert [m.uri_path for m, _ in drain(ep)] == ["/next"]


def test_non_request_timeout_is_max_transmit_wait_93s():
    ep = endpoint(1)
    rid = ep.request(0.0, SERVER, Code.GET, "/t", confirmable=False)
    nxt = ep.request(0.0, SERVER, Code.GET, "/u", confirmable=False)
    ((m, _),) = drain(ep)
    assert m.type == Type.NON
    assert ep.next_timer() == pytest.approx(93.0)
    assert run_timers(ep, 92.999) == []  # NON requests are never retransmitted
    assert ep.events() == []
    sent = run_timers(ep, 93.0)
    assert ep.events() == [RequestFailed(rid, "timeout")]
    # the study's client: the next request leaves only when the previous one is given up
    assert [(t, m.uri_path) for t, m in sent] == [(93.0, "/u")]
    assert nxt == rid + 1


def test_non_timeout_is_configurable():
    ep = endpoint(1, non_timeout_s=5.0)
    ep.request(0.0, SERVER, Code.GET, "/t", confirmable=False)
    drain(ep)
    assert ep.next_timer() == 5.0


def _server_counting():
    server = endpoint(2)
    calls = []

    def handler(req, addr):
        calls.append(req.message_id)
        return b"v"

    server.add_resource("/t", handler)
    return server, calls


def test_exchange_lifetime_dedup_window_is_247s():
    assert CoapParams().exchange_lifetime_s == pytest.approx(247.0)
    server, calls = _server_counting()
    req = raw(Message.request(Type.CON, Code.GET, 0x1234, b"\x01", "/t"))
    server.receive(0.0, req, CLIENT)
    ((first, _),) = drain(server)
    server.receive(246.9, req, CLIENT)
    ((again, _),) = drain(server)
    assert again == first and len(calls) == 1  # cached ACK, handler not re-run
    assert server.stats.duplicates == 1
    server.receive(247.1, req, CLIENT)
    drain(server)
    assert len(calls) == 2  # the Message ID may be reused after EXCHANGE_LIFETIME


def test_non_lifetime_dedup_window_is_145s():
    assert CoapParams().non_lifetime_s == pytest.approx(145.0)
    server, calls = _server_counting()
    req = raw(Message.request(Type.NON, Code.GET, 0x4321, b"\x02", "/t"))
    server.receive(0.0, req, CLIENT)
    assert len(drain(server)) == 1
    server.receive(144.9, req, CLIENT)
    assert drain(server) == [] and len(calls) == 1  # duplicate NON: silently ignored
    server.receive(145.1, req, CLIENT)
    assert len(drain(server)) == 1 and len(calls) == 2


def test_dedup_is_per_peer():
    server, calls = _server_counting()
    req = raw(Message.request(Type.CON, Code.GET, 7, b"\x01", "/t"))
    server.receive(0.0, req, CLIENT)
    server.receive(0.1, req, ("10.0.0.3", 1234))
    assert len(calls) == 2


def test_lost_ack_is_recovered_by_retransmission_and_cached_reply():
    client = endpoint(1)
    server, calls = _server_counting()
    dropped = []

    def drop_first_ack(t, src, dst, msg):
        if src == SERVER and not dropped:
            dropped.append(msg)
            return True
        return False

    wire = Wire(client, server, drop=drop_first_ack)
    rid = client.request(0.0, SERVER, Code.GET, "/t")
    wire.run(10.0)
    (ev,) = client.events()
    assert isinstance(ev, ResponseReceived) and ev.request_id == rid
    assert ev.transmissions == 2
    assert 2.0 <= ev.rtt_s <= 3.0 + 0.02
    assert len(calls) == 1  # the retransmission was answered from the cache
    assert server.stats.duplicates == 1


def test_derived_parameters_rfc7252_4_8_2():
    p = CoapParams()
    assert p.max_transmit_span_s == pytest.approx(45.0)
    assert p.max_transmit_wait_s == pytest.approx(93.0)
    assert p.max_rtt_s == pytest.approx(202.0)
    assert p.exchange_lifetime_s == pytest.approx(247.0)
    assert p.non_lifetime_s == pytest.approx(145.0)
    q = CoapParams(ack_timeout_s=1.0, max_retransmit=2, processing_delay_s=0.5, max_latency_s=10)
    assert q.max_transmit_span_s == pytest.approx(1.0 * 3 * 1.5)
    assert q.exchange_lifetime_s == pytest.approx(4.5 + 20 + 0.5)


@pytest.mark.parametrize(
    "field,value",
    [
        ("ack_timeout_s", 0.0),
        ("ack_timeout_s", float("nan")),
        ("ack_random_factor", 0.9),
        ("max_retransmit", -1),
        ("nstart", 0),
        ("max_latency_s", -1.0),
        ("non_timeout_s", 0.0),
        ("rto", "tcp"),
        ("separate_response_after_s", -0.1),
        ("token_length", 9),
        ("probing_rate_bps", 0.0),
    ],
)
def test_params_validation_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        CoapParams(**{field: value})


def test_constant_backoff_waits_the_same_before_every_retransmission():
    # S4's alignment (its RIOT's gcoap): ACK_TIMEOUT 2 s before each of at most 4
    # retransmissions, no randomisation, no doubling; give up 2 s after the last.
    times, events, ep = _con_schedule(
        3, ack_random_factor=1.0, backoff="constant", max_retransmit=4
    )
    assert times == pytest.approx([0.0, 2.0, 4.0, 6.0, 8.0])
    assert [type(e) for e in events] == [RequestFailed]
    assert ep.params.max_transmit_span_s == pytest.approx(8.0)
    assert ep.params.max_transmit_wait_s == pytest.approx(10.0)


def test_constant_backoff_is_refused_when_misspelt():
    with pytest.raises(ValueError, match="backoff"):
        CoapParams(backoff="linear")
