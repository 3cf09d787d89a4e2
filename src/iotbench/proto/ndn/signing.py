"""NDN signatures and content encryption.

Signature types (packet format v0.3 "Signature"):

- DigestSha256 (0): SignatureValue = SHA-256 of the covered bytes; integrity only.
- SignatureHmacWithSha256 (4): HMAC-SHA256 with a shared key; the KeyLocator
  is a key Name or a KeyDigest.
- SignatureSha256WithEcdsa (3): ECDSA on secp256r1 over SHA-256, value
  DER-encoded (``Ecdsa-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }``).
  The per-signature secret k is derived from the key and the message hash
  (RFC 6979 section 3.2, HMAC-DRBG with SHA-256), never drawn at random, so
  equal inputs give equal signatures and a simulation is reproducible.
  Signing is OpenSSL's deterministic ECDSA through `cryptography`, constant
  time in the private key (which matters for `iotbench serve ndn`, which
  signs on real sockets); no arithmetic on the key happens in Python.

Covered bytes: for Data, Name through SignatureInfo (`Data.signed_portion`);
for a signed Interest, the name components other than the parameters digest,
then ApplicationParameters through InterestSignatureInfo
(`Interest.signed_portion`). `verify()` recomputes over those bytes, so a
change to any covered byte, to the SignatureInfo or to the value fails it.

SHA-256 and HMAC use the standard library (the same algorithms, cheaper to
call for packets of a few hundred bytes); ECDSA and AES-CCM use
`cryptography`.

Content encryption (AES-CCM, RFC 3610 / NIST SP 800-38C): `seal_content`
returns nonce || ciphertext || tag, the nonce drawn from the caller's
`random.Random`; `open_content` reverses it and raises `NdnDecryptError`
when the bytes were not produced with that key (or were altered).
"""

from __future__ import annotations

import hashlib
import hmac
import random
from typing import Protocol

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)
from cryptography.hazmat.primitives.ciphers.aead import AESCCM

from .name import Name, NameLike
from .siginfo import KeyLocator
from .tlv import NdnDecodeError
from .types import SignatureType

__all__ = [
    "P256_ORDER",
    "DigestSha256Signer",
    "DigestSha256Verifier",
    "EcdsaSha256Signer",
    "EcdsaSha256Verifier",
    "HmacSha256Signer",
    "HmacSha256Verifier",
    "NdnDecryptError",
    "Signer",
    "Verifier",
    "aes_ccm_decrypt",
    "aes_ccm_encrypt",
    "generate_ecdsa_key",
    "key_digest",
    "open_content",
    "public_key_der",
    "seal_content",
    "verify",
]

#: Order n of the secp256r1 base point.
P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
_CURVE = ec.SECP256R1()
_ECDSA_SHA256 = ec.ECDSA(hashes.SHA256())


class NdnDecryptError(NdnDecodeError):
    """Encrypted content that does not decrypt and authenticate under the given key."""


class Signer(Protocol):
    """What make_data / make_interest need to sign a packet."""

    signature_type: int
    key_locator: KeyLocator | None

    def sign(self, covered: bytes) -> bytes: ...


class Verifier(Protocol):
    signature_type: int

    def verify(self, covered: bytes, signature: bytes) -> bool: ...


def _key_locator(key_name: NameLike | None, key_digest: bytes | None) -> KeyLocator | None:
    if key_name is not None and key_digest is not None:
        raise ValueError("give key_name or key_digest, not both")
    if key_name is not None:
        return KeyLocator(name=key_name if isinstance(key_name, Name) else Name(key_name))
    if key_digest is not None:
        return KeyLocator(key_digest=bytes(key_digest))
    return None


def key_digest(key: bytes, length: int = 32) -> bytes:
    """A KeyDigest for `key`: its SHA-256, truncated to `length` bytes (1..32)."""
    if not 1 <= length <= 32:
        raise ValueError(f"KeyDigest length must be 1..32, got {length}")
    return hashlib.sha256(key).digest()[:length]


# ---- DigestSha256 -------------------------------------------------------------------


class DigestSha256Signer:
    signature_type: int = SignatureType.DIGEST_SHA256
    key_locator: KeyLocator | None = None

    def sign(self, covered: bytes) -> bytes:
        return hashlib.sha256(covered).digest()


class UnsignedSigner:
    """No signature, as CCN-lite writes an unsigned Data (ccnl_ndntlv_prependContent):
    SignatureType DigestSha256 with an empty SignatureValue. S4 ran its network
    without security in this form; a verifier rejects it (the digest is missing)."""

    signature_type: int = SignatureType.DIGEST_SHA256
    key_locator: KeyLocator | None = None

    def sign(self, covered: bytes) -> bytes:
        return b""


class DigestSha256Verifier:
    signature_type: int = SignatureType.DIGEST_SHA256

    def verify(self, covered: bytes, signature: bytes) -> bool:
        return hmac.compare_digest(hashlib.sha256(covered).digest(), signature)


# ---- HMAC-SHA256 --------------------------------------------------------------------


class HmacSha256Signer:
    """HMAC-SHA256 with a shared `key`; KeyLocator from `key_name` or `key_digest` (or none)."""

    signature_type: int = SignatureType.HMAC_WITH_SHA256

    def __init__(
        self, key: bytes, key_name: NameLike | None = None, key_digest: bytes | None = None
    ) -> None:
        self.key = bytes(key)
        self.key_locator = _key_locator(key_name, key_digest)

    def sign(self, covered: bytes) -> bytes:
        return hmac.digest(self.key, covered, "sha256")


