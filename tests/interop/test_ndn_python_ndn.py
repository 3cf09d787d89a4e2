"""python-ndn (an NDN implementation we did not write) against our NDN codec and signatures.

Both directions: python-ndn decodes and verifies what we encode and sign, and
we decode and verify what python-ndn encodes and signs. python-ndn is a test
dependency, imported directly: a missing package fails these tests.
"""

from __future__ import annotations

import hashlib
import random

import pytest
from Cryptodome.PublicKey import ECC
from cryptography.hazmat.primitives import serialization
from hypothesis import given, settings
from hypothesis import strategies as st
from ndn.encoding import Component as PComponent
from ndn.encoding import InterestParam, parse_data, parse_interest
from ndn.encoding import MetaInfo as PMetaInfo
from ndn.encoding import Name as PName
from ndn.encoding import make_data as p_make_data
from ndn.encoding import make_interest as p_make_interest
from ndn.encoding.ndnlp_v2 import make_network_nack, parse_network_nack
from ndn.security import DigestSha256Signer as PDigestSigner
from ndn.security import HmacSha256Signer as PHmacSigner
from ndn.security import Sha256WithEcdsaSigner as PEcdsaSigner
from ndn.security.validator.known_key_validator import verify_ecdsa, verify_hmac

from iotbench.proto.ndn.data import Data, make_data
from iotbench.proto.ndn.interest import Interest, make_interest
from iotbench.proto.ndn.lp import LpPacket
from iotbench.proto.ndn.name import Component, Name
from iotbench.proto.ndn.signing import (
    DigestSha256Verifier,
    EcdsaSha256Signer,
    EcdsaSha256Verifier,
    HmacSha256Signer,
    HmacSha256Verifier,
    generate_ecdsa_key,
    key_digest,
    public_key_der,
    verify,
)
from iotbench.proto.ndn.types import NackReason, SignatureType

pytestmark = pytest.mark.interop

HMAC_KEY = b"interop-shared-secret"
ECDSA_KEY = generate_ecdsa_key(random.Random(2024))
ECDSA_PUBLIC_DER = public_key_der(ECDSA_KEY)
ECDSA_PRIVATE_DER = ECDSA_KEY.private_bytes(
    serialization.Encoding.DER,
    serialization.PrivateFormat.PKCS8,
    serialization.NoEncryption(),
)

NAMES = [
    "/a/b",
    "/ndn/edu/ucla/%00%01%FF",
    "/sensor/seg=3/v=1700000000/t=42/seq=7/off=100",
    "/32=keyword/200=typed/65535=max",
    "/a~b-c_d.e/%20space",
    "/sha256digest=" + "ab" * 32,
]


def _pname(name) -> bytes:
    return bytes(PName.to_bytes(name))


# ---- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize("uri", NAMES)
def test_names_encode_alike_and_print_alike(uri):
    ours = Name(uri)
    theirs = PName.from_str(uri)
    assert _pname(theirs) == ours.wire
    assert PName.to_str(theirs) == ours.to_uri()
    assert Name.from_wire(_pname(theirs)) == ours


# python-ndn does not implement the spec's "..." rule for all-period components, so
# the cross-check draws values with at least one non-period byte; the rule itself is
# tested in tests/proto/ndn/test_ndn_name.py against the spec's text.
_values = st.binary(max_size=10).filter(lambda v: v.strip(b".") != b"")
_components = st.one_of(
    st.builds(Component.generic, _values),
    st.builds(
        lambda t, v: Component(t, v),
        st.integers(9, 300).filter(lambda t: t not in (0x32, 0x34, 0x36, 0x38, 0x3A)),
        _values,
    ),
    st.builds(Component.segment, st.integers(0, 2**64 - 1)),
    st.builds(Component.version, st.integers(0, 2**64 - 1)),
    st.builds(Component.sequence_num, st.integers(0, 2**32)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_components, max_size=5))
def test_random_names_agree(components):
    ours = Name(components)
    uri = ours.to_uri()
    assert _pname(PName.from_str(uri)) == ours.wire
    assert PName.to_str(PName.from_bytes(ours.wire)) == uri


# ---- our packets, python-ndn decodes and verifies -------------------------------------------


