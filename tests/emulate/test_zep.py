"""ZEP v2 and the dispatcher that puts RIOT socket_zep radios on our medium: the codec
against hand-written datagrams, decoding arbitrary bytes, registration, frames
across the medium both ways (unicast with ACK, broadcast, out of range, collided),
the ACK modes, and the UDP socket against a peer on loopback."""

from __future__ import annotations

import logging
import select
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent.parent / "net" / "radio"))

from radio_harness import RadioNet  # noqa: E402

from iotbench.emulate.zep import (  # noqa: E402
    ZEP_PORT,
    Address,
    ZepAck,
    ZepDecodeError,
    ZepDispatcher,
    ZepFrame,
    ZepHello,
    ZepSocket,
    decode_datagram,
    decode_zep,
    encode_hello,
    encode_zep,
    ntp_time,
    take_over,
    unix_time,
)
from iotbench.metrics.observers import Observers, PacketRecorder  # noqa: E402
from iotbench.net import ieee802154 as mac  # noqa: E402
from iotbench.net.mac.csma import NO_ACK, SENT  # noqa: E402
from iotbench.net.packet import ACK, BROADCAST, CORRUPTED, DELIVERED, MISSED, Packet  # noqa: E402
from iotbench.net.radio import phy  # noqa: E402
from iotbench.net.radio.medium import FrameReceiver  # noqa: E402
from iotbench.proto.errors import DecodeError  # noqa: E402
from iotbench.scenarios import expand, parse_scenario  # noqa: E402
from iotbench.scenarios.settings import run_settings  # noqa: E402
from iotbench.sim import Simulator  # noqa: E402
from iotbench.world.networks import build_network  # noqa: E402

US = 1e-6
RIOT = bytes.fromhex("be928904d7b4b6de")  # a RIOT node's EUI-64 (RIOT's README's)
A: Address = ("::1", 40001, 0, 0)
B: Address = ("::1", 40002, 0, 0)
C: Address = ("::1", 40003, 0, 0)


def crc16_kermit(data: bytes) -> int:
    """CRC-16/KERMIT bit by bit (poly 0x1021 reflected: 0x8408, init 0), written
    apart from the codecs so the vectors do not check the code against itself."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x8408 if crc & 1 else crc >> 1
    return crc


# ------------------------------------------------------------------ the codec


def test_data_datagram_byte_by_byte() -> None:
    """A ZEP v2 data datagram per packet-zep.c / RIOT's zep_v2_data_hdr_t, written out."""
    psdu = bytes([0x02, 0x00, 0x2A])  # an 802.15.4 ACK for sequence number 42 ...
    fcs = crc16_kermit(psdu)
    assert fcs == mac.crc16(psdu)
    psdu += fcs.to_bytes(2, "little")  # ... and its FCS, least significant byte first
    datagram = bytes(
        [
            0x45, 0x58,              # preamble "EX"
            0x02,                    # version 2
            0x01,                    # type 1: data
            0x1A,                    # channel 26
            0x12, 0x34,              # device id 0x1234
            0x01,                    # CRC/LQI mode 1: the PSDU ends with the FCS
            0xC8,                    # LQI 200
            0x83, 0xAA, 0x7E, 0x81,  # NTP seconds: 2208988801 (Unix 1)
            0x80, 0x00, 0x00, 0x00,  # NTP fraction: 1/2
            0x00, 0x00, 0x01, 0x02,  # sequence number 258
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  # reserved
            0x05,                    # length: 5 PSDU bytes
        ]
    ) + psdu  # fmt: skip
    assert len(datagram) == 32 + 5
    frame = ZepFrame(
        channel=26, device=0x1234, crc=True, lqi=200, ntp_time=ntp_time(1.5), seq=258, psdu=psdu
    )
    assert encode_zep(frame) == datagram
    assert decode_zep(datagram) == frame
    assert decode_datagram(datagram) == frame
    assert unix_time(frame.ntp_time) == 1.5
    assert mac.decode(frame.psdu) == mac.Ack(42)


