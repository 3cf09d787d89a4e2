"""The S5 application API over forwarders, and the device profiles."""

import dataclasses

import pytest
from ndn_harness import Net

from iotbench.proto.ndn.app import NdnApp
from iotbench.proto.ndn.data import make_data
from iotbench.proto.ndn.interest import make_interest
from iotbench.proto.ndn.name import Name
from iotbench.proto.ndn.profiles import (
    MEASURED_SPREADS,
    OPERATIONS,
    PROFILES,
    SPREAD_PROBABILITIES,
    CostSpread,
    get_profile,
)
from iotbench.proto.ndn.signing import HmacSha256Signer, HmacSha256Verifier, verify
from iotbench.proto.ndn.types import NackReason
from iotbench.scenarios.fields import (
    DEVICE_PROFILES,
    NDN_DEVICE_PROFILES,
    SPREAD_DEVICE_PROFILES,
)


def _pair(**config):
    """Consumer node c and producer node p on one link (10 ms), each with an app."""
    net = Net()
    c, p = net.node("c", **config), net.node("p", **config)
    fc, _ = net.link(c, p, delay_s=0.01)
    c.add_route("/p", fc.face_id)
    return net, NdnApp.create(c), NdnApp.create(p)


def test_express_interest_and_answer():
    net, consumer, producer = _pair()
    seen, got = [], []

    def on_interest(interest):
        seen.append((producer.now, str(interest.name)))
        producer.put_data(make_data(interest.name, b"21.5", freshness_period_ms=5000))

    assert producer.register_prefix("/p", on_interest)
    consumer.express_interest(
        "/p/temp", 4000, lambda i, d: got.append((consumer.now, d.content)), None
    )
    net.run(1.0)
    assert seen == [(0.01, "/p/temp")]
    assert got == [(0.02, b"21.5")]
    assert consumer.stats.data_received == 1 and producer.stats.interests_received == 1


def test_timeout_after_the_lifetime():
    net, consumer, _ = _pair(send_nacks=False)  # no producer, and nobody says so
    events = []
    consumer.express_interest(
        "/p/x", 1500, lambda i, d: events.append("data"), lambda i: events.append(consumer.now)
    )
    net.run(10.0)
    assert events == [1.5]
    assert consumer.stats.timeouts == 1


def test_nack_ends_the_interest():
    net = Net()
    c = net.node("c")
    app = NdnApp.create(c)
    events = []
    app.express_interest("/none", 4000, None, lambda i: events.append(("timeout", app.now)))
    app.express_interest(
        "/none/2", 4000, None, None, on_nack=lambda i, r: events.append(("nack", r))
    )
    net.run(10.0)
    assert events == [("timeout", 0.0), ("nack", NackReason.NO_ROUTE)]
    assert app.stats.nacks == 2 and app.stats.timeouts == 0


def test_producer_cache_and_consumer_cache_s5():
    # S5's three cases: fresh Data from the producer, from the producer's cache, from the own cache.
    net, consumer, producer = _pair()
    calls = []

    def on_interest(interest):
        calls.append(interest.name)
        producer.put_data(make_data(interest.name, b"v", freshness_period_ms=60_000))

    producer.register_prefix("/p", on_interest)
    got = []
    consumer.express_interest("/p/1", 4000, lambda i, d: got.append(consumer.now))
    net.run(1.0)
    # (b) The consumer's cache is emptied: the producer's cache answers, no new on_interest.
    consumer.forwarder.cs.erase(Name("/p/1").value)
    consumer.express_interest("/p/1", 4000, lambda i, d: got.append(consumer.now), now=1.0)
    net.run(2.0)
    # (c) The consumer's own cache answers at once.
    consumer.express_interest("/p/1", 4000, lambda i, d: got.append(consumer.now), now=2.0)
    net.run(3.0)
    assert len(calls) == 1
    assert got == [0.02, 1.02, 2.0]
    assert producer.forwarder.counters.cs_hits == 1 and consumer.forwarder.counters.cs_hits == 1


def test_put_data_ahead_of_interests_fills_the_cache():
    net, consumer, producer = _pair()
    producer.put_data(make_data("/p/pre", b"early"))
    got = []
    consumer.express_interest("/p/pre", 4000, lambda i, d: got.append(d.content))
    net.run(1.0)
    assert got == [b"early"] and producer.stats.interests_received == 0


