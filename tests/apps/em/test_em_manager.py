"""The Entity Manager end to end on a fake network: create, query, update, delete,
multicast groups, nesting, and every error a client can provoke."""

from __future__ import annotations

import json

import pytest
from em_net import EM_HOST, PORT, em_net

from iotbench.apps.em.manager import EmParams, QueryAnswered
from iotbench.proto.coap.codec import Code, decode
from iotbench.proto.coap.endpoint import ResponseReceived
from iotbench.proto.coap.options import Opt

EM = (EM_HOST, PORT)
M = [f"coap://[fd00::{i}]/s/t" for i in range(2, 6)]


def call(net, client, code, path, payload=b"", query=(), ct=None, accept=None, until=None):
    options = []
    if ct is not None:
        options.append((Opt.CONTENT_FORMAT, ct))
    if accept is not None:
        options.append((Opt.ACCEPT, accept))
    start = net.now
    rid = client.request(
        net.now, EM, code, path, payload=payload, query=list(query), options=options
    )
    net.run(until if until is not None else start + 200)
    (ev,) = [e for e in client.events() if getattr(e, "request_id", None) == rid]
    assert isinstance(ev, ResponseReceived), ev
    return ev.response


def create(net, client, profile):
    return call(net, client, Code.POST, "/e", json.dumps(profile).encode(), ct=50)


def test_create_query_update_delete_a_unicast_entity():
    net, em, client = em_net()
    resp = create(net, client, {"name": "temps", "er": M[:3]})
    assert resp.code == Code.CREATED
    assert resp.get_options(Opt.LOCATION_PATH) == [b"e", b"temps"]
    assert json.loads(resp.payload)["er"] == M[:3]
    resp = call(net, client, Code.GET, "/e/temps")
    assert resp.code == Code.CONTENT
    assert resp.payload.decode() == f"{M[0]} 20\n{M[1]} 21\n{M[2]} 22\n"
    assert call(net, client, Code.GET, "/e/temps", query=["eo=avg"]).payload == b"21\n"
    assert call(net, client, Code.GET, "/e/temps", query=["eo=max"]).payload == b"22\n"
    one = call(net, client, Code.GET, "/e/temps", query=["enr=1"])
    assert one.payload.decode() == f"{M[0]} 20\n"  # anycast: the first answer, others cancelled
    resp = call(net, client, Code.PUT, "/e/temps", b'{"eo": "min"}', ct=50)
    assert resp.code == Code.CHANGED and json.loads(resp.payload)["eo"] == ["min"]
    assert call(net, client, Code.GET, "/e/temps").payload == b"20\n"
    profile = call(net, client, Code.GET, "/e/temps/profile")
    assert json.loads(profile.payload)["eo"] == ["min"]
    # An operation the entity does not offer (its eo) is refused.
    refused = call(net, client, Code.GET, "/e/temps", query=["eo=avg"])
    assert refused.code == Code.BAD_REQUEST and b"offers min" in refused.payload
    listing = call(net, client, Code.GET, "/e")
    assert listing.payload == b'</e/temps>;ect="unicast"'
    assert call(net, client, Code.DELETE, "/e/temps").code == Code.DELETED
    assert call(net, client, Code.GET, "/e/temps").code == Code.NOT_FOUND
    assert call(net, client, Code.GET, "/e").payload == b""


def test_requests_to_members_are_delay_apart_and_the_answer_is_separate():
    net, em, client = em_net()
    create(net, client, {"name": "t", "er": M[:3], "delay": 200})
    t0 = net.now
    resp = call(net, client, Code.GET, "/e/t")
    sent = [t for host in ("fd00::2", "fd00::3", "fd00::4") for t, _ in net.sent_to(host)[-1:]]
    assert [round(t - sent[0], 6) for t in sent] == [0.0, 0.2, 0.4]
    assert sent[0] == pytest.approx(t0 + 0.01)
    assert resp.type.name == "CON"  # after an empty ACK: a separate response
    (ev,) = [e for e in em.events() if e.name == "t"]
    assert isinstance(ev, QueryAnswered) and (ev.members, ev.values) == (3, 3)
    assert ev.answered - ev.started == pytest.approx(0.4 + 0.02)


