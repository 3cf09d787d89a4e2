"""RIOT's `socket_zep` radios on our 802.15.4 medium: a ZEP v2 codec and dispatcher.

RIOT OS firmware built for its `native`/`native64` boards with the
`socket_zep` module has an 802.15.4 radio that is a UDP socket: every frame it
transmits goes as one ZEP datagram to a dispatcher (RIOT's
dist/tools/zep_dispatch forwards it to the other processes), and every ZEP
datagram it receives is a frame on its air. `ZepDispatcher` is a dispatcher
whose air is ours: each RIOT process plays one node of the scenario, its
frames go onto the `RadioMedium` from that node's `Radio` (path loss, SINR,
collisions, interference as for every simulated frame), and the frames the
medium lets that radio decode go back to the process as ZEP.

    zep = ZepDispatcher([net.radios["n3"], net.radios["n7"]])   # the nodes RIOT plays
    sock = ZepSocket(zep, "::1", ZEP_PORT)                       # RIOT: -z [::1]:17754
    driver.add_reader(sock.fileno(), lambda: sock.on_readable(driver.now()))

The core is sans-I/O: `datagram_received(data, addr, now)` takes what a
socket read, and the dispatcher hands what it sends to its `send(data, addr)`
callback. `ZepSocket` is the thin socket around it.

ZEP v2 on the wire (Wireshark, epan/dissectors/packet-zep.c, its header
comment and dissector; RIOT, sys/include/net/zep.h, `zep_v2_data_hdr_t` and
`zep_v2_ack_hdr_t`). Multi-byte fields are big endian (network order); the
default UDP port is 17754 (both sources)::

    data (type 1), a 32-byte header and the PSDU:
      0  2  preamble        "EX"
      2  1  version         2
      3  1  type            1 = data
      4  1  channel         the 802.15.4 channel (11-26)
      5  2  device id       who captured or sent the frame
      7  1  CRC/LQI mode    1: the PSDU ends with the FCS ("CRC");
                            0: the last two bytes are CC24xx status bytes ("LQI")
      8  1  LQI             link quality (0-255)
      9  8  timestamp       NTP: seconds since 1900-01-01 (32 bits), fraction (32 bits)
     17  4  sequence        ZEP sequence number
     21 10  reserved        zero
     31  1  length          PSDU bytes (at most 127, aMaxPHYPacketSize)
     32  -  PSDU            the 802.15.4 frame, `length` bytes

    ack (type 2), 8 bytes: "EX", version 2, type 2, sequence (4 bytes)

ZEP v1 (a 16-byte header, no type, timestamp or sequence) is older and not
accepted here: RIOT sends and reads only v2. `decode_zep` refuses what is
not one well-formed v2 data or ack datagram (`ZepDecodeError`): another
preamble or version, another type, a length field that disagrees with the
datagram's size, a PSDU over 127 bytes.

What RIOT does (RIOT-OS/RIOT: cpu/native/socket_zep/socket_zep.c,
cpu/native/include/socket_zep.h, cpu/native/Makefile.dep,
sys/net/link_layer/ieee802154/submac.c,
drivers/netdev_ieee802154_submac/netdev_ieee802154_submac.c,
dist/tools/zep_dispatch/):

- FCS: the PSDU in RIOT's ZEP includes the 2-byte FCS. `_write` appends a
  CRC-16/KERMIT of the frame (least significant byte first) and sets the
  length to frame + 2, CRC/LQI mode 1; `_read` takes length - 2 bytes as the
  frame and drops it if the CRC does not match; it reads no LQI-mode status
  bytes, whatever the mode byte says. That is the FCS our MACs put on their
  frames (net/ieee802154.py), so a PSDU crosses unchanged: RIOT's frames
  go on the air exactly as they came, FCS included, and our frames go to
  RIOT exactly as the medium carried them. The dispatcher checks the FCS of
  what RIOT sends (a bad one is counted and dropped, as RIOT's own receivers
  would), and sends in mode 1.
- What RIOT checks on receipt: preamble, version 2, type 1 (anything else,
  a ZEP ack included, is dropped), a datagram at least a header long, the
  channel equal to its own, then its address filter (PAN ID, its short or
  extended address or broadcast; ACK frames pass). It ignores the device id,
  timestamp and sequence, and maps the LQI byte to an RSSI. The dispatcher
  sends on the medium's channel (a process on another channel would drop
  everything: its frames on another channel are counted `wrong_channel` and
  dropped); LQI is 255, what RIOT's own dispatcher passes on in its flat
  mode (the medium decides reception; it has no per-frame LQI to give).
- Hello and registration: with the `socket_zep_hello` module (not on by
  default; RIOT's gnrc border router example turns it on), socket_zep sends
  one datagram when its extended address is set: a v2 data header of type
  255, the reserved field "HELLO" and zeros, length 8, then its 8-byte
  EUI-64 (in the order RIOT writes it, which is the order of our addresses).
  RIOT's zep_dispatch registers a client on its first datagram of any kind
  (flat mode) or by the source address of its frames and hellos (topology
  mode). Here a sender becomes a node on its first valid datagram (a hello,
  a data frame or a ZEP ack): it takes the next free node of the list the
  dispatcher was given, in order of arrival; one beyond the list is refused
  (counted, logged once per sender). A hello naming the EUI-64 of a
  registered node from a new UDP address (that RIOT process restarted) takes
  the node over. Hellos are not `decode_zep`'s: type 255 is RIOT's, not the
  spec's; `decode_datagram` reads them too.
- Its addresses: the medium delivers a unicast only to the radio that
  `medium.by_address` names for the destination, so the dispatcher
  registers, for the node's radio, the EUI-64 of its hello and the source
  address of every frame it sends (not one that another radio has: that is
  counted and logged). Simulated nodes reach a RIOT node from its first
  frame or hello on. Start RIOT with `--eui64` set to the node's own address
  (`radio.address`) and the rest of the network knows it from the start.
- CCA: none. socket_zep declares IEEE802154_CAP_AUTO_CSMA, so the SubMAC
  leaves channel access to the "radio" and does no backoff; the driver then
  does none either (`_request_transmit` waits the frame's airtime and
  writes the datagram; a CCA request is -ENOTSUP). A RIOT node is thus a
  sender that never listens before talking: the dispatcher puts its frame on
  the air when it arrives, whatever is on the air (collisions follow). The
  radio is half-duplex: a reception in progress is lost (`aborted`), and a
  frame that arrives while the node's previous one is still on the air
  waits for it (a queue of `queue_frames`; beyond, counted and dropped).
- ACKs: RIOT acknowledges in software and expects acknowledgments.
  With socket_zep and netdev, cpu/native/Makefile.dep adds
  `netdev_ieee802154_submac_soft_ack`: RIOT itself sends the 3-byte ACK
  frame (+ FCS) as an ordinary ZEP data datagram for every data frame with
  the Ack Request bit that passes its filter. socket_zep has no
  IEEE802154_CAP_AUTO_ACK, FRAME_RETRANS or IRQ_ACK_TIMEOUT, so after a
  frame with Ack Request the SubMAC waits ACK_TIMEOUT_US (864 us, 54
  symbols) for an ACK frame (any sequence number), and without one sends
  the frame again, up to CONFIG_IEEE802154_DEFAULT_MAX_FRAME_RETRANS (4)
  times. So the dispatcher plays no transceiver's automatic ACK for frames
  RIOT receives (that would be a second ACK on the air): RIOT's ACKs go onto
  the medium, addressed to the radio whose frame they acknowledge (the last
  frame with Ack Request the node was given, if the sequence numbers match;
  else to nobody), and our MACs' ACKs come to RIOT like any frame.
  The catch is time, in a real-time run. socket_zep sends a frame's
  datagram when its airtime is over and starts the 864 us wait then; our
  medium puts the frame on the air when the datagram arrives, for its
  airtime again, and the addressee's ACK follows after the turnaround (192
  us) and its own 352 us: at least 896 us for the shortest frame, 2.3 ms
  for a 50-byte one. RIOT's wait is always over before; it sends each
  unicast frame 5 times and reports it unacknowledged. The other way is
  tight but possible: a simulated sender is deaf for the turnaround (192
  us) after its frame and waits 864 us from its end, so RIOT's ACK must go
  on our air 192 to 512 us after our datagram; RIOT's SubMAC waits SIFS
  (192 us) before its ACK, which leaves 320 us for RIOT's and the real-time
  driver's latency, which a real-time run does not always leave (RIOT's ACK
  came 640 us after the frame's end, median, in a check with RIOT 2026.07;
  a simulated sender then sent every frame up to four times).
  `early_ack=True` makes the dispatcher the transceiver both ways, as the
  AT86RF2xx of the study's nodes acknowledges in hardware: it sends RIOT an
  ACK for each of its unicast frames with Ack Request to a radio on the
  medium at the time a real addressee's would come (turnaround and ACK
  airtime, 544 us, after the datagram) and forwards no ACK frame from the
  medium to that node; it puts the ACK of each frame with Ack Request that
  the medium delivers to that node on the air itself, a turnaround after
  the frame, and drops RIOT's own ACK frames; and a frame RIOT queued behind
  one that waits for its ACK goes on the air after that ACK's time, not over
  it. RIOT then sends each frame once and believes it acknowledged; a frame
  the medium loses is lost (no MAC retransmission, where the real chip
  would retry). `iotbench emulate` uses it by default; False is the plain
  pass-through.
- What else a ZEP radio cannot carry: RSSI and LQI from our medium; the
  frames a radio overhears (the medium hands a radio only frames for it and
  broadcasts, so RIOT in promiscuous mode sees no more); the medium's
  per-layer byte split (the dispatcher does not parse 6LoWPAN: a RIOT
  frame's MAC header and FCS are its link bytes, the rest counts as
  payload, and its data frames are all of kind DATA, RPL's included).
  Frames our 802.15.4 codec does not parse (MAC commands, beacons, secured
  frames, frames without PAN ID compression) go on the air addressed to
  nobody: they take airtime and collide, and no simulated MAC is handed
  bytes it cannot read.

Timestamps are the virtual clock's: ZEP time = `epoch_unix_s` + sim.now, in
NTP format. RIOT ignores them; a capture (Wireshark reads ZEP on UDP 17754)
shows virtual time from the epoch the caller chose.

The node a RIOT process plays: `take_over(radio, port)` makes the ZEP side
the radio's MAC (`radio.mac`, which the medium hands decoded frames to) and
silences the simulated node's own MAC, which keeps running but on a radio of
its own on a medium of its own with no neighbours and no observers: its
frames reach no one and no metric; its upper layers (6LoWPAN, RPL, the
workload's applications) run on, deaf and unheard. The simulated MAC's
address no longer names the radio (RIOT's addresses do, as it uses them).
Choose for RIOT nodes scenario nodes the workload does not use, or read their
application metrics knowing this. The dispatcher does it to every radio it
is given.
"""

