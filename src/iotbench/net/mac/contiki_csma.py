"""Contiki's CSMA over NullRDC, as S6's nodes ran it (Contiki 2014, ebdcf0d6).

Not the 802.15.4 CSMA-CA of csma.py: Contiki's `core/net/mac/csma.c` keeps
its own retry policy above a radio driver that senses the channel once
(`core/net/mac/nullrdc.c`, the CC2520's STXONCCA strobe):

- Frames wait in per-neighbour queues: at most `neighbour_queues` (2,
  CSMA_MAX_NEIGHBOR_QUEUES) neighbours with frames at once, and at most
  `queue_frames` (8, QUEUEBUF_NUM) frames in all; a frame for a third
  neighbour, or beyond the frames, is dropped.
- The head of a neighbour's queue is sent at once: NullRDC finds the channel
  busy if the radio is receiving, or if CCA (8 symbols) finds energy above
  the threshold (MAC_TX_COLLISION); else it transmits and waits for the ACK
  (MAC_TX_OK, or MAC_TX_NOACK).
- After a collision or a missing ACK the neighbour's queue waits T + a
  random whole number of clock ticks below 2^e T, with T = 125 ms
  (CLOCK_SECOND / NETSTACK_RDC_CHANNEL_CHECK_RATE, 8: NullRDC has no channel
  check interval) and e the frame's transmissions so far, at most 3
  (CSMA_MAX_BACKOFF_EXPONENT): 125 to 250 ms after a collision before the
  first transmission, up to 125 to 1,125 ms.
- Only transmissions count against the budget (`max_transmissions`, 5:
  SICSLOWPAN_CONF_MAX_MAC_TRANSMISSIONS on the WiSMote/RM090 platform); a
  busy channel is retried without end.
- When a frame is done (acknowledged, or given up), the neighbour's next
  frame goes T later (free_packet): a neighbour gets at most 8 frames a
  second.
- One radio: a queue whose time comes while the radio is sending or
  waiting for an ACK goes right after (Contiki's NullRDC busy-waits).
- A frame the node sends because of one it received (a forwarded packet, a
  reply) is tried after the radio's automatic ACK of the received frame has
  gone (turnaround and ACK: 0.54 ms). The CPU cannot be sooner: it reads the
  frame from the RX FIFO over SPI, runs 6LoWPAN and uIP and writes the TX
  FIFO before it strobes STXONCCA. Were it tried during the ACK, NullRDC
  would see SFD high (`receiving_packet()`) and back off for 125 to 250 ms
  at every hop, which the real CPU never does. The CPU's own time (the
  node's `Cpu`, measured in MSPSim: docs/studies/s6.md) comes before the
  send; the ACK's end is the send's lower bound. (A backoff that ends
  during an ACK waits for it too; the window is 0.54 ms.)
- Contiki's driver and NullRDC busy-wait from the strobe to the ACK's end,
  the time this MAC's send takes; that the CPU does nothing else meanwhile
  is not modelled (bench/s6_busy_wait.py counts the work it would hold up:
  none with S6's requests 50 ms or more apart, under a millisecond per
  query at 25 ms, 7 ms of a 9 s query in a 40-member burst).

Broadcasts (the null address's queue) are sent once and count as sent.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any, Final

from mypy_extensions import i64

from iotbench.metrics.observers import Observers
from iotbench.net.busy_wait import SerialBusyWait
from iotbench.net.mac.csma import MAC_EVENT_KINDS, NO_ACK, SENT, CsmaMac, MacParams, _Outgoing
from iotbench.net.packet import DATA, Packet
from iotbench.net.radio.medium import Radio
from iotbench.sim import Simulator
from iotbench.sim.twister import randbelow

COLLISION: Final = "collision"  # MAC_TX_COLLISION: the channel was busy; nothing sent


@dataclass(frozen=True)
class ContikiParams:
    backoff_unit_s: float = 0.125  # T
    clock_tick_s: float = 1.0 / 128  # CLOCK_SECOND on MSP430 platforms
    max_backoff_exponent: int = 3  # CSMA_MAX_BACKOFF_EXPONENT
    max_transmissions: int = 5  # SICSLOWPAN_CONF_MAX_MAC_TRANSMISSIONS (wismote)
    neighbour_queues: int = 2  # CSMA_MAX_NEIGHBOR_QUEUES


class _NeighbourQueue:
    __slots__ = ("dst", "frames", "transmissions")

    def __init__(self, dst: bytes) -> None:
        self.dst = dst
        self.frames: deque[_Outgoing] = deque()
        self.transmissions = 0


# Its own event beside csma.py's (`on_event`): a neighbour queue's next attempt.
_ATTEMPT: Final = MAC_EVENT_KINDS


class ContikiCsmaMac(CsmaMac):
    def __init__(
        self,
        sim: Simulator,
        radio: Radio,
        address: bytes,
        rng: random.Random,
        params: MacParams,
        observers: Observers,
        contiki: ContikiParams | None = None,
    ) -> None:
        super().__init__(sim, radio, address, rng, params, observers)
        self.contiki = contiki or ContikiParams()
        self._queues: dict[bytes, _NeighbourQueue] = {}
        self._ready: deque[_NeighbourQueue] = deque()  # due while the radio was busy
        self._sending: _NeighbourQueue | None = None
        self._frames = 0
        # A border router's CPU that waits for its serial line (net/busy_wait.py).
        self.gate: SerialBusyWait | None = None
        unit = self.contiki.backoff_unit_s / self.contiki.clock_tick_s
        self._unit_ticks = max(1, round(unit))

    def on_event(self, kind: i64, args: tuple[Any, ...]) -> None:
        if kind == _ATTEMPT:
            self._attempt(args[0])
        else:
            super().on_event(kind, args)

    @property
    def queued(self) -> int:
        return self._frames

    def frame_bytes(self) -> tuple[int, int]:
        # The frame being sent stays at the head of its queue, so it is counted there.
        return sum(len(out.frame) for queue in self._queues.values() for out in queue.frames), 0

    def send(
        self,
        dst: bytes,
        payload: bytes,
        link_extra: int = 0,
        ip_header_len: int = 0,
        transport_header_len: int = 0,
        app_header_len: int = 0,
        kind: str = DATA,
    ) -> bool:
        out = self._outgoing(
            dst, payload, link_extra, ip_header_len, transport_header_len, app_header_len, kind
        )
        queue = self._queues.get(dst)
        full = queue is None and len(self._queues) >= self.contiki.neighbour_queues
        if full or not self._has_room(out):
            self._drop(out)
            return False
        if queue is None:
            queue = self._queues[dst] = _NeighbourQueue(dst)
        queue.frames.append(out)
        self._frames += 1
        if len(queue.frames) == 1:  # the head: send as soon as possible
            self.sim.post_event(self.sim.now, self, _ATTEMPT, queue)
        return True

    # ------------------------------------------------------------ one attempt

    def _attempt(self, queue: _NeighbourQueue) -> None:
        gate = self.gate
        if gate is not None and gate.busy():
            # The CPU waits for the serial line: nothing runs until it is done.
            self.sim.post_event(gate.until, self, _ATTEMPT, queue)
            return
        if self._sending is not None or self._acking:
            self._ready.append(queue)
            return
        if not queue.frames:
            return
        self._sending = queue
        out = queue.frames[0]
        out.retries = queue.transmissions
        self._current = out
        self._cca_start()

    def _take(self, pkt: Packet, fc: int, seq: int) -> None:
        # The radio acknowledged the frame in hardware; the CPU takes it when it can.
        if self.gate is None:
            super()._take(pkt, fc, seq)
        else:
            self.gate.radio_frame(lambda: CsmaMac._take(self, pkt, fc, seq))

    def _channel_busy(self) -> None:
        self.counters.cca_busy += 1
        self._done(COLLISION)

    def _ack_timeout(self, token: int) -> None:
        if token != self._ack_token or not self._awaiting_ack:
            return  # the ACK came
        self._awaiting_ack = False
        self._done(NO_ACK)

    def _finish(self, out: _Outgoing, status: str) -> None:
        # csma.py calls this when a broadcast went out or a unicast was acknowledged.
        self._done(status)

    def _done(self, status: str) -> None:
        queue = self._sending
        assert queue is not None  # a frame was being sent
        self._sending = None
        self._current = None
        out = queue.frames[0]
        if status != COLLISION:
            queue.transmissions += 1
        c = self.contiki
        if status == SENT or (status == NO_ACK and queue.transmissions >= c.max_transmissions):
            if status == NO_ACK:
                self.counters.no_ack += 1
                self._link(out).no_ack += 1
            queue.frames.popleft()
            self._frames -= 1
            self._release(out, status, queue.transmissions)
            queue.transmissions = 0
            if queue.frames:
                self.sim.post_event(self.sim.now + c.backoff_unit_s, self, _ATTEMPT, queue)
            else:
                del self._queues[queue.dst]
        else:
            exponent = min(queue.transmissions, c.max_backoff_exponent)
            ticks = self._unit_ticks + randbelow(
                self.getrandbits, (1 << exponent) * self._unit_ticks
            )
            self.sim.post_event(self.sim.now + ticks * c.clock_tick_s, self, _ATTEMPT, queue)
        self._attempt_ready()

    def _ack_done(self, tx, delivered: bool) -> None:
        super()._ack_done(tx, delivered)
        self._attempt_ready()

    def _attempt_ready(self) -> None:
        while self._ready and self._sending is None and not self._acking:
            self._attempt(self._ready.popleft())

    def _next(self) -> None:  # csma.py's single queue is not used
        raise AssertionError("ContikiCsmaMac keeps per-neighbour queues")
