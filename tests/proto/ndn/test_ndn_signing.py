"""Signatures (RFC 6979 vectors, tamper rejection) and AES-CCM content encryption."""

import random

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from iotbench.proto.ndn import signing
from iotbench.proto.ndn.data import Data, make_data
from iotbench.proto.ndn.interest import Interest, make_interest
from iotbench.proto.ndn.name import Name
from iotbench.proto.ndn.signing import (
    P256_ORDER,
    DigestSha256Signer,
    DigestSha256Verifier,
    EcdsaSha256Signer,
    EcdsaSha256Verifier,
    HmacSha256Signer,
    HmacSha256Verifier,
    NdnDecryptError,
    aes_ccm_decrypt,
    aes_ccm_encrypt,
    generate_ecdsa_key,
    key_digest,
    open_content,
    public_key_der,
    seal_content,
    verify,
)
from iotbench.proto.ndn.tlv import NdnDecodeError
from iotbench.proto.ndn.types import SignatureType

# RFC 6979 appendix A.2.5: ECDSA, 256 bits (prime field), private key x, public key U = xG,
# and for SHA-256 the nonce k and signature (r, s) of the messages "sample" and "test".
X = 0xC9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721
UX = 0x60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6
UY = 0x7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299
RFC6979_SHA256 = [
    (
        b"sample",
        0xA6E3C57DD01ABE90086538398355DD4C3B17AA873382B0F24D6129493D8AAD60,
        0xEFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716,
        0xF7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8,
    ),
    (
        b"test",
        0xD16B6AE827F17175E040871A1C7EC3500192C4C92677336EC2537ACAEE0008E0,
        0xF1ABB023518351CD71D881567B1EA663ED3EFCF6C5132B354F28D3B0B7D38367,
        0x019F4113742A2B14BD25926B49C649155F267E60D3814B4C0CC84250E46F0083,
    ),
]


def test_rfc6979_key_pair():
    numbers = ec.derive_private_key(X, ec.SECP256R1()).public_key().public_numbers()
    assert (numbers.x, numbers.y) == (UX, UY)


@pytest.mark.parametrize(("message", "k", "r", "s"), RFC6979_SHA256)
def test_rfc6979_vectors(message, k, r, s):
    # The NDN signer signs SHA-256(covered) and DER-encodes (r, s); r is the x
    # coordinate of kG, so the vector's k is the one RFC 6979 derives.
    value = EcdsaSha256Signer(X).sign(message)
    assert value == encode_dss_signature(r, s)
    assert value[0] == 0x30  # DER SEQUENCE
    kg = ec.derive_private_key(k, ec.SECP256R1()).public_key().public_numbers()
    assert kg.x % P256_ORDER == r


def test_the_private_key_never_leaves_openssl():
    # Signing is OpenSSL's deterministic ECDSA (constant time); the signer holds
    # no private scalar as a Python integer and does no arithmetic with it.
    signer = EcdsaSha256Signer(X)
    assert not any(isinstance(v, int) and v == X for v in vars(signer).values())
    assert not hasattr(signing, "ecdsa_sign_digest")


