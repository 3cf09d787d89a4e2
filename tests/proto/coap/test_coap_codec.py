"""CoAP codec: hand-written byte vectors from RFC 7252 / 7641 / 7959 and API behaviour.

Expected bytes here are written out by hand from the RFCs' header and option
layouts, never produced by the encoder under test.
"""

import pytest

from iotbench.proto.coap.codec import (
    BlockOption,
    CoapDecodeError,
    Code,
    Message,
    Opt,
    Type,
    code_name,
    code_str,
    decode,
    decode_uint,
    encode,
    encode_uint,
    header_length,
    is_empty,
    is_request,
    is_reserved,
    is_response,
    make_code,
)
from iotbench.proto.errors import DecodeError


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


# ---- RFC 7252 message examples ------------------------------------------------------


def test_con_get_temperature_exact_bytes():
    # RFC 7252 figure "CON [0x7d34] GET /temperature": ver 1, CON, TKL 0 -> 0x40,
    # GET 0.01, MID 7d34, Uri-Path (11) delta 11 length 11 -> 0xbb.
    wire = h("40 01 7d 34 bb") + b"temperature"
    msg = Message(Type.CON, Code.GET, 0x7D34, options=[(Opt.URI_PATH, b"temperature")])
    assert encode(msg) == wire
    assert decode(wire) == msg
    assert Message.request(Type.CON, Code.GET, 0x7D34, path="/temperature") == msg
    assert header_length(wire) == len(wire)


def test_piggybacked_ack_with_token_exact_bytes():
    # "ACK [0xbc90] 2.05 Content (Token 0x71) "22.5 C"": ACK TKL 1 -> 0x61, 2.05 -> 0x45.
    wire = h("61 45 bc 90 71 ff") + b"22.5 C"
    msg = decode(wire)
    assert msg.type is Type.ACK
    assert msg.code == Code.CONTENT
    assert msg.message_id == 0xBC90
    assert msg.token == b"\x71"
    assert msg.options == []
    assert msg.payload == b"22.5 C"
    assert encode(msg) == wire
    assert header_length(wire) == 6


def test_separate_response_con_with_4_byte_token():
    wire = h("54 45 a5 7f 01 02 03 04 ff") + b"x"  # NON, TKL 4
    msg = decode(wire)
    assert msg.type is Type.NON
    assert msg.token == h("01020304")
    assert encode(msg) == wire


@pytest.mark.parametrize(
    "wire, mtype",
    [(h("40 00 12 34"), Type.CON), (h("60 00 12 34"), Type.ACK), (h("70 00 12 34"), Type.RST)],
)
def test_empty_messages(wire, mtype):
    msg = decode(wire)
    assert msg == Message(mtype, 0, 0x1234)
    assert is_empty(msg.code)
    assert encode(Message.empty(mtype, 0x1234)) == wire
    assert header_length(wire) == 4


def test_well_known_core_with_uri_host_and_content_format():
    # Uri-Host(3) "example.net", Uri-Path(11) ".well-known", Uri-Path "core", Accept(17) 40.
    wire = (
        h("42 01 00 01 ab cd")
        + h("3b")
        + b"example.net"
        + h("8b")
        + b".well-known"
        + h("04")
        + b"core"
        + h("61 28")
    )
    msg = Message(Type.CON, Code.GET, 1, h("abcd"))
    msg.add_option(Opt.ACCEPT, 40)
    msg.uri_path = "/.well-known/core"
    msg.add_option(Opt.URI_HOST, "example.net")
    assert encode(msg) == wire
    d = decode(wire)
    assert d.uri_path == "/.well-known/core"
    assert d.get_str(Opt.URI_HOST) == "example.net"
    assert d.get_uint(Opt.ACCEPT) == 40


# ---- option delta / length extension boundaries (RFC 7252 3.1) ------------------------


@pytest.mark.parametrize(
    "number, header",
    [
        (0, "00"),
        (12, "c0"),
        (13, "d0 00"),
        (268, "d0 ff"),
        (269, "e0 00 00"),
        (270, "e0 00 01"),
        (65535, "e0 fe f2"),
    ],
)
def test_option_delta_boundaries(number, header):
    wire = h("40 02 00 07") + h(header)
    msg = Message(Type.CON, Code.POST, 7, options=[(number, b"")])
    assert encode(msg) == wire
    assert decode(wire) == msg
    assert header_length(wire) == len(wire)