def test_ack_datagram_and_lqi_mode() -> None:
    datagram = b"EX\x02\x02\x00\x00\x01\x02"  # ack, sequence number 258
    assert decode_zep(datagram) == ZepAck(258)
    assert encode_zep(ZepAck(258)) == datagram
    lqi_mode = encode_zep(ZepFrame(11, 0, False, 0, 0, 0, b"\x01\x02"))
    decoded = decode_zep(lqi_mode)
    assert lqi_mode[7] == 0 and isinstance(decoded, ZepFrame) and decoded.crc is False


def test_riot_hello_as_socket_zep_h_draws_it() -> None:
    """cpu/native/include/socket_zep.h: "EX", version 2, type 255, zeros, "HELLO" in the
    reserved field (bytes 21 to 25), then (socket_zep.c) length 8 and the EUI-64."""
    hello = encode_hello(RIOT)
    expected = b"EX\x02\xff" + bytes(17) + b"HELLO" + bytes(5) + b"\x08" + RIOT
    assert hello == expected and len(hello) == 40
    assert decode_datagram(hello) == ZepHello(RIOT)
    with pytest.raises(ZepDecodeError, match="type 255"):
        decode_zep(hello)  # not the spec's


def test_ntp_time() -> None:
    assert ntp_time(0.0) == 2_208_988_800 << 32
    assert ntp_time(1.25) == (2_208_988_801 << 32) | 0x40000000
    assert unix_time(ntp_time(1234.000001)) == pytest.approx(1234.000001, abs=1e-9)
    assert ntp_time(2**32 - 2_208_988_800 + 0.5) == 0x80000000  # 2036: era 1 begins


def _data(psdu: bytes = b"\x02\x00\x01\x00\x00", channel: int = 26) -> bytes:
    return encode_zep(ZepFrame(channel, 1, True, 255, 0, 0, psdu))


@pytest.mark.parametrize(
    ("datagram", "why"),
    [
        (b"", "too short"),
        (b"EX\x02", "too short"),
        (b"ZX" + _data()[2:], "preamble"),
        (b"EX\x01" + _data()[3:], "version 1"),
        (b"EX\x03" + _data()[3:], "version 3"),
        (b"EX\x02\x00" + _data()[4:], "type 0"),
        (b"EX\x02\x03" + _data()[4:], "type 3"),
        (b"EX\x02\xff" + _data()[4:], "type 255"),
        (_data()[:31], "shorter than its header"),
        (_data() + b"\x00", "disagrees"),
        (_data()[:-1], "disagrees"),
        (_data()[:31] + b"\x80" + bytes(128), "exceeds 127"),
        (_data()[:31] + b"\xff" + bytes(255), "exceeds 127"),
        (b"EX\x02\x02\x00\x00\x00", "ack of 7 bytes"),
        (b"EX\x02\x02\x00\x00\x00\x00\x00", "ack of 9 bytes"),
    ],
)
def test_malformed_datagrams_are_refused(datagram: bytes, why: str) -> None:
    with pytest.raises(ZepDecodeError, match=why):
        decode_zep(datagram)
    assert issubclass(ZepDecodeError, DecodeError)


def test_encode_refuses_what_zep_cannot_say() -> None:
    with pytest.raises(ValueError, match="exceeds 127"):
        encode_zep(ZepFrame(26, 0, True, 0, 0, 0, bytes(128)))
    for bad in (
        ZepFrame(256, 0, True, 0, 0, 0, b""),
        ZepFrame(26, 1 << 16, True, 0, 0, 0, b""),
        ZepFrame(26, 0, True, 256, 0, 0, b""),
        ZepFrame(26, 0, True, 0, 1 << 64, 0, b""),
        ZepFrame(26, 0, True, 0, 0, 1 << 32, b""),
    ):
        with pytest.raises(ValueError):
            encode_zep(bad)
    with pytest.raises(ValueError):
        encode_hello(b"\x01\x02\x03")


