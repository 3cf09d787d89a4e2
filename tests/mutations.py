"""Fuzz inputs for codecs and stacks: random bytes, valid encodings, and valid
encodings mutated (bits flipped, bytes set to boundary values, inserted,
deleted, the tail cut), shared by tests/test_codec_agreement.py and the
stacks' fuzz tests."""

from __future__ import annotations

from hypothesis import strategies as st

_INTERESTING = st.sampled_from([0x00, 0x01, 0x0D, 0x0E, 0x0F, 0x7F, 0x80, 0xFD, 0xFE, 0xFF])


@st.composite
def _mutated(draw: st.DrawFn, valid: st.SearchStrategy[bytes], fix) -> bytes:
    wire = bytearray(draw(valid))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        i = draw(st.integers(0, len(wire)))
        if op == "insert":
            wire[i:i] = draw(st.binary(min_size=1, max_size=4))
        elif op == "truncate":
            del wire[i:]
        elif i < len(wire):
            if op == "flip":
                wire[i] ^= 1 << draw(st.integers(0, 7))
            elif op == "set":
                wire[i] = draw(_INTERESTING | st.integers(0, 255))
            else:
                del wire[i]
    data = bytes(wire)
    if fix is not None and draw(st.integers(0, 3)):
        data = fix(data)  # a recomputed checksum, so that the parser behind it is reached
    return data


def inputs(valid: st.SearchStrategy[bytes], max_random: int = 64, fix=None):
    """(a) random bytes, (b) valid encodings, as they are and mutated."""
    return st.one_of(st.binary(max_size=max_random), valid, _mutated(valid, fix))