from __future__ import annotations

import logging
import math
import random
import socket
import struct
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from iotbench.metrics.observers import Observers
from iotbench.net import ieee802154 as mac
from iotbench.net.mac.csma import NOBODY, CsmaMac
from iotbench.net.packet import ACK, CONTROL, DATA, Packet
from iotbench.net.radio import phy
from iotbench.net.radio.medium import FrameReceiver, Radio, RadioMedium, Transmission
from iotbench.proto.errors import DecodeError

_log = logging.getLogger("iotbench.emulate.zep")

ZEP_PORT: Final = 17754
PREAMBLE: Final = b"EX"
VERSION: Final = 2
TYPE_DATA: Final = 1
TYPE_ACK: Final = 2
TYPE_HELLO: Final = 255  # RIOT's socket_zep_hello, not the spec's
HEADER_BYTES: Final = 32
ACK_BYTES: Final = 8
MAX_PSDU_BYTES: Final = 127
NTP_UNIX_OFFSET_S: Final = 2_208_988_800  # 1900-01-01 to 1970-01-01
LQI_MAX: Final = 255
HELLO_RESERVED: Final = b"HELLO".ljust(10, b"\0")

# preamble, version, type, channel, device, CRC/LQI mode, LQI, NTP time, sequence,
# reserved, length
_DATA: Final = struct.Struct(">2sBBBHBBQI10sB")
_ACK: Final = struct.Struct(">2sBBI")
assert _DATA.size == HEADER_BYTES and _ACK.size == ACK_BYTES

