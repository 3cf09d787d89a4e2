"""The one loop that empties a sans-I/O datagram stack, shared by every driver.

A stack (CoapEndpoint and the others) queues datagrams and application events
as it works; a driver, simulated or real, must move both out after every call
into the stack. Event handlers may call the stack again, which may queue more,
so the loop runs until the stack has nothing left to say.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable


def drain(
    stack,
    send: Callable[[bytes, Hashable], None],
    on_event: Callable[[object], None],
) -> float | None:
    """Send every queued datagram, deliver every event; returns the stack's next deadline."""
    while True:
        for data, addr in stack.datagrams_to_send():
            send(data, addr)
        events = stack.events()
        if not events:
            return stack.next_timer()
        for event in events:
            on_event(event)