@pytest.mark.parametrize(
    "length, header",
    [
        (0, "10"),
        (12, "1c"),
        (13, "1d 00"),
        (268, "1d ff"),
        (269, "1e 00 00"),
        (65804, "1e ff ff"),
    ],
)
def test_option_length_boundaries(length, header):
    value = bytes(range(256)) * (length // 256) + bytes(range(length % 256))
    wire = h("40 02 00 07") + h(header) + value + b"\xffP"
    msg = Message(Type.CON, Code.POST, 7, options=[(1, value)], payload=b"P")
    assert encode(msg) == wire
    assert decode(wire) == msg
    assert header_length(wire) == len(wire) - 1


def test_extended_delta_and_length_together_and_relative_deltas():
    # Option 13 with 13-byte value, then option 300 (delta 287 -> 14/18) with 269-byte value.
    v1, v2 = b"a" * 13, b"b" * 269
    wire = h("40 01 00 00") + h("dd 00 00") + v1 + h("ee 00 12 00 00") + v2
    msg = Message(Type.CON, Code.GET, 0, options=[(300, v2), (13, v1)])
    assert encode(msg) == wire
    assert decode(wire).options == [(13, v1), (300, v2)]


def test_value_longer_than_65804_is_rejected_on_encode():
    with pytest.raises(ValueError):
        encode(Message(Type.CON, Code.GET, 0, options=[(1, bytes(65805))]))


# ---- Observe (RFC 7641) and Block (RFC 7959) values ----------------------------------------


@pytest.mark.parametrize(
    "value, opt_bytes",
    [(0, "60"), (1, "61 01"), (255, "61 ff"), (256, "62 01 00"), (0x123456, "63 12 34 56")],
)
def test_observe_values(value, opt_bytes):
    msg = Message(Type.CON, Code.GET, 0x10)
    msg.observe = value
    wire = h("40 01 00 10") + h(opt_bytes)
    assert encode(msg) == wire
    assert decode(wire).observe == value


def test_observe_setter_rejects_more_than_24_bits_and_none_removes():
    msg = Message(Type.NON, Code.CONTENT, 1)
    with pytest.raises(ValueError):
        msg.observe = 1 << 24
    msg.observe = 5
    msg.observe = None
    assert msg.observe is None and msg.options == []


@pytest.mark.parametrize(
    "block, value",
    [
        (BlockOption(0, False, 0), b""),  # all zero -> empty value
        (BlockOption(0, False, 2), h("02")),  # RFC 7959 "0/0/64"
        (BlockOption(0, True, 6), h("0e")),  # "0/1/1024"
        (BlockOption(1, True, 6), h("1e")),
        (BlockOption(2, False, 6), h("26")),
        (BlockOption(15, True, 2), h("fa")),
        (BlockOption(16, False, 6), h("01 06")),
        (BlockOption(4095, True, 6), h("ff fe")),
        (BlockOption(4096, False, 0), h("01 00 00")),
        (BlockOption(0xFFFFF, True, 6), h("ff ff fe")),
    ],
)
def test_block_values(block, value):
    assert block.encode() == value
    assert BlockOption.decode(value) == block
    assert block.size == 2 ** (block.szx + 4)
    assert block.offset == block.num * block.size


def test_block2_option_on_the_wire():
    # Block2 is option 23: delta 23 = 13 + 10 -> "d1 0a", value 0x1e (num 1, M, 1024).
    msg = Message(Type.ACK, Code.CONTENT, 0x0102, b"\x09", payload=b"x")
    msg.block2 = BlockOption(1, True, 6)
    wire = h("61 45 01 02 09 d1 0a 1e ff") + b"x"
    assert encode(msg) == wire
    d = decode(wire)
    assert d.block2 == BlockOption(1, True, 6)
    assert d.block2.size == 1024
    assert d.block1 is None


def test_block1_and_size1():
    msg = Message.request(Type.CON, Code.PUT, 3, b"\x01", "/up", payload=b"z" * 64)
    msg.block1 = BlockOption.from_size(0, True, 64)
    msg.add_option(Opt.SIZE1, 1000)
    d = decode(encode(msg))
    assert d.block1 == BlockOption(0, True, 2)
    assert d.get_uint(Opt.SIZE1) == 1000
    msg.block1 = None
    assert msg.block1 is None


def test_block_errors():
    with pytest.raises(CoapDecodeError):
        BlockOption.decode(b"\x00\x00\x00\x01")
    with pytest.raises(ValueError):
        BlockOption(1 << 20, False, 0).encode()
    with pytest.raises(ValueError):
        BlockOption(0, False, 8).encode()
    with pytest.raises(ValueError):
        BlockOption.from_size(0, False, 2048)
    with pytest.raises(ValueError):
        BlockOption.from_size(0, False, 48)
    msg = Message(Type.CON, Code.GET, 0, options=[(Opt.BLOCK2, b"\x00\x00\x00\x00")])
    with pytest.raises(CoapDecodeError):
        _ = msg.block2


def test_szx_7_is_kept_for_the_endpoint_to_reject():
    assert BlockOption.decode(b"\x07") == BlockOption(0, False, 7)


# ---- decode errors ------------------------------------------------------------------------


BAD = {
    "empty datagram": "",
    "3 bytes": "40 01 00",
    "version 0": "00 01 00 00",
    "version 2": "80 01 00 00",
    "version 3": "c0 01 00 00",
    "tkl 9": "49 01 00 00 01 02 03 04 05 06 07 08 09",
    "tkl 15": "4f 01 00 00" + " 00" * 15,
    "token truncated": "48 01 00 00 01 02 03",
    "empty with token": "41 00 00 00 aa",
    "empty with TKL 1 but no token": "41 00 00 00",
    "empty with option": "40 00 00 00 b0",
    "empty with payload": "40 00 00 00 ff 01",
    "marker without payload": "40 01 00 00 ff",
    "marker without payload after option": "40 01 00 00 b1 61 ff",
    "delta nibble 15": "40 01 00 00 f0",
    "length nibble 15": "40 01 00 00 0f",
    "delta 15 length 14": "40 01 00 00 fe 00 00",
    "delta ext 1 truncated": "40 01 00 00 d0",
    "delta ext 2 truncated": "40 01 00 00 e0 00",
    "length ext 1 truncated": "40 01 00 00 0d",
    "length ext 2 truncated": "40 01 00 00 0e 01",
    "value truncated": "40 01 00 00 03 61 62",
    "extended value truncated": "40 01 00 00 0e 00 00 61",
    "number over 65535 in one delta": "40 01 00 00 e0 ff ff",
    "number over 65535 cumulatively": "40 01 00 00 e0 fe f2 10",
}


@pytest.mark.parametrize("wire", BAD.values(), ids=BAD.keys())
def test_decode_rejects(wire):
    with pytest.raises(CoapDecodeError):
        decode(h(wire))


def test_decode_error_is_the_shared_decode_error():
    assert issubclass(CoapDecodeError, DecodeError)
    assert issubclass(CoapDecodeError, ValueError)


def test_decode_accepts_bytearray_and_memoryview():
    wire = h("40 01 7d 34 bb") + b"temperature"
    assert decode(bytearray(wire)) == decode(wire) == decode(memoryview(wire))
    assert isinstance(decode(bytearray(wire)).options[0][1], bytes)


def test_decode_keeps_unknown_reserved_and_non_minimal():
    # Option 0 (reserved), Content-Format with leading zeros, unknown critical 65001
    # (delta 64989 = 269 + 0xfcd0).
    wire = h("40 01 00 00") + h("00") + h("c2 00 00") + h("e1 fc d0 ff") + h("ff 99")
    msg = decode(wire)
    assert msg.options == [(0, b""), (12, b"\x00\x00"), (65001, b"\xff")]
    assert msg.content_format == 0
    assert msg.payload == b"\x99"


def test_reserved_code_classes_decode():
    for code in (0x20, 0x60, 0xC0, 0xE1, 0x08):
        msg = decode(bytes((0x40, code, 0, 0)))
        assert msg.code == code


# ---- encode errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "msg",
    [
        Message(Type.CON, Code.GET, 0, token=bytes(9)),
        Message(Type.CON, Code.GET, 0x10000),
        Message(Type.CON, Code.GET, -1),
        Message(Type.CON, 256, 0),
        Message(Type.CON, Code.GET, 0, options=[(65536, b"")]),
        Message(Type.CON, Code.GET, 0, options=[(-1, b"")]),
        Message(Type.ACK, Code.EMPTY, 0, token=b"\x01"),
        Message(Type.RST, Code.EMPTY, 0, options=[(11, b"a")]),
        Message(Type.ACK, Code.EMPTY, 0, payload=b"x"),
    ],
)
def test_encode_rejects(msg):
    with pytest.raises(ValueError):
        encode(msg)


