"""CCN-lite's heap (S4): what each table entry costs, and the PIT it bounds.

The prices and the bounds are those a RIOT `native` build of the study's
CCN-lite (b036cce) with the apps' TLSF pools measured, Interest by Interest
(docs/studies/s4.md, "The PIT")."""

from __future__ import annotations

import random

import pytest

from iotbench.proto.ndn.data import make_data
from iotbench.proto.ndn.forwarder import Forwarder, ForwarderConfig
from iotbench.proto.ndn.heap import (
    Heap,
    block_bytes,
    content_bytes,
    face_bytes,
    fib_entry_bytes,
    pit_entry_bytes,
)
from iotbench.proto.ndn.interest import make_interest
from iotbench.proto.ndn.signing import UnsignedSigner

HW = "aa:bb:cc:dd:ee:ff:00:11"
READING = b'{"id":"0x12a77af232","val":3000}'


def interest(n: int, reading: bytes | None = None):
    name = f"/i3/{HW}/gasval/{n:04d}" + ("" if reading is None else "/" + reading.decode())
    return make_interest(name, nonce=n + 1, lifetime_ms=10_000)


def data(n: int, content: bytes = READING):
    return make_data(f"/i3/{HW}/gasval/{n:04d}", content, signer=UnsignedSigner(), meta_info=True)


def test_tlsf_blocks_have_a_4_byte_header_4_byte_alignment_and_12_bytes_at_least():
    assert [block_bytes(n) for n in (1, 12, 13, 16, 17, 69)] == [16, 16, 20, 20, 24, 76]


def test_prices_of_the_studys_packets_as_the_native_build_measured():
    assert len(interest(42).wire) == 57 and pit_entry_bytes(57) == 360
    assert len(interest(42, READING).wire) == 91 and pit_entry_bytes(91) == 392  # I-Not
    assert len(data(42).wire) == 90 and content_bytes(90) == 336
    assert content_bytes(96) == 340  # I-Not's acknowledgment
    assert face_bytes() == 72
    assert fib_entry_bytes(1, 2) == 108  # /i3
    assert fib_entry_bytes(2, 2 + len(HW)) == 124  # /i3/<hw>


@pytest.mark.parametrize(
    ("pool", "cached", "content", "reading", "held"),
    [
        (40 * 1024, 0, READING, None, 104),  # ndn_vanilla and ndn_hopp, CS empty
        (40 * 1024, 35, READING, None, 71),  # ndn_vanilla's full CS
        (40 * 1024, 50, READING, None, 57),  # ndn_hopp's full CS
        (46080, 0, b"ACK\x00", READING, 109),  # ndn_ipush
        (46080, 20, b"ACK\x00", READING, 91),
    ],
)
def test_the_pit_holds_what_the_heap_holds(pool, cached, content, reading, held):
    """A forwarder with its loopback face and one neighbour's, a Content Store of
    `cached` Data: the application's Interests for the neighbour (no FIB, as HoPP's
    pulls go) are taken until the next does not fit."""
    fw = Forwarder(random.Random(1), ForwarderConfig(heap_bytes=pool, pit_max_entries=None))
    app = fw.add_face(lambda wire: None, local=True)
    neighbour = fw.add_face(lambda wire: None)
    for n in range(cached):
        name = interest(10_000 + n, reading).name  # I-Not acknowledges under its name
        cache = make_data(name, content, signer=UnsignedSigner(), meta_info=True)
        fw.receive(0.0, app.face_id, cache.wire)
    assert len(fw.cs) == cached
    for n in range(200):
        fw.receive(0.0, app.face_id, interest(n, reading).wire, neighbour.face_id)
    assert len(fw.pit) == held and fw.counters.pit_full_drops == 200 - held
    assert fw.heap.failures == 200 - held


def test_entries_give_their_bytes_back_and_data_that_does_not_fit_is_dropped():
    fw = Forwarder(random.Random(1), ForwarderConfig(heap_bytes=8192, pit_max_entries=None))
    down = fw.add_face(lambda wire: None)
    up = fw.add_face(lambda wire: None)
    fw.add_route("/i3", up.face_id)
    free = fw.heap.free
    assert free == 8192 - 3196 - 2 * 72 - 108
    fw.receive(0.0, down.face_id, interest(1).wire)
    assert fw.heap.free == free - 360
    fw.receive(0.1, up.face_id, data(1).wire)  # satisfied: the entry goes, the Data stays
    assert len(fw.pit) == 0 and fw.heap.free == free - 336
    while fw.counters.pit_full_drops == 0:  # fill the heap with pending Interests
        fw.receive(0.2, down.face_id, interest(2 + len(fw.pit)).wire)
    assert fw.heap.free < 336
    fw.receive(0.3, up.face_id, data(2).wire)  # no room to hold it: it goes nowhere
    assert fw.counters.heap_data_drops == 1 and fw.counters.satisfied == 1
    fw.handle_timer(11.0)  # the entries expire and give their bytes back
    assert len(fw.pit) == 0 and fw.heap.free == free - 336


def test_a_heap_smaller_than_tlsfs_own_structures_is_refused():
    with pytest.raises(ValueError, match="TLSF"):
        Heap(3000)
    with pytest.raises(ValueError, match="heap_bytes"):
        ForwarderConfig(heap_bytes=100)
