"""Interest, Data and SignatureInfo against packets encoded by hand from the spec's grammar."""

import hashlib

import pytest
from hypothesis import given
from ndn_strategies import names

from iotbench.proto.ndn.data import Data, MetaInfo, make_data
from iotbench.proto.ndn.interest import Interest, _params_digest_count, make_interest
from iotbench.proto.ndn.name import Component, Name
from iotbench.proto.ndn.packet import decode_packet
from iotbench.proto.ndn.siginfo import KeyLocator, SignatureInfo
from iotbench.proto.ndn.signing import DigestSha256Verifier, HmacSha256Signer, verify
from iotbench.proto.ndn.tlv import NdnDecodeError

NAME_NDN_TEST = "070b" + "08036e646e" + "080474657374"  # /ndn/test

# Interest = INTEREST-TYPE TLV-LENGTH Name [CanBePrefix] [MustBeFresh] [ForwardingHint]
#            [Nonce] [InterestLifetime] [HopLimit] [ApplicationParameters ...]
HAND_INTEREST = bytes.fromhex(
    "051e"  # Interest, 30 bytes
    + NAME_NDN_TEST  # 13
    + "2100"  # CanBePrefix
    + "1200"  # MustBeFresh
    + "0a0401020304"  # Nonce 0x01020304
    + "0c020fa0"  # InterestLifetime 4000 ms
    + "220140"  # HopLimit 64
)


def test_hand_encoded_interest():
    i = Interest(HAND_INTEREST)
    assert i.name == Name("/ndn/test")
    assert i.can_be_prefix and i.must_be_fresh
    assert i.nonce == 0x01020304
    assert i.lifetime_ms == 4000 and i.has_lifetime
    assert i.hop_limit == 64
    assert i.forwarding_hint == ()
    assert i.app_parameters is None and i.signature_info is None and i.signed_portion is None
    assert i.parameters_digest_valid()
    built = make_interest(
        "/ndn/test",
        can_be_prefix=True,
        must_be_fresh=True,
        nonce=0x01020304,
        lifetime_ms=4000,
        hop_limit=64,
    )
    assert built.wire == HAND_INTEREST
    assert isinstance(decode_packet(HAND_INTEREST), Interest)


def test_minimal_interest_defaults():
    i = Interest(bytes.fromhex("0505" + "0703080141"))
    assert i.name == Name("/A")
    assert not i.can_be_prefix and not i.must_be_fresh
    assert i.nonce is None and i.hop_limit is None
    assert i.lifetime_ms == 4000 and not i.has_lifetime  # spec default


def test_forwarding_hint():
    # ForwardingHint = FORWARDING-HINT-TYPE TLV-LENGTH 1*Name
    wire = bytes.fromhex("0512" + "0703080161" + "1e05" + "0703080168" + "0a0400000001")
    assert make_interest("/a", forwarding_hint=["/h"], nonce=1).wire == wire
    assert Interest(wire).forwarding_hint == (Name("/h"),)
    i = make_interest("/a", forwarding_hint=["/hint/one", Name("/two")])
    assert i.forwarding_hint == (Name("/hint/one"), Name("/two"))
    with pytest.raises(NdnDecodeError, match="without any Name"):
        _ = Interest(bytes.fromhex("0509" + "0703080161" + "1e028000")).forwarding_hint


def test_application_parameters_digest():
    i = make_interest("/a/b", app_parameters=b"\x01\x02", nonce=7)
    digest = hashlib.sha256(bytes.fromhex("24020102")).digest()
    assert i.name == Name("/a/b").append(Component.params_digest(digest))
    assert i.app_parameters == b"\x01\x02"
    assert i.parameters_digest() == digest and i.parameters_digest_valid()
    # The digest component stays where the application put it.
    j = make_interest(
        Name("/a").append(Component.params_digest(b"\0" * 32)) + Name("/seg=1"), app_parameters=b""
    )
    assert j.name[1].type == 2 and j.name[2] == Component.segment(1) and j.parameters_digest_valid()