# What a real addressee's ACK takes after the frame: the turnaround and its airtime.
_EARLY_ACK_DELAY_S: Final = phy.TURNAROUND_S + phy.frame_airtime_s(mac.ACK_FRAME_BYTES)
# After a frame that waits for an ACK: the ACK's turnaround and airtime, and the
# sender's own turnaround back to transmitting.
_ACK_GAP_S: Final = _EARLY_ACK_DELAY_S + phy.TURNAROUND_S
_AR_LOW_BYTE: Final = mac.ACK_REQUEST & 0xFF  # the Ack Request bit is in the first byte
# Short addresses that name no node: broadcast, and "has no short address".
_NOT_ADDRESSES: Final = frozenset({b"\xff\xff", b"\xff\xfe"})
# How many refused senders are remembered, to log each once (a flood does not grow it).
_REFUSED_LOGGED_MAX: Final = 1024

Address = tuple[Any, ...]  # a socket address: (host, port) or (host, port, flow, scope)


class ZepDecodeError(DecodeError):
    """Bytes that are not a well-formed ZEP v2 datagram."""


@dataclass(frozen=True, slots=True)
class ZepFrame:
    """A ZEP v2 data datagram: one 802.15.4 frame and what the capture says of it."""

    channel: int
    device: int
    crc: bool  # CRC/LQI mode: True (1) when the PSDU ends with the FCS
    lqi: int
    ntp_time: int  # NTP format: seconds since 1900 << 32 | fraction of a second
    seq: int
    psdu: bytes


