"""S5's NDN API micro-benchmark: operations per second of this stack and of python-ndn.

    iotbench bench ndn-api [--seconds S] [--json]

The operations are those S5 lists, with the inputs of S5's benchmark program
(the ndn-riot encoding benchmark): a name of ten 10-letter components for
the URI, size and component operations (component 4 is read), /a/b/c/d plus a
20-byte value for append, /a/b/c/d with InterestLifetime 0x4000 for
Interests, /a/b/c/d with 100 zero bytes of content and ContentType BLOB for
Data, the 8-byte HMAC key "dummykey" and S5's secp256r1 private key.

S5 (like ndn-riot) reads names in wire form: "name size" and "get name
component" take a Name TLV, "append" turns a Name TLV into a new one. Three
more rows give the same operations on a name each library has already
decoded into its own object (ours: a tuple of component offsets over the
wire bytes, components built when indexed; python-ndn: a list of component
TLVs).

A fair pair: both libraries get the same input and must produce the same
output, which `operations()` checks before anything is timed: the same wire
bytes where the output is deterministic (Interest, HMAC Data, append), a
signature the other side verifies (ECDSA, whose python-ndn signer draws k at
random), or equal decoded values (names, components, counts, content).
python-ndn's signers always write a KeyLocator Name, so ours are given the
same one. The Interest nonce is fixed on both sides so the two Interests are
byte-identical.

Timing as bench_commands/timing.py says: the two sides alternate batch by
batch for `seconds` per operation, and the best batch's rate is reported.
Both sides pay the same per-call overhead of the loop.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from cryptography.hazmat.primitives import serialization

from iotbench.bench_commands.timing import BATCH_S, best_rates
from iotbench.proto.ndn import Data, Interest, Name, make_data, make_interest, verify
from iotbench.proto.ndn.signing import (
    EcdsaSha256Signer,
    EcdsaSha256Verifier,
    HmacSha256Signer,
    public_key_der,
)
from iotbench.proto.ndn.types import ContentType
from iotbench.scenarios import UserError

__all__ = ["BATCH_S", "Operation", "Result", "measure", "operations", "run"]

# ---- S5's inputs (the ndn-riot benchmark program) -------------------------------------

LONG_URI = "/" + "/".join(letter * 10 for letter in "abcdefghij")
SHORT_URI = "/a/b/c/d"
COMPONENT_INDEX = 4
APPEND_VALUE = bytes([1]) + bytes(19)  # uint8_t buf[20] = {1}
LIFETIME_MS = 0x4000
CONTENT = bytes(100)
HMAC_KEY = b"dummykey"
ECDSA_PRIVATE_KEY = bytes.fromhex(
    "386754738B724CD63EBD52F364D8F57FB5E6F29FC27BD690429DC8CEF0DE75B3"
)
#: Fixed on both sides (S5 draws one per Interest), so the two Interests are byte-identical.
NONCE = 0x5A5A5A5A
KEY_NAME = "/a/KEY/1"

INSTALL_HINT = "pip install 'iotbench[test]'"


@dataclass(frozen=True)
class Operation:
    name: str
    #: What both sides do: their common input and output.
    work: str
    ours: Callable[[], object]
    theirs: Callable[[], object]
    #: Do the two results mean the same (same bytes, same values, mutual verification)?
    #: Each operation's check takes the results of its own two sides, whatever they are.
    same: Callable[[Any, Any], bool]
    #: One of S5's operations, or the same on an already decoded name.
    s5: bool = True


@dataclass(frozen=True)
class Result:
    operation: str
    work: str
    s5: bool
    ours_per_s: float
    theirs_per_s: float

    @property
    def ratio(self) -> float:
        """iotbench's rate over python-ndn's: above 1, iotbench is faster."""
        return self.ours_per_s / self.theirs_per_s

    def to_json(self) -> dict:
        return {
            "operation": self.operation,
            "work": self.work,
            "s5": self.s5,
            "iotbench_per_s": round(self.ours_per_s, 1),
            "python_ndn_per_s": round(self.theirs_per_s, 1),
            "ratio": round(self.ratio, 3),
        }


def python_ndn_version() -> str:
    try:
        return metadata.version("python-ndn")
    except metadata.PackageNotFoundError:
        return "?"


def operations() -> list[Operation]:
    """The operation pairs, each checked to produce the same result on both sides."""
    try:
        from Cryptodome.PublicKey import ECC
        from ndn.encoding import Component as PComponent
        from ndn.encoding import InterestParam, parse_data, parse_interest
        from ndn.encoding import MetaInfo as PMetaInfo
        from ndn.encoding import Name as PName
        from ndn.encoding import make_data as p_make_data
        from ndn.encoding import make_interest as p_make_interest
        from ndn.security import HmacSha256Signer as PHmacSigner
        from ndn.security import Sha256WithEcdsaSigner as PEcdsaSigner
        from ndn.security.validator.known_key_validator import verify_ecdsa
    except ImportError:
        raise UserError(
            f"bench ndn-api compares against python-ndn, which is not installed: {INSTALL_HINT}"
        ) from None

    ecdsa = EcdsaSha256Signer(int.from_bytes(ECDSA_PRIVATE_KEY, "big"), key_name=KEY_NAME)
    ecdsa_der = ecdsa.private_key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    p_ecdsa = PEcdsaSigner(KEY_NAME, ecdsa_der)
    verifier = EcdsaSha256Verifier(public_key_der(ecdsa.private_key))
    p_public_key = ECC.import_key(public_key_der(ecdsa.private_key))
    hmac = HmacSha256Signer(HMAC_KEY, key_name=KEY_NAME)
    p_hmac = PHmacSigner(KEY_NAME, HMAC_KEY)

    long_wire = Name(LONG_URI).wire
    short_wire = Name(SHORT_URI).wire
    long_name, p_long_name = Name(LONG_URI), PName.from_str(LONG_URI)
    short_name, p_short_name = Name(SHORT_URI), PName.from_str(SHORT_URI)
    interest_wire = make_interest(short_name, nonce=NONCE, lifetime_ms=LIFETIME_MS).wire
    data_wire = make_data(short_name, CONTENT, signer=ecdsa, content_type=ContentType.BLOB).wire

    def p_component(name: list) -> tuple[int, memoryview]:
        c = name[COMPONENT_INDEX]
        return PComponent.get_type(c), PComponent.get_value(c)

    def same_name(ours: Name, theirs: list) -> bool:
        return ours.wire == PName.to_bytes(theirs)

    def same_component(ours: tuple, theirs: tuple) -> bool:
        return tuple(ours) == (theirs[0], bytes(theirs[1]))

    def same_bytes(ours: bytes, theirs: bytes) -> bool:
        return ours == bytes(theirs)

    def cross_verified(ours: bytes, theirs: bytes) -> bool:
        return verify(Data(bytes(theirs)), verifier) and verify_ecdsa(
            p_public_key, parse_data(ours)[3]
        )

    def equal(ours: object, theirs: object) -> bool:
        return ours == theirs

    ops = [
        Operation(
            "URI → Name",
            "URI text → name object",
            lambda: Name(LONG_URI),
            lambda: PName.from_str(LONG_URI),
            same_name,
        ),
        Operation(
            "name size",
            "Name TLV → number of components",
            lambda: len(Name.from_wire(long_wire)),
            lambda: len(PName.from_bytes(long_wire)),
            equal,
        ),
        Operation(
            "get name component",
            "Name TLV → component 4's type and value",
            lambda: Name.from_wire(long_wire)[COMPONENT_INDEX],
            lambda: p_component(PName.from_bytes(long_wire)),
            same_component,
        ),
        Operation(
            "append to name",
            "Name TLV + 20-byte value → new Name TLV (same bytes)",
            lambda: Name.from_wire(short_wire).append(APPEND_VALUE).wire,
            lambda: PName.to_bytes(
                PName.from_bytes(short_wire) + [PComponent.from_bytes(APPEND_VALUE)]
            ),
            same_bytes,
        ),
        Operation(
            "create Interest",
            "name, nonce, lifetime → Interest wire (same bytes)",
            lambda: make_interest(short_name, nonce=NONCE, lifetime_ms=LIFETIME_MS).wire,
            lambda: p_make_interest(p_short_name, InterestParam(nonce=NONCE, lifetime=LIFETIME_MS)),
            same_bytes,
        ),
        Operation(
            "get Interest name",
            "Interest wire → name object",
            lambda: Interest(interest_wire).name,
            lambda: parse_interest(interest_wire)[0],
            same_name,
        ),
        Operation(
            "create Data (HMAC)",
            "name, 100-byte content, key → Data wire (same bytes)",
            lambda: make_data(short_name, CONTENT, signer=hmac, content_type=ContentType.BLOB).wire,
            lambda: p_make_data(p_short_name, PMetaInfo(), CONTENT, signer=p_hmac),
            same_bytes,
        ),
        Operation(
            "create Data (ECDSA)",
            "name, 100-byte content, key → Data wire (each verifies the other's)",
            lambda: (
                make_data(short_name, CONTENT, signer=ecdsa, content_type=ContentType.BLOB).wire
            ),
            lambda: p_make_data(p_short_name, PMetaInfo(), CONTENT, signer=p_ecdsa),
            cross_verified,
        ),
        Operation(
            "verify Data (ECDSA)",
            "Data wire, public key → valid",
            lambda: verify(Data(data_wire), verifier),
            lambda: verify_ecdsa(p_public_key, parse_data(data_wire)[3]),
            lambda ours, theirs: ours is True and theirs is True,
        ),
        Operation(
            "get Data name",
            "Data wire → name object",
            lambda: Data(data_wire).name,
            lambda: parse_data(data_wire)[0],
            same_name,
        ),
        Operation(
            "get Data content",
            "Data wire → content bytes",
            lambda: Data(data_wire).content,
            lambda: parse_data(data_wire)[2],
            same_bytes,
        ),
        Operation(
            "name size (decoded name)",
            "name object → number of components",
            lambda: len(long_name),
            lambda: len(p_long_name),
            equal,
            s5=False,
        ),
        Operation(
            "get name component (decoded name)",
            "name object → component 4's type and value",
            lambda: long_name[COMPONENT_INDEX],
            lambda: p_component(p_long_name),
            same_component,
            s5=False,
        ),
        Operation(
            "append to name (decoded name)",
            "name object + 20-byte value → new name object",
            lambda: short_name.append(APPEND_VALUE),
            lambda: p_short_name + [PComponent.from_bytes(APPEND_VALUE)],
            same_name,
            s5=False,
        ),
    ]
    for op in ops:
        if not op.same(op.ours(), op.theirs()):
            raise AssertionError(f"{op.name}: iotbench and python-ndn do not agree")
    return ops


# ---- timing -------------------------------------------------------------------------


def measure(op: Operation, seconds: float) -> Result:
    """Best batch rate of each side, batches alternating, for about `seconds` in all."""
    ours, theirs = best_rates((op.ours, op.theirs), seconds)
    return Result(op.name, op.work, op.s5, ours, theirs)


def run(seconds: float, on_start: Callable[[Operation], None] | None = None) -> list[Result]:
    results = []
    for op in operations():
        if on_start is not None:
            on_start(op)
        results.append(measure(op, seconds))
    return results


# ---- the command ------------------------------------------------------------------------


def main(seconds: float, as_json: bool) -> int:
    """`iotbench bench ndn-api`: a rich table, or one JSON object per operation."""
    import json

    from rich.table import Table

    from iotbench.terminal import console, print_table

    if as_json:
        for op in operations():
            line = json.dumps(measure(op, seconds).to_json(), ensure_ascii=False)
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        return 0
    err = console(stderr=True)
    with err.status("measuring") as status:
        results = run(seconds, lambda op: status.update(f"measuring {op.name}"))
    python = ".".join(map(str, sys.version_info[:3]))
    table = Table(
        title=f"NDN API (S5): iotbench against python-ndn {python_ndn_version()}, CPython {python}",
        caption=f"operations per second, best batch of about {BATCH_S * 1000:.0f} ms, the two "
        f"sides alternating for {seconds:g} s per operation; ratio > 1: iotbench is faster",
    )
    table.add_column("operation", no_wrap=True)
    table.add_column("both sides do")
    table.add_column("iotbench /s", justify="right", no_wrap=True)
    table.add_column("python-ndn /s", justify="right", no_wrap=True)
    table.add_column("ratio", justify="right", no_wrap=True)
    for i, r in enumerate(results):
        if i and not r.s5 and results[i - 1].s5:
            table.add_section()
        table.add_row(
            r.operation,
            r.work,
            f"{r.ours_per_s:,.0f}",
            f"{r.theirs_per_s:,.0f}",
            f"{r.ratio:.2f}",
        )
    print_table(console(), table)
    return 0
