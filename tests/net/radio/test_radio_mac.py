"""The 802.15.4 MAC and radio medium against the standard's numbers and the geometry."""

from __future__ import annotations

import math
import random

import pytest
from radio_harness import RadioNet

from iotbench.net import ieee802154 as mac
from iotbench.net.mac.csma import CHANNEL_ACCESS_FAILURE, NO_ACK, SENT, MacParams
from iotbench.net.packet import BROADCAST, DELIVERED, MISSED, Packet
from iotbench.net.radio import phy
from iotbench.net.radio.interferer import WifiInterferer
from iotbench.net.radio.medium import LISTEN, TX
from iotbench.net.radio.wifi import OFDM, STATION, WifiTraffic
from iotbench.sim.twister import randbelow

US = 1e-6
BACKOFF, CCA, TURNAROUND = 320 * US, 128 * US, 192 * US
DATA_FRAME = 21 + 50 + 2  # extended addresses, 50-byte payload, FCS
DATA_AIR = (DATA_FRAME + 6) * 32 * US  # 2.528 ms
ACK_AIR = (5 + 6) * 32 * US  # 352 us


def test_phy_constants_are_the_standards():
    assert phy.SYMBOL_S == 16 * US
    assert phy.UNIT_BACKOFF_S == pytest.approx(BACKOFF)
    assert phy.CCA_S == pytest.approx(CCA)
    assert phy.TURNAROUND_S == pytest.approx(TURNAROUND)
    assert phy.ACK_WAIT_S == pytest.approx(54 * 16 * US)
    assert phy.frame_airtime_s(DATA_FRAME) == pytest.approx(DATA_AIR)
    assert [phy.channel_center_mhz(c) for c in (11, 26)] == [2405.0, 2480.0]
    with pytest.raises(ValueError):
        phy.channel_center_mhz(27)


def test_idle_channel_unicast_with_ack_takes_backoff_cca_turnaround_frame_ack():
    """Request at t; the frame starts after k backoff periods (k in 0..7 at BE 3),
    the CCA and the RX->TX turnaround; the ACK follows the frame after one more
    turnaround; the sender hears of success at the ACK's end."""
    seen_k = set()
    for seed in range(60):
        net = RadioNet([(0, 0, 0), (10, 0, 0)], seed=seed)
        net.send_at(1.0, 0, 1)
        net.sim.run()
        data, ack = net.frames()
        k = (data.t_sent - 1.0 - CCA - TURNAROUND) / BACKOFF
        assert k == pytest.approx(round(k), abs=1e-6) and 0 <= round(k) <= 7
        seen_k.add(round(k))
        assert data.attempt == 1 and data.fate == DELIVERED and len(data.data) == DATA_FRAME
        assert data.data[0] & 0x20  # Ack Request
        ((t_rx, node, src, payload),) = net.received
        assert (node, src, payload) == ("n1", net.address(0), b"x" * 50)
        assert t_rx == pytest.approx(data.t_sent + DATA_AIR)
        assert ack.t_sent == pytest.approx(t_rx + TURNAROUND)
        assert len(ack.data) == 5 and ack.src == "n1" and ack.dst == "n0"
        ((t_ok, _, dst, status, tries),) = net.sent
        assert (dst, status, tries) == (net.address(1), SENT, 1)
        assert t_ok == pytest.approx(ack.t_sent + ACK_AIR)
    assert seen_k == set(range(8))  # every backoff slot of the first window occurs


def test_broadcast_has_no_ack_request_and_no_ack():
    net = RadioNet([(0, 0, 0), (10, 0, 0), (0, 10, 0)])
    net.send_at(0.0, 0, None)
    net.sim.run()
    (frame,) = net.frames()
    assert not frame.data[0] & 0x20 and frame.fate == BROADCAST
    assert sorted(node for _, node, _, _ in net.received) == ["n1", "n2"]
    assert net.sent == []  # on_sent reports unicasts only
    assert net.macs[0].counters.broadcasts == 1