@dataclass(frozen=True, slots=True)
class ZepAck:
    """A ZEP v2 ack datagram (type 2): a sequence number, nothing else."""

    seq: int


@dataclass(frozen=True, slots=True)
class ZepHello:
    """RIOT socket_zep's hello (type 255): the sender's 802.15.4 address."""

    address: bytes


def ntp_time(unix_s: float) -> int:
    """A Unix time as a 64-bit NTP timestamp; the seconds wrap at 2^32 as NTP's do
    (era 1 begins in February 2036)."""
    seconds = math.floor(unix_s)
    fraction = min(round((unix_s - seconds) * 2**32), 2**32 - 1)
    return (((seconds + NTP_UNIX_OFFSET_S) % 2**32) << 32) | fraction


def unix_time(ntp: int) -> float:
    """A 64-bit NTP timestamp as a Unix time, taking it to be of era 0 (1900-2036)."""
    return (ntp >> 32) - NTP_UNIX_OFFSET_S + (ntp & 0xFFFFFFFF) / 2**32


def _check(name: str, value: int, bits: int) -> None:
    if not 0 <= value < 1 << bits:
        raise ValueError(f"ZEP {name} {value} does not fit in {bits} bits")


def encode_zep(message: ZepFrame | ZepAck) -> bytes:
    """The datagram of a data or ack message. ValueError for a field out of its range
    or a PSDU over 127 bytes."""
    if isinstance(message, ZepAck):
        _check("sequence number", message.seq, 32)
        return _ACK.pack(PREAMBLE, VERSION, TYPE_ACK, message.seq)
    if len(message.psdu) > MAX_PSDU_BYTES:
        raise ValueError(f"ZEP PSDU of {len(message.psdu)} bytes exceeds {MAX_PSDU_BYTES}")
    _check("channel", message.channel, 8)
    _check("device id", message.device, 16)
    _check("LQI", message.lqi, 8)
    _check("timestamp", message.ntp_time, 64)
    _check("sequence number", message.seq, 32)
    header = _DATA.pack(
        PREAMBLE,
        VERSION,
        TYPE_DATA,
        message.channel,
        message.device,
        1 if message.crc else 0,
        message.lqi,
        message.ntp_time,
        message.seq,
        bytes(10),
        len(message.psdu),
    )
    return header + message.psdu


def encode_hello(address: bytes) -> bytes:
    """RIOT socket_zep's hello for a node of this (2- or 8-byte) address."""
    if len(address) not in (2, 8):
        raise ValueError(f"an 802.15.4 address has 2 or 8 bytes, not {len(address)}")
    header = _DATA.pack(
        PREAMBLE, VERSION, TYPE_HELLO, 0, 0, 0, 0, 0, 0, HELLO_RESERVED, len(address)
    )
    return header + address


def decode_zep(data: bytes) -> ZepFrame | ZepAck:
    """Parse one ZEP v2 data or ack datagram (ZepDecodeError for anything else).

    The reserved bytes are not checked (Wireshark does not either), so
    encode_zep of the result differs from `data` at most there.
    """
    message = _decode(data, hello=False)
    assert not isinstance(message, ZepHello)
    return message


def decode_datagram(data: bytes) -> ZepFrame | ZepAck | ZepHello:
    """`decode_zep`, and RIOT socket_zep's hello (type 255: a data header whose
    length, 2 or 8, is that of the address after it)."""
    return _decode(data, hello=True)


