"""The shared 802.15.4 radio medium: transmissions, interference, reception, carrier sense.

One `RadioMedium` per 802.15.4 channel in use. Each node has a `Radio` on
it. The medium knows, once per run, which radios a radio's transmissions
reach at all and with what mean power (its neighbour list, see
neighbours.py): a transmission touches only those, with two kernel events,
its start and its end. A radio whose power from a transmission would stay
below the interference floor is not in the list and costs nothing.

At a receiver a transmission's power adds to the power of everything else on
the air there (other frames, interferer bursts). Frames are events; an
interferer's bursts are not: a radio asks each interferer it hears which
bursts overlapped a stretch of time when it needs to (interferer.py). The radio locks onto a frame
whose power reaches its sensitivity if it is listening (not transmitting,
not turning around, not already receiving); it then decodes it against
noise plus all other power: the frame's PSDU is cut into stretches of
constant SINR wherever another signal starts or ends, and it survives with
the product of the stretches' success probabilities (phy.py, Annex E); a
stretch is cut further wherever an interferer's burst began or ended. So
collisions, capture of the stronger frame and hidden terminals arise from
the geometry; nothing about them is special-cased.

Carrier sense (CCA mode 1) compares the energy a radio measured during the
8-symbol CCA window (the average of noise plus all incoming power, integrated
exactly from the moments power changed) with its threshold; a radio that is
receiving a frame also reports the channel busy.

Radio states (for energy, see energy.py): OFF, IDLE (transceiver off,
oscillator on), LISTEN (receiver on), RX (receiving a frame), TX. The
turnaround between receiving and transmitting (aTurnaroundTime, 192 us) is
spent deaf, in the state the radio is switching from.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any, Final

from librt.vecs import vec
from mypy_extensions import i64, mypyc_attr

from iotbench.metrics.observers import Observers
from iotbench.net.packet import ACK, BROADCAST, CORRUPTED, DELIVERED, MISSED, Packet
from iotbench.net.radio import phy
from iotbench.net.radio.energy import STATES, RadioEnergy
from iotbench.net.radio.propagation import LinkVariation, NoVariation
from iotbench.sim import Simulator
from iotbench.sim.kernel import EventHandler
from iotbench.sim.twister import twister_of

OFF: Final = 0
IDLE: Final = 1
LISTEN: Final = 2
RX: Final = 3
TX: Final = 4
assert STATES == ("off", "idle", "listen", "rx", "tx")

# Incoming power below this is rounding residue of additions and subtractions.
_POWER_RESIDUE_MW: Final = 1e-30


class RadioCounters:
    """What a radio's receiver did with the frames that reached it."""

    __slots__ = ("aborted", "collisions", "corrupted", "missed_busy", "received")

    def __init__(self) -> None:
        self.received = 0  # decoded intact (frames for it, or broadcast)
        self.corrupted = 0  # locked on, decoded with bit errors
        self.collisions = 0  # of those, with another signal on the air meanwhile
        self.aborted = 0  # locked on, then left for a transmission of its own
        self.missed_busy = 0  # addressed to it, but it could not lock on (busy or deaf)


class Reception:
    """A frame a radio has locked onto, and how its PSDU fared so far.

    Only a frame for this radio (addressed to it, or broadcast) is decided:
    a unicast for another node keeps the radio busy just the same, but its
    MAC would drop it by address, so whether its bits survived is never
    computed.
    """

    __slots__ = ("decided", "interfered", "log_success", "mw", "psdu_start", "seg_start", "tx")

    def __init__(self, tx: Transmission, mw: float, now: float, decided: bool) -> None:
        self.tx = tx
        self.mw = mw
        self.decided = decided
        self.seg_start = now
        self.psdu_start = now + phy.PHY_HEADER_BYTES * phy.BYTE_S
        self.log_success = 0.0  # ln of the probability that the PSDU so far is intact
        self.interfered = False


