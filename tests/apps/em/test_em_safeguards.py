"""The Entity Manager under abuse: nested entities that multiply a query, profiles
whose requests are large, clients that change others' entities, and clients that
fill the tables; each attack reproduced on the fake network, then the bound that
stops it (EmParams, apps/em/safeguards.py)."""

from __future__ import annotations

import json
import random

import pytest
from em_net import EM_HOST, em_net
from test_em_manager import call, create

from iotbench.apps.em.manager import EmParams
from iotbench.apps.em.profile import Profile, parse_member
from iotbench.apps.em.safeguards import Cost, client_of, member_request_bytes, owner_of, query_cost
from iotbench.proto.coap.codec import Code
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.coap.params import CoapParams
from iotbench.real.coap_em import REAL_MODE_PARAMS

MEMBER = "fd00::2"


def bounded(**limits) -> EmParams:
    return EmParams(local_hosts=(EM_HOST,), **limits)


def client_at(net, host: str, seed: int) -> CoapEndpoint:
    client = CoapEndpoint(random.Random(seed), CoapParams())
    net.add(host, client)
    return client


def requests_to(net, host: str, since: float) -> int:
    return sum(1 for t, _ in net.sent_to(host) if t >= since)


def nested_profiles(inner: int, outer: int) -> tuple[dict, dict]:
    """B: `inner` members at one address (a query string makes each URI distinct);
    A: `outer` members that are B itself, also made distinct by a query string."""
    b = {"name": "B", "er": [f"coap://[{MEMBER}]/s/t?n={i}" for i in range(inner)]}
    a = {"name": "A", "er": [f"coap://[{EM_HOST}]/e/B?y={i}" for i in range(outer)]}
    return b, a


# ---- item 1: what one query may make the EM send ----------------------------------------


def test_nested_entities_multiply_a_query_when_nothing_bounds_them():
    """The attack as found: every member of A is B, so one query of A is
    inner x outer requests at B's members' address (16 x 16 here, 64 x 64 in the
    report: 4,096)."""
    net, em, client = em_net(members=1)
    b, a = nested_profiles(16, 16)
    assert create(net, client, b).code == Code.CREATED
    assert create(net, client, a).code == Code.CREATED
    start = net.now
    assert call(net, client, Code.GET, "/e/A", query=["emt=non"]).code == Code.CONTENT
    assert requests_to(net, MEMBER, start) == 256


def test_a_query_over_the_request_budget_is_refused_before_anything_is_sent():
    net, em, client = em_net(members=1, em_params=bounded(max_requests_per_query=256))
    b, a = nested_profiles(64, 1)
    assert create(net, client, b).code == Code.CREATED
    assert create(net, client, a).code == Code.CREATED  # 64 requests: within the budget
    # B grows after A was made: the query of A is priced when it comes.
    a64 = {"er": [f"coap://[{EM_HOST}]/e/B?y={i}" for i in range(64)]}
    refused = call(net, client, Code.PUT, "/e/A", json.dumps(a64).encode(), ct=50)
    assert refused.code == Code.FORBIDDEN
    assert b"more than 256 requests to members" in refused.payload
    # Nested under a third entity, the same fan-out is caught at query time.
    b4 = {"er": [f"coap://[{MEMBER}]/s/t?n={i}" for i in range(4)]}
    assert call(net, client, Code.PUT, "/e/B", json.dumps(b4).encode(), ct=50).code == Code.CHANGED
    a64_ok = call(net, client, Code.PUT, "/e/A", json.dumps(a64).encode(), ct=50)
    assert a64_ok.code == Code.CHANGED  # 64 x 4 = 256 requests: at the budget
    b64 = {"er": b["er"]}
    assert call(net, client, Code.PUT, "/e/B", json.dumps(b64).encode(), ct=50).code == Code.CHANGED
    start = net.now
    refused = call(net, client, Code.GET, "/e/A")
    assert refused.code == Code.FORBIDDEN and b"a query of 'A'" in refused.payload
    assert requests_to(net, MEMBER, start) == 0
    # B alone is still fine to ask.
    assert call(net, client, Code.GET, "/e/B", query=["emt=non"]).code == Code.CONTENT


