"""An OSCORE security context (RFC 8613 3): derivation, nonces, the AEAD, and
the two mutable parts, the Sender Sequence Number and the Replay Window.

One algorithm pair is built, the mandatory one: HKDF SHA-256 and
AES-CCM-16-64-128 (COSE algorithm 10: 16-byte key, 13-byte nonce, 8-byte
tag), both from the `cryptography` package. The context is the same object
for both roles (3.1): an endpoint protects what it sends with the Sender
Context and verifies what it receives with the Recipient Context.

The mutable parts:

- The Sender Sequence Number starts at 0 (3.2.2) and gives every request and
  every response with its own Partial IV a fresh nonce; past 2^40 - 1
  (7.2.1) the context refuses to protect (`ContextExhausted`). A context may
  also be limited to `sequence_limit`: on reaching it, `reserve(n)` is asked
  for a new limit, which is how real mode writes a high-water mark to disk
  before a number is used (Appendix B.1.1); without `reserve` the limit is
  the RFC's.
- The Replay Window (7.4, server role) is `proto/replay.py`'s sliding window,
  32 numbers wide by default (3.2.2, as aiocoap). `replay` is None when the
  window is unknown, e.g. after a reboot that lost it: the layer then
  recovers it with the Echo option (Appendix B.1.2), keeping the challenge
  it sent in `echo`.
"""

from __future__ import annotations

from collections.abc import Callable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESCCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from iotbench.proto import crypto_work
from iotbench.proto.crypto_work import WorkMeter
from iotbench.proto.replay import ReplayWindow

from . import cbor

#: COSE algorithm 10, AES-CCM-16-64-128 (RFC 8152 10.2), OSCORE's default and mandatory one.
AES_CCM_16_64_128 = 10
KEY_LENGTH = 16
NONCE_LENGTH = 13
TAG_LENGTH = 8
#: 3.3: a Sender ID is at most the nonce length minus 6 bytes.
MAX_ID_LENGTH = NONCE_LENGTH - 6
#: 7.2.1: Sender Sequence Numbers stay below 2^40 (a Partial IV is at most 5 bytes).
MAX_SEQUENCE_NUMBER = (1 << 40) - 1
#: 3.2.2: the default replay window, the DTLS one, 32 numbers wide.
DEFAULT_WINDOW = 32


class ContextExhausted(Exception):
    """The Sender Sequence Number reached its limit: nothing more can be protected."""


class DecryptionFailed(Exception):
    """The AEAD did not verify (wrong key, nonce, AAD, or a tampered ciphertext)."""


def hkdf_info(id_: bytes, id_context: bytes | None, kind: str, length: int) -> bytes:
    """The CBOR `info` of 3.2.1: [id, id_context / nil, alg_aead, type, L]."""
    return cbor.dumps([id_, id_context, AES_CCM_16_64_128, kind, length])


def derive(
    master_secret: bytes,
    master_salt: bytes,
    id_context: bytes | None,
    id_: bytes,
    kind: str,
    length: int,
) -> bytes:
    """HKDF-SHA256(salt, IKM, info, L) of 3.2.1; an empty salt is the RFC's default."""
    hkdf = HKDF(
        algorithm=SHA256(),
        length=length,
        salt=master_salt or None,  # RFC 5869: no salt means HashLen zeros, as 3.2.1 says
        info=hkdf_info(id_, id_context, kind, length),
    )
    return hkdf.derive(master_secret)


def partial_iv(sequence_number: int) -> bytes:
    """The Partial IV of a sequence number: big-endian, no leading zeros, 0 is 0x00 (5)."""
    return sequence_number.to_bytes(5, "big").lstrip(b"\0") or b"\0"


def make_nonce(common_iv: bytes, id_piv: bytes, piv: bytes) -> bytes:
    """The AEAD nonce of 5.2: S | padded ID_PIV | padded PIV, XOR the Common IV.

    `id_piv` is the Sender ID of the endpoint that generated `piv`."""
    if len(id_piv) > MAX_ID_LENGTH or len(piv) > 5:
        raise ValueError("ID_PIV is at most 7 bytes and a Partial IV at most 5")
    pad_id = NONCE_LENGTH - 6
    block = (
        bytes((len(id_piv),)) + id_piv.rjust(pad_id, b"\0") + piv.rjust(5, b"\0")
    )  # 1 + 7 + 5 = 13 bytes
    return bytes(a ^ b for a, b in zip(common_iv, block, strict=True))


