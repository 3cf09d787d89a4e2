"""The DTLS 1.2 PSK handshake: flights, cookies, loss, fragmentation, failures, records."""

from __future__ import annotations

import random

import pytest
from dtls_harness import IDENTITY, KEY, Link, S, pair

from iotbench.proto.dtls import keys, messages
from iotbench.proto.dtls.connection import HandshakeDone, HandshakeFailed, SessionClosed
from iotbench.proto.dtls.layer import DtlsLayer
from iotbench.proto.dtls.messages import ClientHello, HelloVerifyRequest
from iotbench.proto.dtls.params import DtlsParams, PskServerCredentials
from iotbench.proto.dtls.record import plain_record, split_records


def handshake(link: Link, payload: bytes = b"GET /voltage") -> Link:
    link.client.outgoing(0.0, payload, S)
    link.run()
    return link


def message_types(datagram: bytes) -> list[int]:
    """Handshake types (or 20 for ChangeCipherSpec, -1 for protected) in a datagram."""
    out = []
    for header, record in split_records(datagram):
        if header.content_type == 22 and header.epoch == 0:
            out += [f.msg_type for f in messages.decode_fragments(record[13:])]
        else:
            out.append(header.content_type if header.epoch == 0 else -1)
    return out


# --------------------------------------------------------------------------- the key schedule


def test_prf_matches_the_tls12_sha256_test_vector():
    # The P_SHA256 vector checked against OpenSSL's TLS1-PRF (`openssl kdf`).
    out = keys.prf(
        bytes.fromhex("9bbe436ba940f017b17652849a71db35"),
        b"test label",
        bytes.fromhex("a0ba9f936cda311827a6f796ffd5198c"),
        100,
    )
    assert out.hex().startswith("e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a")
    assert out.hex().endswith("a48082d122ee42c5a72e5a5110fff70187347b66")


def test_psk_premaster_is_rfc4279_section_2():
    # N zero bytes between two copies of the length, then the key.
    assert keys.psk_premaster(b"abc") == b"\x00\x03\x00\x00\x00\x00\x03abc"


def test_key_block_layout_is_keys_then_ivs():
    block = keys.key_block(bytes(48), bytes(32), bytes(range(32)))
    whole = keys.prf(bytes(48), b"key expansion", bytes(range(32)) + bytes(32), 40)
    assert block["client_write_key"] == whole[:16]
    assert block["server_write_key"] == whole[16:32]
    assert block["client_write_iv"] + block["server_write_iv"] == whole[32:]


# --------------------------------------------------------------------------- messages


def test_client_hello_bytes_follow_rfc6347_4_2_1():
    hello = ClientHello(random=bytes(range(32)), cipher_suites=(0xC0A8, 0x00FF), cookie=b"\xaa")
    assert hello.encode() == (
        b"\xfe\xfd"  # DTLS 1.2
        + bytes(range(32))
        + b"\x00"  # session_id, empty
        + b"\x01\xaa"  # cookie
        + b"\x00\x04\xc0\xa8\x00\xff"  # cipher_suites
        + b"\x01\x00"  # compression: null
    )
    assert ClientHello.decode(hello.encode()) == hello


def test_handshake_header_and_hello_verify_request_bytes():
    body = HelloVerifyRequest(b"\x01\x02").encode()
    assert body == b"\xfe\xff\x02\x01\x02"  # DTLS 1.0 version in HVR, RFC 6347 4.2.1
    frag = messages.whole_message(messages.HELLO_VERIFY_REQUEST, 0, body)
    assert frag.encode() == b"\x03\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x05" + body


# --------------------------------------------------------------------------- the handshake


def test_a_handshake_takes_six_flights_and_then_carries_data():
    link = handshake(Link(*pair()))
    c2s, s2c = link.sent["c2s"], link.sent["s2c"]
    assert message_types(c2s[0]) == [messages.CLIENT_HELLO]
    assert message_types(s2c[0]) == [messages.HELLO_VERIFY_REQUEST]
    assert message_types(c2s[1]) == [messages.CLIENT_HELLO]
    assert message_types(s2c[1]) == [messages.SERVER_HELLO, messages.SERVER_HELLO_DONE]
    assert message_types(c2s[2]) == [messages.CLIENT_KEY_EXCHANGE, 20, -1]
    assert message_types(s2c[2]) == [20, -1]
    assert link.received["server"] == [b"GET /voltage"]
    done = link.of_type(HandshakeDone)
    assert {d.role for d in done} == {"client", "server"}
    assert all(d.psk_identity == IDENTITY and d.retransmissions == 0 for d in done)
    client_done = next(d for d in done if d.role == "client")
    assert client_done.datagrams_sent == 3 and client_done.datagrams_received == 3
    assert client_done.bytes_sent == sum(map(len, c2s[:3]))


