"""SMRF's forwarding delay and its buffer: Contiki's smrf.c keeps one datagram
waiting, and a newer one takes its place."""

from __future__ import annotations

import random
from types import SimpleNamespace

from iotbench.net.routing.smrf import Smrf
from iotbench.sim import Simulator

GROUP = bytes.fromhex("ff1e0000000000000000000000890001")
PARENT = b"\x01" * 8


def smrf(buffers=None):
    sim = Simulator(1)
    sent = []
    node = SimpleNamespace(layers_of=lambda nh, group, payload: (8, 0))
    iface = SimpleNamespace(
        node=node, send=lambda data, ip_len, transport, app, group: sent.append((sim.now, data))
    )
    forwarder = Smrf(
        sim,
        iface,
        random.Random(1),
        lambda: PARENT,
        lambda group: True,
        delay_s=4 / 128,
        spread=4,
        buffers=buffers,
    )
    return sim, forwarder, sent


def datagram(tag: int) -> bytes:
    return bytes(7) + bytes((64,)) + bytes(32) + bytes((tag,))


def test_each_datagram_waits_one_to_four_delay_units_without_a_buffer_limit():
    sim, forwarder, sent = smrf()
    for tag in (1, 2):
        assert forwarder(datagram(tag), PARENT, GROUP, 64)
    sim.run(until=1.0)
    assert sorted(d[-1] for _, d in sent) == [1, 2]
    assert all(4 / 128 - 1e-12 <= t <= 16 / 128 + 1e-12 for t, _ in sent)
    assert all(d[7] == 63 for _, d in sent)  # hop limit one lower


def test_one_buffer_a_newer_datagram_replaces_the_waiting_one():
    sim, forwarder, sent = smrf(buffers=1)
    forwarder(datagram(1), PARENT, GROUP, 64)
    forwarder(datagram(2), PARENT, GROUP, 64)
    sim.run(until=1.0)
    assert [d[-1] for _, d in sent] == [2]
    assert (forwarder.forwarded, forwarder.replaced) == (1, 1)


def test_only_the_preferred_parent_is_heard():
    sim, forwarder, sent = smrf()
    assert not forwarder(datagram(1), b"\x02" * 8, GROUP, 64)
    sim.run(until=1.0)
    assert sent == [] and forwarder.dropped == 1
