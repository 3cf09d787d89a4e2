"""The keep-alive rule MQTT 3.1.1 (3.1.2.10) and MQTT-SN 1.2 (6.11, 6.14) share.

A client that has sent nothing for its keep-alive period sends PINGREQ; a
server that has heard nothing from a client for a multiple of that period
(MQTT: 1.5; MQTT-SN leaves it to the gateway) gives the client up. A
sleeping MQTT-SN client is given up the same way after its sleep duration.
A period of 0 turns the rule off. Both return absolute times, as the stacks'
`next_timer()` does, and None when the rule is off.
"""

from __future__ import annotations


def ping_due_s(last_sent_s: float, keep_alive_s: float) -> float | None:
    """When a client that last sent at `last_sent_s` owes a PINGREQ."""
    return last_sent_s + keep_alive_s if keep_alive_s else None


def given_up_s(last_heard_s: float, period_s: float, factor: float) -> float | None:
    """When a server that last heard a client at `last_heard_s` gives it up."""
    return last_heard_s + period_s * factor if period_s else None
