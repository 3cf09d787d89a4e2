"""The anti-replay window (RFC 6347 4.1.2.6, RFC 8613 7.4)."""

from hypothesis import given
from hypothesis import strategies as st

from iotbench.proto.replay import ReplayWindow


def test_each_number_is_accepted_once():
    w = ReplayWindow(8)
    assert [w.check_and_record(n) for n in (0, 1, 1, 0, 5, 3, 3)] == [
        True,
        True,
        False,
        False,
        True,
        True,
        False,
    ]


def test_numbers_older_than_the_window_are_refused():
    w = ReplayWindow(4)
    w.record(10)
    assert w.is_fresh(7) and not w.is_fresh(6)
    w.record(100)  # a jump past the whole window forgets it
    assert not w.is_fresh(96) and w.is_fresh(97) and not w.is_fresh(100)


def test_checking_does_not_record():
    w = ReplayWindow()
    assert w.is_fresh(3) and w.is_fresh(3)
    w.record(3)
    assert not w.is_fresh(3)


def test_a_huge_first_number_stays_small():
    w = ReplayWindow(64)
    w.record((1 << 48) - 1)
    assert w._seen == 1 and not w.is_fresh((1 << 48) - 1)


@given(st.lists(st.integers(0, 300), max_size=200), st.integers(1, 70))
def test_matches_a_set_model(numbers, size):
    w, accepted = ReplayWindow(size), set()
    for n in numbers:
        expected = n not in accepted and (not accepted or n > max(accepted) - size)
        assert w.check_and_record(n) == expected
        if expected:
            accepted.add(n)