def test_tampered_parameters_fail_the_digest_check_not_decoding():
    wire = bytearray(make_interest("/a", app_parameters=b"xy").wire)
    wire[-1] ^= 1
    i = Interest(bytes(wire))
    assert i.name[0] == Component.generic("a")
    assert not i.parameters_digest_valid()


def test_signed_interest_layout():
    signer = HmacSha256Signer(b"secret", key_name="/key")
    i = make_interest(
        "/a",
        app_parameters=b"p",
        signer=signer,
        signature_nonce=b"\x01\x02",
        signature_time_ms=5,
        signature_seq_num=9,
        nonce=1,
    )
    info = i.signature_info
    assert info == SignatureInfo(
        4, KeyLocator(name=Name("/key")), nonce=b"\x01\x02", time_ms=5, seq_num=9
    )
    # Covered: name components except the digest, then ApplicationParameters..InterestSignatureInfo.
    app = bytes.fromhex("240170")
    sig_info = info.encode(0x2C)
    assert i.signed_portion == Name("/a").value + app + sig_info
    # The digest covers ApplicationParameters to the end, signature included.
    assert i.parameters_digest_valid()
    assert i.wire.endswith(sig_info + bytes.fromhex("2e20") + i.signature_value)


def test_signer_without_parameters_adds_empty_ones():
    i = make_interest("/a", signer=HmacSha256Signer(b"k"))
    assert i.app_parameters == b"" and i.signature_info.key_locator is None


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("2100", "without Name"),
        (NAME_NDN_TEST + "210101", "must be empty"),
        (NAME_NDN_TEST + "0a03010203", None),  # bad nonce length: found when read
        (NAME_NDN_TEST + "0a04000000010a0400000002", "out-of-order"),
        (NAME_NDN_TEST + "1200" + "2100", "out-of-order"),  # CanBePrefix after MustBeFresh
        (NAME_NDN_TEST + "2c031b0100", "without ApplicationParameters"),
        (NAME_NDN_TEST + "2400" + "2c031b0100", "go together"),
        (NAME_NDN_TEST + "0900", "unrecognized"),  # Selectors (9) are gone in v0.3: critical
        (NAME_NDN_TEST + "8101", "claims"),
    ],
)
def test_malformed_interests(body, why):
    value = bytes.fromhex(body)
    wire = bytes([5, len(value)]) + value
    if why is None:
        with pytest.raises(NdnDecodeError):
            _ = Interest(wire).nonce
    else:
        with pytest.raises(NdnDecodeError, match=why):
            Interest(wire)


def test_parameters_digest_presence_rules():
    no_digest = bytes.fromhex("0507" + "0703080161" + "2400")
    with pytest.raises(NdnDecodeError, match="exactly 1"):
        _ = Interest(no_digest).name
    digest_no_params = Name("/a").append(Component.params_digest(b"\0" * 32)).wire
    with pytest.raises(NdnDecodeError, match="without ApplicationParameters"):
        _ = Interest(bytes([5, len(digest_no_params)]) + digest_no_params).name


@given(names)
def test_the_parameters_digests_are_counted_off_the_wire(name):
    """The count read off the name's TLVs is the count of its components of type 2,
    whatever else (a value holding 02 20, a multi-byte type) the name holds."""
    assert _params_digest_count(name) == sum(1 for c in name if c.type == 2)


def test_a_value_holding_02_20_is_not_a_parameters_digest():
    name = Name([Component.generic(b"\x02\x20" * 3), Component(0x0220, b"\x02\x20")])
    interest = make_interest(name, nonce=1)
    assert Interest(interest.wire).name == name
    with pytest.raises(ValueError, match="needs app_parameters"):
        make_interest(name.append(Component.params_digest(b"\2" * 32)))


def test_non_critical_unknown_elements_are_ignored():
    value = bytes.fromhex(NAME_NDN_TEST + "8000" + "0a0401020304" + "fd02c000")
    i = Interest(bytes([5, len(value)]) + value)
    assert i.nonce == 0x01020304 and i.name == Name("/ndn/test")