frames = st.builds(
    ZepFrame,
    channel=st.integers(0, 255),
    device=st.integers(0, 0xFFFF),
    crc=st.booleans(),
    lqi=st.integers(0, 255),
    ntp_time=st.integers(0, 2**64 - 1),
    seq=st.integers(0, 2**32 - 1),
    psdu=st.binary(max_size=127),
)


@given(st.one_of(frames, st.builds(ZepAck, st.integers(0, 2**32 - 1))))
def test_round_trip(message: ZepFrame | ZepAck) -> None:
    assert decode_zep(encode_zep(message)) == message


def _mutated(data: bytes, index: int, value: int) -> bytes:
    if not data:
        return data
    i = index % len(data)
    return data[:i] + bytes((value,)) + data[i + 1 :]


datagrams = st.one_of(
    st.binary(max_size=200),
    st.binary(max_size=200).map(lambda tail: b"EX\x02\x01" + tail),
    st.binary(max_size=200).map(lambda tail: b"EX\x02\xff" + tail),
    st.builds(_mutated, frames.map(encode_zep), st.integers(0, 200), st.integers(0, 255)),
    st.builds(lambda b, n: encode_zep(b)[:n], frames, st.integers(0, 160)),
)


@given(datagrams)
def test_any_bytes_decode_or_raise_zep_decode_error(data: bytes) -> None:
    try:
        message = decode_zep(data)
    except ZepDecodeError:
        return
    again = encode_zep(message)
    if isinstance(message, ZepFrame):
        # Everything but the reserved bytes (21-30), which decoding ignores.
        assert again[:21] == data[:21] and again[31:] == data[31:]
    else:
        assert again == data


# ------------------------------------------------------------------ a medium


class Peers:
    """What the dispatcher sent: (virtual time, address, decoded datagram), and a fake
    RIOT per address that acknowledges unicast frames for its EUI-64 after
    `ack_after_s` (RIOT's soft ACK), if given."""

    def __init__(self, net: RadioNet) -> None:
        self.net = net
        self.sent: list[tuple[float, Address, ZepFrame]] = []
        self.zep: ZepDispatcher | None = None
        self.ack_after_s: float | None = None

    def __call__(self, data: bytes, addr: Address) -> None:
        message = decode_zep(data)
        assert isinstance(message, ZepFrame)
        now = self.net.sim.now
        self.sent.append((now, addr, message))
        frame = mac.decode(message.psdu)
        if self.ack_after_s is not None and isinstance(frame, mac.Frame):
            if frame.ack_request and frame.dst == RIOT:
                assert self.zep is not None
                t = now + self.ack_after_s
                ack = _data(mac.encode_ack(frame.seq))
                self.net.sim.post(t, self.zep.datagram_received, ack, addr, t)

    def frames(self) -> list[mac.Frame | mac.Ack]:
        return [mac.decode(m.psdu) for _, _, m in self.sent]


def _net(
    positions: list[tuple[float, float, float]], **kw: Any
) -> tuple[RadioNet, ZepDispatcher, Peers]:
    net = RadioNet(positions)
    peers = Peers(net)
    zep = ZepDispatcher([net.radios[0]], send=peers, **kw)
    peers.zep = zep
    return net, zep, peers


def _riot_frame(dst: bytes, payload: bytes = b"riot" * 10, seq: int = 7) -> bytes:
    """What RIOT's socket_zep sends for a data frame: the frame with its FCS."""
    return _data(mac.encode_data(seq, mac.DEFAULT_PAN_ID, dst, RIOT, payload, dst != mac.BROADCAST))


def _received(net: RadioNet, node: str) -> list[tuple[float, bytes, bytes]]:
    return [(t, src, payload) for t, name, src, payload in net.received if name == node]