def test_ecdsa_agrees_with_openssl_deterministic_mode():
    key = generate_ecdsa_key(random.Random(3))
    signer = EcdsaSha256Signer(key)
    for n in range(5):
        msg = bytes([n]) * (n * 37)
        ours = signer.sign(msg)
        theirs = key.sign(msg, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
        assert decode_dss_signature(ours) == decode_dss_signature(theirs)


def test_signatures_are_deterministic():
    key = generate_ecdsa_key(random.Random(1))
    assert generate_ecdsa_key(random.Random(1)).private_numbers() == key.private_numbers()
    a = make_data("/a", b"x", signer=EcdsaSha256Signer(key, key_name="/a/KEY/1"))
    b = make_data("/a", b"x", signer=EcdsaSha256Signer(key, key_name="/a/KEY/1"))
    assert a.wire == b.wire
    c = make_data("/a", b"y", signer=EcdsaSha256Signer(key, key_name="/a/KEY/1"))
    assert c.signature_value != a.signature_value


KEY = generate_ecdsa_key(random.Random(42))
SIGNERS = {
    "digest": (DigestSha256Signer(), DigestSha256Verifier()),
    "hmac-name": (HmacSha256Signer(b"secret", key_name="/key/1"), HmacSha256Verifier(b"secret")),
    "hmac-digest": (
        HmacSha256Signer(b"secret", key_digest=key_digest(b"secret", 16)),
        HmacSha256Verifier(b"secret"),
    ),
    "ecdsa": (
        EcdsaSha256Signer(KEY, key_name="/key/2"),
        EcdsaSha256Verifier(public_key_der(KEY)),
    ),
}


@pytest.mark.parametrize("kind", sorted(SIGNERS))
def test_every_tampered_byte_of_a_data_is_rejected(kind):
    signer, verifier = SIGNERS[kind]
    data = make_data("/sensor/temp/seq=1", b'{"val":3000}', freshness_period_ms=1000, signer=signer)
    assert verify(data, verifier)
    assert data.signature_info.signature_type == signer.signature_type
    wire = data.wire
    for i in range(len(wire)):
        for flip in (0x01, 0x80):
            tampered = bytearray(wire)
            tampered[i] ^= flip
            try:
                ok = verify(Data(bytes(tampered)), verifier)
            except NdnDecodeError:
                continue  # no longer a Data at all: rejected too
            assert not ok, f"byte {i} ^ {flip:#x} still verifies"


@pytest.mark.parametrize("kind", ["hmac-name", "ecdsa"])
def test_every_tampered_byte_of_a_signed_interest_is_rejected(kind):
    signer, verifier = SIGNERS[kind]
    interest = make_interest("/cmd/led", app_parameters=b"on", signer=signer, signature_seq_num=1)
    assert verify(interest, verifier)
    # No Nonce, InterestLifetime or HopLimit (which nothing signs): every byte is covered
    # by the signature, the parameters digest, or the TLV structure.
    wire = interest.wire
    for i in range(len(wire)):
        tampered = bytearray(wire)
        tampered[i] ^= 0x01
        try:
            t = Interest(bytes(tampered))
            ok = verify(t, verifier) and t.parameters_digest_valid()
        except NdnDecodeError:
            continue
        assert not ok, f"byte {i} still verifies"


def test_wrong_key_or_type_fails():
    data = make_data("/a", b"x", signer=HmacSha256Signer(b"k1"))
    assert verify(data, HmacSha256Verifier(b"k1"))
    assert not verify(data, HmacSha256Verifier(b"k2"))
    assert not verify(data, DigestSha256Verifier())
    other = generate_ecdsa_key(random.Random(7))
    signed = make_data("/a", b"x", signer=EcdsaSha256Signer(KEY))
    assert not verify(signed, EcdsaSha256Verifier(other.public_key()))
    assert not verify(make_interest("/a"), DigestSha256Verifier())  # unsigned


def test_ecdsa_rejects_non_canonical_der():
    data = make_data("/a", b"x", signer=EcdsaSha256Signer(KEY))
    verifier = EcdsaSha256Verifier(KEY.public_key())
    value = data.signature_value
    assert verifier.verify(data.signed_portion, value)
    assert not verifier.verify(data.signed_portion, value + b"\x00")
    assert not verifier.verify(data.signed_portion, b"\x30\x00")
    assert not verifier.verify(data.signed_portion, b"")


def test_key_locators_of_signers():
    assert HmacSha256Signer(b"k", key_name="/k").key_locator.name == Name("/k")
    assert HmacSha256Signer(b"k", key_digest=b"\x01" * 32).key_locator.key_digest == b"\x01" * 32
    assert HmacSha256Signer(b"k").key_locator is None
    assert len(key_digest(b"k", 16)) == 16
    with pytest.raises(ValueError):
        HmacSha256Signer(b"k", key_name="/k", key_digest=b"\x01")
    with pytest.raises(ValueError):
        key_digest(b"k", 0)
    with pytest.raises(TypeError):
        EcdsaSha256Signer(ec.generate_private_key(ec.SECP384R1()))
    assert SignatureType.SHA256_WITH_ECDSA == EcdsaSha256Signer(KEY).signature_type == 3


# RFC 3610 packet vector #1: AES-128, 13-byte nonce, 8-byte header as associated data, M = 8.
RFC3610_KEY = bytes(range(0xC0, 0xD0))
RFC3610_NONCE = bytes.fromhex("00000003020100A0A1A2A3A4A5")
RFC3610_AAD = bytes(range(8))
RFC3610_PLAIN = bytes(range(8, 0x1F))
RFC3610_SEALED = bytes.fromhex("588C979A61C663D2F066D0C2C0F989806D5F6B61DAC38417E8D12CFDF926E0")


def test_aes_ccm_rfc3610_vector():
    sealed = aes_ccm_encrypt(RFC3610_KEY, RFC3610_NONCE, RFC3610_PLAIN, RFC3610_AAD, tag_length=8)
    assert sealed == RFC3610_SEALED
    assert aes_ccm_decrypt(RFC3610_KEY, RFC3610_NONCE, sealed, RFC3610_AAD, 8) == RFC3610_PLAIN


def test_sealed_content_round_trip_and_tamper():
    key = bytes(16)
    sealed = seal_content(key, b"reading 42", random.Random(1), aad=b"/a")
    assert sealed == seal_content(key, b"reading 42", random.Random(1), aad=b"/a")  # seeded
    assert len(sealed) == 13 + 10 + 16
    assert open_content(key, sealed, aad=b"/a") == b"reading 42"
    data = make_data("/a", sealed)
    assert open_content(key, data.content, aad=b"/a") == b"reading 42"
    for i in range(len(sealed)):
        bad = bytearray(sealed)
        bad[i] ^= 1
        with pytest.raises(NdnDecryptError):
            open_content(key, bytes(bad), aad=b"/a")
    with pytest.raises(NdnDecryptError):
        open_content(bytes([1] * 16), sealed, aad=b"/a")
    with pytest.raises(NdnDecryptError):
        open_content(key, sealed, aad=b"/b")
    with pytest.raises(NdnDecryptError):
        open_content(key, sealed[:20])
    assert issubclass(NdnDecryptError, NdnDecodeError)