def test_encode_sorts_stably_keeping_repeated_option_order():
    msg = Message(Type.CON, Code.GET, 9)
    msg.add_option(Opt.URI_PATH, "b")
    msg.add_option(Opt.URI_HOST, "h")
    msg.add_option(Opt.URI_QUERY, "q2")
    msg.add_option(Opt.URI_PATH, "a")
    msg.add_option(Opt.URI_QUERY, "q1")
    d = decode(encode(msg))
    assert d.options == [
        (3, b"h"),
        (11, b"b"),
        (11, b"a"),
        (15, b"q2"),
        (15, b"q1"),
    ]
    assert d.uri_path == "/b/a"
    assert d.uri_query == ["q2", "q1"]
    assert msg.options[0] == (11, b"b")  # encode does not reorder the message itself


# ---- uint helpers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n, b",
    [(0, ""), (1, "01"), (255, "ff"), (256, "01 00"), (65535, "ff ff"), (1 << 24, "01 00 00 00")],
)
def test_uint(n, b):
    assert encode_uint(n) == h(b)
    assert decode_uint(h(b)) == n


def test_uint_negative_and_leading_zeros():
    with pytest.raises(ValueError):
        encode_uint(-1)
    assert decode_uint(b"\x00\x00\x05") == 5
    assert decode_uint(b"") == 0