def test_registration_in_order_refusal_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    net = RadioNet([(0, 0, 0), (10, 0, 0), (20, 0, 0)])
    sent: list[tuple[bytes, Address]] = []
    zep = ZepDispatcher([net.radios[2], net.radios[0]], send=lambda d, a: sent.append((d, a)))
    stats = zep.stats
    zep.datagram_received(b"hello?", C, 0.0)  # not ZEP, unknown sender: not a node
    assert (stats.invalid_unregistered, stats.registered) == (1, 0)
    zep.datagram_received(encode_hello(RIOT), A, 0.0)  # first valid datagram: first node
    zep.datagram_received(encode_zep(ZepAck(1)), B, 0.0)  # a ZEP ack is valid ZEP too
    assert [(n.name, n.addr) for n in zep.nodes] == [("n2", A), ("n0", B)]
    assert zep.node("n2").eui64 == RIOT and net.medium.by_address[RIOT] is net.radios[2]
    assert (stats.registered, stats.hellos, stats.zep_acks) == (2, 1, 1)
    with caplog.at_level(logging.WARNING, logger="iotbench.emulate.zep"):
        zep.datagram_received(_riot_frame(mac.BROADCAST), C, 0.0)
        zep.datagram_received(_riot_frame(mac.BROADCAST), C, 0.0)
    assert stats.refused == 2
    assert len([r for r in caplog.records if "refused" in r.message]) == 1
    zep.datagram_received(b"EX\x02\x01garbage", A, 0.0)  # malformed, from a node
    assert (stats.malformed, stats.invalid_unregistered) == (1, 1)
    # The same firmware from a new port (a restarted process) takes its node back.
    zep.datagram_received(encode_hello(RIOT), C, 0.0)
    assert zep.node("n2").addr == C and stats.rebound == 1
    net.sim.run(until=1.0)
    assert stats.frames_in == 0 and stats.datagrams == 7
    with pytest.raises(ValueError):
        ZepDispatcher([])
    with pytest.raises(ValueError):
        ZepDispatcher([net.radios[1], net.radios[1]])


def test_riot_unicast_crosses_the_medium_and_the_ack_comes_back() -> None:
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0), (20, 0, 0)], epoch_unix_s=1000.0)
    frame = _riot_frame(net.address(1))
    psdu = frame[32:]
    zep.datagram_received(frame, A, 1.0)
    net.sim.run(until=2.0)
    air = phy.frame_airtime_s(len(psdu))
    ((t, src, payload),) = _received(net, "n1")
    assert (src, payload) == (RIOT, b"riot" * 10) and t == pytest.approx(1.0 + air)
    assert _received(net, "n2") == []
    data, ack = net.frames()
    assert (data.src, data.dst, data.fate, data.t_sent) == ("n0", "n1", DELIVERED, 1.0)
    assert data.data == psdu  # on the air exactly as RIOT sent it, FCS included
    assert data.link_header_len == 21 + 2
    # n1's MAC acknowledges; the ACK reaches RIOT as a ZEP data datagram.
    ((t_ack, to, message),) = peers.sent
    assert to == A and message.psdu == mac.encode_ack(7)
    assert (message.channel, message.crc, message.lqi) == (26, True, 255)
    assert t_ack == pytest.approx(1.0 + air + phy.TURNAROUND_S + phy.frame_airtime_s(5))
    assert unix_time(message.ntp_time) == pytest.approx(1000.0 + t_ack, abs=1e-6)
    assert ack.src == "n1" and ack.dst == "n0"
    assert net.medium.by_address[RIOT] is net.radios[0]  # learnt from the source address
    assert zep.stats.frames_in == 1 and zep.stats.frames_out == 1


def test_simulated_unicast_reaches_riot_and_riots_soft_ack_completes_it() -> None:
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0)])
    # RIOT's SubMAC waits SIFS (192 us) before its ACK; 250 us after our datagram.
    peers.ack_after_s = 250 * US
    zep.datagram_received(encode_hello(RIOT), A, 0.0)
    net.sim.at(1.0, net.macs[1].send, RIOT, b"to riot")
    net.sim.run(until=2.0)
    (frame,) = peers.frames()
    assert isinstance(frame, mac.Frame)
    assert (frame.dst, frame.src, frame.payload, frame.ack_request) == (
        RIOT,
        net.address(1),
        b"to riot",
        True,
    )
    # RIOT's ACK went onto the air to n1, whose MAC is done after one transmission.
    ((_, name, dst, status, transmissions),) = net.sent
    assert (name, dst, status, transmissions) == ("n1", RIOT, SENT, 1)
    riot_ack = [(p.data, p.dst, p.fate) for p in net.frames(0)]
    assert riot_ack == [(mac.encode_ack(frame.seq), "n1", DELIVERED)]