def test_no_ack_retries_macmaxframeretries_times_then_drops():
    net = RadioNet([(0, 0, 0), (10, 0, 0)])
    nobody = mac.extended_address(99)
    net.sim.at(0.0, net.macs[0].send, nobody, b"hello")
    net.sim.run()
    frames = net.frames(0)
    assert [f.attempt for f in frames] == [1, 2, 3, 4]  # 1 + macMaxFrameRetries
    assert all(f.fate == MISSED for f in frames)
    for a, b in zip(frames, frames[1:]):
        # The next attempt: ACK wait, then CSMA again from BE = 3.
        gap = b.t_sent - (a.t_sent + (len(a.data) + 6) * 32 * US)
        k = (gap - phy.ACK_WAIT_S - CCA - TURNAROUND) / BACKOFF
        assert k == pytest.approx(round(k), abs=1e-6) and 0 <= round(k) <= 7
    ((_, _, dst, status, tries),) = net.sent
    assert (dst, status, tries) == (nobody, NO_ACK, 4)
    assert net.macs[0].counters.no_ack == 1 and net.macs[0].counters.retries == 3
    assert net.macs[0].links[nobody].no_ack == 1


def test_duplicates_are_acknowledged_but_not_delivered_twice():
    net = RadioNet([(0, 0, 0), (10, 0, 0)])
    receiver = net.macs[1]
    frame = mac.encode(mac.Frame(5, mac.DEFAULT_PAN_ID, net.address(1), net.address(0), b"a", True))
    for t in (0.0, 0.01):
        pkt = Packet(frame, 0, 0, 0, len(frame) - 1)
        net.sim.at(t, net.medium.transmit, net.radios[0], pkt, net.radios[1], lambda tx, ok: None)
    net.sim.run()
    assert [p for _, _, _, p in net.received] == [b"a"]
    assert receiver.counters.duplicates == 1 and receiver.counters.acks_sent == 2


def test_queue_overflow_drops_frames():
    net = RadioNet([(0, 0, 0), (10, 0, 0)], params=MacParams(queue_frames=2))
    for _ in range(5):
        net.send_at(0.0, 0, 1)
    net.sim.run()
    # One in progress, two waiting, two dropped.
    assert net.macs[0].counters.queue_drops == 2
    assert len(net.received) == 3


def _hidden_or_not(positions, seed):
    net = RadioNet(positions, seed=seed)
    for i in range(40):
        t = i * 0.05
        net.send_at(t, 0, 1)
        net.send_at(t, 2, 1)
    net.sim.run()
    return net


def test_hidden_terminals_collide_at_the_receiver_in_the_middle():
    """n0 and n2 reach n1 at equal power but cannot sense each other (160 m apart:
    about -106 dBm, under the -91 dBm CCA threshold): their frames overlap at
    n1. Within 10 m of each other, CSMA keeps them apart."""
    collisions = {"hidden": 0, "in range": 0}
    retries = {"hidden": 0, "in range": 0}
    for seed in range(3):
        for case, positions in (
            ("hidden", [(0, 0, 0), (80, 0, 0), (160, 0, 0)]),
            ("in range", [(0, 0, 0), (5, 0, 0), (10, 0, 0)]),
        ):
            net = _hidden_or_not(positions, seed)
            collisions[case] += net.radios[1].counters.collisions
            retries[case] += net.macs[0].counters.retries + net.macs[2].counters.retries
            if case == "hidden":
                # Carrier sense never saw the other sender.
                assert net.macs[0].counters.cca_busy + net.macs[2].counters.cca_busy <= 80
    assert collisions["hidden"] > 10 * max(1, collisions["in range"])
    assert retries["hidden"] > retries["in range"]


def _two_frames(first_strong: bool):
    """n1 receives from n0 (5 m, strong) and n2 (60 m, 32 dB weaker; n0 and n2
    cannot sense each other), the second frame starting 1 ms into the first."""
    net = RadioNet([(0, 0, 0), (5, 0, 0), (65, 0, 0)])
    strong, weak = net.radios[0], net.radios[2]
    order = [strong, weak] if first_strong else [weak, strong]
    for t, radio in zip((0.0, 0.001), order):
        frame = mac.encode(
            mac.Frame(1, mac.DEFAULT_PAN_ID, net.address(1), radio.address, b"p" * 50)
        )
        pkt = Packet(frame, 0, 0, 0, len(frame) - 50)
        net.sim.at(t, net.medium.transmit, radio, pkt, net.radios[1], lambda tx, ok: None)
    net.sim.run()
    return net, [src for _, _, src, _ in net.received]