class Transmission:
    """One frame on the air."""

    __slots__ = ("dst", "end", "mws", "pkt", "radio", "receivers", "start")

    def __init__(
        self,
        radio: Radio,
        pkt: Packet,
        dst: object,
        start: float,
        end: float,
        receivers: tuple[Radio, ...],
        mws: vec[float],
    ) -> None:
        self.radio = radio
        self.pkt = pkt
        # The addressee's radio; None for a broadcast; any other object for a
        # unicast to an address no radio has (nobody locks on as its addressee).
        self.dst = dst
        self.start = start
        self.end = end
        self.receivers = receivers  # the sender's neighbours
        self.mws = mws  # the frame's power at each of them


# The simulated MACs (net/mac/csma.py) and a RIOT process's port (emulate/zep.py).
@mypyc_attr(allow_interpreted_subclasses=True)
class FrameReceiver(EventHandler):
    """What the medium calls on a radio's MAC: a frame for it arrived intact.

    A class, not a protocol: compiled, the medium's call on a MAC of a class of
    its own is one through the class's table, where a call through Python's
    protocol cost about 220 instructions for every frame received.
    """

    def frame_received(self, pkt: Packet, sender: Radio) -> None:
        raise NotImplementedError

    def transmission_done(self, tx: Transmission, delivered: bool) -> None:
        """A frame this MAC sent without a `done` of its own has ended."""
        raise NotImplementedError