@pytest.mark.parametrize("after_us", [100, 600])
def test_a_riot_ack_outside_the_senders_window_is_lost(after_us: int) -> None:
    """The simulated sender is deaf for the turnaround (192 us) after its frame and
    waits 864 us from its end: an ACK must start 192 to 512 us after our datagram
    (the module's timing note), else the sender sends again and gives up."""
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0)])
    peers.ack_after_s = after_us * US
    zep.datagram_received(encode_hello(RIOT), A, 0.0)
    net.sim.at(1.0, net.macs[1].send, RIOT, b"to riot")
    net.sim.run(until=2.0)
    ((_, _, _, status, transmissions),) = net.sent
    assert (status, transmissions) == (NO_ACK, 4)
    assert len(peers.sent) == 4 and zep.stats.frames_in == 4  # RIOT acked every copy


def test_broadcasts_both_ways() -> None:
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0), (0, 10, 0)])
    zep.datagram_received(_riot_frame(mac.BROADCAST, b"all"), A, 1.0)
    net.sim.at(2.0, net.macs[1].send, mac.BROADCAST, b"from n1")
    net.sim.run(until=3.0)
    assert [p for _, src, p in _received(net, "n1") if src == RIOT] == [b"all"]
    assert [p for _, src, p in _received(net, "n2") if src == RIOT] == [b"all"]
    assert [p for _, _, p in _received(net, "n2")] == [b"all", b"from n1"]
    riot = net.frames(0)[0]
    assert (riot.dst, riot.fate) == (None, BROADCAST)
    (frame,) = peers.frames()
    assert isinstance(frame, mac.Frame)
    assert (frame.dst, frame.payload, frame.ack_request) == (mac.BROADCAST, b"from n1", False)


def test_far_addressee_gets_nothing_and_riot_no_ack() -> None:
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0), (2000, 0, 0)])
    zep.datagram_received(_riot_frame(net.address(2)), A, 1.0)
    net.sim.run(until=2.0)
    assert _received(net, "n2") == [] and peers.sent == []
    assert net.frames(0)[0].fate == MISSED


def test_collided_frames_are_not_delivered_either_way() -> None:
    """RIOT's frame to n1 meets a much stronger one from n2 next to n1; and a weak
    frame to the ZEP radio meets a strong one next to it: neither is delivered."""
    net, zep, peers = _net([(0, 0, 0), (30, 0, 0), (33, 0, 0), (-3, 0, 0), (-30, 0, 0)])
    zep.datagram_received(encode_hello(RIOT), A, 0.0)
    zep.datagram_received(_riot_frame(net.address(1)), A, 1.0)
    noise = Packet(
        mac.encode_data(1, mac.DEFAULT_PAN_ID, b"\x00\x01", b"\x00\x02", bytes(60), False), 0, 0, 0
    )
    net.sim.at(1.0, net.medium.transmit, net.radios[2], noise, object(), _nothing)
    # The weak frame starts first (the ZEP radio locks on), the strong one at once.
    weak = Packet(
        mac.encode_data(2, mac.DEFAULT_PAN_ID, mac.BROADCAST, net.address(4), b"w" * 40, False),
        0,
        0,
        0,
    )
    strong = Packet(
        mac.encode_data(3, mac.DEFAULT_PAN_ID, b"\x00\x01", b"\x00\x03", bytes(60), False), 0, 0, 0
    )
    net.sim.at(2.0, net.medium.transmit, net.radios[4], weak, None, _nothing)
    net.sim.at(2.0, net.medium.transmit, net.radios[3], strong, object(), _nothing)
    net.sim.run(until=3.0)
    assert _received(net, "n1") == []
    assert net.frames(0)[0].fate in (CORRUPTED, MISSED)
    assert peers.sent == []
    assert net.radios[0].counters.corrupted + net.radios[0].counters.aborted >= 1


