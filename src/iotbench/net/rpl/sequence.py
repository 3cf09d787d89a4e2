"""RPL's 8-bit lollipop sequence counters (RFC 6550 section 7.2).

DODAGVersionNumber, DTSN, DAOSequence and Path Sequence all use them. Values
128..255 are the straight part (a counter starts there, at 240, after a
reboot) and 0..127 the circle it loops on afterwards. Two values are compared
only within SEQUENCE_WINDOW of each other; farther apart they are "not
comparable" and the caller decides (rule 3 of section 7.2).
"""

from __future__ import annotations

__all__ = [
    "SEQUENCE_INIT",
    "SEQUENCE_WINDOW",
    "sequence_compare",
    "sequence_increment",
    "sequence_newer",
]

SEQUENCE_WINDOW = 16
#: Initial value of every counter: 256 - SEQUENCE_WINDOW (section 7.2).
SEQUENCE_INIT = 256 - SEQUENCE_WINDOW
_CIRCULAR_MAX = 127


def sequence_increment(value: int) -> int:
    """The next value: 127 and 255 both wrap to 0 (section 7.2)."""
    if not 0 <= value <= 0xFF:
        raise ValueError(f"sequence counter {value} is not an 8-bit value")
    if value in (_CIRCULAR_MAX, 0xFF):
        return 0
    return value + 1


def sequence_compare(a: int, b: int) -> int | None:
    """1 if `a` is newer than `b`, -1 if older, 0 if equal, None if not comparable."""
    if a == b:
        return 0
    a_linear = a > _CIRCULAR_MAX
    b_linear = b > _CIRCULAR_MAX
    if a_linear != b_linear:
        # Rule 1: one value on the straight part, one on the circle. The circle
        # value is newer only if it is within the window past the wrap.
        linear, circular = (a, b) if a_linear else (b, a)
        circular_is_newer = 256 + circular - linear <= SEQUENCE_WINDOW
        a_is_newer = circular_is_newer != a_linear
        return 1 if a_is_newer else -1
    if a_linear:
        # Rule 2 on the straight part: it does not wrap, a plain difference.
        diff = a - b
        if abs(diff) > SEQUENCE_WINDOW:
            return None
        return 1 if diff > 0 else -1
    # Rule 2 on the circle: RFC 1982 serial-number arithmetic modulo 128,
    # limited to the window (so 0 is one step newer than 127).
    forward = (a - b) % (_CIRCULAR_MAX + 1)
    if forward <= SEQUENCE_WINDOW:
        return 1
    if (_CIRCULAR_MAX + 1) - forward <= SEQUENCE_WINDOW:
        return -1
    return None


def sequence_newer(a: int, b: int) -> bool:
    """True when `a` is comparable with `b` and newer."""
    return sequence_compare(a, b) == 1
