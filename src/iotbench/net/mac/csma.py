"""The IEEE 802.15.4 MAC of one node: unslotted CSMA/CA, acknowledgments, retries.

IEEE 802.15.4-2006 7.5.1.4 (unslotted CSMA-CA) and 7.5.6.4 (retransmissions):

    NB = 0, BE = macMinBE
    repeat: wait random(0 .. 2^BE - 1) unit backoff periods (20 symbols, 320 us),
            CCA (8 symbols); clear -> turn around (12 symbols) and transmit;
            busy -> NB += 1, BE = min(BE + 1, macMaxBE); NB > macMaxCSMABackoffs
            -> channel access failure, the frame is dropped.

A unicast frame asks for an acknowledgment. Its receiver turns around
(aTurnaroundTime) and sends the 5-byte ACK without CCA; the sender waits
macAckWaitDuration (54 symbols) from the end of its frame, and without the ACK
sends the frame again through CSMA-CA from NB = 0, up to macMaxFrameRetries
times, then drops it (no ACK). Broadcast frames get no ACK and no retries.
After a successful transmission the MAC waits the interframe space (SIFS for
frames of at most aMaxSIFSFrameSize bytes, else LIFS) before the next frame.
A receiver drops a data frame whose source and sequence number repeat the
last one from that source (a retransmission after a lost ACK), after
acknowledging it again.

With `extended_mode`, the CSMA-CA and retries are the radio chip's own, as
the AT86RF231's extended operating mode runs them under RIOT's at86rf2xx
driver (S4's M3 nodes). The chip has one frame buffer, and from the moment a
frame is loaded into it until its transaction ends (TX_ARET: backoffs, CCA,
the frame, the ACK waits and retries) it takes no frame but the ACK it waits
for ("Received frames other than the expected ACK frame are discarded",
AT86RF231 datasheet, 7.2.4). The driver loads a frame only once the radio is
done receiving (at86rf2xx_set_state waits out BUSY_RX_AACK, the frame and
its automatic ACK): a frame for this node that was arriving then is
acknowledged, and then overwritten in the buffer before the driver reads it,
so it is lost though its sender saw the ACK (`counters.overwritten`). With
more frames queued, the next transaction follows at once, the chip deaf in
between (at86rf2xx_tx_prepare waits out BUSY_TX_ARET to load it); only an
empty queue returns the chip to receiving.

Frames wait in a bounded transmit queue; a frame that finds it full is
dropped. The radio stays on (no duty cycling). A duty-cycling MAC (a
low-power listening layer, say) would sit between this MAC and the radio and
switch the radio between its OFF and LISTEN states (medium.py), whose time
the energy accounts already keep apart.

The MAC is a small state machine driven by the kernel. Its upper layer gives
it payloads with `send` and hears `on_receive(payload, src, dst, pkt)` and
`on_sent(dst, status, transmissions)` (SENT, NO_ACK or CHANNEL_ACCESS_FAILURE);
it never sees the radio.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from mypy_extensions import i64

from iotbench.metrics.observers import Observers
from iotbench.net import ieee802154 as mac
from iotbench.net.packet import ACK, DATA, QUEUE_FULL, Packet
from iotbench.net.pktbuf import PacketBuffer
from iotbench.net.radio import phy
from iotbench.net.radio.medium import TX, FrameReceiver, Radio, RadioMedium, Transmission
from iotbench.sim import Simulator
from iotbench.sim.twister import randbelow

# How a frame left the MAC (`on_sent`'s status): sent (and, for a unicast,
# acknowledged), never acknowledged after its retries, or never sent because the
# channel stayed busy.
SENT: Final = "sent"
NO_ACK: Final = "no-ack"
CHANNEL_ACCESS_FAILURE: Final = "channel-access-failure"
# The addressee of a unicast to an address no radio has: nobody locks on.
NOBODY: Final = object()


@dataclass(frozen=True)
class MacParams:
    min_be: int = 3  # macMinBE
    max_be: int = 5  # macMaxBE
    max_csma_backoffs: int = 4  # macMaxCSMABackoffs
    max_frame_retries: int = 3  # macMaxFrameRetries
    queue_frames: int = 16
    ack_wait_s: float = phy.ACK_WAIT_S  # macAckWaitDuration
    interframe_spacing: bool = True
    pan_id: int = mac.DEFAULT_PAN_ID
    extended_mode: bool = False  # the chip's CSMA-CA and one frame buffer (see above)


class MacCounters:
    """A node's MAC: frames it sent and what became of them, and what it received."""

    __slots__ = (
        "acks_received",
        "acks_sent",
        "broadcasts",
        "cca_busy",
        "channel_access_failures",
        "delivered_up",
        "duplicates",
        "frames",
        "no_ack",
        "overwritten",
        "queue_drops",
        "retries",
    )

    def __init__(self) -> None:
        self.acks_received = self.acks_sent = self.broadcasts = self.cca_busy = 0
        self.channel_access_failures = self.delivered_up = self.duplicates = 0
        self.frames = self.no_ack = self.queue_drops = self.retries = 0
        self.overwritten = 0  # extended mode: acknowledged, then lost in the frame buffer