def _nothing(*_: object) -> None:
    pass


def test_a_riot_node_is_half_duplex_and_queues_its_own_frames() -> None:
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0)])
    zep.datagram_received(_riot_frame(mac.BROADCAST, b"one", seq=1), A, 1.0)
    zep.datagram_received(_riot_frame(mac.BROADCAST, b"two", seq=2), A, 1.0)
    net.sim.run(until=2.0)
    first, second = net.frames(0)
    assert second.t_sent == pytest.approx(first.t_done)
    assert [p for _, _, p in _received(net, "n1")] == [b"one", b"two"]


def test_what_riot_would_drop_is_dropped() -> None:
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0)])
    good = mac.encode_data(1, mac.DEFAULT_PAN_ID, mac.BROADCAST, RIOT, b"x", False)
    zep.datagram_received(_data(good, channel=11), A, 1.0)  # another channel
    zep.datagram_received(_data(good[:-1] + bytes((good[-1] ^ 1,))), A, 1.0)  # bad FCS
    zep.datagram_received(_data(b"\x01\x02"), A, 1.0)  # too short for 802.15.4
    net.sim.run(until=2.0)
    stats = zep.stats
    assert (stats.wrong_channel, stats.bad_psdu, stats.frames_in) == (1, 2, 0)
    assert net.frames() == []
    # A MAC command frame (type 3) our codec does not parse: on the air, to nobody.
    body = bytes([0x03, 0xC8, 0x05, 0x23, 0x00, 0xFF, 0xFF]) + RIOT[::-1] + b"\x04"
    command = body + mac.crc16(body).to_bytes(2, "little")
    zep.datagram_received(_data(command), A, 3.0)
    zep.datagram_received(_data(mac.encode_ack(99)), A, 4.0)  # acknowledges nothing
    net.sim.run(until=5.0)
    assert (stats.opaque_frames, stats.unmatched_acks, stats.frames_in) == (1, 1, 2)
    assert [p.fate for p in net.frames()] == [MISSED, MISSED]
    assert _received(net, "n1") == []


def test_an_address_another_radio_has_is_not_taken(caplog: pytest.LogCaptureFixture) -> None:
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0)])
    theirs = net.address(1)
    frame = mac.encode_data(1, mac.DEFAULT_PAN_ID, mac.BROADCAST, theirs, b"me?", False)
    with caplog.at_level(logging.WARNING, logger="iotbench.emulate.zep"):
        zep.datagram_received(_data(frame), A, 1.0)
        zep.datagram_received(_data(frame), A, 1.0)
        zep.datagram_received(encode_hello(b"\xff\xff"), A, 1.0)  # broadcast: no one's
    assert net.medium.by_address[theirs] is net.radios[1]
    assert b"\xff\xff" not in net.medium.by_address
    assert zep.stats.address_conflicts == 2
    assert len([r for r in caplog.records if "which is n1's" in r.message]) == 1


def test_early_ack_answers_riot_in_time_and_withholds_the_medium_ack() -> None:
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0)], early_ack=True)
    zep.datagram_received(_riot_frame(net.address(1), seq=9), A, 1.0)
    zep.datagram_received(_riot_frame(bytes(8), seq=10), A, 1.1)  # to nobody: no ACK
    net.sim.run(until=2.0)
    ((t, _, message),) = peers.sent
    assert message.psdu == mac.encode_ack(9)
    assert t == pytest.approx(1.0 + phy.TURNAROUND_S + phy.frame_airtime_s(5))
    assert t - 1.0 < 864 * US  # within RIOT's ACK_TIMEOUT_US
    assert len(_received(net, "n1")) == 1  # the frame went on the air once
    assert (zep.stats.early_acks, zep.stats.acks_withheld) == (1, 1)


