"""Handshake message fragmentation and reassembly (RFC 6347 4.2.3).

A handshake message larger than what fits in one datagram is sent as
fragments, each a handshake header (with the whole message's length, its
offset and its own length) and a slice of the body. The receiver keeps the
bytes of each message until every byte has arrived, from fragments that
may overlap, repeat or come in any order.

Bounds, so that a peer cannot make a receiver hold unbounded memory: a
message longer than `max_message_bytes` is refused (a PSK handshake's
longest message is a ClientHello of a few hundred bytes), and at most
`max_messages` messages are assembled at once.
"""

from __future__ import annotations

from .messages import HandshakeFragment
from .record import DtlsDecodeError


def fragment(message: HandshakeFragment, max_body: int) -> list[HandshakeFragment]:
    """`message` (whole) cut into fragments of at most `max_body` body bytes each."""
    if max_body < 1:
        raise ValueError(f"a fragment carries at least 1 byte, got {max_body}")
    body = message.body
    if len(body) <= max_body:
        return [message]
    return [
        HandshakeFragment(
            message.msg_type,
            message.length,
            message.message_seq,
            offset,
            body[offset : offset + max_body],
        )
        for offset in range(0, len(body), max_body)
    ]


class _Partial:
    __slots__ = ("body", "have", "msg_type")

    def __init__(self, msg_type: int, length: int) -> None:
        self.msg_type = msg_type
        self.body = bytearray(length)
        self.have: list[tuple[int, int]] = []  # merged [start, end) ranges received

    def add(self, offset: int, data: bytes) -> bool:
        """Store a fragment; True when the whole message has arrived."""
        end = offset + len(data)
        self.body[offset:end] = data
        ranges = sorted([*self.have, (offset, end)])
        merged = [ranges[0]]
        for start, stop in ranges[1:]:
            if start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
            else:
                merged.append((start, stop))
        self.have = merged
        return merged == [(0, len(self.body))]


class Reassembler:
    """Whole handshake messages out of fragments, keyed by message_seq."""

    def __init__(self, max_message_bytes: int = 4096, max_messages: int = 8) -> None:
        self.max_message_bytes = max_message_bytes
        self.max_messages = max_messages
        self._partial: dict[int, _Partial] = {}

    def add(self, piece: HandshakeFragment) -> HandshakeFragment | None:
        """The whole message once `piece` completes it, else None."""
        if piece.length > self.max_message_bytes:
            raise DtlsDecodeError(
                f"a handshake message of {piece.length} bytes, more than the "
                f"{self.max_message_bytes} this receiver assembles"
            )
        if piece.whole:
            self._partial.pop(piece.message_seq, None)
            return piece
        partial = self._partial.get(piece.message_seq)
        if partial is None:
            if len(self._partial) >= self.max_messages:
                raise DtlsDecodeError(f"more than {self.max_messages} messages in assembly")
            partial = self._partial[piece.message_seq] = _Partial(piece.msg_type, piece.length)
        elif partial.msg_type != piece.msg_type or len(partial.body) != piece.length:
            raise DtlsDecodeError(
                f"fragments of message {piece.message_seq} disagree on its type or length"
            )
        if not partial.add(piece.fragment_offset, piece.body):
            return None
        del self._partial[piece.message_seq]
        return HandshakeFragment(
            piece.msg_type, piece.length, piece.message_seq, 0, bytes(partial.body)
        )

    def forget_before(self, message_seq: int) -> None:
        """Drop partial messages the handshake has moved past."""
        for seq in [s for s in self._partial if s < message_seq]:
            del self._partial[seq]