class Radio:
    """One node's transceiver on a medium."""

    __slots__ = (
        "address",
        "cca_threshold_mw",
        "counters",
        "deaf_until",
        "energy",
        "energy_t",
        "frames_off",
        "incoming",
        "index",
        "interferers",
        "leak",
        "locked",
        "mac",
        "mean_mws",
        "medium",
        "name",
        "noise_mw",
        "pairs",
        "position",
        "power",
        "power_mw",
        "receivers",
        "sensitivity_mw",
        "state",
        "tx_power_dbm",
    )

    def __init__(
        self,
        medium: RadioMedium,
        index: int,
        name: str,
        *,
        tx_power_dbm: float,
        sensitivity_dbm: float,
        cca_threshold_dbm: float,
        noise_floor_dbm: float | None = None,
        energy: RadioEnergy | None = None,
    ) -> None:
        # Compiled, the attributes lie in memory in the order they are first set
        # here. What the medium's loops touch at every receiver of every frame
        # comes first, so that it shares two of the object's four cache lines
        # (of 100,000 radios few stay in the processor's caches;
        # docs/performance.md). `frames_off` first: a byte, it fits the padding
        # before the first 8-byte field.
        # Set by a MAC whose chip, while it sends, takes no frame but an ACK
        # (the AT86RF231's TX_ARET; net/mac/csma.py's extended mode).
        self.frames_off = False
        self.power_mw = 0.0  # from every signal on the air here, noise excluded
        self.incoming = 0  # how many signals that is
        self.energy = 0.0  # integral of power_mw over time (mW s), for CCA
        self.energy_t = 0.0
        self.locked: Reception | None = None
        self.state = LISTEN
        self.deaf_until = 0.0
        self.sensitivity_mw = phy.dbm_to_mw(sensitivity_dbm)
        self.power = energy or RadioEnergy(medium.sim.now)
        self.counters = RadioCounters()
        self.mac: FrameReceiver | None = None  # the MAC on top
        # The neighbour list (neighbours.py) as three sequences in the same
        # order, the receivers' index order (routing/tree.py's search relies on
        # it): the receivers (what the medium's loops walk), the mean power at
        # each (mW; doubles in one buffer, 8 bytes an entry where a list took 32)
        # and the pair's id (link variation's state).
        self.receivers: tuple[Radio, ...] = ()
        self.mean_mws: vec[float] = vec[float]()
        self.pairs: vec[i64] = vec[i64]()
        self.medium = medium
        self.index = index
        self.name = name
        self.address: bytes | None = None
        # Boxed (a fixed-length tuple would lie in the object, 24 bytes more):
        # read only when the network is built.
        self.position: tuple[float, ...] = (0.0, 0.0, 0.0)
        self.tx_power_dbm = tx_power_dbm
        noise = phy.noise_floor_dbm(sensitivity_dbm) if noise_floor_dbm is None else noise_floor_dbm
        self.noise_mw = phy.dbm_to_mw(noise)
        self.cca_threshold_mw = phy.dbm_to_mw(cca_threshold_dbm)
        # (interferer, power in mW here while it bursts), filled by WifiInterferer.start
        self.interferers: list[tuple[Any, float]] = []
        # Its frames as radios on other channels hear them (interferer.py), if any do.
        self.leak: Any = None

    @property
    def neighbours(self) -> list[tuple[Radio, float, int]]:
        """(receiver, mean received power in mW, pair id), as neighbours.py found them."""
        return list(zip(self.receivers, self.mean_mws, self.pairs))

    @neighbours.setter
    def neighbours(self, neighbours: list[tuple[Radio, float, int]]) -> None:
        neighbours = sorted(neighbours, key=lambda entry: entry[0].index)
        self.receivers = tuple(rcv for rcv, _mean_mw, _pair in neighbours)
        self.mean_mws = vec[float]([mean_mw for _rcv, mean_mw, _pair in neighbours])
        self.pairs = vec[i64]([pair for _rcv, _mean_mw, pair in neighbours])

    # ------------------------------------------------------------ state

    def set_state(self, state: int, now: float) -> None:
        if state != self.state:
            self.power.change(self.state, state, now)
            self.state = state

    # ------------------------------------------------------------ signals arriving

    def _integrate(self, now: float) -> None:
        self.energy += self.power_mw * (now - self.energy_t)
        self.energy_t = now

    def _close_segment(self, rec: Reception, now: float) -> None:
        """The SINR is about to change: account for the PSDU bits at the old one."""
        start = rec.seg_start if rec.seg_start > rec.psdu_start else rec.psdu_start
        if now > start:
            other = self.noise_mw + self.power_mw - rec.mw
            if self.interferers:
                rec.log_success += self._log_success_with_bursts(rec, start, now, other)
            else:
                sinr = rec.mw / other
                rec.log_success += (now - start) * phy.RATE_BPS * phy.log_success_per_bit(sinr)
        rec.seg_start = now

    def _log_success_with_bursts(
        self, rec: Reception, start: float, now: float, other: float
    ) -> float:
        """ln P(the PSDU bits in [start, now] survive), with the SINR changing wherever
        an interferer's burst began or ended; `other` is noise plus frames."""
        changes: list[tuple[float, float]] = []
        for interferer, mw in self.interferers:
            for a, b in interferer.overlaps(start, now):
                changes.append((a, mw))
                changes.append((b, -mw))
        if changes:
            rec.interfered = True
            changes.sort()
        log_success = 0.0
        t, extra = start, 0.0
        for when, delta in changes:
            if when > t:
                log_success += (when - t) * phy.log_success_per_bit(rec.mw / (other + extra))
                t = when
            extra += delta
            if extra < _POWER_RESIDUE_MW:
                extra = 0.0
        log_success += (now - t) * phy.log_success_per_bit(rec.mw / (other + extra))
        return log_success * phy.RATE_BPS

    # ------------------------------------------------------------ what the MAC asks

    def cca_start(self, now: float) -> float:
        """Begin a CCA: the energy so far, to compare with at its end."""
        self._integrate(now)
        return self.energy

    def cca_clear(self, energy_at_start: float, start: float, now: float) -> bool:
        """CCA mode 1 over [start, now]: clear unless the average energy (noise
        included) reached the threshold or a frame is being received."""
        if self.locked is not None or self.state == TX:
            return False
        self._integrate(now)
        average = (self.energy - energy_at_start) / (now - start) if now > start else self.power_mw
        for interferer, mw in self.interferers:
            if now > start:
                on_air = sum(b - a for a, b in interferer.overlaps(start, now))
                average += mw * on_air / (now - start)
            elif interferer.on_air(now):
                average += mw
        return average + self.noise_mw < self.cca_threshold_mw

    def prepare_tx(self, now: float) -> None:
        """Turn around to transmit: deaf from now; a reception in progress is lost."""
        rec = self.locked
        if rec is not None:
            self.locked = None
            self.counters.aborted += 1
        self.set_state(LISTEN, now)  # the turnaround draws the receiver's current
        self.deaf_until = now + phy.TURNAROUND_S


