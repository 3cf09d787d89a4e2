"""SMRF: Stateless Multicast RPL Forwarding (Oikonomou and Phillips, as in Contiki-NG).

Multicast datagrams travel down the DODAG from the root by link-layer
broadcast. A node accepts a multicast datagram only when the frame came from
its preferred parent (anything else is dropped, even for a group it is in);
it forwards it, with the hop limit one lower and after a random delay, when
some node below it is a member of the group (its routing table holds the
group as a target, learned from DAOs or installed with a static tree); and
it delivers it to its own applications when it is a member.

The delay lets the parent's broadcast end before the child's begins (it was
introduced for duty-cycled MACs): D = `delay_s` (1/8 s in Contiki-NG), times
a random whole factor 1 .. `spread` (2 there: the slots of D in 250 ms;
Contiki 2014's smrf.c: 4 ticks of 1/128 s times 1 .. 4, 31 to 125 ms).
`buffers` bounds the datagrams waiting for their delay: Contiki's smrf.c
keeps one, and a datagram that comes while it waits takes its place (the
waiting one is never forwarded).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from iotbench.net import ip
from iotbench.sim import Simulator


class Smrf:
    def __init__(
        self,
        sim: Simulator,
        iface,
        rng: random.Random,
        parent_link_address: Callable[[], bytes | None],
        members_below: Callable[[bytes], bool],
        delay_s: float = 0.125,
        spread: int = 2,
        buffers: int | None = None,
    ) -> None:
        self.sim = sim
        self.iface = iface
        self.rng = rng
        self.parent_link_address = parent_link_address
        self.members_below = members_below
        self.delay_s = delay_s
        self.spread = max(1, spread)
        self.buffers = buffers
        self._waiting: list[list] = []  # [datagram, group], in arrival order
        self.forwarded = 0
        self.dropped = 0
        self.replaced = 0

    def __call__(self, data: bytes, link_src: bytes | None, group: bytes, hop_limit: int) -> bool:
        """A multicast datagram arrived; True if this node accepts it."""
        parent = self.parent_link_address()
        if parent is None or link_src != parent or hop_limit <= 1:
            self.dropped += 1
            return False
        if self.members_below(group):
            copy = data[:7] + bytes((hop_limit - 1,)) + data[8:]
            delay = self.delay_s * (1 + self.rng.randrange(self.spread))
            if self.buffers is not None and len(self._waiting) >= self.buffers:
                oldest = self._waiting.pop(0)
                oldest[0] = None  # its timer finds nothing to send
                self.replaced += 1
            entry = [copy, group]
            self._waiting.append(entry)
            self.sim.schedule(delay, self._due, entry)
        return True

    def _due(self, entry: list) -> None:
        data, group = entry
        if data is None:
            return
        self._waiting.remove(entry)
        self.forwarded += 1
        self._send(data, group)

    def _send(self, data: bytes, group: bytes) -> None:
        node = self.iface.node
        transport, app = node.layers_of(data[6], group, data[ip.IPV6_HEADER_LEN :])
        self.iface.send(data, ip.IPV6_HEADER_LEN, transport, app, group)
