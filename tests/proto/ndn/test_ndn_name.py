"""Names, components and the NDN URI scheme, with the specification's examples."""

import pytest

from iotbench.proto.ndn.name import Component, Name, ends_with_digest
from iotbench.proto.ndn.tlv import NdnDecodeError
from iotbench.proto.ndn.types import ComponentType

DIGEST_HEX = "893259d98aca58c451453f29ec7dc38688e690dd0b59ef4f3b9d33738bff0b8d"


def test_name_wire_by_hand():
    # Name "/A": Name TLV (7, 3) holding one GenericNameComponent (8, 1, 'A').
    assert Name("/A").wire == bytes.fromhex("0703080141")
    assert Name.from_wire(bytes.fromhex("0703080141")) == Name("/A")
    assert Name("/").wire == b"\x07\x00"
    n = Name("/ndn/test")
    assert n.value == bytes.fromhex("08036e646e") + bytes.fromhex("080474657374")


def test_spec_uri_examples():
    # "42=Hello%20world": TLV-TYPE 42, TLV-VALUE "Hello world".
    c = Component.from_uri("42=Hello%20world")
    assert c == Component(42, b"Hello world")
    assert c.to_uri() == "42=Hello%20world"
    # "Hello%20world" is equivalent to "8=Hello%20world".
    assert Component.from_uri("Hello%20world") == Component.from_uri("8=Hello%20world")
    assert Component.from_uri("8=Hello%20world").to_uri() == "Hello%20world"
    # Digest components have alternate forms (lower-case hex preferred, upper accepted).
    d = Component.from_uri("sha256digest=" + DIGEST_HEX)
    assert d == Component(ComponentType.IMPLICIT_SHA256_DIGEST, bytes.fromhex(DIGEST_HEX))
    assert d.to_uri() == "sha256digest=" + DIGEST_HEX
    assert Component.from_uri("sha256digest=" + DIGEST_HEX.upper()) == d
    assert Component.from_uri("1=" + "".join(f"%{b:02X}" for b in bytes.fromhex(DIGEST_HEX))) == d
    p = Component.from_uri("params-sha256=" + DIGEST_HEX)
    assert p.type == ComponentType.PARAMETERS_SHA256_DIGEST
    assert p.to_uri() == "params-sha256=" + DIGEST_HEX


@pytest.mark.parametrize(
    ("uri", "value"),
    [
        ("...", b""),
        ("....", b"."),
        (".....", b".."),
        ("......", b"..."),
        ("a.b", b"a.b"),
        ("-._~", b"-._~"),
        ("%00%FF", b"\x00\xff"),
        ("%2F", b"/"),
        ("%2e%2E", b".."),
    ],
)
def test_generic_component_escaping(uri, value):
    c = Component.from_uri(uri)
    assert c == Component(8, value)
    assert Component.from_uri(c.to_uri()) == c


def test_escape_output_uses_upper_case_and_only_unreserved_plain():
    assert Component.generic(b"a b/c=d+%").to_uri() == "a%20b%2Fc%3Dd%2B%25"
    assert Component.generic(bytes(range(0x2D, 0x30))).to_uri() == "-.%2F"
    assert Component.generic(b"..").to_uri() == "....."
    assert Component.generic(b"").to_uri() == "..."
    assert Component(200, b"").to_uri() == "200=..."


@pytest.mark.parametrize(
    ("uri", "typ", "number"),
    [
        ("seg=0", ComponentType.SEGMENT, 0),
        ("seg=300", ComponentType.SEGMENT, 300),
        ("off=65536", ComponentType.BYTE_OFFSET, 65536),
        ("v=1700000000000", ComponentType.VERSION, 1700000000000),
        ("t=1", ComponentType.TIMESTAMP, 1),
        ("seq=18446744073709551615", ComponentType.SEQUENCE_NUM, 2**64 - 1),
    ],
)
def test_number_conventions(uri, typ, number):
    c = Component.from_uri(uri)
    assert c.type == typ
    assert c.to_number() == number
    assert c.to_uri() == uri
    assert len(c.value) in (1, 2, 4, 8)


def test_number_convention_constructors_and_wire():
    assert Component.segment(1).wire == bytes.fromhex("320101")
    assert Component.version(256).wire == bytes.fromhex("36020100")
    assert Component.sequence_num(5) == Component.from_uri("seq=5")
    assert Component.timestamp(7).type == 0x38
    assert Component.byte_offset(7).type == 0x34
    assert Component.keyword(b"k").to_uri() == "32=k"
    # A numeric type whose value is not an NNI falls back to the generic form.
    assert Component(ComponentType.SEGMENT, b"\x00\x01\x02").to_uri() == "50=%00%01%02"
    # So does a number that is not in its shortest encoding: the URI stays lossless.
    assert Component(ComponentType.SEGMENT, b"\x00\x00").to_uri() == "50=%00%00"


