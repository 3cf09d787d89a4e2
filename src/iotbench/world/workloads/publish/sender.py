"""What a publish run's sender is, and what it may ask of the workload.

The two sides of the publish workload meet here, so that neither imports the
other: the workload (workload.py) drives a `Sender` (one per exchange: coap.py,
mqttsn.py, ndn.py, hopp.py), and a sender reports what happens to the
readings through the `Publisher` it was built with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from iotbench.proto.ndn.forwarder import Forwarder
from iotbench.sim.cpu import Cpu


class Sender(Protocol):
    """How one exchange carries the readings (see the module doc)."""

    @property
    def producers(self) -> Sequence[object]:
        """One entry per producer, in the network's order."""

    #: "push": the producers' schedule drives (send); "pull": the gateway's (request,
    #: or poll with workload.poll_interval_s).
    drives: str
    #: A pull's gateway schedule: "per-source" (a timer per producer) or "round-robin".
    schedule: str
    #: Optional: `content_id(frame)`, the item whose content a frame carries (link
    #: stress); absent: the reading id found in it (apps/readings.py).

    @property
    def requests(self) -> int | None:
        """Requests the gateway sent (a pull); None for a push."""

    def start(self) -> None: ...

    def ready(self, producer: int) -> bool:
        """Can the producer take a reading now?"""

    def send(self, producer: int, rid: int, payload: bytes) -> None:
        """The producer took a reading: carry it (a push), or hold it (a polled pull)."""

    def app_retransmissions(self) -> int:
        """Retransmissions above the MAC so far."""

    def forwarders(self) -> dict[str, Forwarder]:
        """NDN: each node's forwarder, by host name; empty otherwise."""

    def protocol_metrics(self) -> dict[str, float | int]:
        """What only this exchange counts: CoAP over DTLS, the clients' handshakes
        (the dtls_* metrics); HoPP, the names its NAM caches had no room for;
        empty otherwise."""

    def producer_cpus(self) -> list[Cpu | None]:
        """Each producer's processor (None: a node without a device profile)."""


@runtime_checkable
class PullSender(Sender, Protocol):
    """A sender the gateway's schedule drives (`drives == "pull"`)."""

    def request(self, producer: int, rid: int) -> None:
        """A pull: the gateway asks the producer for item `rid` now."""

    def poll(self, producer: int) -> None:
        """A polled pull: the gateway asks the producer for what it has."""


class Publisher(Protocol):
    """What a sender reports to, and asks of, the publish workload."""

    def handed_over(self, rid: int) -> None:
        """The reading left its producer with no end-to-end acknowledgement to come."""

    def arrived(self, payload: bytes, since: float | None = None) -> bool | None:
        """A reading reached the gateway's application: True if new, False if it came
        before, None if it is not a reading."""

    def delivered(self, rid: int, size: int, since: float | None = None) -> bool:
        """Item `rid` is at the gateway: True on its first arrival. `since`: when a
        polled reading's transaction began (the first request for it)."""

    def failed(self, rid: int, when: float | None = None) -> None:
        """Item `rid` can no longer arrive (given up, replaced, expired)."""

    def reading_for(self, rid: int) -> bytes:
        """The reading a producer returns when asked for item `rid` (a pull)."""

    def idle_reading(self, producer: int) -> bytes:
        """A reading that is no item (a resource's state before its first reading)."""