def test_schedule_and_run_driven_externally():
    net = Net()
    fw = net.node("n")
    app = NdnApp.create(fw)
    fired = []
    app.schedule(lambda: fired.append(app.now), 1.5)
    t = app.schedule(lambda: fired.append("cancelled"), 1.0)
    t.cancel()

    def chain():
        fired.append(app.now)
        app.schedule(lambda: fired.append(app.now), 0.25)

    app.schedule(chain, 2.0)
    assert app.next_timer() == 1.5
    while (when := app.next_timer()) is not None:
        app.run(when)
    assert fired == [1.5, 2.0, 2.25]
    with pytest.raises(ValueError):
        app.schedule(lambda: None, -1)


def test_destroy_stops_everything():
    net, consumer, producer = _pair()
    events = []
    consumer.express_interest("/p/x", 1000, None, lambda i: events.append("timeout"))
    consumer.schedule(lambda: events.append("timer"), 0.5)
    producer.register_prefix("/p", lambda i: events.append("interest"))
    producer.destroy()
    consumer.destroy()
    consumer.destroy()  # idempotent
    net.run(5.0)
    assert events == []
    assert producer.face.face_id not in [f.face_id for f in producer.forwarder.faces]
    assert len(producer.forwarder.fib) == 0
    with pytest.raises(RuntimeError):
        consumer.express_interest("/p/y")


def test_cancel_and_unregister():
    net, consumer, producer = _pair()
    events = []
    producer.register_prefix("/p", lambda i: events.append("interest"))
    pending = consumer.express_interest("/p/x", 1000, None, lambda i: events.append("timeout"))
    pending.cancel()
    net.run(2.0)
    assert events == ["interest"]
    producer.unregister_prefix("/p")
    assert len(producer.forwarder.fib) == 0


def test_longest_registered_prefix_wins_and_bad_digest_is_dropped():
    net = Net()
    fw = net.node("n")
    app = NdnApp.create(fw)
    hits = []
    app.register_prefix("/a", lambda i: hits.append("a"))
    app.register_prefix("/a/b", lambda i: hits.append("ab"))
    other = fw.add_face(lambda w: None)
    fw.receive(0.0, other.face_id, make_interest("/a/b/c", nonce=1).wire)
    fw.receive(0.0, other.face_id, make_interest("/a/x", nonce=2).wire)
    bad = bytearray(make_interest("/a/p", app_parameters=b"xy", nonce=3).wire)
    bad[-1] ^= 1
    fw.receive(0.0, other.face_id, bytes(bad))
    assert hits == ["ab", "a"]
    assert app.stats.bad_parameters_digest == 1


def test_signed_data_and_interest_through_the_api():
    net, consumer, producer = _pair()
    signer = HmacSha256Signer(b"shared", key_name="/p/KEY/1")
    got = []

    def on_interest(interest):
        assert verify(interest, HmacSha256Verifier(b"shared"))
        producer.put_data(make_data(interest.name, b"ok", signer=signer))

    producer.register_prefix("/p", on_interest)
    consumer.express_interest(
        "/p/cmd",
        4000,
        lambda i, d: got.append(verify(d, HmacSha256Verifier(b"shared"))),
        app_parameters=b"on",
        signer=signer,
    )
    net.run(1.0)
    assert got == [True]


def test_express_a_ready_interest():
    net, consumer, producer = _pair()
    producer.register_prefix("/p", lambda i: producer.put_data(make_data(i.name, b"")))
    got = []
    consumer.express_interest(
        make_interest("/p/z", lifetime_ms=100), on_data=lambda i, d: got.append(i.nonce)
    )
    net.run(1.0)
    assert len(got) == 1 and got[0] is not None


# ---- device profiles -------------------------------------------------------------------------


def test_m3_profile_has_the_s5_figures():
    m3 = get_profile("m3")
    assert m3.cost_s("ecdsa_sign") == pytest.approx(0.270)
    assert m3.cost_s("ecdsa_verify") == pytest.approx(0.295)
    assert m3.cost_s("data_create_hmac") == pytest.approx(0.0013)
    assert m3.cpu_hz == 72_000_000
    assert m3.cs_max_bytes == 24 * 1024