def _decode(data: bytes, hello: bool) -> ZepFrame | ZepAck | ZepHello:
    if len(data) < 4:
        raise ZepDecodeError(f"ZEP datagram of {len(data)} bytes is too short")
    if data[:2] != PREAMBLE:
        raise ZepDecodeError(f"ZEP preamble {data[:2]!r} is not b'EX'")
    if data[2] != VERSION:
        raise ZepDecodeError(f"ZEP version {data[2]} is not 2")
    kind = data[3]
    if kind == TYPE_ACK:
        if len(data) != ACK_BYTES:
            raise ZepDecodeError(f"ZEP ack of {len(data)} bytes, not {ACK_BYTES}")
        return ZepAck(_ACK.unpack(data)[3])
    if kind != TYPE_DATA and not (hello and kind == TYPE_HELLO):
        raise ZepDecodeError(f"ZEP type {kind} is not data (1) or ack (2)")
    if len(data) < HEADER_BYTES:
        raise ZepDecodeError(f"ZEP data datagram of {len(data)} bytes is shorter than its header")
    (_, _, _, channel, device, mode, lqi, ntp, seq, _, length) = _DATA.unpack_from(data)
    if length > MAX_PSDU_BYTES:
        raise ZepDecodeError(f"ZEP length {length} exceeds {MAX_PSDU_BYTES}")
    if length != len(data) - HEADER_BYTES:
        raise ZepDecodeError(
            f"ZEP length {length} disagrees with the {len(data) - HEADER_BYTES} bytes after "
            "the header"
        )
    if kind == TYPE_HELLO:
        if length not in (2, 8):
            raise ZepDecodeError(f"ZEP hello with a {length}-byte address")
        return ZepHello(data[HEADER_BYTES:])
    return ZepFrame(channel, device, mode != 0, lqi, ntp, seq, data[HEADER_BYTES:])


def _fcs_ok(psdu: bytes) -> bool:
    """Whether the PSDU is a frame control and sequence number at least, with its FCS."""
    if len(psdu) < 3 + mac.FCS_BYTES:
        return False
    return int.from_bytes(psdu[-2:], "little") == mac.crc16(psdu[:-2])


# ------------------------------------------------------------------ the nodes


def take_over(radio: Radio, port: FrameReceiver) -> None:
    """Make `port` the MAC of `radio` (the medium hands it the frames the radio
    decodes) and silence the MAC that had it.

    A simulated MAC (CsmaMac, ContikiCsmaMac) goes on running, with its upper
    layers, but on a radio of its own on a medium of its own (no neighbours,
    no observers): what it sends reaches no one and counts in no metric, and
    it hears nothing. The addresses `medium.by_address` gave to `radio` are
    taken off, so nobody reaches it by the simulated MAC's address.
    """
    old = radio.mac
    if old is port:
        return
    if isinstance(old, CsmaMac):
        medium = radio.medium
        void = RadioMedium(medium.sim, medium.channel, random.Random(0), Observers())
        ghost = Radio(
            void,
            radio.index,
            radio.name,
            tx_power_dbm=radio.tx_power_dbm,
            sensitivity_dbm=phy.mw_to_dbm(radio.sensitivity_mw),
            cca_threshold_dbm=phy.mw_to_dbm(radio.cca_threshold_mw),
        )
        void.add_radio(ghost)
        ghost.mac = old
        old.radio = ghost
        old.medium = void
    elif old is not None:
        raise ValueError(f"radio {radio.name}: no way to silence its MAC {type(old).__name__}")
    for address in [a for a, r in radio.medium.by_address.items() if r is radio]:
        del radio.medium.by_address[address]
    radio.mac = port


@dataclass
class ZepStats:
    """What the dispatcher did with the datagrams it got and the frames it sent."""

    datagrams: int = 0  # every datagram received
    registered: int = 0  # senders that became nodes
    rebound: int = 0  # nodes a restarted process took back by its hello
    refused: int = 0  # datagrams from senders beyond the list of nodes
    invalid_unregistered: int = 0  # datagrams that were not ZEP, from unknown senders
    malformed: int = 0  # datagrams that were not ZEP, from nodes
    hellos: int = 0
    zep_acks: int = 0  # ZEP ack datagrams (type 2): nothing to put on the air
    wrong_channel: int = 0  # frames on another channel than the medium's
    bad_psdu: int = 0  # frames too short for 802.15.4, or with a bad FCS
    frames_in: int = 0  # frames from nodes put on the air
    opaque_frames: int = 0  # of those, frames our codec does not parse (to nobody)
    unmatched_acks: int = 0  # of those, ACK frames that acknowledge nothing known
    queue_drops: int = 0  # frames from a node whose queue was full
    address_conflicts: int = 0  # addresses a node used that another radio has
    frames_out: int = 0  # frames the medium delivered that went to a node
    unregistered_drops: int = 0  # frames the medium delivered to a radio no process has yet
    early_acks: int = 0  # ACKs sent to nodes with `early_ack`
    auto_acks: int = 0  # with `early_ack`: ACKs put on the air for frames to nodes
    auto_acks_missed: int = 0  # of frames to nodes, not acknowledged: the node was sending
    riot_acks_dropped: int = 0  # with `early_ack`: RIOT's own ACK frames (sent already)
    acks_withheld: int = 0  # medium ACKs not forwarded with `early_ack`