# ---- codes ---------------------------------------------------------------------------------


CODES = {
    "EMPTY": "0.00", "GET": "0.01", "POST": "0.02", "PUT": "0.03", "DELETE": "0.04",
    "FETCH": "0.05", "PATCH": "0.06", "IPATCH": "0.07",
    "CREATED": "2.01", "DELETED": "2.02", "VALID": "2.03", "CHANGED": "2.04",
    "CONTENT": "2.05", "CONTINUE": "2.31",
    "BAD_REQUEST": "4.00", "UNAUTHORIZED": "4.01", "BAD_OPTION": "4.02", "FORBIDDEN": "4.03",
    "NOT_FOUND": "4.04", "METHOD_NOT_ALLOWED": "4.05", "NOT_ACCEPTABLE": "4.06",
    "REQUEST_ENTITY_INCOMPLETE": "4.08", "CONFLICT": "4.09", "PRECONDITION_FAILED": "4.12",
    "REQUEST_ENTITY_TOO_LARGE": "4.13", "UNSUPPORTED_CONTENT_FORMAT": "4.15",
    "UNPROCESSABLE_ENTITY": "4.22", "TOO_MANY_REQUESTS": "4.29",
    "INTERNAL_SERVER_ERROR": "5.00", "NOT_IMPLEMENTED": "5.01", "BAD_GATEWAY": "5.02",
    "SERVICE_UNAVAILABLE": "5.03", "GATEWAY_TIMEOUT": "5.04", "PROXYING_NOT_SUPPORTED": "5.05",
    "HOP_LIMIT_REACHED": "5.08",
}  # fmt: skip


@pytest.mark.parametrize("name, dotted", CODES.items())
def test_registered_codes(name, dotted):
    code = Code[name]
    assert code_str(code) == dotted
    cls, detail = (int(x) for x in dotted.split("."))
    assert code == make_code(cls, detail) == (cls << 5) | detail
    assert isinstance(code, int)


def test_code_classification():
    assert {c.name for c in Code} == set(CODES)
    assert is_request(Code.GET) and is_request(Code.IPATCH) and is_request(31)
    assert not is_request(Code.EMPTY) and not is_request(Code.CONTENT)
    assert is_response(Code.CONTENT) and is_response(Code.HOP_LIMIT_REACHED)
    assert is_response(Code.BAD_REQUEST) and not is_response(Code.GET)
    assert not is_response(0x60) and is_reserved(0x60)  # 3.00
    assert is_reserved(0xE1) and is_reserved(0x20)  # 7.01 (TCP signalling), 1.00
    assert not is_reserved(Code.EMPTY) and not is_reserved(Code.CONTENT)
    assert code_name(Code.CONTENT) == "2.05 Content"
    assert code_name(Code.GET) == "GET"
    assert code_name(0x19) == "0.25"
    with pytest.raises(ValueError):
        make_code(8, 0)


# ---- Message API ---------------------------------------------------------------------------