@pytest.mark.parametrize("after_us", [250, 600])
def test_early_ack_acknowledges_frames_to_riot_on_the_air_as_a_transceiver(
    after_us: int,
) -> None:
    """With early ACKs, the dispatcher is the transceiver both ways: it puts the
    ACK of a frame for RIOT on the air a turnaround after the frame, so the
    simulated sender is done in one transmission however late RIOT's own ACK
    comes through the socket; RIOT's ACK frame is dropped (sent already)."""
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0)], early_ack=True)
    peers.ack_after_s = after_us * US  # RIOT's soft ACK, early or too late
    zep.datagram_received(encode_hello(RIOT), A, 0.0)
    net.sim.at(1.0, net.macs[1].send, RIOT, b"to riot")
    net.sim.run(until=2.0)
    ((_, name, dst, status, transmissions),) = net.sent
    assert (name, dst, status, transmissions) == ("n1", RIOT, SENT, 1)
    (ack,) = net.frames(0)
    (data,) = [p for p in net.frames(1) if p.kind != ACK]
    assert ack.data[:3] == mac.encode_ack(data.data[2])[:3] and ack.fate == DELIVERED
    assert ack.t_sent == pytest.approx(data.t_done + phy.TURNAROUND_S)
    assert (zep.stats.auto_acks, zep.stats.riot_acks_dropped) == (1, 1)


def test_early_ack_leaves_the_ack_its_time_before_riots_next_frame() -> None:
    """RIOT, told early that its frame arrived, may hand over the next one at once
    (a second 6LoWPAN fragment): it goes on the air after the addressee's ACK
    has had its time, not over it."""
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0)], early_ack=True)
    zep.datagram_received(_riot_frame(net.address(1), b"one", seq=1), A, 1.0)
    zep.datagram_received(_riot_frame(net.address(1), b"two", seq=2), A, 1.0)
    net.sim.run(until=2.0)
    first, second = [p for p in net.frames(0) if p.kind != ACK]
    assert second.t_sent == pytest.approx(
        first.t_done + 2 * phy.TURNAROUND_S + phy.frame_airtime_s(5)
    )
    assert [p for _, _, p in _received(net, "n1")] == [b"one", b"two"]
    assert [p.fate for p in net.frames(1)] == [DELIVERED, DELIVERED]  # both ACKs heard


def test_take_over_silences_the_simulated_mac() -> None:
    net = RadioNet([(0, 0, 0), (10, 0, 0)])
    own = net.address(0)
    zep = ZepDispatcher([net.radios[0]], send=lambda d, a: None)
    assert own not in net.medium.by_address and net.radios[0].mac is zep.nodes[0]
    net.sim.at(1.0, net.macs[0].send, mac.BROADCAST, b"ghost")
    net.sim.at(1.0, net.macs[0].send, net.address(1), b"ghost")
    net.sim.run(until=3.0)
    assert net.frames() == [] and net.received == []
    assert net.macs[0].counters.frames == 2  # it ran, into nothing
    take_over(net.radios[0], zep.nodes[0])  # again: nothing left to silence
    net.radios[1].mac = FrameReceiver()  # a MAC take_over does not know how to silence
    with pytest.raises(ValueError):
        take_over(net.radios[1], zep.nodes[0])


def test_frames_for_a_radio_no_process_has_yet_are_dropped() -> None:
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0)])
    net.sim.at(1.0, net.macs[1].send, mac.BROADCAST, b"anyone?")
    net.sim.run(until=2.0)
    assert peers.sent == [] and zep.stats.unregistered_drops == 1


@given(st.lists(datagrams, max_size=6))
def test_any_datagrams_never_break_the_dispatcher(batch: list[bytes]) -> None:
    net, zep, peers = _net([(0, 0, 0), (10, 0, 0)])
    for i, data in enumerate(batch):
        zep.datagram_received(data, (A, B)[i % 2], 0.5)
    net.sim.run(until=2.0)
    assert zep.stats.datagrams == len(batch)


# ------------------------------------------------------------------ the socket


def _wait_readable(fd: int, timeout_s: float = 5.0) -> None:
    ready, _, _ = select.select([fd], [], [], timeout_s)
    assert ready, "nothing arrived"


