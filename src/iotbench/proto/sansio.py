"""The one loop that empties a sans-I/O stack, shared by every driver.

A stack (CoapEndpoint, MqttClient, MqttBroker and the others) queues output
(datagrams, stream bytes, connections to close) and application events as it
works; a driver, simulated or real, must move both out after every call into
the stack. Event handlers may call the stack again, which may queue more, so
the loop runs until the stack has nothing left to say.

`DrainedQueues` is the output side of the datagram security layers (DTLS,
OSCORE): what they queue for the wire, for the endpoint and as events.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from mypy_extensions import mypyc_attr


def drain_with(
    stack,
    flush: Callable[[], None],
    on_event: Callable[[object], None],
) -> float | None:
    """Flush output, deliver events, until quiet; returns the stack's next deadline.

    `flush()` moves everything the stack has queued for its transport out
    (datagrams_to_send() for a datagram stack; data_to_send() and the close
    requests for a stream stack).
    """
    while True:
        flush()
        events = stack.events()
        if not events:
            return stack.next_timer()
        for event in events:
            on_event(event)


def drain(
    stack,
    send: Callable[[bytes, Hashable], None],
    on_event: Callable[[object], None],
) -> float | None:
    """Send every queued datagram, deliver every event; returns the stack's next deadline."""

    def flush() -> None:
        for data, addr in stack.datagrams_to_send():
            send(data, addr)

    return drain_with(stack, flush, on_event)


# Compiled (src/iotbench/compiled.py) for drain_with, which every datagram and
# message of a run goes through; the DTLS and OSCORE layers, which are not,
# subclass this class.
@mypyc_attr(allow_interpreted_subclasses=True)
class DrainedQueues:
    """The three queues a datagram security layer (DTLS, OSCORE) is drained of.

    A subclass fills `_out` (datagrams for the wire), `_plain` (opened
    datagrams) and `_events` as it works; the driver's calls take them."""

    _out: list
    _plain: list
    _events: list

    def datagrams_to_send(self) -> list:
        out, self._out = self._out, []
        return out

    def plaintexts(self) -> list:
        out, self._plain = self._plain, []
        return out

    def events(self) -> list[object]:
        out, self._events = self._events, []
        return out
