"""Replay-window recovery with Echo (RFC 8613 Appendix B.1.2, RFC 9175): a
server that lost its window challenges the first request, the client layer
repeats it with the Echo value, and the window starts above it."""

from __future__ import annotations

from oscore_harness import CLIENT, SERVER, Pair, contexts

from iotbench.proto.coap.codec import Code, Type, decode
from iotbench.proto.coap.events import ResponseReceived
from iotbench.proto.coap.options import Opt
from iotbench.proto.oscore.message import RequestId, aad, parse_plaintext
from iotbench.proto.oscore.option import OscoreOption


def _rebooted(**kwargs) -> Pair:
    """A client that sent 5 requests before, and a server that lost its window."""
    client_ctx, _ = contexts(sender_sequence_number=5)
    _, server_ctx = contexts(replay_window_known=False)
    return Pair(client_ctx, server_ctx, **kwargs)


def _piv(data: bytes) -> bytes:
    return OscoreOption.decode(decode(data).get_option(Opt.OSCORE)).partial_iv


def test_a_con_request_is_challenged_and_repeated_with_echo():
    pair = _rebooted()
    rid = pair.client.request(0.0, SERVER, Code.GET, "/temp")
    pair.run(1.0)
    (ev,) = pair.events_of("client", ResponseReceived)
    assert ev.request_id == rid and ev.response.payload == b"20 C"
    first, repeat = [d for _, s, _, d in pair.log if s == CLIENT]
    challenge, answer = [d for _, s, _, d in pair.log if s == SERVER]
    first, repeat, challenge = decode(first), decode(repeat), decode(challenge)
    # The challenge: a protected 4.01 piggybacked on the ACK, with the server's own
    # Partial IV (B.1.2), carrying only Echo.
    assert challenge.type == Type.ACK and challenge.message_id == first.message_id
    assert challenge.code == Code.CHANGED and _piv(pair.log[1][3]) == b"\x00"
    server_ctx = pair.server_layer._contexts[(None, b"")]
    plain = parse_plaintext(
        pair.client_layer._peers[SERVER].open(
            server_ctx.nonce(b"\x01", b"\x00"), challenge.payload, aad(_request_id(first))
        )
    )
    assert plain.code == Code.UNAUTHORIZED and plain.payload == b""
    assert [n for n, _ in plain.options] == [Opt.ECHO]
    # The repeat: same token, a new Message ID and Partial IV; a CON like the original.
    assert repeat.token == first.token and repeat.type == Type.CON
    assert repeat.message_id != first.message_id
    assert _piv(pair.log[0][3]) == b"\x05" and _piv(pair.log[2][3]) == b"\x06"
    # The endpoint sees its own exchange: the answer came on the ACK of its CON.
    assert ev.response.type == Type.ACK and ev.transmissions == 1
    assert pair.failures("server") == ["echo-challenge"]
    assert pair.failures("client") == ["echo-repeat"]
    # The same challenge again (the answer to a retransmission of the original): no news.
    pair.inject(SERVER, CLIENT, pair.log[1][3])
    pair.run(1.5)
    assert pair.failures("client") == ["echo-repeat"] and len(pair.sent(CLIENT)) == 2
    # Recovered: the next request goes through, and older Partial IVs are refused.
    pair.client.request(pair.now, SERVER, Code.GET, "/temp")
    pair.run(2.0)
    assert len(pair.events_of("client", ResponseReceived)) == 2
    pair.inject(CLIENT, SERVER, pair.log[0][3][:2] + b"\x77\x77" + pair.log[0][3][4:])
    pair.run(3.0)
    assert pair.failures("server") == ["echo-challenge", "replay"]


def _request_id(msg):
    option = OscoreOption.decode(msg.get_option(Opt.OSCORE))
    return RequestId(option.kid, option.partial_iv)


def test_a_non_request_is_repeated_as_a_non():
    pair = _rebooted()
    pair.client.request(0.0, SERVER, Code.GET, "/temp", confirmable=False)
    pair.run(1.0)
    (ev,) = pair.events_of("client", ResponseReceived)
    assert ev.response.payload == b"20 C"
    kinds = [(decode(d).type, s) for _, s, _, d in pair.log]
    assert kinds == [(Type.NON, CLIENT), (Type.NON, SERVER), (Type.NON, CLIENT), (Type.NON, SERVER)]


def test_a_lost_repeat_goes_again_with_the_endpoints_retransmission():
    sent = []

    def wire(src, dst, data):
        if src == CLIENT:
            sent.append(data)
            if len(sent) == 2:
                return None  # the first repeat is lost
        return data

    pair = _rebooted(wire=wire)
    pair.client.request(0.0, SERVER, Code.GET, "/temp")
    pair.run(10.0)
    (ev,) = pair.events_of("client", ResponseReceived)
    assert ev.response.payload == b"20 C" and ev.transmissions == 2
    assert len(sent) == 3 and sent[1] == sent[2]  # the repeat, byte for byte
    assert pair.server_layer.stats.echo_challenges == 1
    assert pair.client_layer.stats.echo_repeats == 1


def test_a_request_with_a_wrong_echo_is_challenged_again_and_answered_once():
    holder = []

    def wire(src, dst, data):
        if src == SERVER and holder:
            holder[0].echo = b"changed"  # as if the server had forgotten its value
        return data

    pair = _rebooted(wire=wire)
    holder.append(pair.server_layer._contexts[(None, b"")])
    pair.client.request(0.0, SERVER, Code.GET, "/temp")
    pair.run(1.0)
    # The layer repeats once; the second challenge is the request's answer.
    (ev,) = pair.events_of("client", ResponseReceived)
    assert ev.response.code == Code.UNAUTHORIZED
    assert ev.response.get_option(Opt.ECHO) == b"changed"
    assert holder[0].replay is None
    assert pair.failures("server") == ["echo-challenge", "echo-challenge"]
