"""PIT, FIB, Content Store and Dead Nonce List on their own."""

import pytest

from iotbench.proto.ndn.cs import ContentStore
from iotbench.proto.ndn.data import make_data
from iotbench.proto.ndn.dead_nonce import DeadNonceList
from iotbench.proto.ndn.fib import Fib
from iotbench.proto.ndn.interest import make_interest
from iotbench.proto.ndn.name import Component, Name
from iotbench.proto.ndn.pit import Pit

# ---- PIT ----------------------------------------------------------------------------------


def test_pit_exact_match_key_includes_selectors():
    pit = Pit()
    e1, created, _ = pit.insert(make_interest("/a/b", nonce=1), 0.0)
    assert created
    e2, created, _ = pit.insert(make_interest("/a/b", nonce=2), 0.0)
    assert e2 is e1 and not created  # aggregated
    e3, created, _ = pit.insert(make_interest("/a/b", can_be_prefix=True), 0.0)
    e4, _, _ = pit.insert(make_interest("/a/b", must_be_fresh=True), 0.0)
    assert created and len({id(e1), id(e3), id(e4)}) == 3
    assert pit.find(make_interest("/a/b", can_be_prefix=True)) is e3
    assert pit.find(make_interest("/a")) is None
    assert len(pit) == 3


def test_pit_data_matching_rules():
    pit = Pit()
    exact, _, _ = pit.insert(make_interest("/a/b"), 0)
    fresh, _, _ = pit.insert(make_interest("/a/b", must_be_fresh=True), 0)
    prefix, _, _ = pit.insert(make_interest("/a", can_be_prefix=True), 0)
    root, _, _ = pit.insert(make_interest("/", can_be_prefix=True), 0)
    pit.insert(make_interest("/a"), 0)  # not CanBePrefix: /a/b does not satisfy it
    pit.insert(make_interest("/a/b/c", can_be_prefix=True), 0)  # longer: no
    data = make_data("/a/b", b"x")
    digest, _, _ = pit.insert(make_interest(data.full_name), 0)
    other_digest, _, _ = pit.insert(
        make_interest(Name("/a/b").append(Component.implicit_digest(b"\0" * 32))), 0
    )
    matches = pit.find_all_matches(data)
    assert {id(e) for e in matches} == {id(exact), id(fresh), id(prefix), id(root), id(digest)}
    assert other_digest not in matches


def test_pit_overflow_drop_new():
    pit = Pit(max_entries=2, overflow="drop-new")
    pit.insert(make_interest("/1"), 0)
    pit.insert(make_interest("/2"), 1)
    entry, created, evicted = pit.insert(make_interest("/3"), 2)
    assert entry is None and not created and evicted is None and len(pit) == 2
    # An Interest that joins an existing entry still gets in.
    assert pit.insert(make_interest("/1"), 3)[0] is not None


def test_pit_overflow_replace_oldest():
    pit = Pit(max_entries=2, overflow="replace-oldest")
    first, _, _ = pit.insert(make_interest("/1"), 0)
    pit.insert(make_interest("/2"), 1)
    entry, created, evicted = pit.insert(make_interest("/3"), 2)
    assert created and evicted is first and len(pit) == 2
    assert pit.find(make_interest("/1")) is None
    assert [e.name for e in pit] == [Name("/2"), Name("/3")]


def test_pit_peaks_overall_and_since_the_last_sample():
    pit = Pit()
    entries = [pit.insert(make_interest(f"/p/{i}"), 0.0)[0] for i in range(3)]
    pit.erase(entries[0])
    pit.erase(entries[1])
    assert (pit.peak, pit.take_recent_peak()) == (3, 3)
    # The next span starts from what is held now (1), not from zero.
    assert pit.take_recent_peak() == 1
    pit.insert(make_interest("/p/9"), 0.0)
    assert (pit.take_recent_peak(), pit.peak) == (2, 3)


def test_pit_bad_parameters():
    with pytest.raises(ValueError):
        Pit(max_entries=0)
    with pytest.raises(ValueError):
        Pit(overflow="random")


