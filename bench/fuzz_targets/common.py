"""What every fuzz target shares: random inputs, mutation, a stack case's record."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# =====================================================================
# input generation
# =====================================================================

_INTERESTING = (0x00, 0x01, 0x0D, 0x0E, 0x0F, 0x7F, 0x80, 0xFD, 0xFE, 0xFF)


def randbytes(rng: random.Random, n: int) -> bytes:
    return rng.getrandbits(8 * n).to_bytes(n, "big") if n else b""


def mutate(data: bytes, rng: random.Random) -> bytes:
    """1-4 random edits of `data`."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(8)
        n = len(b)
        i = rng.randrange(n + 1)
        if op == 0 and i < n:
            b[i] ^= 1 << rng.randrange(8)  # flip a bit
        elif op == 1 and i < n:
            b[i] = rng.choice(_INTERESTING) if rng.random() < 0.5 else rng.randrange(256)
        elif op == 2:
            b[i:i] = randbytes(rng, rng.randint(1, 4))  # insert
        elif op == 3 and i < n:
            del b[i : i + rng.randint(1, 3)]  # delete
        elif op == 4:
            del b[i:]  # truncate
        elif op == 5 and i < n:
            j = rng.randrange(i, n) + 1
            b[j:j] = b[i:j]  # duplicate a slice
        elif op == 6:
            b += randbytes(rng, rng.randint(1, 8))  # grow
        elif i < n:
            b[i] = (b[i] + rng.choice((1, -1))) & 0xFF  # off by one
    return bytes(b)


def pieces(rng: random.Random, data: bytes) -> list[bytes]:
    """`data` cut at random places (each piece at least one byte)."""
    out = []
    i = 0
    while i < len(data):
        n = rng.choice((1, 2, 5, 17, 100, 1000, len(data)))
        out.append(data[i : i + n])
        i += n
    return out


def text(rng: random.Random, max_len: int = 8) -> str:
    alphabet = "abcxyz/+#$-_.é€😀 %=\u0000"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(max_len + 1)))


def mqtt_text(rng: random.Random, max_len: int = 8) -> str:
    return text(rng, max_len).replace("\u0000", "")


# =====================================================================
# targets
# =====================================================================


@dataclass(frozen=True)
class Codec:
    """A codec target: a valid-encoding generator and a property check."""

    name: str
    valid: Callable[[random.Random], bytes]
    #: The property; returns True when the decoder accepted the input.
    check: Callable[[bytes], bool]
    random_max: int = 64
    #: Recompute a checksum after mutation (most of the time), to reach the parser.
    fixup: Callable[[bytes], bytes] | None = None


def datagram(
    rng: random.Random, valid: Callable[[random.Random], bytes], corpus: list[bytes]
) -> bytes:
    """Random bytes, a corpus datagram or a valid one, each mutated or not."""
    r = rng.random()
    if r < 0.15:
        return randbytes(rng, rng.randrange(64))
    data = rng.choice(corpus) if corpus and r < 0.6 else valid(rng)
    return mutate(data, rng) if rng.random() < 0.6 else data


def canonical(decode: Callable[[bytes], Any], encode: Callable[[Any], bytes], data: bytes) -> None:
    assert encode(decode(data)) == data, f"the stack emitted non-canonical bytes {data.hex()}"


class StackCase:
    """A stack case: its generator, and its inputs (labelled, in hex) for the failure report."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.inputs: list[str] = []

    def note(self, label: str, data: bytes) -> bytes:
        self.inputs.append(f"{label}:{data.hex()}")
        return data
