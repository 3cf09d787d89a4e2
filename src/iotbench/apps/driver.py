"""Runs a sans-I/O datagram protocol stack on a simulated node's UDP port.

The stack is the same object that runs behind a real socket (see real/): it
gets `receive(now, data, addr)` and `handle_timer(now)`, and this driver moves
what it produces (`datagrams_to_send()`, `events()`, `next_timer()`) into the
simulator. Addresses cross the boundary as (text address, port) tuples, like a
real socket's, so the stack cannot tell the two worlds apart.

On a node with a CPU (a device profile, network.device), each datagram in
and out costs the profile's price of `operation` (each datagram in only,
where the profile's prices include what is sent in answer: the a8's). A
stack behind a security layer (proto/coap/secured.py) also has its
cryptography charged: what the layer counted since the last call
(proto/crypto_work.py), priced by the profile, is spent before what that
work produced is sent or handed on. The layer did the work at the call's
time; its outputs wait for the CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from iotbench.net.ip import address_bytes, address_text
from iotbench.net.node import Node
from iotbench.proto.recent import RecentDecodes
from iotbench.proto.sansio import drain_with
from iotbench.sim import Simulator
from iotbench.sim.deadline import DeadlineTimer

# The answers of one dissector are kept for every driver that uses it: a router
# dissects with the cache of the datagram's addressee's driver (net/node.py's
# app_layers), and its sender's driver dissected it as it sent it. With a cache
# for each driver (eight answers each), the first router on every path
# dissected each datagram again. 256 answers: the datagrams a whole network
# sends while one of them crosses it (a 1,000-node network at one datagram a
# second each sends about a hundred in a tenth of a second); a few tens of KB
# for S4's payloads, where eight for each of 1,000 drivers took 8,000 entries.
_ANSWERS_KEPT: Final = 256
_KEPT: Final[dict[Callable[[bytes], int], RecentDecodes[int]]] = {}


def kept_answers(dissect: Callable[[bytes], int]) -> RecentDecodes[int]:
    """`dissect` with its answers for the last payloads it was asked about, one
    cache for each dissector (a module's function: few exist)."""
    kept = _KEPT.get(dissect)
    if kept is None:
        if len(_KEPT) >= 64:
            _KEPT.clear()  # (many throwaway dissectors, a test's: a bound, not a policy)
        kept = _KEPT[dissect] = RecentDecodes(dissect, _ANSWERS_KEPT)
    return kept


class DatagramDriver:
    def __init__(
        self,
        sim: Simulator,
        node: Node,
        stack,
        on_event: Callable[[object], None],
        header_length: Callable[[bytes], int],
        port: int | None = None,
        operation: str | None = None,
    ) -> None:
        """`operation`: what handling one of the stack's messages costs on a node with
        a CPU (the device profile's name for it, e.g. "coap_message")."""
        self.sim = sim
        self.node = node
        self.stack = stack
        self.on_event = on_event
        # A datagram is dissected when sent and again at every router on its way
        # (node.app_layers); the dissector depends on the bytes alone, so its answers
        # for the last payloads are kept (MQTT-SN's decoder at every hop was a large
        # part of a multi-hop run), in one cache per dissector (kept_answers).
        self.header_length = header_length = kept_answers(header_length)
        self._cpu = node.cpu if operation is not None else None
        self._cost_s = node.profile.cost_s(operation) if self._cpu is not None else 0.0
        # Where the profile has a measured spread for the operation, each message
        # draws its time from it (network.uplink.cost_spread), seeded per node.
        spread = node.profile.spreads.get(operation) if self._cpu is not None else None
        self._cost_factor: Callable[[], float] | None = None
        if spread is not None:
            rng = sim.rng(f"cpu-spread/{node.name}/{operation}")
            self._cost_factor = lambda: spread.factor(rng.random())
        # What a datagram sent costs: nothing where the profile's figures already
        # include a message's answer (the a8's), else the same as one received.
        self._send_cpu = None if self._cpu is None or node.profile.answers_included else self._cpu
        self._charged = getattr(stack, "crypto_work", None) if self._cpu is not None else None
        # Without a CPU the stack gets each datagram straight from UDP (the per-packet
        # path of most runs); with one, once the CPU has handled it.
        handler = self._receive if self._cpu is None else self._on_datagram_with_cpu
        self.port = node.udp_bind_ephemeral(handler) if port is None else port
        if port is not None:
            node.udp_bind(port, handler)
        # Routers on the way split this port's datagrams into layers the same way.
        for iface in node.interfaces:
            node.app_layers[(iface.address, self.port)] = header_length
        self._timer = DeadlineTimer(sim, self._on_timer)
        self._text: dict[bytes, str] = {}
        self._raw: dict[str, bytes] = {}

    def _on_datagram_with_cpu(
        self, payload: bytes, src: bytes, sport: int, dport: int, dst: bytes
    ) -> None:
        cpu = self._cpu
        assert cpu is not None  # (bound as the port's handler only on a node with a CPU)
        cpu.run(self._message_cost_s(), lambda: self._receive(payload, src, sport, dport, dst))

    def _message_cost_s(self) -> float:
        """What handling one message costs: the profile's price, or a draw from its
        measured spread."""
        factor = self._cost_factor
        return self._cost_s if factor is None else self._cost_s * factor()

    def _receive(self, payload: bytes, src: bytes, sport: int, dport: int, dst: bytes) -> None:
        host = self._text.get(src)
        if host is None:
            host = self._text[src] = address_text(src)
        if dst[0] == 0xFF:
            # Sent to a group this node joined (a CoAP member, RFC 7252 8).
            self.stack.receive(self.sim.now, payload, (host, sport), multicast=True)
        else:
            self.stack.receive(self.sim.now, payload, (host, sport))
        self.pump()

    def _flush(self) -> None:
        """Everything the stack has for the outside world: its datagrams (a stack
        with more kinds of output, like the MQTT-SN gateway, adds them here)."""
        for data, addr in self.stack.datagrams_to_send():
            self._send(data, addr)

    def _send(self, data: bytes, addr: tuple[str, int]) -> None:
        host, port = addr
        raw = self._raw.get(host)
        if raw is None:
            raw = self._raw[host] = address_bytes(host)
        if self._send_cpu is not None:  # it leaves once the CPU has built it
            self._send_cpu.run(
                self._message_cost_s(),
                lambda: self.node.udp_send(self.port, raw, port, data, self.header_length(data)),
            )
        else:
            self.node.udp_send(self.port, raw, port, data, self.header_length(data))

    def _on_timer(self) -> None:
        self.stack.handle_timer(self.sim.now)
        self.pump()

    def pump(self) -> None:
        """Send what the stack wants sent, hand its events on, re-arm its timer.

        Call after every application call into the stack.
        """
        if self._charged is not None:
            done = self.stack.crypto_work
            spent = done - self._charged
            if spent:
                self._charged = done
                cpu = self._cpu
                assert cpu is not None  # (work is counted only on a node with a CPU)
                cpu.run(self.node.profile.crypto_s(spent), self._release)
                return
        self._release()

    def _release(self) -> None:
        self._timer.set(drain_with(self.stack, self._flush, self.on_event))