class LinkCounters:
    """One link (this node to one neighbour address): unicast frames and their fate."""

    __slots__ = ("acked", "channel_access_failures", "frames", "no_ack", "retries")

    def __init__(self) -> None:
        self.frames = self.retries = self.acked = self.no_ack = 0
        self.channel_access_failures = 0


class _Outgoing:
    """A frame in the MAC's hands, and how far its CSMA-CA and retries went."""

    __slots__ = (
        "ack",
        "be",
        "kind",
        "dst",
        "dst_name",
        "dst_radio",
        "frame",
        "layers",
        "link",
        "nb",
        "released",
        "retries",
        "seq",
    )

    def __init__(
        self,
        frame: bytes,
        dst: bytes,
        seq: int,
        kind: str,
        layers: tuple[int, int, int, int],
        dst_radio: object,
        dst_name: str | None,
    ) -> None:
        self.frame = frame
        self.dst = dst
        self.ack = dst != mac.BROADCAST
        self.seq = seq
        self.kind = kind
        self.layers = layers  # (IP, transport, application, link) header bytes
        # The addressee's radio: None for a broadcast, NOBODY for an unknown address.
        self.dst_radio = dst_radio
        self.dst_name = dst_name
        self.retries = 0
        self.nb = 0  # NB and BE of the CSMA-CA in progress
        self.be = 0
        self.released = False  # its packet memory given back (net/pktbuf.py)
        self.link: LinkCounters | None = None  # its link's counters, once counted


# The kinds of the MAC's own events (`CsmaMac.on_event`); a subclass's start at
# MAC_EVENT_KINDS.
_CCA_START: Final = 0
_CCA_END: Final = 1
_TRANSMIT: Final = 2
_ACK_TIMEOUT: Final = 3
_ACK_START: Final = 4
_NEXT: Final = 5
_LOAD: Final = 6
MAC_EVENT_KINDS: Final = 7


