"""MqttBroker with a password file and an ACL file: what each client sees on the wire."""

from __future__ import annotations

from mqtt_harness import broker

from iotbench.proto.mqtt.acl import Acl
from iotbench.proto.mqtt.auth import Passwords
from iotbench.proto.mqtt.broker import MqttBroker
from iotbench.proto.mqtt.codec import (
    ConnAck,
    Connect,
    Disconnect,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    SubAck,
    Subscribe,
    Will,
    decode,
    encode,
    split_packets,
)
from iotbench.proto.mqtt.events import ClientDisconnected
from mqtt_security_example import ACL
from mqtt_security_example import LOGINS as EXAMPLE_LOGINS

PASSWORDS = """\
# plain text for bob, mosquitto_passwd's $7$ for alice (password "secret")
bob:hunter2
alice:$7$101$N7X7tXwwZTe0E/vf$b7NRPkCkmA7zvhj9hlSzn6tUaKdkUmjMKLWLVvrhj662GyetmeaWq9XxD/eC3A/91PVou/nXvRmuVyvNoF/aVA==
admin:root
"""

LOGINS = {user: password.encode() for user, password in EXAMPLE_LOGINS.items()}


def secured(**params) -> MqttBroker:
    params.setdefault("users", Passwords.parse(PASSWORDS, "passwd"))
    params.setdefault("acl", Acl.parse(ACL, "acl"))
    return broker(**params)


def drain(b: MqttBroker) -> dict[str, list]:
    """Every packet the broker wrote since the last call, per connection."""
    out: dict[str, list] = {}
    for conn, data in b.data_to_send():
        out.setdefault(conn, []).extend(decode(p) for p in split_packets(data))
    return out


def send(b: MqttBroker, conn: str, *packets) -> dict[str, list]:
    b.receive_data(0.0, conn, b"".join(encode(p) for p in packets))
    return drain(b)


def login(b: MqttBroker, user: str | None, client_id: str | None = None, **connect) -> str:
    """Connect `client_id` (default: the user name) as `user`; the connection is the id."""
    client_id = client_id or user or "anon"
    b.connection_made(0.0, client_id)
    password = LOGINS.get(user) if user else None
    connect = Connect(client_id, username=user, password=password, **connect)
    assert send(b, client_id, connect) == {client_id: [ConnAck(False, 0)]}
    return client_id


# ---- authentication -----------------------------------------------------------------


def test_refusals_are_connack_4_or_5_then_close():
    b = secured()
    cases = [
        ("wrong", Connect("c1", username="alice", password=b"guess"), 4),
        ("unknown", Connect("c2", username="mallory", password=b"secret"), 4),
        ("nopass", Connect("c3", username="bob"), 4),
        ("anon", Connect("c4"), 5),
    ]
    for conn, connect, code in cases:
        b.connection_made(0.0, conn)
        assert b.receive_data(0.0, conn, encode(connect)) is None
        (data,) = [d for c, d in b.data_to_send() if c == conn]
        assert data == bytes([0x20, 0x02, 0x00, code])  # 3.2: no session, return code
        assert b.connections_to_close() == [conn]
    reasons = [(e.reason, e.detail) for e in b.events() if isinstance(e, ClientDisconnected)]
    assert reasons == [("refused", "bad user name or password")] * 3 + [("refused", "no user name")]
    assert b.sessions == {} and b.stats.refused == 4


def test_good_credentials_plain_and_hashed():
    b = secured()
    login(b, "bob")
    login(b, "alice")
    assert b.sessions == {"bob": True, "alice": True}


def test_allow_anonymous_with_a_password_file():
    b = secured(allow_anonymous=True)
    login(b, None)
    b.connection_made(0.0, "x")  # credentials that are given are still checked
    assert send(b, "x", Connect("x", username="alice", password=b"no")) == {
        "x": [ConnAck(False, 4)]
    }


def test_without_a_password_file_anyone_connects():
    b = broker(acl=Acl.parse(ACL))
    login(b, None)
    login(b, "whoever")


# ---- subscribing --------------------------------------------------------------------


def test_suback_0x80_for_each_filter_not_readable():
    b = secured()
    c = login(b, "alice")
    request = Subscribe(7, (("sensors/#", 1), ("sensors/secret", 2), ("public/#", 0), ("x", 2)))
    assert send(b, c, request) == {c: [SubAck(7, (1, 0x80, 0x80, 0x80))]}
    assert b.subscriptions("alice") == {"sensors/#": 1}
    assert b.stats.denied_subscriptions == 3


def test_bob_may_subscribe_only_within_his_read_entry():
    b = secured()
    c = login(b, "bob")
    request = Subscribe(1, (("sensors/+/temperature", 2), ("sensors/#", 2), ("public/#", 1)))
    assert send(b, c, request) == {c: [SubAck(1, (2, 0x80, 0x80))]}  # public/#: write only


# ---- publishing ---------------------------------------------------------------------


