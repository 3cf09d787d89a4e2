"""RFC 7959 block-wise transfers: Block2 responses, Block1 uploads, size negotiation,
Observe with Block2, errors and bounded server state."""

from coap_harness import CLIENT, SERVER, Wire, drain, endpoint, raw

from iotbench.proto.coap.blockwise import MAX_TRANSFERS
from iotbench.proto.coap.codec import BlockOption, Code, Message, Opt, Type
from iotbench.proto.coap.events import NotificationReceived, RequestFailed, ResponseReceived
from iotbench.proto.coap.resources import ResourceResponse

BODY = bytes(range(256)) + b"tail of the representation" * 2  # 308 bytes


class Store:
    """A resource that serves `body` and remembers every request body it was given."""

    def __init__(self, body: bytes = BODY) -> None:
        self.body = body
        self.puts: list[bytes] = []

    def __call__(self, req, addr):
        if req.code == Code.PUT:
            self.puts.append(req.payload)
            return ResourceResponse(code=Code.CHANGED)
        return ResourceResponse(payload=self.body, content_format=42)


def pair(client_block=None, server_block=None, **wire_kwargs):
    client = endpoint(1, block_size_bytes=client_block)
    server = endpoint(2, block_size_bytes=server_block)
    store = Store()
    server.add_resource("/big", store, observable=True)
    return client, server, store, Wire(client, server, **wire_kwargs)


def requests_sent(wire):
    return [m for _, m in wire.sent_by(CLIENT) if m.type in (Type.CON, Type.NON) and m.code]


def responses_sent(wire):
    return [m for _, m in wire.sent_by(SERVER) if m.code]


def test_a_large_response_arrives_whole_through_block2():
    client, _, _, wire = pair(server_block=64)
    rid = client.request(0.0, SERVER, Code.GET, "/big")
    wire.run(10.0)
    (event,) = client.events()
    assert isinstance(event, ResponseReceived) and event.request_id == rid
    assert event.response.payload == BODY and event.response.block2 is None
    assert event.response.content_format == 42
    assert event.transmissions == 5  # one message per block, none lost
    # Block 0 unasked; then the client asks for 1..4 at the server's size.
    asked = [m.block2 for m in requests_sent(wire)]
    assert asked == [None] + [BlockOption(n, False, 2) for n in range(1, 5)]
    sent = responses_sent(wire)
    assert [m.block2 for m in sent] == [BlockOption(n, n < 4, 2) for n in range(5)]
    assert [len(m.payload) for m in sent] == [64, 64, 64, 64, 308 - 256]
    assert sent[0].get_uint(Opt.SIZE2) == 308  # the whole size, with block 0


def test_the_client_asks_for_its_block_size_early():
    client, _, _, wire = pair(client_block=32)
    client.request(0.0, SERVER, Code.GET, "/big")
    wire.run(10.0)
    (event,) = client.events()
    assert event.response.payload == BODY
    first = requests_sent(wire)[0]
    assert first.block2 == BlockOption(0, False, 1)  # 2.4: early negotiation
    assert {len(m.payload) for m in responses_sent(wire)[:-1]} == {32}
    assert len(responses_sent(wire)) == 10


def test_the_server_answers_with_the_smaller_size_and_the_client_follows():
    client, _, _, wire = pair(client_block=128, server_block=64)
    client.request(0.0, SERVER, Code.GET, "/big")
    wire.run(10.0)
    assert client.events()[0].response.payload == BODY
    assert [m.block2.szx for m in requests_sent(wire)] == [3, 2, 2, 2, 2]
    assert {m.block2.szx for m in responses_sent(wire)} == {2}


def test_every_block_comes_from_one_representation():
    client, _, store, wire = pair(server_block=64)
    client.request(0.0, SERVER, Code.GET, "/big")
    wire.run(0.015)  # block 0 has left the server
    store.body = b"x" * 500  # the resource changes during the transfer
    wire.run(10.0)
    assert client.events()[0].response.payload == BODY


