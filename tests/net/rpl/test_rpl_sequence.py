"""RPL's lollipop sequence counters (RFC 6550 section 7.2)."""

from __future__ import annotations

from iotbench.net.rpl.sequence import (
    SEQUENCE_INIT,
    SEQUENCE_WINDOW,
    sequence_compare,
    sequence_increment,
    sequence_newer,
)


def test_counters_start_on_the_straight_part_and_wrap_onto_the_circle():
    assert SEQUENCE_INIT == 240 and SEQUENCE_WINDOW == 16
    assert sequence_increment(240) == 241
    assert sequence_increment(255) == 0  # from the straight part onto the circle
    assert sequence_increment(127) == 0  # around the circle


def test_comparison_rules():
    assert sequence_compare(241, 240) == 1 and sequence_compare(240, 241) == -1
    assert sequence_compare(5, 5) == 0
    # Rule 1: 0..15 just past the wrap are newer than the straight part's end.
    assert sequence_newer(3, 250) and not sequence_newer(250, 3)
    assert sequence_newer(250, 100)  # a value far from the wrap: the straight one
    # Rule 2 on the circle, modulo 128, within the window.
    assert sequence_newer(0, 127) and sequence_newer(10, 125)
    assert sequence_compare(10, 120) is None  # 18 steps apart: beyond the window
    assert sequence_compare(60, 10) is None  # farther apart than the window
    assert sequence_compare(200, 130) is None