# The medium's one event of its own (`on_event`): a transmission's end.
_END: Final = 0


class RadioMedium(EventHandler):
    """The radios on one 802.15.4 channel, and the signals between them."""

    def __init__(
        self,
        sim: Simulator,
        channel: int,
        rng: random.Random,
        observers: Observers,
        variation: LinkVariation | None = None,
    ) -> None:
        self.sim = sim
        self.channel = channel
        self.frequency_mhz = phy.channel_center_mhz(channel)
        self.rng = rng  # reception draws
        # rng.random()'s numbers drawn by compiled code (sim/twister.py): a call
        # through Python's protocol and a float object less per frame decided.
        self._draws = twister_of(rng)
        self.observers = observers
        self.variation: LinkVariation = variation or NoVariation()
        self.radios: list[Radio] = []
        self.by_address: dict[bytes, Radio] = {}
        self.name = f"802.15.4 channel {channel}"
        self.on_air = 0  # transmissions in progress

    def add_radio(self, radio: Radio) -> None:
        self.radios.append(radio)

    def register_address(self, radio: Radio, address: bytes) -> None:
        self.by_address[address] = radio

    def transmit(
        self,
        radio: Radio,
        pkt: Packet,
        dst: object,
        done: Callable[[Transmission, bool], None] | None = None,
    ) -> Transmission:
        """Put `pkt` (an 802.15.4 frame) on the air now; `done(tx, delivered)` at its
        end, or without `done` the sender's MAC's `transmission_done(tx, delivered)`
        (a call through its class's table, not through Python's call protocol)."""
        sim = self.sim
        now = sim.now
        end = now + (len(pkt.data) + phy.PHY_HEADER_BYTES) * phy.BYTE_S  # phy.frame_airtime_s
        receivers = radio.receivers
        mws = self.variation.powers(radio.mean_mws, radio.pairs, now)
        tx = Transmission(radio, pkt, dst, now, end, receivers, mws)
        if radio.locked is not None:
            # A frame that began at the very instant the sender's turnaround ended
            # (its deafness is over then, its transmitter not yet on): the
            # transmitter takes the radio, and that frame is lost to it, as a
            # reception is when a MAC turns around (prepare_tx).
            radio.locked = None
            radio.counters.aborted += 1
        radio.set_state(TX, now)
        if radio.leak is not None:
            radio.leak.record(now, end)
        pkt.medium = self
        pkt.t_sent = now
        # Every receiver that locks onto the frame without being its addressee
        # shares one undecided Reception: only its `tx` is ever read (its MAC
        # would drop the frame by address, so its bits are never decided).
        overheard = None
        is_ack = pkt.kind == ACK
        # What each receiver does as the signal starts, written out: this loop and
        # the one in _end run for every receiver within reach of every frame, the
        # most frequent code of a radio network. The receiver integrates the power
        # it had until now (for CCA), and locks onto the frame if it reaches its
        # sensitivity while it listens; a reception in progress gets a new stretch.
        for k in range(len(receivers)):
            rcv, mw = receivers[k], mws[k]
            power = rcv.power_mw
            if power:  # (nothing on the air here since energy_t adds nothing)
                rcv.energy += power * (now - rcv.energy_t)
            rcv.energy_t = now
            rec = rcv.locked
            if rec is not None:
                if rec.decided:
                    rcv._close_segment(rec, now)
                rec.interfered = True
                if dst is rcv:
                    rcv.counters.missed_busy += 1
            elif (
                mw >= rcv.sensitivity_mw
                and rcv.state == LISTEN
                and now >= rcv.deaf_until
                and (is_ack or not rcv.frames_off)
            ):
                if dst is None or dst is rcv:
                    rcv.locked = Reception(tx, mw, now, True)
                else:
                    if overheard is None:
                        overheard = Reception(tx, mw, now, False)
                    rcv.locked = overheard
                meter = rcv.power  # meter.change(LISTEN, RX, now), written out
                meter.listen_s += now - meter.since
                meter.since = now
                rcv.state = meter.state = RX
            elif dst is rcv:
                rcv.counters.missed_busy += 1
            rcv.power_mw = power + mw
            rcv.incoming += 1
        self.on_air += 1
        self.observers.transmitted(pkt)
        sim.post_event(end, self, _END, tx, done)
        return tx

    def on_event(self, kind: i64, args: tuple[Any, ...]) -> None:
        # (_END, the only kind.)
        self._end(args[0], args[1])

    def _end(self, tx: Transmission, done: Callable[[Transmission, bool], None] | None) -> None:
        now = self.sim.now
        sender = tx.radio
        sender.set_state(LISTEN, now)
        sender.deaf_until = now + phy.TURNAROUND_S  # TX -> RX
        self.on_air -= 1
        decoded: list[Radio] = []
        dst = tx.dst
        dst_locked = False
        draws = self._draws
        residue = _POWER_RESIDUE_MW
        # What each receiver does as the signal ends (see transmit): it integrates
        # its power, closes the stretch of a reception in progress, takes the
        # frame's power off, and, if it was locked onto this frame, decides it.
        receivers, mws = tx.receivers, tx.mws
        for k in range(len(receivers)):
            rcv, mw = receivers[k], mws[k]
            power = rcv.power_mw
            rcv.energy += power * (now - rcv.energy_t)
            rcv.energy_t = now
            rec = rcv.locked
            if rec is not None:
                if rec.decided:
                    rcv._close_segment(rec, now)
                if rec.tx is tx:
                    rcv.locked = None
                    meter = rcv.power  # meter.change(RX, LISTEN, now), written out
                    meter.rx_s += now - meter.since
                    meter.since = now
                    rcv.state = meter.state = LISTEN
                else:
                    rec = None
            incoming = rcv.incoming - 1
            rcv.incoming = incoming
            power = power - mw if incoming else 0.0
            rcv.power_mw = power if power > residue else 0.0
            if rec is None:
                continue
            if not rec.decided:  # a unicast for another node: nothing to decide
                continue
            if rcv is dst:
                dst_locked = True
            log_success = rec.log_success
            if log_success == 0.0 or draws.random() < math.exp(log_success):
                rcv.counters.received += 1
                decoded.append(rcv)
            else:
                rcv.counters.corrupted += 1
                if rec.interfered:
                    rcv.counters.collisions += 1
        pkt = tx.pkt
        pkt.t_done = now
        observers = self.observers
        if dst is None:
            pkt.fate = BROADCAST
            for rcv in decoded:
                observers.received(pkt, rcv.name)
        elif dst in decoded:
            pkt.fate = DELIVERED
            observers.received(pkt, dst.name)
        else:
            pkt.fate = CORRUPTED if dst_locked else MISSED
        observers.finished(pkt)
        # The MACs hear of it last, when every radio is in its new state.
        if done is None:
            sender_mac = sender.mac
            assert sender_mac is not None, f"radio {sender.name} sent a frame with no MAC"
            sender_mac.transmission_done(tx, pkt.fate == DELIVERED)
        else:
            done(tx, pkt.fate == DELIVERED)
        for rcv in decoded:
            if dst is None or rcv is dst:
                receiver = rcv.mac
                assert receiver is not None, f"radio {rcv.name} decoded a frame with no MAC"
                receiver.frame_received(pkt, sender)
