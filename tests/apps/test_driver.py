"""The datagram driver's kept dissector answers (apps/driver.py)."""

from __future__ import annotations

import pytest

from iotbench.apps.driver import LastAnswers
from iotbench.proto.coap.codec import CoapDecodeError, header_length


def test_answers_are_the_dissectors_and_asked_once_while_kept():
    asked = []

    def dissect(payload: bytes) -> int:
        asked.append(payload)
        return len(payload)

    kept = LastAnswers(dissect, 2)
    assert kept(b"ab") == 2 and kept(b"ab") == 2
    assert asked == [b"ab"]
    assert kept(b"abc") == 3
    assert kept(b"abcd") == 4  # the third: the oldest (b"ab") is forgotten
    assert kept(b"ab") == 2
    assert asked == [b"ab", b"abc", b"abcd", b"ab"]
    assert len(kept._answers) == 2  # bounded however many payloads pass


def test_a_rejected_payload_raises_every_time_and_is_not_kept():
    kept = LastAnswers(header_length, 8)
    for _ in range(2):
        with pytest.raises(CoapDecodeError):
            kept(b"\x00")
    assert kept._answers == {}
    assert kept(bytes([0x40, 0x01, 0x00, 0x01])) == 4
