"""The OSCORE layer under two CoAP endpoints: exchanges, retransmissions,
OSCORE's error replies (RFC 8613 8.2), replay protection (7.4, 7.4.1),
notifications (4.1.3.5), sequence numbers (7.2.1) and block-wise (4.1.3.4)."""

from __future__ import annotations

import random

from oscore_harness import CLIENT, SERVER, Pair, contexts

from iotbench.proto.coap.codec import Code, Message, Type, decode, encode
from iotbench.proto.coap.events import NotificationReceived, RequestFailed, ResponseReceived
from iotbench.proto.coap.options import Opt
from iotbench.proto.coap.params import CoapParams
from iotbench.proto.coap.resources import ResourceResponse
from iotbench.proto.oscore.context import MAX_SEQUENCE_NUMBER, SecurityContext
from iotbench.proto.oscore.layer import OscoreLayer
from iotbench.proto.oscore.message import RequestId, protect
from iotbench.proto.oscore.option import OscoreOption


def _option(msg: Message) -> OscoreOption:
    return OscoreOption.decode(msg.get_option(Opt.OSCORE))


def test_get_is_protected_end_to_end():
    pair = Pair()
    rid = pair.client.request(0.0, SERVER, Code.GET, "/temp", options=[(Opt.URI_HOST, "h")])
    pair.run(1.0)
    (ev,) = pair.events_of("client", ResponseReceived)
    assert ev.request_id == rid and ev.response.code == Code.CONTENT
    assert ev.response.payload == b"20 C" and ev.response.content_format == 0
    (request,) = pair.sent(CLIENT)
    (response,) = pair.sent(SERVER)
    # 4.2: outer codes POST and 2.04; Uri-Host stays outer, Uri-Path and the payload go inner.
    assert request.code == Code.POST and response.code == Code.CHANGED
    assert [n for n, _ in request.options] == [Opt.URI_HOST, Opt.OSCORE]
    assert [n for n, _ in response.options] == [Opt.OSCORE]
    assert b"temp" not in encode(request) and b"20 C" not in encode(response)
    assert _option(request) == OscoreOption(b"\x00", b"")  # Partial IV 0, kid = empty Sender ID
    assert _option(response) == OscoreOption()  # the request's nonce, once (5.2)
    assert response.type == Type.ACK and response.message_id == request.message_id
    assert pair.failures("client") == pair.failures("server") == []


def test_put_non_and_an_error_answer():
    pair = Pair()
    store = {}

    def handler(request, addr):
        if request.code == Code.PUT:
            store["v"] = request.payload
            return ResourceResponse(code=Code.CHANGED)
        return ResourceResponse(payload=store.get("v", b""))

    pair.server.add_resource("/store", handler)
    pair.client.request(0.0, SERVER, Code.PUT, "/store", payload=b"x" * 50, confirmable=False)
    pair.client.request(0.0, SERVER, Code.GET, "/store")
    pair.client.request(0.0, SERVER, Code.DELETE, "/nothing")
    pair.run(2.0)
    codes = [
        (e.response.code, e.response.payload) for e in pair.events_of("client", ResponseReceived)
    ]
    assert codes == [(Code.CHANGED, b""), (Code.CONTENT, b"x" * 50), (Code.NOT_FOUND, b"")]
    non = pair.sent(SERVER)[0]
    assert non.type == Type.NON and non.code == Code.CHANGED  # a protected 4.04 is 2.04 outside
    assert pair.sent(SERVER)[2].code == Code.CHANGED


def test_a_retransmission_sends_the_same_bytes_and_is_answered_the_same():
    lost = []

    def wire(src, dst, data):
        if src == SERVER and not lost:
            lost.append(data)
            return None  # the first answer is lost: the client retransmits
        return data

    pair = Pair(wire=wire)
    pair.client.request(0.0, SERVER, Code.GET, "/temp")
    pair.run(10.0)
    first, again = pair.sent(CLIENT)
    assert encode(first) == encode(again)  # no new Partial IV for a retransmission
    answer1, answer2 = [d for _, s, _, d in pair.log if s == SERVER]
    assert answer1 == answer2  # the endpoint's deduplication, through the caches
    assert len(pair.events_of("client", ResponseReceived)) == 1
    assert pair.server_layer.stats.duplicates == 2  # the request in, the answer out
    assert pair.failures("client") == pair.failures("server") == []