def test_the_server_keeps_no_state_before_the_cookie_returns():
    client, server = pair()
    client.outgoing(0.0, b"x", S)
    ((hello, _),) = client.datagrams_to_send()
    for n in range(100):  # a spoofed flood from many addresses
        server.incoming(0.0, hello, ("spoofed", n))
    assert server.stats.hello_verify_requests == 100
    assert server.session(("spoofed", 0)) is None and not server._sessions
    verify = server.datagrams_to_send()[0][0]
    assert len(verify) < len(hello)  # no amplification


def test_the_server_sends_its_psk_identity_hint_when_it_has_one():
    link = handshake(Link(*pair(hint=b"CoAP")))
    assert messages.SERVER_KEY_EXCHANGE in message_types(link.sent["s2c"][1])
    assert link.received["server"] == [b"GET /voltage"]


@pytest.mark.parametrize(
    ("direction", "index"),
    [("c2s", 0), ("s2c", 0), ("c2s", 1), ("s2c", 1), ("c2s", 2), ("s2c", 2)],
)
def test_every_lost_flight_is_recovered(direction, index):
    link = handshake(Link(*pair(), drop=lambda d, n: (d, n) == (direction, index)))
    assert link.received["server"] == [b"GET /voltage"]
    assert len(link.of_type(HandshakeDone)) == 2


def test_a_lost_last_flight_is_resent_when_the_client_retransmits():
    # Flight 6 has no timer (RFC 6347 4.2.4): the client's retransmitted
    # flight 5 is what makes the server send it again.
    link = handshake(Link(*pair(), drop=lambda d, n: (d, n) == ("s2c", 2)))
    assert message_types(link.sent["s2c"][3]) == [20, -1]
    client_done = next(d for d in link.of_type(HandshakeDone) if d.role == "client")
    assert client_done.retransmissions == 1
    assert client_done.duration_s == pytest.approx(1.0)  # the initial 1 s timer


def test_the_timer_doubles_and_the_handshake_gives_up():
    params = DtlsParams(max_retransmissions=3)
    link = handshake(Link(*pair(params), drop=lambda d, n: d == "c2s"))
    (failed,) = link.of_type(HandshakeFailed)
    assert failed.reason == "timeout"
    assert len(link.sent["c2s"]) == 4  # 1 + 3 retransmissions
    assert link.now == pytest.approx(1 + 2 + 4 + 8)


def test_the_timer_is_capped():
    params = DtlsParams(initial_timeout_s=1.0, max_timeout_s=3.0, max_retransmissions=4)
    link = handshake(Link(*pair(params), drop=lambda d, n: d == "c2s"))
    assert link.now == pytest.approx(1 + 2 + 3 + 3 + 3)


def test_a_small_mtu_fragments_the_handshake_and_it_still_completes():
    params = DtlsParams(max_datagram_bytes=64)
    link = handshake(Link(*pair(params)), payload=b"p")
    assert all(len(d) <= 64 for d in link.sent["c2s"] + link.sent["s2c"])
    assert len(link.sent["c2s"]) > 3  # the ClientHello no longer fits one datagram
    assert link.received["server"] == [b"p"]


def test_fragments_survive_loss():
    params = DtlsParams(max_datagram_bytes=64)
    link = handshake(Link(*pair(params), drop=lambda d, n: n in (1, 4)), payload=b"p")
    assert link.received["server"] == [b"p"]


def test_a_wrong_key_fails_at_once_with_bad_record_mac():
    link = handshake(Link(*pair(client_key=b"wrong")))
    reasons = {e.reason for e in link.of_type(HandshakeFailed)}
    assert reasons == {"bad_record_mac"}
    assert link.now == 0.0 and link.received["server"] == []


def test_an_unknown_identity_gets_unknown_psk_identity():
    link = handshake(Link(*pair(identity=b"stranger")))
    assert {e.reason for e in link.of_type(HandshakeFailed)} == {"unknown_psk_identity"}


def test_data_waits_for_the_handshake_and_keeps_its_order():
    client, server = pair()
    link = Link(client, server)
    for n in range(3):
        client.outgoing(0.0, b"m%d" % n, S)
    link.run()
    assert link.received["server"] == [b"m0", b"m1", b"m2"]
    assert client.stats.handshakes_started == 1