# ---- FIB ----------------------------------------------------------------------------------


def test_fib_longest_prefix_match_and_costs():
    fib = Fib()
    fib.add_next_hop(Name("/"), 9)
    fib.add_next_hop(Name("/a"), 1, cost=10)
    fib.add_next_hop(Name("/a"), 2, cost=5)
    fib.add_next_hop(Name("/a/b/c"), 3)
    assert fib.lookup(Name("/a/b")).prefix == Name("/a")
    assert [nh.face_id for nh in fib.lookup(Name("/a/x")).sorted_next_hops()] == [2, 1]
    assert fib.lookup(Name("/a/b/c/d")).prefix == Name("/a/b/c")
    assert fib.lookup(Name("/z")).prefix == Name("/")
    assert fib.lookup(Name("/ab")).prefix == Name("/")  # component boundaries, not bytes
    fib.add_next_hop(Name("/a"), 1, cost=0)  # re-cost, no duplicate
    assert [nh.face_id for nh in fib.lookup(Name("/a")).sorted_next_hops()] == [1, 2]


def test_fib_removal_and_limit():
    fib = Fib(max_entries=2)
    assert fib.add_next_hop(Name("/a"), 1) and fib.add_next_hop(Name("/b"), 1)
    assert not fib.add_next_hop(Name("/c"), 1)  # full
    assert fib.add_next_hop(Name("/a"), 2)  # a new next hop of an existing prefix is fine
    assert fib.remove_next_hop(Name("/a"), 1)
    assert fib.find_exact(Name("/a")).next_hops[0].face_id == 2
    fib.remove_face(2)
    assert fib.find_exact(Name("/a")) is None and len(fib) == 1
    assert fib.lookup(Name("/x")) is None
    assert not fib.remove_next_hop(Name("/zz"), 1)
    with pytest.raises(ValueError):
        Fib(max_entries=0)


# ---- Content Store ------------------------------------------------------------------------


def _data(name: str, size: int = 10, fresh_ms: int | None = None):
    return make_data(name, bytes(size), freshness_period_ms=fresh_ms)


def test_cs_default_capacity_is_24_kib():
    assert ContentStore().max_bytes == 24 * 1024


def test_cs_fifo_versus_lru():
    items = [_data(f"/{n}") for n in "abcd"]
    size = len(items[0].wire)
    for policy, evicted in (("fifo", "/a"), ("lru", "/b")):
        cs = ContentStore(max_bytes=3 * size, policy=policy)
        for d in items[:3]:
            assert cs.insert(d, 0)
        assert cs.lookup(make_interest("/a"), 1) is not None  # /a used
        cs.insert(items[3], 2)
        assert len(cs) == 3 and cs.bytes_used == 3 * size
        assert Name(evicted).value not in cs, policy
        assert cs.evictions == 1


def test_cs_byte_limit_and_oversize():
    cs = ContentStore(max_bytes=100)
    assert not cs.insert(_data("/big", 200), 0)
    assert cs.insert(_data("/a", 40), 0) and cs.insert(_data("/b", 40), 0)
    assert len(cs) == 1 and cs.bytes_used <= 100  # /a went to make room
    disabled = ContentStore(max_bytes=0)
    assert not disabled.insert(_data("/a"), 0) and disabled.lookup(make_interest("/a"), 0) is None


def test_cs_same_name_replaces():
    cs = ContentStore()
    cs.insert(make_data("/a", b"old"), 0)
    cs.insert(make_data("/a", b"newer"), 1)
    assert len(cs) == 1 and cs.lookup(make_interest("/a"), 2).content == b"newer"
    assert cs.bytes_used == len(make_data("/a", b"newer").wire)
    assert cs.erase(Name("/a").value) and not cs.erase(Name("/a").value)