def _reply_of(pair, since: int) -> Message:
    (reply,) = pair.sent(SERVER)[since:]
    return reply


def _error(reply: Message) -> tuple[int, bytes, bool, bool]:
    return (
        reply.code,
        reply.payload,
        reply.get_option(Opt.MAX_AGE) == b"",  # Max-Age 0 (8.2)
        reply.has_option(Opt.OSCORE),
    )


def test_a_replayed_request_is_refused_with_4_01():
    pair = Pair()
    pair.client.request(0.0, SERVER, Code.GET, "/temp")
    pair.run(1.0)
    original = pair.log[0][3]
    # A copy with another Message ID is not a retransmission: its Partial IV was seen.
    pair.inject(CLIENT, SERVER, original[:2] + b"\x12\x34" + original[4:])
    pair.run(2.0)
    reply = _reply_of(pair, 1)
    assert reply.type == Type.ACK and reply.message_id == 0x1234
    assert _error(reply) == (Code.UNAUTHORIZED, b"Replay detected", True, False)
    # The very same bytes after EXCHANGE_LIFETIME: deduplication is over, replay is not.
    pair.run(300.0)
    pair.inject(CLIENT, SERVER, original)
    pair.run(301.0)
    assert _error(_reply_of(pair, 2))[:2] == (Code.UNAUTHORIZED, b"Replay detected")
    assert pair.failures("server") == ["replay", "replay"]
    assert len(pair.events_of("client", ResponseReceived)) == 1


def test_a_tampered_request_is_refused_with_4_00_and_a_bad_option_with_4_02():
    def flip(src, dst, data):
        return data[:-1] + bytes((data[-1] ^ 1,)) if src == CLIENT else data

    pair = Pair(wire=flip)
    pair.client.request(0.0, SERVER, Code.GET, "/temp")
    pair.run(1.0)
    assert _error(pair.sent(SERVER)[0]) == (Code.BAD_REQUEST, b"Decryption failed", True, False)
    (ev,) = pair.events_of("client", ResponseReceived)
    assert ev.response.code == Code.BAD_REQUEST  # unprotected errors end the request...
    assert pair.failures("client") == ["unprotected-response"]  # ...and say so

    msg = Message.request(Type.CON, Code.POST, 7, b"t", "/")
    msg.add_option(Opt.OSCORE, b"\x20")  # a reserved flag bit
    pair.inject(CLIENT, SERVER, encode(msg))
    pair.run(2.0)
    reply = _reply_of(pair, 1)
    assert _error(reply) == (Code.BAD_OPTION, b"Failed to decode COSE", True, False)
    assert pair.failures("server") == ["decrypt", "decode"]


def test_a_response_with_the_oscore_option_twice_is_rejected():
    # RFC 7252 5.4.5: a second occurrence of a non-repeatable option is an
    # unrecognized option; OSCORE's is critical, so the response is rejected
    # (5.4.1), not read by its first copy.
    def repeat_option(src, dst, data):
        if src != SERVER:
            return data
        msg = decode(data)
        msg.add_option(Opt.OSCORE, msg.get_option(Opt.OSCORE))
        return encode(msg)

    pair = Pair(wire=repeat_option)
    pair.client.request(0.0, SERVER, Code.GET, "/temp")
    pair.run(1.0)
    assert pair.failures("client") == ["decode"]
    assert pair.events_of("client", ResponseReceived) == []
    # The same response without the copy is read.
    clean = Pair()
    clean.client.request(0.0, SERVER, Code.GET, "/temp")
    clean.run(1.0)
    assert len(clean.events_of("client", ResponseReceived)) == 1


