"""A node's packet memory (net/pktbuf.py): what waits on a node takes from it; what
does not fit is dropped, at the MAC's queue and at 6LoWPAN reassembly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from iotbench.net.lowpan import Reassembler
from iotbench.net.mac.csma import MacParams
from iotbench.net.pktbuf import PacketBuffer

sys.path.insert(0, str(Path(__file__).parent / "radio"))
sys.path.insert(0, str(Path(__file__).parent / "lowpan"))
from lowpan_helpers import MAC_A, MAC_B  # noqa: E402
from radio_harness import RadioNet  # noqa: E402
from test_lowpan_fragments import big_udp, frames_of  # noqa: E402


def test_take_and_give_back():
    buf = PacketBuffer(100)
    assert buf.take(60) and buf.take(40)
    assert not buf.take(1)  # full
    buf.give(60)
    assert buf.take(50) and (buf.used, buf.peak, buf.refused) == (90, 100, 1)
    with pytest.raises(ValueError):
        PacketBuffer(0)


def test_queued_frames_take_packet_memory_until_the_mac_is_done_with_them():
    net = RadioNet([(0, 0, 0), (10, 0, 0)], params=MacParams(queue_frames=16))
    frame_bytes = 50 + 23  # payload; control, sequence, PAN, two extended addresses, FCS
    buf = net.macs[0].pktbuf = PacketBuffer(3 * frame_bytes)
    for _ in range(5):
        net.send_at(0.0, 0, 1)
    net.sim.run()
    # Three fit (the one in service and two waiting); two do not, as a full queue.
    assert (buf.peak, buf.refused) == (3 * frame_bytes, 2)
    assert net.macs[0].counters.queue_drops == 2
    assert len(net.received) == 3
    assert buf.used == 0  # every frame sent gave its bytes back
    # A frame given up (nobody acknowledges) gives its bytes back too.
    net.send_at(net.sim.now + 1.0, 0, None)
    net.sim.at(net.sim.now + 1.0, net.macs[0].send, b"\x02" * 8, b"to nobody")
    net.sim.run()
    assert buf.used == 0 and net.macs[0].counters.no_ack == 1


def test_the_macs_frame_bytes_are_what_its_packet_memory_holds_at_every_instant():
    # What the run's books (world/books.py) compare: queued frames and the one being
    # sent hold memory; a finished frame, kept through the interframe spacing, not.
    net = RadioNet([(0, 0, 0), (10, 0, 0)], params=MacParams(queue_frames=16))
    mac = net.macs[0]
    buf = mac.pktbuf = PacketBuffer(10_000)
    for _ in range(3):
        net.send_at(0.0, 0, 1)
    seen: set[tuple[int, int]] = set()

    def check() -> None:
        queued, in_hand = mac.frame_bytes()
        assert buf.used == queued + in_hand
        seen.add((queued, in_hand))
        if net.sim.now < 0.05:
            net.sim.schedule(20e-6, check)

    net.sim.at(0.0, check)
    net.sim.run()
    assert len(net.received) == 3 and buf.used == 0
    assert (0, 73) in seen and (73, 73) in seen and (0, 0) in seen


def test_reassembly_holds_each_datagrams_size_in_packet_memory():
    packet = big_udp(300)  # 348 bytes, in three fragments
    buf = PacketBuffer(2 * 348)
    r = Reassembler(pktbuf=buf)
    for tag in range(3):
        r.add(0.0, MAC_A, MAC_B, frames_of(packet, tag)[0])
    assert len(r) == 2 and r.discarded == 1 and buf.refused == 1
    assert buf.used == r.reserved_bytes == 2 * 348
    for piece in frames_of(packet, 0)[1:]:
        out = r.add(0.0, MAC_A, MAC_B, piece)
    assert out == packet and buf.used == 348  # a complete datagram gives back
    r.expire(r.timeout_s)
    assert buf.used == 0 and r.timeouts == 1  # and so does one that timed out
