"""A fake IPv6 network for Entity Manager tests: stacks by host, a fixed delay,
multicast delivered to the hosts that joined through their /mc resource."""

from __future__ import annotations

import heapq
import ipaddress
import random

from iotbench.apps.em.manager import EmParams, EntityManager
from iotbench.proto.coap.codec import Code
from iotbench.proto.coap.endpoint import CoapEndpoint, ResourceResponse
from iotbench.proto.coap.group import serve_membership
from iotbench.proto.coap.params import CoapParams

PORT = 5683
EM_HOST = "fd00::1"
CLIENT_HOST = "fd01::2"


class Net:
    def __init__(self, delay_s: float = 0.01) -> None:
        self.delay_s = delay_s
        self.stacks: dict[str, object] = {}
        self.groups: dict[str, set[str]] = {}
        self.now = 0.0
        self.log: list[tuple[float, str, tuple, bytes]] = []  # (time, src host, dst, data)
        self._flight: list = []
        self._seq = 0

    def add(self, host: str, stack) -> None:
        self.stacks[host] = stack

    def member(self, host: str, value: bytes = b"21.5", seed: int = 0, **params) -> CoapEndpoint:
        ep = CoapEndpoint(random.Random(seed or hash(host) & 0xFFFF), CoapParams(**params))
        ep.add_resource("/s/t", lambda req, addr: ResourceResponse(Code.CONTENT, value, 0))
        joined: list[bytes] = []

        def join(g: bytes) -> None:
            joined.append(g)
            self.groups.setdefault(str(ipaddress.IPv6Address(g)), set()).add(host)

        def leave(g: bytes) -> None:
            joined.remove(g)
            self.groups[str(ipaddress.IPv6Address(g))].discard(host)

        serve_membership(ep, join, leave, lambda: list(joined))
        self.add(host, ep)
        return ep

    def _collect(self) -> None:
        for host, stack in self.stacks.items():
            for data, dst in stack.datagrams_to_send():
                self.log.append((self.now, host, dst, data))
                self._seq += 1
                heapq.heappush(self._flight, (self.now + self.delay_s, self._seq, host, dst, data))

    def run(self, until: float) -> None:
        while True:
            self._collect()
            times = [self._flight[0][0]] if self._flight else []
            times += [t for s in self.stacks.values() if (t := s.next_timer()) is not None]
            if not times or min(times) > until:
                self.now = until
                return
            self.now = max(self.now, min(times))
            if self._flight and self._flight[0][0] <= self.now:
                _, _, src, (host, port), data = heapq.heappop(self._flight)
                if ipaddress.IPv6Address(host).is_multicast:
                    for member in sorted(self.groups.get(host, ())):
                        self.stacks[member].receive(self.now, data, (src, PORT), multicast=True)
                elif host in self.stacks:
                    self.stacks[host].receive(self.now, data, (src, PORT))
                continue
            for stack in self.stacks.values():
                t = stack.next_timer()
                if t is not None and t <= self.now:
                    stack.handle_timer(self.now)

    def at(self, t: float) -> float:
        self.run(t)
        return t

    def sent_to(self, host: str) -> list[tuple[float, bytes]]:
        return [(t, d) for t, _, dst, d in self.log if dst[0] == host]


def em_net(
    members: int = 3, em_params: EmParams | None = None, leisure_s: float = 5.0, **coap
) -> tuple[Net, EntityManager, CoapEndpoint]:
    """The EM, `members` members fd00::2... answering 20, 21, ..., and a client;
    the leisure is the same for the EM (how long it waits) and the members."""
    net = Net()
    coap["default_leisure_s"] = leisure_s
    em = EntityManager(
        CoapEndpoint(random.Random(1), CoapParams(**coap)),
        em_params or EmParams(local_hosts=(EM_HOST,)),
    )
    net.add(EM_HOST, em)
    for i in range(members):
        net.member(f"fd00::{i + 2}", b"%d" % (20 + i), default_leisure_s=leisure_s)
    client = CoapEndpoint(random.Random(2), CoapParams())
    net.add(CLIENT_HOST, client)
    return net, em, client