def test_an_unknown_kid_and_an_unprotected_request_get_4_01():
    client_ctx = SecurityContext(b"secret", b"\x09", b"\x01")
    server_ctx = SecurityContext(b"secret", b"\x01", b"\x02")
    pair = Pair(client_ctx, server_ctx)
    pair.client.request(0.0, SERVER, Code.GET, "/temp")
    pair.run(1.0)
    reply = pair.sent(SERVER)[0]
    assert _error(reply) == (Code.UNAUTHORIZED, b"Security context not found", True, False)
    pair.inject(CLIENT, SERVER, encode(Message.request(Type.NON, Code.GET, 9, b"n", "/temp")))
    pair.run(2.0)
    reply = _reply_of(pair, 1)
    assert reply.type == Type.NON and reply.token == b"n"
    assert _error(reply) == (Code.UNAUTHORIZED, b"OSCORE required", True, False)
    assert pair.failures("server") == ["unknown-context", "not-protected"]


def test_without_require_oscore_plain_requests_are_served_plain():
    pair = Pair(None, contexts()[1], require_oscore=False)  # the client has no context
    pair.client.request(0.0, SERVER, Code.GET, "/temp")
    pair.run(1.0)
    (ev,) = pair.events_of("client", ResponseReceived)
    assert ev.response.payload == b"20 C"
    assert not any(m.has_option(Opt.OSCORE) for m in pair.sent(CLIENT) + pair.sent(SERVER))
    assert pair.client_layer.stats.plain == 2 and pair.server_layer.stats.plain == 2


def test_notifications_carry_their_own_partial_iv_and_are_ordered_by_it():
    pair = Pair()
    rid = pair.client.request(0.0, SERVER, Code.GET, "/temp", observe=True)
    pair.run(1.0)
    for t in (2.0, 3.0, 4.0):
        pair.value += 1
        pair.server.notify(pair.now, "/temp")
        pair.run(t)
    (registration,) = pair.sent(CLIENT)
    assert registration.code == Code.FETCH and registration.observe == 0  # 4.1.3.5
    answers = pair.sent(SERVER)
    assert all(m.code == Code.CONTENT and m.observe is not None for m in answers)
    assert [_option(m).partial_iv for m in answers] == [b"\x00", b"\x01", b"\x02", b"\x03"]
    (first,) = pair.events_of("client", ResponseReceived)
    notes = pair.events_of("client", NotificationReceived)
    assert first.request_id == rid and first.response.observe == 1  # Partial IV + 1
    assert [(n.sequence, n.message.payload) for n in notes] == [
        (2, b"21 C"),
        (3, b"22 C"),
        (4, b"23 C"),
    ]
    # 7.4.1: an older notification (here a copy under another Message ID) is dropped.
    old = [d for _, s, _, d in pair.log if s == SERVER][1]
    pair.inject(SERVER, CLIENT, old[:2] + b"\xbe\xef" + old[4:])
    pair.run(5.0)
    assert len(pair.events_of("client", NotificationReceived)) == 3
    assert pair.failures("client") == ["replay"]


def test_a_con_notification_whose_ack_is_lost_is_answered_from_the_cache():
    acks = []

    def wire(src, dst, data):
        if src == CLIENT and decode(data).type == Type.ACK and not acks:
            acks.append(data)
            return None
        return data

    pair = Pair(wire=wire)
    pair.server.add_resource("/c", pair._temp, observable=True, notify_confirmable=True)
    pair.client.request(0.0, SERVER, Code.GET, "/c", observe=True)
    pair.run(1.0)
    pair.server.notify(pair.now, "/c")
    pair.run(20.0)
    notification, again = [d for _, s, _, d in pair.log if s == SERVER][1:]
    assert notification == again  # the server's retransmission, byte for byte
    assert len(pair.events_of("client", NotificationReceived)) == 1
    assert pair.failures("client") == pair.failures("server") == []
    assert pair.server.observers("/c") == 1