def test_denied_publish_completes_its_flow_and_goes_nowhere():
    b = secured()
    admin = login(b, "admin")
    send(b, admin, Subscribe(1, (("#", 2),)))
    bob = login(b, "bob")
    out = send(
        b,
        bob,
        Publish("sensors/k/temperature", b"0", 0),
        Publish("sensors/k/temperature", b"1", 1, packet_id=11),
        Publish("sensors/k/temperature", b"2", 2, packet_id=12),
    )
    assert out == {bob: [PubAck(11), PubRec(12)]}  # nothing for admin
    assert send(b, bob, PubRel(12)) == {bob: [PubComp(12)]}
    assert b.stats.denied_publishes == 3
    out = send(b, bob, Publish("public/news", b"ok", 0))
    assert [p.topic for p in out[admin]] == ["public/news"]


def test_delivery_checks_read_access_per_message():
    b = secured()
    alice = login(b, "alice")
    send(b, alice, Subscribe(1, (("sensors/#", 0),)))  # granted: the deny is narrower
    admin = login(b, "admin")
    out = send(b, admin, Publish("sensors/secret", b"s", 0), Publish("sensors/t1", b"t", 0))
    assert [(p.topic, p.payload) for p in out[alice]] == [("sensors/t1", b"t")]
    assert b.stats.denied_deliveries == 1


def test_retained_messages_follow_the_read_check():
    b = secured()
    admin = login(b, "admin")
    send(
        b,
        admin,
        Publish("sensors/secret", b"s", 0, retain=True),
        Publish("sensors/open", b"o", 0, retain=True),
    )
    alice = login(b, "alice")
    out = send(b, alice, Subscribe(3, (("sensors/#", 1),)))
    assert out[alice][0] == SubAck(3, (1,))
    assert [(p.topic, p.retain) for p in out[alice][1:]] == [("sensors/open", True)]


def test_patterns_with_client_id_and_user_name():
    b = secured(allow_anonymous=True)
    bob = login(b, "bob", client_id="dev7")
    out = send(b, bob, Subscribe(1, (("devices/dev7/#", 1), ("users/bob/inbox", 1))))
    assert out[bob] == [SubAck(1, (1, 1))]
    out = send(b, bob, Subscribe(2, (("devices/dev8/#", 1), ("users/alice/inbox", 1))))
    assert out[bob] == [SubAck(2, (0x80, 0x80))]
    anon = login(b, None, client_id="dev8")  # %c applies to anonymous clients, %u does not
    out = send(b, anon, Subscribe(1, (("devices/dev8/cmd", 0), ("users/None/inbox", 0))))
    assert out[anon] == [SubAck(1, (0, 0x80))]
    out = send(b, anon, Publish("devices/dev7/cmd", b"x", 0))
    assert out == {} and b.stats.denied_publishes == 1  # dev8 may not write under dev7
    out = send(b, bob, Publish("devices/dev7/up", b"z", 0))  # its own device: allowed
    assert [p.topic for p in out[bob]] == ["devices/dev7/up"]


def test_anonymous_section():
    b = secured(allow_anonymous=True)
    anon = login(b, None)
    out = send(b, anon, Subscribe(1, (("public/#", 0), ("sensors/#", 0))))
    assert out[anon] == [SubAck(1, (0, 0x80))]
    bob = login(b, "bob")
    out = send(b, bob, Publish("public/news", b"hi", 0))
    assert [(p.topic, p.payload) for p in out[anon]] == [("public/news", b"hi")]
    out = send(b, anon, Publish("public/news", b"me", 0))
    assert out == {} and b.stats.denied_publishes == 1  # anonymous clients only read


# ---- wills and sessions -------------------------------------------------------------


def test_will_is_published_only_to_a_writable_topic():
    b = secured()
    admin = login(b, "admin")
    send(b, admin, Subscribe(1, (("#", 0),)))
    login(b, "bob", will=Will("public/bob", b"gone", 0, False))
    login(b, "alice", will=Will("public/alice", b"gone", 0, False))
    b.connection_lost(1.0, "bob")
    b.connection_lost(1.0, "alice")  # alice may not write public/
    assert [p.topic for p in drain(b)[admin]] == ["public/bob"]
    assert b.stats.wills_published == 1 and b.stats.denied_wills == 1


def test_a_session_taken_up_by_another_user_loses_what_it_may_not_read():
    b = secured()
    alice = login(b, "alice", client_id="shared", clean_session=False)
    send(b, alice, Subscribe(1, (("sensors/#", 1),)), Disconnect())
    admin = login(b, "admin")
    send(b, admin, Publish("sensors/a/temperature", b"t", 1, packet_id=1))
    send(b, admin, Publish("sensors/other", b"o", 1, packet_id=2))
    assert b.queued("shared") == 2
    b.connection_made(0.0, "bob-conn")
    connect = Connect("shared", clean_session=False, username="bob", password=b"hunter2")
    out = send(b, "bob-conn", connect)
    assert out["bob-conn"][0] == ConnAck(True, 0)
    assert [p.topic for p in out["bob-conn"][1:]] == ["sensors/a/temperature"]


def test_no_acl_no_password_file_changes_nothing():
    b = broker()
    anon = login(b, None)
    out = send(b, anon, Subscribe(1, (("#", 2), ("$SYS/#", 2))))
    assert out[anon] == [SubAck(1, (2, 2))]