def test_capture_a_strong_frame_survives_a_weak_one():
    net, got = _two_frames(first_strong=True)
    assert got == [net.address(0)]  # SINR about 30 dB: the strong frame is intact
    assert net.radios[1].counters.received == 1


def test_no_capture_of_a_later_stronger_frame():
    """The radio stays locked on the weak frame (no re-synchronisation), which the
    strong one destroys; the strong one is never received."""
    net, got = _two_frames(first_strong=False)
    assert got == []
    c = net.radios[1].counters
    assert (c.corrupted, c.collisions, c.missed_busy) == (1, 1, 1)


def test_a_radio_that_starts_to_send_stops_receiving():
    """n1 locks onto n0's frame, which begins at the very instant n1's own frame
    goes out (their backoffs ended together: n0's event runs first). Sending, n1
    hears nothing more: the reception is aborted, n0's frame is not decoded at
    n1, and n1 is in TX for exactly its own frame's airtime."""
    net = RadioNet([(0, 0, 0), (5, 0, 0), (10, 0, 0)])
    sender, both = net.radios[0], net.radios[1]
    for radio, to in ((sender, both), (both, net.radios[2])):
        frame = mac.encode(mac.Frame(1, mac.DEFAULT_PAN_ID, to.address, radio.address, b"p" * 50))
        pkt = Packet(frame, 0, 0, 0, len(frame) - 50)
        net.sim.at(1.0, net.medium.transmit, radio, pkt, to, lambda tx, ok: None)
    net.sim.run(until=1.0 + DATA_AIR / 2)
    assert both.state == TX and both.locked is None
    net.sim.run(until=2.0)
    c = both.counters
    assert (c.aborted, c.received) == (1, 0)
    # n1 decoded nothing, and n2, locked onto n0's frame, missed n1's.
    assert net.received == []
    assert both.power.times_s(2.0)[TX] == pytest.approx(DATA_AIR, abs=1e-12)


def test_csma_gives_up_after_macmaxcsmabackoffs_under_a_saturating_interferer():
    net = RadioNet([(0, 0, 0), (10, 0, 0)])
    # A Wi-Fi transmitter 5 m away sending one endless burst: every CCA is busy.
    jam = WifiTraffic(rate_bps=54e6, pattern="poisson", frame_bytes=10**8)
    targets = {(STATION, OFDM): [(r, phy.dbm_to_mw(-50.0)) for r in net.radios]}
    WifiInterferer("wifi", jam, targets, net.sim.rng("wifi")).start()
    for i in range(10):
        net.send_at(0.5 + i * 0.1, 0, 1)
    net.sim.run(until=2.0)
    c = net.macs[0].counters
    assert c.channel_access_failures == 10
    assert c.cca_busy == 10 * (MacParams().max_csma_backoffs + 1)  # NB = 0 .. 4
    assert c.frames == 0 and net.frames(0) == []
    assert [status for *_, status, _ in net.sent] == [CHANNEL_ACCESS_FAILURE] * 10


def test_interference_below_the_cca_threshold_still_corrupts_frames():
    """A burst too weak for CCA (-95 dBm < -91 dBm) but as strong as a weak link's
    signal makes that link's frames fail: CCA does not protect against it."""
    net = RadioNet([(0, 0, 0), (75, 0, 0)])  # about -96.5 dBm at n1
    jam = WifiTraffic(rate_bps=54e6, pattern="poisson", frame_bytes=10**8)
    WifiInterferer(
        "wifi",
        jam,
        {(STATION, OFDM): [(net.radios[1], phy.dbm_to_mw(-95.0))]},
        net.sim.rng("wifi"),
    ).start()
    for i in range(20):
        net.send_at(0.5 + i * 0.05, 0, 1)
    net.sim.run(until=2.0)
    assert net.radios[1].counters.corrupted > 0
    assert net.macs[0].counters.channel_access_failures == 0


def test_radio_energy_follows_its_states():
    net = RadioNet([(0, 0, 0), (10, 0, 0)])
    net.send_at(1.0, 0, 1)
    net.sim.run()
    net.sim.run(until=10.0)
    energy = net.radios[0].power
    times = energy.times_s(10.0)
    assert sum(times) == pytest.approx(10.0)
    assert times[TX] == pytest.approx(DATA_AIR)
    listen_j = 3.0 * 12.3e-3 * (10.0 - DATA_AIR)
    assert energy.joules(10.0) == pytest.approx(listen_j + 3.0 * 14e-3 * DATA_AIR)
    assert net.radios[0].state == LISTEN