def test_profiles_price_every_operation_and_bound_tables():
    for profile in PROFILES.values():
        if profile.partial:
            continue
        assert all(profile.cost_s(op) > 0 for op in OPERATIONS)
        config = profile.forwarder_config()
        assert config.pit_max_entries == profile.pit_max_entries >= 1
        assert config.cs_max_bytes == profile.cs_max_bytes
        assert config.fib_max_entries == profile.fib_max_entries
        assert profile.pit_budget_bytes + profile.cs_max_bytes <= profile.ram_bytes
    # Slower device, slower operations.
    assert get_profile("samr21").cost_s("ecdsa_sign") > get_profile("m3").cost_s("ecdsa_sign")
    assert get_profile("host").cost_s("ecdsa_sign") < get_profile("m3").cost_s("ecdsa_sign")
    assert get_profile("m3").forwarder_config(pit_overflow="replace-oldest").pit_overflow == (
        "replace-oldest"
    )
    with pytest.raises(ValueError, match="unknown operation"):
        get_profile("m3").cost_s("teleport")
    with pytest.raises(ValueError, match="unknown device profile"):
        get_profile("pdp11")


def test_a_partial_profile_names_what_it_was_measured_for():
    rm090 = get_profile("rm090")
    assert rm090.cost_s("ip_forward") == pytest.approx(1.81e-3)
    assert rm090.cost_s("coap_message") == pytest.approx(1.14e-3)
    with pytest.raises(ValueError, match="measured for coap_message, ip_forward only"):
        rm090.cost_s("forward_packet")
    with pytest.raises(ValueError, match="no cost for"):
        dataclasses.replace(rm090, partial=False)


def test_scenarios_offer_every_profile_and_ndn_only_the_whole_ones():
    assert set(DEVICE_PROFILES) == set(PROFILES)
    assert all(not PROFILES[name].partial for name in NDN_DEVICE_PROFILES)
    assert set(SPREAD_DEVICE_PROFILES) == set(MEASURED_SPREADS)


def test_a_cost_spread_is_drawn_through_its_knots():
    """A measured spread is a piecewise-linear distribution through its quantiles:
    drawn at evenly spaced probabilities, its values fall between the knots they lie
    between, and their quantiles are the knots."""
    spread = MEASURED_SPREADS["a8"]["coap_message"]
    assert spread.factor(0.0) == spread.knots[0]
    assert spread.factor(0.5) == 1.0
    assert spread.factor(1.0) == spread.knots[-1]
    # Halfway between p90 and p95, halfway between their knots.
    p90, p95 = spread.knots[18], spread.knots[19]
    assert spread.factor(0.925) == pytest.approx((p90 + p95) / 2)
    draws = sorted(spread.factor((i + 0.5) / 20_000) for i in range(20_000))
    for probability, knot in zip(SPREAD_PROBABILITIES[1:-1], spread.knots[1:-1], strict=True):
        assert spread.factor(probability) == pytest.approx(knot)
        assert draws[int(probability * 20_000)] == pytest.approx(knot, abs=1e-2)
    assert sum(draws) / len(draws) == pytest.approx(spread.mean(), rel=1e-3)
    # Its median is the profile's figure: the spread lengthens some PUTs and
    # shortens others about as much (the mean is within 3 % of the median).
    assert 1.0 < spread.mean() < 1.03


def test_a_cost_spread_refuses_knots_it_cannot_draw_from():
    with pytest.raises(ValueError, match="knots"):
        CostSpread((1.0, 2.0))
    with pytest.raises(ValueError, match="rising"):
        CostSpread(tuple(reversed(MEASURED_SPREADS["a8"]["coap_message"].knots)))


def test_a_profile_takes_its_measured_spread_and_a_slowdown():
    a8 = get_profile("a8")
    assert a8.spreads == {}  # the median, unless a run asks for the spread
    assert (
        a8.with_measured_spread().spreads["coap_message"]
        is (MEASURED_SPREADS["a8"]["coap_message"])
    )
    slowed = a8.slowed(1.5)
    assert slowed.cost_s("coap_message") == pytest.approx(1.5 * a8.cost_s("coap_message"))
    assert slowed.cost_s("mqttsn_message") == pytest.approx(1.5 * a8.cost_s("mqttsn_message"))
    with pytest.raises(ValueError, match="above 0"):
        a8.slowed(0)
    with pytest.raises(ValueError, match="m3.*no measured spread.*measured: a8"):
        get_profile("m3").with_measured_spread()
