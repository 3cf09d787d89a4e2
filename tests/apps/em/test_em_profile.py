"""Entity profiles: parsing, every validation error, updates and query overrides."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotbench.apps.em.profile import (
    ProfileError,
    apply_query,
    parse_profile,
    update_profile,
)
from iotbench.proto.coap.codec import Code

A, B, C = "coap://[fd00::2]/s/t", "coap://[fd00::3]/s/t", "coap://[fd00::4]/s/t"


def parse(doc, content_format=50, max_members=64):
    return parse_profile(json.dumps(doc).encode(), content_format, max_members)


def error_of(doc, **kw) -> ProfileError:
    with pytest.raises(ProfileError) as info:
        parse(doc, **kw)
    return info.value


def test_defaults_of_a_unicast_profile():
    name, p = parse({"er": [A, B]})
    assert name is None
    assert [m.uri for m in p.members] == [A, B]
    assert (p.emt, p.ect, p.enr, p.operation, p.delay_ms) == ("con", "unicast", None, "lst", 0.0)
    assert p.eo == ("lst", "avg", "min", "max")
    assert p.replies_wanted == 2
    assert p.members[0].host == "fd00::2" and p.members[0].port == 5683
    assert p.members[0].path == ("s", "t")


def test_every_field_given():
    doc = {"name": "t-1", "er": [A, B, C], "emt": "non", "enr": 1, "eo": "max", "delay": 100}
    name, p = parse(doc)
    assert name == "t-1"
    assert (p.emt, p.enr, p.eo, p.delay_ms, p.replies_wanted) == ("non", 1, ("max",), 100.0, 1)
    assert json.loads(p.to_json("t-1")) == {
        "name": "t-1", "er": [A, B, C], "emt": "non", "ect": "unicast", "enr": 1,
        "eo": ["max"], "delay": 100.0,
    }  # fmt: skip


def test_a_multicast_profile_defaults_to_non_and_needs_one_path():
    _, p = parse({"er": [A, B], "ect": "multicast"})
    assert (p.ect, p.emt) == ("multicast", "non")
    e = error_of({"er": [A, "coap://[fd00::3]/s/h"], "ect": "multicast"})
    assert "share one path" in str(e) and "/s/h" in str(e)
    e = error_of({"er": [A, "coap://[fd00::3]:5700/s/t"], "ect": "multicast"})
    assert "port 5700" in str(e)
    assert "emt must be non" in str(error_of({"er": [A], "ect": "multicast", "emt": "con"}))


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ({}, "er (the member resource URIs) is required"),
        ({"er": []}, "er must be a non-empty list"),
        ({"er": "coap://x/y"}, "er must be a non-empty list"),
        ({"er": [A, A]}, "er[1] coap://[fd00::2]/s/t is listed twice"),
        ({"er": [A, 7]}, "er[1] must be a coap:// URI string, not 7"),
        ({"er": ["http://[fd00::2]/s"]}, "not a CoAP URI"),
        ({"er": ["coaps://[fd00::2]/s"]}, "only coap:// members"),
        ({"er": [A], "emt": "CON"}, 'emt must be one of con, non, not "CON"'),
        ({"er": [A], "ect": "broadcast"}, "ect must be one of unicast, multicast"),
        ({"er": [A], "eo": "sum"}, 'eo: "sum" is not one of lst, avg, min, max'),
        ({"er": [A, B], "enr": 3}, "enr must be a whole number from 1 to 2"),
        ({"er": [A, B], "enr": 0}, "enr must be a whole number from 1 to 2"),
        ({"er": [A, B], "enr": True}, "enr must be a whole number"),
        ({"er": [A], "delay": -1}, "delay must be 0 to 60000 ms"),
        ({"er": [A], "delay": "100"}, "delay must be 0 to 60000 ms"),
        ({"er": [A], "name": "a b"}, "name must be 1-32 letters"),
        ({"er": [A], "colour": "red"}, "unknown field 'colour'; the fields are name, er,"),
        ([A], "must be a JSON object"),
    ],
)
def test_validation_errors_name_the_field_and_what_is_allowed(doc, words):
    e = error_of(doc)
    assert words in str(e) and e.code == Code.BAD_REQUEST


def test_too_many_members_and_wrong_formats():
    assert "at most 2" in str(error_of({"er": [A, B, C]}, max_members=2))
    e = error_of({"er": [A]}, content_format=0)
    assert e.code == Code.UNSUPPORTED_CONTENT_FORMAT and "application/json" in str(e)
    with pytest.raises(ProfileError, match="not valid JSON"):
        parse_profile(b"{er:", 50, 64)
    with pytest.raises(ProfileError, match="not valid JSON"):
        parse_profile(b"\xff", None, 64)


def test_update_replaces_given_fields_and_keeps_ect():
    _, p = parse({"er": [A, B], "eo": "avg", "enr": 2})
    q = update_profile(p, b'{"eo": ["min", "max"], "delay": 50}', 50, 64)
    assert (q.eo, q.delay_ms, q.enr, q.members) == (("min", "max"), 50.0, 2, p.members)
    assert q.operation == "min"
    q = update_profile(p, json.dumps({"er": [A, B, C]}).encode(), 50, 64)
    assert len(q.members) == 3 and q.enr is None  # a new member list waits for all
    with pytest.raises(ProfileError, match="ect is set at creation"):
        update_profile(p, b'{"ect": "multicast"}', 50, 64)
    with pytest.raises(ProfileError, match="name cannot change"):
        update_profile(p, b'{"name": "x"}', 50, 64)
    _, m = parse({"er": [A, B], "ect": "multicast"})
    with pytest.raises(ProfileError, match="members of a multicast entity are set at creation"):
        update_profile(m, json.dumps({"er": [A]}).encode(), 50, 64)


def test_eo_is_a_list_of_operations_whose_first_is_the_default():
    _, p = parse({"er": [A, B], "eo": ["max", "avg"]})
    assert p.eo == ("max", "avg") and p.operation == "max"
    assert json.loads(p.to_json("x"))["eo"] == ["max", "avg"]
    assert apply_query(p, ["eo=avg"]).operation == "avg"
    with pytest.raises(ProfileError, match="this entity offers max, avg"):
        apply_query(p, ["eo=lst"])
    assert parse({"er": [A], "eo": "min"})[1].eo == ("min",)  # one name: a list of one
    for bad, words in [
        ([], "eo must be a list of distinct operations"),
        (["avg", "avg"], "eo must be a list of distinct operations"),
        (["avg", "sum"], 'eo: "sum" is not one of'),
        (3, "eo must be a list"),
    ]:
        with pytest.raises(ProfileError, match=words):
            parse({"er": [A], "eo": bad})


def test_query_overrides():
    _, p = parse({"er": [A, B, C]})
    q = apply_query(p, ["eo=avg", "enr=1", "emt=non", "delay=20"])
    assert (q.operation, q.enr, q.emt, q.delay_ms) == ("avg", 1, "non", 20.0)
    assert p.eo == ("lst", "avg", "min", "max")  # the stored profile is untouched
    assert p.operation == "lst"
    for query, words in [
        (["ect=multicast"], "a request may override emt, enr, eo, delay"),
        (["eo"], "give eo=<value> once"),
        (["eo=avg", "eo=min"], "give eo=<value> once"),
        (["enr=x"], "enr='x' is not a number"),
        (["enr=4"], "enr must be a whole number from 1 to 3"),
        (["eo=median"], "this entity offers lst, avg, min, max"),
    ]:
        with pytest.raises(ProfileError, match=words):
            apply_query(p, query)


@given(st.binary(max_size=200))
def test_any_payload_is_a_profile_or_a_profile_error(payload):
    try:
        parse_profile(payload, 50, 64)
    except ProfileError as e:
        assert 128 <= e.code < 192  # a 4.xx


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        ),
        max_leaves=12,
    )
)
def test_any_json_document_is_a_profile_or_a_profile_error(doc):
    for candidate in (doc, {"er": doc}, {"er": [A], "enr": doc}, {"er": [A], "delay": doc}):
        try:
            parse_profile(json.dumps(candidate).encode(), 50, 64)
        except ProfileError:
            pass
