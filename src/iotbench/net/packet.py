"""One IP packet crossing one link, with its fate: the unit every metric counts.

`data` is the packet exactly as it is on the wire (IP header first). The three
header lengths split its bytes into layers for the per-layer byte metrics; they
are set by the sender, which knows where its transport and application headers
end (for a fragment: the part of those headers that this fragment carries).
The sending channel fills in the transmission fields, so the log of packets is
also the log of what happened to them.
"""

from __future__ import annotations

# Fates. IN_FLIGHT until the channel knows better.
IN_FLIGHT = "in-flight"
DELIVERED = "delivered"
LOST = "lost"  # the loss model dropped it (it used the link, but never arrived)
OUTAGE = "outage"  # the link was down while the packet was on it
QUEUE_FULL = "queue-full"  # drop-tail: never transmitted

# Fates of packets that were put on the wire (appear in a capture at the sender).
TRANSMITTED = frozenset({IN_FLIGHT, DELIVERED, LOST, OUTAGE})


class Packet:
    __slots__ = (
        "data",
        "ip_header_len",
        "transport_header_len",
        "app_header_len",
        "t_sent",
        "t_done",
        "channel",
        "fate",
    )

    def __init__(
        self, data: bytes, ip_header_len: int, transport_header_len: int, app_header_len: int
    ) -> None:
        self.data = data
        self.ip_header_len = ip_header_len
        self.transport_header_len = transport_header_len
        self.app_header_len = app_header_len
        self.t_sent = 0.0
        self.t_done = 0.0
        self.channel = None
        self.fate = IN_FLIGHT

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def payload_len(self) -> int:
        return len(self.data) - self.ip_header_len - self.transport_header_len - self.app_header_len

    def __repr__(self) -> str:
        return (
            f"Packet({len(self.data)} B, t={self.t_sent:.6f}, "
            f"{getattr(self.channel, 'name', None)}, {self.fate})"
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
