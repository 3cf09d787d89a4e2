"""The datagram drivers' dissector answers, kept once for every driver (apps/driver.py)."""

from __future__ import annotations

from iotbench.apps.driver import kept_answers


def test_every_driver_of_one_dissector_shares_its_answers():
    asked = []

    def dissect(payload: bytes) -> int:
        asked.append(payload)
        return len(payload) - 1

    sender, router = kept_answers(dissect), kept_answers(dissect)
    assert sender is router
    assert sender(b"datagram") == 7
    # The router's copy of the same bytes: answered without a second dissection.
    assert router(bytes(bytearray(b"datagram"))) == 7
    assert asked == [b"datagram"]


def test_each_dissector_has_its_own_answers():
    def first(payload: bytes) -> int:
        return 1

    def second(payload: bytes) -> int:
        return 2

    assert kept_answers(first)(b"x") == 1 and kept_answers(second)(b"x") == 2