def test_nesting_deeper_than_the_limit_is_refused():
    net, em, client = em_net(members=1, em_params=bounded(max_nesting_depth=3))
    assert (
        create(net, client, {"name": "L1", "er": [f"coap://[{MEMBER}]/s/t"]}).code == Code.CREATED
    )
    for level in (2, 3):
        inner = {"name": f"L{level}", "er": [f"coap://[{EM_HOST}]/e/L{level - 1}"]}
        assert create(net, client, inner).code == Code.CREATED
    too_deep = create(net, client, {"name": "L4", "er": [f"coap://[{EM_HOST}]/e/L3"]})
    assert too_deep.code == Code.FORBIDDEN
    assert b"more than 3 levels of nested entities" in too_deep.payload
    assert call(net, client, Code.GET, "/e/L3").code == Code.CONTENT


def test_large_member_requests_are_bounded_in_bytes_not_only_in_members():
    """One flat query to 64 members with 870-byte paths: within the member limit,
    but 64 x ~890 bytes x 5 transmissions for CON. The byte budget refuses it;
    NON requests (one transmission each) fit."""
    long_path = "/".join(["p" * 200] * 4) + "/" + "q" * 66  # 870 bytes
    members = [f"coap://[{MEMBER}]/{long_path}?n={i}" for i in range(64)]
    net, em, client = em_net(members=1, em_params=bounded(max_bytes_per_query=65_536))
    refused = create(net, client, {"name": "big", "er": members})  # emt con by default
    assert refused.code == Code.FORBIDDEN and b"bytes of requests" in refused.payload
    assert create(net, client, {"name": "big", "er": members, "emt": "non"}).code == Code.CREATED
    start = net.now
    refused = call(net, client, Code.GET, "/e/big", query=["emt=con"])
    assert refused.code == Code.FORBIDDEN and requests_to(net, MEMBER, start) == 0
    call(net, client, Code.GET, "/e/big")
    sent = [d for t, d in net.sent_to(MEMBER) if t >= start]
    assert len(sent) == 64 and sum(map(len, sent)) <= 65_536


def test_the_price_of_a_member_request_is_the_request_the_endpoint_sends():
    """member_request_bytes agrees with the bytes the EM's endpoint puts on the wire
    (one transmission; a CON request may be sent 1 + MAX_RETRANSMIT times)."""
    coap = CoapParams(block_size_bytes=64)
    member = parse_member("coap://[fd00::2]/a/bb/ccc?x=1&yy=2", 0)
    endpoint = CoapEndpoint(random.Random(3), coap)
    endpoint.request(0.0, ("fd00::2", 5683), Code.GET, list(member.path), query=["x=1", "yy=2"])
    ((wire, _),) = endpoint.datagrams_to_send()
    assert member_request_bytes(member, False, coap) == len(wire)
    assert member_request_bytes(member, True, coap) == len(wire) * (1 + coap.max_retransmit)


def test_pricing_stops_at_the_budget_and_cuts_loops():
    member = parse_member("coap://[fd00::2]/s", 0)

    inner = Profile((member,) * 3, emt="non")
    outer_members = tuple(parse_member(f"coap://[fd00::1]/e/I?k={k}", k) for k in range(50))
    outer = Profile(outer_members, emt="non")
    nested = lambda m: inner if m.host == "fd00::1" else None  # noqa: E731
    full = query_cost(outer, nested, CoapParams())
    assert (full.requests, full.depth) == (150, 2)
    stopped = query_cost(outer, nested, CoapParams(), stop_at=Cost(10, 1 << 40, 9))
    assert 10 < stopped.requests < 150  # a lower bound, enough to refuse
    # A profile that names itself (creation refuses it) is priced without following it.
    selfish = Profile((member, outer_members[0]), emt="non")
    cost = query_cost(selfish, lambda m: selfish if m.host == "fd00::1" else None, CoapParams())
    assert (cost.requests, cost.depth) == (1, 1)


