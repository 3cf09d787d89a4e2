"""RFC 7967 No-Response: the server leaves out the suppressed classes of response,
and a NON request that wants none is done once it is sent."""

from coap_harness import CLIENT, SERVER, Wire, drain, endpoint, raw

from iotbench.proto.coap.codec import Code, Message, Opt, Type

SUPPRESS_ALL = 26  # 2.xx, 4.xx and 5.xx (RFC 7967 2.1: bits 2, 8, 16)


def _server():
    server = endpoint(2)
    server.add_resource("/r", lambda req, addr: (Code.CHANGED, b""), methods={Code.PUT})
    return server


def _put(type_, no_response, mid=0x0101, path="/r"):
    msg = Message.request(type_, Code.PUT, mid, b"\x01", path)
    msg.add_option(Opt.NO_RESPONSE, no_response)
    return msg


def test_a_non_request_with_everything_suppressed_gets_no_response():
    server = _server()
    server.receive(0.0, raw(_put(Type.NON, SUPPRESS_ALL)), CLIENT)
    assert drain(server) == []
    assert server.stats.responses_suppressed == 1


def test_only_the_suppressed_class_is_left_out():
    server = _server()
    server.receive(0.0, raw(_put(Type.NON, 0x02)), CLIENT)  # 2.xx suppressed
    assert drain(server) == []
    server.receive(0.0, raw(_put(Type.NON, 0x02, mid=0x0102, path="/nowhere")), CLIENT)
    ((resp, _),) = drain(server)  # 4.04 is not suppressed
    assert (resp.type, resp.code) == (Type.NON, Code.NOT_FOUND)


def test_a_con_request_still_gets_its_ack_but_an_empty_one():
    server = _server()
    server.receive(0.0, raw(_put(Type.CON, SUPPRESS_ALL, mid=0x0A0B)), CLIENT)
    ((resp, _),) = drain(server)
    assert (resp.type, resp.code, resp.message_id, resp.payload) == (Type.ACK, 0, 0x0A0B, b"")


def test_the_client_does_not_wait_for_what_it_said_it_does_not_want():
    """With NSTART 1, a NON request that waits for a response holds the next one
    back; one with No-Response 26 does not."""
    client, server = endpoint(1), _server()
    wire = Wire(client, server, delay_s=0.01)
    for _ in range(3):
        client.request(
            0.0,
            SERVER,
            Code.PUT,
            "/r",
            confirmable=False,
            options=((Opt.NO_RESPONSE, SUPPRESS_ALL),),
        )
    wire.run(1.0)
    # All three went at once (none waited for another), and nothing came back.
    assert [(t, dst) for t, _src, dst, _msg in wire.log] == [(0.0, SERVER)] * 3
    assert client.events() == [] and client.next_timer() is None