@pytest.mark.parametrize(
    "bad",
    [
        ".",
        "..",
        "%",
        "%4",
        "%G0",
        "0=a",
        "65536=a",
        "seg=x",
        "seg=-1",
        "seg=18446744073709551616",
        "sha256digest=00",
        "params-sha256=" + "g" * 64,
        "foo=bar",
        "1=abc",  # a digest component must be 32 bytes
    ],
)
def test_bad_uri_components(bad):
    with pytest.raises(NdnDecodeError):
        Component.from_uri(bad)


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("/", "/"),
        ("", "/"),
        ("ndn:/a/b", "/a/b"),
        ("NDN:/a/b", "/a/b"),
        ("/a/b/", "/a/b"),
        ("a/b", "/a/b"),
        ("ndn://authority/a/b", "/a/b"),
        ("//authority", "/"),
        ("/a/b?query#fragment", "/a/b"),
        ("/8=a/seg=1", "/a/seg=1"),
    ],
)
def test_name_uri_forms(uri, expected):
    assert Name(uri).to_uri() == expected


@pytest.mark.parametrize("bad", ["/a//b", "/a//", "/./a", "/a/.."])
def test_bad_name_uris(bad):
    with pytest.raises(NdnDecodeError):
        Name(bad)


def test_sequence_protocol_and_relations():
    n = Name("/a/b/seg=3")
    assert len(n) == 3
    assert n[0] == Component.generic("a")
    assert n[-1].to_number() == 3
    assert n[:2] == Name("/a/b")
    assert n[1:] == Name("/b/seg=3")
    assert n[5:] == Name("/")
    assert n.prefix(-1) == Name("/a/b")
    assert n.append(b"x") == Name("/a/b/seg=3/x")
    assert Name("/a") + Name("/b") == Name("/a/b")
    assert Name("/a") + ["b", Component.version(1)] == Name("/a/b/v=1")
    assert [c.to_uri() for c in n] == ["a", "b", "seg=3"]
    assert Name(n.components) == n
    assert Name("/a/b").is_prefix_of(n) and n.is_prefix_of(n) and Name("/").is_prefix_of(n)
    assert not Name("/a/bb").is_prefix_of(Name("/a/b"))
    assert not Name("/a/b").is_prefix_of(Name("/a/bc"))
    assert list(n.prefix_values()) == [n.value, Name("/a/b").value, Name("/a").value, b""]
    assert hash(Name("/a/b")) == hash(Name(["a", "b"]))
    assert len({Name("/a"), Name("/a"), Name("/b")}) == 2


def test_canonical_order():
    # Type first, then shorter value first, then bytes.
    ordered = [
        Name("/sha256digest=" + "00" * 32),
        Name("/a"),
        Name("/b"),
        Name("/aa"),
        Name("/aa/a"),
        Name("/seg=0"),
        Name("/200=a"),
        Name("/300=a"),
    ]
    assert sorted(ordered[3:] + ordered[:3]) == ordered
    assert Name("/a") < Name("/a/b") <= Name("/a/b") and Name("/b") > Name("/a/z")


def test_from_value_rejects_bad_components():
    with pytest.raises(NdnDecodeError):
        Name.from_value(bytes.fromhex("0100"))  # digest of 0 bytes
    with pytest.raises(NdnDecodeError):
        Name.from_value(bytes.fromhex("fe0001000000"))  # type 65536
    with pytest.raises(NdnDecodeError):
        Name.from_value(bytes.fromhex("0805aa"))  # truncated
    with pytest.raises(NdnDecodeError):
        Name.from_wire(bytes.fromhex("0800"))  # not a Name
    assert Name.from_value(bytes.fromhex("fdffff00")) == Name([Component(65535, b"")])


def test_constructing_invalid_components_is_a_value_error():
    with pytest.raises(ValueError):
        Name([Component(0, b"")])
    with pytest.raises(ValueError):
        Name([Component(1, b"short")])
    with pytest.raises(ValueError):
        Component.implicit_digest(b"x")
    with pytest.raises(TypeError):
        Name([3])


def test_a_name_cannot_be_changed():
    name = Name("/a/b/seg=3")
    name[0]  # (a component decoded and kept)
    for attribute in ("value", "_components", "_uri", "anything"):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(name, attribute, b"\x08\x01z")
        with pytest.raises(AttributeError, match="immutable"):
            delattr(name, attribute)
    assert name.value == b"\x08\x01a\x08\x01b\x32\x01\x03"
    assert name.to_uri() == "/a/b/seg=3"


def test_a_name_survives_pickling_and_copying():
    import copy
    import pickle

    name = Name("/a/b/seg=3")
    name[2], name.to_uri()  # (with its decoded components and URI kept)
    for again in (pickle.loads(pickle.dumps(name)), copy.copy(name), copy.deepcopy(name)):
        assert again == name and hash(again) == hash(name)
        assert again.value == name.value and len(again) == 3
        assert list(again) == list(name) and again.to_uri() == "/a/b/seg=3"
        with pytest.raises(AttributeError):
            again.value = b""


def test_ends_with_digest_reads_the_last_components_type():
    digest = Component(ComponentType.IMPLICIT_SHA256_DIGEST, bytes.fromhex(DIGEST_HEX))
    assert ends_with_digest(Name(["a", digest]))
    assert not ends_with_digest(Name([digest, "a"]))
    assert not ends_with_digest(Name("/"))
    # A value byte of 1 is not a type: only the component's own first byte is.
    assert not ends_with_digest(Name([b"\x01", b"\x01"]))
    # Types of three bytes (253 and above) whose bytes hold a 1 are not the digest.
    assert not ends_with_digest(Name([Component(0x0101, b"x")]))
    assert ends_with_digest(Name.from_wire(Name(["x", digest]).wire))