def test_a_large_upload_goes_in_block1_blocks():
    client, server, store, wire = pair(client_block=64)
    payload = bytes(range(200)) * 2  # 400 bytes
    client.request(0.0, SERVER, Code.PUT, "/big", payload=payload)
    wire.run(10.0)
    (event,) = client.events()
    assert event.response.code == Code.CHANGED
    assert event.response.block1 == BlockOption(6, False, 2)  # echoes the last block
    assert store.puts == [payload]  # the handler saw the body once, whole
    sent = requests_sent(wire)
    assert [m.block1 for m in sent] == [BlockOption(n, n < 6, 2) for n in range(7)]
    assert sent[0].get_uint(Opt.SIZE1) == 400 and not sent[1].has_option(Opt.SIZE1)
    answers = responses_sent(wire)
    assert [m.code for m in answers] == [Code.CONTINUE] * 6 + [Code.CHANGED]
    assert len(server.server_layer._uploads) == 0


def test_the_client_uploads_at_the_smaller_size_the_server_asks_for():
    client, _, store, wire = pair(client_block=64, server_block=32)
    payload = b"u" * 200
    client.request(0.0, SERVER, Code.PUT, "/big", payload=payload)
    wire.run(10.0)
    assert store.puts == [payload]
    blocks = [m.block1 for m in requests_sent(wire)]
    # 64 bytes as block 0; then 32-byte blocks from number 2 on (RFC 7959 2.5).
    assert blocks == [BlockOption(0, True, 2)] + [BlockOption(n, n < 6, 1) for n in range(2, 7)]


def test_blocks_get_through_loss():
    drops = {1, 4}
    count = [0]

    def lose(t, src, dst, msg):
        count[0] += 1
        return count[0] in drops

    client, _, store, wire = pair(client_block=64, server_block=64, drop=lose)
    client.request(0.0, SERVER, Code.GET, "/big")
    wire.run(200.0)
    (event,) = client.events()
    assert event.response.payload == BODY and event.transmissions == 7


def test_observe_with_block2_notifies_the_whole_state():
    client, server, store, wire = pair(server_block=64)
    rid = client.request(0.0, SERVER, Code.GET, "/big", observe=True)
    wire.run(5.0)
    (registered,) = client.events()
    assert registered.response.payload == BODY and registered.response.observe is not None
    store.body = b"new state " * 40
    server.notify(wire.at(6.0), "/big")
    wire.run(20.0)
    (note,) = client.events()
    assert isinstance(note, NotificationReceived) and note.request_id == rid
    assert note.message.payload == store.body and not note.final
    # The rest of each state came by GETs without Observe (RFC 7959 2.6).
    follow_ups = [m for m in requests_sent(wire) if m.block2 is not None and m.block2.num > 0]
    assert follow_ups and all(m.observe is None for m in follow_ups)
    assert server.observers("/big") == 1


def _raw_get(mid, block2=None, path="/big"):
    req = Message.request(Type.CON, Code.GET, mid, b"\x07", path)
    if block2 is not None:
        req.block2 = block2
    return raw(req)


def test_block_errors_are_answered_as_rfc_7959_says():
    server = endpoint(2)
    store = Store()
    server.add_resource("/big", store)
    # A block past the end: 4.02; SZX 7: 4.00.
    server.receive(0.0, _raw_get(1, BlockOption(40, False, 2)), CLIENT)
    server.receive(0.0, _raw_get(2, BlockOption(0, False, 7)), CLIENT)
    codes = [m.code for m, _ in drain(server)]
    assert codes == [Code.BAD_OPTION, Code.BAD_REQUEST]
    # Block1 out of order: 4.08; larger than max_body_bytes: 4.13 with Size1.
    put = Message.request(Type.CON, Code.PUT, 3, b"\x08", "/big", payload=b"x" * 16)
    put.block1 = BlockOption(2, True, 0)
    server.receive(0.0, raw(put), CLIENT)
    small = endpoint(3, max_body_bytes=20)
    small.add_resource("/big", store)
    for n in range(2):
        put = Message.request(Type.CON, Code.PUT, 10 + n, b"\x09", "/big", payload=b"x" * 16)
        put.block1 = BlockOption(n, True, 0)
        small.receive(0.0, raw(put), CLIENT)
    assert [m.code for m, _ in drain(server)] == [Code.REQUEST_ENTITY_INCOMPLETE]
    answers = [m for m, _ in drain(small)]
    assert [m.code for m in answers] == [Code.CONTINUE, Code.REQUEST_ENTITY_TOO_LARGE]
    assert answers[1].get_uint(Opt.SIZE1) == 20
    assert store.puts == []