def test_add_option_value_kinds_and_getters():
    msg = Message(Type.NON, Code.POST, 1)
    assert msg.add_option(Opt.URI_PATH, "s") is msg
    msg.add_option(Opt.ETAG, b"\x01\x02")
    msg.add_option(Opt.ETAG, bytearray(b"\x03"))
    msg.add_option(Opt.MAX_AGE, 0)
    msg.add_option(Opt.SIZE1, 0x10203)
    assert msg.get_options(Opt.ETAG) == [b"\x01\x02", b"\x03"]
    assert msg.get_option(Opt.MAX_AGE) == b""
    assert msg.get_uint(Opt.MAX_AGE) == 0
    assert msg.get_uint(Opt.SIZE1) == 0x10203
    assert msg.get_uint(Opt.ACCEPT) is None
    assert msg.get_uint(Opt.ACCEPT, 60) == 60
    assert msg.get_str(Opt.URI_PATH) == "s"
    assert msg.get_str(Opt.URI_HOST) is None
    assert msg.has_option(Opt.ETAG) and not msg.has_option(Opt.OSCORE)
    assert msg.remove_option(Opt.ETAG) == 2
    assert msg.get_options(Opt.ETAG) == []
    with pytest.raises(TypeError):
        msg.add_option(Opt.ETAG, 1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        msg.add_option(Opt.MAX_AGE, -1)


def test_invalid_utf8_in_string_options_raises_coap_decode_error():
    msg = decode(h("40 01 00 00 b2 ff fe"))
    with pytest.raises(CoapDecodeError):
        _ = msg.uri_path
    with pytest.raises(CoapDecodeError):
        msg.get_str(Opt.URI_PATH)
    assert "bad utf-8" in msg.summary()


@pytest.mark.parametrize(
    "path, segments, back",
    [
        ("/", [], "/"),
        ("", [], "/"),
        ("/a", ["a"], "/a"),
        ("a/b", ["a", "b"], "/a/b"),
        ("/a/b/", ["a", "b", ""], "/a/b/"),
        ("//", ["", ""], "//"),
        (["x/y", "z"], ["x/y", "z"], "/x/y/z"),
        ("/température", ["température"], "/température"),
    ],
)
def test_uri_path_property(path, segments, back):
    msg = Message(Type.CON, Code.GET, 1)
    msg.uri_path = path
    assert msg.path_segments == segments
    assert msg.uri_path == back
    assert decode(encode(msg)).path_segments == segments


def test_uri_path_setter_replaces_and_query():
    msg = Message.request(Type.CON, Code.GET, 1, b"t", "/old/path", query=["a=1", "b"])
    msg.uri_path = "/new"
    assert msg.uri_path == "/new"
    assert msg.uri_query == ["a=1", "b"]
    msg.uri_query = ["c"]
    assert decode(encode(msg)).uri_query == ["c"]
    assert Message(Type.CON, Code.GET, 1).uri_path == "/"


def test_request_factory_and_content_format():
    msg = Message.request(
        Type.NON, Code.POST, 0xFFFF, b"\x01\x02", "/s/t", payload=b"{}", content_format=50
    )
    assert msg.content_format == 50
    d = decode(encode(msg))
    assert d == Message(
        Type.NON, Code.POST, 0xFFFF, b"\x01\x02",
        [(11, b"s"), (11, b"t"), (12, b"\x32")], b"{}",
    )  # fmt: skip
    d.content_format = None
    assert d.content_format is None
    d.content_format = 0
    assert d.get_option(Opt.CONTENT_FORMAT) == b""


def test_copy_is_independent():
    msg = Message.request(Type.CON, Code.GET, 1, path="/a")
    c = msg.copy()
    c.uri_path = "/b"
    assert msg.uri_path == "/a" and c.uri_path == "/b"


def test_summary():
    msg = Message.request(Type.CON, Code.GET, 0x7D34, b"\x71", "/temperature")
    assert msg.summary() == "CON GET mid=0x7d34 token=71 /temperature 0B"
    assert Message.empty(Type.RST, 1).summary() == "RST 0.00 Empty mid=0x0001 token= 0B"


def test_header_length_rejects_what_cannot_be_walked():
    for wire in ("", "40 01", "80 01 00 00", "4f 01 00 00", "40 01 00 00 ff", "40 01 00 00 03 61"):
        with pytest.raises(CoapDecodeError):
            header_length(h(wire))