def test_a_member_that_never_answers_is_listed_and_the_rest_are_returned():
    net, em, client = em_net()
    create(net, client, {"name": "t", "er": [M[0], "coap://[fd00::99]/s/t"]})
    resp = call(net, client, Code.GET, "/e/t", until=net.now + 300)
    assert resp.code == Code.CONTENT
    assert resp.payload.decode() == f"{M[0]} 20\ncoap://[fd00::99]/s/t error: no response\n"
    create(net, client, {"name": "dead", "er": ["coap://[fd00::98]/s/t"], "emt": "non"})
    assert call(net, client, Code.GET, "/e/dead", until=net.now + 300).code == Code.GATEWAY_TIMEOUT


def test_senml_answers():
    net, em, client = em_net()
    create(net, client, {"name": "t", "er": M[:2], "eo": "avg"})
    resp = call(net, client, Code.GET, "/e/t", accept=110)
    assert resp.content_format == 110
    assert json.loads(resp.payload) == [{"n": "avg", "v": 20.5}]
    assert call(net, client, Code.GET, "/e/t", accept=41).code == Code.NOT_ACCEPTABLE


@pytest.mark.parametrize(
    ("payload", "ct", "code", "words"),
    [
        (b"{", 50, Code.BAD_REQUEST, "not valid JSON"),
        (b'{"er": []}', 50, Code.BAD_REQUEST, "er must be a non-empty list"),
        (
            b'{"er": ["coap://[fd00::2]/s/t"]}',
            0,
            Code.UNSUPPORTED_CONTENT_FORMAT,
            "application/json",
        ),
        (b'{"er": ["coap://[fd00::2]/s/t"], "enr": 5}', 50, Code.BAD_REQUEST, "enr must be"),
    ],
)
def test_malformed_profiles_get_clear_errors(payload, ct, code, words):
    net, em, client = em_net()
    resp = call(net, client, Code.POST, "/e", payload, ct=ct)
    assert resp.code == code and words in resp.payload.decode()


def test_names_limits_and_unknown_entities():
    net, em, client = em_net(em_params=EmParams(max_entities=2, local_hosts=(EM_HOST,)))
    assert create(net, client, {"er": M[:1]}).get_options(Opt.LOCATION_PATH) == [b"e", b"e1"]
    resp = create(net, client, {"name": "e1", "er": M[:1]})
    assert resp.code == Code.CONFLICT and "exists" in resp.payload.decode()
    assert create(net, client, {"er": M[:1]}).code == Code.CREATED
    resp = create(net, client, {"er": M[:1]})
    assert resp.code == Code.SERVICE_UNAVAILABLE and "at most 2 entities" in resp.payload.decode()
    resp = call(net, client, Code.GET, "/e/nope")
    assert resp.code == Code.NOT_FOUND
    resp = call(net, client, Code.GET, "/e/e1", query=["ect=multicast"])
    assert resp.code == Code.BAD_REQUEST and "may override" in resp.payload.decode()
    assert call(net, client, Code.DELETE, "/e").code == Code.METHOD_NOT_ALLOWED


