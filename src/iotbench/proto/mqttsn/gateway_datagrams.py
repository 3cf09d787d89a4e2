"""The MQTT-SN gateway's bottom layer on the clients' side: datagrams.

`ClientDatagrams` decodes what arrives, unwraps a forwarder's encapsulation
(5.5), encodes what goes out (wrapped again for a client behind a forwarder)
and holds it until the driver takes it. It counts what it sees in the
gateway's stats and knows nothing of clients or sessions.

    message = datagrams.decode(data)             # None: malformed (counted)
    inner = datagrams.unwrap(message, addr)      # (message, Forwarded address) or None
    datagrams.send(message, addr, radius)        # encoded, queued
    datagrams.take()                             # what to send, in order (drains)
"""

from __future__ import annotations

from collections.abc import Hashable

from .codec import Encapsulated, Message, MqttSnDecodeError, decode, encode
from .gateway_state import Forwarded, MqttSnGatewayStats


class ClientDatagrams:
    """The codec and the outgoing datagrams of the gateway's client side."""

    __slots__ = ("_out", "_stats")

    def __init__(self, stats: MqttSnGatewayStats) -> None:
        self._stats = stats
        self._out: list[tuple[bytes, Hashable]] = []

    def decode(self, data: bytes) -> Message | None:
        """The message of one datagram from a client or forwarder; None when malformed."""
        self._stats.datagrams_received += 1
        try:
            return decode(data)
        except MqttSnDecodeError:
            self._stats.decode_errors += 1
            return None

    def unwrap(self, m: Encapsulated, forwarder: Hashable) -> tuple[Message, Forwarded] | None:
        """The message a forwarder encapsulated and its client's address; None when the
        inner message is malformed or encapsulated again (one forwarder hop only)."""
        try:
            inner = decode(m.message)
        except MqttSnDecodeError:
            self._stats.decode_errors += 1
            return None
        if type(inner) is Encapsulated:
            self._stats.unexpected += 1
            return None
        return inner, Forwarded(forwarder, m.node_id)

    def send(self, message: Message, addr: Hashable, radius: int = 0) -> None:
        """Queue `message` for `addr`; through its forwarder for a Forwarded address."""
        data = encode(message)
        if type(addr) is Forwarded:
            data = encode(Encapsulated(radius, addr.node_id, data))
            addr = addr.forwarder
        self._out.append((data, addr))
        self._stats.datagrams_sent += 1

    def take(self) -> list[tuple[bytes, Hashable]]:
        """Datagrams queued since the last call, in order (drains)."""
        out = self._out
        self._out = []
        return out