# ---- item 2: ownership, per-client and global caps ----------------------------------------


def test_only_the_creator_changes_or_deletes_an_entity():
    net, em, alice = em_net()
    mallory = client_at(net, "fd02::9", 9)
    assert create(net, alice, {"name": "t", "er": [f"coap://[{MEMBER}]/s/t"]}).code == Code.CREATED
    put = call(net, mallory, Code.PUT, "/e/t", b'{"delay": 5}', ct=50)
    assert put.code == Code.FORBIDDEN and b"belongs to the client that created it" in put.payload
    assert b"[fd01::2]:5683" in put.payload
    assert call(net, mallory, Code.DELETE, "/e/t").code == Code.FORBIDDEN
    assert call(net, mallory, Code.GET, "/e/t").code == Code.CONTENT  # others may query
    assert call(net, mallory, Code.GET, "/e/t/profile").code == Code.CONTENT
    assert call(net, alice, Code.PUT, "/e/t", b'{"delay": 5}', ct=50).code == Code.CHANGED
    assert call(net, alice, Code.DELETE, "/e/t").code == Code.DELETED


def test_an_operator_may_share_every_entity():
    net, em, alice = em_net(em_params=bounded(shared_entities=True))
    bob = client_at(net, "fd02::9", 9)
    assert create(net, alice, {"name": "t", "er": [f"coap://[{MEMBER}]/s/t"]}).code == Code.CREATED
    assert call(net, bob, Code.DELETE, "/e/t").code == Code.DELETED


def test_an_authenticated_identity_owns_what_it_creates_from_any_address():
    net, em, alice = em_net()
    other_address = client_at(net, "fd02::9", 9)
    em.identity_of = lambda addr: "alice" if addr[0] in ("fd01::2", "fd02::9") else None
    assert create(net, alice, {"name": "t", "er": [f"coap://[{MEMBER}]/s/t"]}).code == Code.CREATED
    assert call(net, other_address, Code.DELETE, "/e/t").code == Code.DELETED


def test_eight_addresses_no_longer_lock_everyone_out():
    """The attack as found: 8 addresses x 8 entities filled a 64-entity table. With
    the real server's defaults (256 entities, 8 per client) they hold 64, and a
    ninth client still creates; what the global cap does when reached is shown
    with a small table."""
    real = REAL_MODE_PARAMS
    params = bounded(
        max_entities=real.max_entities,
        max_entities_per_client=real.max_entities_per_client,
        client_prefix_v6=real.client_prefix_v6,
    )
    net, em, _ = em_net(members=1, em_params=params)
    attackers = [client_at(net, f"fd02:0:0:{k}::1", 10 + k) for k in range(8)]
    member = [f"coap://[{MEMBER}]/s/t"]
    for k, attacker in enumerate(attackers):
        codes = [create(net, attacker, {"name": f"a{k}x{i}", "er": member}).code for i in range(9)]
        assert codes == [Code.CREATED] * 8 + [Code.SERVICE_UNAVAILABLE]
    newcomer = client_at(net, "fd03::1", 30)
    assert create(net, newcomer, {"name": "mine", "er": member}).code == Code.CREATED
    # A full table refuses newcomers with 5.03 and keeps serving what it holds.
    net, em, _ = em_net(members=1, em_params=bounded(max_entities=2))
    a, b = client_at(net, "fd02::1", 40), client_at(net, "fd03::1", 41)
    assert create(net, a, {"name": "a", "er": member}).code == Code.CREATED
    assert create(net, a, {"name": "b", "er": member}).code == Code.CREATED
    full = create(net, b, {"name": "c", "er": member})
    assert full.code == Code.SERVICE_UNAVAILABLE and b"at most 2 entities" in full.payload
    assert call(net, b, Code.GET, "/e/a").code == Code.CONTENT