class ZepNode(FrameReceiver):
    """One node a RIOT process plays: its radio, and the process once registered."""

    def __init__(self, dispatcher: ZepDispatcher, name: str, radio: Radio) -> None:
        self.dispatcher = dispatcher
        self.name = name
        self.radio = radio
        self.addr: Address | None = None  # the process's UDP address, once registered
        self.eui64: bytes | None = None  # from its hello
        self.seq = 0  # the next ZEP sequence number to it
        self.frames_in = 0  # frames it sent that went on the air
        self.frames_out = 0  # frames sent to it
        self.queue: deque[tuple[Packet, object]] = deque()
        self.on_air = False
        # The last frame with Ack Request it was given: its sequence number and sender.
        self.ack_to: tuple[int, Radio] | None = None
        self.warned_channel = False

    def frame_received(self, pkt: Packet, sender: Radio) -> None:
        """The medium's call: a frame for this node's radio (or broadcast) arrived intact."""
        self.dispatcher._deliver(self, pkt, sender)


class ZepDispatcher:
    """Joins RIOT socket_zep processes to a radio medium, one per radio in `radios`.

    `radios` are the nodes' radios in the order processes take them (each
    radio's name is its node's name); all on one medium. `send(data, addr)`
    sends a datagram (ZepSocket sets it). `epoch_unix_s` is the Unix time of
    virtual time 0, for ZEP timestamps. `early_ack`: see the module's
    docstring. `queue_frames`: how many frames of a node may wait while its
    previous one is on the air.
    """

    def __init__(
        self,
        radios: Sequence[Radio],
        *,
        send: Callable[[bytes, Address], None] | None = None,
        epoch_unix_s: float = 0.0,
        early_ack: bool = False,
        queue_frames: int = 16,
    ) -> None:
        if not radios:
            raise ValueError("a ZEP dispatcher needs at least one radio")
        media = {id(r.medium) for r in radios}
        if len(media) != 1:
            raise ValueError("the radios of a ZEP dispatcher must share one medium")
        if len({id(r) for r in radios}) != len(radios):
            raise ValueError("a radio appears twice among the ZEP nodes")
        self.medium: RadioMedium = radios[0].medium
        self.sim = self.medium.sim
        self.send = send or _unset
        self.epoch_unix_s = epoch_unix_s
        self.early_ack = early_ack
        self.queue_frames = queue_frames
        self.stats = ZepStats()
        self.nodes = [ZepNode(self, radio.name, radio) for radio in radios]
        self._by_addr: dict[Address, ZepNode] = {}
        self._refused_logged: set[Address] = set()
        self._conflicts_logged: set[bytes] = set()
        for node in self.nodes:
            take_over(node.radio, node)

    def node(self, name: str) -> ZepNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    # ------------------------------------------------------------ from the processes

    def datagram_received(self, data: bytes, addr: Address, now: float) -> None:
        """One datagram from `addr`, read at virtual time `now` (a frame goes on the
        air then, or at once if the simulation is already past it)."""
        stats = self.stats
        stats.datagrams += 1
        node = self._by_addr.get(addr)
        try:
            message = decode_datagram(data)
        except ZepDecodeError:
            if node is None:
                stats.invalid_unregistered += 1
            else:
                stats.malformed += 1
            return
        if node is None:
            found = self._register(addr, message)
            if found is None:
                return
            node = found
        if isinstance(message, ZepHello):
            stats.hellos += 1
            node.eui64 = message.address
            self._claim(node, message.address)
        elif isinstance(message, ZepAck):
            stats.zep_acks += 1
        else:
            self._frame_from(node, message, now)

    def _register(self, addr: Address, message: ZepFrame | ZepAck | ZepHello) -> ZepNode | None:
        stats = self.stats
        if isinstance(message, ZepHello):
            for node in self.nodes:
                if node.eui64 == message.address and node.addr is not None:
                    # The same firmware again from a new socket: a restarted process.
                    del self._by_addr[node.addr]
                    node.addr = addr
                    self._by_addr[addr] = node
                    stats.rebound += 1
                    _log.info("ZEP node %s: %s again, from %s", node.name, message.address, addr)
                    return node
        for node in self.nodes:
            if node.addr is None:
                node.addr = addr
                self._by_addr[addr] = node
                stats.registered += 1
                _log.info("ZEP node %s: %s", node.name, addr)
                return node
        stats.refused += 1
        if addr not in self._refused_logged and len(self._refused_logged) < _REFUSED_LOGGED_MAX:
            self._refused_logged.add(addr)
            _log.warning(
                "ZEP: refused %s: all %d nodes (%s) are taken",
                addr,
                len(self.nodes),
                ", ".join(n.name for n in self.nodes),
            )
        return None

    def _claim(self, node: ZepNode, address: bytes) -> None:
        """Let the medium deliver frames for `address` to the node's radio."""
        if address in _NOT_ADDRESSES:
            return
        by_address = self.medium.by_address
        owner = by_address.get(address)
        if owner is None:
            self.medium.register_address(node.radio, address)
        elif owner is not node.radio:
            self.stats.address_conflicts += 1
            if address not in self._conflicts_logged:
                self._conflicts_logged.add(address)
                _log.warning(
                    "ZEP node %s uses address %s, which is %s's",
                    node.name,
                    address.hex(":"),
                    owner.name,
                )

    def _frame_from(self, node: ZepNode, frame: ZepFrame, now: float) -> None:
        stats = self.stats
        if frame.channel != self.medium.channel:
            stats.wrong_channel += 1
            if not node.warned_channel:
                node.warned_channel = True
                _log.warning(
                    "ZEP node %s sends on channel %d; the medium is channel %d: dropped",
                    node.name,
                    frame.channel,
                    self.medium.channel,
                )
            return
        psdu = frame.psdu
        if not _fcs_ok(psdu):
            stats.bad_psdu += 1
            return
        try:
            parsed = mac.decode(psdu)
        except mac.MacDecodeError:
            parsed = None
        dst: object
        ack_now = False
        if isinstance(parsed, mac.Frame):
            self._claim(node, parsed.src)
            if parsed.dst == mac.BROADCAST:
                dst = None
            else:
                dst = self.medium.by_address.get(parsed.dst, NOBODY)
                ack_now = self.early_ack and parsed.ack_request and isinstance(dst, Radio)
            pkt = Packet(psdu, 0, 0, 0, len(psdu) - len(parsed.payload))
            pkt.kind = DATA
        elif isinstance(parsed, mac.Ack) and self.early_ack:
            # The dispatcher acknowledged on the air already, as the transceiver.
            stats.riot_acks_dropped += 1
            return
        elif isinstance(parsed, mac.Ack):
            acked = node.ack_to
            if acked is not None and acked[0] == parsed.seq:
                dst = acked[1]
                node.ack_to = None
            else:
                dst = NOBODY
                stats.unmatched_acks += 1
            pkt = Packet(psdu, 0, 0, 0, len(psdu))
            pkt.kind = ACK
        else:
            stats.opaque_frames += 1
            dst = NOBODY
            pkt = Packet(psdu, 0, 0, 0, len(psdu))
            pkt.kind = CONTROL
        pkt.src = node.name
        pkt.dst = dst.name if isinstance(dst, Radio) else None
        at = max(now, self.sim.now)
        if ack_now:
            assert isinstance(parsed, mac.Frame)
            self.sim.post(at + _EARLY_ACK_DELAY_S, self._send_early_ack, node, parsed.seq)
        self.sim.post(at, self._offer, node, pkt, dst)

    def _offer(self, node: ZepNode, pkt: Packet, dst: object) -> None:
        if not node.on_air:
            self._transmit(node, pkt, dst)
        elif len(node.queue) < self.queue_frames:
            node.queue.append((pkt, dst))
        else:
            self.stats.queue_drops += 1

    def _transmit(self, node: ZepNode, pkt: Packet, dst: object) -> None:
        node.on_air = True
        node.frames_in += 1
        self.stats.frames_in += 1
        radio = node.radio
        radio.prepare_tx(self.sim.now)  # half-duplex: a reception in progress is lost

        # A transceiver sends its next frame after the ACK of this one has had
        # its time on the air (RIOT, told of it early, may have queued one).
        data = pkt.data
        waits = pkt.kind == DATA and isinstance(dst, Radio) and bool(data[0] & _AR_LOW_BYTE)

        def done(tx: Transmission, delivered: bool) -> None:
            if waits and self.early_ack:
                self.sim.post(self.sim.now + _ACK_GAP_S, self._next, node)
            else:
                self._next(node)

        self.medium.transmit(radio, pkt, dst, done)

    def _next(self, node: ZepNode) -> None:
        node.on_air = False
        if node.queue:
            self._transmit(node, *node.queue.popleft())

    def _auto_ack(self, node: ZepNode, seq: int, to: Radio) -> None:
        if node.on_air:  # transmitting RIOT's frame: the radio cannot acknowledge
            self.stats.auto_acks_missed += 1
            return
        ack = mac.encode_ack(seq)
        pkt = Packet(ack, 0, 0, 0, len(ack))
        pkt.kind = ACK
        pkt.src, pkt.dst = node.name, to.name
        self.stats.auto_acks += 1
        node.on_air = True
        node.radio.prepare_tx(self.sim.now)
        self.medium.transmit(node.radio, pkt, to, lambda tx, delivered: self._next(node))

    def _send_early_ack(self, node: ZepNode, seq: int) -> None:
        self.stats.early_acks += 1
        self._send_frame(node, mac.encode_ack(seq))

    # ------------------------------------------------------------ to the processes

    def _deliver(self, node: ZepNode, pkt: Packet, sender: Radio) -> None:
        stats = self.stats
        if node.addr is None:
            stats.unregistered_drops += 1
            return
        data = pkt.data
        fc = data[0] | (data[1] << 8)
        if fc & 0x7 == mac.FRAME_TYPE_ACK:
            if self.early_ack:
                stats.acks_withheld += 1
                return
        elif fc & mac.ACK_REQUEST:
            node.ack_to = (data[2], sender)
            if self.early_ack:
                # As the transceiver's automatic ACK: on the air a turnaround after
                # the frame, in time for the sender's wait (RIOT's own would come
                # too late through the socket, and is dropped).
                self.sim.post(
                    self.sim.now + phy.TURNAROUND_S, self._auto_ack, node, data[2], sender
                )
        stats.frames_out += 1
        node.frames_out += 1
        self._send_frame(node, data)

    def _send_frame(self, node: ZepNode, psdu: bytes) -> None:
        addr = node.addr
        assert addr is not None  # registered
        datagram = encode_zep(
            ZepFrame(
                channel=self.medium.channel,
                device=node.radio.index & 0xFFFF,
                crc=True,
                lqi=LQI_MAX,
                ntp_time=ntp_time(self.epoch_unix_s + self.sim.now),
                seq=node.seq,
                psdu=psdu,
            )
        )
        node.seq = (node.seq + 1) & 0xFFFFFFFF
        self.send(datagram, addr)


