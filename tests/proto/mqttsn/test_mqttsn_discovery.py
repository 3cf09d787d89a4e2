"""Gateway advertisement and discovery (MQTT-SN 1.2 section 6.1)."""

from __future__ import annotations

import pytest
from mqttsn_harness import BROADCAST, GATEWAY, GW, Net

from iotbench.proto.mqttsn.codec import Advertise, GwInfo, SearchGw, pack_udp_address
from iotbench.proto.mqttsn.events import GatewayFound, GatewayLost, GatewaySearchFailed


def test_advertise_finds_the_gateway_and_silence_loses_it():
    net = Net(advertise_interval_s=900, broadcast_addr=BROADCAST, gw_id=7)
    c = net.add("dev")  # Nadv = 2 by default
    net.gateway.start(net.now)
    net.run(1000)
    assert [t for t, _ in net.sent(GATEWAY, Advertise)] == [0.0, 900.0]
    assert net.sent(GATEWAY, Advertise)[0][1] == Advertise(7, 900)
    assert net.take("dev") == [GatewayFound(7, GW)]
    assert c.gateways[7].addr == GW
    net.drop = lambda now, s, d, m: type(m) is Advertise  # the gateway falls silent
    net.run(2700.0)
    assert net.take("dev") == []
    net.run(2700.02)  # 2 x 900 s after the last ADVERTISE arrived (at 900.01)
    assert net.take("dev") == [GatewayLost(7, GW)]
    assert c.gateways == {}


def test_no_advertise_unless_configured():
    net = Net()
    net.gateway.start(0.0)
    net.run(10_000)
    assert net.log == []
    with pytest.raises(ValueError):
        Net(advertise_interval_s=60)  # nowhere to broadcast to


def test_search_after_a_random_delay_answered_by_gwinfo():
    net = Net(broadcast_addr=BROADCAST)
    c = net.add("dev", search_delay_s=5.0)
    c.search_gateway(net.now, BROADCAST, radius=2)
    net.run(10)
    [(t, search)] = net.sent("dev", SearchGw)
    assert 0.0 <= t <= 5.0 and search == SearchGw(2)
    assert [m for _, m in net.sent(GATEWAY, GwInfo)] == [GwInfo(1)]
    assert net.take("dev") == [GatewayFound(1, GW)]


def test_searches_of_several_clients_are_answered_once():
    net = Net(broadcast_addr=BROADCAST)
    for name in ("a", "b", "c"):
        net.add(name).search_gateway(net.now, BROADCAST)
    net.run(60)
    # The first SEARCHGW on the air replaces the others' (6.1); one GWINFO answers all.
    assert len(net.sent("a", SearchGw) + net.sent("b", SearchGw) + net.sent("c", SearchGw)) == 1
    assert len(net.sent(GATEWAY, GwInfo)) == 1
    for name in ("a", "b", "c"):
        assert net.take(name) == [GatewayFound(1, GW)]


def test_gwinfo_goes_to_the_searcher_without_a_broadcast_address():
    net = Net()
    c = net.add("dev")
    c.search_gateway(net.now, GW)  # unicast "broadcast": straight to the gateway
    net.run(10)
    assert [d for _, s, d, m in net.log if s == GATEWAY] == ["dev"]
    assert net.take("dev") == [GatewayFound(1, GW)]


def test_unanswered_search_backs_off_then_fails():
    net = Net(broadcast_addr=BROADCAST)
    net.drop = lambda now, s, d, m: type(m) is SearchGw
    c = net.add("dev", search_delay_s=5.0, search_retries=3)
    c.search_gateway(net.now, BROADCAST)
    net.run(200)
    times = [t for t, _ in net.sent("dev", SearchGw)]
    first = times[0]
    assert [round(t - first, 6) for t in times] == [0.0, 5.0, 15.0, 35.0]  # doubling waits
    assert net.take("dev") == [GatewaySearchFailed()]
    assert c.next_timer() is None


def test_a_client_answers_another_clients_search_for_a_silent_gateway():
    net = Net(advertise_interval_s=900, broadcast_addr=BROADCAST)
    helper = net.add("helper", gwinfo_broadcast_addr=BROADCAST)
    net.gateway.start(net.now)
    net.run(1)
    assert net.take("helper") == [GatewayFound(1, GW)]
    net.drop = lambda now, s, d, m: s == GATEWAY  # the gateway does not answer
    newcomer = net.add("new")
    newcomer.search_gateway(net.now, BROADCAST)
    net.run(20)
    [(_, info)] = net.sent("helper", GwInfo)
    assert info == GwInfo(1, pack_udp_address(GW))
    assert net.take("new") == [GatewayFound(1, GW)]
    assert helper.gateways[1].addr == GW
