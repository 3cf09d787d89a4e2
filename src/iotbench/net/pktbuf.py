"""A node's packet memory: the RAM its network stack keeps packets in.

A constrained node has one fixed pool for the packets it holds, as RIOT's
GNRC packet buffer is (6,144 bytes by default: two incoming and two outgoing
full-MTU IPv6 packets and their metadata). Packets take their bytes while
they wait on the node and give them back when they leave; a packet that does
not fit is dropped, as the stack drops it when its allocation fails.

Here two places take from it, the places where packets wait on a node:
the MAC's transmit queue (each frame from being queued until it is sent or
given up, the frame in service included) and 6LoWPAN reassembly (each
datagram's full size from its first fragment until it is complete, dropped or
timed out, as GNRC's reassembly buffer allocates it). Packets in the hands of
the CPU (microseconds) and the applications' own retransmission buffers are
not counted.
"""

from __future__ import annotations


class PacketBuffer:
    """`capacity` bytes shared by everything a node's stack holds."""

    __slots__ = ("capacity", "peak", "refused", "used")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"a packet buffer needs at least 1 byte, got {capacity}")
        self.capacity = capacity
        self.used = 0
        self.peak = 0  # the most bytes held at once
        self.refused = 0  # packets dropped because they did not fit

    def take(self, size: int) -> bool:
        """Hold `size` bytes; False (and a refusal counted) if they do not fit."""
        used = self.used + size
        if used > self.capacity:
            self.refused += 1
            return False
        self.used = used
        if used > self.peak:
            self.peak = used
        return True

    def give(self, size: int) -> None:
        """Give back `size` bytes taken earlier."""
        self.used -= size