def test_addresses_of_one_ipv6_network_are_one_client():
    params = bounded(max_entities_per_client=2, client_prefix_v6=64)
    net, em, _ = em_net(members=1, em_params=params)
    member = [f"coap://[{MEMBER}]/s/t"]
    hosts = ["fd02::1", "fd02::2", "fd02::3"]  # one /64
    codes = [
        create(net, client_at(net, h, 50 + i), {"name": f"n{i}", "er": member}).code
        for i, h in enumerate(hosts)
    ]
    assert codes == [Code.CREATED, Code.CREATED, Code.SERVICE_UNAVAILABLE]


def test_queries_in_progress_are_capped_for_everyone_together():
    params = bounded(max_queries=2, max_queries_per_client=4)
    net, em, _ = em_net(members=1, em_params=params)
    slow = {"name": "slow", "er": ["coap://[fd00::99]/s/t"], "emt": "non"}  # never answers
    owner = client_at(net, "fd02::1", 60)
    assert create(net, owner, slow).code == Code.CREATED
    clients = [client_at(net, f"fd0{3 + k}::1", 61 + k) for k in range(3)]
    rids = [c.request(net.now, (EM_HOST, 5683), Code.GET, "/e/slow") for c in clients]
    net.run(net.now + 3)  # the first two are in progress; the third is refused at once
    third = [e for e in clients[2].events() if getattr(e, "request_id", None) == rids[2]]
    assert third and third[0].response.code == Code.SERVICE_UNAVAILABLE
    assert b"64" not in third[0].response.payload and b"2 queries" in third[0].response.payload


# ---- the pieces ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "prefix", "client"),
    [
        (("fd02::1:2:3:4", 5683), 64, "fd02::/64"),
        (("fd02::1:2:3:4", 5683), 128, "fd02::1:2:3:4"),
        (("::ffff:192.0.2.7", 5683, 0, 0), 64, "192.0.2.7"),
        (("192.0.2.7", 40000), 64, "192.0.2.7"),
    ],
)
def test_a_client_is_an_ipv4_address_or_an_ipv6_network(source, prefix, client):
    assert client_of(source, prefix) == client


def test_an_owner_is_an_identity_or_an_address_and_port():
    assert owner_of(("fd02::1", 40000), None) == "[fd02::1]:40000"
    assert owner_of(("192.0.2.7", 40000), None) == "192.0.2.7:40000"
    assert owner_of(("fd02::1", 40000), "admin") == "identity admin"


def test_another_server_on_the_ems_host_is_a_member_not_a_nested_entity():
    """A member at the EM's address on another port (e.g. a second EM) goes over the
    network; only the EM's own port names its entities."""
    net, em, client = em_net(members=1)
    assert create(net, client, {"name": "B", "er": [f"coap://[{MEMBER}]/s/t"]}).code == Code.CREATED
    other = {"name": "A", "er": [f"coap://[{EM_HOST}]:5690/e/B"]}
    assert create(net, client, other).code == Code.CREATED
    start = net.now
    call(net, client, Code.GET, "/e/A", query=["emt=non"])
    assert [dst for t, _, dst, _ in net.log if t >= start and dst[1] == 5690] == [(EM_HOST, 5690)]


def test_the_simulators_em_sets_no_client_limits():
    """The simulated EM's clients are the scenario's: EmParams' defaults bound
    nothing a client does (real mode sets REAL_MODE_PARAMS), and entities belong to
    their creators everywhere."""
    p = EmParams()
    assert (p.max_queries, p.max_requests_per_query, p.max_bytes_per_query) == (None,) * 3
    assert p.max_nesting_depth is None and p.allowed_members is None
    assert not p.shared_entities
    assert REAL_MODE_PARAMS.max_requests_per_query == 256
    with pytest.raises(ValueError, match="max_queries"):
        EmParams(max_queries=0)
    with pytest.raises(ValueError, match="client_prefix_v6"):
        EmParams(client_prefix_v6=129)
