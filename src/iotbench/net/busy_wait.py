"""A border router whose CPU waits for its serial line (Contiki's rpl-border-router).

Contiki's SLIP driver on the MSP430 writes a packet to the host a byte at a
time and waits for each byte to leave the UART (`slip_arch_writeb`,
cpu/msp430): for a packet's whole time on the line (87 us a byte at 115,200
baud) the node does nothing else. Meanwhile:

- the radio still receives and acknowledges in hardware (the CC2520's
  autoack), but keeps only what its receive FIFO holds (`fifo_frames`, one
  frame of up to 128 bytes): a further frame is lost although its sender
  got the ACK;
- bytes from the host still arrive by interrupt into SLIP's receive buffer,
  which holds `input_packets` packets; a further packet is lost;
- the MAC sends nothing (its timers do not run).

When the line is done, the node takes what waited, in the order it came.
A node that sends another packet up meanwhile waits for that one too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from iotbench.net.node import Interface
from iotbench.sim import Simulator


class SerialBusyWait:
    def __init__(
        self,
        sim: Simulator,
        byte_s: float,
        line_bytes: Callable[[bytes], int],
        fifo_frames: int = 1,
        input_packets: int = 2,
    ) -> None:
        self.sim = sim
        self.byte_s = byte_s
        self.line_bytes = line_bytes
        self.fifo_frames = fifo_frames
        self.input_packets = input_packets
        self.until = 0.0  # the CPU waits for the line until then
        self._waiting: deque[tuple[str, Callable[[], None]]] = deque()
        self._release_at: float | None = None
        self.busy_s = 0.0
        self.fifo_drops = 0  # radio frames lost (acknowledged) while the CPU waited
        self.input_drops = 0  # packets from the host lost while the CPU waited

    def busy(self) -> bool:
        return self.sim.now < self.until

    def writing(self, packet: bytes) -> None:
        """The node writes `packet` to the host: its CPU waits for every byte."""
        start = max(self.sim.now, self.until)
        wait = self.line_bytes(packet) * self.byte_s
        self.until = start + wait
        self.busy_s += wait
        self._arm()

    def held(self, kind: str) -> int:
        """How many of what arrived (`"radio"` frames, `"serial"` packets) wait for the CPU."""
        return sum(1 for k, _take in self._waiting if k == kind)

    def radio_frame(self, take: Callable[[], None]) -> None:
        """A frame for the node was received (and acknowledged): taken now, held in the
        radio's FIFO while the CPU waits, or lost when the FIFO is full."""
        self._arrive("radio", take, self.fifo_frames)

    def serial_packet(self, take: Callable[[], None]) -> None:
        """A packet from the host arrived: taken now, buffered, or lost."""
        self._arrive("serial", take, self.input_packets)

    def _arrive(self, kind: str, take: Callable[[], None], room: int) -> None:
        if not self.busy() and not self._waiting:
            take()
            return
        if self.held(kind) >= room:
            if kind == "radio":
                self.fifo_drops += 1
            else:
                self.input_drops += 1
            return
        self._waiting.append((kind, take))
        self._arm()

    def _arm(self) -> None:
        if self._release_at is None or self._release_at < self.until:
            self._release_at = self.until
            self.sim.post(self.until, self._release, self.until)

    def _release(self, at: float) -> None:
        if at != self._release_at:
            return  # a later release replaced this one
        self._release_at = None
        while self._waiting and not self.busy():
            _kind, take = self._waiting.popleft()
            take()  # may write to the host again, and so wait again
        if self._waiting:
            self._arm()


class BusyWaitInterface(Interface):
    """The border router's end of the serial line, through its waiting CPU."""

    def __init__(self, node, name: str, address: bytes, mtu: int, gate: SerialBusyWait) -> None:
        super().__init__(node, name, address, mtu)
        self.gate = gate

    def send(self, data, ip_header_len, transport_header_len, app_header_len, next_hop=None):
        self.gate.writing(data)
        super().send(data, ip_header_len, transport_header_len, app_header_len, next_hop)

    def receive(self, pkt) -> None:
        self.gate.serial_packet(lambda: super(BusyWaitInterface, self).receive(pkt))