def test_python_ndn_parses_our_interest():
    i = make_interest(
        "/ndn/test/seg=1",
        can_be_prefix=True,
        must_be_fresh=True,
        forwarding_hint=["/hint/a", "/hint/b"],
        nonce=0xDEADBEEF,
        lifetime_ms=10_000,
        hop_limit=7,
    )
    name, param, app_param, _ = parse_interest(i.wire)
    assert PName.to_str(name) == "/ndn/test/seg=1"
    assert param.can_be_prefix and param.must_be_fresh
    assert param.nonce == 0xDEADBEEF and param.lifetime == 10_000 and param.hop_limit == 7
    assert [PName.to_str(h) for h in param.forwarding_hint] == ["/hint/a", "/hint/b"]
    assert app_param is None


def test_python_ndn_checks_our_parameters_digest():
    i = make_interest("/cmd/set", app_parameters=b"\x01\x02\x03", nonce=1)
    name, _, app_param, sig = parse_interest(i.wire)
    assert bytes(app_param) == b"\x01\x02\x03"
    assert PComponent.get_type(name[-1]) == PComponent.TYPE_PARAMETERS_SHA256
    covered = b"".join(bytes(part) for part in sig.digest_covered_part)
    assert hashlib.sha256(covered).digest() == bytes(sig.digest_value_buf)


def test_python_ndn_parses_our_data():
    d = make_data(
        "/sensor/temp/seq=5",
        b'{"id":"0x12a77af232","val":3000}',
        content_type=0,
        freshness_period_ms=5000,
        final_block_id=Component.segment(9),
    )
    name, meta, content, sig = parse_data(d.wire)
    assert PName.to_str(name) == "/sensor/temp/seq=5"
    assert bytes(content) == d.content
    assert meta.freshness_period == 5000 and meta.content_type == 0
    assert bytes(meta.final_block_id) == Component.segment(9).wire
    assert sig.signature_info.signature_type == SignatureType.DIGEST_SHA256
    covered = b"".join(bytes(p) for p in sig.signature_covered_part)
    assert covered == d.signed_portion
    assert hashlib.sha256(covered).digest() == bytes(sig.signature_value_buf)


@pytest.mark.parametrize("locator", ["name", "digest-16", "digest-32"])
def test_python_ndn_verifies_our_hmac_data(locator):
    if locator == "name":
        signer = HmacSha256Signer(HMAC_KEY, key_name="/key/hmac")
    else:
        signer = HmacSha256Signer(HMAC_KEY, key_digest=key_digest(HMAC_KEY, int(locator[-2:])))
    d = make_data("/a/hmac", b"payload", signer=signer)
    _, _, _, sig = parse_data(d.wire)
    assert sig.signature_info.signature_type == SignatureType.HMAC_WITH_SHA256
    kl = sig.signature_info.key_locator
    if locator == "name":
        assert PName.to_str(kl.name) == "/key/hmac"
    else:
        assert bytes(kl.key_digest) == key_digest(HMAC_KEY, int(locator[-2:]))
    assert verify_hmac(HMAC_KEY, sig)
    assert not verify_hmac(b"another key", sig)


def test_python_ndn_verifies_our_ecdsa_data_and_rejects_tampering():
    d = make_data("/a/ecdsa", b"payload", signer=EcdsaSha256Signer(ECDSA_KEY, key_name="/a/KEY/1"))
    pub = ECC.import_key(ECDSA_PUBLIC_DER)
    _, _, _, sig = parse_data(d.wire)
    assert sig.signature_info.signature_type == SignatureType.SHA256_WITH_ECDSA
    assert PName.to_str(sig.signature_info.key_locator.name) == "/a/KEY/1"
    assert verify_ecdsa(pub, sig)
    tampered = bytearray(d.wire)
    tampered[d.wire.index(b"payload")] ^= 1
    assert not verify_ecdsa(pub, parse_data(bytes(tampered))[3])