def test_cs_must_be_fresh_uses_freshness_period_and_time():
    cs = ContentStore()
    cs.insert(_data("/f", fresh_ms=1000), 10.0)
    cs.insert(_data("/never"), 10.0)  # no FreshnessPeriod: never fresh
    fresh = make_interest("/f", must_be_fresh=True)
    assert cs.lookup(fresh, 10.5) is not None
    assert cs.lookup(fresh, 11.0) is None  # stale exactly at arrival + period
    assert cs.lookup(make_interest("/f"), 99.0) is not None  # stale is fine without MustBeFresh
    assert cs.lookup(make_interest("/never", must_be_fresh=True), 10.0) is None


def test_cs_can_be_prefix_returns_first_in_canonical_order():
    cs = ContentStore()
    for name in ("/p/c", "/p/b", "/p/aa", "/q/a", "/pp"):
        cs.insert(_data(name), 0)
    hit = cs.lookup(make_interest("/p", can_be_prefix=True), 0)
    assert hit.name == Name("/p/b")  # shorter components sort first: b < c < aa
    assert cs.lookup(make_interest("/p"), 0) is None  # exact only without CanBePrefix
    assert cs.lookup(make_interest("/", can_be_prefix=True), 0).name == Name("/p/b")
    assert cs.lookup(make_interest("/r", can_be_prefix=True), 0) is None
    cs.insert(_data("/p/a", fresh_ms=5), 0)
    cs.insert(_data("/p/z", fresh_ms=5000), 0)
    hit = cs.lookup(make_interest("/p", can_be_prefix=True, must_be_fresh=True), 1.0)
    assert hit.name == Name("/p/z")  # the first *fresh* one


def test_cs_implicit_digest_lookup():
    cs = ContentStore()
    d = _data("/a")
    cs.insert(d, 0)
    assert cs.lookup(make_interest(d.full_name), 0) is d
    wrong = Name("/a").append(Component.implicit_digest(b"\1" * 32))
    assert cs.lookup(make_interest(wrong), 0) is None


def test_cs_peak_bytes_overall_and_since_the_last_sample():
    cs = ContentStore(max_bytes=1000)
    a, b = make_data("/a", b"x" * 100), make_data("/b", b"y" * 100)
    cs.insert(a, 0)
    cs.insert(b, 0)
    both = len(a.wire) + len(b.wire)
    cs.erase(a.name.value)
    assert (cs.peak_bytes, cs.take_recent_peak()) == (both, both)
    assert cs.take_recent_peak() == len(b.wire)
    assert cs.peak_bytes == both


def test_cs_bad_parameters():
    with pytest.raises(ValueError):
        ContentStore(max_bytes=-1)
    with pytest.raises(ValueError):
        ContentStore(policy="random")


# ---- Dead Nonce List ------------------------------------------------------------------------


def test_dead_nonce_list_lifetime_and_bound():
    dnl = DeadNonceList(lifetime_s=6.0, max_entries=3)
    dnl.add(b"n", 1, 0.0)
    assert dnl.has(b"n", 1, 5.9) and not dnl.has(b"n", 2, 5.9) and not dnl.has(b"m", 1, 1)
    assert not dnl.has(b"n", 1, 6.0)
    for nonce in range(10):
        dnl.add(b"x", nonce, 10.0)
        assert len(dnl) <= 3
    assert dnl.has(b"x", 9, 10.0) and not dnl.has(b"x", 0, 10.0)
    for _ in range(100):  # re-adding one key keeps the queue bounded too
        dnl.add(b"y", 1, 11.0)
    assert len(dnl._order) <= 6
    with pytest.raises(ValueError):
        DeadNonceList(lifetime_s=0)


def test_cs_bounded_in_entries_drops_the_oldest_as_ccn_lite_counts_it():
    cs = ContentStore(max_bytes=1 << 20, max_entries=2)
    for k in range(4):
        assert cs.insert(make_data(f"/a/{k}", b"x"), 0.0)
    assert len(cs) == 2 and cs.peak_entries == 2 and cs.evictions == 2
    assert Name("/a/3").value in cs and Name("/a/1").value not in cs
    assert not ContentStore(max_entries=0).insert(make_data("/a", b"x"), 0.0)
    with pytest.raises(ValueError, match="max_entries"):
        ContentStore(max_entries=-1)
