"""CoAP option registry: numbers, derived C/U/N bits and RFC 7252 5.4.3/5.4.5 checks."""

import pytest

from iotbench.proto.coap.codec import (
    OPTIONS,
    Opt,
    OptFormat,
    invalid_options,
    is_critical,
    is_no_cache_key,
    is_unsafe,
    option_def,
    option_name,
    unrecognized_critical,
)

# (number, critical, unsafe, no-cache-key) as printed in the defining RFCs' option tables.
FLAGS = [
    (Opt.IF_MATCH, 1, 0, 0),
    (Opt.URI_HOST, 1, 1, 0),
    (Opt.ETAG, 0, 0, 0),
    (Opt.IF_NONE_MATCH, 1, 0, 0),
    (Opt.OBSERVE, 0, 1, 0),
    (Opt.URI_PORT, 1, 1, 0),
    (Opt.LOCATION_PATH, 0, 0, 0),
    (Opt.OSCORE, 1, 0, 0),
    (Opt.URI_PATH, 1, 1, 0),
    (Opt.CONTENT_FORMAT, 0, 0, 0),
    (Opt.MAX_AGE, 0, 1, 0),
    (Opt.URI_QUERY, 1, 1, 0),
    (Opt.HOP_LIMIT, 0, 0, 0),
    (Opt.ACCEPT, 1, 0, 0),
    (Opt.Q_BLOCK1, 1, 1, 0),
    (Opt.LOCATION_QUERY, 0, 0, 0),
    (Opt.EDHOC, 1, 0, 0),
    (Opt.BLOCK2, 1, 1, 0),
    (Opt.BLOCK1, 1, 1, 0),
    (Opt.SIZE2, 0, 0, 1),
    (Opt.Q_BLOCK2, 1, 1, 0),
    (Opt.PROXY_URI, 1, 1, 0),
    (Opt.PROXY_SCHEME, 1, 1, 0),
    (Opt.SIZE1, 0, 0, 1),
    (Opt.ECHO, 0, 0, 1),
    (Opt.NO_RESPONSE, 0, 1, 0),
    (Opt.REQUEST_TAG, 0, 0, 0),
]


def test_option_numbers():
    expected = {
        "IF_MATCH": 1, "URI_HOST": 3, "ETAG": 4, "IF_NONE_MATCH": 5, "OBSERVE": 6,
        "URI_PORT": 7, "LOCATION_PATH": 8, "OSCORE": 9, "URI_PATH": 11,
        "CONTENT_FORMAT": 12, "MAX_AGE": 14, "URI_QUERY": 15, "HOP_LIMIT": 16, "ACCEPT": 17,
        "Q_BLOCK1": 19, "LOCATION_QUERY": 20, "EDHOC": 21, "BLOCK2": 23, "BLOCK1": 27,
        "SIZE2": 28, "Q_BLOCK2": 31, "PROXY_URI": 35, "PROXY_SCHEME": 39, "SIZE1": 60,
        "ECHO": 252, "NO_RESPONSE": 258, "REQUEST_TAG": 292,
    }  # fmt: skip
    assert {o.name: o.value for o in Opt} == expected
    assert set(OPTIONS) == set(Opt)


@pytest.mark.parametrize("number, c, u, n", FLAGS)
def test_flags_derived_from_number(number, c, u, n):
    d = option_def(number)
    assert d is not None
    assert (d.critical, d.unsafe, d.no_cache_key) == (bool(c), bool(u), bool(n))
    assert (is_critical(number), is_unsafe(number), is_no_cache_key(number)) == (c, u, n)


def test_registry_entries():
    assert option_def(Opt.URI_HOST).format is OptFormat.STRING
    assert (option_def(Opt.URI_HOST).min_length, option_def(Opt.URI_HOST).max_length) == (1, 255)
    assert option_def(Opt.PROXY_URI).max_length == 1034
    assert option_def(Opt.IF_NONE_MATCH).format is OptFormat.EMPTY
    assert option_def(Opt.EDHOC).format is OptFormat.EMPTY
    assert option_def(Opt.ECHO).max_length == 40
    assert option_def(Opt.HOP_LIMIT).min_length == 1
    repeatable = {d.number for d in OPTIONS.values() if d.repeatable}
    assert repeatable == {
        Opt.IF_MATCH, Opt.ETAG, Opt.LOCATION_PATH, Opt.URI_PATH, Opt.URI_QUERY,
        Opt.LOCATION_QUERY, Opt.Q_BLOCK2, Opt.REQUEST_TAG,
    }  # fmt: skip
    assert option_def(2049) is None
    assert option_name(Opt.URI_PATH) == "Uri-Path"
    assert option_name(2049) == "Option-2049"
    # unknown numbers still get their bits from the number
    assert is_critical(2049) and not is_unsafe(2049)


def test_invalid_options():
    opts = [
        (Opt.URI_HOST, b""),  # too short
        (Opt.URI_PATH, b"\xff"),  # not UTF-8
        (Opt.URI_PATH, b"ok"),
        (Opt.CONTENT_FORMAT, b"\x00"),
        (Opt.CONTENT_FORMAT, b"\x01"),  # repeated non-repeatable
        (Opt.ETAG, bytes(9)),  # too long
        (Opt.IF_NONE_MATCH, b"\x00"),  # empty format with a value
        (Opt.OBSERVE, b"\x01\x02\x03\x04"),
        (2049, b"anything"),  # unknown: not judged here
    ]
    assert invalid_options(opts) == [
        (Opt.URI_HOST, b""),
        (Opt.URI_PATH, b"\xff"),
        (Opt.CONTENT_FORMAT, b"\x01"),
        (Opt.ETAG, bytes(9)),
        (Opt.IF_NONE_MATCH, b"\x00"),
        (Opt.OBSERVE, b"\x01\x02\x03\x04"),
    ]
    assert invalid_options([(Opt.URI_PATH, b"a"), (Opt.URI_PATH, b"")]) == []


def test_unrecognized_critical():
    opts = [(Opt.URI_PATH, b"a"), (2049, b""), (2050, b""), (Opt.OSCORE, b"")]
    assert unrecognized_critical(opts) == [2049]
    assert unrecognized_critical(opts, known={Opt.URI_PATH}) == [2049, Opt.OSCORE]