class SecurityContext:
    """Common, Sender and Recipient Context of one peer (or of one client, on a server)."""

    def __init__(
        self,
        master_secret: bytes,
        sender_id: bytes,
        recipient_id: bytes,
        *,
        master_salt: bytes = b"",
        id_context: bytes | None = None,
        sender_sequence_number: int = 0,
        window_size: int = DEFAULT_WINDOW,
        replay_window_known: bool = True,
    ) -> None:
        for name, value in (("Sender ID", sender_id), ("Recipient ID", recipient_id)):
            if len(value) > MAX_ID_LENGTH:
                raise ValueError(f"{name} is {len(value)} bytes, at most {MAX_ID_LENGTH}")
        if sender_id == recipient_id:
            # 3.3: the (ID Context, Sender ID) pairs of a Master Secret must differ,
            # or both ends would encrypt with the same key and nonces.
            raise ValueError("Sender ID and Recipient ID must differ")
        if not 0 <= sender_sequence_number <= MAX_SEQUENCE_NUMBER + 1:
            raise ValueError(f"sender sequence number {sender_sequence_number} out of range")
        self.sender_id = sender_id
        self.recipient_id = recipient_id
        self.id_context = id_context
        self.sender_key = derive(
            master_secret, master_salt, id_context, sender_id, "Key", KEY_LENGTH
        )
        self.recipient_key = derive(
            master_secret, master_salt, id_context, recipient_id, "Key", KEY_LENGTH
        )
        self.common_iv = derive(master_secret, master_salt, id_context, b"", "IV", NONCE_LENGTH)
        self._seal = AESCCM(self.sender_key, tag_length=TAG_LENGTH)
        self._open = AESCCM(self.recipient_key, tag_length=TAG_LENGTH)
        #: The AEAD work of the messages sealed and opened (proto/crypto_work.py);
        #: the derivation above happens once, at provisioning, and is not counted.
        self.meter = WorkMeter()
        self.sender_sequence_number = sender_sequence_number
        #: Numbers below this may be used without asking `reserve` (B.1.1).
        self.sequence_limit = MAX_SEQUENCE_NUMBER + 1
        self.reserve: Callable[[int], int] | None = None
        self.window_size = window_size
        self.replay: ReplayWindow | None = (
            ReplayWindow(window_size) if replay_window_known else None
        )
        #: The Echo value a server sent while its replay window is unknown (B.1.2).
        self.echo: bytes | None = None

    def __repr__(self) -> str:  # never the keys
        ctx = "" if self.id_context is None else f" id_context={self.id_context.hex()}"
        return (
            f"SecurityContext(sender_id={self.sender_id.hex()!r},"
            f" recipient_id={self.recipient_id.hex()!r}{ctx},"
            f" ssn={self.sender_sequence_number})"
        )

    def new_partial_iv(self) -> bytes:
        """Take the next Sender Sequence Number (8.1 step 3) as a Partial IV."""
        n = self.sender_sequence_number
        if n > MAX_SEQUENCE_NUMBER:
            raise ContextExhausted("the Sender Sequence Number is exhausted (2^40)")
        if n >= self.sequence_limit:
            if self.reserve is None:
                raise ContextExhausted(f"the Sender Sequence Number reached {self.sequence_limit}")
            self.sequence_limit = min(self.reserve(n), MAX_SEQUENCE_NUMBER + 1)
            if n >= self.sequence_limit:
                raise ContextExhausted("no more sequence numbers could be reserved")
        self.sender_sequence_number = n + 1
        return partial_iv(n)

    def nonce(self, id_piv: bytes, piv: bytes) -> bytes:
        return make_nonce(self.common_iv, id_piv, piv)

    def seal(self, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
        """Ciphertext and tag of `plaintext` under the Sender Key."""
        self.meter.add(crypto_work.ccm(len(plaintext), len(aad)))
        return self._seal.encrypt(nonce, plaintext, aad)

    def open(self, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
        """The plaintext of `ciphertext` under the Recipient Key, or DecryptionFailed."""
        if len(ciphertext) < TAG_LENGTH:
            raise DecryptionFailed("ciphertext shorter than the tag")
        self.meter.add(crypto_work.ccm(len(ciphertext) - TAG_LENGTH, len(aad)))
        try:
            return self._open.decrypt(nonce, ciphertext, aad)
        except InvalidTag:
            raise DecryptionFailed("the AEAD tag does not verify") from None