def test_replayed_records_are_discarded():
    link = handshake(Link(*pair()))
    link.client.outgoing(1.0, b"once", S)
    ((record, _),) = link.client.datagrams_to_send()
    link.server.incoming(1.0, record, "client-addr")
    link.server.incoming(1.0, record, "client-addr")
    assert [p for p, _ in link.server.plaintexts()] == [b"once"]


def test_tampered_records_are_discarded_after_the_handshake():
    link = handshake(Link(*pair()))
    link.client.outgoing(1.0, b"data", S)
    ((record, _),) = link.client.datagrams_to_send()
    link.server.incoming(1.0, record[:-1] + bytes([record[-1] ^ 1]), "client-addr")
    assert link.server.plaintexts() == [] and link.server.session("client-addr").established


def test_application_data_in_epoch_0_is_never_accepted():
    link = handshake(Link(*pair()))
    forged = bytes([23, 254, 253, 0, 0]) + (99).to_bytes(6, "big") + b"\x00\x03abc"
    link.server.incoming(1.0, forged, "client-addr")
    assert link.server.plaintexts() == []


def test_close_notify_ends_the_session_on_both_sides():
    link = handshake(Link(*pair()))
    link.client.close(S)
    link.run()
    closed = link.of_type(SessionClosed)
    assert {c.by_peer for c in closed} == {False, True}
    assert link.server.session("client-addr") is None and link.client.session(S) is None


def test_a_rebooted_client_gets_a_new_session():
    link = handshake(Link(*pair()))
    old = link.server.session("client-addr")
    # A new layer with another random source: a new ClientHello random, as after a reboot.
    link.client = DtlsLayer(random.Random(99), client=link.client.client_credentials)
    handshake(link, b"again")
    assert link.server.session("client-addr") is not old
    assert link.received["server"][-1] == b"again"


def test_the_server_bounds_its_sessions():
    params = DtlsParams(max_sessions=2)
    server = DtlsLayer(random.Random(2), params, server=PskServerCredentials({IDENTITY: KEY}))
    for n in range(4):
        client, _ = pair(params)
        link = Link(client, server, client_addr=("client", n))
        link.client.outgoing(0.0, b"x", S)
        link.run()
    assert len(server._sessions) <= 2 and server.stats.sessions_evicted >= 1


def test_a_server_only_layer_never_starts_a_handshake():
    _, server = pair()
    server.outgoing(0.0, b"x", "someone")
    assert server.datagrams_to_send() == [] and server.stats.datagrams_dropped == 1


def test_a_layer_needs_credentials():
    with pytest.raises(ValueError, match="credentials"):
        DtlsLayer(random.Random(1))


def test_late_copies_of_the_last_flight_do_not_echo():
    # A slow path: the client's timer sends flight 5 again before flight 6
    # arrives; the server answers each copy with flight 6. The established
    # client must ignore those copies, or the two would answer each other.
    link = handshake(Link(*pair()))
    server_flight_6 = link.sent["s2c"][2]
    client_flight_5 = link.sent["c2s"][2]
    for _ in range(3):
        link.server.incoming(5.0, client_flight_5, "client-addr")
    copies = [d for d, _ in link.server.datagrams_to_send()]
    assert len(copies) == 3  # the server answers each copy (RFC 6347 4.2.4)
    for copy in [server_flight_6, *copies]:
        link.client.incoming(5.0, copy, S)
    assert link.client.datagrams_to_send() == []


def test_a_forged_handshake_message_does_not_end_an_established_session():
    # Epoch-0 records are read after the handshake (to see a retransmitted
    # flight 5), so one carrying a new message must be ignored, not fatal.
    link = handshake(Link(*pair()))
    hello_request = messages.whole_message(0, 7, b"").encode()
    forged = plain_record(22, 0, 99, hello_request)
    link.server.incoming(1.0, forged, "client-addr")
    link.client.incoming(1.0, forged, S)
    assert link.server.datagrams_to_send() == [] and link.client.datagrams_to_send() == []
    assert link.server.session("client-addr").established and link.client.session(S).established


def test_an_alert_in_the_clear_does_not_end_an_established_session():
    link = handshake(Link(*pair()))
    forged = plain_record(21, 0, 99, bytes((messages.FATAL, messages.HANDSHAKE_FAILURE)))
    link.server.incoming(1.0, forged, "client-addr")
    assert link.server.session("client-addr").established
    assert not link.of_type(HandshakeFailed)
