"""Member replies into one answer: eo, text/plain and SenML+JSON, codes and failures."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotbench.apps.em.aggregate import (
    CT_SENML_JSON,
    CT_TEXT,
    combine,
    failed,
    member_reply,
    reading,
    timed_out,
)
from iotbench.apps.em.groups import GroupPool, PoolExhausted, address, number
from iotbench.proto.coap.codec import Code

A, B, C = "coap://[fd00::2]/s/t", "coap://[fd00::3]/s/t", "coap://[fd00::4]/s/t"


def replies():
    return [
        member_reply(A, Code.CONTENT, b"21.5", CT_TEXT),
        member_reply(B, Code.CONTENT, b"22", None),
        member_reply(C, Code.NOT_FOUND, b"", None),
    ]


def test_lst_in_text_lists_values_then_errors():
    answer = combine("lst", replies(), CT_TEXT)
    assert answer.code == Code.CONTENT
    assert answer.payload.decode() == (f"{A} 21.5\n{B} 22\n{C} error: 4.04 Not Found\n")


@pytest.mark.parametrize(("eo", "value"), [("avg", "21.75"), ("min", "21.5"), ("max", "22")])
def test_avg_min_max(eo, value):
    answer = combine(eo, replies(), CT_TEXT)
    assert answer.payload.decode() == f"{value}\n{C} error: 4.04 Not Found\n"


def test_senml_records_and_error_records():
    answer = combine("lst", [*replies(), timed_out("coap://[fd00::5]/s/t")], CT_SENML_JSON)
    assert answer.content_format == CT_SENML_JSON
    assert json.loads(answer.payload) == [
        {"n": A, "v": 21.5},
        {"n": B, "v": 22.0},
        {"n": C, "vs": "4.04 Not Found", "err": True},
        {"n": "coap://[fd00::5]/s/t", "vs": "no response", "err": True},
    ]
    assert json.loads(combine("avg", replies(), CT_SENML_JSON).payload)[0] == {
        "n": "avg",
        "v": 21.75,
    }


def test_codes_when_nothing_came_back():
    assert combine("lst", [timed_out(A), timed_out(B)], CT_TEXT).code == Code.GATEWAY_TIMEOUT
    assert combine("lst", [timed_out(A), failed(B, "4.04")], CT_TEXT).code == Code.BAD_GATEWAY
    texts = [member_reply(A, Code.CONTENT, b"on", CT_TEXT)]
    answer = combine("avg", texts, CT_TEXT)
    assert answer.code == Code.BAD_GATEWAY
    assert answer.payload.decode() == f"{A} error: not a number, so no avg\n"
    assert combine("lst", texts, CT_TEXT).payload.decode() == f"{A} on\n"


def test_nested_entity_answers_count_with_each_value():
    nested_text = f"{B} 20\n{C} 24\n{A} error: no response\n".encode()
    outcome = member_reply("coap://[fd00::1]/e/inner", Code.CONTENT, nested_text, CT_TEXT)
    assert outcome.values == ((B, "20"), (C, "24"))
    assert (
        combine("avg", [outcome, member_reply(A, Code.CONTENT, b"25", CT_TEXT)], CT_TEXT).payload
        == b"23\n"
    )
    pack = json.dumps([{"n": B, "v": 20}, {"n": C, "v": 24}, {"n": A, "vs": "x", "err": True}])
    outcome = member_reply("coap://[fd00::1]/e/inner", Code.CONTENT, pack.encode(), CT_SENML_JSON)
    assert outcome.values == ((B, "20"), (C, "24"))
    single = json.dumps([{"n": "avg", "v": 22}]).encode()
    assert member_reply("coap://g/e/x", Code.CONTENT, single, CT_SENML_JSON).values == (
        ("coap://g/e/x", "22"),
    )


def test_readings_with_units():
    volts = [member_reply(m, Code.CONTENT, v, CT_TEXT) for m, v in ((A, b"49.5 V"), (B, b"50.5 V"))]
    assert combine("avg", volts, CT_TEXT).payload == b"50 V\n"
    assert combine("lst", volts, CT_TEXT).payload.decode() == f"{A} 49.5 V\n{B} 50.5 V\n"
    assert json.loads(combine("max", volts, CT_SENML_JSON).payload) == [
        {"n": "max", "v": 50.5, "u": "V"}
    ]
    mixed = [*volts, member_reply(C, Code.CONTENT, b"21 Cel", CT_TEXT)]
    answer = combine("avg", mixed, CT_TEXT)
    assert answer.code == Code.BAD_GATEWAY
    assert answer.payload == b"(all) error: the members use different units (Cel, V)\n"
    pack = json.dumps([{"n": "t", "v": 21.5, "u": "Cel"}]).encode()
    assert member_reply(A, Code.CONTENT, pack, CT_SENML_JSON).values == ((A, "21.5 Cel"),)
    for text, expected in [("21.5", (21.5, None)), ("-3e2 dB", (-300.0, "dB")), ("nan", None),
                           ("1 2", None), ("on", None), (".5%", (0.5, "%"))]:  # fmt: skip
        assert reading(text) == expected


def test_error_replies_carry_the_diagnostic_payload():
    o = member_reply(A, Code.INTERNAL_SERVER_ERROR, b"cannot join ff1e::89:1: No such device", 0)
    assert o.error == "5.00 Internal Server Error: cannot join ff1e::89:1: No such device"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\xff", "not UTF-8"),
        (b"{", "not JSON"),
        (b"{}", "not a pack"),
        (b"[1]", "not a JSON object"),
        (b"[]", "holds no value"),
    ],
)
def test_bad_senml_is_a_failure_with_a_reason(payload, reason):
    outcome = member_reply(A, Code.CONTENT, payload, CT_SENML_JSON)
    assert not outcome.ok and reason in outcome.error


@given(st.integers(0, 255), st.binary(max_size=64), st.sampled_from([None, 0, 110, 50]))
def test_any_reply_is_values_or_a_failure(code, payload, content_format):
    outcome = member_reply(A, code, payload, content_format)
    assert outcome.ok == (outcome.error is None)
    for eo in ("lst", "avg", "min", "max"):
        for ct in (CT_TEXT, CT_SENML_JSON):
            combine(eo, [outcome], ct)


def test_group_pool_hands_out_in_sequence_and_reuses_only_when_exhausted():
    pool = GroupPool(size=3)
    assert [pool.allocate(), pool.allocate()] == ["ff1e::89:1", "ff1e::89:2"]
    pool.release("ff1e::89:1")
    assert pool.allocate() == "ff1e::89:3"  # not 1 again while others are free
    assert pool.allocate() == "ff1e::89:1"  # wrapped
    with pytest.raises(PoolExhausted, match="all 3 multicast addresses"):
        pool.allocate()
    assert number(address(0x1234)) == 0x1234 and address(10) == "ff1e::89:a"
    with pytest.raises(ValueError):
        number("ff02::1")