@pytest.mark.parametrize("kind", ["hmac", "ecdsa"])
def test_python_ndn_verifies_our_signed_interests(kind):
    signer = (
        HmacSha256Signer(HMAC_KEY, key_name="/key/hmac")
        if kind == "hmac"
        else EcdsaSha256Signer(ECDSA_KEY, key_name="/a/KEY/1")
    )
    i = make_interest("/cmd/led", app_parameters=b"on", signer=signer, nonce=5, signature_seq_num=3)
    name, _, app_param, sig = parse_interest(i.wire)
    assert bytes(app_param) == b"on"
    assert sig.signature_info.signature_seq_num == 3
    covered = b"".join(bytes(p) for p in sig.signature_covered_part)
    assert covered == i.signed_portion
    if kind == "hmac":
        assert verify_hmac(HMAC_KEY, sig)
    else:
        assert verify_ecdsa(ECC.import_key(ECDSA_PUBLIC_DER), sig)
    digest_covered = b"".join(bytes(p) for p in sig.digest_covered_part)
    assert hashlib.sha256(digest_covered).digest() == bytes(sig.digest_value_buf)


def test_python_ndn_reads_our_nack():
    interest = make_interest("/x", nonce=9).wire
    reason, fragment = parse_network_nack(
        LpPacket.make_nack(interest, NackReason.NO_ROUTE).encode()
    )
    assert reason == NackReason.NO_ROUTE and bytes(fragment) == interest


# ---- python-ndn's packets, we decode and verify ---------------------------------------------


def test_we_parse_python_ndn_interest():
    wire = p_make_interest(
        "/ndn/test/v=3",
        InterestParam(
            can_be_prefix=True,
            must_be_fresh=True,
            nonce=0x01020304,
            lifetime=1234,
            hop_limit=9,
            forwarding_hint=["/fh"],
        ),
    )
    i = Interest(bytes(wire)).validate()
    assert i.name == Name("/ndn/test/v=3")
    assert i.can_be_prefix and i.must_be_fresh
    assert (i.nonce, i.lifetime_ms, i.hop_limit) == (0x01020304, 1234, 9)
    assert i.forwarding_hint == (Name("/fh"),)


def test_we_check_python_ndn_parameters_digest():
    wire = p_make_interest("/cmd", InterestParam(nonce=1), app_param=b"params")
    i = Interest(bytes(wire))
    assert i.app_parameters == b"params" and i.parameters_digest_valid()


def test_we_parse_python_ndn_data():
    meta = PMetaInfo(
        content_type=0, freshness_period=2500, final_block_id=PComponent.from_segment(4)
    )
    wire = p_make_data("/p/seg=4", meta, b"content bytes", signer=PDigestSigner())
    d = Data(bytes(wire)).validate()
    assert d.name == Name("/p/seg=4") and d.content == b"content bytes"
    assert d.freshness_period_ms == 2500 and d.final_block_id == Component.segment(4)
    assert verify(d, DigestSha256Verifier())


def test_we_verify_python_ndn_hmac_data_and_interest():
    signer = PHmacSigner("/key/hmac", HMAC_KEY)
    d = Data(bytes(p_make_data("/a", PMetaInfo(), b"x", signer=signer)))
    assert d.signature_info.key_locator.name == Name("/key/hmac")
    assert verify(d, HmacSha256Verifier(HMAC_KEY))
    assert not verify(d, HmacSha256Verifier(b"wrong"))
    i = Interest(
        bytes(p_make_interest("/cmd", InterestParam(nonce=2), app_param=b"p", signer=signer))
    )
    assert verify(i, HmacSha256Verifier(HMAC_KEY)) and i.parameters_digest_valid()


def test_we_verify_python_ndn_ecdsa_data_and_interest():
    signer = PEcdsaSigner("/a/KEY/1", ECDSA_PRIVATE_DER)
    verifier = EcdsaSha256Verifier(ECDSA_PUBLIC_DER)
    d = Data(bytes(p_make_data("/a/ecdsa", PMetaInfo(), b"x", signer=signer)))
    assert d.signature_info.signature_type == SignatureType.SHA256_WITH_ECDSA
    assert verify(d, verifier)
    tampered = bytearray(d.wire)
    tampered[-40] ^= 1
    assert not verify(Data(bytes(tampered)), verifier)
    i = Interest(
        bytes(p_make_interest("/cmd", InterestParam(nonce=3), app_param=b"q", signer=signer))
    )
    assert verify(i, verifier) and i.parameters_digest_valid()


def test_we_read_python_ndn_nack():
    interest = bytes(p_make_interest("/x", InterestParam(nonce=4)))
    packet = LpPacket.decode(bytes(make_network_nack(interest, NackReason.DUPLICATE)))
    assert packet.nack == NackReason.DUPLICATE and packet.fragment == interest
