"""RPL control messages against RFC 6550's layouts, round trips, and malformed input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iotbench.net.icmpv6 import ICMPV6_RPL, build_icmpv6, parse_icmpv6
from iotbench.net.rpl.codec import (
    DAO,
    DAO_ACK,
    DIO,
    DIS,
    Dao,
    DaoAck,
    Dio,
    Dis,
    DodagConfiguration,
    Opaque,
    PrefixInformation,
    RplDecodeError,
    Target,
    Transit,
    decode,
    encode,
)

DODAG = bytes.fromhex("fd000000000000000000000000000001")
NODE = bytes.fromhex("fd000000000000000200000000000005")


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def test_dio_base_and_configuration_by_hand():
    dio = Dio(0x1E, 240, 384, DODAG, dtsn=241, configuration=DodagConfiguration())
    code, body = encode(dio)
    assert code == DIO == 0x01
    # InstanceID 0x1e | Version 240 | Rank 384 (0x0180) | G=1 MOP=3 Prf=0: 1 0 011 000
    # = 0x98 | DTSN 241 | Flags 0 | Reserved 0 | DODAGID
    assert body[:8] == h("1e f0 0180 98 f1 00 00")
    assert body[8:24] == DODAG
    # DODAG Configuration (type 4, length 14): flags 0 (A=0, PCS=0), doublings 8,
    # Imin 12, redundancy 10, MaxRankIncrease 1792, MinHopRankIncrease 256, OCP 1,
    # reserved, default lifetime 30, lifetime unit 60.
    assert body[24:] == h("04 0e 00 08 0c 0a 0700 0100 0001 00 1e 003c")
    assert decode(code, body) == dio


def test_dis_dao_and_dao_ack_by_hand():
    assert encode(Dis()) == (DIS, h("00 00"))
    dao = Dao(0, 241, ((Target(NODE), Transit(30, 242)),), ack_request=True)
    code, body = encode(dao)
    # InstanceID 0 | K=1 D=0 flags (0x80) | reserved | DAOSequence 241
    # Target (type 5, length 18): flags 0, prefix length 128, the address
    # Transit (type 6, length 4): E=0 flags, path control 0, sequence 242, lifetime 30
    assert code == DAO
    assert body == h("00 80 00 f1") + h("05 12 00 80") + NODE + h("06 04 00 00 f2 1e")
    assert decode(code, body) == dao
    ack = DaoAck(0, 241, 0)
    assert encode(ack) == (DAO_ACK, h("00 00 f1 00"))
    with_id = DaoAck(5, 9, 128, DODAG)
    assert encode(with_id) == (DAO_ACK, h("05 80 09 80") + DODAG)  # D flag, DODAGID
    assert decode(*encode(with_id)) == with_id


def test_prefix_information_option_layout():
    dio = Dio(0, 1, 256, DODAG, prefix=PrefixInformation(DODAG[:8] + bytes(8)))
    _, body = encode(dio)
    option = body[24:]
    # type 8, length 30, prefix length 64, L=0 A=1 R=0 (0x40), lifetimes, reserved, prefix
    assert option[:4] == h("08 1e 40 40")
    assert option[4:12] == h("ffffffff ffffffff") and option[12:16] == bytes(4)
    assert option[16:] == DODAG[:8] + bytes(8)
    assert decode(DIO, body) == dio


def test_pad_options_and_unknown_options_are_skipped_or_kept():
    base = encode(Dio(0, 1, 256, DODAG))[1]
    padded = base + h("00") + h("01 02 00 00") + h("2a 01 ff")  # Pad1, PadN, unknown 42
    dio = decode(DIO, padded)
    assert dio.options == (Opaque(42, b"\xff"),)


def test_dao_targets_share_the_transit_that_follows_them():
    a, b = Target(NODE), Target(DODAG)
    body = h("00 00 00 05") + h("05 12 00 80") + NODE + h("05 12 00 80") + DODAG
    body += h("06 04 00 00 01 0a")
    dao = decode(DAO, body)
    transit = Transit(10, 1)
    assert dao.targets == ((a, transit), (b, transit))


@pytest.mark.parametrize(
    ("code", "body", "message"),
    [
        (DIS, b"\x00", "shorter than its 2-byte base"),
        (DIO, bytes(10), "shorter than its base"),
        (DIO, encode(Dio(0, 1, 256, DODAG))[1] + h("04 02 00 00"), "not 14"),
        (DIO, encode(Dio(0, 1, 256, DODAG))[1] + h("05 05 00"), "runs past"),
        (DAO, h("00 00 00 05") + h("05 12 00 80") + NODE, "without Transit"),
        (DAO, h("00 40 00 05"), "no DODAGID"),
        (DAO, h("00 00 00 05 05 03 00 80 01 06 04 00 00 01 0a"), "RPL Target of 1 bytes"),
        (DAO_ACK, h("00 80 01 00"), "no DODAGID"),
        (0x80, b"", "secure RPL message"),
        (0x07, b"", "unknown RPL message code"),
    ],
)
def test_malformed_messages_raise_rpl_decode_error(code, body, message):
    with pytest.raises(RplDecodeError, match=message):
        decode(code, body)


def test_icmpv6_framing_with_checksum():
    src, dst = bytes.fromhex("fe80" + "00" * 13 + "01"), bytes.fromhex("ff02" + "00" * 13 + "1a")
    code, body = encode(Dis())
    message = build_icmpv6(src, dst, ICMPV6_RPL, code, body)
    assert message[:2] == bytes((155, 0))
    assert parse_icmpv6(message, src, dst) == (155, 0, body)
    broken = message[:-1] + bytes((message[-1] ^ 1,))
    with pytest.raises(Exception, match="checksum"):
        parse_icmpv6(broken, src, dst)


addresses = st.binary(min_size=16, max_size=16)
messages = st.one_of(
    st.builds(Dis),
    st.builds(
        Dio,
        st.integers(0, 255),
        st.integers(0, 255),
        st.integers(0, 0xFFFF),
        addresses,
        dtsn=st.integers(0, 255),
        grounded=st.booleans(),
        mop=st.integers(0, 7),
        preference=st.integers(0, 7),
        configuration=st.none() | st.builds(DodagConfiguration, dio_redundancy=st.integers(0, 255)),
    ),
    st.builds(
        Dao,
        st.integers(0, 255),
        st.integers(0, 255),
        st.lists(
            st.tuples(
                st.builds(Target, addresses),
                st.builds(Transit, st.integers(0, 255), st.integers(0, 255)),
            ),
            max_size=5,
        ).map(tuple),
        ack_request=st.booleans(),
        dodag_id=st.none() | addresses,
    ),
    st.builds(DaoAck, st.integers(0, 255), st.integers(0, 255), st.integers(0, 255)),
)


@settings(max_examples=300, deadline=None)
@given(messages)
def test_messages_round_trip(message):
    assert decode(*encode(message)) == message


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 255), st.binary(max_size=120))
def test_arbitrary_bytes_only_raise_rpl_decode_error(code, body):
    try:
        decode(code, body)
    except RplDecodeError:
        pass