def test_modified_copies():
    i = Interest(HAND_INTEREST)
    j = i.with_hop_limit(63)
    assert j.hop_limit == 63 and j.nonce == i.nonce and len(j.wire) == len(i.wire)
    assert i.with_nonce(9).nonce == 9
    k = Interest(bytes.fromhex("0505" + "0703080141")).with_nonce(5).with_hop_limit(3)
    assert k.wire == make_interest("/A", nonce=5, hop_limit=3).wire
    assert k.with_hop_limit(None).hop_limit is None
    assert k.with_lifetime_ms(100).lifetime_ms == 100
    # Elements the codec skipped survive the copy.
    value = bytes.fromhex(NAME_NDN_TEST + "8000")
    assert bytes.fromhex("8000") in Interest(bytes([5, len(value)]) + value).with_nonce(1).wire


def test_matches_data():
    data = make_data("/a/b", b"x")
    assert make_interest("/a/b").matches_data(data)
    assert not make_interest("/a").matches_data(data)
    assert make_interest("/a", can_be_prefix=True).matches_data(data)
    assert make_interest("/", can_be_prefix=True).matches_data(data)
    assert make_interest(data.full_name).matches_data(data)
    assert not make_interest(
        Name("/a/b").append(Component.implicit_digest(b"\0" * 32))
    ).matches_data(data)
    assert not make_interest("/a/b/c", can_be_prefix=True).matches_data(data)


# Data = DATA-TYPE TLV-LENGTH Name [MetaInfo] [Content] SignatureInfo SignatureValue
HAND_COVERED = bytes.fromhex(
    NAME_NDN_TEST
    + "1407"  # MetaInfo, 7 bytes
    + "180100"  # ContentType BLOB
    + "19022710"  # FreshnessPeriod 10000 ms
    + "15026869"  # Content "hi"
    + "16031b0100"  # SignatureInfo: SignatureType DigestSha256
)
HAND_DATA = (
    bytes([6, len(HAND_COVERED) + 34])
    + HAND_COVERED
    + b"\x17\x20"
    + hashlib.sha256(HAND_COVERED).digest()
)


def test_hand_encoded_data():
    d = Data(HAND_DATA)
    assert d.name == Name("/ndn/test")
    assert d.content == b"hi"
    assert d.meta_info == MetaInfo(0, 10000, None)
    assert d.freshness_period_ms == 10000 and d.content_type == 0 and d.final_block_id is None
    assert d.signature_info == SignatureInfo(0)
    assert d.signed_portion == HAND_COVERED
    assert d.implicit_digest == hashlib.sha256(HAND_DATA).digest()
    assert d.full_name == Name("/ndn/test").append(Component.implicit_digest(d.implicit_digest))
    assert verify(d, DigestSha256Verifier())
    assert (
        make_data("/ndn/test", b"hi", content_type=0, freshness_period_ms=10000).wire == HAND_DATA
    )
    assert isinstance(decode_packet(HAND_DATA), Data)