def _unset(data: bytes, addr: Address) -> None:
    raise RuntimeError("ZepDispatcher.send is not set (a ZepSocket sets it)")


# ------------------------------------------------------------------ the socket


@dataclass
class SocketStats:
    received: int = 0
    sent: int = 0
    send_errors: int = 0
    receive_errors: int = 0
    last_error: str = field(default="")


class ZepSocket:
    """A non-blocking UDP socket at `host`:`port` (IPv6 or IPv4; port 0: any free
    one, see `address`) that feeds `dispatcher` and sends what it emits.

    An IPv6 socket also takes IPv4 senders where the system allows (a wildcard
    "::" bound with IPV6_V6ONLY off): RIOT may then use either.
    """

    def __init__(self, dispatcher: ZepDispatcher, host: str = "::1", port: int = ZEP_PORT) -> None:
        family, kind, proto, _, sockaddr = socket.getaddrinfo(
            host, port, type=socket.SOCK_DGRAM, proto=socket.IPPROTO_UDP
        )[0]
        self.sock = socket.socket(family, kind, proto)
        try:
            if family == socket.AF_INET6:
                try:
                    self.sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                except OSError:
                    pass  # an IPv6-only system: IPv6 senders only
            self.sock.setblocking(False)
            self.sock.bind(sockaddr)
        except BaseException:
            self.sock.close()
            raise
        self.dispatcher = dispatcher
        self.stats = SocketStats()
        dispatcher.send = self.send

    @property
    def address(self) -> Address:
        """The address the socket is bound to (with the port the system chose)."""
        return tuple(self.sock.getsockname())

    def fileno(self) -> int:
        return self.sock.fileno()

    def on_readable(self, now: float) -> int:
        """Read every datagram waiting into the dispatcher, at virtual time `now`;
        how many there were."""
        count = 0
        while True:
            try:
                data, addr = self.sock.recvfrom(4096)
            except (BlockingIOError, InterruptedError):
                return count
            except OSError as exc:  # an ICMP error reported on this socket, say
                self.stats.receive_errors += 1
                self.stats.last_error = str(exc)
                return count
            count += 1
            self.stats.received += 1
            self.dispatcher.datagram_received(data, tuple(addr), now)

    def send(self, data: bytes, addr: Address) -> None:
        """Send one datagram; a failure (a full buffer, a process gone) is counted."""
        try:
            self.sock.sendto(data, addr)
        except OSError as exc:
            self.stats.send_errors += 1
            self.stats.last_error = str(exc)
            return
        self.stats.sent += 1

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> ZepSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
