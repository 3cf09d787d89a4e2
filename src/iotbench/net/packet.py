"""One packet (or frame) crossing one medium, with its fate: the unit every metric counts.

`data` is the packet exactly as it is on the wire: an IP packet on an IP link,
an IEEE 802.15.4 frame (MAC header first, FCS last) on a radio or an
802.15.4-like link. The header lengths split its bytes into layers for the
per-layer byte metrics; they are set by the sender, which knows where its
headers end (for a fragment: the part of those headers that this fragment
carries). `link_header_len` covers what lies below IP: the 802.15.4 MAC header
and FCS, and 6LoWPAN's dispatch and fragment headers.

The medium that carries the packet fills in `src`, `dst` (node names; `dst` is
None for a radio broadcast), the transmission time and the fate, and tells
the run's observers (metrics/observers.py) as the packet passes. Nothing keeps
packets after that: a run's memory does not grow with its length.
"""

from __future__ import annotations

from typing import Final

# Fates. IN_FLIGHT until the medium knows better.
IN_FLIGHT: Final = "in-flight"
DELIVERED: Final = "delivered"
LOST: Final = "lost"  # the loss model dropped it (it used the link, but never arrived)
OUTAGE: Final = "outage"  # the link was down while the packet was on it
QUEUE_FULL: Final = "queue-full"  # drop-tail: never transmitted
# Radio fates of a unicast frame at its addressee (see net/radio/).
CORRUPTED: Final = "corrupted"  # received, but bit errors (noise, interference, collision)
MISSED: Final = "missed"  # the addressee never locked on: busy, asleep, too weak, or out of range
BROADCAST: Final = "broadcast"  # a broadcast frame: each receiver's outcome is its own

# Kinds of packet, for control-versus-data overhead.
DATA: Final = "data"
CONTROL: Final = "control"  # routing and topology maintenance (RPL's ICMPv6 messages)
ACK: Final = "ack"  # 802.15.4 acknowledgment frames

# Fates of packets that were put on the wire (appear in a capture at the sender).
TRANSMITTED: Final = frozenset({IN_FLIGHT, DELIVERED, LOST, OUTAGE, CORRUPTED, MISSED, BROADCAST})
# Fates that count as a packet lost on its way (`packets_lost`).
LOST_FATES: Final = frozenset({LOST, OUTAGE, CORRUPTED, MISSED})


class Packet:
    __slots__ = (
        "app_header_len",
        "attempt",
        "data",
        "dst",
        "fate",
        "ip_header_len",
        "kind",
        "link_header_len",
        "medium",
        "src",
        "t_done",
        "t_sent",
        "transport_header_len",
    )

    def __init__(
        self,
        data: bytes,
        ip_header_len: int,
        transport_header_len: int,
        app_header_len: int,
        link_header_len: int = 0,
    ) -> None:
        self.data = data
        self.ip_header_len = ip_header_len
        self.transport_header_len = transport_header_len
        self.app_header_len = app_header_len
        self.link_header_len = link_header_len
        self.t_sent = 0.0
        self.t_done = 0.0
        self.src: str | None = None
        self.dst: str | None = None
        self.medium: object = None  # the channel or radio medium that carried it
        self.fate = IN_FLIGHT
        self.attempt = 1  # a MAC's retransmission of the same frame is attempt 2, 3 ...
        self.kind = DATA

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def payload_len(self) -> int:
        return (
            len(self.data)
            - self.link_header_len
            - self.ip_header_len
            - self.transport_header_len
            - self.app_header_len
        )

    def __repr__(self) -> str:
        return (
            f"Packet({len(self.data)} B, t={self.t_sent:.6f}, {self.src}->{self.dst}, {self.fate})"
        )


def split_layers(
    frag_start: int, frag_len: int, transport_header_len: int, app_header_len: int
) -> tuple[int, int]:
    """How many transport- and application-header bytes a fragment carries.

    The fragment holds bytes [frag_start, frag_start + frag_len) of the IP
    payload, whose first bytes are the transport header, then the application
    header, then application payload.
    """
    end = frag_start + frag_len
    transport = max(0, min(end, transport_header_len) - frag_start)
    app_end = transport_header_len + app_header_len
    app = max(0, min(end, app_end) - max(frag_start, transport_header_len))
    return transport, app