class CsmaMac(FrameReceiver):
    def __init__(
        self,
        sim: Simulator,
        radio: Radio,
        address: bytes,
        rng: random.Random,
        params: MacParams,
        observers: Observers,
    ) -> None:
        self.sim = sim
        self.radio = radio
        self.medium: RadioMedium = radio.medium
        self.name = radio.name
        self.address = address
        self.rng = rng
        self.params = params
        self.observers = observers
        radio.mac = self
        radio.address = address
        self.medium.register_address(radio, address)
        self.on_receive: Callable[[bytes, bytes, bytes, Packet], None] = _ignore
        self.on_sent: Callable[[bytes, str, int], None] | None = None
        self.counters = MacCounters()
        self.links: dict[bytes, LinkCounters] = {}
        self._queue: deque[_Outgoing] = deque()
        self._current: _Outgoing | None = None
        self._seq = rng.randrange(256)  # the DSN starts at a random value (7.5.6.1)
        # The back-offs' draws: `rng.getrandbits` bound once (looked up at every
        # draw it cost about 460 instructions, and a back-off takes two on
        # average). Not a twister (sim/twister.py): its copy of the generator's
        # state is 5 KB a MAC, 50 MB in a 10,000-node network.
        self.getrandbits: Callable[[int], int] = rng.getrandbits
        self._last_seq: dict[bytes, int] = {}  # duplicate detection, per source
        self._cca_energy = 0.0
        self._cca_t0 = 0.0
        self._awaiting_ack = False
        self._ack_token = 0
        self._committed = False  # turning around for a data frame, or sending it
        self._acking = False  # turning around for an ACK, or sending it
        self.extended = params.extended_mode
        # Extended mode: the frame being received when the current frame was to
        # be loaded (it will be overwritten), and whether the load waits for an ACK.
        self._overwriting: Transmission | None = None
        self._load_after_ack = False
        # The node's packet memory (net/pktbuf.py), which queued frames take from;
        # None: only queue_frames bounds the queue.
        self.pktbuf: PacketBuffer | None = None
        # The MAC's own events are kinds of `on_event`, which the kernel calls
        # directly, and the medium tells it of its frames' ends through
        # `transmission_done`: both calls through the class's table, where a
        # bound method went through Python's call protocol.

    def on_event(self, kind: i64, args: tuple[Any, ...]) -> None:
        # The MAC's own events (Simulator.post_event), by how often they come.
        if kind == _CCA_START:
            self._cca_start()
        elif kind == _CCA_END:
            self._cca_end()
        elif kind == _TRANSMIT:
            self._transmit()
        elif kind == _ACK_TIMEOUT:
            self._ack_timeout(args[0])
        elif kind == _ACK_START:
            self._ack_start(args[0], args[1])
        elif kind == _NEXT:
            self._next()
        elif kind == _LOAD:
            self._load()
        else:
            raise ValueError(f"{self.name}: no MAC event of kind {kind}")

    def transmission_done(self, tx: Transmission, delivered: bool) -> None:
        # The medium's word on a frame of ours: an acknowledgment or a data frame.
        if tx.pkt.kind == ACK:
            self._ack_done(tx, delivered)
        else:
            self._transmitted(tx, delivered)

    # ------------------------------------------------------------ from above

    @property
    def queued(self) -> int:
        return len(self._queue)

    def frame_bytes(self) -> tuple[int, int]:
        """Bytes of the frames waiting in the queue, and of the frame in the MAC's
        hands that still holds packet memory (a finished frame stays in its hands
        through the interframe spacing, its memory already given back)."""
        current = self._current
        in_hand = 0 if current is None or current.released else len(current.frame)
        return sum(len(out.frame) for out in self._queue), in_hand

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
        """Queue a data frame to `dst` (an address, or mac.BROADCAST); False if dropped.

        The header lengths split `payload` for the per-layer byte metrics:
        `link_extra` bytes of it belong below IP (6LoWPAN's headers).
        """
        out = self._outgoing(
            dst, payload, link_extra, ip_header_len, transport_header_len, app_header_len, kind
        )
        if not self._has_room(out):
            self._drop(out)
            return False
        self._queue.append(out)
        if self._current is None:
            self._next()
        return True

    def _outgoing(
        self,
        dst: bytes,
        payload: bytes,
        link_extra: int,
        ip_header_len: int,
        transport_header_len: int,
        app_header_len: int,
        kind: str,
    ) -> _Outgoing:
        broadcast = dst == mac.BROADCAST
        seq = self._seq
        self._seq = (seq + 1) & 0xFF
        frame = mac.encode_data(seq, self.params.pan_id, dst, self.address, payload, not broadcast)
        link = len(frame) - len(payload) + link_extra
        layers = (ip_header_len, transport_header_len, app_header_len, link)
        if broadcast:
            return _Outgoing(frame, dst, seq, kind, layers, None, None)
        radio = self.medium.by_address.get(dst)
        if radio is None:
            return _Outgoing(frame, dst, seq, kind, layers, NOBODY, None)
        return _Outgoing(frame, dst, seq, kind, layers, radio, radio.name)

    def _has_room(self, out: _Outgoing) -> bool:
        """Whether the queue and the packet memory take the frame (taking its bytes)."""
        pktbuf = self.pktbuf
        return self.queued < self.params.queue_frames and (
            pktbuf is None or pktbuf.take(len(out.frame))
        )

    def _drop(self, out: _Outgoing) -> None:
        self.counters.queue_drops += 1
        pkt = self._packet(out)
        pkt.t_sent = pkt.t_done = self.sim.now
        pkt.fate = QUEUE_FULL
        self.observers.finished(pkt)

    # ------------------------------------------------------------ CSMA-CA

    def _next(self) -> None:
        if not self._queue:
            self._current = None
            return
        out = self._queue.popleft()
        self._current = out
        if self.extended:
            self._load()
        else:
            self._start_csma(out)

    def _load(self) -> None:
        """Extended mode: load the current frame into the chip once the radio is
        done receiving (a frame, and the ACK it answers with), then start its
        transaction."""
        radio = self.radio
        rec = radio.locked
        if rec is not None:  # wait for its end; the medium ends it first
            self._overwriting = rec.tx
            self.sim.post_event(rec.tx.end, self, _LOAD)
            return
        if self._acking:
            self._load_after_ack = True
            return
        self._overwriting = None
        radio.frames_off = True  # TX_ARET: only the awaited ACK is taken
        out = self._current
        assert out is not None  # a frame is in the MAC's hands
        self._start_csma(out)

    def _start_csma(self, out: _Outgoing) -> None:
        out.nb = 0
        out.be = self.params.min_be
        self._backoff(out)

    def _backoff(self, out: _Outgoing) -> None:
        delay = randbelow(self.getrandbits, 1 << out.be) * phy.UNIT_BACKOFF_S
        self.sim.post_event(self.sim.now + delay, self, _CCA_START)

    def _cca_start(self) -> None:
        now = self.sim.now
        if self._acking or self.radio.state == TX:
            self._channel_busy()
            return
        self._cca_energy = self.radio.cca_start(now)
        self._cca_t0 = now
        self.sim.post_event(now + phy.CCA_S, self, _CCA_END)

    def _cca_end(self) -> None:
        now = self.sim.now
        if not self._acking and self.radio.cca_clear(self._cca_energy, self._cca_t0, now):
            self._committed = True
            self.radio.prepare_tx(now)
            self.sim.post_event(now + phy.TURNAROUND_S, self, _TRANSMIT)
        else:
            self._channel_busy()

    def _channel_busy(self) -> None:
        out = self._current
        assert out is not None  # a frame is in the MAC's hands
        self.counters.cca_busy += 1
        out.nb += 1
        out.be = min(out.be + 1, self.params.max_be)
        if out.nb > self.params.max_csma_backoffs:
            self.counters.channel_access_failures += 1
            if out.ack:
                self._link(out).channel_access_failures += 1
            self._finish(out, CHANNEL_ACCESS_FAILURE)
        else:
            self._backoff(out)

    def _transmit(self) -> None:
        out = self._current
        assert out is not None  # a frame is in the MAC's hands
        pkt = self._packet(out)
        pkt.attempt = out.retries + 1
        counters = self.counters
        if out.retries:
            counters.retries += 1
        else:
            counters.frames += 1
        if out.ack:
            link = self._link(out)
            if out.retries:
                link.retries += 1
            else:
                link.frames += 1
        elif not out.retries:
            counters.broadcasts += 1
        self.medium.transmit(self.radio, pkt, out.dst_radio)

    def _packet(self, out: _Outgoing) -> Packet:
        ip, transport, app, link = out.layers
        pkt = Packet(out.frame, ip, transport, app, link)
        pkt.src = self.name
        pkt.dst = out.dst_name
        pkt.kind = out.kind
        return pkt

    def _transmitted(self, tx: Transmission, delivered: bool) -> None:
        self._committed = False
        out = self._current
        assert out is not None  # a frame is in the MAC's hands
        if not out.ack:
            self._finish(out, SENT)
            return
        self._awaiting_ack = True
        self._ack_token += 1
        self.sim.post_event(
            self.sim.now + self.params.ack_wait_s, self, _ACK_TIMEOUT, self._ack_token
        )

    def _ack_timeout(self, token: int) -> None:
        if token != self._ack_token or not self._awaiting_ack:
            return  # the ACK came
        self._awaiting_ack = False
        out = self._current
        assert out is not None  # a frame is in the MAC's hands
        if out.retries < self.params.max_frame_retries:
            out.retries += 1
            self._start_csma(out)
            return
        self.counters.no_ack += 1
        self._link(out).no_ack += 1
        self._finish(out, NO_ACK)

    def _finish(self, out: _Outgoing, status: str) -> None:
        """The frame is done with (sent, or given up); on to the next after the IFS."""
        if self.extended and self._queue:
            # The driver's thread waits to load the next frame as the transaction
            # ends (at86rf2xx_tx_prepare), and the chip stays in TX_ARET_ON: the
            # next transaction starts at once, the radio deaf in between.
            self._release(out, status, out.retries + 1)
            self._next()
            return
        self.radio.frames_off = False  # (extended mode: the transaction is over)
        self._release(out, status, out.retries + 1)
        if status == SENT and self.params.interframe_spacing:
            long = len(out.frame) > phy.MAX_SIFS_FRAME_BYTES
            ifs = phy.LIFS_S if long else phy.SIFS_S
            self.sim.post_event(self.sim.now + ifs, self, _NEXT)
        else:
            self._next()

    def _release(self, out: _Outgoing, status: str, transmissions: int) -> None:
        """The frame leaves the MAC: its memory back, the upper layer told."""
        out.released = True
        if self.pktbuf is not None:
            self.pktbuf.give(len(out.frame))
        if out.ack and self.on_sent is not None:
            self.on_sent(out.dst, status, transmissions)

    def _link(self, out: _Outgoing) -> LinkCounters:
        """The counters of the link `out` goes over: looked up once per frame, not
        at every attempt (a dict keyed by a fresh copy of the address costs its
        hashing and comparing each time). Made when the link is first counted."""
        link = out.link
        if link is None:
            link = self.links.get(out.dst)
            if link is None:
                link = self.links[out.dst] = LinkCounters()
            out.link = link
        return link

    # ------------------------------------------------------------ from the radio

    def frame_received(self, pkt: Packet, sender: Radio) -> None:
        """A frame for this node (or broadcast) arrived intact."""
        data = pkt.data
        fc = data[0] | (data[1] << 8)
        seq = data[2]
        if fc & 0x7 == mac.FRAME_TYPE_ACK:
            out = self._current
            if self._awaiting_ack and out is not None and seq == out.seq:
                self._awaiting_ack = False
                self._ack_token += 1
                self.counters.acks_received += 1
                self._link(out).acked += 1
                self._finish(out, SENT)
            return
        if fc & mac.ACK_REQUEST:
            self._send_ack(seq, sender)
        if self.loses(pkt):
            self.counters.overwritten += 1  # loaded over before the driver read it
            return
        self._take(pkt, fc, seq)

    def loses(self, pkt: Packet) -> bool:
        """Whether this frame, which the radio is taking, is lost in the chip's buffer
        though acknowledged (extended mode: the driver loaded a frame over it), so
        that nothing above the radio ever sees it."""
        overwriting = self._overwriting
        return overwriting is not None and overwriting.pkt is pkt

    def _take(self, pkt: Packet, fc: int, seq: int) -> None:
        """A data frame for this node, acknowledged: on to the upper layer, unless it
        repeats the last frame from its source."""
        data = pkt.data
        dst_len = 2 if (fc >> 10) & 0x3 == mac.ADDR_SHORT else 8
        src_len = 2 if (fc >> 14) & 0x3 == mac.ADDR_SHORT else 8
        src_end = 5 + dst_len + src_len
        dst, src = mac.frame_addresses(data, dst_len, src_end)
        if self._last_seq.get(src) == seq:
            self.counters.duplicates += 1
            return
        self._last_seq[src] = seq
        self.counters.delivered_up += 1
        self.on_receive(data[src_end:-2], src, dst, pkt)

    # ------------------------------------------------------------ acknowledgments

    def _send_ack(self, seq: int, to: Radio) -> None:
        if self._committed or self._acking:
            return  # the radio is already turning around for a frame of its own
        now = self.sim.now
        self._acking = True
        self.radio.prepare_tx(now)
        self.sim.post_event(now + phy.TURNAROUND_S, self, _ACK_START, seq, to)

    def _ack_start(self, seq: int, to: Radio) -> None:
        pkt = Packet(mac.encode_ack(seq), 0, 0, 0, mac.ACK_FRAME_BYTES)
        pkt.kind = ACK
        pkt.src = self.name
        pkt.dst = to.name
        self.counters.acks_sent += 1
        self.medium.transmit(self.radio, pkt, to)

    def _ack_done(self, tx: Transmission, delivered: bool) -> None:
        self._acking = False
        if self._load_after_ack:
            self._load_after_ack = False
            self._load()


def _ignore(*_args: object) -> None:
    pass