def test_data_with_the_same_signature_info_share_one_decoded_value():
    # Every hop decodes every Data's SignatureInfo (the forwarder drops a Data
    # whose SignatureInfo does not decode); a producer's Data share one, decoded once.
    key = KeyLocator(name=Name("/sensor/KEY/1"))
    signer = HmacSha256Signer(b"k" * 32, key.name)
    first, second = (make_data(f"/r/{i}", b"x", signer=signer) for i in range(2))
    assert first.signature_info == second.signature_info
    assert first.signature_info.key_locator == key
    assert Data(first.wire).signature_info is Data(second.wire).signature_info
    # A SignatureInfo that does not decode fails every time, never from memory.
    bad_value = bytes.fromhex("1b0100") + bytes.fromhex("1c02ffff")  # KeyLocator of junk
    bad = b"\x16" + bytes([len(bad_value)]) + bad_value
    wire = HAND_COVERED[: -len("16031b0100") // 2] + bad
    data = Data(bytes([6, len(wire) + 34]) + wire + b"\x17\x20" + bytes(32))
    for _ in range(2):
        with pytest.raises(NdnDecodeError):
            _ = data.signature_info
        data = Data(data.wire)


def test_data_defaults_and_meta_info():
    d = make_data("/a")
    assert d.content == b"" and d.meta_info == MetaInfo()
    assert d.freshness_period_ms == 0
    f = make_data("/a/seg=0", b"x", final_block_id=Component.segment(9), content_type=2)
    assert f.final_block_id == Component.segment(9) and f.content_type == 2


def test_key_locators():
    for kl in (KeyLocator(name=Name("/k/KEY/1")), KeyLocator(key_digest=b"\x01" * 16)):
        info = SignatureInfo(4, kl)
        wire = info.encode()
        assert SignatureInfo.from_wire(wire) == info
    assert KeyLocator(key_digest=b"\xaa").encode() == bytes.fromhex("1c031d01aa")
    with pytest.raises(ValueError):
        KeyLocator()
    with pytest.raises(NdnDecodeError, match="neither"):
        SignatureInfo.from_wire(bytes.fromhex("16051b01041c00"))
    with pytest.raises(NdnDecodeError):  # both a Name and a KeyDigest
        SignatureInfo.from_wire(bytes.fromhex("16091b01041c0407001d00"))
    with pytest.raises(NdnDecodeError, match="without SignatureType"):
        SignatureInfo.from_wire(bytes.fromhex("16021c00"))


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (NAME_NDN_TEST + "1500" + "17020000", "without SIGNATURE_INFO"),
        (NAME_NDN_TEST + "16031b0100", "without SIGNATURE_VALUE"),
        ("1500" + "16031b0100" + "1700", "without NAME"),
        (NAME_NDN_TEST + "16031b0100" + "1500" + "1700", "out-of-order"),
        (NAME_NDN_TEST + "1405190301020316031b0100" + "1700", None),  # 3-byte NNI
    ],
)
def test_malformed_data(body, why):
    value = bytes.fromhex(body)
    wire = bytes([6, len(value)]) + value
    if why is None:
        with pytest.raises(NdnDecodeError):
            _ = Data(wire).meta_info
    else:
        with pytest.raises(NdnDecodeError, match=why):
            Data(wire)


def test_outer_framing_errors():
    with pytest.raises(NdnDecodeError, match="trailing"):
        Data(HAND_DATA + b"\x00")
    with pytest.raises(NdnDecodeError, match="expected a Data"):
        Data(HAND_INTEREST)
    with pytest.raises(NdnDecodeError, match="expected an Interest"):
        Interest(HAND_DATA)
    with pytest.raises(NdnDecodeError):
        decode_packet(b"")
    with pytest.raises(NdnDecodeError):
        decode_packet(b"\x07\x00")


def test_ccn_lites_unsigned_data_byte_for_byte():
    """S4's Data as CCN-lite b036cce writes it (ccnl_ndntlv_prependContent with no
    options): Name, an empty MetaInfo, Content, SignatureInfo of type DigestSha256,
    an empty SignatureValue: 90 bytes for a reading of S4. It decodes; a verifier
    refuses it (no digest to check)."""
    from iotbench.proto.ndn.signing import UnsignedSigner

    name = Name([b"i3", b"aa:bb:cc:dd:ee:ff:00:11", b"gasval", b"0001"])
    content = b'{"id":"0x12a77af232","val":3000}'
    data = make_data(name, content, signer=UnsignedSigner(), meta_info=True)
    expected = (
        b"\x06\x58"
        + name.wire
        + b"\x14\x00"
        + b"\x15\x20"
        + content
        + b"\x16\x03\x1b\x01\x00"
        + b"\x17\x00"
    )
    assert data.wire == expected and len(data.wire) == 90
    back = Data(expected)
    assert back.name == name and back.content == content
    assert back.signature_value == b"" and back.freshness_period_ms == 0
    assert not verify(back, DigestSha256Verifier())
    # The Interest CCN-lite's shell command sends for it: Name, Nonce, InterestLifetime.
    interest = make_interest(name, nonce=0x01020304, lifetime_ms=10_000)
    assert interest.wire == b"\x05\x37" + name.wire + b"\x0a\x04\x01\x02\x03\x04\x0c\x02\x27\x10"
