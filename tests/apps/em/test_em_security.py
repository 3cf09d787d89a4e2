"""An Entity Manager behind DTLS or OSCORE: clients authenticated, members in the
clear, entity creation restricted to named identities."""

from __future__ import annotations

import random

from em_net import EM_HOST, em_net
from test_em_manager import EM, M, call, create

from iotbench.apps.em.manager import EmParams, EntityManager
from iotbench.proto.coap.codec import Code
from iotbench.proto.coap.endpoint import CoapEndpoint
from iotbench.proto.coap.params import CoapParams
from iotbench.proto.coap.secured import SecuredEndpoint
from iotbench.proto.dtls.layer import DtlsLayer
from iotbench.proto.dtls.params import PskClientCredentials, PskServerCredentials

KEYS = {b"admin": b"k1", b"viewer": b"k2"}


def test_only_named_identities_create_entities():
    params = EmParams(local_hosts=(EM_HOST,), allowed_creators=("admin",))
    net, em, client = em_net(em_params=params)
    who = {"identity": None}
    em.identity_of = lambda addr: who["identity"]
    resp = create(net, client, {"name": "t", "er": M[:1]})
    assert resp.code == Code.UNAUTHORIZED and b"authenticated" in resp.payload
    who["identity"] = "viewer"
    resp = create(net, client, {"name": "t", "er": M[:1]})
    assert resp.code == Code.FORBIDDEN and b"'viewer'" in resp.payload
    who["identity"] = "admin"
    assert create(net, client, {"name": "t", "er": M[:1]}).code == Code.CREATED
    # Reading, querying and the rest stay open to every client.
    who["identity"] = "viewer"
    assert call(net, client, Code.GET, "/e/t").code == Code.CONTENT


def dtls_em_net(identity: bytes, allowed=("admin",)):
    """em_net's network with the EM and the client behind DTLS; members plain."""
    net, plain_em, _ = em_net(em_params=EmParams(local_hosts=(EM_HOST,), allowed_creators=allowed))
    layer = DtlsLayer(
        random.Random(5),
        server=PskServerCredentials(KEYS),
        clear_to=lambda addr: em.is_member_address(addr),
    )
    em = EntityManager(
        SecuredEndpoint(CoapEndpoint(random.Random(1), CoapParams()), layer),
        plain_em.params,
        layer.peer_identity,
    )
    net.add(EM_HOST, em)
    client = SecuredEndpoint(
        CoapEndpoint(random.Random(2), CoapParams()),
        DtlsLayer(random.Random(6), client=PskClientCredentials(identity, KEYS[identity])),
    )
    net.add("fd01::2", client)
    return net, em, client


def test_a_dtls_em_asks_its_members_in_the_clear():
    net, em, client = dtls_em_net(b"admin")
    assert create(net, client, {"name": "t", "er": M[:2]}).code == Code.CREATED
    resp = call(net, client, Code.GET, "/e/t")
    assert resp.code == Code.CONTENT and b"20" in resp.payload and b"21" in resp.payload
    # Members got plain CoAP (version 1 in the first byte), the client only DTLS.
    to_members = [
        d for _, _, dst, d in net.log if dst[0].startswith("fd00::") and dst[0] != EM_HOST
    ]
    to_client = [d for _, _, dst, d in net.log if dst[0] == "fd01::2"]
    assert to_members and all(d[0] >> 6 == 1 for d in to_members)
    assert to_client and all(d[0] in (20, 21, 22, 23) for d in to_client)


def test_a_dtls_identity_not_named_may_read_but_not_create():
    net, em, client = dtls_em_net(b"viewer")
    resp = create(net, client, {"name": "t", "er": M[:1]})
    assert resp.code == Code.FORBIDDEN


def test_plain_coap_to_a_dtls_em_gets_nothing():
    net, em, _ = dtls_em_net(b"admin")
    plain = CoapEndpoint(random.Random(9), CoapParams())
    net.add("fd01::9", plain)
    request_id = plain.request(net.now, EM, Code.GET, "/e")
    net.run(net.now + 200)
    (failed,) = [e for e in plain.events() if getattr(e, "request_id", None) == request_id]
    assert failed.reason == "timeout" or failed.reason == "max-retransmit"


def test_an_oscore_em_names_its_clients_by_sender_id():
    from iotbench.proto.oscore.context import SecurityContext
    from iotbench.proto.oscore.layer import OscoreLayer

    secret, salt = bytes(range(16)), b"\x9e\x7c"
    net, plain_em, _ = em_net(em_params=EmParams(local_hosts=(EM_HOST,), allowed_creators=("0a",)))
    layer = OscoreLayer(random.Random(5))
    layer.add_context(SecurityContext(secret, b"\x00", b"\x0a", master_salt=salt))
    layer.add_context(SecurityContext(secret, b"\x01", b"\x0b", master_salt=salt))
    em = EntityManager(
        SecuredEndpoint(CoapEndpoint(random.Random(1), CoapParams()), layer),
        plain_em.params,
        layer.peer_identity,
    )
    net.add(EM_HOST, em)
    for host, sender, recipient in (("fd01::2", b"\x0a", b"\x00"), ("fd01::3", b"\x0b", b"\x01")):
        client_layer = OscoreLayer(random.Random(6))
        client_layer.add_peer(EM, SecurityContext(secret, sender, recipient, master_salt=salt))
        net.add(host, SecuredEndpoint(CoapEndpoint(random.Random(2), CoapParams()), client_layer))
    admin, other = net.stacks["fd01::2"], net.stacks["fd01::3"]
    assert create(net, other, {"name": "t", "er": M[:1]}).code == Code.FORBIDDEN
    assert create(net, admin, {"name": "t", "er": M[:1]}).code == Code.CREATED
    # The member answered in the clear; the client got the value through OSCORE.
    resp = call(net, other, Code.GET, "/e/t")
    assert resp.code == Code.CONTENT and b"20" in resp.payload