def test_the_final_error_of_an_observation_takes_a_new_partial_iv():
    pair = Pair()
    gone = []
    pair.server.add_resource(
        "/gone",
        lambda req, addr: ResourceResponse(code=Code.NOT_FOUND) if gone else pair._temp(req, addr),
        observable=True,
    )
    pair.client.request(0.0, SERVER, Code.GET, "/gone", observe=True)
    pair.run(1.0)
    gone.append(True)
    pair.server.notify(pair.now, "/gone")  # an error ends the observation (RFC 7641 3.2)
    pair.run(2.0)
    final = pair.sent(SERVER)[-1]
    assert final.code == Code.CHANGED and final.observe is None
    assert _option(final).partial_iv == b"\x01"  # the request's nonce was used already
    (note,) = pair.events_of("client", NotificationReceived)
    assert note.final and note.message.code == Code.NOT_FOUND


def test_block_wise_is_end_to_end_inner_options():
    pair = Pair(client_params=CoapParams(block_size_bytes=64))
    body = bytes(range(200)) + bytes(100)
    pair.server.add_resource("/o", lambda req, addr: ResourceResponse(payload=body))
    pair.client.request(0.0, SERVER, Code.GET, "/o")
    pair.run(5.0)
    (ev,) = pair.events_of("client", ResponseReceived)
    assert ev.response.payload == body
    wire = pair.sent(CLIENT) + pair.sent(SERVER)
    assert len(wire) == 10  # five blocks of 64 bytes
    assert not any(m.has_option(Opt.BLOCK2) or m.has_option(Opt.SIZE2) for m in wire)
    assert [_option(m).partial_iv for m in pair.sent(CLIENT)] == [bytes((i,)) for i in range(5)]


def test_the_sequence_number_limit_and_its_reservation():
    client_ctx, server_ctx = contexts(sender_sequence_number=MAX_SEQUENCE_NUMBER)
    pair = Pair(client_ctx, server_ctx)
    pair.client.request(0.0, SERVER, Code.GET, "/temp", confirmable=False)
    pair.client.request(0.0, SERVER, Code.GET, "/temp", confirmable=False)
    pair.run(1.0)
    (request,) = pair.sent(CLIENT)
    assert _option(request).partial_iv == b"\xff" * 5
    assert pair.failures("client") == ["exhausted"]
    assert len(pair.events_of("client", ResponseReceived)) == 1

    ctx = SecurityContext(b"s", b"a", b"b")
    ctx.sequence_limit = 2
    asked = []
    ctx.reserve = lambda n: asked.append(n) or n + 10
    assert [ctx.new_partial_iv() for _ in range(4)] == [b"\0", b"\1", b"\2", b"\3"]
    assert asked == [2] and ctx.sequence_limit == 12


def test_proxy_uri_is_refused_not_leaked():
    pair = Pair()
    pair.client.request(
        0.0, SERVER, Code.GET, "/", options=[(Opt.PROXY_URI, "coap://example.com/secret")]
    )
    pair.run(1.0)
    assert pair.sent(CLIENT) == [] and "unsupported" in pair.failures("client")


def test_requests_to_a_peer_without_a_context_pass_in_the_clear():
    layer = OscoreLayer(random.Random(1))
    data = encode(Message.request(Type.CON, Code.GET, 1, b"t", "/x"))
    layer.outgoing(0.0, data, "other")
    assert layer.datagrams_to_send() == [(data, "other")]
    answer = encode(Message(Type.ACK, Code.CONTENT, 1, b"t", payload=b"p"))
    layer.incoming(0.0, answer, "other")
    assert layer.plaintexts() == [(answer, "other")]


def test_a_protected_response_nobody_asked_for_is_reset():
    pair = Pair()
    client_ctx, server_ctx = contexts()
    piv = server_ctx.new_partial_iv()
    stray = Message(Type.CON, Code.CONTENT, 0x4242, b"zz", payload=b"x")
    out = protect(server_ctx, stray, RequestId(b"", b"\x05"), server_ctx.nonce(b"\x01", piv),
                  OscoreOption(piv))  # fmt: skip
    pair.inject(SERVER, CLIENT, encode(out))
    pair.run(1.0)
    (rst,) = pair.sent(CLIENT)
    assert rst.type == Type.RST and rst.message_id == 0x4242
    assert pair.failures("client") == ["unexpected"]
    assert pair.events_of("client", RequestFailed) == []
