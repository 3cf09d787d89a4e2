"""The publish workload (S4): producers' readings to a gateway, pushed or pulled.

workload.py schedules the readings and keeps the items; a sender per exchange
carries them (coap.py, mqttsn.py, ndn.py, hopp.py; the table in senders.py),
and the two meet through the protocols in sender.py; schedules.py draws the
waits.
"""

from __future__ import annotations

from iotbench.world.workloads.publish.workload import PublishWorkload

__all__ = ["PublishWorkload"]
