"""A self-signed certificate for a run, the same for the same seed.

Ed25519 keeps the TLS handshake the same size in every run: its signatures
are deterministic and always 64 bytes, where an ECDSA signature's DER
encoding varies by a byte or two (and with it every handshake size after it).
"""

from __future__ import annotations

import datetime
import hashlib

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import NameOID

# A fixed validity window: certificates must not depend on the wall clock.
NOT_BEFORE = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
NOT_AFTER = datetime.datetime(2120, 1, 1, tzinfo=datetime.UTC)


def make_certificate(seed: int, name: str = "sensor.iotbench") -> tuple[x509.Certificate, object]:
    """(certificate, private key) for `name`, derived from `seed` alone."""
    secret = hashlib.sha256(f"iotbench-quic-certificate/{seed}/{name}".encode()).digest()
    key = ed25519.Ed25519PrivateKey.from_private_bytes(secret)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    serial = int.from_bytes(hashlib.sha256(secret).digest()[:16], "big") >> 1
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(NOT_BEFORE)
        .not_valid_after(NOT_AFTER)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(key, None)  # Ed25519 takes no separate hash
    )
    return cert, key


def certificate_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)