def test_a_multicast_entity_joins_queries_the_group_and_leaves():
    net, em, client = em_net(members=4, leisure_s=2.0)
    resp = create(net, client, {"name": "g", "er": M, "ect": "multicast"})
    assert resp.code == Code.CREATED
    profile = json.loads(resp.payload)
    assert profile["mcstURI"] == "coap://[ff1e::89:1]/s/t" and profile["emt"] == "non"
    assert net.groups["ff1e::89:1"] == {"fd00::2", "fd00::3", "fd00::4", "fd00::5"}
    t0 = net.now
    resp = call(net, client, Code.GET, "/e/g")
    lines = sorted(resp.payload.decode().splitlines())
    assert lines == sorted(f"{m} {20 + i}" for i, m in enumerate(M))
    # one request to the group, answered as soon as all four replied (within the leisure)
    to_group = [t for t, _ in net.sent_to("ff1e::89:1") if t >= t0]
    assert len(to_group) == 1
    (ev,) = [e for e in em.events() if e.name == "g"]
    assert ev.answered - ev.started <= 2.0 + 0.02
    assert call(net, client, Code.DELETE, "/e/g").code == Code.DELETED
    assert net.groups["ff1e::89:1"] == set()
    resp = create(net, client, {"name": "h", "er": M[:2], "ect": "multicast"})
    assert json.loads(resp.payload)["mcstURI"] == "coap://[ff1e::89:2]/s/t"  # not reused yet


def test_a_multicast_query_lists_members_that_did_not_answer():
    net, em, client = em_net(members=2, leisure_s=1.0)
    create(net, client, {"name": "g", "er": M[:2], "ect": "multicast"})
    net.groups["ff1e::89:1"].discard("fd00::3")  # it left behind the EM's back
    resp = call(net, client, Code.GET, "/e/g")
    assert resp.payload.decode() == f"{M[0]} 20\n{M[1]} error: no response\n"
    (ev,) = [e for e in em.events() if e.name == "g"]
    assert ev.answered - ev.started == pytest.approx(1.0 + 1.0, abs=0.03)  # leisure + margin


def test_a_failed_join_leaves_nobody_in_the_group():
    net, em, client = em_net(members=2)
    resp = create(
        net, client, {"name": "g", "er": [M[0], "coap://[fd00::77]/s/t"], "ect": "multicast"}
    )
    assert resp.code == Code.GATEWAY_TIMEOUT
    text = resp.payload.decode()
    assert "not every member joined ff1e::89:1" in text and "fd00::77" in text
    assert net.groups["ff1e::89:1"] == set() and em.pool.in_use == 0
    assert call(net, client, Code.GET, "/e/g").code == Code.NOT_FOUND


def test_multicast_members_must_share_a_path():
    net, em, client = em_net()
    resp = create(net, client, {"er": [M[0], "coap://[fd00::3]/s/h"], "ect": "multicast"})
    assert resp.code == Code.BAD_REQUEST and "share one path" in resp.payload.decode()


def test_nested_entities_and_loops():
    net, em, client = em_net(members=4)
    create(net, client, {"name": "a", "er": M[:2]})
    create(net, client, {"name": "b", "er": M[2:]})
    resp = create(
        net,
        client,
        {
            "name": "all",
            "er": [f"coap://[{EM_HOST}]/e/a", f"coap://[{EM_HOST}]/e/b"],
            "eo": ["avg", "lst"],
        },
    )
    assert resp.code == Code.CREATED
    assert call(net, client, Code.GET, "/e/all").payload == b"21.5\n"
    lst = call(net, client, Code.GET, "/e/all", query=["eo=lst"]).payload.decode()
    assert lst == "".join(f"{m} {20 + i}\n" for i, m in enumerate(M))
    resp = call(
        net,
        client,
        Code.PUT,
        "/e/a",
        json.dumps({"er": [f"coap://[{EM_HOST}]/e/all"]}).encode(),
        ct=50,
    )
    assert resp.code == Code.BAD_REQUEST
    assert "would contain itself: a -> all -> a" in resp.payload.decode()