@pytest.fixture(params=[("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6)], ids=["v4", "v6"])
def loopback(request: pytest.FixtureRequest) -> Iterator[tuple[str, socket.AddressFamily]]:
    host, family = request.param
    if family == socket.AF_INET6:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe:
                probe.bind((host, 0))
        except OSError:
            pytest.skip("no IPv6 loopback")
    yield host, family


def test_socket_against_a_zep_peer(loopback: tuple[str, socket.AddressFamily]) -> None:
    host, family = loopback
    net = RadioNet([(0, 0, 0), (10, 0, 0)])
    zep = ZepDispatcher([net.radios[0]])
    with ZepSocket(zep, host, 0) as zsock, socket.socket(family, socket.SOCK_DGRAM) as peer:
        assert zsock.address[1] != 0 and ZEP_PORT == 17754
        peer.bind((host, 0))
        peer.connect(zsock.address[:2])  # as socket_zep does
        peer.send(encode_hello(RIOT))
        peer.send(_riot_frame(net.address(1), b"over udp"))
        read = 0
        while read < 2:
            _wait_readable(zsock.fileno())
            read += zsock.on_readable(net.sim.now)
        assert zep.nodes[0].addr is not None and zep.nodes[0].addr[1] == peer.getsockname()[1]
        net.sim.at(1.0, net.macs[1].send, mac.BROADCAST, b"back over udp")
        net.sim.run(until=2.0)
        assert [p for _, _, p in _received(net, "n1")] == [b"over udp"]
        # n1's ACK of RIOT's frame, then n1's broadcast, arrive at the peer as ZEP.
        got = []
        for _ in range(2):
            _wait_readable(peer.fileno())
            message = decode_zep(peer.recv(4096))
            assert isinstance(message, ZepFrame)
            got.append(mac.decode(message.psdu))
        assert got[0] == mac.Ack(7)
        assert isinstance(got[1], mac.Frame) and got[1].payload == b"back over udp"
        assert zsock.stats.received == 2 and zsock.stats.sent == 2
        assert zsock.on_readable(net.sim.now) == 0  # nothing waiting: no block
    peer_gone = ZepDispatcher([RadioNet([(0, 0, 0)]).radios[0]])
    with pytest.raises(RuntimeError):
        peer_gone.send(b"", A)


SCENARIO = """
name = "zep"
description = "a radio network a RIOT process joins"
[network]
topology = "line"
[network.nodes]
count = 3
spacing_m = 40.0
[network.roles]
producers = ["n1"]
[network.radio.path_loss]
shadowing_db = 0.0
[workload]
kind = "sequential"
items = 1
[protocol]
name = "coap"
"""


def test_a_node_of_a_built_network_becomes_a_zep_node() -> None:
    """A scenario's network (6LoWPAN, RPL): the node RIOT plays hears its neighbours'
    RPL broadcasts as ZEP, and its simulated stack, silenced, sends nothing."""
    (run,) = expand(parse_scenario(SCENARIO), {}, {})
    settings = run_settings(run.config)
    sim = Simulator(run.seed)
    recorder = PacketRecorder()
    net = build_network(sim, settings.network, Observers(recorder), settings.protocol)
    radio = net.radios["n2"]
    own = radio.address
    sent: list[tuple[bytes, Address]] = []
    zep = ZepDispatcher([radio], send=lambda d, a: sent.append((d, a)))
    assert own is not None and own not in net.medium.by_address
    zep.datagram_received(encode_hello(own), A, 0.0)  # RIOT started with --eui64=<own>
    sim.run(until=30.0)
    assert sent and all(a == A for _, a in sent)
    heard = [mac.decode(d[32:]) for d, _ in sent]
    assert any(isinstance(f, mac.Frame) and f.dst == mac.BROADCAST for f in heard)
    assert [p for p in recorder.packets if p.src == "n2"] == []
    assert net.macs["n2"].counters.frames + net.macs["n2"].counters.broadcasts > 0
