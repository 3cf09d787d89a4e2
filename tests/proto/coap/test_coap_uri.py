"""coap:// URI parsing and decomposition into options (RFC 7252 6.4, 6.5)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iotbench.proto.coap.codec import Message, Opt, Type, decode, encode
from iotbench.proto.coap.uri import (
    CoapUriError,
    compose_coap_uri,
    options_from_uri,
    parse_coap_uri,
    uri_scheme,
)


@pytest.mark.parametrize(
    "uri, expected",
    [
        ("coap://example.net/.well-known/core", ("example.net", 5683, [".well-known", "core"], [])),
        ("coap://EXAMPLE.net:5684", ("example.net", 5684, [], [])),
        ("coap://h/", ("h", 5683, [], [])),
        ("coap://h:/a", ("h", 5683, ["a"], [])),
        ("coap://h/a/", ("h", 5683, ["a", ""], [])),
        ("coap://h//", ("h", 5683, ["", ""], [])),
        ("coap://h?", ("h", 5683, [], [""])),
        ("coap://h/?a=1&b&", ("h", 5683, [], ["a=1", "b", ""])),
        ("coap://192.0.2.1:61616/s", ("192.0.2.1", 61616, ["s"], [])),
        ("coap://[2001:DB8::1]/x", ("2001:db8::1", 5683, ["x"], [])),
        ("coap://[::1]:5700/a/b%20c?x=1&y", ("::1", 5700, ["a", "b c"], ["x=1", "y"])),
        ("coap://[fe80::1%25eth0]/", ("fe80::1%eth0", 5683, [], [])),
        ("coap://h/a%2Fb/%C3%A9", ("h", 5683, ["a/b", "é"], [])),
        ("coap://h/?q=%26%3D", ("h", 5683, [], ["q=&="])),
        ("coaps://h/secure", ("h", 5684, ["secure"], [])),
        ("COAP+TCP://h/t", ("h", 5683, ["t"], [])),
    ],
)
def test_parse(uri, expected):
    parsed = parse_coap_uri(uri)
    assert tuple(parsed) == expected
    host, port, path, query = parsed
    assert (host, port, path, query) == expected


@pytest.mark.parametrize(
    "uri",
    [
        "http://h/",
        "/relative/path",
        "coap:/no-authority",
        "coap://h/#frag",
        "coap:///nohost",
        "coap://u@h/",
        "coap://h:99999/",
        "coap://h:12a/",
        "coap://[::1/",
        "coap://[::1]x/",
        "coap://[not-v6]/",
        "coap://300.1.1.1/",
        "coap://h/%ff",
    ],
)
def test_parse_rejects(uri):
    with pytest.raises(CoapUriError):
        parse_coap_uri(uri)
    assert issubclass(CoapUriError, ValueError)


def test_options_from_uri_rfc_steps():
    assert options_from_uri("coap://example.net:5683/~sensors/temp.xml?a&b=1") == [
        (Opt.URI_HOST, b"example.net"),
        (Opt.URI_PATH, b"~sensors"),
        (Opt.URI_PATH, b"temp.xml"),
        (Opt.URI_QUERY, b"a"),
        (Opt.URI_QUERY, b"b=1"),
    ]
    # IP literals need no Uri-Host; Uri-Port only when the destination port differs.
    assert options_from_uri("coap://[2001:db8::2:1]/") == []
    assert options_from_uri("coap://198.51.100.1:61616/", destination_port=5683) == [
        (Opt.URI_PORT, b"\xf0\xb0")
    ]
    assert options_from_uri("coap://198.51.100.1:61616/", destination_port=61616) == []
    assert options_from_uri("coap://n/x", with_host=False) == [(Opt.URI_PATH, b"x")]


def test_options_from_uri_feed_a_request():
    msg = Message(Type.CON, 1, 5, options=options_from_uri("coap://[::1]/a%20b/c?k=v"))
    d = decode(encode(msg))
    assert d.path_segments == ["a b", "c"]
    assert d.uri_path == "/a b/c"
    assert d.uri_query == ["k=v"]


def test_scheme_and_compose():
    assert uri_scheme("CoAPs://h") == "coaps"
    assert compose_coap_uri("h", 5683, ["a b", "c/d"], ["x=1&2"]) == "coap://h/a%20b/c%2Fd?x=1%262"
    assert compose_coap_uri("::1", 5700, ["s"]) == "coap://[::1]:5700/s"
    assert compose_coap_uri("h", 5684, scheme="coaps") == "coaps://h"


segments = st.lists(st.text(max_size=6), max_size=4).filter(lambda s: s != [""])
queries = st.lists(st.text(max_size=6), max_size=4)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["h", "example.org", "10.0.0.1", "::1", "fe80::1%eth0"]),
    st.integers(1, 0xFFFF),
    segments,
    queries,
)
def test_compose_then_parse_round_trips(host, port, path, query):
    uri = compose_coap_uri(host, port, path, query)
    assert parse_coap_uri(uri) == (host, port, path, query)