def test_a_nested_query_stops_its_inner_queries_when_the_outer_one_ends():
    """Anycast over two nested entities: the first inner answer ends the outer query,
    and the other inner query, whose answer could no longer be used, is stopped: its
    members not yet asked are never asked (a 1 s delay between them)."""
    net, em, client = em_net(members=4)
    create(net, client, {"name": "a", "er": M[:2], "delay": 1000})
    create(net, client, {"name": "b", "er": M[2:], "delay": 1000})
    outer = [f"coap://[{EM_HOST}]/e/a", f"coap://[{EM_HOST}]/e/b"]
    create(net, client, {"name": "all", "er": outer, "enr": 1})
    resp = call(net, client, Code.GET, "/e/all")
    assert resp.code == Code.CONTENT
    assert not em._by_request  # no member request of either inner query still open
    answered = [e for e in em.events() if isinstance(e, QueryAnswered)]
    # The outer query and the inner one that answered; the stopped one never does.
    assert [e.name for e in answered][-2:] == ["a", "all"]


def test_the_em_survives_garbage_and_keeps_serving():
    net, em, client = em_net()
    for junk in (b"", b"\x40", b"\xff" * 30, bytes(range(64))):
        em.receive(net.now, junk, ("fd00::66", 1234))
    assert em.endpoint.stats.internal_errors == 0
    create(net, client, {"name": "t", "er": M[:1]})
    assert call(net, client, Code.GET, "/e/t").code == Code.CONTENT
    for data, _ in em.datagrams_to_send():
        decode(data)


def test_members_outside_the_allowed_networks_are_refused():
    """Not a reflector: an EM that may ask only fd00::/125 refuses a member beyond it
    (4.03, at creation and on update), and its own entities stay allowed."""
    params = EmParams(local_hosts=(EM_HOST,), allowed_members=("fd00::/125",))
    net, _em, client = em_net(members=4, em_params=params)
    assert create(net, client, {"name": "in", "er": M[:2]}).code == Code.CREATED
    outside = "coap://[2001:db8::7]/s/t"
    resp = create(net, client, {"name": "out", "er": [M[0], outside]})
    assert resp.code == Code.FORBIDDEN
    assert outside in resp.payload.decode() and "fd00::/125" in resp.payload.decode()
    resp = call(net, client, Code.PUT, "/e/in", json.dumps({"er": [outside]}).encode(), ct=50)
    assert resp.code == Code.FORBIDDEN
    nested = {"name": "all", "er": [f"coap://[{EM_HOST}]/e/in"]}
    assert create(net, client, nested).code == Code.CREATED
    with pytest.raises(ValueError, match="not a network"):
        EmParams(allowed_members=("fd00::/200",))


def test_one_client_may_create_and_query_only_so_much():
    """5.03 with Max-Age beyond a client's entities, and beyond its queries in
    progress; a query that ends frees its place."""
    params = EmParams(local_hosts=(EM_HOST,), max_entities_per_client=2, max_queries_per_client=1)
    net, _em, client = em_net(members=3, em_params=params)
    # "a" takes 6 s: three members 3 s apart.
    assert create(net, client, {"name": "a", "er": M[:3], "delay": 3000}).code == Code.CREATED
    assert create(net, client, {"name": "b", "er": M[:1]}).code == Code.CREATED
    resp = create(net, client, {"name": "c", "er": M[:1]})
    assert resp.code == Code.SERVICE_UNAVAILABLE and resp.get_uint(Opt.MAX_AGE) == 60
    call(net, client, Code.DELETE, "/e/b")
    assert create(net, client, {"name": "c", "er": M[:1]}).code == Code.CREATED
    # Two queries at once: the second is refused while the first is in progress.
    first = client.request(net.now, EM, Code.GET, "/e/a")
    second = client.request(net.now, EM, Code.GET, "/e/c")
    net.run(net.now + 20)
    answers = {e.request_id: e.response for e in client.events()}
    assert answers[first].code == Code.CONTENT
    assert answers[second].code == Code.SERVICE_UNAVAILABLE
    assert answers[second].get_uint(Opt.MAX_AGE) == 5
    assert call(net, client, Code.GET, "/e/c").code == Code.CONTENT