def test_the_energy_meter_keeps_each_state_s_time_apart():
    """Each state's time is a field of its own (net/radio/energy.py): a walk through
    all five states puts every stretch in its state's place, in STATES' order."""
    from iotbench.net.radio.energy import STATES, RadioEnergy

    meter = RadioEnergy(0.0, state=STATES.index("off"))
    walk = ["idle", "listen", "rx", "tx", "listen", "off"]
    for t, state in enumerate(walk, start=1):  # the k-th state of the walk lasts k s
        meter.change(meter.state, STATES.index(state), t * (t + 1) / 2)
    # off 1 s, idle 2 s, listen 3 + 6 s, rx 4 s, tx 5 s, and off again from 21 s:
    assert meter.time_s == [1.0, 2.0, 3.0 + 6.0, 4.0, 5.0]
    assert meter.times_s(25.0) == [1.0 + 4.0, 2.0, 9.0, 4.0, 5.0]
    assert meter.time_s == [1.0, 2.0, 9.0, 4.0, 5.0]  # (times_s changed nothing)


@pytest.mark.parametrize("snr_db", [0.0, 0.45, 0.7, 1.0, 1.5])
def test_reception_ratio_of_a_link_follows_the_annex_e_model(snr_db):
    """Frames over a link whose mean power is fixed relative to the noise arrive
    with the probability the error model gives (binomial sampling error)."""
    n = 400
    net = RadioNet([(0, 0, 0), (1, 0, 0)])
    noise_dbm = phy.mw_to_dbm(net.radios[1].noise_mw)
    for rcv, send in ((net.radios[1], net.radios[0]), (net.radios[0], net.radios[1])):
        send.neighbours = [(rcv, phy.dbm_to_mw(noise_dbm + snr_db), 0)]
    frame = mac.encode(mac.Frame(1, mac.DEFAULT_PAN_ID, net.address(1), net.address(0), b"z" * 50))
    for i in range(n):
        pkt = Packet(frame, 0, 0, 0, 23)
        net.sim.at(i * 0.01, net.medium.transmit, net.radios[0], pkt, net.radios[1], lambda *a: 0)
    net.sim.run()
    expected = phy.packet_success(phy.dbm_to_mw(snr_db), 8 * len(frame))
    got = net.radios[1].counters.received / n
    sigma = math.sqrt(expected * (1 - expected) / n)
    if snr_db >= phy.SENSITIVITY_SNR_DB:
        assert abs(got - expected) <= 4 * sigma + 1e-9
    else:  # below the sensitivity (noise + 0.40 dB) the radio does not lock on
        assert got == 0.0


def test_s4s_energy_counts_frames_at_their_currents_and_idle_time_at_trx_off():
    """net/radio/energy.py: listening costs RX_ON's 12.3 mA physically, TRX_OFF's
    0.4 mA in S4's "bytes in the air" accounting."""
    from iotbench.net.radio.energy import EnergyProfile

    profile = EnergyProfile(tx_ma=11.6)
    times = [0.0, 0.0, 10.0, 0.5, 0.25]  # off, idle, listen, rx, tx
    assert profile.joules(times) == pytest.approx(3.0 * (12.3 * 10.5 + 11.6 * 0.25) / 1000)
    assert profile.air_joules(times) == pytest.approx(
        3.0 * (0.4 * 10.0 + 12.3 * 0.5 + 11.6 * 0.25) / 1000
    )


def test_a_backoffs_draw_is_randranges_draw():
    """The MAC draws its backoff with its own randbelow, from the stream's
    getrandbits: the same numbers, and the same state left behind, as
    random.Random.randrange."""
    for seed in range(20):
        ours, library = random.Random(seed), random.Random(seed)
        for n in (1, 2, 3, 7, 8, 32, 255, 256, 1000, 2**40 + 3, 2**70):
            assert [randbelow(ours.getrandbits, n) for _ in range(50)] == [
                library.randrange(n) for _ in range(50)
            ]
        assert ours.random() == library.random()
    with pytest.raises(ValueError):
        randbelow(random.Random(1).getrandbits, 0)