def test_a_server_without_block_size_answers_whole_unless_asked():
    client, _, _, wire = pair()
    client.request(0.0, SERVER, Code.GET, "/big")
    wire.run(5.0)
    assert client.events()[0].response.payload == BODY
    assert len(responses_sent(wire)) == 1 and responses_sent(wire)[0].block2 is None


def test_a_failed_block_fails_the_request():
    client, _, _, wire = pair(server_block=64, drop=lambda t, s, d, m: t > 0.01)
    client.request(0.0, SERVER, Code.GET, "/big")
    wire.run(500.0)
    (event,) = client.events()
    assert isinstance(event, RequestFailed) and event.reason.startswith("max-retransmit")


def test_unfinished_transfers_are_bounded():
    server = endpoint(2, block_size_bytes=16)
    server.add_resource("/big", Store())
    for i in range(3 * MAX_TRANSFERS):
        peer = (f"10.0.9.{i % 250}", 1000 + i)
        put = Message.request(Type.CON, Code.PUT, i, b"\x01", "/big", payload=b"x" * 16)
        put.block1 = BlockOption(0, True, 0)
        server.receive(0.0, raw(put), peer)
        server.receive(0.0, _raw_get(10_000 + i), peer)  # each starts a Block2 transfer
    drain(server)
    assert len(server.server_layer._uploads) == MAX_TRANSFERS
    assert len(server.server_layer._representations) == MAX_TRANSFERS
    # ...and they expire after EXCHANGE_LIFETIME.
    server.receive(1000.0, _raw_get(50_000, BlockOption(1, False, 0)), CLIENT)
    assert len(server.server_layer._representations) == 0


def _post(server, mid: int, block2=None, payload=b"") -> Message:
    msg = Message(Type.CON, Code.POST, mid, b"\x01", payload=payload)
    msg.add_option(Opt.URI_PATH, b"make")
    if block2 is not None:
        msg.block2 = block2
    server.receive(0.0, raw(msg), CLIENT)
    ((resp, _),) = drain(server)
    return resp


def test_a_posts_large_response_goes_in_block2_blocks_without_running_it_again():
    """RFC 7959 3.2: the 2.01's body comes in blocks; the client asks for the later
    ones by POSTing again with Block2, answered from the kept response. The handler
    runs once; a later block with nothing kept is 4.08, never a second run."""
    server = endpoint(2, block_size_bytes=64)
    made = []

    def make(req, addr):
        made.append(req.payload)
        return ResourceResponse(code=Code.CREATED, payload=BODY)

    server.add_resource("/make", make, methods={Code.POST})
    first = _post(server, 1, payload=b"profile")
    assert first.code == Code.CREATED and first.block2 == BlockOption(0, True, 2)
    assert first.get_uint(Opt.SIZE2) == len(BODY)
    body = first.payload
    for n in range(1, 5):
        resp = _post(server, 1 + n, block2=BlockOption(n, False, 2))
        assert resp.code == Code.CREATED and resp.block2.num == n
        body += resp.payload
    assert body == BODY and made == [b"profile"]
    late = _post(server, 9, block2=BlockOption(2, False, 2))
    assert late.code == Code.REQUEST_ENTITY_INCOMPLETE and made == [b"profile"]