class HmacSha256Verifier:
    signature_type: int = SignatureType.HMAC_WITH_SHA256

    def __init__(self, key: bytes) -> None:
        self.key = bytes(key)

    def verify(self, covered: bytes, signature: bytes) -> bool:
        return hmac.compare_digest(hmac.digest(self.key, covered, "sha256"), signature)


# ---- ECDSA with RFC 6979 nonces ------------------------------------------------------

#: RFC 6979 deterministic ECDSA, computed by OpenSSL in constant time.
_ECDSA = ec.ECDSA(hashes.SHA256(), deterministic_signing=True)


def generate_ecdsa_key(rng: random.Random) -> ec.EllipticCurvePrivateKey:
    """A secp256r1 key drawn from the caller's rng (reproducible; for simulations and tests)."""
    return ec.derive_private_key(rng.randrange(1, P256_ORDER), _CURVE)


def public_key_der(key: ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey) -> bytes:
    """SubjectPublicKeyInfo DER of the public key (what an NDN certificate carries)."""
    if isinstance(key, ec.EllipticCurvePrivateKey):
        key = key.public_key()
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


class EcdsaSha256Signer:
    """SignatureSha256WithEcdsa on secp256r1 with RFC 6979 deterministic k."""

    signature_type: int = SignatureType.SHA256_WITH_ECDSA

    def __init__(
        self,
        private_key: ec.EllipticCurvePrivateKey | int,
        key_name: NameLike | None = None,
        key_digest: bytes | None = None,
    ) -> None:
        if isinstance(private_key, int):
            private_key = ec.derive_private_key(private_key, _CURVE)
        if not isinstance(private_key.curve, ec.SECP256R1):
            raise TypeError(
                f"ECDSA-SHA256 in NDN here uses secp256r1, got {private_key.curve.name}"
            )
        self.private_key = private_key
        self.key_locator = _key_locator(key_name, key_digest)

    def sign(self, covered: bytes) -> bytes:
        return self.private_key.sign(covered, _ECDSA)  # DER (r, s)

    @property
    def public_key(self) -> ec.EllipticCurvePublicKey:
        return self.private_key.public_key()


class EcdsaSha256Verifier:
    signature_type: int = SignatureType.SHA256_WITH_ECDSA

    def __init__(self, public_key: ec.EllipticCurvePublicKey | bytes) -> None:
        if isinstance(public_key, (bytes, bytearray)):
            loaded = serialization.load_der_public_key(bytes(public_key))
            if not isinstance(loaded, ec.EllipticCurvePublicKey):
                raise TypeError("the DER key is not an elliptic-curve public key")
            public_key = loaded
        self.public_key = public_key

    def verify(self, covered: bytes, signature: bytes) -> bool:
        try:
            # Reject anything that is not a plain DER SEQUENCE of two INTEGERs.
            r, s = decode_dss_signature(bytes(signature))
            if encode_dss_signature(r, s) != bytes(signature):
                return False
            self.public_key.verify(bytes(signature), covered, _ECDSA_SHA256)
        except (InvalidSignature, ValueError):
            return False
        return True


def verify(packet, verifier: Verifier) -> bool:
    """Check the signature of a Data or signed Interest; False for any mismatch or bad field."""
    try:
        info = packet.signature_info
        covered = packet.signed_portion
        value = packet.signature_value
    except NdnDecodeError:
        return False
    if info is None or covered is None or value is None:
        return False
    if info.signature_type != verifier.signature_type:
        return False
    return verifier.verify(covered, value)


# ---- AES-CCM content encryption ---------------------------------------------------


def aes_ccm_encrypt(
    key: bytes, nonce: bytes, plaintext: bytes, aad: bytes = b"", tag_length: int = 16
) -> bytes:
    """ciphertext || tag. Key 16, 24 or 32 bytes; nonce 7..13 bytes; tag 4..16 (even)."""
    return AESCCM(key, tag_length).encrypt(nonce, plaintext, aad or None)


def aes_ccm_decrypt(
    key: bytes, nonce: bytes, ciphertext: bytes, aad: bytes = b"", tag_length: int = 16
) -> bytes:
    try:
        return AESCCM(key, tag_length).decrypt(nonce, ciphertext, aad or None)
    except (InvalidTag, ValueError) as exc:
        raise NdnDecryptError("content does not decrypt under this key") from exc


def seal_content(
    key: bytes,
    plaintext: bytes,
    rng: random.Random,
    *,
    aad: bytes = b"",
    nonce_length: int = 13,
    tag_length: int = 16,
) -> bytes:
    """Encrypt Data content: nonce (from `rng`) || ciphertext || tag."""
    nonce = rng.randbytes(nonce_length)
    return nonce + aes_ccm_encrypt(key, nonce, plaintext, aad, tag_length)


def open_content(
    key: bytes, sealed: bytes, *, aad: bytes = b"", nonce_length: int = 13, tag_length: int = 16
) -> bytes:
    """Reverse `seal_content`; raises NdnDecryptError on any mismatch."""
    if len(sealed) < nonce_length + tag_length:
        raise NdnDecryptError(f"sealed content of {len(sealed)} bytes is too short")
    nonce, body = sealed[:nonce_length], sealed[nonce_length:]
    return aes_ccm_decrypt(key, nonce, body, aad, tag_length)
